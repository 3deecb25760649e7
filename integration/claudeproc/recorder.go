package claudeproc

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
)

// Exchange is one request a client sent through a Recorder and the
// status it got back.
type Exchange struct {
	// Method, Path and RawQuery are the request line's parts.
	Method, Path, RawQuery string
	// Header is a copy of the request headers.
	Header http.Header
	// Body is the request body, byte for byte.
	Body []byte
	// Status is the response status; 502 when the target did not answer.
	Status int
}

// Stream reports whether the request body says "stream": true.
func (e Exchange) Stream() bool {
	var b struct {
		Stream bool `json:"stream"`
	}
	return json.Unmarshal(e.Body, &b) == nil && b.Stream
}

// Recorder is a reverse proxy on loopback that records what a client
// sends to a target (a gateway, say) and what status each request got.
// Responses pass through unchanged and event streams are flushed as they
// arrive.
type Recorder struct {
	// URL is the proxy's base URL: give it to the client.
	URL string

	mu        sync.Mutex
	exchanges []Exchange
}

// NewRecorder starts a Recorder in front of target (a base URL) and stops
// it when tb ends.
func NewRecorder(tb testing.TB, target string) *Recorder {
	tb.Helper()
	u, err := url.Parse(target)
	if err != nil {
		tb.Fatalf("recorder target %q: %v", target, err)
	}
	rec := &Recorder{}
	proxy := &httputil.ReverseProxy{
		Rewrite:       func(pr *httputil.ProxyRequest) { pr.SetURL(u) },
		FlushInterval: -1,
		ModifyResponse: func(resp *http.Response) error {
			rec.setStatus(resp.Request.Context(), resp.StatusCode)
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			rec.setStatus(r.Context(), http.StatusBadGateway)
			http.Error(w, "recorder: "+err.Error(), http.StatusBadGateway)
		},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "recorder: reading body: "+err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		i := rec.add(Exchange{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Body: body})
		proxy.ServeHTTP(w, r.WithContext(withIndex(r.Context(), i)))
	}))
	tb.Cleanup(srv.Close)
	rec.URL = srv.URL
	return rec
}

// Exchanges returns a copy of what was recorded, oldest first.
func (r *Recorder) Exchanges() []Exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Exchange(nil), r.exchanges...)
}

func (r *Recorder) add(e Exchange) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.exchanges = append(r.exchanges, e)
	return len(r.exchanges) - 1
}

func (r *Recorder) setStatus(ctx context.Context, status int) {
	i, ok := ctx.Value(indexKey{}).(int)
	if !ok {
		return
	}
	r.mu.Lock()
	r.exchanges[i].Status = status
	r.mu.Unlock()
}

// indexKey carries an exchange's index from the recording handler to the
// proxy's response hooks.
type indexKey struct{}

func withIndex(ctx context.Context, i int) context.Context {
	return context.WithValue(ctx, indexKey{}, i)
}
