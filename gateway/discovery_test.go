package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// listingServer serves a provider's model listing whose content and
// status the test changes between requests.
type listingServer struct {
	*httptest.Server
	mu     sync.Mutex
	models []string
	status int
	calls  int
	fail   int // fail this many more listing calls with 503
	auth   http.Header
}

func newListingServer(t *testing.T, models ...string) *listingServer {
	l := &listingServer{models: models, status: 200}
	l.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		defer l.mu.Unlock()
		if r.URL.Path != "/v1/models" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"ok":true}`))
			return
		}
		l.calls++
		l.auth = r.Header.Clone()
		if l.fail > 0 {
			l.fail--
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		if l.status != 200 {
			w.WriteHeader(l.status)
			return
		}
		data := []map[string]string{}
		for i := 0; i < len(l.models); i++ {
			data = append(data, map[string]string{"id": l.models[i], "object": "model"})
		}
		_ = json.NewEncoder(w).Encode(map[string]interface{}{"object": "list", "data": data})
	}))
	t.Cleanup(func() { l.Close() })
	return l
}

func (l *listingServer) set(status int, models ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.status, l.models = status, models
}

func (l *listingServer) callCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls
}

// fakeClock is a goroutine-safe settable clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// discoveryGateway builds a gateway with one discovering openai provider.
// With a non-nil clock, the discoverer reads time from it; the
// cold-start retry tests pass nil (the clock is swapped after New, which
// would race with a retry already armed).
func discoveryGateway(t *testing.T, l *listingServer, extra string, clock *fakeClock) (*Gateway, *httptest.Server, *syncBuffer) {
	t.Helper()
	cfg, err := DecodeConfigJSON([]byte(`{"providers":{"disc":{"type":"openai","baseUrl":"` + l.URL + `","apiKey":"sk-disc",
		"models":["explicit"],"discovery":true,"discoveryInterval":"1m"}},` + extra + `
		"groups":{"g":{}},"users":{"inline":[{"name":"u","group":"g","apiKey":"sk-disc-user"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	g, err := New(nil, cfg, Options{LogOutput: logs})
	if err != nil {
		t.Fatal(err)
	}
	if clock != nil {
		clock.now = time.Now()
		g.discovery.now = func() time.Time { return clock.Now() }
	}
	srv := httptest.NewServer(g)
	t.Cleanup(func() {
		srv.Close()
		_ = g.Close()
	})
	return g, srv, logs
}

// chat sends a chat request and waits for any refresh it started.
func chatStatus(t *testing.T, g *Gateway, srv *httptest.Server, model string) int {
	t.Helper()
	status, _, _ := do(t, "POST", srv.URL+"/v1/chat/completions", "sk-disc-user", `{"model":"`+model+`"}`)
	g.discovery.running.Wait()
	return status
}

func TestDiscoveryWarmFillAndRefresh(t *testing.T) {
	l := newListingServer(t, "d1", "d2")
	clock := &fakeClock{}
	g, srv, _ := discoveryGateway(t, l, "", clock)
	if got := l.auth.Get("Authorization"); got != "Bearer sk-disc" {
		t.Fatalf("listing called with Authorization %q", got)
	}
	if s := chatStatus(t, g, srv, "d1"); s != 200 {
		t.Fatalf("discovered model: %d", s)
	}
	if s := chatStatus(t, g, srv, "explicit"); s != 200 {
		t.Fatalf("explicit model: %d", s)
	}
	l.set(200, "d1", "d3")
	clock.Add(59 * time.Second)
	if s := chatStatus(t, g, srv, "d3"); s != 404 {
		t.Fatalf("before the interval the new model must be unknown: %d", s)
	}
	if l.callCount() != 1 {
		t.Fatalf("refreshed before the interval: %d listing calls", l.callCount())
	}
	clock.Add(time.Second)
	chatStatus(t, g, srv, "d1") // triggers the refresh in the background
	if s := chatStatus(t, g, srv, "d3"); s != 200 {
		t.Fatalf("after the refresh: %d", s)
	}
	if s := chatStatus(t, g, srv, "d2"); s != 404 {
		t.Fatalf("a model the provider dropped still routes: %d", s)
	}
	status, _, body := do(t, "GET", srv.URL+"/v1/models", "sk-disc-user", "")
	if status != 200 || !strings.Contains(body, `"id":"disc/d3"`) || !strings.Contains(body, `"id":"explicit"`) {
		t.Fatalf("models list %d %s", status, body)
	}
}

func TestDiscoveryStaleWhileError(t *testing.T) {
	l := newListingServer(t, "d1")
	clock := &fakeClock{}
	g, srv, logs := discoveryGateway(t, l, "", clock)
	l.set(500)
	clock.Add(time.Minute)
	chatStatus(t, g, srv, "d1")
	if s := chatStatus(t, g, srv, "d1"); s != 200 {
		t.Fatalf("a failed refresh emptied the set: %d", s)
	}
	if !strings.Contains(logs.String(), `discovery for provider "disc" failed (breaker closed), keeping 1 discovered models: model listing answered HTTP 500`) {
		t.Fatalf("failure not logged: %s", logs)
	}
	if strings.Contains(logs.String(), "sk-disc") {
		t.Fatalf("log leaks a key: %s", logs)
	}
}

// The breaker is an additional gate on top of discoveryInterval.
func TestDiscoveryBreakerGatesRefreshes(t *testing.T) {
	l := newListingServer(t, "d1")
	clock := &fakeClock{}
	g, srv, _ := discoveryGateway(t, l, `"breaker":{"failureThreshold":1,"openDuration":"10m","maxOpenDuration":"1h"},`, clock)
	l.set(500)
	clock.Add(time.Minute)
	chatStatus(t, g, srv, "d1") // fails: the breaker opens for 10m
	calls := l.callCount()
	clock.Add(5 * time.Minute) // interval passed, breaker still open
	chatStatus(t, g, srv, "d1")
	if l.callCount() != calls {
		t.Fatal("refreshed while the breaker was open")
	}
	l.set(200, "d1", "d9")
	clock.Add(5 * time.Minute) // window over: one half-open probe
	chatStatus(t, g, srv, "d1")
	if l.callCount() != calls+1 {
		t.Fatalf("half-open probe: %d calls, want %d", l.callCount(), calls+1)
	}
	if s := chatStatus(t, g, srv, "d9"); s != 200 {
		t.Fatalf("after a successful probe: %d", s)
	}
	g.discovery.states[0].mu.Lock()
	state := g.discovery.states[0].breaker.state
	g.discovery.states[0].mu.Unlock()
	if state != breakerClosed {
		t.Fatalf("breaker %s after a successful probe", state)
	}
}

func TestDiscoveryColdStartRetry(t *testing.T) {
	defer func(d time.Duration) { warmFillRetryDelay = d }(warmFillRetryDelay)
	warmFillRetryDelay = 20 * time.Millisecond
	l := newListingServer(t, "d1")
	l.fail = 1 // the warm fill fails, the retry succeeds
	g, srv, logs := discoveryGateway(t, l, "", nil)
	deadline := time.Now().Add(5 * time.Second)
	for l.callCount() < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	for !strings.Contains(logs.String(), "recovered on the cold-start retry") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if s := chatStatus(t, g, srv, "d1"); s != 200 {
		t.Fatalf("after the retry: %d (logs %s)", s, logs)
	}
	if l.callCount() != 2 {
		t.Fatalf("listing called %d times, want warm fill + one retry", l.callCount())
	}
}

// A retry that fires after close (its timer raced the Stop) makes no
// listing call: the discoverer's scheduler is held so the test runs the
// retry itself.
func TestDiscoveryNoRetryAfterClose(t *testing.T) {
	l := newListingServer(t)
	l.set(500)
	cfg, err := DecodeConfigJSON([]byte(`{"providers":{"disc":{"type":"openai","baseUrl":"` + l.URL + `","apiKey":"sk-disc","discovery":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	compiled, err := compileConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d := newDiscoverer(compiled, newUpstreamTransport(), newLogger("test", &syncBuffer{}))
	var retry func()
	d.schedule = func(_ time.Duration, f func()) *time.Timer {
		retry = f
		return time.NewTimer(time.Hour)
	}
	d.warmFill()
	if retry == nil {
		t.Fatal("a failed warm fill scheduled no retry")
	}
	d.close()
	retry()
	if l.callCount() != 1 {
		t.Fatalf("listing called %d times after Close, want only the warm fill", l.callCount())
	}
}

func TestFetchModelsProviderShapes(t *testing.T) {
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.URL.Path+"?"+r.URL.RawQuery+" "+r.Header.Get("X-Api-Key")+r.Header.Get("Anthropic-Version")+r.Header.Get("X-Goog-Api-Key"))
		switch {
		case r.URL.Path == "/v1/models" && r.URL.Query().Get("after_id") == "":
			_, _ = w.Write([]byte(`{"data":[{"id":"claude-b"},{"id":"claude-a"}],"has_more":true,"last_id":"claude-a"}`))
		case r.URL.Path == "/v1/models":
			_, _ = w.Write([]byte(`{"data":[{"id":"claude-c"}],"has_more":false,"last_id":"claude-c"}`))
		case r.URL.Query().Get("pageToken") == "":
			_, _ = w.Write([]byte(`{"models":[{"name":"models/gemini-2.5-pro"}],"nextPageToken":"p2"}`))
		default:
			_, _ = w.Write([]byte(`{"models":[{"name":"models/gemini-2.5-flash"}]}`))
		}
	}))
	defer srv.Close()
	tr := newUpstreamTransport()
	anthropic := &providerRuntime{name: "a", kind: providerAnthropic, baseURL: srv.URL, apiKey: "ak"}
	got, err := fetchModels(context.Background(), tr, anthropic)
	if err != nil || strings.Join(got, ",") != "claude-a,claude-b,claude-c" {
		t.Fatalf("anthropic: %v %v", got, err)
	}
	gemini := &providerRuntime{name: "g", kind: providerGemini, baseURL: srv.URL, apiKey: "gk"}
	got, err = fetchModels(context.Background(), tr, gemini)
	if err != nil || strings.Join(got, ",") != "gemini-2.5-flash,gemini-2.5-pro" {
		t.Fatalf("gemini: %v %v", got, err)
	}
	want := []string{
		"/v1/models?limit=1000 ak2023-06-01",
		"/v1/models?after_id=claude-a&limit=1000 ak2023-06-01",
		"/v1beta/models?pageSize=1000 gk",
		"/v1beta/models?pageSize=1000&pageToken=p2 gk",
	}
	if strings.Join(seen, "|") != strings.Join(want, "|") {
		t.Fatalf("requests:\n%s\nwant\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}
}

func TestDiscoveryBreakerTransitions(t *testing.T) {
	b := newBreaker(breakerSettings{threshold: 2, open: time.Minute, maxOpen: 3 * time.Minute})
	t0 := time.Unix(1700000000, 0)
	b.failure(t0)
	if b.state != breakerClosed || !b.allow(t0) {
		t.Fatalf("one failure below the threshold: %s", b.state)
	}
	b.failure(t0)
	if b.state != breakerOpen || b.allow(t0.Add(59*time.Second)) {
		t.Fatalf("threshold reached: %s", b.state)
	}
	if !b.allow(t0.Add(time.Minute)) || b.state != breakerHalfOpen || b.allow(t0.Add(time.Minute)) {
		t.Fatal("an elapsed window must admit exactly one probe")
	}
	b.neutral() // a cancelled probe decides nothing
	if b.state != breakerOpen || !b.allow(t0.Add(time.Minute)) {
		t.Fatalf("after a cancelled probe: %s", b.state)
	}
	t1 := t0.Add(time.Minute)
	b.failure(t1) // failed probe: backoff doubles to 2m
	if b.allow(t1.Add(119*time.Second)) || !b.allow(t1.Add(2*time.Minute)) {
		t.Fatal("backoff did not double")
	}
	t2 := t1.Add(2 * time.Minute)
	b.failure(t2) // 4m capped at 3m
	if b.allow(t2.Add(179*time.Second)) || !b.allow(t2.Add(3*time.Minute)) {
		t.Fatal("backoff not capped at maxOpen")
	}
	b.success()
	if b.state != breakerClosed || b.failures != 0 || b.backoff != time.Minute {
		t.Fatalf("success must close and reset: %+v", *b)
	}
}

func TestDiscoveryConfigErrors(t *testing.T) {
	cases := map[string]string{
		`"breaker":{"failureThreshold":101}`:                            "breaker.failureThreshold: 101 must be between 1 and 100",
		`"breaker":{"failureThreshold":-1}`:                             "breaker.failureThreshold: -1 must be between 1 and 100",
		`"breaker":{"openDuration":"0s"}`:                               `breaker.openDuration: "0s" must be positive`,
		`"breaker":{"openDuration":"soon"}`:                             `breaker.openDuration: "soon" is not a Go duration`,
		`"breaker":{"openDuration":"2h","maxOpenDuration":"1h"}`:        `breaker.maxOpenDuration: "1h" must be at least openDuration`,
		`"breaker":{"maxOpenDuration":"25h"}`:                           `breaker.maxOpenDuration: "25h" must be at most 24h`,
		`"providers":{"p":{"type":"openai","discoveryInterval":"0s"}}`:  `providers.p.discoveryInterval: "0s" must be positive`,
		`"providers":{"p":{"type":"openai","discoveryInterval":"1 h"}}`: `providers.p.discoveryInterval: "1 h" is not a Go duration`,
	}
	for doc, want := range cases {
		if !strings.Contains(doc, `"providers"`) {
			doc = `"providers":{"p":{"type":"openai"}},` + doc
		}
		_, err := newGatewayFromConfig(t, "{"+doc+"}")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", doc, err, want)
		}
	}
}

// Traefik delivers every scalar as a string.
func TestConfigFromMapDiscovery(t *testing.T) {
	cfg, err := ConfigFromMap(map[string]interface{}{
		"providers": map[string]interface{}{"p": map[string]interface{}{"type": "openai", "discovery": "true", "discoveryInterval": "10m"}},
		"breaker":   map[string]interface{}{"failureThreshold": "5", "openDuration": "2m", "maxOpenDuration": "3h"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Providers["p"].Discovery || cfg.Providers["p"].DiscoveryInterval != "10m" || cfg.Breaker.FailureThreshold != 5 || cfg.Breaker.MaxOpenDuration != "3h" {
		t.Fatalf("decoded %+v %+v", *cfg.Providers["p"], *cfg.Breaker)
	}
}
