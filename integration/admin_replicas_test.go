package integration_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmgateway/llmgateway/integration/gwproc"
	"github.com/llmgateway/llmgateway/integration/mockupstream"
	"github.com/llmgateway/llmgateway/integration/redisproc"
)

// The admin API across two replicas of the real binary sharing one real
// redis-server: either replica answers the fleet's counters and both
// replicas' events; /metrics reports the same figures as the admin
// usage route; with Redis stopped the counter routes answer 503 and the
// events route falls back to the replica's own ring, degraded.

const (
	adAdminKey = "sk-admin-replicas-ada"
	adBobKey   = "sk-admin-replicas-bob"
	adCarolKey = "sk-admin-replicas-carol"
	adModel    = "gpt-4o-mini"
)

// adStart runs the binary with cfg under the instance name name.
func adStart(t *testing.T, bin, name string, cfg map[string]interface{}) *gwproc.Process {
	t.Helper()
	raw, err := json.Marshal(cfg)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "config.json")
	require.NoError(t, os.WriteFile(path, raw, 0o600))
	gw, err := gwproc.Start(gwproc.Config{
		Binary: bin,
		Args:   []string{"-config", path, "-listen", "{addr}", "-name", name},
		Env:    []string{"LLMGW_DRAIN_DELAY=0s", "LLMGW_SHUTDOWN_TIMEOUT=2s"},
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = gw.Stop()
		if t.Failed() {
			t.Logf("%s output:\n%s", name, gw.Logs())
		}
	})
	return gw
}

// adGet is an admin GET: status and body.
func adGet(t *testing.T, url string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	require.NoError(t, err)
	req.Header.Set("x-api-key", adAdminKey)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := readAll(resp)
	require.NoError(t, err)
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"), url)
	return resp.StatusCode, body
}

// adChat sends one chat request with key; the status.
func adChat(t *testing.T, base, key string) int {
	t.Helper()
	res := rlDo(rlHTTPClient(), "POST", base+"/v1/chat/completions", key, rlChatBody(adModel, "hello there", false, false))
	require.NoError(t, res.err)
	return res.status
}

type adUsageRow struct {
	Name               string `json:"name"`
	RequestsPerDay     int64  `json:"requestsPerDay"`
	RejectionsPerDay   int64  `json:"rejectionsPerDay"`
	TokensInPerDay     int64  `json:"tokensInPerDay"`
	TokensOutPerDay    int64  `json:"tokensOutPerDay"`
	CostPerDayMicroUsd int64  `json:"costPerDayMicroUsd"`
	LastSeen           int64  `json:"lastSeen"`
}

type adUsage struct {
	Users  []adUsageRow `json:"users"`
	Groups []adUsageRow `json:"groups"`
	Total  adUsageRow   `json:"total"`
}

type adEvent struct {
	Instance string `json:"instance"`
	User     string `json:"user"`
	Kind     string `json:"kind"`
	Replica  string `json:"replica"`
}

type adEvents struct {
	Events   []adEvent `json:"events"`
	Source   string    `json:"source"`
	Degraded bool      `json:"degraded"`
}

func adReadEvents(t *testing.T, base string) adEvents {
	t.Helper()
	status, body := adGet(t, base+"/admin/api/events?limit=200")
	require.Equal(t, 200, status, "%s", body)
	var ev adEvents
	require.NoError(t, json.Unmarshal(body, &ev), "%s", body)
	return ev
}

// adRateLimited is "instance/user" of every rate_limit event.
func adRateLimited(ev adEvents) map[string]bool {
	out := map[string]bool{}
	for _, e := range ev.Events {
		if e.Kind == "rate_limit" {
			out[e.Instance+"/"+e.User] = true
		}
	}
	return out
}

func TestAdminAcrossReplicas(t *testing.T) {
	rs := redisproc.Start(t)
	bin := buildGatewayBinary(t)
	mock := mockupstream.New(mockupstream.Options{Models: []string{adModel}, Chunks: 3})
	up := httptest.NewServer(mock)
	t.Cleanup(up.Close)
	oneRPM := map[string]interface{}{"requestsPerMinute": 1}
	cfg := map[string]interface{}{
		"providers": map[string]interface{}{"mock": map[string]interface{}{"type": "openai", "baseUrl": up.URL, "apiKey": "sk-up-replicas", "models": []string{adModel}}},
		"pricing":   map[string]interface{}{adModel: map[string]interface{}{"inputPerM": rlInputPerM, "outputPerM": rlOutputPerM}},
		"groups":    map[string]interface{}{"team": map[string]interface{}{}},
		"users": map[string]interface{}{"inline": []map[string]interface{}{
			{"name": "ada", "group": "team", "apiKey": adAdminKey, "admin": true},
			{"name": "bob", "group": "team", "apiKey": adBobKey, "limits": oneRPM},
			{"name": "carol", "group": "team", "apiKey": adCarolKey, "limits": oneRPM},
		}},
		"redis":   map[string]interface{}{"address": rs.Addr},
		"admin":   map[string]interface{}{"enabled": true, "stats": map[string]interface{}{"latency": true, "userModel": true}},
		"metrics": map[string]interface{}{"enabled": true},
	}
	a, b := adStart(t, bin, "gw-a", cfg), adStart(t, bin, "gw-b", cfg)

	// Traffic on both replicas: ada twice on a, once on b; bob's second
	// request (on a) and carol's (on b) are refused by their
	// one-a-minute limits, within one UTC minute.
	rlAwaitHeadroom(t, time.Minute, 20*time.Second)
	require.Equal(t, 200, adChat(t, a.URL, adAdminKey))
	require.Equal(t, 200, adChat(t, a.URL, adAdminKey))
	require.Equal(t, 200, adChat(t, b.URL, adAdminKey))
	require.Equal(t, 200, adChat(t, a.URL, adBobKey))
	require.Equal(t, 429, adChat(t, a.URL, adBobKey))
	require.Equal(t, 200, adChat(t, b.URL, adCarolKey))
	require.Equal(t, 429, adChat(t, b.URL, adCarolKey))

	// The usage route: the same fleet-wide figures through either replica.
	var usage [2]adUsage
	for i, gw := range []*gwproc.Process{a, b} {
		status, body := adGet(t, gw.URL+"/admin/api/usage")
		require.Equal(t, 200, status, "%s", body)
		require.NoError(t, json.Unmarshal(body, &usage[i]), "%s", body)
	}
	assert.Equal(t, usage[0], usage[1], "both replicas read the shared counters")
	rows := map[string]adUsageRow{}
	for _, r := range usage[0].Users {
		rows[r.Name] = r
	}
	assert.EqualValues(t, 3, rows["ada"].RequestsPerDay)
	assert.EqualValues(t, 2, rows["bob"].RequestsPerDay, "a refused request counts as a request (the limits count before they judge)")
	assert.EqualValues(t, 1, rows["bob"].RejectionsPerDay)
	assert.EqualValues(t, 1, rows["carol"].RejectionsPerDay)
	assert.EqualValues(t, 7, usage[0].Total.RequestsPerDay)
	assert.EqualValues(t, 2, usage[0].Total.RejectionsPerDay)
	assert.EqualValues(t, 5*rlChunks, usage[0].Total.TokensOutPerDay, "every reply has %d completion tokens", rlChunks)
	assert.Equal(t, rlCost(usage[0].Total.TokensInPerDay, usage[0].Total.TokensOutPerDay), usage[0].Total.CostPerDayMicroUsd)
	assert.Greater(t, rows["ada"].LastSeen, time.Now().Add(-time.Hour).Unix())

	// The model ranking, through b: the five answered requests.
	status, body := adGet(t, b.URL+"/admin/api/usage/models?metric=req&window=day")
	require.Equal(t, 200, status, "%s", body)
	assert.JSONEq(t, `{"metric":"req","window":"day","span":1,"offset":0,"models":[{"id":"mock/`+adModel+`","value":5}]}`, string(body))

	// /metrics on either replica reports what usage reports (max()
	// across replicas is the fleet's figure: they are the same series).
	for _, gw := range []*gwproc.Process{a, b} {
		fams := adScrape(t, gw.URL)
		for _, r := range append(usage[0].Users, usage[0].Total) {
			kind, id := "user", r.Name
			if r.Name == "" || r.Name == "total" || r.Name == "all" {
				kind, id = "total", "all"
			}
			assert.EqualValues(t, r.RequestsPerDay, adSample(t, fams, "llmgateway_requests_total", "scope_kind", kind, "scope_id", id), "requests of %s/%s", kind, id)
			assert.EqualValues(t, r.TokensInPerDay, adSample(t, fams, "llmgateway_tokens_total", "scope_kind", kind, "scope_id", id, "direction", "input"), "input tokens of %s/%s", kind, id)
			assert.EqualValues(t, r.TokensOutPerDay, adSample(t, fams, "llmgateway_tokens_total", "scope_kind", kind, "scope_id", id, "direction", "output"), "output tokens of %s/%s", kind, id)
			assert.EqualValues(t, r.CostPerDayMicroUsd, adSample(t, fams, "llmgateway_cost_micro_usd_total", "scope_kind", kind, "scope_id", id), "cost of %s/%s", kind, id)
		}
	}

	// The events: both replicas' refusals through either replica, from
	// the shared list (each replica mirrors in the background, about
	// once a second).
	want := map[string]bool{"gw-a/bob": true, "gw-b/carol": true}
	for _, gw := range []*gwproc.Process{a, b} {
		var ev adEvents
		deadline := time.Now().Add(15 * time.Second)
		for {
			ev = adReadEvents(t, gw.URL)
			if len(adRateLimited(ev)) == 2 || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		assert.Equal(t, want, adRateLimited(ev), "%+v", ev)
		assert.Equal(t, "redis", ev.Source)
		assert.False(t, ev.Degraded)
	}

	// Redis stopped: the counter routes refuse to read an outage as
	// zero; the events route answers from a's own ring, degraded.
	require.NoError(t, rs.Stop())
	for _, route := range []string{"usage", "usage/models?metric=req&window=day", "usage/history?scope=total&metric=req&window=day",
		"usage/series?scope=total&metric=req&window=day", "usage/totals?kind=user", "performance?kind=provider&window=day"} {
		status, body := adGet(t, a.URL+"/admin/api/"+route)
		assert.Equal(t, 503, status, "%s: %s", route, body)
		assert.Contains(t, string(body), "store_unavailable", route)
	}
	ev := adReadEvents(t, a.URL)
	assert.Equal(t, "replica", ev.Source)
	assert.True(t, ev.Degraded)
	assert.Equal(t, map[string]bool{"gw-a/bob": true}, adRateLimited(ev), "a's own ring holds a's events only")
}

// adScrape is the replica's /metrics, parsed by Prometheus's parser.
func adScrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	req, err := http.NewRequest("GET", base+"/metrics", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+adAdminKey)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return fams
}

// adSample is the value of family's sample with exactly the labels kv.
func adSample(t *testing.T, fams map[string]*dto.MetricFamily, family string, kv ...string) float64 {
	t.Helper()
	f := fams[family]
	require.NotNil(t, f, "family %s", family)
	for _, m := range f.Metric {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		match := len(labels) == len(kv)/2
		for i := 0; match && i+1 < len(kv); i += 2 {
			match = labels[kv[i]] == kv[i+1]
		}
		if !match {
			continue
		}
		if m.Counter != nil {
			return m.Counter.GetValue()
		}
		return m.Gauge.GetValue()
	}
	t.Fatalf("no %s sample %s", family, strings.Join(kv, ","))
	return 0
}
