package main

import (
	"context"
	"errors"
	"log"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/llmgateway/llmgateway/gateway"
)

// Server timeouts for LLM traffic. There is deliberately no WriteTimeout
// (a streamed generation can run for many minutes) and no ReadTimeout (it
// would also bound slow uploads of large request bodies); the gateway's
// own requestTimeout watchdog bounds upstream calls.
const (
	readHeaderTimeout = 10 * time.Second
	idleTimeout       = 120 * time.Second
)

// probeHandler answers the liveness and readiness paths itself and hands
// every other request to the gateway. The probe paths are matched first,
// so a provider named like a probe path is shadowed by it.
type probeHandler struct {
	healthPath string
	readyPath  string
	ready      atomic.Bool
	gateway    http.Handler
}

func (h *probeHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case h.healthPath:
		writeProbe(w, r, http.StatusOK, "ok")
	case h.readyPath:
		if h.ready.Load() {
			writeProbe(w, r, http.StatusOK, "ready")
		} else {
			writeProbe(w, r, http.StatusServiceUnavailable, "shutting down")
		}
	default:
		h.gateway.ServeHTTP(w, r)
	}
}

// writeProbe answers a probe, with the request ids every gateway answer
// carries (X-Request-ID, traceparent).
func writeProbe(w http.ResponseWriter, r *http.Request, status int, state string) {
	gateway.TraceResponse(w, r)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		w.WriteHeader(http.StatusMethodNotAllowed)
		_, _ = w.Write([]byte(`{"status":"method not allowed"}` + "\n"))
		return
	}
	w.WriteHeader(status)
	if r.Method == http.MethodGet {
		_, _ = w.Write([]byte(`{"status":"` + state + `"}` + "\n"))
	}
}

// lifecycle serves one listener until ctx is cancelled, then shuts down
// gracefully: fail readiness, wait the drain delay so load balancers drop
// the endpoint, stop accepting, wait up to the shutdown timeout for
// in-flight requests, and finally close the gateway.
type lifecycle struct {
	settings *settings
	log      *logger
	probes   *probeHandler
	// closeGateway releases the gateway's resources after the server stops.
	closeGateway func() error
	// onServing, when set, runs once the server accepts requests.
	onServing func()
}

func (lc *lifecycle) serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           lc.probes,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		ErrorLog:          log.New(levelWriter{l: lc.log, level: levelWarn}, "http server: ", 0),
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()

	lc.probes.ready.Store(true)
	lc.log.infof("listening on %s (health %s, ready %s)", ln.Addr(), lc.settings.healthPath, lc.settings.readyPath)
	if lc.onServing != nil {
		lc.onServing()
	}

	select {
	case err := <-serveErr:
		lc.probes.ready.Store(false)
		lc.closeGatewayAndLog()
		return err
	case <-ctx.Done():
	}

	lc.probes.ready.Store(false)
	lc.log.infof("shutdown: signal received, readiness now failing; draining for %s (a second signal exits at once)", lc.settings.drainDelay)
	if lc.settings.drainDelay > 0 {
		timer := time.NewTimer(lc.settings.drainDelay)
		select {
		case <-timer.C:
		case err := <-serveErr:
			timer.Stop()
			lc.closeGatewayAndLog()
			return err
		}
	}

	lc.log.infof("shutdown: drain delay over; stopped accepting connections, waiting up to %s for in-flight requests", lc.settings.shutdownTimeout)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), lc.settings.shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		lc.log.warnf("shutdown: timeout of %s elapsed with requests still in flight; closing their connections", lc.settings.shutdownTimeout)
		_ = srv.Close()
	} else {
		lc.log.infof("shutdown: all in-flight requests finished")
	}
	if err := <-serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
		lc.log.warnf("shutdown: server: %v", err)
	}
	lc.closeGatewayAndLog()
	lc.log.infof("shutdown: complete")
	return nil
}

func (lc *lifecycle) closeGatewayAndLog() {
	if err := lc.closeGateway(); err != nil {
		lc.log.warnf("shutdown: closing the gateway: %v", err)
		return
	}
	lc.log.infof("shutdown: gateway closed")
}
