package gateway

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// Size caps. Nothing over a cap is ever silently truncated: an oversized
// request is a 413, an oversized upstream response a 502 (or an aborted
// stream once headers are out).
const (
	maxUnifiedRequestBytes     = 4 << 20
	maxPassthroughRequestBytes = 32 << 20
	maxUpstreamResponseBytes   = 32 << 20
	maxPassthroughPeekBytes    = 64 << 10
)

// newUpstreamTransport builds the one transport every upstream call
// shares. The idle pool is sized for concurrent LLM traffic (Go's default
// of 2 idle connections per host would redial under load).
func newUpstreamTransport() *http.Transport {
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	t := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		ForceAttemptHTTP2:     true,
	}
	// A closure, not the method value dialer.DialContext: Yaegi cannot
	// convert a compiled type's method value to a func-typed field.
	t.DialContext = func(ctx context.Context, network, address string) (net.Conn, error) {
		return dialer.DialContext(ctx, network, address)
	}
	return t
}

// watchdog is the progress-based request timeout: it cancels the upstream
// call when no progress (response headers, then body bytes) is observed
// for the timeout. A long call that keeps making progress never fires it.
type watchdog struct {
	timeout time.Duration
	timer   *time.Timer
	cancel  context.CancelFunc
	fired   atomic.Bool
}

// startWatchdog derives a context that the watchdog cancels on a stall.
func startWatchdog(parent context.Context, timeout time.Duration) (context.Context, *watchdog) {
	ctx, cancel := context.WithCancel(parent)
	w := &watchdog{timeout: timeout, cancel: cancel}
	w.timer = time.AfterFunc(timeout, w.expire)
	return ctx, w
}

// expire runs on the timer's own goroutine; like every goroutine the
// gateway starts, it must never let a panic reach the host (Traefik).
func (w *watchdog) expire() {
	defer func() { _ = recover() }()
	w.fired.Store(true)
	w.cancel()
}

// progress records upstream progress, restarting the idle window.
func (w *watchdog) progress() { w.timer.Reset(w.timeout) }

// stop releases the watchdog; call it when the exchange is over.
func (w *watchdog) stop() {
	w.timer.Stop()
	w.cancel()
}

// stalled reports whether the watchdog aborted the call.
func (w *watchdog) stalled() bool { return w.fired.Load() }

// progressReader feeds the watchdog on every read that returns bytes.
type progressReader struct {
	r  io.Reader
	wd *watchdog
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 && p.wd != nil {
		p.wd.progress()
	}
	return n, err
}

// progressReadCloser is progressReader for a response body.
type progressReadCloser struct {
	progressReader
	c io.Closer
}

func (p *progressReadCloser) Close() error { return p.c.Close() }

// readCapped reads all of r; tooBig reports that r held more than limit
// bytes (the data is then nil). It never returns a truncated body as
// success.
func readCapped(r io.Reader, limit int64) ([]byte, bool, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, false, err
	}
	if int64(len(data)) > limit {
		return nil, true, nil
	}
	return data, false, nil
}

// injectAuth sets the provider's own credential in its type's header.
// A keyless openai provider sends none.
func (p *providerRuntime) injectAuth(h http.Header) {
	for i := 0; i < len(clientCredentialHeaders); i++ {
		h.Del(clientCredentialHeaders[i])
	}
	if p.apiKey == "" {
		return
	}
	switch p.kind {
	case providerAnthropic:
		h.Set("X-Api-Key", p.apiKey)
		if h.Get("Anthropic-Version") == "" {
			h.Set("Anthropic-Version", "2023-06-01")
		}
	case providerGemini:
		h.Set("X-Goog-Api-Key", p.apiKey)
	default:
		h.Set("Authorization", "Bearer "+p.apiKey)
	}
}
