package gateway

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPassthroughGeminiPathModel: a Gemini passthrough path names its
// model ("models/{id}:method"), and a model-restricted group is checked
// against it: m2anywhere may call m2 on gem, not m3.
func TestPassthroughGeminiPathModel(t *testing.T) {
	up := newFakeUpstream(t, okJSON(`{"candidates":[]}`))
	srv, _ := newTestGateway(t, passthroughConfig(up.URL, false), nil)
	body := `{"contents":[{"parts":[{"text":"hi"}]}]}`
	resp, got := send(t, srv.URL, testRequest{path: "/gem/v1beta/models/m2:generateContent", body: body, headers: bearer(ptMixedKey)})
	if resp.StatusCode != 200 || got != `{"candidates":[]}` {
		t.Fatalf("allowed path model: %d %s", resp.StatusCode, got)
	}
	resp, got = send(t, srv.URL, testRequest{path: "/gem/v1beta/models/m3:streamGenerateContent", body: body, headers: bearer(ptMixedKey)})
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(got, "model_not_allowed") {
		t.Fatalf("denied path model: %d %s", resp.StatusCode, got)
	}
	for _, tc := range []struct{ rest, want string }{
		{"v1beta/models/gemini-2.5-flash:generateContent", "gemini-2.5-flash"},
		{"v1/models/m2", "m2"},
		{"v1beta/tunedModels/x:generateContent", ""},
		{"v1beta/files", ""},
	} {
		if got := pathModel(&providerRuntime{kind: providerGemini}, tc.rest); got != tc.want {
			t.Errorf("pathModel(%q) = %q, want %q", tc.rest, got, tc.want)
		}
	}
	if got := pathModel(&providerRuntime{kind: providerOpenAI}, "v1/models/m2"); got != "" {
		t.Errorf("an openai path named a model: %q", got)
	}
}

// TestPassthroughCostBudgetNeedsAModel: a caller with a cost budget is
// never billed 0 on passthrough. A request that can spend tokens and
// names no model is refused (402); a GET passes; a Gemini call is priced
// by its path model and its cost lands in the caller's budget.
func TestPassthroughCostBudgetNeedsAModel(t *testing.T) {
	up := newFakeUpstream(t, okJSON(`{"candidates":[],"usageMetadata":{"promptTokenCount":1000000,"candidatesTokenCount":0}}`))
	cfg := `{
  "providers": {
    "oai": {"type": "openai", "baseUrl": "` + up.URL + `", "apiKey": "k1", "models": ["m1"]},
    "gem": {"type": "gemini", "baseUrl": "` + up.URL + `", "apiKey": "k2"}},
  "pricing": {"gem/gm": {"inputPerM": 2, "outputPerM": 4}},
  "groups": {"g": {"limits": {"costPerDayUSD": 100}}},
  "users": {"inline": [{"name": "alice", "group": "g", "apiKey": "` + testAliceKey + `"}]}
}`
	g, srv, _ := serveTestGateway(t, cfg, nil, nil)
	resp, got := send(t, srv.URL, testRequest{path: "/oai/v1/chat/completions", body: `{"messages":[]}`, headers: bearer(testAliceKey)})
	if resp.StatusCode != http.StatusPaymentRequired || !strings.Contains(got, "cannot be priced") {
		t.Fatalf("model-less POST: %d %s", resp.StatusCode, got)
	}
	up.mu.Lock()
	n := len(up.requests)
	up.mu.Unlock()
	if n != 0 {
		t.Fatalf("the refused request reached the upstream (%d requests)", n)
	}
	resp, got = send(t, srv.URL, testRequest{method: "GET", path: "/oai/v1/models", headers: bearer(testAliceKey)})
	if resp.StatusCode != 200 {
		t.Fatalf("GET: %d %s", resp.StatusCode, got)
	}
	resp, got = send(t, srv.URL, testRequest{path: "/gem/v1beta/models/gm:generateContent", body: `{"contents":[]}`, headers: bearer(testAliceKey)})
	if resp.StatusCode != 200 {
		t.Fatalf("Gemini path model: %d %s", resp.StatusCode, got)
	}
	b := bucketsAt(time.Now())
	key := scopePrefix("group", "g") + "cost:day:" + b.day
	_, vals, err := g.limiter.counters.Apply(context.Background(), nil, []string{key})
	if err != nil || vals[0] != 2000000 { // 1M prompt tokens at $2/M = $2 = 2,000,000 micro-USD
		t.Fatalf("cost accounted %v (%v), want 2000000 micro-USD", vals, err)
	}
	resp, got = send(t, srv.URL, testRequest{path: "/gem/v1beta/models/unpriced:generateContent", body: `{"contents":[]}`, headers: bearer(testAliceKey)})
	if resp.StatusCode != http.StatusPaymentRequired || !strings.Contains(got, "model_unpriced") {
		t.Fatalf("unpriced Gemini path model: %d %s", resp.StatusCode, got)
	}
}

// TestPassthroughBillingHeaders: headers that choose a billing account or
// paid features are dropped on passthrough unless the provider allows
// them; anthropic-beta passes on Anthropic's /v1/messages (Claude Code
// needs it) and nowhere else.
func TestPassthroughBillingHeaders(t *testing.T) {
	up := newFakeUpstream(t, okJSON(`{}`))
	cfg := `{
  "providers": {
    "oai": {"type": "openai", "baseUrl": "` + up.URL + `", "apiKey": "k1", "models": ["m1"]},
    "org": {"type": "openai", "baseUrl": "` + up.URL + `", "apiKey": "k2", "models": ["m1"], "passthroughHeaders": ["openai-organization"]},
    "ant": {"type": "anthropic", "baseUrl": "` + up.URL + `", "apiKey": "k3", "models": ["c"]}},
  "groups": {"g": {}},
  "users": {"inline": [{"name": "alice", "group": "g", "apiKey": "` + testAliceKey + `"}]}
}`
	srv, _ := newTestGateway(t, cfg, nil)
	headers := map[string]string{"Authorization": "Bearer " + testAliceKey, "OpenAI-Organization": "org-1", "OpenAI-Project": "proj-1", "Anthropic-Beta": "extra-feature"}
	cases := []struct {
		path string
		want map[string]string
	}{
		{"/oai/v1/chat/completions", map[string]string{"Openai-Organization": "", "Openai-Project": "", "Anthropic-Beta": ""}},
		{"/org/v1/chat/completions", map[string]string{"Openai-Organization": "org-1", "Openai-Project": "", "Anthropic-Beta": ""}},
		{"/ant/v1/messages", map[string]string{"Anthropic-Beta": "extra-feature", "Openai-Organization": ""}},
		{"/ant/v1/models", map[string]string{"Anthropic-Beta": ""}},
	}
	for _, tc := range cases {
		resp, body := send(t, srv.URL, testRequest{path: tc.path, body: `{"model":"m1"}`, headers: headers})
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", tc.path, resp.StatusCode, body)
		}
		got := up.last(t)
		for h, want := range tc.want {
			if v := got.header.Get(h); v != want {
				t.Errorf("%s: upstream %s = %q, want %q", tc.path, h, v, want)
			}
		}
	}
	if _, err := newGatewayFromConfig(t, strings.Replace(cfg, `["openai-organization"]`, `["X-Custom"]`, 1)); err == nil || !strings.Contains(err.Error(), "providers.org.passthroughHeaders[0]") {
		t.Fatalf("an unknown passthroughHeaders entry: %v", err)
	}
}

// TestPassthroughReservations: a budgeted caller's passthrough request
// reserves ceil(body bytes / 4) plus the output cap its body names in
// any API's spelling (read from the body, chunked or not), else 4096,
// and is refused when that does not fit; the reservation is settled to
// the usage the answer reports.
func TestPassthroughReservations(t *testing.T) {
	up := newFakeUpstream(t, okJSON(`{"id":"x","usage":{"input_tokens":10,"output_tokens":5}}`))
	cfg := `{
  "providers": {
    "ant": {"type": "anthropic", "baseUrl": "` + up.URL + `", "apiKey": "k1"},
    "gem": {"type": "gemini", "baseUrl": "` + up.URL + `", "apiKey": "k2"}},
  "groups": {"g": {"limits": {"tokensPerDay": 1000}}},
  "users": {"inline": [{"name": "alice", "group": "g", "apiKey": "` + testAliceKey + `"}]}
}`
	g, srv, _ := serveTestGateway(t, cfg, nil, nil)
	cases := []struct {
		name, path, body string
		chunked          bool
		cap              int // the output cap reserved; 0: admitted
	}{
		{"anthropic max_tokens over the budget", "/ant/v1/messages", `{"model":"claude-x","max_tokens":32000,"messages":[]}`, false, 32000},
		{"chunked body, cap read from it", "/ant/v1/messages", `{"model":"claude-x","max_tokens":32000,"messages":[]}`, true, 32000},
		{"gemini generationConfig", "/gem/v1beta/models/gm:generateContent", `{"contents":[],"generationConfig":{"maxOutputTokens":5000}}`, false, 5000},
		{"responses max_output_tokens", "/ant/v1/x", `{"model":"m","max_output_tokens":2000}`, false, 2000},
		{"no cap: 4096", "/ant/v1/messages", `{"model":"claude-x","messages":[]}`, false, 4096},
		{"a cap that fits", "/ant/v1/messages", `{"model":"claude-x","max_tokens":100,"messages":[]}`, false, 0},
		{"gemini cap that fits", "/gem/v1beta/models/gm:generateContent", `{"contents":[],"generation_config":{"max_output_tokens":50}}`, true, 0},
	}
	for _, tc := range cases {
		resp, got := send(t, srv.URL, testRequest{method: "POST", path: tc.path, body: tc.body, chunked: tc.chunked, headers: bearer(testAliceKey)})
		if tc.cap == 0 {
			if resp.StatusCode != 200 {
				t.Fatalf("%s: %d %s", tc.name, resp.StatusCode, got)
			}
			continue
		}
		want := "reserves up to " + strconv.Itoa((len(tc.body)+3)/4+tc.cap) + " "
		if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(got, want) {
			t.Fatalf("%s: %d %s, want 429 with %q", tc.name, resp.StatusCode, got, want)
		}
	}
	if up.count() != 2 {
		t.Fatalf("upstream saw %d requests, want 2", up.count())
	}
	// Both admitted requests settled to their 15 reported tokens.
	now := time.Now()
	_, used, _ := g.limiter.counters.Apply(context.Background(), nil, []string{
		counterKey("group", "g", "tokin", dayWindow, now), counterKey("group", "g", "tokout", dayWindow, now)})
	if used[0] != 20 || used[1] != 10 {
		t.Fatalf("accounted %v, want [20 10]", used)
	}
}
