package gateway

import (
	"context"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/redistest"
	"github.com/llmgateway/llmgateway/gateway/internal/store"
)

// statsClock is the statistics tests' fixed limiter clock.
var statsClock = time.Date(2026, 11, 29, 22, 40, 30, 0, time.UTC)

// statsGateway serves cfg with the limiter on statsClock; done receives
// a value when each request's record is emitted (its statistics are
// written by then).
func statsGateway(t *testing.T, cfg string) (*Gateway, string, chan bool) {
	t.Helper()
	done := make(chan bool, 64)
	g, srv, _ := serveTestGateway(t, cfg, nil, func(g *Gateway) {
		g.limiter.now = func() time.Time { return statsClock }
		g.recordHook = func(r *requestRecord) { done <- r.statusCode != 0 }
	})
	return g, srv.URL, done
}

func waitRecord(t *testing.T, done chan bool) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("no request record within 5s")
	}
}

// statsKeysOf is every statistics key the gateway's in-process store
// holds (the limits' own req/tok/cost/rej counters left out), with the
// background batch flushed first. A seen key's value is replaced by 1
// when it is within the last minute.
func statsKeysOf(t *testing.T, g *Gateway) map[string]int64 {
	t.Helper()
	g.limiter.async.wait()
	m, ok := g.limiter.counters.(*store.Memory)
	if !ok {
		t.Fatalf("counters are %T", g.limiter.counters)
	}
	out := map[string]int64{}
	now := time.Now().Unix()
	for k, v := range m.Snapshot("llmgw:") {
		switch {
		case strings.HasSuffix(k, ":seen"):
			if v > now-60 && v <= now {
				v = 1
			}
		case strings.HasPrefix(k, "llmgw:user:") || strings.HasPrefix(k, "llmgw:group:") || strings.HasPrefix(k, "llmgw:total:"):
			if m := strings.Split(k, ":"); len(m) == 6 && (m[3] == "req" || m[3] == "tokin" || m[3] == "tokout" || m[3] == "cost" || m[3] == "rej") {
				continue
			}
		}
		out[k] = v
	}
	return out
}

func checkStatsKeys(t *testing.T, got, want map[string]int64) {
	t.Helper()
	var diff []string
	for k, v := range want {
		if got[k] != v {
			diff = append(diff, k+": got "+strconv.FormatInt(got[k], 10)+", want "+strconv.FormatInt(v, 10))
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			diff = append(diff, k+": unexpected ("+strconv.FormatInt(v, 10)+")")
		}
	}
	if len(diff) > 0 {
		sort.Strings(diff)
		t.Fatalf("statistics keys:\n  %s", strings.Join(diff, "\n  "))
	}
}

// windows3 expands prefix+metric over hour, day and month (statsClock's
// buckets) with value v.
func windows3(want map[string]int64, prefix string, v int64) {
	want[prefix+":hour:2026112922"] = v
	want[prefix+":day:20261129"] = v
	want[prefix+":month:202611"] = v
}

func windows2(want map[string]int64, prefix string, v int64) {
	want[prefix+":hour:2026112922"] = v
	want[prefix+":day:20261129"] = v
}

// measuredLatency adds prefix's latency histograms (ld: total, lt: time
// to first byte) to want as got holds them, after checking them: which
// bucket a request lands in depends on how fast this machine served it
// (a loopback answer is in the first, ≤ 0.1 s, unless the machine is
// loaded), so the test asserts the shape instead — n requests in each
// histogram, over known buckets, the same in the hour and the day window,
// and no request faster to its end than to its first byte.
func measuredLatency(t *testing.T, want, got map[string]int64, prefix string, n int64) {
	t.Helper()
	for _, fam := range []string{"ld", "lt"} {
		var hour, day int64
		for i := 0; i < len(latencyBucketNames); i++ {
			b := prefix + fam + latencyBucketNames[i]
			h, d := got[b+":hour:2026112922"], got[b+":day:20261129"]
			if h != d {
				t.Errorf("%s: hour window %d, day window %d", b, h, d)
			}
			if h != 0 {
				windows2(want, b, h)
			}
			hour += h
			day += d
		}
		if hour != n || day != n {
			t.Errorf("%s%s: %d requests in the hour window and %d in the day window, want %d", prefix, fam, hour, day, n)
		}
	}
	// The total's lowest bucket is at least the first byte's lowest.
	low := func(fam string) int {
		for i := 0; i < len(latencyBucketNames); i++ {
			if got[prefix+fam+latencyBucketNames[i]+":hour:2026112922"] != 0 {
				return i
			}
		}
		return -1
	}
	if ld, lt := low("ld"), low("lt"); ld < lt {
		t.Errorf("%s: total latency bucket %d below the first byte's %d", prefix, ld, lt)
	}
}

// attempts adds a provider's (and its provider/model's) success-rate
// counters with admin: min, hour, day.
func attempts(want map[string]int64, provider, model string, n, fails int64) {
	for _, p := range []string{"llmgw:prov:" + provider + ":", "llmgw:provmodel:" + provider + "/" + model + ":"} {
		want[p+"attempt:min:202611292240"] = n
		windows2(want, p+"attempt", n)
		if fails > 0 {
			want[p+"fail:min:202611292240"] = fails
			windows2(want, p+"fail", fails)
		}
	}
}

func seen(want map[string]int64, scopes ...string) {
	for _, s := range scopes {
		want["llmgw:"+s+":seen"] = 1
	}
}

const statsPricing = `"pricing": {"m1": {"inputPerM": 2, "outputPerM": 4}, "m2": {"inputPerM": 1, "outputPerM": 1}},`

func adminBlock(stats string) string {
	return `"admin": {"enabled": true` + stats + `}, ` + statsPricing
}

func withTop(cfg, extra string) string { return strings.Replace(cfg, "{", "{"+extra, 1) }

func TestStatsSuccess(t *testing.T) {
	up := newFakeUpstream(t, okJSON(chatOK))
	g, base, done := statsGateway(t, withTop(standardConfig(up.URL), adminBlock(`, "stats": {"userModel": true, "latency": true}`)))
	for i := 0; i < 2; i++ {
		if status, _, body := do(t, "POST", base+"/v1/chat/completions", testAliceKey, chatReq); status != 200 {
			t.Fatalf("%d %s", status, body)
		}
		waitRecord(t, done)
	}
	// 11 prompt + 7 completion tokens at $2/$4 per 1M: 22 + 28 = 50 micro-USD each.
	want := map[string]int64{}
	seen(want, "user:alice", "group:all", "total:all")
	windows3(want, "llmgw:model:mock/m1:req", 2)
	windows3(want, "llmgw:model:mock/m1:tokin", 22)
	windows3(want, "llmgw:model:mock/m1:tokout", 14)
	windows3(want, "llmgw:model:mock/m1:cost", 100)
	for _, m := range []string{"req", "tokin", "tokout", "cost"} {
		v := map[string]int64{"req": 2, "tokin": 22, "tokout": 14, "cost": 100}[m]
		want["llmgw:umodel:alice:mock/m1:"+m+":day:20261129"] = v
		want["llmgw:umodel:alice:mock/m1:"+m+":month:202611"] = v
	}
	got := statsKeysOf(t, g)
	for _, p := range []string{"llmgw:prov:mock:", "llmgw:model:mock/m1:"} {
		measuredLatency(t, want, got, p, 2)
	}
	attempts(want, "mock", "m1", 2, 0)
	checkStatsKeys(t, got, want)
}

func TestStatsStream(t *testing.T) {
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n"+
			"data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":3}}\n\n"+
			"data: [DONE]\n\n")
	})
	g, base, done := statsGateway(t, withTop(standardConfig(up.URL), adminBlock(`, "stats": {"latency": true}`)))
	if status, _, body := do(t, "POST", base+"/v1/chat/completions", testAliceKey, `{"model":"m2","stream":true,"messages":[{"role":"user","content":"hi"}]}`); status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	waitRecord(t, done)
	want := map[string]int64{}
	seen(want, "user:alice", "group:all", "total:all")
	windows3(want, "llmgw:model:mock/m2:req", 1)
	windows3(want, "llmgw:model:mock/m2:tokin", 5)
	windows3(want, "llmgw:model:mock/m2:tokout", 3)
	windows3(want, "llmgw:model:mock/m2:cost", 8)
	got := statsKeysOf(t, g)
	for _, p := range []string{"llmgw:prov:mock:", "llmgw:model:mock/m2:"} {
		measuredLatency(t, want, got, p, 1)
	}
	attempts(want, "mock", "m2", 1, 0)
	checkStatsKeys(t, got, want)
}

func TestStatsRateLimited(t *testing.T) {
	up := newFakeUpstream(t, okJSON(chatOK))
	cfg := strings.Replace(withTop(standardConfig(up.URL), adminBlock(``)), `"all": {}`, `"all": {"limits": {"requestsPerMinute": 1}}`, 1)
	g, base, done := statsGateway(t, cfg)
	for i, wantStatus := range []int{200, 429} {
		if status, _, body := do(t, "POST", base+"/v1/chat/completions", testAliceKey, chatReq); status != wantStatus {
			t.Fatalf("request %d: %d %s", i, status, body)
		}
		waitRecord(t, done)
	}
	want := map[string]int64{}
	seen(want, "user:alice", "group:all", "total:all")
	windows3(want, "llmgw:model:mock/m1:req", 1)
	windows3(want, "llmgw:model:mock/m1:tokin", 11)
	windows3(want, "llmgw:model:mock/m1:tokout", 7)
	windows3(want, "llmgw:model:mock/m1:cost", 50)
	attempts(want, "mock", "m1", 1, 0)
	checkStatsKeys(t, statsKeysOf(t, g), want)
	// The refusal is the limits' own rej family, for the group and total.
	m := g.limiter.counters.(*store.Memory)
	if got := m.Snapshot("llmgw:group:all:rej:day:")["llmgw:group:all:rej:day:20261129"]; got != 1 {
		t.Fatalf("group rej = %d", got)
	}
	if got := m.Snapshot("llmgw:total:all:rej:hour:")["llmgw:total:all:rej:hour:2026112922"]; got != 1 {
		t.Fatalf("total rej = %d", got)
	}
}

func TestStatsUnpriced402(t *testing.T) {
	up := newFakeUpstream(t, okJSON(chatOK))
	cfg := strings.Replace(withTop(standardConfig(up.URL), `"admin": {"enabled": true},`), `"all": {}`, `"all": {"limits": {"costPerDayUSD": 5}}`, 1)
	g, base, done := statsGateway(t, cfg)
	if status, _, body := do(t, "POST", base+"/v1/chat/completions", testAliceKey, chatReq); status != 402 {
		t.Fatalf("%d %s", status, body)
	}
	waitRecord(t, done)
	want := map[string]int64{}
	seen(want, "user:alice", "group:all", "total:all")
	windows2(want, "llmgw:total:all:r402", 1)
	windows2(want, "llmgw:model:mock/m1:r402", 1)
	checkStatsKeys(t, statsKeysOf(t, g), want)
}

func TestStatsFailoverAndTimeout(t *testing.T) {
	var aStatus, bStatus atomic.Int64
	aStatus.Store(500)
	bStatus.Store(200)
	a, _ := statusUpstream(t, &aStatus)
	b, _ := statusUpstream(t, &bStatus)
	extra := `"failover": {"enabled": true}, "routing": {"breaker": {"failureThreshold": 100}}, ` + adminBlock(``)
	g, base, done := statsGateway(t, failoverConfig(a.URL, b.URL, extra))
	if status, _, body := do(t, "POST", base+"/v1/chat/completions", testAliceKey, chatReq); status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	waitRecord(t, done)
	want := map[string]int64{}
	seen(want, "user:alice", "group:all", "total:all")
	windows3(want, "llmgw:model:b/m1:req", 1)
	windows3(want, "llmgw:model:b/m1:tokin", 11)
	windows3(want, "llmgw:model:b/m1:tokout", 7)
	windows3(want, "llmgw:model:b/m1:cost", 50)
	windows2(want, "llmgw:prov:a:fover", 1)
	attempts(want, "a", "m1", 1, 1)
	attempts(want, "b", "m1", 1, 0)
	checkStatsKeys(t, statsKeysOf(t, g), want)

	// A stall on the only candidate: a timeout, no failover.
	stall := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(3 * time.Second):
		}
	})
	g, base, done = statsGateway(t, withTop(standardConfig(stall.URL), adminBlock(``)+`"requestTimeout": "150ms",`))
	if status, _, body := do(t, "POST", base+"/v1/chat/completions", testAliceKey, chatReq); status != 502 || !strings.Contains(body, "upstream_timeout") {
		t.Fatalf("%d %s", status, body)
	}
	waitRecord(t, done)
	want = map[string]int64{}
	seen(want, "user:alice", "group:all", "total:all")
	windows2(want, "llmgw:prov:mock:timeout", 1)
	attempts(want, "mock", "m1", 1, 1)
	checkStatsKeys(t, statsKeysOf(t, g), want)
}

// With admin off (or the block omitted) no statistics key is written and
// the success rates keep their min and day windows only.
func TestStatsOff(t *testing.T) {
	up := newFakeUpstream(t, okJSON(chatOK))
	for _, extra := range []string{``, `"admin": {"enabled": false, "stats": {"userModel": true, "latency": true}},`} {
		g, base, done := statsGateway(t, withTop(standardConfig(up.URL), extra+statsPricing))
		if g.stats != nil {
			t.Fatal("a statistics writer without admin")
		}
		if status, _, body := do(t, "POST", base+"/v1/chat/completions", testAliceKey, chatReq); status != 200 {
			t.Fatalf("%d %s", status, body)
		}
		waitRecord(t, done)
		want := map[string]int64{
			"llmgw:prov:mock:attempt:min:202611292240": 1, "llmgw:prov:mock:attempt:day:20261129": 1,
			"llmgw:provmodel:mock/m1:attempt:min:202611292240": 1, "llmgw:provmodel:mock/m1:attempt:day:20261129": 1,
		}
		checkStatsKeys(t, statsKeysOf(t, g), want)
	}
}

func TestStatsConfig(t *testing.T) {
	base := standardConfig("http://127.0.0.1:9")
	for _, tc := range []struct{ extra, err string }{
		{`"adminMaxKeysPerRequest": 99,`, "adminMaxKeysPerRequest: 99 must be between 100 and 1000000"},
		{`"adminMaxKeysPerRequest": -1,`, "adminMaxKeysPerRequest: -1"},
		{`"adminMaxKeysPerRequest": 1000001,`, "adminMaxKeysPerRequest: 1000001"},
		{`"admin": {"enabled": true, "stats": {"enabled": true}},`, "enabled"},
		{`"admin": {"enabled": true, "maxKeys": 5},`, "maxKeys"},
	} {
		_, err := newGatewayFromConfig(t, withTop(base, tc.extra))
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Fatalf("%s: err %v, want %q", tc.extra, err, tc.err)
		}
	}
	g, err := newGatewayFromConfig(t, withTop(base, `"admin": {"enabled": true, "stats": {"latency": true}}, "adminMaxKeysPerRequest": 500,`))
	if err != nil {
		t.Fatal(err)
	}
	if a := g.cfg.admin; !a.enabled || a.userModel || !a.latency || a.maxKeys != 500 || g.stats == nil {
		t.Fatalf("admin settings %+v", a)
	}
	g, err = newGatewayFromConfig(t, base)
	if err != nil || g.cfg.admin.maxKeys != defaultAdminMaxKeys || g.cfg.admin.enabled {
		t.Fatalf("defaults %+v %v", g.cfg.admin, err)
	}
	// ConfigFromMap (the plugin's form) decodes the block too.
	cfg, err := ConfigFromMap(map[string]interface{}{"admin": map[string]interface{}{"enabled": "true", "stats": map[string]interface{}{"userModel": "true"}}})
	if err != nil || cfg.Admin == nil || !cfg.Admin.Enabled || cfg.Admin.Stats == nil || !cfg.Admin.Stats.UserModel {
		t.Fatalf("ConfigFromMap: %+v %v", cfg, err)
	}
}

func TestLatencyBucket(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want int
	}{
		{0, 0}, {100 * time.Millisecond, 0}, {101 * time.Millisecond, 1}, {time.Second, 3}, {90 * time.Second, 10},
		{10 * time.Minute, 12}, {10*time.Minute + 1, 13}, {time.Hour, 13},
	} {
		if got := latencyBucket(tc.d); got != tc.want {
			t.Fatalf("latencyBucket(%v) = %d, want %d", tc.d, got, tc.want)
		}
	}
	if len(latencyBucketBounds) != 13 || len(latencyBucketNames) != 14 {
		t.Fatal("13 bounds and an overflow bucket")
	}
}

// The response cache (Redis only): a miss saves, a hit counts chit and
// what it saved, both ride the requests' own round trips.
func TestStatsCacheRedis(t *testing.T) {
	addr := redistest.Start(t)
	up := newFakeUpstream(t, okJSON(chatOK))
	cfg := strings.Replace(withTop(standardConfig(up.URL), adminBlock(``)+`"redis": {"address": "`+addr+`"}, "cache": {"enabled": true},`),
		`"all": {}`, `"all": {"cache": true}`, 1)
	g, base, done := statsGateway(t, cfg)
	g.limiter.async.every = time.Hour // flushed by hand below
	var trips []int64
	for i, want := range []string{"miss", "hit"} {
		before := g.redis.RoundTrips()
		status, h, body := do(t, "POST", base+"/v1/chat/completions", testAliceKey, chatReq)
		if status != 200 || h.Get("X-Llmgw-Cache") != want {
			t.Fatalf("request %d: %d %s %s", i, status, h.Get("X-Llmgw-Cache"), body)
		}
		waitRecord(t, done)
		trips = append(trips, g.redis.RoundTrips()-before)
	}
	// The miss: count, cache GET, accounting (usage + statistics), cache
	// SET. The hit: count, cache GET; its statistics (no usage to
	// account) wait for the background batch.
	if trips[0] != 4 || trips[1] != 2 {
		t.Fatalf("round trips per request %v, want [4 2]", trips)
	}
	g.limiter.async.wait()
	keys := []string{
		"llmgw:total:all:cmiss:hour:2026112922", "llmgw:total:all:cmiss:day:20261129",
		"llmgw:total:all:chit:hour:2026112922", "llmgw:total:all:chit:day:20261129",
		"llmgw:model:mock/m1:chit:day:20261129",
		"llmgw:total:all:csave:hour:2026112922", "llmgw:total:all:csave:day:20261129",
		"llmgw:model:mock/m1:csave:day:20261129",
		"llmgw:model:mock/m1:req:day:20261129", "llmgw:model:mock/m1:cost:day:20261129",
		"llmgw:user:alice:seen",
	}
	_, vals, err := g.redis.Apply(context.Background(), nil, keys)
	if err != nil {
		t.Fatal(err)
	}
	want := []int64{1, 1, 1, 1, 1, 50, 50, 50, 2, 50}
	for i := 0; i < len(want); i++ {
		if vals[i] != want[i] {
			t.Fatalf("%s = %d, want %d (all %v)", keys[i], vals[i], want[i], vals)
		}
	}
	if now := time.Now().Unix(); vals[10] < now-60 || vals[10] > now {
		t.Fatalf("seen = %d, now %d", vals[10], now)
	}
}

// The accounting round trips per request stay what they are without
// admin: the statistics ride the usage write (or the settlement).
func TestStatsRedisRoundTrips(t *testing.T) {
	addr := redistest.Start(t)
	up := newFakeUpstream(t, okJSON(chatOK))
	for _, budgeted := range []bool{false, true} {
		counts := map[bool]int64{}
		for _, admin := range []bool{false, true} {
			extra := statsPricing + `"redis": {"address": "` + addr + `"},`
			if admin {
				extra = adminBlock(`, "stats": {"userModel": true, "latency": true}`) + `"redis": {"address": "` + addr + `"},`
			}
			cfg := withTop(standardConfig(up.URL), extra)
			if budgeted {
				cfg = strings.Replace(cfg, `"all": {}`, `"all": {"limits": {"tokensPerDay": 100000000}}`, 1)
			}
			g, base, done := statsGateway(t, cfg)
			g.limiter.async.every = time.Hour // the background batch is not the request's
			const n = 5
			before := g.redis.RoundTrips()
			for i := 0; i < n; i++ {
				if status, _, body := do(t, "POST", base+"/v1/chat/completions", testAliceKey, chatReq); status != 200 {
					t.Fatalf("%d %s", status, body)
				}
				waitRecord(t, done)
			}
			counts[admin] = g.redis.RoundTrips() - before
			if counts[admin] != 2*n {
				t.Fatalf("budgeted %v admin %v: %d round trips for %d requests, want 2 each", budgeted, admin, counts[admin], n)
			}
			if admin {
				_, vals, err := g.redis.Apply(context.Background(), nil, []string{"llmgw:model:mock/m1:req:hour:2026112922", "llmgw:umodel:alice:mock/m1:tokin:day:20261129"})
				if err != nil || vals[0] < n || vals[1] < 11*n {
					t.Fatalf("statistics in Redis: %v %v", vals, err)
				}
			}
		}
	}
}
