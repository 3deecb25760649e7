// Package benchkit holds what the load tools under integration/cmd
// (loadbench, streambench, soak) share: the bare-proxy floor they measure
// the gateway against, serving a handler until the process is told to
// stop, writing a report, and a sleep that a context cuts short.
package benchkit

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

// BareProxy is the floor: a bare httputil.ReverseProxy through transport
// to upstream that sets the upstream credential, in full duplex so the
// request body is not closed under it (go-proxy-notes.md), and answers
// /readyz itself.
func BareProxy(upstream, upstreamKey string, transport *http.Transport) (http.Handler, error) {
	target, err := url.Parse(upstream)
	if err != nil || upstream == "" {
		return nil, fmt.Errorf("bad upstream %q", upstream)
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Header.Set("Authorization", "Bearer "+upstreamKey)
		},
		Transport: transport,
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			w.WriteHeader(http.StatusOK)
			return
		}
		_ = http.NewResponseController(w).EnableFullDuplex()
		rp.ServeHTTP(w, r)
	}), nil
}

// Serve serves h on addr until SIGINT or SIGTERM, then closes the server
// (open streams are cut: the tools stop their children when they are
// done measuring). It exits the process on a listen or serve error.
func Serve(addr string, h http.Handler) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}

// WriteReport writes report to path (creating its folder) and says so on
// stderr under the tool's name.
func WriteReport(tool, path, report string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(path, []byte(report), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "%s: wrote %s\n", tool, path)
	return nil
}

// Sleep waits d or until ctx ends, whichever is first; it returns ctx's
// error when ctx ended first (or had already ended).
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
