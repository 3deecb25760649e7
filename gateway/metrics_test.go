package gateway

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// metricsConfig is failoverConfig with metrics on, alice an admin with a
// requestsPerMinute limit of 3, and bob not an admin.
func metricsConfig(aURL, bURL, metrics string) string {
	return `{"failover": {"enabled": true}, "routing": {"breaker": {"failureThreshold": 100}},
  "pricing": {"a/m1": {"inputPerM": 2, "outputPerM": 4}, "b/m1": {"inputPerM": 2, "outputPerM": 4}},
  "metrics": ` + metrics + `,
  "providers": {
    "a": {"type": "openai", "baseUrl": "` + aURL + `", "apiKey": "ka", "models": ["m1"]},
    "b": {"type": "openai", "baseUrl": "` + bURL + `", "apiKey": "kb", "models": ["m1"]}},
  "groups": {"all": {}},
  "users": {"inline": [{"name": "alice", "group": "all", "admin": true, "apiKey": "` + testAliceKey + `", "limits": {"requestsPerMinute": 3}},
    {"name": "bob", "group": "all", "apiKey": "` + testBobKey + `"}]}
}`
}

func scrape(t *testing.T, base, path, key string) (int, http.Header, string) {
	t.Helper()
	return do(t, "GET", base+path, key, "")
}

func TestMetricsSeries(t *testing.T) {
	var aStatus, bStatus atomic.Int64
	aStatus.Store(200)
	bStatus.Store(200)
	a, _ := statusUpstream(t, &aStatus)
	b, _ := statusUpstream(t, &bStatus)
	g, srv, _ := serveTestGateway(t, metricsConfig(a.URL, b.URL, `{"enabled": true, "modelLabel": true}`), nil, nil)
	chat := func() int {
		status, _, _ := do(t, "POST", srv.URL+"/v1/chat/completions", testAliceKey, chatReq)
		return status
	}
	if s := chat(); s != 200 { // success on a
		t.Fatalf("status %d", s)
	}
	aStatus.Store(500)
	if s := chat(); s != 200 { // failover a -> b
		t.Fatalf("failover status %d", s)
	}
	if s := chat(); s != 200 {
		t.Fatalf("status %d", s)
	}
	if s := chat(); s != 429 { // the 4th request this minute
		t.Fatalf("want 429, got %d", s)
	}
	g.limiter.async.flush()
	status, h, body := scrape(t, srv.URL, "/metrics", testAliceKey)
	if status != 200 || h.Get("Content-Type") != "text/plain; version=0.0.4; charset=utf-8" {
		t.Fatalf("scrape: %d %q\n%s", status, h.Get("Content-Type"), body)
	}
	for _, want := range []string{
		"# TYPE llmgateway_requests_total counter\n",
		`llmgateway_requests_total{scope_kind="user",scope_id="alice"} 4` + "\n",
		`llmgateway_requests_total{scope_kind="user",scope_id="bob"} 0` + "\n",
		`llmgateway_requests_total{scope_kind="group",scope_id="all"} 4` + "\n",
		`llmgateway_requests_total{scope_kind="total",scope_id="all"} 4` + "\n",
		`llmgateway_tokens_total{scope_kind="user",scope_id="alice",direction="input"} 33` + "\n",
		`llmgateway_tokens_total{scope_kind="user",scope_id="alice",direction="output"} 21` + "\n",
		`llmgateway_cost_micro_usd_total{scope_kind="user",scope_id="alice"} 150` + "\n",
		`llmgateway_budget_consumed_ratio{scope_kind="user",scope_id="alice",budget="requestsPerMinute"} 1.3333333333333333` + "\n",
		`llmgateway_provider_attempts_total{provider="a"} 3` + "\n",
		`llmgateway_provider_failures_total{provider="a"} 2` + "\n",
		`llmgateway_provider_attempts_total{provider="b"} 2` + "\n",
		`llmgateway_provider_model_attempts_total{provider="a",model="m1"} 3` + "\n",
		`llmgateway_provider_model_failures_total{provider="b",model="m1"} 0` + "\n",
		`llmgateway_provider_healthy{provider="a"} 1` + "\n",
		`llmgateway_rate_limit_rejections_total{scope_kind="user",scope_id="alice"} 1` + "\n",
		`llmgateway_rate_limit_rejections_total{scope_kind="total",scope_id="all"} 1` + "\n",
		`llmgateway_failovers_total{provider="a"} 2` + "\n",
		`llmgateway_request_duration_seconds_count{route="chat/completions",provider="a",status_class="2xx"} 1` + "\n",
		`llmgateway_request_duration_seconds_count{route="chat/completions",provider="b",status_class="2xx"} 2` + "\n",
		`llmgateway_request_duration_seconds_bucket{route="chat/completions",provider="b",status_class="2xx",le="+Inf"} 2` + "\n",
		`llmgateway_request_duration_seconds_count{route="chat/completions",provider="a",status_class="4xx"} 1` + "\n",
		`llmgateway_time_to_first_byte_seconds_count{route="chat/completions",provider="b",status_class="2xx"} 2` + "\n",
		`llmgateway_gateway_overhead_seconds_count{route="chat/completions",provider="b",status_class="2xx"} 2` + "\n",
		"llmgateway_requests_in_flight 0\n",
		`llmgateway_cache_requests_total{result="hit"} 0` + "\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("missing %q in\n%s", want, body)
		}
	}
}

func TestMetricsStream(t *testing.T) {
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n")
	})
	_, srv, _ := serveTestGateway(t, metricsConfig(up.URL, up.URL, `{"enabled": true}`), nil, nil)
	status, _, _ := do(t, "POST", srv.URL+"/v1/chat/completions", testAliceKey, `{"model":"m1","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if status != 200 {
		t.Fatalf("stream status %d", status)
	}
	_, _, body := scrape(t, srv.URL, "/metrics", testAliceKey)
	for _, want := range []string{
		`llmgateway_tokens_total{scope_kind="user",scope_id="alice",direction="output"} 2` + "\n",
		`llmgateway_time_to_first_byte_seconds_count{route="chat/completions",provider="a",status_class="2xx"} 1` + "\n",
		`llmgateway_gateway_overhead_seconds_count{route="chat/completions",provider="a",status_class="2xx"} 1` + "\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("missing %q in\n%s", want, body)
		}
	}
	if strings.Contains(body, "provider_model_") {
		t.Error("model families without modelLabel")
	}
}

func TestMetricsAccess(t *testing.T) {
	up := newFakeUpstream(t, okJSON(chatOK))
	_, srv, _ := serveTestGateway(t, metricsConfig(up.URL, up.URL, `{"enabled": true, "path": "/prom"}`), nil, nil)
	if s, _, _ := scrape(t, srv.URL, "/prom", ""); s != 401 {
		t.Errorf("no key: %d, want 401", s)
	}
	if s, _, _ := scrape(t, srv.URL, "/prom", testBobKey); s != 403 {
		t.Errorf("non-admin: %d, want 403", s)
	}
	if s, _, _ := scrape(t, srv.URL, "/prom", testAliceKey); s != 200 {
		t.Errorf("admin: %d, want 200", s)
	}
	if s, _, _ := scrape(t, srv.URL, "/metrics", testAliceKey); s != 404 {
		t.Errorf("default path moved: %d, want 404", s)
	}
	if s, _, _ := do(t, "POST", srv.URL+"/prom", testAliceKey, ""); s != 405 {
		t.Errorf("POST: %d, want 405", s)
	}
	// The peer (127.0.0.1) in allowedCIDRs: no key needed; a forwarded
	// header never counts.
	_, open, _ := serveTestGateway(t, metricsConfig(up.URL, up.URL, `{"enabled": true, "allowedCIDRs": ["127.0.0.0/8"]}`), nil, nil)
	if s, _, _ := scrape(t, open.URL, "/metrics", ""); s != 200 {
		t.Errorf("allowed peer: %d, want 200", s)
	}
	_, closed, _ := serveTestGateway(t, metricsConfig(up.URL, up.URL, `{"enabled": true, "allowedCIDRs": ["10.42.0.0/16"]}`), nil, nil)
	req, _ := http.NewRequest("GET", closed.URL+"/metrics", nil)
	req.Header.Set("X-Forwarded-For", "10.42.0.7")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("peer outside the CIDRs: %d, want 401", resp.StatusCode)
	}
}

func TestMetricsDisabled(t *testing.T) {
	up := newFakeUpstream(t, okJSON(chatOK))
	for _, m := range []string{`{"enabled": false}`, `null`} {
		_, srv, _ := serveTestGateway(t, metricsConfig(up.URL, up.URL, m), nil, nil)
		if s, _, _ := scrape(t, srv.URL, "/metrics", testAliceKey); s != 404 {
			t.Errorf("%s: %d, want 404", m, s)
		}
		next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(299) })
		cfg := strings.Replace(metricsConfig(up.URL, up.URL, m), `{"failover"`, `{"passthroughUnknown": true, "failover"`, 1)
		_, nsrv, _ := serveTestGateway(t, cfg, next, nil)
		if s, _, _ := scrape(t, nsrv.URL, "/metrics", testAliceKey); s != 299 {
			t.Errorf("%s with passthroughUnknown: %d, want next's 299", m, s)
		}
	}
}

func TestMetricsConfig(t *testing.T) {
	up := "http://127.0.0.1:1"
	for _, tc := range []struct{ metrics, err string }{
		{`{"enabled": true, "path": "metrics"}`, "metrics.path"},
		{`{"enabled": true, "allowedCIDRs": ["10.0.0.1"]}`, "metrics.allowedCIDRs[0]"},
		{`{"enabled": true, "alowedCIDRs": []}`, "alowedCIDRs"},
	} {
		_, err := newGatewayFromConfig(t, metricsConfig(up, up, tc.metrics))
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: err %v, want one naming %s", tc.metrics, err, tc.err)
		}
	}
	for _, tc := range []struct{ path, warn string }{
		{"/v1/chat/completions", "collides with a gateway route"},
		{"/a/metrics", "collides with a gateway route"},
		{"/admin/metrics", "reserved prefix /admin"},
		{"/metrics", ""},
	} {
		cfg, err := DecodeConfigJSON([]byte(metricsConfig(up, up, `{"enabled": true, "path": "`+tc.path+`"}`)))
		if err != nil {
			t.Fatal(err)
		}
		c, err := compileConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(c.warnings, "\n")
		if tc.warn == "" && strings.Contains(got, "metrics.path") || tc.warn != "" && !strings.Contains(got, tc.warn) {
			t.Errorf("%s: warnings %q, want %q", tc.path, got, tc.warn)
		}
	}
}

func TestMetricsLabelEscaping(t *testing.T) {
	mw := &metricsWriter{}
	mw.sample("x", []string{"model", "a\"b\\c\nd"}, "1")
	if got, want := mw.b.String(), `x{model="a\"b\\c\nd"} 1`+"\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// llmgateway_target_healthy: one sample per MCP server and agent whose
// state is known — 1 healthy, 0 unhealthy — and none while unknown
// (never observed, or failing below failureThreshold). The observations
// are recorded directly (observeTarget): the proxy and federation that
// record them in traffic are built on other branches.
func TestMetricsTargetHealth(t *testing.T) {
	up := newFakeUpstream(t, okJSON(chatOK))
	cfg := targetsConfig(up.URL, `"targetHealth": {"failureThreshold": 2},
  "mcpServers": {"files": {"url": "http://127.0.0.1:1/mcp"}, "docs": {"url": "http://127.0.0.1:1/docs"}, "idle": {"url": "http://127.0.0.1:1/idle"}},
  "agents": {"helper": {"url": "http://127.0.0.1:1/a2a"}, "sayer": {"url": "http://127.0.0.1:1/b"}},`)
	g, srv, _ := serveTestGateway(t, cfg, nil, nil)
	_, _, empty := scrape(t, srv.URL, "/metrics", testAliceKey)
	if !strings.Contains(empty, "# TYPE llmgateway_target_healthy gauge\n") || strings.Contains(empty, "llmgateway_target_healthy{") {
		t.Fatalf("before any observation:\n%s", empty)
	}
	g.observeTarget(g.target(targetMCP, "files"), true, "", time.Millisecond, "passive")
	docs := g.target(targetMCP, "docs")
	g.observeTarget(docs, false, "HTTP 503", time.Millisecond, "passive")
	g.observeTarget(docs, false, "HTTP 503", time.Millisecond, "probe")
	g.observeTarget(g.target(targetAgent, "helper"), true, "", time.Millisecond, "probe")
	sayer := g.target(targetAgent, "sayer")
	g.observeTarget(sayer, false, "connection refused", time.Millisecond, "passive") // below the threshold: unknown
	status, _, body := scrape(t, srv.URL, "/metrics", testAliceKey)
	if status != 200 {
		t.Fatalf("scrape: %d", status)
	}
	var got []string
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "llmgateway_target_healthy") {
			got = append(got, line)
		}
	}
	want := []string{
		`llmgateway_target_healthy{kind="mcp",name="docs"} 0`,
		`llmgateway_target_healthy{kind="mcp",name="files"} 1`,
		`llmgateway_target_healthy{kind="agent",name="helper"} 1`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("target_healthy samples:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
