package gateway

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// totalsRows is the "id:metric=value,..." list of a usage/totals answer.
func totalsRows(t *testing.T, body string) string {
	t.Helper()
	var ans adminTotalsAnswer
	if err := json.Unmarshal([]byte(body), &ans); err != nil || ans.Rows == nil || ans.Metrics == nil {
		t.Fatalf("usage/totals answer %s (%v)", body, err)
	}
	var out []string
	for _, r := range ans.Rows {
		var vals []string
		for _, m := range ans.Metrics {
			vals = append(vals, m+"="+itoa64(r.Values[m]))
		}
		out = append(out, r.ID+":"+strings.Join(vals, ","))
	}
	s := strings.Join(out, " ")
	if ans.Truncated {
		s += " (truncated)"
	}
	return s
}

func TestAdminUsageTotals(t *testing.T) {
	up := newFakeUpstream(t, okJSON(chatOK))
	g, base, done, clock := clockGateway(t, usageConfig(up.URL, `"userModel": true`, ``))
	sendTraffic(t, g, base, done, clock, usageTraffic())
	route := base + "/admin/api/usage/totals?"
	// The scopes' req counters count every admitted request, carol's 402
	// included; the model and user-model counters only answered ones.
	checkGolden(t, "usage_totals_user_day", []byte(getAdminJSON(t, route+"kind=user", 200)))
	checkGolden(t, "usage_totals_usermodel_month", []byte(getAdminJSON(t, route+"kind=usermodel&user=alice&window=month", 200)))
	for _, tc := range []struct{ query, want string }{
		{"kind=user&metrics=cost,req", "alice:cost=200,req=5 bob:cost=86,req=3 carol:cost=0,req=3"},
		{"kind=user&metrics=req&window=hour", "alice:req=5 carol:req=3 bob:req=2"},
		{"kind=user&metrics=req&window=hour&offset=1", "bob:req=1"},
		{"kind=user&metrics=req&window=day&span=2", "alice:req=5 carol:req=4 bob:req=3"},
		{"kind=user&metrics=req&window=month", "alice:req=5 carol:req=4 bob:req=3"},
		{"kind=user&metrics=req&group=team", "bob:req=3 carol:req=3"},
		{"kind=user&metrics=req&group=idle", ""},
		{"kind=user&metrics=req&limit=1", "alice:req=5 (truncated)"},
		{"kind=user&metrics=req&limit=3", "alice:req=5 bob:req=3 carol:req=3"},
		{"kind=group&metrics=req,tokout", "team:req=6,tokout=35 all:req=5,tokout=35"},
		{"kind=group&metrics=cost", "all:cost=200 team:cost=86"},
		{"kind=usermodel&user=bob&metrics=req,cost", "mock/m2:req=2,cost=36 mock/m1:req=1,cost=50"},
		{"kind=usermodel&user=bob&metrics=cost", "mock/m1:cost=50 mock/m2:cost=36"},
		{"kind=usermodel&user=carol&window=day&span=2&metrics=req", "mock/m3:req=2 mock/m2:req=1"},
		{"kind=usermodel&user=carol&window=day&offset=1&metrics=req", "mock/m2:req=1"},
		{"kind=modeluser&model=mock/m1", "alice:req=3,tokin=33,tokout=21,cost=150 bob:req=1,tokin=11,tokout=7,cost=50"},
		{"kind=modeluser&model=alt/z9&metrics=req", "alice:req=1"},
		{"kind=modeluser&model=alt/m1&offset=1&metrics=req", ""},
		// No targets configured: no rows, an array.
		{"kind=targetcaller", ""},
	} {
		if got := totalsRows(t, getAdminJSON(t, route+tc.query, 200)); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.query, got, tc.want)
		}
	}
}

// targetCallerTargets are usageConfig's extra keys for kind=targetcaller:
// MCP servers files and docs, agent helper.
const targetCallerTargets = `"mcpServers": {"files": {"url": "http://files.internal/mcp"}, "docs": {"url": "http://docs.internal/mcp"}},
  "agents": {"helper": {"url": "http://helper.internal"}},`

// kind=targetcaller: the per-target, per-caller request counters,
// driven here through countTargets (the proxy's and federation's
// counting call; those routes are built on other branches).
func TestAdminUsageTotalsTargetCaller(t *testing.T) {
	g, base, _, clock := clockGateway(t, usageConfig("http://127.0.0.1:1", ``, targetCallerTargets))
	files, docs, helper := g.target(targetMCP, "files"), g.target(targetMCP, "docs"), g.target(targetAgent, "helper")
	count := func(at time.Time, user string, n int, targets ...*targetRuntime) {
		clock.Store(at)
		for i := 0; i < n; i++ {
			g.countTargets(user, targets)
		}
	}
	// Today: alice files+docs ×3 (a federated tools/list attempts both),
	// bob files ×2, carol helper ×1; yesterday: bob docs ×4; a
	// departed user's calls are no active user's row.
	count(statsClock, "alice", 3, files, docs)
	count(statsClock, "bob", 2, files)
	count(statsClock, "carol", 1, helper)
	count(statsClock.AddDate(0, 0, -1), "bob", 4, docs)
	count(statsClock, "mallory", 5, files)
	clock.Store(statsClock)
	g.limiter.async.wait()
	route := base + "/admin/api/usage/totals?"
	checkGolden(t, "usage_totals_targetcaller_day", []byte(getAdminJSON(t, route+"kind=targetcaller", 200)))
	for _, tc := range []struct{ query, want string }{
		{"kind=targetcaller", "mcp/docs/alice:req=3 mcp/files/alice:req=3 mcp/files/bob:req=2 agent/helper/carol:req=1"},
		{"kind=targetcaller&span=2", "mcp/docs/bob:req=4 mcp/docs/alice:req=3 mcp/files/alice:req=3 mcp/files/bob:req=2 agent/helper/carol:req=1"},
		{"kind=targetcaller&window=month&metrics=req", "mcp/docs/bob:req=4 mcp/docs/alice:req=3 mcp/files/alice:req=3 mcp/files/bob:req=2 agent/helper/carol:req=1"},
		{"kind=targetcaller&offset=1", "mcp/docs/bob:req=4"},
		{"kind=targetcaller&target=mcp/files", "mcp/files/alice:req=3 mcp/files/bob:req=2"},
		{"kind=targetcaller&target=agent/helper&window=month", "agent/helper/carol:req=1"},
		{"kind=targetcaller&target=mcp/files&limit=1", "mcp/files/alice:req=3 (truncated)"},
		{"kind=targetcaller&limit=4", "mcp/docs/alice:req=3 mcp/files/alice:req=3 mcp/files/bob:req=2 agent/helper/carol:req=1"},
	} {
		if got := totalsRows(t, getAdminJSON(t, route+tc.query, 200)); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.query, got, tc.want)
		}
	}
	checkParamCases(t, route, []adminParamCase{
		{"kind=targetcaller&target=mcp/nothing", 404, "nothing"},
		{"kind=targetcaller&target=agent/files", 404, "files"},
		{"kind=targetcaller&target=mcp/helper", 404, "helper"},
	})

	// adminMaxKeysPerRequest caps the read: 3 targets × 3 users × 35
	// days is 315 keys, one target's 105, over 100; 30 days of one is 90.
	_, capped, _, _ := clockGateway(t, usageConfig("http://127.0.0.1:1", ``, targetCallerTargets+`"adminMaxKeysPerRequest": 100,`))
	for _, q := range []string{"kind=targetcaller&span=35", "kind=targetcaller&target=mcp/files&span=35"} {
		status, _, body := getAdmin(t, capped+"/admin/api/usage/totals?"+q, testAliceKey)
		if status != 400 || decodeEnvelope(t, body).Code != "too_many_keys" {
			t.Errorf("%s: %d %s", q, status, body)
		}
	}
	getAdminJSON(t, capped+"/admin/api/usage/totals?kind=targetcaller&target=mcp/files&span=30", 200)
	// The store down: 503, never zero rows.
	_, down, _, _ := clockGateway(t, usageConfig("http://127.0.0.1:1", ``, targetCallerTargets+`"redis": {"address": "127.0.0.1:1"},`))
	if status, _, body := getAdmin(t, down+"/admin/api/usage/totals?kind=targetcaller", testAliceKey); status != 503 || decodeEnvelope(t, body).Code != "store_unavailable" {
		t.Fatalf("store down: %d %s", status, body)
	}
}

func TestAdminUsageTotalsParams(t *testing.T) {
	up := newFakeUpstream(t, okJSON(chatOK))
	_, base, _, _ := clockGateway(t, usageConfig(up.URL, `"userModel": true`, ``))
	invalid := []adminParamCase{
		{"", 400, "kind"},
		{"kind=total", 400, "kind"},
		{"kind=user&kind=group", 400, "kind"},
		{"kind=user&window=min", 400, "window"},
		{"kind=usermodel&user=alice&window=hour", 400, "window"},
		{"kind=modeluser&model=mock/m1&window=hour", 400, "window"},
		{"kind=targetcaller&window=hour", 400, "window"},
		{"kind=user&span=0", 400, "span"},
		{"kind=user&span=36", 400, "span"},
		{"kind=user&window=hour&span=49", 400, "span"},
		{"kind=user&offset=35", 400, "offset"},
		{"kind=user&metrics=req,rej", 400, "metrics"},
		{"kind=user&metrics=req,req", 400, "metrics"},
		{"kind=user&metrics=req,", 400, "metrics"},
		{"kind=targetcaller&metrics=tokin", 400, "metrics"},
		{"kind=user&limit=0", 400, "limit"},
		{"kind=user&limit=1001", 400, "limit"},
		{"kind=group&group=team", 400, "group"},
		{"kind=user&user=alice", 400, "user"},
		{"kind=user&model=mock/m1", 400, "model"},
		{"kind=user&target=mcp/x", 400, "target"},
		{"kind=usermodel", 400, "user"},
		{"kind=modeluser", 400, "model"},
		{"kind=targetcaller&target=files", 400, "target"},
		{"kind=targetcaller&target=mcp/", 400, "target"},
		{"kind=user&group=nobody", 404, "nobody"},
		{"kind=usermodel&user=nobody", 404, "nobody"},
		{"kind=modeluser&model=m1", 404, "m1"},
		{"kind=modeluser&model=mock/m9", 404, "mock/m9"},
	}
	checkParamCases(t, base+"/admin/api/usage/totals?", invalid)

	// With admin.stats.userModel off the per-user-model kinds are a 404
	// — once every other parameter is valid: a bad one still says what
	// is wrong.
	_, off, _, _ := clockGateway(t, usageConfig(up.URL, ``, ``))
	const offMessage = "per-user-model statistics are not enabled (admin.stats.userModel)"
	for _, q := range []string{"kind=usermodel&user=alice", "kind=modeluser&model=mock/m1&window=month&metrics=cost"} {
		status, _, body := getAdmin(t, off+"/admin/api/usage/totals?"+q, testAliceKey)
		if d := decodeEnvelope(t, body); status != 404 || d.Message != offMessage {
			t.Errorf("userModel off, %s: %d %s", q, status, body)
		}
	}
	checkParamCases(t, off+"/admin/api/usage/totals?", []adminParamCase{
		{"kind=usermodel&user=alice&window=hour", 400, "window"},
		{"kind=usermodel", 400, "user"},
		{"kind=modeluser&model=mock/m1&metrics=x", 400, "metrics"},
		{"kind=usermodel&user=nobody", 404, "nobody"},
	})
	// The other kinds do not need it.
	getAdminJSON(t, off+"/admin/api/usage/totals?kind=user", 200)
}
