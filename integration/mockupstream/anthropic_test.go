package mockupstream

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

// namedEvent is one SSE event with its event: name.
type namedEvent struct {
	name, data string
}

// namedEvents splits an SSE body into events, requiring the exact
// "event: x\ndata: y\n\n" framing (or data-only events) with sep as the
// line end.
func namedEvents(t *testing.T, body []byte, sep string) []namedEvent {
	t.Helper()
	var out []namedEvent
	s := string(body)
	if !strings.HasSuffix(s, sep+sep) {
		t.Fatalf("stream does not end with a blank line: %q", s)
	}
	for _, ev := range strings.Split(strings.TrimSuffix(s, sep+sep), sep+sep) {
		var e namedEvent
		for _, line := range strings.Split(ev, sep) {
			switch {
			case strings.HasPrefix(line, "event: "):
				e.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				if e.data != "" {
					t.Fatalf("two data lines in %q", ev)
				}
				e.data = strings.TrimPrefix(line, "data: ")
			default:
				t.Fatalf("malformed SSE line %q in %q", line, ev)
			}
		}
		out = append(out, e)
	}
	return out
}

func anthHeaders(extra ...string) map[string]string {
	h := map[string]string{"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01", "content-type": "application/json"}
	for i := 0; i+1 < len(extra); i += 2 {
		h[extra[i]] = extra[i+1]
	}
	return h
}

const weatherTools = `"tools":[{"name":"get_weather","description":"Current weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]`

func TestAnthropicModels(t *testing.T) {
	_, ts := newServer(t, Options{AnthropicModels: []string{"claude-a", "claude-b", "claude-c"}})
	resp, body := do(t, "GET", ts.URL+"/v1/models", "", anthHeaders())
	want := `{"data":[` +
		`{"type":"model","id":"claude-a","display_name":"Mock claude-a","created_at":"2025-01-01T00:00:00Z"},` +
		`{"type":"model","id":"claude-b","display_name":"Mock claude-b","created_at":"2025-01-01T00:00:00Z"},` +
		`{"type":"model","id":"claude-c","display_name":"Mock claude-c","created_at":"2025-01-01T00:00:00Z"}],` +
		`"has_more":false,"first_id":"claude-a","last_id":"claude-c"}`
	if resp.StatusCode != 200 || string(body) != want {
		t.Fatalf("%d\n got %s\nwant %s", resp.StatusCode, body, want)
	}
	if resp.Header.Get("Request-Id") == "" {
		t.Fatal("no request-id header")
	}

	_, body = do(t, "GET", ts.URL+"/v1/models?limit=2", "", anthHeaders())
	var page struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
		HasMore bool   `json:"has_more"`
		FirstID string `json:"first_id"`
		LastID  string `json:"last_id"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 2 || !page.HasMore || page.FirstID != "claude-a" || page.LastID != "claude-b" {
		t.Fatalf("page 1: %s", body)
	}
	_, body = do(t, "GET", ts.URL+"/v1/models?limit=2&after_id=claude-b", "", anthHeaders())
	page.Data = nil
	if err := json.Unmarshal(body, &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 1 || page.HasMore || page.FirstID != "claude-c" {
		t.Fatalf("page 2: %s", body)
	}

	resp, body = do(t, "GET", ts.URL+"/v1/models/claude-b", "", anthHeaders())
	if resp.StatusCode != 200 || string(body) != `{"type":"model","id":"claude-b","display_name":"Mock claude-b","created_at":"2025-01-01T00:00:00Z"}` {
		t.Fatalf("one model: %d %s", resp.StatusCode, body)
	}
	resp, body = do(t, "GET", ts.URL+"/v1/models/nope", "", anthHeaders())
	if resp.StatusCode != 404 || !strings.Contains(string(body), `"type":"not_found_error"`) {
		t.Fatalf("unknown model: %d %s", resp.StatusCode, body)
	}
	// Without anthropic-version the same path is the OpenAI listing.
	_, body = do(t, "GET", ts.URL+"/v1/models", "", nil)
	if !strings.HasPrefix(string(body), `{"object":"list"`) {
		t.Fatalf("openai listing: %s", body)
	}
}

func TestAnthropicAuth(t *testing.T) {
	_, ts := newServer(t, Options{AnthropicAPIKey: "sk-ant-right"})
	body := `{"model":"claude-x","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
	cases := []struct {
		name    string
		headers map[string]string
		status  int
		want    string
	}{
		{"no key", map[string]string{"anthropic-version": "2023-06-01"}, 401,
			`{"type":"error","error":{"type":"authentication_error","message":"x-api-key header is required"},"request_id":"req_mock_1"}`},
		{"bearer is not enough", map[string]string{"Authorization": "Bearer sk-ant-right", "anthropic-version": "2023-06-01"}, 401,
			`{"type":"error","error":{"type":"authentication_error","message":"x-api-key header is required"},"request_id":"req_mock_2"}`},
		{"wrong key", map[string]string{"x-api-key": "sk-ant-wrong", "anthropic-version": "2023-06-01"}, 401,
			`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"},"request_id":"req_mock_3"}`},
		{"no version", map[string]string{"x-api-key": "sk-ant-right"}, 400,
			`{"type":"error","error":{"type":"invalid_request_error","message":"anthropic-version: header is required"},"request_id":"req_mock_4"}`},
	}
	for _, tc := range cases {
		resp, got := do(t, "POST", ts.URL+"/v1/messages", body, tc.headers)
		if resp.StatusCode != tc.status || string(got) != tc.want {
			t.Fatalf("%s: %d %s\nwant %d %s", tc.name, resp.StatusCode, got, tc.status, tc.want)
		}
	}
	resp, got := do(t, "POST", ts.URL+"/v1/messages", body, map[string]string{"x-api-key": "sk-ant-right", "anthropic-version": "2023-06-01"})
	if resp.StatusCode != 200 {
		t.Fatalf("right key: %d %s", resp.StatusCode, got)
	}
}

func TestAnthropicMessage(t *testing.T) {
	_, ts := newServer(t, Options{Chunks: 3})
	body := `{"model":"claude-x","max_tokens":1024,"system":"Be terse please.","messages":[{"role":"user","content":[{"type":"text","text":"say hi now"}]}]}`
	resp, got := do(t, "POST", ts.URL+"/v1/messages", body, anthHeaders())
	want := `{"id":"msg_mock_1","type":"message","role":"assistant","model":"claude-x",` +
		`"content":[{"type":"text","text":"Hello from mock part 1 part 2"}],"stop_reason":"end_turn","stop_sequence":null,` +
		`"usage":{"input_tokens":6,"cache_creation_input_tokens":2,"cache_read_input_tokens":3,"output_tokens":3}}`
	if resp.StatusCode != 200 || string(got) != want {
		t.Fatalf("%d\n got %s\nwant %s", resp.StatusCode, got, want)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("content-type %q", ct)
	}
}

func TestAnthropicStream(t *testing.T) {
	_, ts := newServer(t, Options{Chunks: 3})
	body := `{"model":"claude-x","max_tokens":1024,"stream":true,"messages":[{"role":"user","content":"hi there"}]}`
	resp, got := do(t, "POST", ts.URL+"/v1/messages", body, anthHeaders())
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("%d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := namedEvents(t, got, "\n")
	want := []namedEvent{
		{"message_start", `{"type":"message_start","message":{"id":"msg_mock_1","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":2,"cache_creation_input_tokens":2,"cache_read_input_tokens":3,"output_tokens":1}}}`},
		{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
		{"ping", `{"type": "ping"}`},
		{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello from mock"}}`},
		{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" part 1"}}`},
		{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" part 2"}}`},
		{"content_block_stop", `{"type":"content_block_stop","index":0}`},
		{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":3}}`},
		{"message_stop", `{"type":"message_stop"}`},
	}
	if !reflect.DeepEqual(events, want) {
		t.Fatalf("events\n got %q\nwant %q", events, want)
	}
	for _, e := range events {
		var typed struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal([]byte(e.data), &typed); err != nil || typed.Type != e.name {
			t.Fatalf("data.type %q != event %q (%v)", typed.Type, e.name, err)
		}
	}

	// CRLF framing on request.
	_, got = do(t, "POST", ts.URL+"/v1/messages", body, anthHeaders(HeaderSSECRLF, "1"))
	if n := len(namedEvents(t, got, "\r\n")); n != len(want) {
		t.Fatalf("crlf: %d events", n)
	}
}

func TestAnthropicToolCall(t *testing.T) {
	_, ts := newServer(t, Options{})
	body := `{"model":"claude-x","max_tokens":1024,"stream":true,` + weatherTools + `,"messages":[{"role":"user","content":"What is the weather in Paris?"}]}`
	_, got := do(t, "POST", ts.URL+"/v1/messages", body, anthHeaders())
	events := namedEvents(t, got, "\n")
	var names []string
	var partial strings.Builder
	for _, e := range events {
		names = append(names, e.name)
		var d struct {
			Index        int `json:"index"`
			ContentBlock struct {
				Type, ID, Name string
				Input          json.RawMessage
			} `json:"content_block"`
			Delta struct {
				Type        string  `json:"type"`
				PartialJSON *string `json:"partial_json"`
				StopReason  string  `json:"stop_reason"`
			} `json:"delta"`
		}
		if err := json.Unmarshal([]byte(e.data), &d); err != nil {
			t.Fatal(err)
		}
		if e.name == "content_block_start" && d.Index == 1 {
			if d.ContentBlock.Type != "tool_use" || d.ContentBlock.ID != "toolu_mock_1" || d.ContentBlock.Name != "get_weather" || string(d.ContentBlock.Input) != "{}" {
				t.Fatalf("tool_use start %s", e.data)
			}
		}
		if d.Delta.Type == "input_json_delta" {
			if d.Index != 1 || d.Delta.PartialJSON == nil {
				t.Fatalf("bad input_json_delta %s", e.data)
			}
			partial.WriteString(*d.Delta.PartialJSON)
		}
		if e.name == "message_delta" && (d.Delta.StopReason != "tool_use" || !strings.Contains(e.data, `"output_tokens":17`)) {
			t.Fatalf("message_delta %s", e.data)
		}
	}
	wantNames := []string{"message_start", "content_block_start", "ping", "content_block_delta", "content_block_stop", "content_block_start"}
	for range toolArgumentPieces {
		wantNames = append(wantNames, "content_block_delta")
	}
	wantNames = append(wantNames, "content_block_stop", "message_delta", "message_stop")
	if !reflect.DeepEqual(names, wantNames) {
		t.Fatalf("event order\n got %v\nwant %v", names, wantNames)
	}
	if partial.String() != ToolArguments() || ToolArguments() != `{"city": "Paris", "unit": "celsius"}` {
		t.Fatalf("partial json %q", partial.String())
	}
	if !strings.Contains(events[3].data, `"text":"`+ToolPreamble+`"`) {
		t.Fatalf("preamble %s", events[3].data)
	}

	// Non-streaming.
	nonStream := strings.Replace(body, `"stream":true,`, "", 1)
	_, got = do(t, "POST", ts.URL+"/v1/messages", nonStream, anthHeaders())
	if !strings.Contains(string(got), `"content":[{"type":"text","text":"Let me check the weather."},{"type":"tool_use","id":"toolu_mock_2","name":"get_weather","input":{"city":"Paris","unit":"celsius"}}],"stop_reason":"tool_use"`) {
		t.Fatalf("non-streamed tool call: %s", got)
	}

	// No "weather": text, unless forced by header; tool_choice none wins.
	plain := `{"model":"claude-x","max_tokens":1024,` + weatherTools + `,"messages":[{"role":"user","content":"hello"}]}`
	_, got = do(t, "POST", ts.URL+"/v1/messages", plain, anthHeaders())
	if !strings.Contains(string(got), `"stop_reason":"end_turn"`) {
		t.Fatalf("plain: %s", got)
	}
	_, got = do(t, "POST", ts.URL+"/v1/messages", plain, anthHeaders(HeaderToolCall, "1"))
	if !strings.Contains(string(got), `"stop_reason":"tool_use"`) {
		t.Fatalf("forced: %s", got)
	}
	none := strings.Replace(nonStream, `"max_tokens":1024,`, `"max_tokens":1024,"tool_choice":{"type":"none"},`, 1)
	_, got = do(t, "POST", ts.URL+"/v1/messages", none, anthHeaders())
	if !strings.Contains(string(got), `"stop_reason":"end_turn"`) {
		t.Fatalf("tool_choice none: %s", got)
	}

	// The follow-up turn with the tool result gets a text answer.
	followUp := `{"model":"claude-x","max_tokens":1024,` + weatherTools + `,"messages":[` +
		`{"role":"user","content":"What is the weather in Paris?"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"18 C and sunny"}]}]}`
	resp, got := do(t, "POST", ts.URL+"/v1/messages", followUp, anthHeaders())
	if resp.StatusCode != 200 || !strings.Contains(string(got), `"stop_reason":"end_turn"`) {
		t.Fatalf("follow-up: %d %s", resp.StatusCode, got)
	}
}

func TestAnthropicLimits(t *testing.T) {
	_, ts := newServer(t, Options{Chunks: 4})
	_, got := do(t, "POST", ts.URL+"/v1/messages", `{"model":"c","max_tokens":2,"messages":[{"role":"user","content":"hi"}]}`, anthHeaders())
	if !strings.Contains(string(got), `"text":"Hello from mock part 1"}],"stop_reason":"max_tokens"`) || !strings.Contains(string(got), `"output_tokens":2`) {
		t.Fatalf("max_tokens: %s", got)
	}
	_, got = do(t, "POST", ts.URL+"/v1/messages", `{"model":"c","max_tokens":100,"stop_sequences":["rt 2"],"messages":[{"role":"user","content":"hi"}]}`, anthHeaders())
	if !strings.Contains(string(got), `"text":"Hello from mock part 1 pa"}],"stop_reason":"stop_sequence","stop_sequence":"rt 2"`) {
		t.Fatalf("stop_sequence: %s", got)
	}
	_, got = do(t, "POST", ts.URL+"/v1/messages", `{"model":"c","max_tokens":100,"stream":true,"stop_sequences":["rt 2"],"messages":[{"role":"user","content":"hi"}]}`, anthHeaders())
	if !strings.Contains(string(got), `"delta":{"stop_reason":"stop_sequence","stop_sequence":"rt 2"},"usage":{"output_tokens":3}`) {
		t.Fatalf("streamed stop_sequence: %s", got)
	}
}

func TestAnthropicBadRequests(t *testing.T) {
	_, ts := newServer(t, Options{StrictModels: true, AnthropicModels: []string{"c"}})
	cases := []struct {
		name, body, contains string
		status               int
	}{
		{"no max_tokens", `{"model":"c","messages":[{"role":"user","content":"x"}]}`, "max_tokens: Field required", 400},
		{"no model", `{"max_tokens":5,"messages":[{"role":"user","content":"x"}]}`, "model: Field required", 400},
		{"no messages", `{"model":"c","max_tokens":5,"messages":[]}`, "at least one message", 400},
		{"system role", `{"model":"c","max_tokens":5,"messages":[{"role":"system","content":"be nice"},{"role":"user","content":"x"}]}`, "messages.0.role", 400},
		{"openai field", `{"model":"c","max_tokens":5,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"x"}]}`, "stream_options: Extra inputs are not permitted", 400},
		{"openai tools", `{"model":"c","max_tokens":5,"tools":[{"type":"function","function":{"name":"f","parameters":{}}}],"messages":[{"role":"user","content":"x"}]}`, "tools.0: Input tag 'function'", 400},
		{"openai tools named", `{"model":"c","max_tokens":5,"tools":[{"name":"f","parameters":{"type":"object"}}],"messages":[{"role":"user","content":"x"}]}`, "tools.0.custom.input_schema: Field required", 400},
		{"empty text block", `{"model":"c","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":""}]}]}`, "text content blocks must be non-empty", 400},
		{"empty content", `{"model":"c","max_tokens":5,"messages":[{"role":"user","content":""}]}`, "non-empty content", 400},
		{"temperature", `{"model":"c","max_tokens":5,"temperature":1.5,"messages":[{"role":"user","content":"x"}]}`, "temperature", 400},
		{"tool_use without result", `{"model":"c","max_tokens":5,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]},{"role":"user","content":"y"}]}`, "`tool_use` ids were found without `tool_result`", 400},
		{"stray tool_result", `{"model":"c","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t9","content":"x"}]}]}`, "unexpected `tool_use_id`", 400},
		{"string input", `{"model":"c","max_tokens":5,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":"{}"}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"x"}]}]}`, "valid dictionary", 400},
		{"unknown block", `{"model":"c","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`, "image_url", 400},
		{"strict model", `{"model":"nope","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`, "not_found_error", 404},
		{"prefill ok", `{"model":"c","max_tokens":5,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":""}]}`, "", 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, got := do(t, "POST", ts.URL+"/v1/messages", tc.body, anthHeaders())
			if resp.StatusCode != tc.status || !strings.Contains(string(got), tc.contains) {
				t.Fatalf("%d %s\nwant %d containing %q", resp.StatusCode, got, tc.status, tc.contains)
			}
			if tc.status != 200 && !strings.HasPrefix(string(got), `{"type":"error","error":{"type":"`) {
				t.Fatalf("not an Anthropic envelope: %s", got)
			}
		})
	}
}

func TestAnthropicInjected(t *testing.T) {
	_, ts := newServer(t, Options{Chunks: 3})
	body := `{"model":"c","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"x"}]}`
	resp, got := do(t, "POST", ts.URL+"/v1/messages", body, anthHeaders(HeaderStatus, "529", HeaderRetryAfter, "7"))
	if resp.StatusCode != 529 || resp.Header.Get("Retry-After") != "7" ||
		!strings.HasPrefix(string(got), `{"type":"error","error":{"type":"overloaded_error","message":"mock: injected status 529"}`) {
		t.Fatalf("status: %d %s", resp.StatusCode, got)
	}
	resp, got = do(t, "POST", ts.URL+"/v1/messages", body, anthHeaders(HeaderStatus, "429"))
	if resp.StatusCode != 429 || !strings.Contains(string(got), `"rate_limit_error"`) {
		t.Fatalf("429: %d %s", resp.StatusCode, got)
	}

	_, got = do(t, "POST", ts.URL+"/v1/messages", body, anthHeaders(HeaderErrorAfter, "4"))
	events := namedEvents(t, got, "\n")
	if len(events) != 5 || events[3].name != "content_block_delta" ||
		!reflect.DeepEqual(events[4], namedEvent{"error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`}) {
		t.Fatalf("error after: %q", events)
	}

	// Path knobs reach a gateway-fronted mock: same effect, stripped path.
	m, ts2 := newServer(t, Options{Chunks: 3})
	_, got = do(t, "POST", ts2.URL+"/x-mock-error-after/2/x-mock-chunks/1/v1/messages", body, anthHeaders())
	events = namedEvents(t, got, "\n")
	if len(events) != 3 || events[2].name != "error" {
		t.Fatalf("path knob: %q", events)
	}
	rec, _ := m.LastRequest()
	if rec.Path != "/v1/messages" || rec.Header.Get(HeaderErrorAfter) != "2" || rec.Header.Get(HeaderChunks) != "1" {
		t.Fatalf("recorded %s %v", rec.Path, rec.Header)
	}
	if rec.Header.Get("X-Api-Key") != "sk-ant-test" || string(rec.Body) != body {
		t.Fatalf("recorded headers/body %v %s", rec.Header, rec.Body)
	}
}

func TestAnthropicStallAndDelay(t *testing.T) {
	_, ts := newServer(t, Options{Chunks: 2})
	body := `{"model":"c","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"x"}]}`
	start := time.Now()
	_, got := do(t, "POST", ts.URL+"/v1/messages", body, anthHeaders(HeaderChunkDelay, "20ms"))
	if n := len(namedEvents(t, got, "\n")); n != 8 || time.Since(start) < 7*20*time.Millisecond {
		t.Fatalf("delay: %d events in %s", n, time.Since(start))
	}
	req, _ := http.NewRequest("POST", ts.URL+"/v1/messages", strings.NewReader(body))
	for k, v := range anthHeaders(HeaderStallAfter, "2") {
		req.Header.Set(k, v)
	}
	client := &http.Client{Timeout: 300 * time.Millisecond}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	var all []byte
	for {
		n, err := resp.Body.Read(buf)
		all = append(all, buf[:n]...)
		if err != nil {
			break
		}
	}
	resp.Body.Close()
	if c := strings.Count(string(all), "event: "); c != 2 {
		t.Fatalf("stall: %d events before the stall: %q", c, all)
	}
}

func TestAnthropicCountTokens(t *testing.T) {
	_, ts := newServer(t, Options{})
	resp, got := do(t, "POST", ts.URL+"/v1/messages/count_tokens", `{"model":"c","system":"a b","messages":[{"role":"user","content":"c d e"}]}`, anthHeaders())
	if resp.StatusCode != 200 || string(got) != `{"input_tokens":5}` {
		t.Fatalf("%d %s", resp.StatusCode, got)
	}
	resp, got = do(t, "POST", ts.URL+"/v1/messages/count_tokens", `{"model":"c","max_tokens":3,"messages":[{"role":"user","content":"c"}]}`, anthHeaders())
	if resp.StatusCode != 400 || !strings.Contains(string(got), "max_tokens: Extra inputs") {
		t.Fatalf("%d %s", resp.StatusCode, got)
	}
}

func TestTruncateAfter(t *testing.T) {
	_, ts := newServer(t, Options{Chunks: 3})
	_, got := do(t, "POST", ts.URL+"/v1/messages", `{"model":"c","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"x"}]}`,
		anthHeaders(HeaderTruncateAfter, "4"))
	events := namedEvents(t, got, "\n")
	if len(events) != 4 || events[3].name != "content_block_delta" {
		t.Fatalf("anthropic: %q", events)
	}
	_, got = do(t, "POST", ts.URL+"/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`,
		map[string]string{HeaderTruncateAfter: "2"})
	if ev := sseEvents(t, got); len(ev) != 2 || strings.Contains(string(got), "[DONE]") {
		t.Fatalf("openai: %q", ev)
	}
}
