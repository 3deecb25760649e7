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
//
// The timer calls the context's own (compiled) cancel function: no
// interpreted callback runs on the timer's goroutine, and starting one
// costs no wrapper under Yaegi. A stall is told apart from the client
// leaving and from stop by the contexts themselves (stalled).
type watchdog struct {
	timeout time.Duration
	timer   *time.Timer
	parent  context.Context
	ctx     context.Context
	cancel  context.CancelFunc
	stopped atomic.Bool
	// firedBeforeStop is what stalled said when stop ran.
	firedBeforeStop atomic.Bool
}

// startWatchdog derives a context that the watchdog cancels on a stall.
func startWatchdog(parent context.Context, timeout time.Duration) (context.Context, *watchdog) {
	ctx, cancel := context.WithCancel(parent)
	return ctx, &watchdog{timeout: timeout, timer: time.AfterFunc(timeout, cancel), parent: parent, ctx: ctx, cancel: cancel}
}

// startWatchdogFirst is startWatchdog whose first window — to the
// response headers — is first instead of timeout.
func startWatchdogFirst(parent context.Context, first, timeout time.Duration) (context.Context, *watchdog) {
	ctx, cancel := context.WithCancel(parent)
	return ctx, &watchdog{timeout: timeout, timer: time.AfterFunc(first, cancel), parent: parent, ctx: ctx, cancel: cancel}
}

// progress records upstream progress, restarting the idle window.
func (w *watchdog) progress() { w.timer.Reset(w.timeout) }

// stop releases the watchdog; call it when the exchange is over.
func (w *watchdog) stop() {
	if w.stopped.Load() {
		return
	}
	w.firedBeforeStop.Store(w.ctx.Err() != nil && w.parent.Err() == nil)
	w.stopped.Store(true)
	w.timer.Stop()
	w.cancel()
}

// stalled reports whether the watchdog aborted the call: its context
// ended while the client's had not, before stop ended it.
func (w *watchdog) stalled() bool {
	if w.stopped.Load() {
		return w.firedBeforeStop.Load()
	}
	return w.ctx.Err() != nil && w.parent.Err() == nil
}

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

// wholeBodyAtOnce is the largest declared Content-Length read in one
// io.ReadFull, without restarting the watchdog per read: such a body
// must arrive within one timeout of its headers.
const wholeBodyAtOnce = 1 << 20

// readUpstreamBody reads a whole upstream answer (tooBig over limit;
// never truncated): a declared length up to wholeBodyAtOnce in one
// compiled io.ReadFull into a buffer of exactly that size, anything
// else read by read, restarting the watchdog after each. Reading
// resp.Body directly, not through progressReader, saves a call from the
// standard library back into interpreted code per read under Yaegi.
func readUpstreamBody(r io.Reader, wd *watchdog, length, limit int64) ([]byte, bool, error) {
	if length >= 0 && length <= wholeBodyAtOnce && length <= limit {
		data, err := readDeclared(r, length)
		if err != nil {
			return nil, false, err
		}
		wd.progress()
		return data, false, nil
	}
	return readUpstreamBodyByRead(r, wd, limit)
}

// readUpstreamBodyByRead is readUpstreamBody for a body of unknown or
// large length.
func readUpstreamBodyByRead(r io.Reader, wd *watchdog, limit int64) ([]byte, bool, error) {
	buf := make([]byte, 0, 32<<10)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		end := cap(buf)
		if int64(end) > limit+1 {
			end = int(limit + 1) // never hold more than one byte past the cap
		}
		n, err := r.Read(buf[len(buf):end])
		buf = buf[:len(buf)+n]
		if n > 0 {
			wd.progress()
		}
		if int64(len(buf)) > limit {
			return nil, true, nil
		}
		if err == io.EOF {
			return buf, false, nil
		}
		if err != nil {
			return nil, false, err
		}
	}
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
