package gateway

import (
	"encoding/json"
	"io"
	"net/http"
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

// /api/chat, /api/generate and /api/embed through an openai-type
// provider: the hub request the upstream gets, Ollama's answer shapes,
// NDJSON streams (stream defaults to true), errors as {"error":…}.
func TestOllamaRoutesThroughHub(t *testing.T) {
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case r.URL.Path == "/v1/embeddings":
			okJSON(`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,-0.25]}],"model":"m1","usage":{"prompt_tokens":3,"total_tokens":3}}`)(w, r)
		case strings.Contains(string(body), `"stream":true`):
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m1","choices":[{"index":0,"delta":{"role":"assistant","content":"he"},"finish_reason":null}]}`+"\n\n"+
				`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m1","choices":[{"index":0,"delta":{"content":"llo"},"finish_reason":"stop"}]}`+"\n\n"+
				`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m1","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`+"\n\ndata: [DONE]\n\n")
		default:
			okJSON(chatOK)(w, r)
		}
	})
	base, feed := recordingGateway(t, standardConfig(up.URL), nil)
	// Not streamed: one JSON object.
	resp, body := send(t, base, testRequest{method: "POST", path: "/api/chat", headers: bearer(testAliceKey),
		body: `{"model":"m1","stream":false,"messages":[{"role":"user","content":"hi"}],"options":{"num_predict":20}}`})
	var one struct {
		Model   string `json:"model"`
		Message struct {
			Role, Content string
		} `json:"message"`
		Done            bool   `json:"done"`
		DoneReason      string `json:"done_reason"`
		PromptEvalCount int64  `json:"prompt_eval_count"`
		EvalCount       int64  `json:"eval_count"`
	}
	if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &one) != nil || one.Model != "m1" || one.Message.Content != "hi" ||
		!one.Done || one.DoneReason != "stop" || one.PromptEvalCount != 11 || one.EvalCount != 7 {
		t.Fatalf("chat: %d %s", resp.StatusCode, body)
	}
	if up := up.last(t); up.path != "/v1/chat/completions" || !strings.Contains(string(up.body), `"max_tokens":20`) {
		t.Fatalf("upstream %s %s", up.path, up.body)
	}
	if rec := feed.next(t); rec.route != "ollama/chat" || rec.format != "ollama" || rec.usage.PromptTokens != 11 {
		t.Fatalf("record %+v", rec)
	}
	// Streamed by default: NDJSON lines, the last one done.
	resp, body = send(t, base, testRequest{method: "POST", path: "/api/generate", headers: bearer(testAliceKey),
		body: `{"model":"m1","prompt":"hi"}`})
	lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-ndjson" || len(lines) < 3 {
		t.Fatalf("generate stream: %d %q %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	text := ""
	for i, l := range lines {
		var ev struct {
			Response   string `json:"response"`
			Done       bool   `json:"done"`
			DoneReason string `json:"done_reason"`
			EvalCount  int64  `json:"eval_count"`
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("line %d %q: %v", i, l, err)
		}
		text += ev.Response
		if last := i == len(lines)-1; ev.Done != last || last && (ev.DoneReason != "stop" || ev.EvalCount != 2) {
			t.Fatalf("line %d %q", i, l)
		}
	}
	if text != "hello" {
		t.Fatalf("streamed text %q", text)
	}
	feed.next(t)
	// Embeddings.
	resp, body = send(t, base, testRequest{method: "POST", path: "/api/embed", headers: bearer(testAliceKey), body: `{"model":"m1","input":"hi"}`})
	if resp.StatusCode != 200 || !strings.Contains(body, `"embeddings":[[0.5,-0.25]]`) {
		t.Fatalf("embed: %d %s", resp.StatusCode, body)
	}
	feed.next(t)
	// Errors in Ollama's shape.
	for _, tc := range []struct {
		path, body, key string
		status          int
	}{
		{"/api/chat", `{"model":"m2","messages":[{"role":"user","content":"x"}]}`, testBobKey, 403},
		{"/api/chat", `{"model":"nope","messages":[{"role":"user","content":"x"}]}`, testAliceKey, 404},
		{"/api/chat", `{"model":"m1","messages":[{"role":"robot","content":"x"}]}`, testAliceKey, 400},
		{"/api/chat", `{"model":"m1","messages":[]}`, "sk-wrong", 401},
		{"/api/generate", `{"model":"m1","prompt":"x","suffix":"y"}`, testAliceKey, 400},
	} {
		resp, body = send(t, base, testRequest{method: "POST", path: tc.path, body: tc.body, headers: bearer(tc.key)})
		if resp.StatusCode != tc.status || !strings.HasPrefix(body, `{"error":"`) {
			t.Fatalf("%s %s: %d %s, want %d in Ollama's shape", tc.path, tc.body, resp.StatusCode, body, tc.status)
		}
		feed.next(t)
	}
}

// responsesApi "native": /v1/responses goes to the provider as it is
// (only the model rewritten) and its answer — whole or streamed — is
// relayed untouched; without it the provider gets chat completions.
func TestResponsesNative(t *testing.T) {
	const answer = `{"id":"resp_1","object":"response","status":"completed","model":"m1","output":[],"usage":{"input_tokens":3,"output_tokens":2,"total_tokens":5}}`
	const stream = "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0}\n\n" +
		"event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":1,\"response\":{\"id\":\"resp_1\",\"usage\":{\"input_tokens\":3,\"output_tokens\":2,\"total_tokens\":5}}}\n\n"
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/v1/responses" {
			http.Error(w, "not here", http.StatusTeapot)
			return
		}
		if strings.Contains(string(body), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, stream)
			return
		}
		okJSON(answer)(w, r)
	})
	cfg := strings.Replace(standardConfig(up.URL), `"models": ["m1", "m2"]`, `"models": ["m1", "m2"], "responsesApi": "native"`, 1)
	cfg = strings.Replace(cfg, `"groups"`, `"modelAliases": {"codex-model": "m1"}, "groups"`, 1)
	base, feed := recordingGateway(t, cfg, nil)
	resp, body := send(t, base, testRequest{method: "POST", path: "/v1/responses", headers: bearer(testAliceKey), body: `{"model":"codex-model","input":"hi"}`})
	if resp.StatusCode != 200 || body != answer {
		t.Fatalf("native: %d %s", resp.StatusCode, body)
	}
	if got := up.last(t); string(got.body) != `{"model":"m1","input":"hi"}` {
		t.Fatalf("upstream body %s", got.body)
	}
	if rec := feed.next(t); rec.route != "responses" || rec.format != "responses" || rec.usage.PromptTokens != 3 || rec.usage.CompletionTokens != 2 {
		t.Fatalf("record %+v", rec)
	}
	resp, body = send(t, base, testRequest{method: "POST", path: "/v1/responses", headers: bearer(testAliceKey), body: `{"model":"m1","input":"hi","stream":true}`})
	if resp.StatusCode != 200 || body != stream {
		t.Fatalf("native stream: %d %q", resp.StatusCode, body)
	}
	if rec := feed.next(t); rec.errorCode != "" || rec.usage.PromptTokens != 3 {
		t.Fatalf("stream record %+v", rec)
	}
}
