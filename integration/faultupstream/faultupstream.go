// Package faultupstream is a mock upstream (mockupstream) with faults
// injected under a test's control: a connection reset or a stall after a
// given number of SSE events or body bytes, a stall before the response
// headers, a huge answer, and an event stream that never ends. Each
// request it receives is handed to the test as a Request whose channels
// say what happened to it (headers flushed, the gateway gone, the handler
// done), so a test waits on events, never on sleeps.
//
// Requests answered without a fault get the mock's own answer (the
// OpenAI, Anthropic and Gemini dialects, see mockupstream).
package faultupstream

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgateway/llmgateway/integration/mockupstream"
)

// Kind is what the upstream does to an answer.
type Kind int

const (
	// Answer is the mock's answer, untouched.
	Answer Kind = iota
	// Reset passes the mock's answer on up to the fault's point (After),
	// then resets the TCP connection (RST, no FIN).
	Reset
	// Stall passes the answer on up to the fault's point, then writes
	// nothing more until the gateway goes away.
	Stall
	// StallHeaders writes nothing at all, not even the response headers,
	// until the gateway goes away (an upstream thinking forever).
	StallHeaders
	// Huge answers a chat completion of Size bytes: a JSON body
	// (Content-Length declared unless Undeclared), or with Stream an
	// OpenAI event stream of EventBytes-content chunks.
	Huge
	// Endless answers an OpenAI event stream of EventBytes-content
	// chunks that never ends: it writes until the gateway goes away.
	Endless
)

// Fault is the fault applied to the answers of the requests that arrive
// while it is set (Server.Set).
type Fault struct {
	Kind Kind
	// After is where Reset and Stall strike: after this many complete
	// SSE events of an event stream, or this many bytes of any other
	// body (whose Content-Length then stays declared).
	After int
	// Hold, when not nil, keeps Reset (or Stall) from striking until it
	// is closed: a test closes it once its client has read what came
	// before the fault, so no event in flight is lost to the reset.
	Hold chan struct{}
	// Size is the body size of Huge, in bytes.
	Size int64
	// Stream makes Huge an event stream.
	Stream bool
	// Undeclared sends Huge's JSON body without a Content-Length.
	Undeclared bool
	// EventBytes is the content size of one chunk of Huge (with Stream)
	// and Endless; default 16 KiB.
	EventBytes int
}

// Request is one request the upstream received.
type Request struct {
	// Path is the request's URL path; Body its body.
	Path string
	Body []byte
	// Fault is the fault its answer got.
	Fault Fault
	// Events and Bytes count the SSE events and body bytes written so
	// far.
	Events atomic.Int64
	Bytes  atomic.Int64

	headers chan struct{}
	gone    chan struct{}
	done    chan struct{}
	struck  chan struct{}
	once    [4]sync.Once
}

// Headers is closed once the response headers were flushed.
func (r *Request) Headers() <-chan struct{} { return r.headers }

// Gone is closed when the upstream saw the gateway end the request (its
// context done, or a write refused) while it was still answering: a
// stalled or endless answer ends only that way.
func (r *Request) Gone() <-chan struct{} { return r.gone }

// Done is closed when the handler returned.
func (r *Request) Done() <-chan struct{} { return r.done }

// Struck is closed when the fault struck (the reset was sent, the stall
// began, the headers were held).
func (r *Request) Struck() <-chan struct{} { return r.struck }

func (r *Request) closeHeaders() { r.once[0].Do(func() { close(r.headers) }) }
func (r *Request) closeGone()    { r.once[1].Do(func() { close(r.gone) }) }
func (r *Request) closeDone()    { r.once[2].Do(func() { close(r.done) }) }
func (r *Request) closeStruck()  { r.once[3].Do(func() { close(r.struck) }) }

// Server is the fault-injecting upstream on a loopback port.
type Server struct {
	// URL is the server's base URL.
	URL string
	// Mock answers every request without a fault.
	Mock *mockupstream.Server

	srv      *httptest.Server
	mu       sync.Mutex
	fault    Fault
	arrivals chan *Request
}

// New starts a server around a mock built with opts and closes it when
// tb ends.
func New(tb testing.TB, opts mockupstream.Options) *Server {
	tb.Helper()
	s := &Server{Mock: mockupstream.New(opts), arrivals: make(chan *Request, 256)}
	s.srv = httptest.NewServer(s)
	s.URL = s.srv.URL
	tb.Cleanup(s.srv.Close)
	return s
}

// Set makes f the fault of every request that arrives from now on.
func (s *Server) Set(f Fault) {
	s.mu.Lock()
	s.fault = f
	s.mu.Unlock()
}

// Next is the next request to arrive, waiting at most within.
func (s *Server) Next(tb testing.TB, within time.Duration) *Request {
	tb.Helper()
	t := time.NewTimer(within)
	defer t.Stop()
	select {
	case r := <-s.arrivals:
		return r
	case <-t.C:
		tb.Fatalf("faultupstream %s: no request arrived within %v", s.URL, within)
		return nil
	}
}

// Pending is how many requests arrived that Next has not returned yet.
func (s *Server) Pending() int { return len(s.arrivals) }

// Await waits at most within for ch to be closed, failing tb with what
// otherwise.
func Await(tb testing.TB, ch <-chan struct{}, within time.Duration, what string) {
	tb.Helper()
	t := time.NewTimer(within)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
		tb.Fatalf("%s: not within %v", what, within)
	}
}

// ServeHTTP answers one request under the current fault.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	r.Body = io.NopCloser(bytes.NewReader(body))
	s.mu.Lock()
	f := s.fault
	s.mu.Unlock()
	req := &Request{Path: r.URL.Path, Body: body, Fault: f,
		headers: make(chan struct{}), gone: make(chan struct{}), done: make(chan struct{}), struck: make(chan struct{})}
	defer req.closeDone()
	select {
	case s.arrivals <- req:
	default: // nobody is collecting: the request is not reported
	}
	switch f.Kind {
	case StallHeaders:
		req.closeStruck()
		<-r.Context().Done()
		req.closeGone()
	case Huge:
		serveHuge(w, r, req)
	case Endless:
		serveEndless(w, r, req)
	default:
		s.Mock.ServeHTTP(&faultWriter{w: w, r: r, req: req}, r)
	}
}

// errStruck is what the mock's writes get once the fault struck.
var errStruck = errors.New("faultupstream: the fault struck; nothing more is written")

// faultWriter passes the mock's answer on, counting events and bytes,
// and strikes the fault at its point.
type faultWriter struct {
	w       http.ResponseWriter
	r       *http.Request
	req     *Request
	wrote   bool
	lastNL  bool // the last byte written was '\n' (an event end may span two writes)
	stopped bool // the fault struck: nothing more is written
}

func (fw *faultWriter) Header() http.Header { return fw.w.Header() }

func (fw *faultWriter) WriteHeader(status int) {
	if fw.wrote {
		return
	}
	fw.wrote = true
	fw.w.WriteHeader(status)
}

func (fw *faultWriter) Flush() {
	if fw.stopped {
		return
	}
	if f, ok := fw.w.(http.Flusher); ok {
		f.Flush()
	}
	if fw.wrote {
		fw.req.closeHeaders()
	}
}

func (fw *faultWriter) eventStream() bool {
	return bytes.HasPrefix([]byte(fw.w.Header().Get("Content-Type")), []byte("text/event-stream"))
}

func (fw *faultWriter) Write(b []byte) (int, error) {
	if fw.stopped {
		return 0, errStruck
	}
	if !fw.wrote {
		fw.WriteHeader(http.StatusOK)
	}
	f := fw.req.Fault
	if f.Kind != Reset && f.Kind != Stall {
		return fw.pass(b)
	}
	cut := -1 // where the fault strikes in b
	if fw.eventStream() {
		cut = fw.eventCut(b, f.After)
	} else if n := int(fw.req.Bytes.Load()); n+len(b) >= f.After {
		cut = f.After - n
	}
	if cut < 0 {
		return fw.pass(b)
	}
	if _, err := fw.pass(b[:cut]); err != nil {
		return 0, err
	}
	fw.strike()
	return len(b), nil
}

// eventCut is the offset in b just past the event that brings the count
// to after, or -1 when b does not get there; it counts the events of b
// before that point.
func (fw *faultWriter) eventCut(b []byte, after int) int {
	if int(fw.req.Events.Load()) >= after {
		return 0
	}
	events := fw.req.Events.Load()
	prevNL := fw.lastNL
	for i, c := range b {
		if c == '\n' && prevNL {
			events++
			if int(events) >= after {
				return i + 1
			}
			prevNL = false
			continue
		}
		prevNL = c == '\n'
	}
	return -1
}

// pass writes b through, keeping the counts.
func (fw *faultWriter) pass(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, err := fw.w.Write(b)
	fw.req.Bytes.Add(int64(n))
	prevNL := fw.lastNL
	for _, c := range b[:n] {
		if c == '\n' && prevNL {
			fw.req.Events.Add(1)
			prevNL = false
			continue
		}
		prevNL = c == '\n'
	}
	fw.lastNL = prevNL
	return n, err
}

// strike flushes what was written, waits for the fault's Hold, and then
// resets the connection or stalls until the gateway goes away.
func (fw *faultWriter) strike() {
	fw.Flush()
	fw.stopped = true
	ctx := fw.r.Context()
	if h := fw.req.Fault.Hold; h != nil {
		select {
		case <-h:
		case <-ctx.Done():
			fw.req.closeGone()
			return
		}
	}
	fw.req.closeStruck()
	if fw.req.Fault.Kind == Reset {
		resetConn(fw.w)
		return
	}
	<-ctx.Done()
	fw.req.closeGone()
}

// resetConn takes the connection over and closes it with SO_LINGER 0,
// which sends a TCP RST instead of a FIN.
func resetConn(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// Content is the text of one chunk of Huge and Endless: n bytes of
// lowercase letters, no byte that JSON escapes.
func Content(n int) string {
	const letters = "abcdefghijklmnopqrstuvwxyz"
	b := make([]byte, n)
	for i := range b {
		b[i] = letters[i%len(letters)]
	}
	return string(b)
}

func eventBytes(f Fault) int {
	if f.EventBytes > 0 {
		return f.EventBytes
	}
	return 16 << 10
}

// AnthropicInputTokens is the input_tokens the message_start of an
// Anthropic stream of Huge or Endless reports (no cache tokens).
const AnthropicInputTokens = 10

// anthropic says whether r speaks the Anthropic dialect (its event
// streams are then Anthropic events).
func anthropic(r *http.Request) bool { return r.URL.Path == "/v1/messages" }

// chunkEvent is one event carrying content: an OpenAI
// chat.completion.chunk, or an Anthropic text delta.
func chunkEvent(r *http.Request, content string) []byte {
	if anthropic(r) {
		return []byte("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0," +
			`"delta":{"type":"text_delta","text":"` + content + `"}}` + "\n\n")
	}
	return []byte(`data: {"id":"chatcmpl-fault","object":"chat.completion.chunk","created":1735689600,"model":"fault",` +
		`"choices":[{"index":0,"delta":{"content":"` + content + `"},"finish_reason":null}]}` + "\n\n")
}

// streamHead is what an event stream starts with before its content:
// nothing for OpenAI, message_start and content_block_start for
// Anthropic.
func streamHead(r *http.Request) [][]byte {
	if !anthropic(r) {
		return nil
	}
	return [][]byte{
		[]byte(`event: message_start` + "\n" + `data: {"type":"message_start","message":{"id":"msg_fault","type":"message","role":"assistant",` +
			`"model":"fault","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":` +
			strconv.Itoa(AnthropicInputTokens) + `,"output_tokens":1}}}` + "\n\n"),
		[]byte(`event: content_block_start` + "\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n"),
	}
}

// streamTail ends an event stream: [DONE], or Anthropic's closing
// events.
func streamTail(r *http.Request) [][]byte {
	if !anthropic(r) {
		return [][]byte{[]byte("data: [DONE]\n\n")}
	}
	return [][]byte{
		[]byte("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"),
		[]byte("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":1}}\n\n"),
		[]byte("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"),
	}
}

// serveHuge answers f.Size bytes: a chat completion whose content fills
// it, or an event stream of content chunks totalling about that.
func serveHuge(w http.ResponseWriter, r *http.Request, req *Request) {
	f := req.Fault
	if f.Stream {
		if !startStream(w, r, req) {
			return
		}
		ev := chunkEvent(r, Content(eventBytes(f)))
		for written := int64(0); written < f.Size; written += int64(len(ev)) {
			if !writeEvent(w, r, req, ev) {
				return
			}
		}
		for _, ev := range streamTail(r) {
			if !writeEvent(w, r, req, ev) {
				return
			}
		}
		return
	}
	head := []byte(`{"id":"chatcmpl-huge","object":"chat.completion","created":1735689600,"model":"fault","choices":[{"index":0,"message":{"role":"assistant","content":"`)
	tail := []byte(`"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	fill := f.Size - int64(len(head)+len(tail))
	w.Header().Set("Content-Type", "application/json")
	if !f.Undeclared {
		w.Header().Set("Content-Length", strconv.FormatInt(f.Size, 10))
	}
	w.WriteHeader(http.StatusOK)
	piece := []byte(Content(64 << 10))
	if !writePiece(w, req, head) {
		return
	}
	for fill > 0 {
		n := int64(len(piece))
		if fill < n {
			n = fill
		}
		if !writePiece(w, req, piece[:n]) {
			req.closeGone()
			return
		}
		fill -= n
	}
	writePiece(w, req, tail)
}

// serveEndless streams content chunks until the gateway goes away.
func serveEndless(w http.ResponseWriter, r *http.Request, req *Request) {
	if !startStream(w, r, req) {
		return
	}
	ev := chunkEvent(r, Content(eventBytes(req.Fault)))
	for writeEvent(w, r, req, ev) {
	}
}

// startStream sends an event stream's headers and its head events;
// false once the gateway went away.
func startStream(w http.ResponseWriter, r *http.Request, req *Request) bool {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	_ = http.NewResponseController(w).Flush()
	req.closeHeaders()
	for _, ev := range streamHead(r) {
		if !writeEvent(w, r, req, ev) {
			return false
		}
	}
	return true
}

// writeEvent writes and flushes one event; false (and Gone closed) once
// the gateway went away.
func writeEvent(w http.ResponseWriter, r *http.Request, req *Request, ev []byte) bool {
	if r.Context().Err() != nil {
		req.closeGone()
		return false
	}
	if !writePiece(w, req, ev) || http.NewResponseController(w).Flush() != nil {
		req.closeGone()
		return false
	}
	req.Events.Add(1)
	return true
}

func writePiece(w http.ResponseWriter, req *Request, b []byte) bool {
	n, err := w.Write(b)
	req.Bytes.Add(int64(n))
	return err == nil
}
