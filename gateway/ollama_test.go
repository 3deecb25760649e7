package gateway

import (
	"encoding/json"
	"strings"
	"testing"
)

// The Ollama metadata routes: the root probe, version, ps, tags (the
// caller's models) and show (one model, with its context length when
// model metadata knows it).
func TestOllamaMetadataRoutes(t *testing.T) {
	cfg := strings.Replace(standardConfig("http://127.0.0.1:1"), `"groups"`, `"modelMeta": {"m1": {"contextTokens": 32768}}, "groups"`, 1)
	srv, _ := newTestGateway(t, cfg, nil)
	resp, body := send(t, srv.URL, testRequest{method: "HEAD", path: "/"})
	if resp.StatusCode != 200 || body != "" {
		t.Fatalf("HEAD /: %d %q", resp.StatusCode, body)
	}
	resp, body = send(t, srv.URL, testRequest{method: "GET", path: "/api/version"})
	if resp.StatusCode != 200 || strings.TrimSpace(body) != `{"version":"`+ollamaVersion+`"}` {
		t.Fatalf("version: %d %s", resp.StatusCode, body)
	}
	resp, body = send(t, srv.URL, testRequest{method: "GET", path: "/api/ps"})
	if resp.StatusCode != 200 || strings.TrimSpace(body) != `{"models":[]}` {
		t.Fatalf("ps: %d %s", resp.StatusCode, body)
	}
	// tags: bob may use m1 only.
	resp, body = send(t, srv.URL, testRequest{method: "GET", path: "/api/tags", headers: bearer(testBobKey)})
	var tags struct {
		Models []struct {
			Name          string `json:"name"`
			Model         string `json:"model"`
			ModifiedAt    string `json:"modified_at"`
			ContextLength int64  `json:"context_length"`
			Details       struct {
				Family string `json:"family"`
			} `json:"details"`
		} `json:"models"`
	}
	if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &tags) != nil || len(tags.Models) == 0 {
		t.Fatalf("tags: %d %s", resp.StatusCode, body)
	}
	for _, m := range tags.Models {
		if !strings.HasSuffix(m.Name, "m1") || m.Model != m.Name || m.ModifiedAt == "" || m.Details.Family != "mock" || m.ContextLength != 32768 {
			t.Fatalf("bob's tags entry %+v in %s", m, body)
		}
	}
	resp, body = send(t, srv.URL, testRequest{method: "GET", path: "/api/tags"})
	if resp.StatusCode != 401 || !strings.HasPrefix(body, `{"error":"`) {
		t.Fatalf("tags without a key: %d %s", resp.StatusCode, body)
	}
	// show
	resp, body = send(t, srv.URL, testRequest{method: "POST", path: "/api/show", body: `{"model":"m1"}`, headers: bearer(testAliceKey)})
	var show struct {
		ModelInfo    map[string]interface{} `json:"model_info"`
		Capabilities []string               `json:"capabilities"`
	}
	if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &show) != nil || show.ModelInfo["llmgw.context_length"] != float64(32768) ||
		show.ModelInfo["general.architecture"] != "llmgw" || len(show.Capabilities) == 0 {
		t.Fatalf("show: %d %s", resp.StatusCode, body)
	}
	for _, tc := range []struct {
		body, key string
		status    int
	}{
		{`{"model":"m2"}`, testBobKey, 403},
		{`{"model":"nope"}`, testAliceKey, 404},
		{`{}`, testAliceKey, 400},
	} {
		resp, body = send(t, srv.URL, testRequest{method: "POST", path: "/api/show", body: tc.body, headers: bearer(tc.key)})
		if resp.StatusCode != tc.status || !strings.HasPrefix(body, `{"error":"`) {
			t.Fatalf("show %s: %d %s, want %d in Ollama's error shape", tc.body, resp.StatusCode, body, tc.status)
		}
	}
}

// responsesApi: "native" only for openai providers; api and metrics are
// reserved provider names.
func TestResponsesAPIConfig(t *testing.T) {
	for _, tc := range []struct{ cfg, want string }{
		{`{"providers": {"a": {"type": "anthropic", "baseUrl": "http://x", "apiKey": "k", "responsesApi": "native"}}}`, `responsesApi: "native" needs an openai provider`},
		{`{"providers": {"o": {"type": "openai", "baseUrl": "http://x", "responsesApi": "sometimes"}}}`, `"sometimes" must be "convert" or "native"`},
		{`{"providers": {"api": {"type": "openai", "baseUrl": "http://x"}}}`, `api`},
		{`{"providers": {"metrics": {"type": "openai", "baseUrl": "http://x"}}}`, `metrics`},
	} {
		_, err := newGatewayFromConfig(t, tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%s: %v, want an error containing %q", tc.cfg, err, tc.want)
		}
	}
	if _, err := newGatewayFromConfig(t, `{"providers": {"o": {"type": "openai", "baseUrl": "http://x", "responsesApi": "native"}}}`); err != nil {
		t.Fatal(err)
	}
}
