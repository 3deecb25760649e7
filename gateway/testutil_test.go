package gateway

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// recordedRequest is what a fake upstream received.
type recordedRequest struct {
	method string
	path   string
	query  string
	header http.Header
	body   []byte
}

// fakeUpstream is an httptest server that records every request and
// answers with handler.
type fakeUpstream struct {
	*httptest.Server
	mu       sync.Mutex
	requests []recordedRequest
}

func newFakeUpstream(t *testing.T, handler http.HandlerFunc) *fakeUpstream {
	t.Helper()
	f := &fakeUpstream{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.requests = append(f.requests, recordedRequest{method: r.Method, path: r.URL.Path, query: r.URL.RawQuery, header: r.Header.Clone(), body: body})
		f.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		handler(w, r)
	}))
	t.Cleanup(func() { f.Close() })
	return f
}

func (f *fakeUpstream) last(t *testing.T) recordedRequest {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.requests) == 0 {
		t.Fatal("upstream received no request")
	}
	return f.requests[len(f.requests)-1]
}

func (f *fakeUpstream) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// newTestGateway builds a gateway from a JSON config and serves it.
func newTestGateway(t *testing.T, configJSON string, next http.Handler) (*httptest.Server, *syncBuffer) {
	t.Helper()
	_, srv, logs := serveTestGateway(t, configJSON, next, nil)
	return srv, logs
}

// serveTestGateway is newTestGateway that also returns the gateway;
// setup, when not nil, runs before the server starts.
func serveTestGateway(t *testing.T, configJSON string, next http.Handler, setup func(*Gateway)) (*Gateway, *httptest.Server, *syncBuffer) {
	t.Helper()
	cfg, err := DecodeConfigJSON([]byte(configJSON))
	if err != nil {
		t.Fatalf("decode config: %v", err)
	}
	logs := &syncBuffer{}
	g, err := New(next, cfg, Options{Name: "test", LogOutput: logs})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if setup != nil {
		setup(g)
	}
	srv := httptest.NewServer(g)
	t.Cleanup(func() {
		srv.Close()
		_ = g.Close()
	})
	return g, srv, logs
}

// do sends a request and returns status, headers and body.
func do(t *testing.T, method, url, key, body string) (int, http.Header, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(data)
}
