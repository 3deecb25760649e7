package gateway

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The Anthropic Messages routes against an anthropic-type provider
// (passthrough, the model rewritten both ways), their errors in the
// Anthropic envelope, count_tokens and the Anthropic model listing.

const (
	testAntKey = "sk-ant-prov-0001"
	// upstreamMessage holds a 20-digit integer in a tool_use input, which
	// must survive byte for byte.
	upstreamMessage = `{"id":"msg_01","type":"message","role":"assistant","model":"claude-up-1",` +
		`"content":[{"type":"tool_use","id":"toolu_1","name":"calc","input":{"n":12345678901234567890}}],` +
		`"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":21,"output_tokens":9,"cache_creation_input_tokens":0,"cache_read_input_tokens":4}}`
	upstreamMessageStream = "event: message_start\n" +
		`data: {"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-up-1","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":21,"output_tokens":1}}}` + "\n\n" +
		"event: ping\ndata: {\"type\": \"ping\"}\n\n" +
		"event: content_block_start\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n" +
		"event: content_block_delta\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"model \"claude-up-1\" says hi"}}` + "\n\n" +
		"event: content_block_stop\n" + `data: {"type":"content_block_stop","index":0}` + "\n\n" +
		"event: message_delta\n" + `data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":7}}` + "\n\n" +
		"event: message_stop\n" + `data: {"type":"message_stop"}` + "\n\n"
)

// messagesConfig serves anthropic provider "ant" (claude-up-1) and openai
// provider "oai" (gpt-x), with the alias claude-opus-5-5 → ant's model.
func messagesConfig(antURL, oaiURL, extra string) string {
	return `{` + extra + `
  "providers": {
    "ant": {"type": "anthropic", "baseUrl": "` + antURL + `", "apiKey": "` + testAntKey + `", "models": ["claude-up-1"]},
    "oai": {"type": "openai", "baseUrl": "` + oaiURL + `", "apiKey": "` + testProviderKey + `", "models": ["gpt-x"]}},
  "modelAliases": {"claude-opus-5-5": "ant/claude-up-1"},
  "groups": {"all": {}, "oaionly": {"providers": ["oai"]}},
  "users": {"inline": [
    {"name": "alice", "group": "all", "apiKey": "` + testAliceKey + `"},
    {"name": "bob", "group": "oaionly", "apiKey": "` + testBobKey + `"}]}
}`
}

func TestMessagesAnthropicPassthrough(t *testing.T) {
	ant := newFakeUpstream(t, okJSON(upstreamMessage))
	srv, _ := newTestGateway(t, messagesConfig(ant.URL, "http://127.0.0.1:1", ""), nil)
	body := `{"model":"claude-opus-5-5","max_tokens":100,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"calc","input_schema":{"type":"object"}}]}`
	resp, got := send(t, srv.URL, testRequest{method: "POST", path: "/v1/messages?beta=true", body: body, headers: map[string]string{
		"x-api-key": testAliceKey, "anthropic-version": "2023-06-01", "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14",
		"Cookie": "session=1", "X-Claude-Code-Session-Id": "s1"}})
	want := strings.Replace(upstreamMessage, `"model":"claude-up-1"`, `"model":"claude-opus-5-5"`, 1)
	if resp.StatusCode != 200 || got != want {
		t.Fatalf("passthrough: %d\n got %s\nwant %s", resp.StatusCode, got, want)
	}
	up := ant.last(t)
	if up.path != "/v1/messages" || up.query != "beta=true" {
		t.Fatalf("upstream path %s?%s", up.path, up.query)
	}
	if wantBody := strings.Replace(body, `"claude-opus-5-5"`, `"claude-up-1"`, 1); string(up.body) != wantBody {
		t.Fatalf("upstream body\n got %s\nwant %s", up.body, wantBody)
	}
	h := up.header
	if h.Get("X-Api-Key") != testAntKey || h.Get("Authorization") != "" || h.Get("Cookie") != "" ||
		h.Get("Anthropic-Version") != "2023-06-01" || h.Get("Anthropic-Beta") != "claude-code-20250219,interleaved-thinking-2025-05-14" {
		t.Fatalf("upstream headers %v", h)
	}
}

func TestMessagesAnthropicPassthroughStream(t *testing.T) {
	ant := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(upstreamMessageStream))
	})
	base, feed := recordingGateway(t, messagesConfig(ant.URL, "http://127.0.0.1:1", ""), nil)
	body := `{"model":"claude-opus-5-5","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	resp, got := send(t, base, testRequest{method: "POST", path: "/v1/messages", body: body, headers: map[string]string{
		"Authorization": "Bearer " + testAliceKey, "x-api-key": "sk-wrong", "anthropic-version": "2023-06-01"}})
	// Only message_start's model is the client's; the text that mentions
	// the upstream id is untouched.
	want := strings.Replace(upstreamMessageStream, `"model":"claude-up-1"`, `"model":"claude-opus-5-5"`, 1)
	if resp.StatusCode != 200 || got != want {
		t.Fatalf("stream (Bearer wins over x-api-key): %d\n got %q\nwant %q", resp.StatusCode, got, want)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("content type %q", ct)
	}
	rec := feed.next(t)
	if rec.route != "messages" || rec.format != "anthropic" || rec.provider != "ant" || rec.model != "claude-up-1" ||
		rec.requestedModel != "claude-opus-5-5" || !rec.stream || rec.statusCode != 200 || rec.errorCode != "" ||
		rec.usage.PromptTokens != 21 || rec.usage.CompletionTokens != 7 || !rec.usage.Reported {
		t.Fatalf("record %+v", rec)
	}
}

// anthropicError reads an Anthropic error envelope.
func anthropicError(t *testing.T, body string) (string, string) {
	t.Helper()
	var env struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &env); err != nil || env.Type != "error" || env.Error.Type == "" || env.Error.Message == "" {
		t.Fatalf("not an Anthropic error envelope: %s", body)
	}
	return env.Error.Type, env.Error.Message
}

func TestMessagesErrors(t *testing.T) {
	ant := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(529)
		_, _ = w.Write([]byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
	})
	srv, _ := newTestGateway(t, messagesConfig(ant.URL, "http://127.0.0.1:1", ""), nil)
	ok := map[string]string{"x-api-key": testAliceKey, "anthropic-version": "2023-06-01"}
	big := `{"model":"claude-opus-5-5","max_tokens":1,"messages":[{"role":"user","content":"` + strings.Repeat("x", 5<<20) + `"}]}`
	cases := []struct {
		name, body string
		headers    map[string]string
		status     int
		errType    string
	}{
		{"no key", `{"model":"claude-opus-5-5","messages":[]}`, map[string]string{"anthropic-version": "2023-06-01"}, 401, "authentication_error"},
		{"wrong key", `{"model":"claude-opus-5-5","messages":[]}`, map[string]string{"x-api-key": "sk-nope"}, 401, "authentication_error"},
		{"unknown model", `{"model":"claude-nope","max_tokens":1,"messages":[]}`, ok, 404, "not_found_error"},
		{"not allowed", `{"model":"claude-opus-5-5","max_tokens":1,"messages":[]}`, map[string]string{"x-api-key": testBobKey}, 403, "permission_error"},
		{"malformed", `{"model":`, ok, 400, "invalid_request_error"},
		{"too large", big, ok, 413, "request_too_large"},
		{"upstream overloaded", `{"model":"claude-opus-5-5","max_tokens":1,"messages":[]}`, ok, 529, "overloaded_error"},
	}
	for _, tc := range cases {
		resp, got := send(t, srv.URL, testRequest{method: "POST", path: "/v1/messages", body: tc.body, headers: tc.headers})
		if resp.StatusCode != tc.status {
			t.Fatalf("%s: %d %s, want %d", tc.name, resp.StatusCode, got, tc.status)
		}
		if typ, _ := anthropicError(t, got); typ != tc.errType {
			t.Fatalf("%s: error type %q, want %q (%s)", tc.name, typ, tc.errType, got)
		}
	}
	// A rate limit: 429 rate_limit_error with Retry-After.
	limited, _ := newTestGateway(t, strings.Replace(messagesConfig(ant.URL, "http://127.0.0.1:1", ""), `"all": {}`, `"all": {"limits": {"requestsPerMinute": 1}}`, 1), nil)
	for i := 0; i < 2; i++ {
		resp, got := send(t, limited.URL, testRequest{method: "POST", path: "/v1/messages", body: `{"model":"claude-opus-5-5","max_tokens":1,"messages":[]}`, headers: ok})
		if i == 1 {
			if typ, _ := anthropicError(t, got); resp.StatusCode != 429 || typ != "rate_limit_error" || resp.Header.Get("Retry-After") == "" {
				t.Fatalf("rate limited: %d %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), got)
			}
		}
	}
}

// count_tokens: an anthropic-type provider's own endpoint, the gateway's
// estimate for any other type; authorized like /v1/messages, never
// counted against limits.
func TestMessagesCountTokens(t *testing.T) {
	ant := newFakeUpstream(t, okJSON(`{"input_tokens":2095}`))
	oai := newFakeUpstream(t, okJSON(`{}`))
	cfg := strings.Replace(messagesConfig(ant.URL, oai.URL, ""), `"all": {}`, `"all": {"limits": {"requestsPerMinute": 1}}`, 1)
	srv, _ := newTestGateway(t, cfg, nil)
	hdr := map[string]string{"x-api-key": testAliceKey, "anthropic-version": "2023-06-01"}
	body := `{"model":"claude-opus-5-5","messages":[{"role":"user","content":"count me"}]}`
	for i := 0; i < 3; i++ {
		resp, got := send(t, srv.URL, testRequest{method: "POST", path: "/v1/messages/count_tokens", body: body, headers: hdr})
		if resp.StatusCode != 200 || got != `{"input_tokens":2095}` {
			t.Fatalf("anthropic count_tokens %d: %d %s", i, resp.StatusCode, got)
		}
	}
	if up := ant.last(t); up.path != "/v1/messages/count_tokens" || !strings.Contains(string(up.body), `"claude-up-1"`) {
		t.Fatalf("upstream %s %s", up.path, up.body)
	}
	local := `{"model":"gpt-x","messages":[{"role":"user","content":"count me too"}]}`
	resp, got := send(t, srv.URL, testRequest{method: "POST", path: "/v1/messages/count_tokens", body: local, headers: hdr})
	want := `{"input_tokens":` + strconv.Itoa((len(local)+3)/4) + `}`
	if resp.StatusCode != 200 || got != want {
		t.Fatalf("local count_tokens: %d %s, want %s", resp.StatusCode, got, want)
	}
	if oai.count() != 0 {
		t.Fatalf("the openai upstream was called %d times for count_tokens", oai.count())
	}
	// None of them counted: the one request a minute is still free.
	if resp, got := send(t, srv.URL, testRequest{method: "POST", path: "/v1/messages", body: `{"model":"claude-opus-5-5","max_tokens":1,"messages":[]}`, headers: hdr}); resp.StatusCode != 200 {
		t.Fatalf("a message after count_tokens: %d %s", resp.StatusCode, got)
	}
	if resp, got := send(t, srv.URL, testRequest{method: "POST", path: "/v1/messages/count_tokens", body: body, headers: map[string]string{"x-api-key": testBobKey}}); resp.StatusCode != 403 {
		t.Fatalf("count_tokens for a model the caller may not use: %d %s", resp.StatusCode, got)
	}
}

// GET /v1/models with anthropic-version answers in Anthropic's shape,
// filtered by grants, aliases included, paged.
func TestModelsAnthropicShape(t *testing.T) {
	srv, _ := newTestGateway(t, messagesConfig("http://127.0.0.1:1", "http://127.0.0.1:1", ""), nil)
	list := func(key, query string) (int, string) {
		resp, got := send(t, srv.URL, testRequest{method: "GET", path: "/v1/models" + query, headers: map[string]string{"x-api-key": key, "anthropic-version": "2023-06-01"}})
		return resp.StatusCode, got
	}
	status, got := list(testAliceKey, "")
	var page struct {
		Data []struct {
			Type        string `json:"type"`
			ID          string `json:"id"`
			DisplayName string `json:"display_name"`
			CreatedAt   string `json:"created_at"`
		} `json:"data"`
		HasMore bool    `json:"has_more"`
		FirstID *string `json:"first_id"`
		LastID  *string `json:"last_id"`
	}
	if status != 200 || json.Unmarshal([]byte(got), &page) != nil {
		t.Fatalf("anthropic listing: %d %s", status, got)
	}
	var ids []string
	for _, m := range page.Data {
		if m.Type != "model" || m.CreatedAt == "" || m.DisplayName == "" {
			t.Fatalf("entry %+v", m)
		}
		ids = append(ids, m.ID)
	}
	all := strings.Join(ids, ",")
	if !strings.Contains(all, "claude-opus-5-5") || !strings.Contains(all, "claude-up-1") || !strings.Contains(all, "gpt-x") ||
		page.HasMore || page.FirstID == nil || *page.FirstID != ids[0] || *page.LastID != ids[len(ids)-1] {
		t.Fatalf("listing %s", got)
	}
	// Paged by one: the second page starts after the first.
	_, one := list(testAliceKey, "?limit=1")
	_ = json.Unmarshal([]byte(one), &page)
	if len(page.Data) != 1 || page.Data[0].ID != ids[0] || !page.HasMore {
		t.Fatalf("limit=1: %s", one)
	}
	_, next := list(testAliceKey, "?limit=1&after_id="+ids[0])
	_ = json.Unmarshal([]byte(next), &page)
	if len(page.Data) != 1 || page.Data[0].ID != ids[1] {
		t.Fatalf("after_id: %s", next)
	}
	// Filtered by grants: bob reaches oai only.
	_, bobs := list(testBobKey, "")
	if strings.Contains(bobs, "claude") || !strings.Contains(bobs, "gpt-x") {
		t.Fatalf("bob's listing %s", bobs)
	}
	if status, got := list("sk-nope", ""); status != 401 {
		t.Fatalf("wrong key: %d %s", status, got)
	} else if typ, _ := anthropicError(t, got); typ != "authentication_error" {
		t.Fatalf("wrong key error %s", got)
	}
	// Without anthropic-version: the OpenAI shape, as before.
	resp, plain := send(t, srv.URL, testRequest{method: "GET", path: "/v1/models", headers: bearer(testAliceKey)})
	if resp.StatusCode != 200 || !strings.Contains(plain, `"object":"list"`) {
		t.Fatalf("openai listing: %d %s", resp.StatusCode, plain)
	}
}

// A translated stream whose upstream goes silent gets a ping every
// keepalive period (Claude Code gives up on a silent stream), and the
// pings never split an event.
func TestMessagesKeepalive(t *testing.T) {
	release := make(chan struct{})
	oai := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		_, _ = w.Write([]byte(`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{"role":"assistant","content":"he"},"finish_reason":null}]}` + "\n\n"))
		f.Flush()
		<-release
		_, _ = w.Write([]byte(`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{"content":"llo"},"finish_reason":"stop"}]}` + "\n\n" +
			`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}` + "\n\ndata: [DONE]\n\n"))
	})
	g, srv, _ := serveTestGateway(t, messagesConfig("http://127.0.0.1:1", oai.URL, ""), nil, func(g *Gateway) {
		g.keepaliveEvery = 30 * time.Millisecond
	})
	_ = g
	req, _ := http.NewRequest("POST", srv.URL+"/v1/messages", strings.NewReader(`{"model":"gpt-x","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("x-api-key", testAliceKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	var events []string
	pings := 0
	deadline := time.Now().Add(10 * time.Second)
	for {
		name, err := rd.ReadString('\n')
		if err != nil {
			break
		}
		data, _ := rd.ReadString('\n')
		blank, _ := rd.ReadString('\n')
		if !strings.HasPrefix(name, "event: ") || !strings.HasPrefix(data, "data: ") || blank != "\n" {
			t.Fatalf("a malformed event: %q %q %q", name, data, blank)
		}
		ev := strings.TrimSpace(strings.TrimPrefix(name, "event: "))
		events = append(events, ev)
		if ev == "ping" && strings.TrimSpace(data) == `data: {"type":"ping"}` {
			pings++
			if pings == 3 {
				close(release) // three keepalives during the silence: let the upstream finish
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the stream did not end")
		}
	}
	if pings < 3 {
		t.Fatalf("%d keepalive pings, want at least 3: %v", pings, events)
	}
	if events[0] != "message_start" || events[len(events)-1] != "message_stop" {
		t.Fatalf("events %v", events)
	}
}

// A Messages stream cut by the upstream after some text is accounted
// from what was streamed: relayed (the input tokens message_start
// reported, at least ceil(text bytes / 4) output tokens) and translated
// (estimated from the request and the streamed text).
func TestMessagesCutStreamAccounted(t *testing.T) {
	text := `"text":"` + strings.Repeat("x", 40) + `"`
	ant := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		cut := strings.Index(upstreamMessageStream, "event: content_block_stop")
		_, _ = w.Write([]byte(strings.Replace(upstreamMessageStream[:cut], `"text":"model \"claude-up-1\" says hi"`, text, 1)))
	})
	oai := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{"role":"assistant","content":"` +
			strings.Repeat("y", 40) + `"},"finish_reason":null}]}` + "\n\n"))
	})
	base, feed := recordingGateway(t, messagesConfig(ant.URL, oai.URL, ""), nil)
	for _, tc := range []struct {
		model      string
		prompt     int64
		completion int64
		reported   bool
	}{
		{"claude-opus-5-5", 21, 10, true}, // 21 from message_start; 40 bytes of text (message_start said 1)
		{"gpt-x", 0, 10, false},           // 40 bytes of text
	} {
		body := `{"model":"` + tc.model + `","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
		resp, got := send(t, base, testRequest{method: "POST", path: "/v1/messages", body: body, headers: map[string]string{"x-api-key": testAliceKey}})
		if resp.StatusCode != 200 || !strings.Contains(got, "event: error") {
			t.Fatalf("%s: a cut stream: %d %s", tc.model, resp.StatusCode, got)
		}
		rec := feed.next(t)
		prompt := tc.prompt
		if !tc.reported {
			prompt = int64((len(body) + 3) / 4)
		}
		if rec.usage.PromptTokens != prompt || rec.usage.CompletionTokens < tc.completion || rec.errorCode == "" {
			t.Fatalf("%s: accounted %+v (error %q), want %d prompt and at least %d completion tokens", tc.model, rec.usage, rec.errorCode, prompt, tc.completion)
		}
	}
}

// count_tokens is recorded: its route, the provider and model that
// answered it, and no upstream attempt when the gateway estimated.
func TestMessagesCountTokensRecorded(t *testing.T) {
	ant := newFakeUpstream(t, okJSON(`{"input_tokens":7}`))
	base, feed := recordingGateway(t, messagesConfig(ant.URL, "http://127.0.0.1:1", ""), nil)
	for _, tc := range []struct {
		model, provider, upstream string
		attempts                  int
	}{{"claude-opus-5-5", "ant", "claude-up-1", 1}, {"gpt-x", "oai", "gpt-x", 0}} {
		resp, got := send(t, base, testRequest{method: "POST", path: "/v1/messages/count_tokens",
			body: `{"model":"` + tc.model + `","messages":[{"role":"user","content":"hi"}]}`, headers: map[string]string{"x-api-key": testAliceKey}})
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", tc.model, resp.StatusCode, got)
		}
		rec := feed.next(t)
		if rec.route != "messages/count_tokens" || rec.format != "anthropic" || rec.user != "alice" || rec.provider != tc.provider ||
			rec.model != tc.upstream || rec.requestedModel != tc.model || rec.statusCode != 200 || rec.attempts != tc.attempts {
			t.Fatalf("%s: record %+v", tc.model, rec)
		}
	}
}
