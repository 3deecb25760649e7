package gateway

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// failoverConfig serves model m1 from providers a (the owner: sorted
// first) and b, with prices, and alice may use both.
func failoverConfig(aURL, bURL, extra string) string {
	return `{` + extra + `
  "providers": {
    "a": {"type": "openai", "baseUrl": "` + aURL + `", "apiKey": "ka", "models": ["m1"]},
    "b": {"type": "openai", "baseUrl": "` + bURL + `", "apiKey": "kb", "models": ["m1"]}},
  "groups": {"all": {}},
  "users": {"inline": [{"name": "alice", "group": "all", "apiKey": "` + testAliceKey + `"}]}
}`
}

// statusUpstream answers every request with status (200: chatOK) and
// counts them.
func statusUpstream(t *testing.T, status *atomic.Int64) (*fakeUpstream, *atomic.Int64) {
	var n atomic.Int64
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if s := int(status.Load()); s != 200 {
			http.Error(w, `{"error":{"message":"no","type":"server_error"}}`, s)
			return
		}
		okJSON(chatOK)(w, r)
	})
	return up, &n
}

func TestFailover(t *testing.T) {
	var aStatus, bStatus atomic.Int64
	a, aCalls := statusUpstream(t, &aStatus)
	b, bCalls := statusUpstream(t, &bStatus)
	price := `"pricing": {"a/m1": {"inputPerM": 2, "outputPerM": 4}, "b/m1": {"inputPerM": 2, "outputPerM": 4}},`
	// The breaker would open on a after three of these failures: this
	// test is about the failover walk alone (TestRequestBreaker is the
	// breaker's).
	noBreaker := `"routing": {"breaker": {"failureThreshold": 100}}, `
	onSrv, logs := newTestGateway(t, failoverConfig(a.URL, b.URL, `"failover": {"enabled": true}, `+noBreaker+price), nil)
	offSrv, _ := newTestGateway(t, failoverConfig(a.URL, b.URL, price), nil)
	on, off := onSrv.URL, offSrv.URL
	chat := func(base, model string) int {
		status, _, _ := do(t, "POST", base+"/v1/chat/completions", testAliceKey, `{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`)
		return status
	}
	reset := func(as, bs int64) {
		aStatus.Store(as)
		bStatus.Store(bs)
		aCalls.Store(0)
		bCalls.Store(0)
	}
	for _, tc := range []struct {
		name         string
		base, model  string
		as, bs       int64
		want         int
		aWant, bWant int64
	}{
		{"5xx fails over", on, "m1", 500, 200, 200, 1, 1},
		{"429 fails over", on, "m1", 429, 200, 200, 1, 1},
		{"404 fails over", on, "m1", 404, 200, 200, 1, 1},
		{"401 fails over", on, "m1", 401, 200, 200, 1, 1},
		{"400 never", on, "m1", 400, 200, 400, 1, 0},
		{"explicit provider/model never", on, "a/m1", 500, 200, 500, 1, 0},
		{"both failing", on, "m1", 500, 503, 503, 1, 1},
		{"off: first only", off, "m1", 500, 200, 500, 1, 0},
		{"healthy first", on, "m1", 200, 200, 200, 1, 0},
	} {
		reset(tc.as, tc.bs)
		if got := chat(tc.base, tc.model); got != tc.want || aCalls.Load() != tc.aWant || bCalls.Load() != tc.bWant {
			t.Fatalf("%s: status %d (want %d), a called %d (want %d), b called %d (want %d)", tc.name, got, tc.want,
				aCalls.Load(), tc.aWant, bCalls.Load(), tc.bWant)
		}
	}
	if !strings.Contains(logs.String(), `failover past a 404: provider "a" answered 404 for model "m1"; trying provider "b"`) {
		t.Fatalf("no 404 failover line:\n%s", logs)
	}
	if !strings.Contains(logs.String(), `failing over from provider "a" to "b"`) {
		t.Fatalf("no routine failover line:\n%s", logs)
	}
}

// The cost guard: never to a dearer candidate (input or output), nor to
// an unknown-priced one from a priced first; both unpriced are equal.
func TestFailoverCostGuard(t *testing.T) {
	var aStatus, bStatus atomic.Int64
	aStatus.Store(500)
	bStatus.Store(200)
	a, _ := statusUpstream(t, &aStatus)
	b, bCalls := statusUpstream(t, &bStatus)
	for _, tc := range []struct {
		name, pricing string
		failsOver     bool
	}{
		{"cheaper on both", `{"a/m1": {"inputPerM": 2, "outputPerM": 4}, "b/m1": {"inputPerM": 1, "outputPerM": 4}}`, true},
		{"dearer output", `{"a/m1": {"inputPerM": 2, "outputPerM": 4}, "b/m1": {"inputPerM": 1, "outputPerM": 5}}`, false},
		{"dearer input", `{"a/m1": {"inputPerM": 2, "outputPerM": 4}, "b/m1": {"inputPerM": 3, "outputPerM": 1}}`, false},
		{"candidate unpriced", `{"a/m1": {"inputPerM": 2, "outputPerM": 4}}`, false},
		{"first unpriced, candidate priced", `{"b/m1": {"inputPerM": 1, "outputPerM": 1}}`, false},
		{"first unpriced, candidate known free", `{"b/m1": {"inputPerM": 0, "outputPerM": 0}}`, true},
		{"both unpriced", `{}`, true},
	} {
		base, _ := newTestGateway(t, failoverConfig(a.URL, b.URL, `"failover": {"enabled": true}, "pricing": `+tc.pricing+`,`), nil)
		bCalls.Store(0)
		status, _, body := do(t, "POST", base.URL+"/v1/chat/completions", testAliceKey, `{"model":"m1","messages":[{"role":"user","content":"hi"}]}`)
		if got := status == 200 && bCalls.Load() == 1; got != tc.failsOver {
			t.Fatalf("%s: status %d, b called %d, want failover %v (%s)", tc.name, status, bCalls.Load(), tc.failsOver, body)
		}
	}
}

func TestFailoverConfig(t *testing.T) {
	for _, tc := range []struct{ cfg, want string }{
		{`"failover": {"enabled": true, "maxAttempts": 11},`, "failover.maxAttempts: 11 is out of range"},
		{`"maxUpstreamAttempts": 41,`, "maxUpstreamAttempts: 41 is out of range"},
	} {
		if _, err := newGatewayFromConfig(t, failoverConfig("http://x", "http://y", tc.cfg)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%s: %v", tc.cfg, err)
		}
	}
}

// One attempt budget per request: retries on every candidate count, and
// maxUpstreamAttempts bounds them all.
func TestFailoverAttemptBudget(t *testing.T) {
	var s atomic.Int64
	s.Store(503)
	a, aCalls := statusUpstream(t, &s)
	b, bCalls := statusUpstream(t, &s)
	retry := `"retry": {"enabled": true, "attempts": 3, "backoff": "1ms"}, "failover": {"enabled": true},`
	for _, tc := range []struct {
		extra string
		want  int64
	}{
		{"", 6},                           // 2 candidates × 4 attempts, capped at the default 6
		{`"maxUpstreamAttempts": 5,`, 5},  // capped lower
		{`"maxUpstreamAttempts": 40,`, 8}, // 2 × (1 + 3)
	} {
		srv, _ := newTestGateway(t, failoverConfig(a.URL, b.URL, retry+tc.extra), nil)
		aCalls.Store(0)
		bCalls.Store(0)
		status, _, _ := do(t, "POST", srv.URL+"/v1/chat/completions", testAliceKey, `{"model":"m1","messages":[{"role":"user","content":"hi"}]}`)
		if status != 503 || aCalls.Load()+bCalls.Load() != tc.want || aCalls.Load() == 0 || bCalls.Load() == 0 && tc.want > 4 {
			t.Fatalf("%q: status %d, attempts a %d + b %d, want %d in all", tc.extra, status, aCalls.Load(), bCalls.Load(), tc.want)
		}
	}
}

// The cache is checked per candidate, in try order: an answer a failover
// candidate gave before is served from the cache when the first
// candidate fails again, and saved under the candidate that served it.
func TestFailoverCachePerCandidate(t *testing.T) {
	var aStatus, bStatus atomic.Int64
	aStatus.Store(500)
	bStatus.Store(200)
	a, aCalls := statusUpstream(t, &aStatus)
	b, bCalls := statusUpstream(t, &bStatus)
	cfg := failoverConfig(a.URL, b.URL, `"failover": {"enabled": true}, "redis": {"address": "127.0.0.1:1"}, "cache": {"enabled": true, "ttl": "90s"},`)
	store := newCacheTestStore()
	_, srv, _ := serveTestGateway(t, cfg, nil, func(g *Gateway) {
		g.limiter = newLimiter(newMemoryStore(nil), nil, true, nil, g.log)
		g.cache = newResponseCache(store, g.log, g.cfg.cache.maxBodyBytes)
	})
	for i, want := range []string{"miss", "hit"} {
		status, hdr, body := do(t, "POST", srv.URL+"/v1/chat/completions", testAliceKey, chatReq)
		if status != 200 || hdr.Get("X-Llmgw-Cache") != want || body != chatOK {
			t.Fatalf("request %d: %d %q %s", i, status, hdr.Get("X-Llmgw-Cache"), body)
		}
	}
	if aCalls.Load() != 2 || bCalls.Load() != 1 {
		t.Fatalf("a called %d (want 2: it is tried first each time), b %d (want 1: then cached)", aCalls.Load(), bCalls.Load())
	}
}

// Startup warns when failover and retry compose to more than 12 calls
// per request, naming the bound that applies.
func TestComposedAttemptsWarning(t *testing.T) {
	for _, tc := range []struct{ extra, want string }{
		{`"failover": {"enabled": true, "maxAttempts": 5}, "retry": {"enabled": true, "attempts": 3},`,
			"failover.maxAttempts (5) × (1 + retry.attempts (3)) = 20 outbound calls for one request at worst; maxUpstreamAttempts bounds it to 6, each waiting up to its provider's requestTimeout"},
		{`"failover": {"enabled": true, "maxAttempts": 5}, "retry": {"enabled": true, "attempts": 3}, "maxUpstreamAttempts": 40, "firstByteDeadline": "20s",`,
			"= 20 outbound calls for one request at worst; maxUpstreamAttempts bounds it to 20, all within firstByteDeadline (20s)"},
		{`"failover": {"enabled": true}, "retry": {"enabled": true, "attempts": 3},`, ""}, // 3 × 4 = 12: no warning
		{`"failover": {"enabled": true, "maxAttempts": 10},`, ""},                         // no retry
	} {
		_, logs := newTestGateway(t, failoverConfig("http://127.0.0.1:1", "http://127.0.0.1:2", tc.extra), nil)
		got := strings.Contains(logs.String(), "outbound calls for one request at worst")
		if tc.want == "" && got || tc.want != "" && !strings.Contains(logs.String(), tc.want) {
			t.Fatalf("%s:\n%s", tc.extra, logs)
		}
	}
}
