package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/llmgateway/llmgateway/gateway/internal/store"
)

// adminFleet is a gateway with every kind of provider, alias and group
// the overview, usage, catalog and consumers answers describe, on the
// statistics clock:
//
//   - p (openai): m1 (a pricing override), m2 (unpriced), gpt-4o
//     (curated), MiniMax-M2 (LiteLLM table), gift (modelMeta free),
//     tiny:free (unpriced, display-free);
//   - q (anthropic, failing upstream, userinfo in its baseUrl);
//   - d (openai, discovery with metadataPath): disc-1, disc-2;
//   - dfail (openai, discovery failing: its breaker opens at once);
//   - zbad (openai, failing upstream): m1 again, a collision warning;
//   - aliases fast (one target), multi (weighted, two), ghost (unresolved);
//   - groups all, tight (p/m1 only, 1 request a minute), spenders (a cost
//     budget, mcpServers and passthroughPaths), idle;
//   - users alice (all, admin), bob (tight), carol (spenders + all, a
//     personal grant on q, her own limit), dave (idle, never seen), and
//     erin from the users file (idle, a personal grant on d).
type adminFleet struct {
	g         *Gateway
	base      string
	done      chan bool
	usersFile string
	ok, bad   string // the upstreams' URLs
}

const (
	fleetBobKey   = "sk-fleet-bob-0001"
	fleetCarolKey = "sk-fleet-carol-0001"
	fleetDaveKey  = "sk-fleet-dave-0001"
	fleetErinKey  = "sk-fleet-erin-0001"
)

// fleetConfig is the fleet's configuration; extra goes first in the top
// level.
func fleetConfig(okURL, badURL, usersFile, extra string) string {
	withUser := strings.Replace(badURL, "http://", "http://ops:sk-userinfo-secret@", 1)
	return `{` + extra + `
  "admin": {"enabled": true},
  "breaker": {"failureThreshold": 1},
  "providers": {
    "p": {"type": "openai", "baseUrl": "` + okURL + `", "apiKey": "` + testProviderKey + `",
          "models": ["m1", "m2", "gpt-4o", "MiniMax-M2", "gift", "tiny:free"]},
    "q": {"type": "anthropic", "baseUrl": "` + withUser + `/root", "apiKey": "sk-ant-fleet-0001", "models": ["claude-haiku-4-5"]},
    "d": {"type": "openai", "baseUrl": "` + okURL + `", "discovery": true, "metadataPath": "/api/v0/models"},
    "dfail": {"type": "openai", "baseUrl": "` + badURL + `", "discovery": true},
    "zbad": {"type": "openai", "baseUrl": "` + badURL + `", "models": ["m1"]}},
  "modelAliases": {"fast": "m1", "multi": {"targets": ["p/m2", "zbad/m1"], "strategy": "weighted", "weights": [3, 1]}, "ghost": "nowhere"},
  "modelMeta": {"p/m1": {"contextTokens": 8000}, "fast": {"contextTokens": 4000}, "gift": {"free": true}},
  "pricing": {"m1": {"inputPerM": 2, "outputPerM": 4}},
  "groups": {
    "all": {},
    "tight": {"providers": ["p"], "models": ["m1"], "limits": {"requestsPerMinute": 1}},
    "spenders": {"limits": {"costPerDayUSD": 1.5}, "mcpServers": ["docs-*"], "passthroughPaths": ["v1/files"]},
    "idle": {}},
  "users": {"file": "` + usersFile + `", "inline": [
    {"name": "alice", "group": "all", "apiKey": "` + testAliceKey + `", "admin": true},
    {"name": "bob", "group": "tight", "apiKey": "` + fleetBobKey + `"},
    {"name": "carol", "group": "spenders", "groups": ["all"], "apiKey": "` + fleetCarolKey + `", "providers": ["q"], "limits": {"requestsPerDay": 100}},
    {"name": "dave", "group": "idle", "apiKey": "` + fleetDaveKey + `"}]}}`
}

// fleetUpstreams are the fleet's two upstreams: one that answers (chat,
// the model listing and LM Studio's metadata) and one that fails.
func fleetUpstreams(t *testing.T) (*fakeUpstream, *fakeUpstream) {
	ok := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/models":
			_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"disc-1"},{"id":"disc-2"}]}`)
		case "/api/v0/models":
			_, _ = io.WriteString(w, `{"data":[{"id":"disc-1","loaded_context_length":32768}]}`)
		default:
			_, _ = io.WriteString(w, chatOK)
		}
	})
	bad := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"message":"down","type":"server_error"}}`, 500)
	})
	return ok, bad
}

func newAdminFleet(t *testing.T, extra string) *adminFleet {
	t.Helper()
	ok, bad := fleetUpstreams(t)
	file := filepath.Join(t.TempDir(), "users.json")
	doc := `{"users": [{"name": "erin", "group": "idle", "apiKey": "` + fleetErinKey + `", "providers": ["d"], "models": ["disc-*"]}]}`
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	g, base, done := statsGateway(t, fleetConfig(ok.URL, bad.URL, file, extra))
	return &adminFleet{g: g, base: base, done: done, usersFile: file, ok: ok.URL, bad: bad.URL}
}

// stable is body with the upstreams' addresses (random ports) written
// as http://ok and http://bad, for the golden files.
func (f *adminFleet) stable(body string) []byte {
	return []byte(strings.ReplaceAll(strings.ReplaceAll(body, f.ok, "http://ok"), strings.TrimPrefix(f.bad, "http://"), "bad"))
}

// chat sends one chat request for model as key and waits for its record.
func (f *adminFleet) chat(t *testing.T, key, model string, want int) {
	t.Helper()
	status, _, body := do(t, "POST", f.base+"/v1/chat/completions", key, `{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`)
	if status != want {
		t.Fatalf("%s as %s: %d %s, want %d", model, key, status, body, want)
	}
	waitRecord(t, f.done)
}

// traffic is the fleet's requests: p serves five (alice three times,
// one of them tiny:free, whose id has a ':' in the counter keys; bob;
// carol), zbad fails one, bob's second request is refused (429).
func (f *adminFleet) traffic(t *testing.T) {
	t.Helper()
	f.chat(t, testAliceKey, "m1", 200)
	f.chat(t, testAliceKey, "fast", 200)
	f.chat(t, testAliceKey, "p/tiny:free", 200)
	f.chat(t, testAliceKey, "zbad/m1", 500)
	f.chat(t, fleetBobKey, "m1", 200)
	f.chat(t, fleetBobKey, "m1", 429)
	f.chat(t, fleetCarolKey, "p/m1", 200)
	f.g.limiter.async.wait()
}

// getJSON reads an admin route as alice and decodes it into v.
func (f *adminFleet) getJSON(t *testing.T, route string, v interface{}) string {
	t.Helper()
	status, _, body := getAdmin(t, f.base+"/admin/api/"+route, testAliceKey)
	if status != 200 {
		t.Fatalf("%s: %d %s", route, status, body)
	}
	if v != nil {
		if err := json.Unmarshal([]byte(body), v); err != nil {
			t.Fatalf("%s: %v\n%s", route, err, body)
		}
	}
	return body
}

func TestAdminOverviewFleet(t *testing.T) {
	f := newAdminFleet(t, ``)
	f.traffic(t)
	var ans adminOverviewAnswer
	body := f.getJSON(t, "overview", &ans)
	checkGolden(t, "overview", f.stable(body), "version", "replica", "lastRefresh", "openUntil")
	if ans.Version != Version || ans.Replica != f.g.events.replica || ans.Replica == "" || ans.Instance != "test" {
		t.Fatalf("identity: %q %q %q", ans.Version, ans.Replica, ans.Instance)
	}
	byName := map[string]adminProvider{}
	for _, p := range ans.Providers {
		byName[p.Name] = p
	}
	// The counters are what the requests wrote.
	for _, tc := range []struct {
		provider                   string
		day, dayFail, min, minFail int64
		rates                      map[string]adminModelRate
	}{
		{"p", 5, 0, 5, 0, map[string]adminModelRate{"m1": {4, 0}, "m2": {}, "gpt-4o": {}, "MiniMax-M2": {}, "gift": {}, "tiny:free": {1, 0}}},
		{"zbad", 1, 1, 1, 1, map[string]adminModelRate{"m1": {1, 1}}},
		{"q", 0, 0, 0, 0, map[string]adminModelRate{"claude-haiku-4-5": {}}},
		{"dfail", 0, 0, 0, 0, map[string]adminModelRate{}},
	} {
		p := byName[tc.provider]
		if p.AttemptsDay == nil || *p.AttemptsDay != tc.day || *p.FailuresDay != tc.dayFail || *p.AttemptsMinute != tc.min || *p.FailuresMinute != tc.minFail {
			t.Fatalf("%s counters: %s", tc.provider, body)
		}
		if p.ModelRates == nil || len(*p.ModelRates) != len(tc.rates) {
			t.Fatalf("%s modelRates: %v", tc.provider, p.ModelRates)
		}
		for m, want := range tc.rates {
			if (*p.ModelRates)[m] != want {
				t.Fatalf("%s modelRates[%s] = %+v, want %+v", tc.provider, m, (*p.ModelRates)[m], want)
			}
		}
	}
	// Discovery: d refreshed (disc-1's context captured), dfail's breaker
	// is open until a time to come; the others have no discovery.
	if d := byName["d"]; !d.DiscoveryEnabled || d.LastRefresh.IsZero() || d.HealthState != "closed" || !d.OpenUntil.IsZero() ||
		d.ModelCount != 2 || d.ModelMeta["disc-1"].ContextWindow == nil || *d.ModelMeta["disc-1"].ContextWindow != 32768 {
		t.Fatalf("d: %+v", d)
	}
	if d := byName["dfail"]; !d.DiscoveryEnabled || !d.LastRefresh.IsZero() || d.HealthState != "open" || !d.OpenUntil.After(d.LastRefresh) {
		t.Fatalf("dfail: %+v", d)
	}
	if p := byName["p"]; p.DiscoveryEnabled || !p.LastRefresh.IsZero() || p.HealthState != "closed" || !p.OpenUntil.IsZero() {
		t.Fatalf("p: %+v", p)
	}
	if q := byName["q"]; strings.Contains(q.BaseURL, "ops") || strings.Contains(q.BaseURL, "secret") || !strings.HasSuffix(q.BaseURL, "/root") {
		t.Fatalf("q baseUrl %q", q.BaseURL)
	}
	// The price sources sum to the catalog.
	pr := ans.Pricing
	if want := (adminPricingCounts{Override: 2, Builtin: 2, LiteLLM: 1, Free: 1, Unpriced: 4}); pr != want {
		t.Fatalf("pricing %+v, want %+v", pr, want)
	}
	if n := len(f.g.catalogIDs()); pr.Override+pr.Builtin+pr.LiteLLM+pr.Free+pr.Unpriced != n {
		t.Fatalf("pricing %+v does not sum to %d", pr, n)
	}
	if ans.Warnings == nil || len(ans.Warnings) != 1 || !strings.Contains(ans.Warnings[0], `"m1" is served by providers "p" and "zbad"`) || strings.Contains(body, "warningsDropped") {
		t.Fatalf("warnings: %q", ans.Warnings)
	}
	if ans.CountersUnavailable || strings.Contains(body, "countersUnavailable") || ans.Redis.Configured || strings.Contains(body, "reachable") {
		t.Fatalf("store status: %s", body)
	}
}

// The overview's settings are the effective ones: retry after its
// defaults (attempts and backoff absent when off), the cache only with
// Redis, and the Redis block without its password.
func TestAdminOverviewSettings(t *testing.T) {
	up := newRoutedUpstream(t)
	for _, tc := range []struct {
		name, extra string
		retry       string
		cache       string
		redis       string
	}{
		{"defaults", ``, `{"enabled":false}`, `{"enabled":false}`, `{"configured":false}`},
		{"retry disabled with values", `"retry": {"enabled": false, "attempts": 3, "backoff": "1s"},`, `{"enabled":false}`, `{"enabled":false}`, `{"configured":false}`},
		{"retry defaults", `"retry": {"enabled": true},`, `{"enabled":true,"attempts":1,"backoff":"250ms"}`, `{"enabled":false}`, `{"configured":false}`},
		{"retry set", `"retry": {"enabled": true, "attempts": 3, "backoff": "1.5s"},`, `{"enabled":true,"attempts":3,"backoff":"1.5s"}`, `{"enabled":false}`, `{"configured":false}`},
		{"cache without redis", `"cache": {"enabled": true},`, `{"enabled":false}`, `{"enabled":false}`, `{"configured":false}`},
		{"cache with redis down", `"cache": {"enabled": true, "ttl": "90s"}, "redis": {"address": "127.0.0.1:1", "password": "sk-redis-pw", "failOpen": false},`,
			`{"enabled":false}`, `{"enabled":true,"ttl":"1m30s","maxBodyBytes":1048576}`, `{"configured":true,"address":"127.0.0.1:1","failOpen":false,"reachable":false}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := newTestGateway(t, adminConfig(up.URL, `"admin": {"enabled": true},`+tc.extra), nil)
			status, _, body := getAdmin(t, srv.URL+"/admin/api/overview", testAliceKey)
			var raw map[string]json.RawMessage
			if err := json.Unmarshal([]byte(body), &raw); status != 200 || err != nil {
				t.Fatalf("%d %s", status, body)
			}
			for _, part := range []struct{ key, want string }{{"retry", tc.retry}, {"cache", tc.cache}, {"redis", tc.redis}} {
				if got := string(raw[part.key]); got != part.want {
					t.Fatalf("%s = %s, want %s", part.key, got, part.want)
				}
			}
			if strings.Contains(body, "sk-redis-pw") {
				t.Fatal("the Redis password is in the overview")
			}
			if got := string(raw["features"]); got != `{"userModelStats":false,"latencyStats":false,"cacheStats":`+strconv.FormatBool(strings.Contains(tc.cache, "true"))+`,"lastSeen":true,"failover":false}` {
				t.Fatalf("features = %s", got)
			}
		})
	}
}

// Construction warnings are capped at 50, the rest counted.
func TestAdminOverviewWarningsCap(t *testing.T) {
	up := newRoutedUpstream(t)
	models := make([]string, 60)
	for i := range models {
		models[i] = `"w` + strconv.Itoa(i) + `"`
	}
	list := strings.Join(models, ",")
	cfg := `{"admin": {"enabled": true},
  "providers": {"a": {"type": "openai", "baseUrl": "` + up.URL + `", "models": [` + list + `]},
                "b": {"type": "openai", "baseUrl": "` + up.URL + `", "models": [` + list + `]}},
  "groups": {"all": {}},
  "users": {"inline": [{"name": "alice", "group": "all", "apiKey": "` + testAliceKey + `", "admin": true}]}}`
	srv, _ := newTestGateway(t, cfg, nil)
	var ans adminOverviewAnswer
	_, _, body := getAdmin(t, srv.URL+"/admin/api/overview", testAliceKey)
	if err := json.Unmarshal([]byte(body), &ans); err != nil || len(ans.Warnings) != 50 || ans.WarningsDropped != 10 {
		t.Fatalf("%d warnings, %d dropped (%v)", len(ans.Warnings), ans.WarningsDropped, err)
	}
}

// Redis down: overview still answers, its counters absent and flagged
// (never zeros); usage is a 503; catalog and consumers read no store.
func TestAdminOverviewStoreDown(t *testing.T) {
	f := newAdminFleet(t, `"redis": {"address": "127.0.0.1:1"},`)
	var ans adminOverviewAnswer
	body := f.getJSON(t, "overview", &ans)
	if !ans.CountersUnavailable || ans.Redis.Reachable == nil || *ans.Redis.Reachable || len(ans.Providers) != 5 {
		t.Fatalf("overview: %s", body)
	}
	for _, field := range []string{"attemptsDay", "failuresDay", "attemptsMinute", "failuresMinute", "modelRates"} {
		if strings.Contains(body, `"`+field+`"`) {
			t.Fatalf("%s present with the store down: %s", field, body)
		}
	}
	if !strings.Contains(body, `"countersUnavailable":true`) || !strings.Contains(body, `"modelMeta"`) {
		t.Fatalf("overview: %s", body)
	}
	status, _, body := getAdmin(t, f.base+"/admin/api/usage", testAliceKey)
	if status != 503 || !strings.Contains(body, "store_unavailable") {
		t.Fatalf("usage with the store down: %d %s", status, body)
	}
	for _, route := range []string{"catalog", "consumers"} {
		f.getJSON(t, route, nil)
	}
}

// adminMaxKeysPerRequest caps the parameterized reads only: usage and
// overview read a fixed number of keys per configured entity and
// answer in full past it (the dashboard's poll), in chunked reads.
func TestAdminOverviewKeyCount(t *testing.T) {
	up := newRoutedUpstream(t)
	models := make([]string, 49) // 4 + 49 × 2 = 102 keys
	for i := range models {
		models[i] = `"k` + strconv.Itoa(i) + `"`
	}
	var users []string
	for i := 0; i < 9; i++ { // (9 users + 1 group + total) × 10 = 110 keys
		users = append(users, `{"name": "u`+strconv.Itoa(i)+`", "group": "all", "apiKey": "sk-count-`+strconv.Itoa(i)+`", "admin": true}`)
	}
	cfg := `{"admin": {"enabled": true}, "adminMaxKeysPerRequest": 100,
  "providers": {"a": {"type": "openai", "baseUrl": "` + up.URL + `", "models": [` + strings.Join(models, ",") + `]}},
  "groups": {"all": {}},
  "users": {"inline": [` + strings.Join(users, ",") + `]}}`
	srv, _ := newTestGateway(t, cfg, nil)
	status, _, body := getAdmin(t, srv.URL+"/admin/api/usage", "sk-count-0")
	if status != 200 || !strings.Contains(body, `"name":"u8"`) {
		t.Fatalf("usage: %d %s", status, body)
	}
	status, _, body = getAdmin(t, srv.URL+"/admin/api/overview", "sk-count-0")
	if status != 200 || strings.Contains(body, `"countersUnavailable"`) || !strings.Contains(body, `"k48":{"attemptsDay":0`) {
		t.Fatalf("overview: %d %s", status, body)
	}
	// A parameterized read past the cap is refused before reading.
	status, _, body = getAdmin(t, srv.URL+"/admin/api/usage/totals?kind=user&span=3", "sk-count-0")
	if status != 400 || !strings.Contains(body, "too_many_keys") {
		t.Fatalf("usage/totals: %d %s", status, body)
	}
}

func TestAdminUsageFleet(t *testing.T) {
	f := newAdminFleet(t, ``)
	f.traffic(t)
	var ans adminUsageAnswer
	body := f.getJSON(t, "usage", &ans)
	// lastSeen is the request's wall clock; rejectionsPerDay is checked
	// against the store below (which scopes a refusal counts in is the
	// write path's to decide).
	checkGolden(t, "usage", f.stable(body), "lastSeen")
	// Every figure is the store's own counter.
	m := f.g.limiter.counters.(*store.Memory)
	snap := m.Snapshot("llmgw:")
	rows := append(append([]adminUsageRow{}, ans.Users...), ans.Groups...)
	kinds := make([]string, 0, len(rows)+1)
	for range ans.Users {
		kinds = append(kinds, "user")
	}
	for range ans.Groups {
		kinds = append(kinds, "group")
	}
	total := ans.Total
	total.Name = "all"
	rows = append(rows, total)
	kinds = append(kinds, "total")
	for i, row := range rows {
		keys := usageKeys(nil, kinds[i], row.Name, statsClock)
		got := []int64{row.RequestsPerMinute, row.RequestsPerDay, row.RejectionsPerDay, row.TokensInPerDay, row.TokensOutPerDay,
			row.TokensInPerMonth, row.TokensOutPerMonth, row.CostPerDayMicroUsd, row.CostPerMonthMicroUsd, row.LastSeen}
		for k := range keys {
			if got[k] != snap[keys[k]] {
				t.Fatalf("%s %s: %s = %d, the store has %d", kinds[i], row.Name, keys[k], got[k], snap[keys[k]])
			}
		}
	}
	// What the traffic says: bob's refusal counts for his group and the
	// total; seen scopes have a lastSeen, dave and erin none.
	byName := map[string]adminUsageRow{}
	for _, r := range ans.Users {
		byName["user:"+r.Name] = r
	}
	for _, r := range ans.Groups {
		byName["group:"+r.Name] = r
	}
	if byName["group:tight"].RejectionsPerDay != 1 || ans.Total.RejectionsPerDay != 1 || ans.Total.RequestsPerDay != 7 {
		t.Fatalf("rejections: %s", body)
	}
	for _, s := range []string{"user:alice", "user:bob", "user:carol", "group:all", "group:tight", "group:spenders"} {
		if byName[s].LastSeen <= 0 {
			t.Fatalf("%s lastSeen %d", s, byName[s].LastSeen)
		}
	}
	if byName["user:dave"].LastSeen != 0 || byName["user:erin"].LastSeen != 0 || byName["group:idle"].LastSeen != 0 || ans.Total.LastSeen <= 0 {
		t.Fatalf("lastSeen: %s", body)
	}
	// Admin reads count nothing.
	for i := 0; i < 3; i++ {
		f.getJSON(t, "usage", nil)
	}
	var again adminUsageAnswer
	f.getJSON(t, "usage", &again)
	if again.Total.RequestsPerMinute != ans.Total.RequestsPerMinute || again.Users[0].RequestsPerDay != ans.Users[0].RequestsPerDay {
		t.Fatalf("admin reads were counted: %+v then %+v", ans.Total, again.Total)
	}
}

// The four routes take no parameters: unknown ones are ignored, and
// each is gated (no key 401, a non-admin key 403).
func TestAdminOverviewRoutesGate(t *testing.T) {
	f := newAdminFleet(t, ``)
	for _, route := range []string{"overview", "usage", "catalog", "consumers"} {
		t.Run(route, func(t *testing.T) {
			url := f.base + "/admin/api/" + route
			if status, h, body := getAdmin(t, url, ""); status != 401 || h.Get("Cache-Control") != "no-store" || h.Get("Content-Security-Policy") != adminCSP {
				t.Fatalf("no key: %d %v %s", status, h, body)
			}
			if status, _, body := getAdmin(t, url, fleetBobKey); status != 403 || !strings.Contains(body, "admin_required") {
				t.Fatalf("non-admin: %d %s", status, body)
			}
			if status, _, body := do(t, "POST", url, testAliceKey, "{}"); status != 405 {
				t.Fatalf("POST: %d %s", status, body)
			}
			status, h, plain := getAdmin(t, url, testAliceKey)
			if status != 200 || h.Get("Cache-Control") != "no-store" || h.Get("X-Content-Type-Options") != "nosniff" {
				t.Fatalf("admin: %d %v", status, h)
			}
			for _, q := range []string{"?limit=0", "?window=nope&span=-1", "?x=1&x=2", "?%zz"} {
				status, _, body := getAdmin(t, url+q, testAliceKey)
				if status != 200 {
					t.Fatalf("%s%s: %d %s", route, q, status, body)
				}
				volatile := []string{"lastRefresh", "openUntil", "lastSeen"}
				if string(maskJSON(t, []byte(body), volatile...)) != string(maskJSON(t, []byte(plain), volatile...)) {
					t.Fatalf("%s%s answers differently:\n%s\n%s", route, q, body, plain)
				}
			}
		})
	}
}
