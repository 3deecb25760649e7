package gateway

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// Panic containment (recover.go): a panic injected at a pipeline stage
// through panicProbe, on every route family, before and after the
// headers, in a background goroutine, with a reservation held, and
// http.ErrAbortHandler.

// armPanicProbe sets the probe, once, from the first test that needs
// it: it panics only for the requests that ask for it by their
// X-Request-Id ("panic-at-<stage>", "abort-at-<stage>"), so it stays set
// for the rest of the run. Each test arms it before it starts its
// servers (their goroutines then see the write); benchmarks never arm
// it, so they measure the nil checks production pays.
func armPanicProbe() {
	panicProbeOnce.Do(func() {
		panicProbe = func(stage, requestID string) {
			switch requestID {
			case "panic-at-" + stage:
				panic("probe: " + stage)
			case "abort-at-" + stage:
				panic(http.ErrAbortHandler)
			}
		}
	})
}

var panicProbeOnce sync.Once

const (
	panicCarolKey      = "sk-carol-budget-0001"
	panicBodySentinel  = "BODY-SENTINEL-5e1f"
	panicHeaderSecret  = "HEADER-SENTINEL-77aa"
	panicChatBody      = `{"model":"m1","messages":[{"role":"user","content":"` + panicBodySentinel + `"}]}`
	panicChatStream    = `{"model":"m1","stream":true,"messages":[{"role":"user","content":"` + panicBodySentinel + `"}]}`
	panicMessagesBody  = `{"model":"m1","max_tokens":10,"messages":[{"role":"user","content":"` + panicBodySentinel + `"}]}`
	panicMessagesSteam = `{"model":"m1","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"` + panicBodySentinel + `"}]}`
)

// panicUpstream serves the routes the panic tests reach: chat (JSON, or
// SSE when the body asks for a stream), an MCP server at /mcp and an
// agent card under /agent.
func panicUpstream(t *testing.T) *fakeUpstream {
	return newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case strings.HasPrefix(r.URL.Path, "/mcp"):
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
		case strings.HasPrefix(r.URL.Path, "/agent"):
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"name":"helper","url":"http://agent.example"}`)
		case strings.Contains(string(body), `"stream":true`):
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m1","choices":[{"index":0,"delta":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m1","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
		}
	})
}

// panicConfig is every route family over one upstream: the provider,
// admin, metrics, an MCP server and an agent; alice is an admin, carol
// has a 100-token daily budget.
func panicConfig(upstreamURL string) string {
	return `{
  "providers": {"mock": {"type": "openai", "baseUrl": "` + upstreamURL + `", "apiKey": "` + testProviderKey + `", "models": ["m1"]}},
  "groups": {"all": {}, "budget": {"limits": {"tokensPerDay": 100}}},
  "users": {"inline": [
    {"name": "alice", "group": "all", "apiKey": "` + testAliceKey + `", "admin": true},
    {"name": "carol", "group": "budget", "apiKey": "` + panicCarolKey + `"}
  ]},
  "admin": {"enabled": true},
  "metrics": {"enabled": true},
  "mcpServers": {"tools": {"url": "` + upstreamURL + `/mcp"}},
  "agents": {"helper": {"url": "` + upstreamURL + `/agent"}}
}`
}

// recordsByID collects the request records by request id.
type recordsByID struct {
	mu   sync.Mutex
	recs map[string]requestRecord
}

func (b *recordsByID) hook(r *requestRecord) {
	b.mu.Lock()
	b.recs[r.requestID] = *r
	b.mu.Unlock()
}

// wait returns id's record, waiting for it up to 5 s (it is emitted
// after the answer is written).
func (b *recordsByID) wait(t *testing.T, id string) requestRecord {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b.mu.Lock()
		r, ok := b.recs[id]
		b.mu.Unlock()
		if ok {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("no request record for %s within 5s", id)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func panicGateway(t *testing.T, setup func(*Gateway)) (string, *fakeUpstream, *recordsByID, *syncBuffer) {
	t.Helper()
	armPanicProbe()
	up := panicUpstream(t)
	recs := &recordsByID{recs: map[string]requestRecord{}}
	_, srv, logs := serveTestGateway(t, panicConfig(up.URL), nil, func(g *Gateway) {
		g.recordHook = recs.hook
		if setup != nil {
			setup(g)
		}
	})
	return srv.URL, up, recs, logs
}

// Envelope checks, one per wire format.
func expectOpenAIInternal(t *testing.T, body string) {
	t.Helper()
	d := decodeEnvelope(t, body)
	if d.Type != "api_error" || d.Code != "internal_error" {
		t.Fatalf("envelope %q/%q, want api_error/internal_error: %s", d.Type, d.Code, body)
	}
}

func expectAnthropicInternal(t *testing.T, body string) {
	t.Helper()
	if kind, _ := anthropicError(t, body); kind != "api_error" {
		t.Fatalf("Anthropic error type %q, want api_error: %s", kind, body)
	}
}

func expectOllamaInternal(t *testing.T, body string) {
	t.Helper()
	var e map[string]interface{}
	if err := json.Unmarshal([]byte(body), &e); err != nil || len(e) != 1 || !strings.Contains(asString(e["error"]), "gateway failed") {
		t.Fatalf("not Ollama's {\"error\"} envelope: %s", body)
	}
}

func expectRPCInternal(t *testing.T, body string) {
	t.Helper()
	var m struct {
		JSONRPC string           `json:"jsonrpc"`
		ID      *json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &m); err != nil || m.JSONRPC != "2.0" || m.Error.Code != -32603 || m.Error.Message == "" ||
		!strings.Contains(body, `"id":null`) {
		t.Fatalf("not a JSON-RPC internal error with a null id: %s", body)
	}
}

func asString(v interface{}) string {
	s, _ := v.(string)
	return s
}

// A panic before anything was written is a 500 in the route's own
// envelope, on every route family, from the dispatch ("trace": every
// answer starts there) and from inside a call ("count": the request was
// counted): the request's ids on it, nosniff, the connection closed; the
// log line names the request and has a stack but no header value and no
// body; a call's record says 500 internal_error; the upstream is never
// called; the gateway keeps serving.
func TestPanicAnswersInRouteEnvelope(t *testing.T) {
	base, up, recs, logs := panicGateway(t, nil)
	cases := []struct {
		name, method, path, body, stage string
		recorded                        bool // the route builds a call (a request record)
		check                           func(*testing.T, string)
	}{
		{"chat-dispatch", "POST", "/v1/chat/completions", panicChatBody, "trace", false, expectOpenAIInternal},
		{"chat", "POST", "/v1/chat/completions", panicChatBody, "count", true, expectOpenAIInternal},
		{"messages", "POST", "/v1/messages", panicMessagesBody, "count", true, expectAnthropicInternal},
		{"messages-dispatch", "POST", "/v1/messages", panicMessagesBody, "trace", false, expectAnthropicInternal},
		{"responses", "POST", "/v1/responses", `{"model":"m1","input":"` + panicBodySentinel + `"}`, "count", true, expectOpenAIInternal},
		{"ollama-chat", "POST", "/api/chat", `{"model":"m1","stream":false,"messages":[{"role":"user","content":"` + panicBodySentinel + `"}]}`, "count", true, expectOllamaInternal},
		{"ollama-tags", "GET", "/api/tags", "", "trace", false, expectOllamaInternal},
		{"models", "GET", "/v1/models", "", "trace", false, expectOpenAIInternal},
		{"mcp-federated", "POST", "/mcp", `{"jsonrpc":"2.0","id":7,"method":"ping"}`, "count", true, expectRPCInternal},
		{"mcp-federated-dispatch", "POST", "/mcp", `{"jsonrpc":"2.0","id":7,"method":"ping"}`, "trace", false, expectRPCInternal},
		{"mcp-proxy", "POST", "/mcp/tools/", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "count", true, expectOpenAIInternal},
		{"a2a-proxy", "GET", "/a2a/helper/.well-known/agent-card.json", "", "count", true, expectOpenAIInternal},
		{"registry", "GET", "/v1/mcp/servers", "", "trace", false, expectOpenAIInternal},
		{"admin", "GET", "/admin/api/overview", "", "trace", false, expectOpenAIInternal},
		{"metrics", "GET", "/metrics", "", "trace", false, expectOpenAIInternal},
		{"passthrough", "POST", "/mock/v1/chat/completions", panicChatBody, "count", true, expectOpenAIInternal},
		{"not-found", "GET", "/nowhere", "", "trace", false, expectOpenAIInternal},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			calls := up.count()
			id := "panic-at-" + tc.stage
			headers := bearer(testAliceKey)
			headers["X-Request-Id"] = id
			headers["X-Custom-Secret"] = panicHeaderSecret
			resp, body := send(t, base, testRequest{method: tc.method, path: tc.path, headers: headers, body: tc.body})
			if resp.StatusCode != http.StatusInternalServerError {
				t.Fatalf("status %d, want 500: %s", resp.StatusCode, body)
			}
			tc.check(t, body)
			if got := resp.Header.Get("X-Request-Id"); got != id {
				t.Errorf("X-Request-Id %q, want %q", got, id)
			}
			if resp.Header.Get("X-Content-Type-Options") != "nosniff" || !resp.Close {
				t.Errorf("nosniff %q, connection closed %v: want both", resp.Header.Get("X-Content-Type-Options"), resp.Close)
			}
			if up.count() != calls {
				t.Errorf("the upstream was called after the panic")
			}
			line := logLineWith(t, logs, "request_id="+id, "panic serving "+tc.method+" "+tc.path+": \"probe: "+tc.stage+"\"")
			if !strings.Contains(line, " stack=\"") {
				t.Errorf("the panic's log line has no stack: %s", line)
			}
			for _, secret := range []string{testAliceKey, panicHeaderSecret, panicBodySentinel} {
				if strings.Contains(logs.String(), secret) {
					t.Errorf("the log holds %q", secret)
				}
			}
			if tc.recorded {
				rec := recs.wait(t, id)
				if rec.statusCode != 500 || rec.errorCode != "internal_error" {
					t.Errorf("record status %d code %q, want 500 internal_error", rec.statusCode, rec.errorCode)
				}
				recs.mu.Lock()
				delete(recs.recs, id)
				recs.mu.Unlock()
			}
		})
		// The next case's log assertions must see only its own line.
		logs.mu.Lock()
		logs.buf.Reset()
		logs.mu.Unlock()
	}
	status, _, body := do(t, "POST", base+"/v1/chat/completions", testAliceKey, panicChatBody)
	if status != http.StatusOK || !strings.Contains(body, `"content":"hi"`) {
		t.Fatalf("after the panics: %d %s", status, body)
	}
}

// logLineWith returns the one log line holding every part.
func logLineWith(t *testing.T, logs *syncBuffer, parts ...string) string {
	t.Helper()
	var found []string
	lines := strings.Split(logs.String(), "\n")
	for i := 0; i < len(lines); i++ {
		all := true
		for j := 0; j < len(parts); j++ {
			all = all && strings.Contains(lines[i], parts[j])
		}
		if all {
			found = append(found, lines[i])
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d log lines hold %q, want 1; log:\n%s", len(found), parts, logs.String())
	}
	return found[0]
}

// A panic once a metered stream's headers are out ends the stream
// cleanly with the format's own error event (no terminator after it):
// OpenAI's data event, Anthropic's and Responses' named "error" events,
// Ollama's {"error"} line. The status stays the stream's 200, the record
// says internal_error.
func TestPanicEndsStartedStream(t *testing.T) {
	base, _, recs, logs := panicGateway(t, nil)
	cases := []struct {
		name, path, body string
		check            func(t *testing.T, body string)
	}{
		{"openai", "/v1/chat/completions", panicChatStream, func(t *testing.T, body string) {
			if d := sseErrorEvent(t, body); d.Code != "internal_error" || strings.Contains(body, "[DONE]") {
				t.Fatalf("stream %q", body)
			}
		}},
		{"anthropic", "/v1/messages", panicMessagesSteam, func(t *testing.T, body string) {
			i := strings.LastIndex(body, "event: error\ndata: ")
			if i < 0 || strings.Contains(body, "message_stop") {
				t.Fatalf("stream %q", body)
			}
			expectAnthropicInternal(t, strings.TrimSpace(body[i+len("event: error\ndata: "):]))
		}},
		{"responses", "/v1/responses", `{"model":"m1","stream":true,"input":"hi"}`, func(t *testing.T, body string) {
			if !strings.Contains(body, "event: error\ndata: ") || !strings.Contains(body, `"code":"internal_error"`) {
				t.Fatalf("stream %q", body)
			}
		}},
		{"ollama", "/api/chat", `{"model":"m1","messages":[{"role":"user","content":"hi"}]}`, func(t *testing.T, body string) {
			lines := strings.Split(strings.TrimSpace(body), "\n")
			expectOllamaInternal(t, lines[len(lines)-1])
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := "panic-at-stream"
			headers := bearer(testAliceKey)
			headers["X-Request-Id"] = id
			resp, body := send(t, base, testRequest{path: tc.path, headers: headers, body: tc.body})
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d, want the stream's 200: %s", resp.StatusCode, body)
			}
			tc.check(t, body)
			rec := recs.wait(t, id)
			if rec.statusCode != 200 || rec.errorCode != "internal_error" {
				t.Errorf("record status %d code %q, want 200 internal_error", rec.statusCode, rec.errorCode)
			}
			recs.mu.Lock()
			delete(recs.recs, id)
			recs.mu.Unlock()
			logLineWith(t, logs, "request_id="+id, "panic serving POST "+tc.path)
		})
		logs.mu.Lock()
		logs.buf.Reset()
		logs.mu.Unlock()
	}
}

// A panicked request that reserved budget releases its reservation: with
// a 100-token day and requests reserving 60 (the output cap) plus the
// prompt estimate, a leaked hold would refuse the next request.
func TestPanicReleasesReservation(t *testing.T) {
	base, _, recs, _ := panicGateway(t, nil)
	body := `{"model":"m1","max_tokens":60,"messages":[{"role":"user","content":"hi"}]}`
	headers := bearer(panicCarolKey)
	headers["X-Request-Id"] = "panic-at-count"
	resp, got := send(t, base, testRequest{path: "/v1/chat/completions", headers: headers, body: body})
	if resp.StatusCode != http.StatusInternalServerError {
		t.Fatalf("status %d: %s", resp.StatusCode, got)
	}
	if rec := recs.wait(t, "panic-at-count"); rec.usage.PromptTokens != 0 || rec.usage.CompletionTokens != 0 {
		t.Errorf("the panicked request was accounted %+v, want nothing", rec.usage)
	}
	status, _, got := do(t, "POST", base+"/v1/chat/completions", panicCarolKey, body)
	if status != http.StatusOK {
		t.Fatalf("after the panic: %d %s (the reservation leaked)", status, got)
	}
}

// A panic in a background goroutine a request started (the stream
// keepalive's timer) is logged with the request's id and ends only that
// work: the stream goes on and ends normally, the process serves on.
func TestPanicInBackgroundGoroutine(t *testing.T) {
	armPanicProbe()
	release := make(chan struct{})
	oai := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m1","choices":[{"index":0,"delta":{"role":"assistant","content":"he"},"finish_reason":null}]}` + "\n\n"))
		w.(http.Flusher).Flush()
		<-release
		_, _ = w.Write([]byte(`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m1","choices":[{"index":0,"delta":{"content":"llo"},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"))
	})
	_, srv, logs := serveTestGateway(t, messagesConfig("http://127.0.0.1:1", oai.URL, ""), nil, func(g *Gateway) {
		g.keepaliveEvery = 20 * time.Millisecond
	})
	req, _ := http.NewRequest("POST", srv.URL+"/v1/messages", strings.NewReader(`{"model":"gpt-x","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("x-api-key", testAliceKey)
	req.Header.Set("X-Request-Id", "panic-at-keepalive")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		close(release)
		t.Fatal(err)
	}
	defer resp.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "panic in background task stream keepalive: \"probe: keepalive\" request_id=panic-at-keepalive") {
		if time.Now().After(deadline) {
			close(release)
			t.Fatalf("no background panic logged within 10s; log:\n%s", logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(release)
	data, err := io.ReadAll(bufio.NewReader(resp.Body))
	if err != nil {
		t.Fatal(err)
	}
	body := string(data)
	if !strings.Contains(body, "event: message_start") || !strings.HasSuffix(strings.TrimSpace(body), `data: {"type":"message_stop"}`) {
		t.Fatalf("stream after the keepalive's panic: %q", body)
	}
	status, _, got := do(t, "GET", srv.URL+"/v1/models", testAliceKey, "")
	if status != http.StatusOK {
		t.Fatalf("after the background panic: %d %s", status, got)
	}
}

// http.ErrAbortHandler is net/http's abort, not a crash: not logged as a
// panic, the request still recorded, and raised again as the bare value
// (interpreted too), so net/http closes the connection without an answer.
func TestPanicAbortHandlerPropagates(t *testing.T) {
	base, _, recs, logs := panicGateway(t, nil)
	req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(panicChatBody))
	req.Header.Set("Authorization", "Bearer "+testAliceKey)
	req.Header.Set("X-Request-Id", "abort-at-count")
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("an aborted request got an answer: %d %s", resp.StatusCode, data)
	}
	recs.wait(t, "abort-at-count")
	if strings.Contains(logs.String(), "panic serving") {
		t.Fatalf("an abort was logged as a panic:\n%s", logs.String())
	}
	v := func() interface{} {
		var got interface{}
		func() {
			defer func() { got = recover() }()
			abortAnswer()
		}()
		return got
	}()
	if err, ok := v.(error); !ok || err != http.ErrAbortHandler {
		t.Fatalf("abortAnswer raised %T %v, want the bare http.ErrAbortHandler", v, v)
	}
}

// The recovered value is read the same compiled and interpreted (Yaegi
// wraps an interpreted panic's value in a reflect.Value).
func TestPanicValueUnwrapped(t *testing.T) {
	recovered := func(f func()) interface{} {
		var v interface{}
		func() {
			defer func() { v = unwrapPanic(recover()) }()
			f()
		}()
		return v
	}
	if v := recovered(func() { panic("boom") }); panicText(v) != `"boom"` {
		t.Errorf("string panic reads %s", panicText(v))
	}
	if v := recovered(func() { panic(http.ErrAbortHandler) }); !isAbortHandler(v) {
		t.Errorf("ErrAbortHandler not recognised: %v", v)
	}
	if v := recovered(func() { panic(strings.Repeat("x", 1000)) }); len(panicText(v)) > panicValueBytes+10 {
		t.Errorf("a long value is not bounded: %d bytes", len(panicText(v)))
	}
	if s := panicStack(); len(s) > 2*panicStackBytes {
		t.Errorf("stack of %d bytes", len(s))
	}
}
