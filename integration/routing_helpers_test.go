package integration_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llmgateway/llmgateway/integration/gwproc"
	"github.com/llmgateway/llmgateway/integration/mockupstream"
)

// Routing across providers (issue 14) through the real binary: several
// mock upstreams on their own loopback ports, each configured as its own
// provider serving the same bare model id, so that the mock whose count
// moved shows which provider served. A per-provider wrapper injects
// failures (a status, a Retry-After, a hold on a channel) under the
// test's control; a provider whose httptest server is closed refuses
// connections.

const (
	rtModel   = "gpt-4o-mini"
	rtUserKey = "sk-routing-rita"
	rtChunks  = 3
)

// --- the gateway binary, built once for the package ---

var rtBinary struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// TestMain removes the binary routingBinary built.
func TestMain(m *testing.M) {
	code := m.Run()
	if rtBinary.dir != "" {
		os.RemoveAll(rtBinary.dir)
	}
	os.Exit(code)
}

// routingBinary builds cmd/llmgateway once for every routing test.
func routingBinary(t *testing.T) string {
	t.Helper()
	rtBinary.once.Do(func() {
		rtBinary.dir, rtBinary.err = os.MkdirTemp("", "llmgw-routing-")
		if rtBinary.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		rtBinary.path, rtBinary.err = gwproc.Build(ctx, rtBinary.dir)
	})
	require.NoError(t, rtBinary.err)
	return rtBinary.path
}

// --- providers ---

// rtProvider is one mock upstream behind a failure-injecting wrapper.
type rtProvider struct {
	name string
	mock *mockupstream.Server
	srv  *httptest.Server
	// url is the provider's baseUrl (the server's URL, plus path knobs).
	url string

	// status, when non-zero, makes every request answer with it (the
	// mock's X-Mock-Status); failNext makes the next n requests do so.
	status   atomic.Int32
	failNext atomic.Int32
	// retryAfter is sent with an injected status (X-Mock-Retry-After).
	retryAfter atomic.Value // string
	// hold, when set, blocks each request after it was counted until the
	// channel is closed or the request ends; entered gets one value per
	// held request.
	holdMu  sync.Mutex
	hold    chan struct{}
	entered chan string

	mu    sync.Mutex
	times []time.Time // arrival of every request
}

// rtNewProvider starts a mock upstream on its own loopback port.
// knobs are mockupstream path knobs ("delay", "200ms", ...) put in the
// provider's baseUrl.
// rtThreeProviders is pa, pb and pc with default mocks.
func rtThreeProviders(t *testing.T) rtProviders {
	return rtProviders{
		rtNewProvider(t, "pa", mockupstream.Options{}),
		rtNewProvider(t, "pb", mockupstream.Options{}),
		rtNewProvider(t, "pc", mockupstream.Options{}),
	}
}

func rtNewProvider(t *testing.T, name string, opts mockupstream.Options, knobs ...string) *rtProvider {
	t.Helper()
	if opts.Chunks == 0 {
		opts.Chunks = rtChunks
	}
	if opts.RecordLimit == 0 {
		opts.RecordLimit = 1000
	}
	p := &rtProvider{name: name, mock: mockupstream.New(opts), entered: make(chan string, 100)}
	p.retryAfter.Store("")
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	p.url = p.srv.URL
	for i := 0; i+1 < len(knobs); i += 2 {
		p.url += mockupstream.PathKnobPrefix + knobs[i] + "/" + knobs[i+1]
	}
	return p
}

func (p *rtProvider) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.times = append(p.times, time.Now())
	p.mu.Unlock()
	status := p.status.Load()
	if status == 0 && p.failNext.Load() > 0 && p.failNext.Add(-1) >= 0 {
		status = 503
		if ra := p.retryAfter.Load().(string); ra != "" {
			status = 429
		}
	}
	if status != 0 {
		r.Header.Set(mockupstream.HeaderStatus, fmt.Sprint(status))
		if ra := p.retryAfter.Load().(string); ra != "" {
			r.Header.Set(mockupstream.HeaderRetryAfter, ra)
		}
	}
	p.holdMu.Lock()
	hold := p.hold
	p.holdMu.Unlock()
	if hold != nil {
		// Counted (times) before the wait.
		p.entered <- r.URL.Path
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		}
	}
	p.mock.ServeHTTP(w, r)
}

// total is how many requests reached the provider (held ones included).
func (p *rtProvider) total() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return int64(len(p.times))
}

// arrivals returns when each request arrived.
func (p *rtProvider) arrivals() []time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]time.Time(nil), p.times...)
}

// holdRequests makes every later request wait until release is called.
func (p *rtProvider) holdRequests() (release func()) {
	ch := make(chan struct{})
	p.holdMu.Lock()
	p.hold = ch
	p.holdMu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			p.holdMu.Lock()
			p.hold = nil
			p.holdMu.Unlock()
			close(ch)
		})
	}
}

// closedURL is a loopback base URL nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	addr, err := gwproc.FreeAddr()
	require.NoError(t, err)
	return "http://" + addr
}

// rtProviders are the providers of one test, by name.
type rtProviders []*rtProvider

// counts is each provider's request count, by name.
func (ps rtProviders) counts() map[string]int64 {
	out := map[string]int64{}
	for _, p := range ps {
		out[p.name] = p.total()
	}
	return out
}

// sum is the requests every provider received.
func (ps rtProviders) sum() int64 {
	var n int64
	for _, p := range ps {
		n += p.total()
	}
	return n
}

// served names the single provider whose count moved from before, or
// fails.
func (ps rtProviders) served(t *testing.T, before map[string]int64) string {
	t.Helper()
	var moved []string
	for _, p := range ps {
		if p.total() != before[p.name] {
			moved = append(moved, fmt.Sprintf("%s+%d", p.name, p.total()-before[p.name]))
		}
	}
	require.Len(t, moved, 1, "exactly one provider should have been called: %v", moved)
	return strings.SplitN(moved[0], "+", 2)[0]
}

// --- configuration ---

// rtProviderConfig is one openai-type provider serving models.
func rtProviderConfig(url string, models ...string) map[string]interface{} {
	if len(models) == 0 {
		models = []string{rtModel}
	}
	return map[string]interface{}{"type": "openai", "baseUrl": url, "apiKey": "sk-upstream-" + strings.TrimPrefix(url, "http://"), "models": models}
}

// rtConfig is a gateway config with ps as openai-type providers serving
// rtModel, one user (rtUserKey) and extra merged at the top level.
func rtConfig(ps rtProviders, extra map[string]interface{}) map[string]interface{} {
	providers := map[string]interface{}{}
	for _, p := range ps {
		providers[p.name] = rtProviderConfig(p.url)
	}
	cfg := map[string]interface{}{
		"providers": providers,
		"groups":    map[string]interface{}{"default": map[string]interface{}{"providers": []string{}}},
		"users": map[string]interface{}{"inline": []map[string]interface{}{
			{"name": "rita", "group": "default", "apiKey": rtUserKey},
		}},
	}
	for k, v := range extra {
		cfg[k] = v
	}
	return cfg
}

// rtStart runs the binary with cfg.
func rtStart(t *testing.T, cfg map[string]interface{}) *gwproc.Process {
	t.Helper()
	return startGateway(t, routingBinary(t), cfg)
}

// --- requests ---

var rtClient = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
	MaxIdleConns: 64, MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second,
}}

// rtChat is a chat body for model with one user message.
func rtChat(model, content string, stream bool) []byte {
	m := map[string]interface{}{
		"model":    model,
		"messages": []map[string]string{{"role": "user", "content": content}},
	}
	if stream {
		m["stream"] = true
	}
	b, _ := json.Marshal(m)
	return b
}

// rtSeq makes every rtChatN body distinct (the session-key fallback
// hashes the first system and user message).
var rtSeq atomic.Int64

// rtPost sends body to the gateway's chat route with headers (name,
// value pairs) and reads the whole answer.
func rtPost(t *testing.T, base string, body []byte, headers ...string) rlResult {
	t.Helper()
	return rtPostPath(t, base, "/v1/chat/completions", body, headers...)
}

func rtPostPath(t *testing.T, base, path string, body []byte, headers ...string) rlResult {
	t.Helper()
	res := rlResult{start: time.Now()}
	req, err := http.NewRequest(http.MethodPost, base+path, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+rtUserKey)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		// As given: a test may send a header name exactly as a client
		// spells it (net/http writes map keys verbatim).
		req.Header[headers[i]] = []string{headers[i+1]}
	}
	resp, err := rtClient.Do(req)
	if err != nil {
		res.err = err
		res.end = time.Now()
		return res
	}
	defer resp.Body.Close()
	res.status, res.header = resp.StatusCode, resp.Header
	res.body, res.err = io.ReadAll(resp.Body)
	res.end = time.Now()
	return res
}

// rtOK sends a fresh chat request for model and requires a 200.
func rtOK(t *testing.T, base, model string, headers ...string) rlResult {
	t.Helper()
	res := rtPost(t, base, rtChat(model, fmt.Sprintf("hello %d", rtSeq.Add(1)), false), headers...)
	require.NoError(t, res.err)
	require.Equal(t, http.StatusOK, res.status, "%s", res)
	return res
}

// rtErrorCode is the "code" of an OpenAI error envelope.
func rtErrorCode(t *testing.T, body []byte) string {
	t.Helper()
	return rlParseEnvelope(t, body).Error.Code
}

// rtCountsString shows counts in name order, for messages.
func rtCountsString(c map[string]int64) string {
	names := make([]string, 0, len(c))
	for n := range c {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "%s=%d ", n, c[n])
	}
	return strings.TrimSpace(b.String())
}

// rtEventually calls try until it reports true or the deadline passes.
// It is a bounded poll (each try is a real request), not a fixed sleep.
func rtEventually(t *testing.T, within, every time.Duration, what string, try func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if try() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(every)
	}
}
