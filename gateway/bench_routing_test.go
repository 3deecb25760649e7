package gateway

import (
	"bytes"
	"io"
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
// Redis (one GET + EXPIRE round trip, reported as roundtrips/op). Run
// it next to BenchmarkChatNonStreaming for the whole request's cost.
func BenchmarkRouting(b *testing.B) {
	cases := []struct {
		name, extra string
		redis       bool
		newSession  bool
	}{
		{"priority-default", ``, false, false},
		{"priority-failover", `"failover": {"enabled": true},`, false, false},
		{"round-robin", `"routing": {"strategy": "round-robin"},`, false, false},
		{"weighted", `"routing": {"strategy": "weighted"},`, false, false},
		{"least-latency", `"routing": {"strategy": "least-latency"},`, false, false},
		{"least-cost", `"routing": {"strategy": "least-cost"},`, false, false},
		{"affinity-memory", `"routing": {"strategy": "round-robin", "sessionAffinity": {"enabled": true}}, "failover": {"enabled": true},`, false, false},
		{"affinity-redis-cached", `"routing": {"strategy": "round-robin", "sessionAffinity": {"enabled": true}}, "failover": {"enabled": true},`, true, false},
		{"affinity-redis-read", `"routing": {"strategy": "round-robin", "sessionAffinity": {"enabled": true}}, "failover": {"enabled": true},`, true, true},
	}
	for i := 0; i < len(cases); i++ {
		tc := cases[i]
		b.Run(tc.name, func(b *testing.B) {
			extra := tc.extra
			if tc.redis {
				extra += `"redis": {"address": "` + redistest.Start(b) + `"},`
			}
			g := newRoutingBenchGateway(b, extra)
			rt := routesByPath["/v1/chat/completions"]
			req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(benchChatBody))
			req.Header.Set("Authorization", "Bearer "+benchUserKey)
			req.Header.Set("X-Session-Id", "bench-session")
			c := newCall(g, httptest.NewRecorder(), req, rt)
			if !identify(c) || !admitBody(c) || !resolve(c) {
				b.Fatalf("setting up the call failed: %d %s", c.rec.statusCode, c.rec.errorCode)
			}
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
				c.target, c.aff, c.rec.skipped = target, nil, nil
				orderCandidates(c)
				if len(c.cands) == 0 {
					b.Fatal("no candidate")
				}
			}
			b.StopTimer()
			if g.redis != nil {
				b.ReportMetric(float64(g.redis.RoundTrips()-trips0)/float64(b.N), "roundtrips/op")
			}
		})
	}
}

// newRoutingBenchGateway serves the benchmark model from 3 providers
// (never called: the benchmark stops at the routing decision).
func newRoutingBenchGateway(b *testing.B, extra string) *Gateway {
	b.Helper()
	cfg, err := DecodeConfigJSON([]byte(`{` + extra + `
  "providers": {
    "p1": {"type": "openai", "baseUrl": "http://127.0.0.1:9", "apiKey": "k", "models": ["bench-model"]},
    "p2": {"type": "openai", "baseUrl": "http://127.0.0.1:9", "apiKey": "k", "models": ["bench-model"]},
    "p3": {"type": "openai", "baseUrl": "http://127.0.0.1:9", "apiKey": "k", "models": ["bench-model"]}},
  "groups": {"all": {}},
  "users": {"inline": [{"name": "bench", "group": "all", "apiKey": "` + benchUserKey + `"}]}
}`))
	if err != nil {
		b.Fatal(err)
	}
	g, err := New(nil, cfg, Options{Name: "bench", LogOutput: io.Discard})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = g.Close() })
	return g
}
