package gateway

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/llmgateway/llmgateway/gateway/internal/redistest"
)

// BenchmarkRouting measures the routing stage alone (orderCandidates):
// what choosing among 3 candidates of one bare id costs per request, by
// strategy, with the default (priority, failover off: the first
// candidate, no work) as the baseline. The affinity cases carry an
// X-Session-Id: "memory" binds in process; "redis-cached" reads a
// binding a replica read less than a second ago (no round trip);
// "redis-read" uses a new session per request, so every decision reads
// Redis (one GET + EXPIRE round trip, reported as roundtrips/op). The
// limit-* cases run the limit stage too: its one round trip carries the
// binding's read, so affinity adds none (roundtrips/op stays 1). Run it
// next to BenchmarkChatNonStreaming for the whole request's cost.
func BenchmarkRouting(b *testing.B) {
	cases := []routingBenchCase{
		{"priority-default", ``, false, false, false},
		{"priority-failover", `"failover": {"enabled": true},`, false, false, false},
		{"round-robin", `"routing": {"strategy": "round-robin"},`, false, false, false},
		{"weighted", `"routing": {"strategy": "weighted"},`, false, false, false},
		{"least-latency", `"routing": {"strategy": "least-latency"},`, false, false, false},
		{"least-cost", `"routing": {"strategy": "least-cost"},`, false, false, false},
		{"affinity-memory", `"routing": {"strategy": "round-robin", "sessionAffinity": {"enabled": true}}, "failover": {"enabled": true},`, false, false, false},
		{"affinity-redis-cached", `"routing": {"strategy": "round-robin", "sessionAffinity": {"enabled": true}}, "failover": {"enabled": true},`, true, false, false},
		{"affinity-redis-read", `"routing": {"strategy": "round-robin", "sessionAffinity": {"enabled": true}}, "failover": {"enabled": true},`, true, true, false},
		{"limit-redis", `"routing": {"strategy": "round-robin"}, "failover": {"enabled": true},`, true, false, true},
		{"limit-redis-affinity-read", `"routing": {"strategy": "round-robin", "sessionAffinity": {"enabled": true}}, "failover": {"enabled": true},`, true, true, true},
	}
	for i := 0; i < len(cases); i++ {
		tc := cases[i]
		b.Run(tc.name, func(b *testing.B) { runRoutingBench(b, tc) })
	}
}

// runRoutingBench is one case of BenchmarkRouting.
func runRoutingBench(b *testing.B, tc routingBenchCase) {
	redis := ""
	if tc.redis {
		redis = `"redis": {"address": "` + redistest.Start(b) + `"},`
	}
	g := newRoutingBenchGateway(b, tc.extra+redis)
	rt := routesByPath["/v1/chat/completions"]
	req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(benchChatBody))
	req.Header.Set("Authorization", "Bearer "+benchUserKey)
	req.Header.Set("X-Session-Id", "bench-session")
	c := newCall(g, httptest.NewRecorder(), req, rt, startTrace(httptest.NewRecorder(), req))
	if !identify(c) || !admitBody(c) || !resolve(c) {
		b.Fatalf("setting up the call failed: %d %s", c.rec.statusCode, c.rec.errorCode)
	}
	finishRouting(c, nil)
	target := c.target
	if len(target.candidates) != 3 {
		b.Fatalf("%d candidates", len(target.candidates))
	}
	if c.aff != nil {
		noteServed(c, c.cands[0]) // bind the session
	}
	var trips0 int64
	if g.redis != nil {
		trips0 = g.redis.RoundTrips()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		if tc.newSession {
			req.Header.Set("X-Session-Id", "s"+strconv.Itoa(n))
		}
		// (One assignment each: an untyped nil in a multi-value
		// assignment panics under Yaegi.)
		c.target = target
		c.aff = nil
		c.rec.skipped = nil
		orderCandidates(c)
		if tc.limit {
			if !limit(c) {
				b.Fatalf("limit: %d %s", c.rec.statusCode, c.rec.errorCode)
			}
		} else {
			finishRouting(c, nil)
		}
		if len(c.cands) == 0 {
			b.Fatal("no candidate")
		}
	}
	b.StopTimer()
	if g.redis != nil {
		b.ReportMetric(float64(g.redis.RoundTrips()-trips0)/float64(b.N), "roundtrips/op")
	}
}

// routingBenchCase is one BenchmarkRouting case.
type routingBenchCase struct {
	name       string
	extra      string
	redis      bool
	newSession bool
	// limit runs the limit stage (the limiter's Redis round trip, which
	// carries the binding read) instead of the routing decision alone.
	limit bool
}

// newRoutingBenchGateway serves the benchmark model from 3 providers
// (never called: the benchmark stops at the routing decision).
func newRoutingBenchGateway(b *testing.B, extra string) *Gateway {
	b.Helper()
	return newBenchGatewayFrom(b, `{`+extra+`
  "providers": {
    "p1": {"type": "openai", "baseUrl": "http://127.0.0.1:9", "apiKey": "k", "models": ["bench-model"]},
    "p2": {"type": "openai", "baseUrl": "http://127.0.0.1:9", "apiKey": "k", "models": ["bench-model"]},
    "p3": {"type": "openai", "baseUrl": "http://127.0.0.1:9", "apiKey": "k", "models": ["bench-model"]}},
  "groups": {"all": {}},
  "users": {"inline": [{"name": "bench", "group": "all", "apiKey": "`+benchUserKey+`"}]}
}`)
}
