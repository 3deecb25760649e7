package gateway

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/redistest"
	"github.com/llmgateway/llmgateway/gateway/internal/store"
	"github.com/llmgateway/llmgateway/gateway/internal/translate"
)

// BenchmarkLimiter measures one metered request's limiter work for a
// user counted in 3 scopes (the user, one group, the synthetic total),
// against the in-process store and against a real redis-server on
// loopback, in two shapes:
//
//   - budgets: the user and the group have token and cost budgets (and
//     request limits), so the request reserves its worst case before the
//     upstream call (one admission: count, check, reserve) and settles
//     it after (usage and release);
//   - rates: request limits only — count-then-check before, accounting
//     after.
//
// It reports the store round trips per request (roundtrips/op): 2 in
// every case, whatever the number of scopes.
//
// The Redis case starts its own redis-server (redistest: this file is
// interpreted by `yaegi test` too) and is skipped when redis-server is
// not on PATH, unless LLMGW_REQUIRE_REDIS=1.
func BenchmarkLimiter(b *testing.B) {
	shapes := []struct {
		name   string
		scopes func() []limitScope
	}{{"budgets", benchBudgetScopes}, {"rates", benchRateScopes}}
	for i := 0; i < len(shapes); i++ {
		sh := shapes[i]
		b.Run("memory/"+sh.name, func(b *testing.B) {
			ms := &countingStore{inner: newMemoryStore(nil)}
			var logs bytes.Buffer
			l := newLimiter(ms, nil, false, nil, newLogger("bench", &logs))
			runLimiterBench(b, l, sh.scopes(), &logs, func() int64 { return ms.calls.Load() })
		})
		b.Run("redis/"+sh.name, func(b *testing.B) {
			addr := redistest.Start(b)
			rs := store.NewRedis(store.RedisSettings{Address: addr})
			defer rs.Close()
			var logs bytes.Buffer
			// failOpen off: a store error must fail the benchmark, never be
			// absorbed by the in-process fallback.
			l := newLimiter(rs, nil, false, nil, newLogger("bench", &logs))
			runLimiterBench(b, l, sh.scopes(), &logs, func() int64 { return rs.RoundTrips() })
		})
	}
}

// benchBudgetScopes is a 3-scope user whose limits are never reached
// but make every request reserve against 2 budgeted scopes.
func benchBudgetScopes() []limitScope {
	const huge = int64(1) << 49
	user := &compiledLimits{requestsPerMinute: huge, tokensPerDay: huge, costPerDayMicros: huge}
	group := &compiledLimits{requestsPerDay: huge, tokensPerMonth: huge, costPerMonthMicros: huge}
	return []limitScope{newLimitScope("user", "bench-user", user), newLimitScope("group", "bench-group", group), newLimitScope("total", "all", nil)}
}

// benchRateScopes is a 3-scope user with request limits only.
func benchRateScopes() []limitScope {
	const huge = int64(1) << 49
	user := &compiledLimits{requestsPerMinute: huge}
	group := &compiledLimits{requestsPerDay: huge}
	return []limitScope{newLimitScope("user", "bench-user", user), newLimitScope("group", "bench-group", group), newLimitScope("total", "all", nil)}
}

// limiterRequest is one request's limiter work: admit (reserving when
// the scopes are budgeted), then settle or account.
func limiterRequest(b *testing.B, l *limiter, ctx context.Context, scopes []limitScope, u translate.Usage) {
	r, e := l.reserve(ctx, scopes, 4096+180, 5000)
	if e != nil {
		b.Fatalf("reserve: %s", e.Error())
	}
	if r != nil {
		r.settle(u, 1234)
		return
	}
	l.account(ctx, scopes, u, 1234)
}

func runLimiterBench(b *testing.B, l *limiter, scopes []limitScope, logs *bytes.Buffer, roundTrips func() int64) {
	u := translate.Usage{PromptTokens: 180, CompletionTokens: 6}
	ctx := context.Background()
	// Warm up (the Redis client dials its first connection and loads the
	// scripts here).
	limiterRequest(b, l, ctx, scopes, u)
	start := roundTrips()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		limiterRequest(b, l, ctx, scopes, u)
	}
	b.StopTimer()
	b.ReportMetric(float64(roundTrips()-start)/float64(b.N), "roundtrips/op")
	if logs.Len() > 0 {
		b.Fatalf("the limiter logged errors:\n%s", logs.String())
	}
}

// BenchmarkLimiterStats is BenchmarkLimiter's request with the admin
// statistics (stats.go) built from the request and written in its
// accounting round trip: "always" is the always-on-with-admin families
// (3 lastSeen keys, 12 model keys), "optin" adds userModel and latency
// (8 + 8 keys). Compare with BenchmarkLimiter's same shape for the
// counters' extra cost; roundtrips/op stays 2.
func BenchmarkLimiterStats(b *testing.B) {
	shapes := []struct {
		name   string
		scopes func() []limitScope
	}{{"budgets", benchBudgetScopes}, {"rates", benchRateScopes}}
	optins := []struct {
		name string
		a    adminSettings
	}{{"always", adminSettings{enabled: true}}, {"optin", adminSettings{enabled: true, userModel: true, latency: true}}}
	for i := 0; i < len(shapes); i++ {
		for j := 0; j < len(optins); j++ {
			sh, o := shapes[i], optins[j]
			b.Run("memory/"+sh.name+"/"+o.name, func(b *testing.B) {
				ms := &countingStore{inner: newMemoryStore(nil)}
				var logs bytes.Buffer
				l := newLimiter(ms, nil, false, nil, newLogger("bench", &logs))
				runLimiterStatsBench(b, l, sh.scopes(), o.a, &logs, func() int64 { return ms.calls.Load() })
			})
			b.Run("redis/"+sh.name+"/"+o.name, func(b *testing.B) {
				addr := redistest.Start(b)
				rs := store.NewRedis(store.RedisSettings{Address: addr})
				defer rs.Close()
				var logs bytes.Buffer
				l := newLimiter(rs, nil, false, nil, newLogger("bench", &logs))
				runLimiterStatsBench(b, l, sh.scopes(), o.a, &logs, func() int64 { return rs.RoundTrips() })
			})
		}
	}
}

func runLimiterStatsBench(b *testing.B, l *limiter, scopes []limitScope, a adminSettings, logs *bytes.Buffer, roundTrips func() int64) {
	u := translate.Usage{PromptTokens: 180, CompletionTokens: 6}
	ctx := context.Background()
	g := &Gateway{limiter: l, stats: newStatsWriter(a, false)}
	start := time.Now()
	c := &call{g: g, user: &userRuntime{scopes: scopes}, admitted: true,
		rec: requestRecord{user: "bench-user", provider: "bench", model: "bench-model", statusCode: 200, start: start, firstByte: start.Add(300 * time.Millisecond)}}
	f := statsFacts{served: true, usage: u, cost: 1234, latency: 2 * time.Second, ttfb: 300 * time.Millisecond}
	request := func() {
		r, e := l.reserve(ctx, scopes, 4096+180, 5000)
		if e != nil {
			b.Fatalf("reserve: %s", e.Error())
		}
		extra := statsIncrs(c, &f)
		if r != nil {
			r.settleWith(u, 1234, extra)
			return
		}
		l.accountWith(ctx, scopes, u, 1234, extra, "")
	}
	request()
	first := roundTrips()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		request()
	}
	b.StopTimer()
	b.ReportMetric(float64(roundTrips()-first)/float64(b.N), "roundtrips/op")
	if logs.Len() > 0 {
		b.Fatalf("the limiter logged errors:\n%s", logs.String())
	}
}
