package gateway

import (
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/redistest"
)

const testCarolKey = "sk-carol-0001"

// usageConfig serves providers alt (m1, z9) and mock (m1, m2, m3) at
// upURL, with admin on and stats (the admin.stats members, e.g.
// `"userModel": true`). m1 costs $2/$4 per 1M, m2 $1/$1, mock/m3 is free
// (modelMeta), z9 is unpriced. alice (group all) is the admin; bob and
// carol (group team) have a cost budget, so carol's z9 request is a 402.
// Group idle has no members.
func usageConfig(upURL, stats, extra string) string {
	return `{` + extra + `"admin": {"enabled": true, "stats": {` + stats + `}},
  "pricing": {"m1": {"inputPerM": 2, "outputPerM": 4}, "m2": {"inputPerM": 1, "outputPerM": 1}},
  "modelMeta": {"mock/m3": {"free": true}},
  "providers": {
    "alt": {"type": "openai", "baseUrl": "` + upURL + `", "apiKey": "ka", "models": ["m1", "z9"]},
    "mock": {"type": "openai", "baseUrl": "` + upURL + `", "apiKey": "km", "models": ["m1", "m2", "m3"]}},
  "groups": {"all": {}, "team": {"limits": {"costPerDayUSD": 5}}, "idle": {}},
  "users": {"inline": [
    {"name": "alice", "group": "all", "apiKey": "` + testAliceKey + `", "admin": true},
    {"name": "bob", "group": "team", "apiKey": "` + testBobKey + `"},
    {"name": "carol", "group": "team", "apiKey": "` + testCarolKey + `"}]}}`
}

// clockGateway is statsGateway with a clock the test moves (an atomic,
// since requests read it from the server's goroutines).
func clockGateway(t *testing.T, cfg string) (*Gateway, string, chan bool, *atomic.Value) {
	t.Helper()
	clock := &atomic.Value{}
	clock.Store(statsClock)
	done := make(chan bool, 64)
	g, srv, _ := serveTestGateway(t, cfg, nil, func(g *Gateway) {
		g.limiter.now = func() time.Time { return clock.Load().(time.Time) }
		g.recordHook = func(r *requestRecord) { done <- r.statusCode != 0 }
	})
	return g, srv.URL, done, clock
}

// trafficStep is n chat requests of one user for one model at clock
// time at, answered with status.
type trafficStep struct {
	at     time.Time
	key    string
	model  string
	n      int
	status int
}

// sendTraffic sends steps through the gateway, each request's record
// (and so its statistics) done before the next, then flushes the
// background batch.
func sendTraffic(t *testing.T, g *Gateway, base string, done chan bool, clock *atomic.Value, steps []trafficStep) {
	t.Helper()
	for _, s := range steps {
		clock.Store(s.at)
		for i := 0; i < s.n; i++ {
			body := `{"model":"` + s.model + `","messages":[{"role":"user","content":"hi"}]}`
			if status, _, resp := do(t, "POST", base+"/v1/chat/completions", s.key, body); status != s.status {
				t.Fatalf("%s as %s: %d %s, want %d", s.model, s.key, status, resp, s.status)
			}
			waitRecord(t, done)
		}
	}
	clock.Store(statsClock)
	g.limiter.async.wait()
}

// usageTraffic is the usage tests' traffic: statsClock's hour
// (2026112922), the hour before (bob, mock/m1) and the day before
// (carol, mock/m2). Every answer is chatOK: 11 prompt and 7 completion
// tokens (m1: 50 micro-USD, m2: 18, m3 and z9: 0).
func usageTraffic() []trafficStep {
	now := statsClock
	return []trafficStep{
		{now, testAliceKey, "mock/m1", 3, 200},
		{now, testAliceKey, "alt/m1", 1, 200},
		{now, testAliceKey, "alt/z9", 1, 200},
		{now, testBobKey, "mock/m2", 2, 200},
		{now, testCarolKey, "mock/m3", 2, 200},
		{now, testCarolKey, "alt/z9", 1, 402},
		{now.Add(-time.Hour), testBobKey, "mock/m1", 1, 200},
		{now.AddDate(0, 0, -1), testCarolKey, "mock/m2", 1, 200},
	}
}

// getAdminJSON reads an admin route as alice and asserts the status.
func getAdminJSON(t *testing.T, url string, want int) string {
	t.Helper()
	status, h, body := getAdmin(t, url, testAliceKey)
	if status != want {
		t.Fatalf("GET %s: %d %s, want %d", url, status, body, want)
	}
	if want == 200 && (h.Get("Cache-Control") != "no-store" || !strings.HasPrefix(h.Get("Content-Type"), "application/json")) {
		t.Fatalf("GET %s: headers %v", url, h)
	}
	return body
}

// modelIDs is the "id, value" list of a usage/models answer.
func modelIDs(t *testing.T, body string) string {
	t.Helper()
	var ans struct {
		Models []adminModelRow `json:"models"`
	}
	if err := json.Unmarshal([]byte(body), &ans); err != nil || ans.Models == nil {
		t.Fatalf("usage/models answer %s (%v)", body, err)
	}
	var out []string
	for _, m := range ans.Models {
		out = append(out, m.ID+"="+itoa64(m.Value))
	}
	return strings.Join(out, " ")
}

func itoa64(v int64) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestAdminUsageModels(t *testing.T) {
	up := newFakeUpstream(t, okJSON(chatOK))
	g, base, done, clock := clockGateway(t, usageConfig(up.URL, ``, ``))
	sendTraffic(t, g, base, done, clock, usageTraffic())
	route := base + "/admin/api/usage/models?"

	checkGolden(t, "usage_models_req_hour", []byte(getAdminJSON(t, route+"metric=req&window=hour", 200)))
	// detail: every model with usage, cost-ranked; the free m3 and the
	// unpriced z9 (value 0) order by requests (m3: 2) before their ids.
	checkGolden(t, "usage_models_detail_month", []byte(getAdminJSON(t, route+"metric=cost&window=month&detail=1", 200)))
	for _, tc := range []struct{ query, want string }{
		{"metric=cost&window=day", "mock/m1=200 alt/m1=50 mock/m2=36"},
		{"metric=tokin&window=day&span=2", "mock/m1=44 mock/m2=33 mock/m3=22 alt/m1=11 alt/z9=11"},
		{"metric=req&window=hour&span=2", "mock/m1=4 mock/m2=2 mock/m3=2 alt/m1=1 alt/z9=1"},
		{"metric=req&window=hour&offset=1", "mock/m1=1"},
		{"metric=req&window=day&offset=1", "mock/m2=1"},
		{"metric=req&window=month", "mock/m1=4 mock/m2=3 mock/m3=2 alt/m1=1 alt/z9=1"},
		{"metric=req&window=hour&limit=2", "mock/m1=3 mock/m2=2"},
		// The prefix narrows the catalog before the read and the limit.
		{"metric=req&window=hour&prefix=alt/&limit=1", "alt/m1=1"},
		{"metric=req&window=hour&prefix=nothing", ""},
		{"metric=req&window=hour&offset=5", ""},
		{"metric=cost&window=hour&detail=0", "mock/m1=150 alt/m1=50 mock/m2=36"},
		{"metric=cost&window=hour&detail=false", "mock/m1=150 alt/m1=50 mock/m2=36"},
		// detail lists a model when any total is non-zero.
		{"metric=cost&window=hour&detail=true", "mock/m1=150 alt/m1=50 mock/m2=36 mock/m3=0 alt/z9=0"},
	} {
		if got := modelIDs(t, getAdminJSON(t, route+tc.query, 200)); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.query, got, tc.want)
		}
	}
	// An empty answer is an array, and echoes the resolved span/offset.
	if body := getAdminJSON(t, route+"metric=req&window=day&offset=3", 200); body != `{"metric":"req","window":"day","span":1,"offset":3,"models":[]}` {
		t.Fatalf("empty answer %s", body)
	}
	// Hour detail: r402 reads the hour bucket; no cache figures without
	// the response cache.
	var det struct {
		Models []map[string]interface{} `json:"models"`
	}
	if err := json.Unmarshal([]byte(getAdminJSON(t, route+"metric=req&window=hour&detail=1&prefix=alt/z9", 200)), &det); err != nil || len(det.Models) != 1 {
		t.Fatalf("z9 detail %v %v", det, err)
	}
	if m := det.Models[0]; m["r402"] != 1.0 || m["priceSource"] != "unpriced" || m["free"] != false || m["cacheHits"] != nil || m["tokensIn"] != 11.0 {
		t.Fatalf("z9 detail %v", m)
	}
}

// adminParamCase is one invalid request: its status and a word the
// message must hold (the parameter's name).
type adminParamCase struct {
	query  string
	status int
	word   string
}

func checkParamCases(t *testing.T, route string, cases []adminParamCase) {
	t.Helper()
	for _, tc := range cases {
		status, _, body := getAdmin(t, route+tc.query, testAliceKey)
		if status != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.query, status, body, tc.status)
			continue
		}
		if d := decodeEnvelope(t, body); !strings.Contains(d.Message, tc.word) {
			t.Errorf("%s: message %q does not name %q", tc.query, d.Message, tc.word)
		}
	}
}

func TestAdminUsageModelsParams(t *testing.T) {
	up := newFakeUpstream(t, okJSON(chatOK))
	_, base, _, _ := clockGateway(t, usageConfig(up.URL, ``, ``))
	long := strings.Repeat("p", 257)
	checkParamCases(t, base+"/admin/api/usage/models?", []adminParamCase{
		{"window=hour", 400, "metric"},
		{"metric=rej&window=hour", 400, "metric"},
		{"metric=req&metric=cost&window=hour", 400, "metric"},
		{"metric=req", 400, "window"},
		{"metric=req&window=min", 400, "window"},
		{"metric=req&window=week", 400, "window"},
		{"metric=req&window=hour&limit=0", 400, "limit"},
		{"metric=req&window=hour&limit=101", 400, "limit"},
		{"metric=req&window=hour&limit=x", 400, "limit"},
		{"metric=req&window=hour&span=0", 400, "span"},
		{"metric=req&window=hour&span=49", 400, "span"},
		{"metric=req&window=day&span=36", 400, "span"},
		{"metric=req&window=month&span=14", 400, "span"},
		{"metric=req&window=hour&offset=-1", 400, "offset"},
		{"metric=req&window=hour&span=40&offset=9", 400, "offset"},
		{"metric=req&window=month&offset=13", 400, "offset"},
		{"metric=req&window=hour&prefix=" + long, 400, "prefix"},
		{"metric=req&window=hour&detail=yes", 400, "detail"},
		{"metric=req&window=hour&detail=2", 400, "detail"},
	})
	// 256 bytes is still a prefix.
	if body := getAdminJSON(t, base+"/admin/api/usage/models?metric=req&window=hour&prefix="+long[:256], 200); !strings.Contains(body, `"models":[]`) {
		t.Fatalf("256-byte prefix: %s", body)
	}
}

// The cache figures need the response cache (Redis): day and month
// only, month through its covering days.
func TestAdminUsageModelsCache(t *testing.T) {
	addr := redistest.Start(t)
	up := newFakeUpstream(t, okJSON(chatOK))
	cfg := strings.Replace(usageConfig(up.URL, ``, `"redis": {"address": "`+addr+`"}, "cache": {"enabled": true},`),
		`"all": {}`, `"all": {"cache": true}`, 1)
	g, base, done, clock := clockGateway(t, cfg)
	sendTraffic(t, g, base, done, clock, []trafficStep{{statsClock, testAliceKey, "mock/m1", 2, 200}})
	route := base + "/admin/api/usage/models?metric=req&detail=1&window="
	for _, w := range []string{"day", "month"} {
		want := `"models":[{"id":"mock/m1","value":2,"requests":2,"tokensIn":11,"tokensOut":7,"costMicroUsd":50,"free":false,"priceSource":"override","r402":0,"cacheHits":1,"cacheSavedMicroUsd":50}]`
		if body := getAdminJSON(t, route+w, 200); !strings.Contains(body, want) {
			t.Fatalf("window %s: %s", w, body)
		}
	}
	if body := getAdminJSON(t, route+"hour", 200); strings.Contains(body, "cacheHits") || !strings.Contains(body, `"r402":0}`) {
		t.Fatalf("window hour: %s", body)
	}
}

// A store that is down is a 503 on every usage route, never a zero; a
// read over adminMaxKeysPerRequest is a 400 before any read.
func TestAdminUsageStoreDownAndKeyCount(t *testing.T) {
	up := newFakeUpstream(t, okJSON(chatOK))
	_, down, _, _ := clockGateway(t, usageConfig(up.URL, `"userModel": true`, `"redis": {"address": "127.0.0.1:1"},`))
	_, small, _, _ := clockGateway(t, usageConfig(up.URL, `"userModel": true`, `"adminMaxKeysPerRequest": 100,`))
	for _, q := range []string{
		"usage/models?metric=req&window=hour",
		"usage/models?metric=req&window=month&detail=1",
		"usage/totals?kind=user",
		"usage/totals?kind=usermodel&user=alice",
		"usage/totals?kind=modeluser&model=mock/m1",
	} {
		status, _, body := getAdmin(t, down+"/admin/api/"+q, testAliceKey)
		if status != 503 || decodeEnvelope(t, body).Code != "store_unavailable" {
			t.Errorf("store down, %s: %d %s", q, status, body)
		}
	}
	// 5 catalog models × 48 hours; × (4 metrics × 2 months + 35 covering
	// days of r402); 3 users × 4 metrics × 35 days.
	for _, q := range []string{
		"usage/models?metric=req&window=hour&span=48",
		"usage/models?metric=req&window=month&span=2&detail=1",
		"usage/totals?kind=user&window=day&span=35",
		"usage/totals?kind=modeluser&model=mock/m1&window=day&span=35",
	} {
		status, _, body := getAdmin(t, small+"/admin/api/"+q, testAliceKey)
		if status != 400 || decodeEnvelope(t, body).Code != "too_many_keys" {
			t.Errorf("key count, %s: %d %s", q, status, body)
		}
	}
	// Within the budget the small gateway answers.
	getAdminJSON(t, small+"/admin/api/usage/models?metric=req&window=hour&span=20", 200)
}

// free: a modelMeta free flag, or a known price of 0 and 0.
func TestAdminModelPriceSource(t *testing.T) {
	cfg := strings.Replace(usageConfig("http://127.0.0.1:9", ``, ``), `"m2": {"inputPerM": 1, "outputPerM": 1}`, `"m2": {"inputPerM": 0, "outputPerM": 0}`, 1)
	g, err := newGatewayFromConfig(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for _, tc := range []struct {
		id, source string
		free       bool
	}{
		{"mock/m1", "override", false},
		{"mock/m2", "override", true},
		{"mock/m3", "free", true},
		{"alt/z9", "unpriced", false},
	} {
		if free, src := g.modelPriceSource(tc.id); free != tc.free || src != tc.source {
			t.Errorf("%s: free %v source %q, want %v %q", tc.id, free, src, tc.free, tc.source)
		}
	}
}
