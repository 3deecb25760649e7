package gateway

import (
	"net/http"
	"sync"
	"time"
)

// headerHold is how long an event stream's response headers, written
// when the upstream's arrived, may wait to go out with the stream's first
// bytes before they are flushed on their own. Sent together, they cost
// one write to the client instead of two, and the client one read; sent
// after at most headerHold, a proxy in front still never times out
// waiting for headers while a reasoning model thinks before its first
// token.
const headerHold = 20 * time.Millisecond

// heldHeaders are an event stream's written but unflushed response
// headers. The relay calls releaseHeaders before its first write (its
// flush carries the headers) and when it is over; the timer flushes them
// if that has not happened within headerHold. The lock keeps the timer's
// flush and the relay's writes apart: the writer is not safe for
// concurrent use.
type heldHeaders struct {
	mu      sync.Mutex
	flusher http.Flusher
	timer   *time.Timer
	// out: the timer flushed, or the relay released them.
	out bool
	// released is the relay's own note (only its goroutine reads it).
	released bool
	// log and trace name the request in a panic's log line.
	log   *logger
	trace *requestTrace
}

// holdHeaders starts holding c's stream headers, which are written to
// f's writer.
func holdHeaders(c *call, f http.Flusher) *heldHeaders {
	h := &heldHeaders{flusher: f, log: c.g.log, trace: c.trace}
	h.timer = time.AfterFunc(c.g.headerHold, func() { heldHeadersFire(h) })
	return h
}

// heldHeadersFire flushes the headers the relay has not released yet (a
// timer goroutine: it recovers).
func heldHeadersFire(h *heldHeaders) {
	defer recoverBackground(h.log, "stream headers", h.trace.logTail)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.out {
		return
	}
	h.out = true
	h.flusher.Flush()
}

// releaseHeaders takes the headers back from the timer: the relay is
// about to write (its flush sends them), or is over. A flush the timer
// is making is waited for. nil does nothing.
func releaseHeaders(h *heldHeaders) {
	if h == nil || h.released {
		return
	}
	h.released = true
	h.mu.Lock()
	h.out = true
	h.timer.Stop()
	h.mu.Unlock()
}
