package yaegigate_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/llmgateway/llmgateway/integration/mockupstream"
)

// The upstream model every scenario routes to, and the user that may reach it.
const (
	upstreamModel = "gpt-mock"
	userKey       = "sk-alice"
)

// streamGateFallback bounds how long the upstream holds the rest of a stream
// back while it waits for the client to report the first event. Passing runs
// never wait for it: the client releases the gate as soon as event 1 arrives.
const streamGateFallback = 5 * time.Second

// streamGate couples one streaming request's upstream and client so that the
// test can assert ordering: the upstream writes event 1, flushes, and waits
// until the client has read event 1 (or the fallback expires) before it
// writes event 2. A gateway that buffers the stream delivers event 1 only
// after the upstream resumed, which the client detects.
type streamGate struct {
	clientGotFirst  chan struct{} // closed by the client on reading event 1
	upstreamResumed chan struct{} // closed by the upstream just before event 2
	upstreamDone    chan struct{} // closed by the upstream after its last write
	releaseOnce     sync.Once
	fallback        time.Duration // longest the upstream holds event 2 back
	timedOut        bool          // set by the upstream when the fallback expired
}

func newStreamGate(fallback time.Duration) *streamGate {
	return &streamGate{
		fallback:        fallback,
		clientGotFirst:  make(chan struct{}),
		upstreamResumed: make(chan struct{}),
		upstreamDone:    make(chan struct{}),
	}
}

// clientReceivedFirst records that the client has event 1 in hand and
// reports whether the upstream was still holding event 2 back at that moment.
func (g *streamGate) clientReceivedFirst() (beforeUpstreamResumed bool) {
	select {
	case <-g.upstreamResumed:
		beforeUpstreamResumed = false
	default:
		beforeUpstreamResumed = true
	}
	g.releaseOnce.Do(func() { close(g.clientGotFirst) })
	return beforeUpstreamResumed
}

// recordedRequest is what the upstream saw of one request.
type recordedRequest struct {
	Method string
	Path   string
	Auth   string
	Body   map[string]interface{}
}

// upstreamChunks is the number of content chunks the mock streams (and
// the number of pieces of its non-streamed reply).
const upstreamChunks = 3

// streamPieces is the content of the mock's streamed events, in order.
func streamPieces() []string {
	out := make([]string, upstreamChunks)
	for i := range out {
		out[i] = mockupstream.ChunkText(i)
	}
	return out
}

// chatReply is the mock's non-streamed assistant reply.
func chatReply() string { return mockupstream.ReplyText(upstreamChunks) }

// fixtureUpstream is the project's mock OpenAI upstream on 127.0.0.1, with
// a gate on the next streamed chat (see streamGate).
type fixtureUpstream struct {
	mock *mockupstream.Server
	srv  *httptest.Server

	mu   sync.Mutex
	gate *streamGate
}

func newFixtureUpstream(t *testing.T) *fixtureUpstream {
	t.Helper()
	u := &fixtureUpstream{mock: mockupstream.New(mockupstream.Options{
		Models:       []string{upstreamModel},
		StrictModels: true,
		Chunks:       upstreamChunks,
	})}
	u.srv = httptest.NewServer(u)
	t.Cleanup(u.srv.Close)
	return u
}

// URL is the server root, the provider's baseUrl.
func (u *fixtureUpstream) URL() string { return u.srv.URL }

// armGate installs the gate the next chat request will use.
func (u *fixtureUpstream) armGate(fallback time.Duration) *streamGate {
	g := newStreamGate(fallback)
	u.mu.Lock()
	u.gate = g
	u.mu.Unlock()
	return g
}

func (u *fixtureUpstream) takeGate() *streamGate {
	u.mu.Lock()
	defer u.mu.Unlock()
	g := u.gate
	u.gate = nil
	return g
}

func (u *fixtureUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" {
		u.mock.ServeHTTP(w, r)
		return
	}
	gate := u.takeGate()
	if gate == nil {
		u.mock.ServeHTTP(w, r)
		return
	}
	defer close(gate.upstreamDone)
	u.mock.ServeHTTP(&gatedWriter{ResponseWriter: w, gate: gate}, r)
}

// gatedWriter holds the mock's second content event back until the client
// has read the first one (or the fallback expires).
type gatedWriter struct {
	http.ResponseWriter
	gate          *streamGate
	contentEvents int
	resumed       bool
}

// contentMarker starts the delta of a content chunk in the mock's wire
// format (the role chunk's delta starts with "role").
var contentMarker = []byte(`"delta":{"content":`)

func (g *gatedWriter) Write(p []byte) (int, error) {
	if bytes.Contains(p, contentMarker) {
		if g.contentEvents >= 1 && !g.resumed {
			select {
			case <-g.gate.clientGotFirst:
			case <-time.After(g.gate.fallback):
				g.gate.timedOut = true
			}
			g.resumed = true
			close(g.gate.upstreamResumed)
		}
		g.contentEvents++
	}
	return g.ResponseWriter.Write(p)
}

func (g *gatedWriter) Flush() {
	if f, ok := g.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (g *gatedWriter) Unwrap() http.ResponseWriter { return g.ResponseWriter }

// lastRequest returns the most recent request the mock received on path.
func (u *fixtureUpstream) lastRequest(path string) (recordedRequest, bool) {
	reqs := u.mock.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if reqs[i].Path != path {
			continue
		}
		body := map[string]interface{}{}
		_ = json.Unmarshal(reqs[i].Body, &body)
		return recordedRequest{Method: reqs[i].Method, Path: reqs[i].Path, Auth: reqs[i].Header.Get("Authorization"), Body: body}, true
	}
	return recordedRequest{}, false
}
