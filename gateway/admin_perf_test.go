package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/store"
)

func TestHistogramPercentile(t *testing.T) {
	// counts builds a 14-bucket histogram from bucket, count pairs.
	counts := func(pairs ...int64) []int64 {
		c := make([]int64, len(latencyBucketNames))
		for i := 0; i+1 < len(pairs); i += 2 {
			c[pairs[i]] = pairs[i+1]
		}
		return c
	}
	for _, tc := range []struct {
		name     string
		counts   []int64
		percent  int64
		want     int64
		ok, over bool
	}{
		{"empty", counts(), 50, 0, false, false},
		{"nil", nil, 95, 0, false, false},
		{"one sample, first bucket, p50", counts(0, 1), 50, 50, true, false},
		{"one sample, first bucket, p99", counts(0, 1), 99, 99, true, false},
		{"one sample, first bucket, p100", counts(0, 1), 100, 100, true, false},
		// bucket 3 is (500 ms, 1 s]: 4 samples spread evenly over it.
		{"single bucket, p50", counts(3, 4), 50, 750, true, false},
		{"single bucket, p95", counts(3, 4), 95, 975, true, false},
		// A rank on a bucket's edge reads its upper bound.
		{"two buckets, p50 on the edge", counts(0, 1, 1, 1), 50, 100, true, false},
		// 100 + 150 × 0.9.
		{"two buckets, p95", counts(0, 1, 1, 1), 95, 235, true, false},
		// 95 of 99 first-bucket samples: 100 × 95 / 99 = 95.96.
		{"rounds to the millisecond", counts(0, 99, 13, 1), 95, 96, true, false},
		{"overflow", counts(13, 3), 50, 600000, true, true},
		{"rank in the overflow", counts(0, 99, 13, 1), 100, 600000, true, true},
		{"rank below the overflow", counts(0, 99, 13, 1), 99, 100, true, false},
		{"last bounded bucket", counts(12, 2), 50, 450000, true, false},
	} {
		got, ok, over := histogramPercentile(tc.counts, tc.percent)
		if got != tc.want || ok != tc.ok || over != tc.over {
			t.Errorf("%s: %d %v %v, want %d %v %v", tc.name, got, ok, over, tc.want, tc.ok, tc.over)
		}
	}
}

// perfConfig serves m1 from providers a (its owner) and b, and a/m2,
// with failover, admin (stats the admin.stats members) and alice the
// admin.
func perfConfig(aURL, bURL, stats, extra string) string {
	return `{` + extra + `"admin": {"enabled": true, "stats": {` + stats + `}}, ` + statsPricing + `
  "failover": {"enabled": true}, "routing": {"breaker": {"failureThreshold": 100}},
  "providers": {
    "a": {"type": "openai", "baseUrl": "` + aURL + `", "apiKey": "ka", "models": ["m1", "m2"]},
    "b": {"type": "openai", "baseUrl": "` + bURL + `", "apiKey": "kb", "models": ["m1"]}},
  "groups": {"all": {}},
  "users": {"inline": [{"name": "alice", "group": "all", "apiKey": "` + testAliceKey + `", "admin": true}]}}`
}

// perfTraffic: two m1 answers from a, then a failing once (b answers
// after a failover), in statsClock's hour; one a/m2 answer the hour
// before. The percentile values depend on how long the loopback answers
// took, so the goldens mask them (present or absent is what they check).
func perfTraffic(t *testing.T, stats string) (*Gateway, string) {
	t.Helper()
	var aStatus, bStatus atomic.Int64
	aStatus.Store(200)
	bStatus.Store(200)
	a, _ := statusUpstream(t, &aStatus)
	b, _ := statusUpstream(t, &bStatus)
	g, base, done, clock := clockGateway(t, perfConfig(a.URL, b.URL, stats, ``))
	sendTraffic(t, g, base, done, clock, []trafficStep{{statsClock, testAliceKey, "m1", 2, 200}})
	aStatus.Store(500)
	sendTraffic(t, g, base, done, clock, []trafficStep{{statsClock, testAliceKey, "m1", 1, 200}})
	aStatus.Store(200)
	sendTraffic(t, g, base, done, clock, []trafficStep{{statsClock.Add(-time.Hour), testAliceKey, "a/m2", 1, 200}})
	return g, base
}

// perfRows is the "id:attempts/failures[/timeouts/failovers] n=count
// [p]" list of a performance answer's rows (or points); p marks a row
// with every percentile present (their values are the machine's: see
// TestAdminPerformancePercentiles for exact ones).
func perfRows(t *testing.T, body string) string {
	t.Helper()
	var ans adminPerfAnswer
	if err := json.Unmarshal([]byte(body), &ans); err != nil || ans.Rows == nil {
		t.Fatalf("performance answer %s (%v)", body, err)
	}
	list := ans.Rows
	if ans.Points != nil {
		list = ans.Points
	}
	var out []string
	for _, f := range list {
		s := f.ID + f.Bucket + ":" + itoa64(f.Attempts) + "/" + itoa64(f.Failures)
		if f.Timeouts != nil {
			s += "/" + itoa64(*f.Timeouts) + "/" + itoa64(*f.Failovers)
		}
		s += " n=" + itoa64(f.Count)
		if f.P50Ms != nil && f.P95Ms != nil && f.P99Ms != nil && f.TtfbP50Ms != nil && f.TtfbP95Ms != nil {
			s += " p"
		}
		out = append(out, s)
	}
	return strings.Join(out, "; ")
}

func TestAdminPerformance(t *testing.T) {
	_, base := perfTraffic(t, `"latency": true`)
	route := base + "/admin/api/performance?"
	percentiles := []string{"p50Ms", "p95Ms", "p99Ms", "ttfbP50Ms", "ttfbP95Ms"}
	checkGolden(t, "performance_provider_hour", []byte(getAdminJSON(t, route+"kind=provider&window=hour", 200)), percentiles...)
	checkGolden(t, "performance_series", []byte(getAdminJSON(t, route+"kind=provider&window=hour&span=2&id=a&series=1", 200)), percentiles...)
	for _, tc := range []struct{ query, want string }{
		// The default models: the most requested over the span.
		{"kind=model&window=hour", "a/m1:3/1 n=2 p; b/m1:1/0 n=1 p"},
		{"kind=model&window=day&span=2", "a/m1:3/1 n=2 p; a/m2:1/0 n=1 p; b/m1:1/0 n=1 p"},
		{"kind=model&window=hour&offset=1", "a/m2:1/0 n=1 p"},
		{"kind=model&window=hour&offset=2", ""},
		// Given ids answer in their order, with or without samples.
		{"kind=model&window=hour&id=b/m1&id=a/m2", "b/m1:1/0 n=1 p; a/m2:0/0 n=0"},
		{"kind=provider&window=day&id=b", "b:1/0/0/0 n=1 p"},
		{"kind=provider&window=hour&offset=1", "a:1/0/0/0 n=1 p; b:0/0/0/0 n=0"},
		{"kind=model&window=hour&span=2&series=1&id=a/m1", "2026112921:0/0 n=0; 2026112922:3/1 n=2 p"},
		{"kind=provider&window=day&series=0&id=a", "a:4/1/0/1 n=3 p"},
	} {
		if got := perfRows(t, getAdminJSON(t, route+tc.query, 200)); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.query, got, tc.want)
		}
	}
	// series=1: rows is an empty array.
	if body := getAdminJSON(t, route+"kind=model&window=day&series=1&id=b/m1", 200); !strings.Contains(body, `"rows":[],"buckets":["20261129"],"points":[{"bucket":"20261129","attempts":1,`) {
		t.Fatalf("series answer %s", body)
	}

	// Latency off: attempts and count (0) stay, no percentile.
	_, offBase := perfTraffic(t, ``)
	body := getAdminJSON(t, offBase+"/admin/api/performance?kind=provider&window=hour", 200)
	if body != `{"kind":"provider","window":"hour","span":1,"offset":0,"latencyEnabled":false,"rows":[`+
		`{"id":"a","attempts":3,"failures":1,"timeouts":0,"failovers":1,"count":0},`+
		`{"id":"b","attempts":1,"failures":0,"timeouts":0,"failovers":0,"count":0}]}` {
		t.Fatalf("latency off: %s", body)
	}
}

// Exact percentiles need samples in known buckets, and a request's
// duration cannot be placed by the fixed clock: this golden reads
// histogram counters written straight into the store, in the key family
// stats.go documents (the through-the-gateway tests above cover the
// write path).
func TestAdminPerformancePercentiles(t *testing.T) {
	g, base, _, _ := clockGateway(t, perfConfig("http://127.0.0.1:9", "http://127.0.0.1:9", `"latency": true`, ``))
	hist := map[string]int64{
		"ld03": 4, "ld05": 1, "ld13": 1, // 0.5-1 s, 2.5-5 s, past 600 s
		"lt01": 6, // 100-250 ms
	}
	var incrs []store.Incr
	for name, n := range hist {
		incrs = append(incrs, store.Incr{Key: "llmgw:prov:a:" + name + ":hour:2026112922", Delta: n, TTL: time.Hour},
			store.Incr{Key: "llmgw:model:a/m1:" + name + ":hour:2026112922", Delta: n, TTL: time.Hour})
	}
	incrs = append(incrs, store.Incr{Key: "llmgw:prov:a:attempt:hour:2026112922", Delta: 7, TTL: time.Hour},
		store.Incr{Key: "llmgw:prov:a:fail:hour:2026112922", Delta: 1, TTL: time.Hour},
		store.Incr{Key: "llmgw:prov:a:timeout:hour:2026112922", Delta: 1, TTL: time.Hour},
		store.Incr{Key: "llmgw:provmodel:a/m1:attempt:hour:2026112922", Delta: 7, TTL: time.Hour})
	if _, _, err := g.limiter.counters.Apply(context.Background(), incrs, nil); err != nil {
		t.Fatal(err)
	}
	// p50 875 (500 + 500 × 3/4), p95 and p99 in the overflow; ttfb p50
	// 175, p95 243 (100 + 150 × 0.95).
	checkGolden(t, "performance_percentiles", []byte(getAdminJSON(t, base+"/admin/api/performance?kind=provider&window=hour", 200)))
	if body := getAdminJSON(t, base+"/admin/api/performance?kind=model&window=hour&id=a/m1", 200); !strings.Contains(body,
		`{"id":"a/m1","attempts":7,"failures":0,"count":6,"p50Ms":875,"p95Ms":600000,"p99Ms":600000,"ttfbP50Ms":175,"ttfbP95Ms":243,"overflow":true}`) {
		t.Fatalf("model row %s", body)
	}
}

// An upstream that takes 150 ms lands past the first bucket; the exact
// bucket depends on the machine, so only the range is asserted.
func TestAdminPerformanceSlowUpstream(t *testing.T) {
	slow := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(150 * time.Millisecond)
		okJSON(chatOK)(w, r)
	})
	g, base, done, clock := clockGateway(t, perfConfig(slow.URL, slow.URL, `"latency": true`, ``))
	sendTraffic(t, g, base, done, clock, []trafficStep{{statsClock, testAliceKey, "a/m1", 1, 200}})
	var ans adminPerfAnswer
	body := getAdminJSON(t, base+"/admin/api/performance?kind=provider&window=hour&id=a", 200)
	if err := json.Unmarshal([]byte(body), &ans); err != nil || len(ans.Rows) != 1 {
		t.Fatalf("%s %v", body, err)
	}
	f := ans.Rows[0]
	if f.Count != 1 || f.P50Ms == nil || *f.P50Ms <= 100 || f.TtfbP50Ms == nil || *f.TtfbP50Ms <= 100 || f.Overflow {
		t.Fatalf("slow row %s", body)
	}
}

func TestAdminPerformanceParams(t *testing.T) {
	_, base, _, _ := clockGateway(t, perfConfig("http://127.0.0.1:9", "http://127.0.0.1:9", `"latency": true`, ``))
	many := ""
	for i := 0; i < 51; i++ {
		many += "&id=p" + strconv.Itoa(i)
	}
	checkParamCases(t, base+"/admin/api/performance?", []adminParamCase{
		{"window=hour", 400, "kind"},
		{"kind=user&window=hour", 400, "kind"},
		{"kind=provider", 400, "window"},
		{"kind=provider&window=month", 400, "window"},
		{"kind=provider&window=hour&window=day", 400, "window"},
		{"kind=provider&window=hour&span=0", 400, "span"},
		{"kind=provider&window=hour&span=49", 400, "span"},
		{"kind=model&window=day&span=36", 400, "span"},
		{"kind=provider&window=hour&offset=48", 400, "offset"},
		{"kind=provider&window=hour" + many, 400, "id"},
		{"kind=provider&window=hour&id=", 400, "id"},
		{"kind=provider&window=hour&id=a&id=a", 400, "id"},
		{"kind=provider&window=hour&series=2", 400, "series"},
		{"kind=provider&window=hour&series=true", 400, "series"},
		{"kind=provider&window=hour&series=1", 400, "series=1"},
		{"kind=provider&window=hour&series=1&id=a&id=b", 400, "series=1"},
		{"kind=provider&window=hour&id=nope", 404, "nope"},
		{"kind=provider&window=hour&id=a/m1", 404, "a/m1"},
		{"kind=model&window=hour&id=m1", 404, "m1"},
		{"kind=model&window=hour&id=a/m9", 404, "a/m9"},
	})
	// 50 ids is the most; unknown ones are then the 404.
	if status, _, _ := getAdmin(t, base+"/admin/api/performance?kind=provider&window=hour"+many[len("&id=p0"):], testAliceKey); status != 404 {
		t.Fatalf("50 ids: %d, want the unknown id's 404", status)
	}
}

func TestAdminPerformanceStoreDownAndKeyCount(t *testing.T) {
	_, down, _, _ := clockGateway(t, perfConfig("http://127.0.0.1:9", "http://127.0.0.1:9", `"latency": true`, `"redis": {"address": "127.0.0.1:1"},`))
	for _, q := range []string{"kind=provider&window=hour", "kind=model&window=day", "kind=model&window=hour&id=a/m1&series=1"} {
		status, _, body := getAdmin(t, down+"/admin/api/performance?"+q, testAliceKey)
		if status != 503 || decodeEnvelope(t, body).Code != "store_unavailable" {
			t.Errorf("store down, %s: %d %s", q, status, body)
		}
	}
	_, small, _, _ := clockGateway(t, perfConfig("http://127.0.0.1:9", "http://127.0.0.1:9", ``, `"adminMaxKeysPerRequest": 100,`))
	_, smallLatency, _, _ := clockGateway(t, perfConfig("http://127.0.0.1:9", "http://127.0.0.1:9", `"latency": true`, `"adminMaxKeysPerRequest": 100,`))
	for _, u := range []string{
		small + "/admin/api/performance?kind=provider&window=hour&span=13",            // 2 × 13 × 4
		small + "/admin/api/performance?kind=model&window=hour&span=34",               // the default's ranking read: 3 × 34
		smallLatency + "/admin/api/performance?kind=provider&window=hour&id=b&span=4", // 4 × (4 + 28)
	} {
		status, _, body := getAdmin(t, u, testAliceKey)
		if status != 400 || decodeEnvelope(t, body).Code != "too_many_keys" {
			t.Errorf("key count, %s: %d %s", u, status, body)
		}
	}
	// Within the budget: 2 × 12 × 4, and 3 × 3 × (2 + 28) is over but an
	// idle catalog ranks no model, so nothing past the ranking is read.
	getAdminJSON(t, small+"/admin/api/performance?kind=provider&window=hour&span=12", 200)
	if body := getAdminJSON(t, smallLatency+"/admin/api/performance?kind=model&window=hour&span=3", 200); !strings.Contains(body, `"rows":[]`) {
		t.Fatalf("idle catalog: %s", body)
	}
}
