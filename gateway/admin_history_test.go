package gateway

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// historyConfig is standardConfig with admin on, alice an admin, bob's
// group m1only limited to one request a minute, and extra at the top.
func historyConfig(upURL, extra string) string {
	cfg := withTop(standardConfig(upURL), adminBlock(``)+extra)
	cfg = strings.Replace(cfg, `"apiKey": "`+testAliceKey+`"`, `"apiKey": "`+testAliceKey+`", "admin": true`, 1)
	return strings.Replace(cfg, `"m1only": {"models": ["m1"]}`, `"m1only": {"models": ["m1"], "limits": {"requestsPerMinute": 1}}`, 1)
}

// historyTraffic serves historyConfig on statsClock and sends, through the
// gateway, two m1 requests of alice's and two of bob's (the second one
// refused by his group's limit; the limits count a refused request's
// req too). Each m1 answer is 11 + 7 tokens, 50 micro-USD.
func historyTraffic(t *testing.T, extra string) string {
	t.Helper()
	up := newFakeUpstream(t, okJSON(chatOK))
	g, base, done := statsGateway(t, historyConfig(up.URL, extra))
	for _, req := range []struct {
		key    string
		status int
	}{{testAliceKey, 200}, {testAliceKey, 200}, {testBobKey, 200}, {testBobKey, 429}} {
		if status, _, body := do(t, "POST", base+"/v1/chat/completions", req.key, chatReq); status != req.status {
			t.Fatalf("%s: %d %s", req.key, status, body)
		}
		waitRecord(t, done)
	}
	g.limiter.async.wait() // the provider success rates' background batch
	return base
}

// getUsage is an admin GET of route with query q.
func getUsage(t *testing.T, base, route, q string) (int, string) {
	t.Helper()
	status, _, body := getAdmin(t, base+"/admin/api/"+route+"?"+q, testAliceKey)
	return status, body
}

func TestAdminUsageHistory(t *testing.T) {
	base := historyTraffic(t, ``)
	status, body := getUsage(t, base, "usage/history", "scope=user:alice&metric=tokin&window=hour&span=3")
	if status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	checkGolden(t, "usage_history", []byte(body))
	// statsClock is 2026-11-29 22:40 UTC: the last bucket is the current
	// one; span defaults to the window's retention.
	for _, tc := range []struct {
		query string
		n     int
		last  int64
	}{
		{"scope=total&metric=req&window=day&span=2", 2, 4},
		{"scope=group:m1only&metric=tokout&window=hour&span=1", 1, 7},
		{"scope=model:mock/m1&metric=cost&window=month&span=2", 2, 150},
		{"scope=user:bob&metric=req&window=month", 13, 2},
		{"scope=group:all&metric=cost&window=day", 35, 100},
		{"scope=total&metric=tokin&window=hour", 48, 33},
	} {
		status, body := getUsage(t, base, "usage/history", tc.query)
		var ans adminHistoryAnswer
		if err := json.Unmarshal([]byte(body), &ans); status != 200 || err != nil || len(ans.Points) != tc.n || ans.Points[tc.n-1].Value != tc.last {
			t.Fatalf("%s: %d %s", tc.query, status, body)
		}
		for i := 0; i < tc.n-1; i++ {
			if ans.Points[i].Value != 0 || ans.Points[i].Bucket >= ans.Points[i+1].Bucket {
				t.Fatalf("%s: points not oldest first, or traffic outside the current bucket: %s", tc.query, body)
			}
		}
	}
	if _, body := getUsage(t, base, "usage/history", "scope=total&metric=req&window=month&span=1"); !strings.Contains(body, `"points":[{"bucket":"202611","value":4}]`) {
		t.Fatalf("month bucket label: %s", body)
	}
}

func TestAdminUsageHistoryInvalid(t *testing.T) {
	up := newFakeUpstream(t, okJSON(chatOK))
	_, base, _ := statsGateway(t, historyConfig(up.URL, ``))
	ok := "&metric=req&window=day"
	for _, tc := range []struct {
		query  string
		status int
		param  string
	}{
		{"metric=req&window=day", 400, "scope"},
		{"scope=" + ok, 400, "scope"},
		{"scope=foo" + ok, 400, "scope"},
		{"scope=user:" + ok, 400, "scope"},
		{"scope=provider:mock" + ok, 400, "scope"},
		{"scope=provmodel:mock/m1" + ok, 400, "scope"},
		{"scope=model:m1" + ok, 400, "scope"},
		{"scope=model:mock/" + ok, 400, "scope"},
		{"scope=total&scope=total" + ok, 400, "scope"},
		{"scope=total&window=day", 400, "metric"},
		{"scope=total&metric=rej&window=day", 400, "metric"},
		{"scope=total&metric=attempt&window=day", 400, "metric"},
		{"scope=total&metric=req", 400, "window"},
		{"scope=total&metric=req&window=min", 400, "window"},
		{"scope=total&metric=req&window=week", 400, "window"},
		{"scope=total" + ok + "&span=0", 400, "span"},
		{"scope=total" + ok + "&span=36", 400, "span"},
		{"scope=total&metric=req&window=hour&span=49", 400, "span"},
		{"scope=total&metric=req&window=month&span=14", 400, "span"},
		{"scope=total" + ok + "&span=x", 400, "span"},
		// Parameters are checked before the scope's existence.
		{"scope=user:nobody&metric=bad&window=day", 400, "metric"},
		{"scope=user:nobody" + ok, 404, "user:nobody"},
		{"scope=group:nogroup" + ok, 404, "group:nogroup"},
		{"scope=model:mock/m9" + ok, 404, "model:mock/m9"},
		{"scope=model:nope/m1" + ok, 404, "model:nope/m1"},
	} {
		status, body := getUsage(t, base, "usage/history", tc.query)
		if status != tc.status || !strings.Contains(body, tc.param) {
			t.Errorf("%s: %d %s, want %d naming %s", tc.query, status, body, tc.status, tc.param)
		}
	}
}

// An unreachable store is a 503, never zeros. The largest history (48
// keys) is below adminMaxKeysPerRequest's floor (100): history can never
// be refused as too_many_keys.
func TestAdminUsageHistoryStore(t *testing.T) {
	up := newFakeUpstream(t, okJSON(chatOK))
	_, down, _ := statsGateway(t, historyConfig(up.URL, `"redis": {"address": "127.0.0.1:1"},`))
	status, body := getUsage(t, down, "usage/history", "scope=total&metric=req&window=day")
	if status != 503 || !strings.Contains(body, "store_unavailable") {
		t.Fatalf("store down: %d %s", status, body)
	}
	_, base, _ := statsGateway(t, historyConfig(up.URL, `"adminMaxKeysPerRequest": 100,`))
	if status, body := getUsage(t, base, "usage/history", "scope=total&metric=req&window=hour"); status != 200 {
		t.Fatalf("48 keys at the floor: %d %s", status, body)
	}
}

func TestAdminUsageSeries(t *testing.T) {
	base := historyTraffic(t, ``)
	q := "scope=total&scope=user:alice&scope=group:m1only&scope=user:nobody&scope=bogus&scope=total&metric=req&window=hour&span=3"
	status, body := getUsage(t, base, "usage/series", q)
	if status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	checkGolden(t, "usage_series", []byte(body))
	for _, tc := range []struct {
		query string
		want  string // the series, as JSON
	}{
		{"scope=provider:mock&metric=attempt&window=hour", `[{"scope":"provider:mock","points":[3]}]`},
		{"scope=provider:mock&metric=fail&window=day&span=2", `[{"scope":"provider:mock","points":[0,0]}]`},
		{"scope=provmodel:mock/m1&metric=attempt&window=day", `[{"scope":"provmodel:mock/m1","points":[3]}]`},
		{"scope=model:mock/m1&metric=cost&window=month", `[{"scope":"model:mock/m1","points":[150]}]`},
		{"scope=model:mock/m1&metric=tokin&window=day&span=2&offset=1", `[{"scope":"model:mock/m1","points":[0,0]}]`},
		{"scope=group:m1only&scope=total&metric=rej&window=day", `[{"scope":"group:m1only","points":[1]},{"scope":"total","points":[1]}]`},
		{"scope=user:bob&metric=rej&window=hour", `[{"scope":"user:bob","points":[1]}]`}, // a refusal counts in every scope of the request
		{"scope=total&metric=cost&window=day&span=2", `[{"scope":"total","points":[0,150]}]`},
		// Every scope unknown: nothing to read, no metric check.
		{"scope=bogus&scope=provider:nope&metric=attempt&window=hour", `[]`},
	} {
		status, body := getUsage(t, base, "usage/series", tc.query)
		var ans struct {
			Series json.RawMessage `json:"series"`
		}
		if err := json.Unmarshal([]byte(body), &ans); status != 200 || err != nil || string(ans.Series) != tc.want {
			t.Errorf("%s: %d %s, want series %s", tc.query, status, body, tc.want)
		}
	}
	_, body = getUsage(t, base, "usage/series", "scope=total&metric=req&window=day&span=2&offset=3")
	if !strings.Contains(body, `"span":2,"offset":3,"buckets":["20261125","20261126"]`) || !strings.Contains(body, `"unknown":[]`) {
		t.Fatalf("span/offset echo: %s", body)
	}
}

func TestAdminUsageSeriesInvalid(t *testing.T) {
	up := newFakeUpstream(t, okJSON(chatOK))
	_, base, _ := statsGateway(t, historyConfig(up.URL, ``))
	var many []string
	for i := 0; i < maxSeriesScopes+1; i++ {
		many = append(many, "scope=user:u"+strconv.Itoa(i))
	}
	for _, tc := range []struct {
		query string
		param string // named in the 400's message
	}{
		{"metric=req&window=day", "scope"},
		{strings.Join(many, "&") + "&metric=req&window=day", "scope"},
		{"scope=total&window=day", "metric"},
		{"scope=total&metric=bogus&window=day", "metric"},
		{"scope=total&metric=req&metric=cost&window=day", "metric"},
		{"scope=user:alice&metric=attempt&window=day", "unknown metric for scope kind user"},
		{"scope=group:all&metric=chit&window=day", "unknown metric for scope kind group"},
		{"scope=model:mock/m1&metric=cmiss&window=day", "unknown metric for scope kind model"},
		{"scope=model:mock/m1&metric=rej&window=day", "unknown metric for scope kind model"},
		{"scope=provider:mock&metric=req&window=day", "unknown metric for scope kind provider"},
		{"scope=provmodel:mock/m1&metric=timeout&window=day", "unknown metric for scope kind provmodel"},
		// Mixed kinds: every recognized scope's kind must keep the metric,
		// whether or not the scope exists.
		{"scope=total&scope=provider:mock&metric=req&window=day", "unknown metric for scope kind provider"},
		{"scope=total&scope=provider:nope&metric=req&window=day", "unknown metric for scope kind provider"},
		{"scope=total&scope=user:alice&metric=cmiss&window=day", "unknown metric for scope kind user"},
		// A metric its kind keeps, in a window it does not.
		{"scope=user:alice&metric=rej&window=month", "window"},
		{"scope=total&metric=chit&window=month", "window"},
		{"scope=model:mock/m1&metric=chit&window=hour", "window"},
		{"scope=model:mock/m1&metric=r402&window=hour", "window"},
		{"scope=provider:mock&metric=attempt&window=month", "window"},
		{"scope=total&metric=req", "window"},
		{"scope=total&metric=req&window=min", "window"},
		{"scope=total&metric=req&window=day&span=0", "span"},
		{"scope=total&metric=req&window=day&span=36", "span"},
		{"scope=total&metric=req&window=hour&offset=48", "offset"},
		{"scope=total&metric=req&window=hour&span=40&offset=9", "offset"},
		{"scope=total&metric=req&window=day&offset=-1", "offset"},
	} {
		status, body := getUsage(t, base, "usage/series", tc.query)
		if status != 400 || !strings.Contains(body, tc.param) {
			t.Errorf("%.80s: %d %s, want 400 naming %s", tc.query, status, body, tc.param)
		}
	}
}

// The key-count estimate is refused before any store read (the store
// here is down: a read would be a 503); with a read due, a down store is
// a 503.
func TestAdminUsageSeriesStore(t *testing.T) {
	up := newFakeUpstream(t, okJSON(chatOK))
	_, down, _ := statsGateway(t, historyConfig(up.URL, `"redis": {"address": "127.0.0.1:1"}, "adminMaxKeysPerRequest": 100,`))
	three := "scope=total&scope=user:alice&scope=group:all&metric=req&window=hour"
	status, body := getUsage(t, down, "usage/series", three+"&span=34")
	if status != 400 || !strings.Contains(body, "too_many_keys") || !strings.Contains(body, "102") {
		t.Fatalf("102 keys over 100: %d %s", status, body)
	}
	status, body = getUsage(t, down, "usage/series", three+"&span=33")
	if status != 503 || !strings.Contains(body, "store_unavailable") {
		t.Fatalf("99 keys, store down: %d %s", status, body)
	}
	// Unknown scopes read nothing and count no key.
	status, body = getUsage(t, down, "usage/series", "scope=user:nobody&metric=req&window=hour&span=48")
	if status != 200 || !strings.Contains(body, `"unknown":["user:nobody"]`) || !strings.Contains(body, `"series":[]`) {
		t.Fatalf("only unknown scopes: %d %s", status, body)
	}
}

// Every key a series read builds is one of stats.go's written families,
// in a window that family is written in.
func TestSeriesKeysWritten(t *testing.T) {
	written := map[string][]string{ // kind:metric -> windows written
		"scope:req": anyWindow, "scope:tokin": anyWindow, "scope:tokout": anyWindow, "scope:cost": anyWindow,
		"scope:rej":  {"hour", "day", "month"},
		"total:chit": hourDayWindow, "total:cmiss": hourDayWindow, "total:csave": hourDayWindow, "total:r402": hourDayWindow,
		"model:req": anyWindow, "model:tokin": anyWindow, "model:tokout": anyWindow, "model:cost": anyWindow,
		"model:r402": hourDayWindow, "model:chit": {"day"}, "model:csave": {"day"},
		"provider:attempt": hourDayWindow, "provider:fail": hourDayWindow, "provider:timeout": hourDayWindow, "provider:fover": hourDayWindow,
		"provmodel:attempt": hourDayWindow, "provmodel:fail": hourDayWindow,
	}
	prefixes := map[string]string{"user": "llmgw:user:a%3Ab:", "group": "llmgw:group:g:", "total": "llmgw:total:all:",
		"model": "llmgw:model:p/m%3A1:", "provider": "llmgw:prov:p:", "provmodel": "llmgw:provmodel:p/m%3A1:"}
	ids := map[string]string{"user": "a:b", "group": "g", "total": "all", "model": "p/m:1", "provider": "p", "provmodel": "p/m:1"}
	for kind, set := range seriesMetrics {
		for _, m := range set {
			family := kind
			if kind == "user" || kind == "group" || kind == "total" && written["total:"+m.name] == nil {
				family = "scope"
			}
			for _, w := range m.windows {
				if !hasString(written[family+":"+m.name], w) {
					t.Errorf("series reads %s %s in window %s, which stats.go does not write", kind, m.name, w)
				}
				got := statsKey(seriesPrefix(kind, ids[kind]), m.name, windowByName(w), "B")
				if want := prefixes[kind] + m.name + ":" + w + ":B"; got != want {
					t.Errorf("key %s, want %s", got, want)
				}
			}
		}
	}
}
