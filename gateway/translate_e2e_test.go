package gateway

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// End-to-end through the pipeline: an OpenAI-shaped client request to
// anthropic- and gemini-type providers (fake upstreams replaying the
// transcripts in internal/translate/testdata), checking what reached the
// upstream and what reached the client.

func translatedConfig(upURL, extra string) string {
	return `{` + extra + `
  "providers": {
    "ant": {"type": "anthropic", "baseUrl": "` + upURL + `", "apiKey": "sk-ant-secret", "models": ["claude-x"]},
    "gem": {"type": "gemini", "baseUrl": "` + upURL + `", "apiKey": "gem-secret", "models": ["gemini-x", "imagen-x", "embed-x"]}},
  "modelAliases": {"smart": "ant/claude-x"},
  "groups": {"all": {}},
  "users": {"inline": [{"name": "alice", "group": "all", "apiKey": "` + testAliceKey + `"}]}
}`
}

func replayFile(t *testing.T, path, contentType string) http.HandlerFunc {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		_, _ = w.Write(data)
	}
}

func translatedUpstream(t *testing.T) *fakeUpstream {
	antStream := replayFile(t, "internal/translate/testdata/anthropic/text.sse", "text/event-stream")
	gemStream := replayFile(t, "internal/translate/testdata/gemini/text.sse", "text/event-stream")
	return newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1/messages" && strings.Contains(r.Header.Get("Accept"), "event-stream"):
			antStream(w, r)
		case r.URL.Path == "/v1/messages":
			okJSON(`{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"Hi there"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":2,"cache_read_input_tokens":10}}`)(w, r)
		case r.URL.Path == "/v1beta/models/gemini-x:streamGenerateContent":
			gemStream(w, r)
		case r.URL.Path == "/v1beta/models/gemini-x:generateContent":
			okJSON(`{"candidates":[{"content":{"role":"model","parts":[{"text":"Gem says hi"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":4,"candidatesTokenCount":3,"totalTokenCount":7}}`)(w, r)
		case r.URL.Path == "/v1beta/models/embed-x:batchEmbedContents":
			okJSON(`{"embeddings":[{"values":[0.1,-0.25]},{"values":[1e-7,2]}]}`)(w, r)
		case r.URL.Path == "/v1beta/models/imagen-x:predict":
			okJSON(`{"predictions":[{"bytesBase64Encoded":"aGk=","mimeType":"image/png"}]}`)(w, r)
		default:
			w.WriteHeader(404)
		}
	})
}

func TestTranslatedAnthropicChat(t *testing.T) {
	up := translatedUpstream(t)
	srv, ul, _ := serveWithUsage(t, translatedConfig(up.URL, ""))

	status, _, body := do(t, "POST", srv.URL+"/v1/chat/completions", testAliceKey,
		`{"model":"smart","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}]}`)
	if status != 200 {
		t.Fatalf("status %d body %s", status, body)
	}
	var resp struct {
		Object  string `json:"object"`
		Model   string `json:"model"`
		Choices []struct {
			Message      struct{ Content string } `json:"message"`
			FinishReason string                   `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Object != "chat.completion" || resp.Model != "smart" || len(resp.Choices) != 1 || resp.Choices[0].Message.Content != "Hi there" ||
		resp.Choices[0].FinishReason != "stop" || resp.Usage.PromptTokens != 13 || resp.Usage.CompletionTokens != 2 {
		t.Fatalf("client response %s", body)
	}
	last := up.last(t)
	if last.header.Get("X-Api-Key") != "sk-ant-secret" || last.header.Get("Anthropic-Version") == "" || last.header.Get("Authorization") != "" {
		t.Fatalf("upstream headers %v", last.header)
	}
	var sent map[string]json.RawMessage
	_ = json.Unmarshal(last.body, &sent)
	if string(sent["model"]) != `"claude-x"` || string(sent["system"]) != `"be brief"` || string(sent["max_tokens"]) != "4096" {
		t.Fatalf("upstream body %s", last.body)
	}

	// Streamed: chunks with the alias echoed, one [DONE], usage recorded.
	resp2, sbody := send(t, srv.URL, testRequest{method: "POST", path: "/v1/chat/completions", headers: bearer(testAliceKey),
		body: `{"model":"smart","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`})
	if resp2.StatusCode != 200 || !strings.HasPrefix(resp2.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream status %d type %q", resp2.StatusCode, resp2.Header.Get("Content-Type"))
	}
	if strings.Count(sbody, "data: [DONE]") != 1 || !strings.Contains(sbody, `"model":"smart"`) || strings.Contains(sbody, `"error"`) {
		t.Fatalf("stream body %s", sbody)
	}
	if !strings.Contains(up.last(t).header.Get("Accept"), "text/event-stream") {
		t.Fatal("stream request did not ask for an event stream")
	}
	recs := ul.waitFor(t, 2)
	if !recs[0].usage.Reported || recs[0].usage.PromptTokens != 13 || recs[1].usage.PromptTokens != 12 || recs[1].provider != "ant" || recs[1].model != "claude-x" {
		t.Fatalf("usage records %+v", recs)
	}
}

func TestTranslatedGemini(t *testing.T) {
	up := translatedUpstream(t)
	srv, ul, _ := serveWithUsage(t, translatedConfig(up.URL, ""))

	status, _, body := do(t, "POST", srv.URL+"/v1/chat/completions", testAliceKey, `{"model":"gem/gemini-x","messages":[{"role":"user","content":"hi"}]}`)
	if status != 200 || !strings.Contains(body, `"content":"Gem says hi"`) || !strings.Contains(body, `"model":"gem/gemini-x"`) {
		t.Fatalf("chat %d %s", status, body)
	}
	last := up.last(t)
	if last.header.Get("X-Goog-Api-Key") != "gem-secret" || last.header.Get("Authorization") != "" || strings.Contains(string(last.body), `"model"`) {
		t.Fatalf("upstream %v %s", last.header, last.body)
	}

	resp, sbody := send(t, srv.URL, testRequest{method: "POST", path: "/v1/chat/completions", headers: bearer(testAliceKey),
		body: `{"model":"gemini-x","stream":true,"messages":[{"role":"user","content":"hi"}]}`})
	if resp.StatusCode != 200 || strings.Count(sbody, "data: [DONE]") != 1 || strings.Contains(sbody, `"error"`) {
		t.Fatalf("stream %d %s", resp.StatusCode, sbody)
	}
	if q := up.last(t).query; q != "alt=sse" {
		t.Fatalf("stream query %q", q)
	}

	status, _, body = do(t, "POST", srv.URL+"/v1/embeddings", testAliceKey, `{"model":"embed-x","input":["a","b"]}`)
	if status != 200 || !strings.Contains(body, `"embedding":[0.1,-0.25]`) || !strings.Contains(body, `"embedding":[1e-7,2]`) {
		t.Fatalf("embeddings %d %s", status, body)
	}

	status, _, body = do(t, "POST", srv.URL+"/v1/images/generations", testAliceKey, `{"model":"imagen-x","prompt":"a cat","size":"1792x1024"}`)
	if status != 200 || !strings.Contains(body, `"b64_json":"aGk="`) {
		t.Fatalf("images %d %s", status, body)
	}
	if !strings.Contains(string(up.last(t).body), `"aspectRatio":"16:9"`) {
		t.Fatalf("imagen body %s", up.last(t).body)
	}
	status, _, body = do(t, "POST", srv.URL+"/v1/images/generations", testAliceKey, `{"model":"imagen-x","prompt":"a cat","size":"100x100"}`)
	if status != 400 {
		t.Fatalf("bad size: %d %s", status, body)
	}

	recs := ul.waitFor(t, 4)
	if u := recs[0].usage; u.PromptTokens != 4 || u.CompletionTokens != 3 {
		t.Fatalf("chat usage %+v", u)
	}
	if u := recs[2].usage; !u.Estimated || recs[2].route != "embeddings" {
		t.Fatalf("embeddings usage %+v", recs[2])
	}
	if u := recs[3].usage; u.PromptTokens != 0 || u.Estimated || recs[3].route != "images" {
		t.Fatalf("images usage %+v", recs[3])
	}
}

func TestTranslatedErrors(t *testing.T) {
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(529)
		_, _ = io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded sk-ant-secret"}}`)
	})
	srv, _, _ := serveWithUsage(t, translatedConfig(up.URL, retryExtra(1)))
	status, _, body := do(t, "POST", srv.URL+"/v1/chat/completions", testAliceKey, `{"model":"ant/claude-x","messages":[{"role":"user","content":"hi"}]}`)
	if status != 529 || !strings.Contains(body, "overloaded_error") || strings.Contains(body, "sk-ant-secret") {
		t.Fatalf("status %d body %s", status, body)
	}
	if up.count() != 2 {
		t.Fatalf("a 5xx from a translated provider is retried: calls %d", up.count())
	}
	// A parameter Anthropic cannot express is a 400 before any upstream call.
	status, _, body = do(t, "POST", srv.URL+"/v1/chat/completions", testAliceKey, `{"model":"ant/claude-x","n":2,"messages":[{"role":"user","content":"hi"}]}`)
	if status != 400 || !strings.Contains(body, `\"n\"`) && !strings.Contains(body, `"n"`) {
		t.Fatalf("n=2: %d %s", status, body)
	}
	if up.count() != 2 {
		t.Fatal("a refused translation reached the upstream")
	}
}

// A translated stream is incremental: the upstream holds its second half
// until the client has read the first translated content chunk. A gateway
// that buffered the stream would deadlock here (caught by the deadline).
func TestTranslatedStreamsAreIncremental(t *testing.T) {
	cases := []struct {
		name, model, first, rest, want string
	}{
		{"anthropic", "ant/claude-x",
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n" +
				"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
				"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"FIRST\"}}\n\n",
			"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
				"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n" +
				"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
			"FIRST"},
		{"gemini", "gem/gemini-x",
			"data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"FIRST\"}]},\"index\":0}]}\n\n",
			"data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\" second\"}]},\"finishReason\":\"STOP\",\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":1,\"candidatesTokenCount\":2}}\n\n",
			"FIRST"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clientGotFirst := make(chan struct{})
			up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, tc.first)
				w.(http.Flusher).Flush()
				select {
				case <-clientGotFirst:
				case <-r.Context().Done():
					return
				case <-time.After(10 * time.Second):
					return // the test fails below: the client never saw FIRST early
				}
				_, _ = io.WriteString(w, tc.rest)
			})
			srv, _, _ := serveWithUsage(t, translatedConfig(up.URL, ""))
			req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions",
				strings.NewReader(`{"model":"`+tc.model+`","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
			req.Header.Set("Authorization", "Bearer "+testAliceKey)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			rd := bufio.NewReader(resp.Body)
			var seen strings.Builder
			released := false
			for {
				line, err := rd.ReadString('\n')
				seen.WriteString(line)
				if !released && strings.Contains(line, tc.want) {
					close(clientGotFirst)
					released = true
				}
				if err != nil {
					break
				}
			}
			if !released {
				t.Fatalf("the first chunk never reached the client before the upstream finished: %s", seen.String())
			}
			if !strings.Contains(seen.String(), "data: [DONE]") || strings.Contains(seen.String(), `"error"`) {
				t.Fatalf("stream did not finish cleanly: %s", seen.String())
			}
		})
	}
}

// Gemini refuses a bad key with a 400 (API_KEY_INVALID): that is the
// gateway's credential failing, so the caller gets a 502, as for a 401.
func TestGeminiBadProviderKeyIs502(t *testing.T) {
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(400)
		_, _ = io.WriteString(w, `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID"}]}}`)
	})
	srv, _, _ := serveWithUsage(t, translatedConfig(up.URL, ""))
	resp, body := send(t, srv.URL, testRequest{method: "POST", path: "/v1/chat/completions", headers: bearer(testAliceKey),
		body: `{"model":"gem/gemini-x","messages":[{"role":"user","content":"hi"}]}`})
	expectEnvelope(t, resp, body, 502, "server_error", "upstream_error")
	// An ordinary 400 stays the caller's.
	up2 := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(400)
		_, _ = io.WriteString(w, `{"error":{"code":400,"message":"bad schema","status":"INVALID_ARGUMENT"}}`)
	})
	srv2, _, _ := serveWithUsage(t, translatedConfig(up2.URL, ""))
	resp, body = send(t, srv2.URL, testRequest{method: "POST", path: "/v1/chat/completions", headers: bearer(testAliceKey),
		body: `{"model":"gem/gemini-x","messages":[{"role":"user","content":"hi"}]}`})
	expectEnvelope(t, resp, body, 400, "invalid_request_error", "upstream_error")
}
