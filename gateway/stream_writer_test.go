package gateway

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// A stream's headers go out as it starts, before its first event: the
// upstream sends its events only once the client has the headers, for a
// relayed stream and for a translated one with a keepalive (Messages from
// an OpenAI upstream; the keepalive's period outlasts the test, so no
// ping can carry them).
func TestStreamHeadersBeforeTheFirstEvent(t *testing.T) {
	for _, tc := range []struct{ path, end string }{
		{"/v1/chat/completions", "data: [DONE]\n\n"},
		{"/v1/messages", "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"},
	} {
		gotHeaders := make(chan struct{})
		oai := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.(http.Flusher).Flush()
			if !closedSoon(gotHeaders) {
				return // the client never got the headers: the stream stays incomplete
			}
			_, _ = io.WriteString(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
		})
		_, srv, _ := serveTestGateway(t, messagesConfig("http://127.0.0.1:1", oai.URL, ""), nil, func(g *Gateway) {
			g.keepaliveEvery = time.Hour
		})
		req, _ := http.NewRequest(http.MethodPost, srv.URL+tc.path, strings.NewReader(`{"model":"gpt-x","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Authorization", "Bearer "+testAliceKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			close(gotHeaders)
			t.Fatalf("%s: %v", tc.path, err)
		}
		close(gotHeaders)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" ||
			!strings.HasSuffix(string(body), tc.end) {
			t.Fatalf("%s: status %d, Content-Type %q, body %q (%v)", tc.path, resp.StatusCode, resp.Header.Get("Content-Type"), body, err)
		}
	}
}

// In process, an upstream that sends its events at once: the first
// flush still carries the headers alone, before any event's bytes,
// relayed and translated alike.
func TestStreamFlushesTheHeadersFirst(t *testing.T) {
	skipWithoutFlushDispatch(t)
	oai := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		writeBenchEvents(w, benchEvents)
	})
	g, _, _ := serveTestGateway(t, messagesConfig("http://127.0.0.1:1", oai.URL, ""), nil, nil)
	for _, path := range []string{"/v1/chat/completions", "/v1/messages"} {
		rec := &flushRecorder{ResponseRecorder: httptest.NewRecorder()}
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(`{"model":"gpt-x","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Authorization", "Bearer "+testAliceKey)
		g.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || rec.Body.Len() == 0 || len(rec.flushedAt) < 2 || rec.flushedAt[0] != 0 {
			t.Fatalf("%s: status %d, flushes at %v, body %q", path, rec.Code, rec.flushedAt, rec.Body.String())
		}
	}
}

// An upstream that sends its headers and then nothing for a while (a
// model thinking): the client gets the headers anyway, before the first
// event, which the upstream sends only once the client has them.
func TestStreamHeadersWhileTheUpstreamThinks(t *testing.T) {
	gotHeaders := make(chan struct{})
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.(http.Flusher).Flush()
		select {
		case <-gotHeaders:
		case <-time.After(10 * time.Second):
			return // the client never got the headers: the stream stays incomplete
		}
		_, _ = io.WriteString(w, "data: {\"n\":1}\n\ndata: [DONE]\n\n")
	})
	srv, _ := newTestGateway(t, streamConfig(up.URL, ""), nil)
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(`{"model":"m1","stream":true}`))
	req.Header.Set("Authorization", "Bearer "+testAliceKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	close(gotHeaders)
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" ||
		!bytes.Equal(body, []byte("data: {\"n\":1}\n\ndata: [DONE]\n\n")) {
		t.Fatalf("status %d, Content-Type %q, body %q (%v)", resp.StatusCode, resp.Header.Get("Content-Type"), body, err)
	}
}

// A translated Messages stream whose upstream says nothing after its
// headers: the client gets the headers at once, then keepalive pings
// while the upstream is still silent, and the stream after them.
func TestStreamHeadersThenKeepaliveWhileTheUpstreamThinks(t *testing.T) {
	gotHeaders, gotPing := make(chan struct{}), make(chan struct{})
	oai := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.(http.Flusher).Flush()
		if !closedSoon(gotHeaders) || !closedSoon(gotPing) {
			return // the client never got them: the stream stays incomplete
		}
		_, _ = io.WriteString(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
	})
	_, srv, _ := serveTestGateway(t, messagesConfig("http://127.0.0.1:1", oai.URL, ""), nil, func(g *Gateway) {
		g.keepaliveEvery = 5 * time.Millisecond
	})
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/messages", strings.NewReader(`{"model":"gpt-x","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("x-api-key", testAliceKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	close(gotHeaders)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	rd := bufio.NewReader(resp.Body)
	first, err := rd.ReadString('\n')
	if err != nil || first != "event: ping\n" {
		t.Fatalf("first line %q (%v), want a keepalive ping", first, err)
	}
	close(gotPing)
	rest, err := io.ReadAll(rd)
	if err != nil || !strings.Contains(string(rest), "event: message_start") || !strings.HasSuffix(string(rest), "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n") {
		t.Fatalf("the stream after the ping: %q (%v)", rest, err)
	}
}

// closedSoon waits up to 10 s for ch to be closed, and says whether it
// was.
func closedSoon(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	case <-time.After(10 * time.Second):
		return false
	}
}

// flushLog is a stream's client writer that keeps what each flush sent
// ("" for the headers alone) and says when one came.
type flushLog struct {
	mu      sync.Mutex
	header  http.Header
	pending []byte
	flushes []string
	writes  int
	notify  chan struct{}
}

func newFlushLog() *flushLog {
	return &flushLog{header: http.Header{}, notify: make(chan struct{}, 1)}
}

func (l *flushLog) Header() http.Header { return l.header }
func (l *flushLog) WriteHeader(int)     {}

func (l *flushLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	l.pending = append(l.pending, b...)
	l.writes++
	l.mu.Unlock()
	return len(b), nil
}

func (l *flushLog) Flush() {
	l.mu.Lock()
	l.flushes = append(l.flushes, string(l.pending))
	l.pending = l.pending[:0]
	l.mu.Unlock()
	select {
	case l.notify <- struct{}{}:
	default:
	}
}

// counts is how many writes and flushes the writer got.
func (l *flushLog) counts() (int, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.writes, len(l.flushes)
}

// waitFlushes waits until the writer got n flushes, and returns them.
func (l *flushLog) waitFlushes(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		l.mu.Lock()
		got := append([]string(nil), l.flushes...)
		l.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-l.notify:
		case <-deadline:
			t.Fatalf("%d flushes within 10s, want %d: %q", len(got), n, got)
		}
	}
}

// streamWriterFor starts a stream writer over l the way startStream does,
// with the given keepalive period.
func streamWriterFor(l *flushLog, every time.Duration, keepalive []byte) *streamWriter {
	c := &call{g: &Gateway{keepaliveEvery: every}, w: l, trace: &requestTrace{requestID: "sw-test"}}
	return startStreamWriter(c, l, keepalive)
}

// The stream writer of a stream with a keepalive event: keepalives come
// after each period of silence, a write goes out at once, a stale fire
// and a stopped timer write nothing; a stream without one has no timer.
func TestStreamWriterKeepalive(t *testing.T) {
	ping := []byte("event: ping\ndata: {}\n\n")
	t.Run("write_goes_out_at_once", func(t *testing.T) {
		l := newFlushLog()
		s := streamWriterFor(l, time.Hour, ping)
		defer stopStream(s)
		if err := streamWrite(s, []byte("event: a\n\n")); err != nil {
			t.Fatal(err)
		}
		if got := l.waitFlushes(t, 1); got[0] != "event: a\n\n" {
			t.Fatalf("flushes %q, want the event", got)
		}
	})
	t.Run("keepalives_then_stop", func(t *testing.T) {
		l := newFlushLog()
		s := streamWriterFor(l, 2*time.Millisecond, ping)
		got := l.waitFlushes(t, 2)
		if got[0] != string(ping) || got[1] != string(ping) {
			t.Fatalf("flushes %q, want pings", got)
		}
		if err := streamWrite(s, []byte("event: a\n\n")); err != nil {
			t.Fatal(err)
		}
		stopStream(s)
		writes, flushes := l.counts()
		streamWriterFire(s) // a fire that waited for the lock through the stop
		if w, f := l.counts(); w != writes || f != flushes {
			t.Fatalf("the timer wrote after the stop: %d writes, %d flushes, were %d, %d", w, f, writes, flushes)
		}
		if err := streamWrite(s, []byte("event: b\n\n")); err != nil {
			t.Fatal(err)
		}
		if got := l.waitFlushes(t, flushes+1); got[len(got)-1] != "event: b\n\n" {
			t.Fatalf("after the stop: flushes %q", got)
		}
	})
	t.Run("stale_fire_writes_nothing", func(t *testing.T) {
		l := newFlushLog()
		s := streamWriterFor(l, time.Hour, ping)
		defer stopStream(s)
		// As if the period had just expired, its fire waiting for the lock
		// while the relay writes.
		s.timer.Stop()
		if err := streamWrite(s, []byte("event: a\n\n")); err != nil {
			t.Fatal(err)
		}
		streamWriterFire(s)
		if _, f := l.counts(); f != 1 {
			t.Fatalf("%d flushes after the stale fire, want 1 (the write's)", f)
		}
		streamWriterFire(s) // the write's own arming: a keepalive
		if got := l.waitFlushes(t, 2); got[1] != string(ping) {
			t.Fatalf("flushes %q, want the event then a ping", got)
		}
	})
	t.Run("without_keepalive_no_timer", func(t *testing.T) {
		l := newFlushLog()
		s := streamWriterFor(l, time.Millisecond, nil)
		if s.timer != nil || !s.stopped {
			t.Fatal("a stream without a keepalive got a timer")
		}
		if err := streamWrite(s, []byte("data: a\n\n")); err != nil {
			t.Fatal(err)
		}
		streamWriterFire(s)
		stopStream(s)
		if w, f := l.counts(); w != 1 || f != 1 {
			t.Fatalf("%d writes, %d flushes, want the event's one of each", w, f)
		}
	})
}
