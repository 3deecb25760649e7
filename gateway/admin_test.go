package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/redistest"
)

// adminConfig is one provider, alice (admin) and bob (not), with a
// requests-per-minute limit of 1 for bob's group, and extra keys.
func adminConfig(upURL, extra string) string {
	return `{` + extra + `
  "providers": {"p": {"type": "openai", "baseUrl": "` + upURL + `", "models": ["m1"]}},
  "groups": {"all": {}, "tight": {"limits": {"requestsPerMinute": 1}}},
  "users": {"inline": [
    {"name": "alice", "group": "all", "apiKey": "` + testAliceKey + `", "admin": true},
    {"name": "bob", "group": "tight", "apiKey": "sk-admin-bob"}]}}`
}

func getAdmin(t *testing.T, url, key string) (int, http.Header, string) {
	t.Helper()
	return do(t, "GET", url, key, "")
}

func TestAdminEventsRoute(t *testing.T) {
	up := newRoutedUpstream(t)
	off, _ := newTestGateway(t, adminConfig(up.URL, ``), nil)
	if status, _, _ := getAdmin(t, off.URL+"/admin/api/events", testAliceKey); status != 404 {
		t.Fatalf("admin disabled: %d, want the route unregistered (404)", status)
	}
	srv, _ := newTestGateway(t, adminConfig(up.URL, `"admin": {"enabled": true},`), nil)
	base := srv.URL + "/admin/api/events"
	// The gate.
	if status, h, _ := getAdmin(t, base, ""); status != 401 || h.Get("Content-Security-Policy") != adminCSP || h.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("no key: %d %v", status, h)
	}
	if status, _, _ := getAdmin(t, base, "sk-admin-bob"); status != 403 {
		t.Fatalf("non-admin: %d", status)
	}
	// No events yet: an empty array, never null.
	status, h, body := getAdmin(t, base, testAliceKey)
	if status != 200 || h.Get("Cache-Control") != "no-store" || h.Get("Content-Security-Policy") != adminCSP ||
		!strings.Contains(body, `"events":[]`) || !strings.Contains(body, `"source":"replica"`) ||
		!strings.Contains(body, `"capacity":200`) || !strings.Contains(body, `"degraded":false`) {
		t.Fatalf("empty events: %d %v %s", status, h, body)
	}
	// Bob's second request is rate limited: one event. The admin reads
	// never count against anyone (alice polls freely).
	do(t, "POST", srv.URL+"/v1/chat/completions", "sk-admin-bob", m1Chat)
	do(t, "POST", srv.URL+"/v1/chat/completions", "sk-admin-bob", m1Chat)
	for i := 0; i < 5; i++ {
		getAdmin(t, base, testAliceKey)
	}
	var ans adminEventsAnswer
	_, _, body = getAdmin(t, base+"?limit=1", testAliceKey)
	if err := json.Unmarshal([]byte(body), &ans); err != nil || len(ans.Events) != 1 || ans.Events[0].Kind != eventRateLimit ||
		ans.Events[0].User != "bob" || ans.Events[0].Group != "tight" || ans.Replica == "" || ans.Source != "replica" {
		t.Fatalf("events: %s (%v)", body, err)
	}
	for _, bad := range []string{"0", "201", "x", "1.5"} {
		if status, _, body := getAdmin(t, base+"?limit="+bad, testAliceKey); status != 400 || !strings.Contains(body, "limit") {
			t.Fatalf("limit=%s: %d %s", bad, status, body)
		}
	}
	if status, _, _ := do(t, "POST", base, testAliceKey, "{}"); status != 405 {
		t.Fatalf("POST: %d", status)
	}
	if status, _, _ := getAdmin(t, srv.URL+"/admin/api/nothing", testAliceKey); status != 404 {
		t.Fatalf("unknown admin route: %d", status)
	}
	// The page needs no key and carries no data.
	status, h, body = getAdmin(t, srv.URL+"/admin", "")
	if status != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/html") || h.Get("Content-Security-Policy") != adminCSP || !strings.Contains(body, "/admin/assets/") {
		t.Fatalf("GET /admin: %d %v %s", status, h, body)
	}
}

// With Redis the route reads the shared list; with Redis down it falls
// back to the ring, degraded.
func TestAdminEventsRedis(t *testing.T) {
	up := newRoutedUpstream(t)
	addr := redistest.Start(t)
	srv, _ := newTestGateway(t, adminConfig(up.URL, `"admin": {"enabled": true}, "redis": {"address": "`+addr+`"},`), nil)
	do(t, "POST", srv.URL+"/v1/chat/completions", "sk-admin-bob", m1Chat)
	do(t, "POST", srv.URL+"/v1/chat/completions", "sk-admin-bob", m1Chat)
	var ans adminEventsAnswer
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		_, _, body := getAdmin(t, srv.URL+"/admin/api/events", testAliceKey)
		ans = adminEventsAnswer{}
		if err := json.Unmarshal([]byte(body), &ans); err != nil {
			t.Fatal(err)
		}
		if len(ans.Events) == 1 {
			break
		}
	}
	if ans.Source != "redis" || ans.Degraded || len(ans.Events) != 1 || ans.Events[0].Kind != eventRateLimit {
		t.Fatalf("from Redis: %+v", ans)
	}
	down, _ := newTestGateway(t, adminConfig(up.URL, `"admin": {"enabled": true}, "redis": {"address": "127.0.0.1:1"},`), nil)
	_, _, body := getAdmin(t, down.URL+"/admin/api/events", testAliceKey)
	ans = adminEventsAnswer{}
	if err := json.Unmarshal([]byte(body), &ans); err != nil || ans.Source != "replica" || !ans.Degraded || ans.Events == nil {
		t.Fatalf("Redis down: %s", body)
	}
}

// The page (the built dashboard, admin_assets_gen.go) and every generated
// asset: served without a key, the page no-store and the assets
// immutable, each with its content type; the page references only assets
// that exist and holds no inline script or style (the CSP forbids them);
// an unknown asset is the 404 envelope. Every response carries the CSP
// and nosniff; HEAD answers the headers only.
func TestAdminAssets(t *testing.T) {
	up := newRoutedUpstream(t)
	srv, _ := newTestGateway(t, adminConfig(up.URL, `"admin": {"enabled": true},`), nil)
	status, h, page := getAdmin(t, srv.URL+"/admin", "")
	if status != 200 || page != adminIndexHTML || !strings.HasPrefix(h.Get("Content-Type"), "text/html") || h.Get("Cache-Control") != "no-store" ||
		h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Content-Security-Policy") != adminCSP {
		t.Fatalf("GET /admin: %d %v %s", status, h, page)
	}
	// No inline script or style: every <script> has a src and no body.
	for _, m := range regexp.MustCompile(`(?is)<script\b([^>]*)>(.*?)</script>`).FindAllStringSubmatch(page, -1) {
		if !strings.Contains(m[1], "src=") || strings.TrimSpace(m[2]) != "" {
			t.Fatalf("inline script in the page: %s", m[0])
		}
	}
	for _, bad := range []string{`(?i)<style\b`, `(?i)\sstyle\s*=`, `(?i)\son[a-z]+\s*=`, `(?i)javascript:`} {
		if loc := regexp.MustCompile(bad).FindStringIndex(page); loc != nil {
			t.Fatalf("the page has %q (the CSP forbids inline script and style): %s", bad, page[loc[0]:])
		}
	}
	// The page references only assets that exist, a module script and a
	// stylesheet among them.
	refs := regexp.MustCompile(`/admin/assets/([^"'\s>?#]+)`).FindAllStringSubmatch(page, -1)
	kinds := map[string]bool{}
	for _, m := range refs {
		a, ok := adminAssets[m[1]]
		if !ok {
			t.Fatalf("the page references %s, which is not generated", m[0])
		}
		kinds[strings.SplitN(a.contentType, ";", 2)[0]] = true
	}
	if !kinds["text/javascript"] || !kinds["text/css"] || !strings.Contains(page, `type="module"`) {
		t.Fatalf("the page references %v: want a module script and a stylesheet", refs)
	}
	// Every generated asset, by its hashed name, with its content type.
	wantType := map[string]string{".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml",
		".png": "image/png", ".woff2": "font/woff2", ".woff": "font/woff", ".ico": "image/x-icon", ".json": "application/json; charset=utf-8"}
	hashed := regexp.MustCompile(`^[A-Za-z0-9_.-]+-[A-Za-z0-9_-]{8,}\.[a-z0-9]+$`)
	if len(adminAssets) == 0 {
		t.Fatal("no generated assets")
	}
	for name, a := range adminAssets {
		if !hashed.MatchString(name) {
			t.Fatalf("asset name %q carries no content hash", name)
		}
		ext := name[strings.LastIndexByte(name, '.'):]
		if want, ok := wantType[ext]; ok && a.contentType != want {
			t.Fatalf("%s: content type %q, want %q", name, a.contentType, want)
		}
		status, h, body := getAdmin(t, srv.URL+"/admin/assets/"+name, "")
		if status != 200 || body != a.body || h.Get("Content-Type") != a.contentType || h.Get("Cache-Control") != "public, max-age=31536000, immutable" ||
			h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Content-Security-Policy") != adminCSP {
			t.Fatalf("asset %s: %d %v (%d bytes, want %d)", name, status, h, len(body), len(a.body))
		}
	}
	status, h, body := getAdmin(t, srv.URL+"/admin/assets/index-00000000.js", "")
	if status != 404 || !strings.Contains(body, `"not_found"`) || h.Get("Content-Security-Policy") != adminCSP || h.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("unknown asset: %d %v %s", status, h, body)
	}
	name := refs[0][1]
	for _, path := range []string{"/admin", "/admin/assets/" + name} {
		req, _ := http.NewRequest(http.MethodHead, srv.URL+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Cache-Control") == "" || resp.Header.Get("Content-Type") == "" || n != 0 {
			t.Fatalf("HEAD %s: %d %v (%d body bytes)", path, resp.StatusCode, resp.Header, n)
		}
	}
	// Disabled: not registered.
	off, _ := newTestGateway(t, adminConfig(up.URL, ``), nil)
	for _, path := range []string{"/admin", "/admin/assets/" + name} {
		if status, _, _ := getAdmin(t, off.URL+path, ""); status != 404 {
			t.Fatalf("admin off: %s answered %d", path, status)
		}
	}
}

// adminRouteSamples is one valid request of every admin JSON route.
var adminRouteSamples = []string{
	"overview", "usage", "catalog", "consumers", "config", "events", "targets",
	"usage/history?scope=total&metric=req&window=day",
	"usage/series?scope=total&scope=user:alice&metric=tokin&window=hour&span=3",
	"usage/models?metric=req&window=day&detail=1",
	"usage/totals?kind=user",
	"usage/totals?kind=usermodel&user=alice",
	"usage/totals?kind=targetcaller",
	"performance?kind=provider&window=day",
	"performance?kind=model&window=hour",
}

// Every admin JSON route: the gate (401, 403), the headers (nosniff,
// CSP, no-store, a request id), and never counted: an admin whose limit
// is one request a minute polls every route twice, and the next chat is
// still the first request of the minute.
func TestAdminEveryRoute(t *testing.T) {
	up := newRoutedUpstream(t)
	cfg := adminConfig(up.URL, `"admin": {"enabled": true, "stats": {"userModel": true, "latency": true}},`)
	cfg = strings.Replace(cfg, `"admin": true}`, `"admin": true, "limits": {"requestsPerMinute": 1}}`, 1)
	srv, _ := newTestGateway(t, cfg, nil)
	for _, route := range adminRouteSamples {
		url := srv.URL + "/admin/api/" + route
		for _, c := range []struct {
			key    string
			status int
		}{{"", 401}, {"sk-admin-bob", 403}, {testAliceKey, 200}, {testAliceKey, 200}} {
			status, h, body := getAdmin(t, url, c.key)
			if status != c.status || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Content-Security-Policy") != adminCSP ||
				h.Get("Cache-Control") != "no-store" || h.Get("X-Request-Id") == "" {
				t.Fatalf("%s with key %q: %d %v %s", route, c.key, status, h, body)
			}
			if status == 200 && !json.Valid([]byte(body)) {
				t.Fatalf("%s: not JSON: %s", route, body)
			}
		}
	}
	if status, _, body := do(t, "POST", srv.URL+"/v1/chat/completions", testAliceKey, m1Chat); status != 200 {
		t.Fatalf("alice's first counted request: %d %s (admin reads were counted)", status, body)
	}
	_, _, body := getAdmin(t, srv.URL+"/admin/api/usage", testAliceKey)
	var u struct {
		Users []struct {
			Name              string `json:"name"`
			RequestsPerMinute int64  `json:"requestsPerMinute"`
		} `json:"users"`
	}
	if err := json.Unmarshal([]byte(body), &u); err != nil {
		t.Fatal(err)
	}
	for _, row := range u.Users {
		if row.Name == "alice" && row.RequestsPerMinute != 1 {
			t.Fatalf("alice's requestsPerMinute = %d, want 1 (the chat only): %s", row.RequestsPerMinute, body)
		}
	}
}

// The events answer's golden: one rate-limit refusal, its volatile
// fields (time, replica) masked.
func TestAdminEventsGolden(t *testing.T) {
	up := newRoutedUpstream(t)
	_, base, done := statsGateway(t, adminConfig(up.URL, `"admin": {"enabled": true},`))
	for i, want := range []int{200, 429} {
		if status, _, body := do(t, "POST", base+"/v1/chat/completions", "sk-admin-bob", m1Chat); status != want {
			t.Fatalf("request %d: %d %s", i, status, body)
		}
		waitRecord(t, done)
	}
	status, _, body := getAdmin(t, base+"/admin/api/events", testAliceKey)
	if status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	checkGolden(t, "events", []byte(body), "time", "replica")
}
