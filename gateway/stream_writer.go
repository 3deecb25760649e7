package gateway

import (
	"net/http"
	"sync"
	"time"
)

// keepaliveEvery is how long a translated stream's upstream may be
// silent before the gateway writes the format's keepalive event.
const keepaliveEvery = 10 * time.Second

// streamWriter writes a metered stream to the client: the writer the
// host handed the gateway (its Flush is what pushes bytes out; a wrapper
// would buffer under Yaegi), flushed after each write. startStream has
// flushed the headers already. A stream whose format has a keepalive
// event (Anthropic's ping) also gets a timer that writes it whenever
// nothing was written for keepaliveEvery (the first period starts with
// the stream).
//
// While the timer can write, the relay writes through streamWrite,
// under the lock the timer writes under: the writer is not safe for
// concurrent use, and a keepalive never splits an event. stopStream
// ends the timer's part; after it the relay writes on its own (w,
// flusher, write). A stream without a keepalive event has no timer: it
// starts stopped, and its writes go straight to the writer.
type streamWriter struct {
	w       http.ResponseWriter
	flusher http.Flusher
	// buf is the relay's framing buffer (only its goroutine uses it).
	buf []byte

	mu    sync.Mutex
	timer *time.Timer
	// event is the format's keepalive event, every its period.
	event []byte
	every time.Duration
	// stopped: the timer writes nothing more (or there is none); only
	// the relay's goroutine sets it (under mu), so it reads it without
	// the lock. pending: the timer is armed and its fire has not run
	// yet. skip: a write re-armed the timer after it had fired, so the
	// fire waiting for the lock is stale and writes nothing.
	stopped bool
	pending bool
	skip    bool
	// log and trace name the request in a panic's log line.
	log   *logger
	trace *requestTrace
}

// startStreamWriter starts writing c's stream, whose headers are
// flushed, to f's writer (f nil: the writer cannot flush); keepalive is
// the format's keepalive event, nil for a stream that gets none (and
// so no timer).
func startStreamWriter(c *call, f http.Flusher, keepalive []byte) *streamWriter {
	s := &streamWriter{w: c.w, flusher: f, event: keepalive, every: c.g.keepaliveEvery, log: c.g.log, trace: c.trace}
	if keepalive == nil {
		s.stopped = true // nothing to keep alive
		return s
	}
	// Locked: the fire re-arms s.timer.
	s.mu.Lock()
	s.timer = time.AfterFunc(s.every, func() { streamWriterFire(s) })
	s.pending = true
	s.mu.Unlock()
	return s
}

// streamWriterFire is the timer: it writes the keepalive event and arms
// the next one (a timer goroutine: it recovers; after a panic no
// keepalive follows until the relay writes again).
func streamWriterFire(s *streamWriter) {
	defer recoverBackground(s.log, "stream keepalive", s.trace.logTail)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	if s.skip {
		s.skip = false // the write's own arming is still pending
		return
	}
	s.pending = false
	if panicProbe != nil {
		panicProbe("keepalive", s.trace.requestID)
	}
	_, _ = s.w.Write(s.event)
	if s.flusher != nil {
		s.flusher.Flush()
	}
	s.timer.Reset(s.every)
	s.pending = true
}

// streamWrite writes b and flushes it, the timer held off; the write's
// error. It restarts the keepalive period.
func streamWrite(s *streamWriter, b []byte) error {
	// Stopped (the usual stream, which has no keepalive): no timer to
	// hold off, so no lock — the early return keeps each event's write
	// to the fewest statements under Yaegi.
	if s.stopped {
		_, err := s.w.Write(b)
		if s.flusher != nil {
			s.flusher.Flush()
		}
		return err
	}
	s.mu.Lock()
	_, err := s.w.Write(b)
	if s.flusher != nil {
		s.flusher.Flush()
	}
	// A fire that has not run though its timer has expired waits for the
	// lock: it is stale, this write restarts the period.
	if !s.timer.Reset(s.every) && s.pending {
		s.skip = true
	}
	s.pending = true
	s.mu.Unlock()
	return err
}

// stopStream ends the timer's part: nothing is written by it
// afterwards, and a write it is making is waited for. nil does nothing.
func stopStream(s *streamWriter) {
	if s == nil || s.stopped {
		return
	}
	s.mu.Lock()
	s.stopped = true
	s.timer.Stop()
	s.mu.Unlock()
}

// write writes b as the stream's last bytes and flushes: the timer is
// stopped first. An empty b writes nothing.
func (s *streamWriter) write(b []byte) {
	stopStream(s)
	if len(b) != 0 {
		_ = streamWrite(s, b)
	}
}
