// Command llmgateway runs the LLM gateway as a standalone HTTP server: the
// same core the Traefik plugin interprets, compiled, so streamed responses
// reach clients token by token.
//
// Every flag has an LLMGW_* environment twin (see -help); an explicitly
// passed flag beats the environment. The config file is the plugin's
// config block hoisted to the top level, in YAML or JSON. The binary adds
// a liveness path (always 200) and a readiness path (503 once shutdown
// begins), and shuts down gracefully on SIGTERM or SIGINT.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/llmgateway/llmgateway/gateway"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	go func() {
		// After the first signal, restore the default action so a second
		// one ends a long drain or shutdown at once.
		<-ctx.Done()
		stop()
	}()
	err := run(ctx, os.Args[1:], os.Getenv, os.Stderr, nil)
	os.Exit(exitCode(err, os.Stderr))
}

// exitCode reports err on stderr and maps it to the process exit status:
// 0 for success and -help, 2 for a command-line or environment error, 1
// for everything else.
func exitCode(err error, stderr io.Writer) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	_, _ = fmt.Fprintf(stderr, "llmgateway: %v\n", err)
	var usage *usageError
	if errors.As(err, &usage) {
		return 2
	}
	return 1
}

// run is the whole binary short of process concerns: it parses args and
// the environment (through getenv), loads the config, builds the gateway,
// listens, calls ready with the bound address once requests are being
// served, and returns when ctx is cancelled and shutdown has finished.
// Log lines go to stderr; a nil ready is allowed.
func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer, ready func(addr string)) error {
	s, err := parseSettings(args, getenv, stderr)
	if err != nil {
		return err
	}
	lg := newLogger(stderr, s.name, s.logLevel)
	lg.infof("llmgateway %s starting", gateway.Version)
	lg.debugf("settings: config=%s listen=%s log-level=%s shutdown-timeout=%s drain-delay=%s health-path=%s ready-path=%s",
		s.configPath, s.listen, s.logLevel, s.shutdownTimeout, s.drainDelay, s.healthPath, s.readyPath)
	logTelemetry(lg, getenv)

	loaded, err := loadConfig(s.configPath)
	if err != nil {
		return err
	}
	lg.infof("config loaded from %s", s.configPath)
	for _, w := range startupWarnings(loaded) {
		lg.warnf("%s", w)
	}

	// No downstream exists: a nil next makes the gateway answer every
	// unmatched route with its own 404 envelope.
	gw, err := gateway.New(nil, loaded.config, gateway.Options{Name: s.name, LogOutput: stderr})
	if err != nil {
		return fmt.Errorf("gateway construction failed: %v", err)
	}
	lg.infof("gateway constructed")

	ln, err := net.Listen("tcp", s.listen)
	if err != nil {
		_ = gw.Close()
		return fmt.Errorf("cannot listen on %s: %v", s.listen, err)
	}
	lc := &lifecycle{
		settings:     s,
		log:          lg,
		probes:       &probeHandler{healthPath: s.healthPath, readyPath: s.readyPath, gateway: gw},
		closeGateway: gw.Close,
	}
	if ready != nil {
		lc.onServing = func() { ready(ln.Addr().String()) }
	}
	return lc.serve(ctx, ln)
}

// logTelemetry says at startup whether this process sends the anonymous
// "loaded" ping, and which opt-out variable is set when one is.
func logTelemetry(lg *logger, getenv func(string) string) {
	if name := gateway.TelemetryOptOut(getenv); name != "" {
		lg.infof("telemetry: disabled by %s", name)
		return
	}
	if gateway.Version == gateway.DevVersion {
		lg.infof("telemetry: development build (%s), no usage ping is sent", gateway.DevVersion)
		return
	}
	lg.infof("telemetry: one anonymous startup ping (project, version, timestamp); set DO_NOT_TRACK=1 to disable")
}
