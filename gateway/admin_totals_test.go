package gateway

import (
	"encoding/json"
	"strings"
	"testing"
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
		{"kind=targetcaller", ""},
		{"kind=targetcaller&target=mcp/files&window=month", ""},
	} {
		if got := totalsRows(t, getAdminJSON(t, route+tc.query, 200)); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.query, got, tc.want)
		}
	}
	// targetcaller's one metric; the rows are an array.
	if body := getAdminJSON(t, route+"kind=targetcaller&target=agent/helper", 200); body != `{"kind":"targetcaller","window":"day","span":1,"offset":0,"metrics":["req"],"rows":[],"truncated":false}` {
		t.Fatalf("targetcaller %s", body)
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
