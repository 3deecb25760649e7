package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The tool loop against a fake openai-type model and a fake MCP server
// (JSON-RPC over HTTP, JSON answers). The model calls the MCP server's
// "forecast" tool (federated as weather_forecast) with {"city":"Paris"}
// on its first callTurns turns and then answers "Forecast: " + the last
// tool result. Turn n reports 100·n prompt and 7 completion tokens.

const loopForecastSchema = `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`

// fakeMCPServer answers tools/list with one tool and tools/call with
// result, recording the calls.
type fakeMCPServer struct {
	*httptest.Server
	mu     sync.Mutex
	lists  int
	calls  []fakeMCPCall
	result string
}

type fakeMCPCall struct {
	name      string
	arguments string
}

func newFakeMCPServer(t *testing.T, result string) *fakeMCPServer {
	t.Helper()
	f := &fakeMCPServer{result: result}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"params"`
		}
		if r.Header.Get("Authorization") != "" || r.Header.Get("X-Api-Key") != "" {
			http.Error(w, "the gateway key reached the MCP server", http.StatusBadRequest)
			return
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var result string
		f.mu.Lock()
		switch req.Method {
		case "tools/list":
			f.lists++
			result = `{"tools":[{"name":"forecast","description":"Weather forecast for a city","inputSchema":` + loopForecastSchema + `}]}`
		case "tools/call":
			f.calls = append(f.calls, fakeMCPCall{name: req.Params.Name, arguments: string(req.Params.Arguments)})
			result = f.result
		}
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if result == "" {
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"error":{"code":-32601,"message":"method not found"}}`)
			return
		}
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":`+result+`}`)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeMCPServer) snapshot() (int, []fakeMCPCall) {
	f.mu.Lock()
	defer f.mu.Unlock()
	lists := f.lists
	calls := make([]fakeMCPCall, len(f.calls))
	copy(calls, f.calls)
	return lists, calls
}

// loopModelRequest is what the fake model reads of a chat request.
type loopModelRequest struct {
	Stream   bool `json:"stream"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []hubCall       `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
}

// newLoopModel is the fake model: it calls tool (with {"city":"Paris"})
// on turns 1..callTurns when the request offers tools, and answers text
// otherwise.
func newLoopModel(t *testing.T, callTurns int, tool string) *fakeUpstream {
	return newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		var req loopModelRequest
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		turn := 1
		last := ""
		for i := 0; i < len(req.Messages); i++ {
			m := req.Messages[i]
			if m.Role == "assistant" {
				turn++
			}
			if m.Role == "tool" {
				_ = json.Unmarshal(m.Content, &last)
			}
		}
		usage := `"usage":{"prompt_tokens":` + strconv.Itoa(100*turn) + `,"completion_tokens":7,"total_tokens":` + strconv.Itoa(100*turn+7) + `}`
		w.Header().Set("Content-Type", "application/json")
		if len(req.Tools) > 0 && turn <= callTurns {
			_, _ = io.WriteString(w, `{"id":"chatcmpl-t`+strconv.Itoa(turn)+`","object":"chat.completion","created":1,"model":"m1","choices":[{"index":0,`+
				`"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_`+strconv.Itoa(turn)+`","type":"function",`+
				`"function":{"name":"`+tool+`","arguments":"{\"city\":\"Paris\"}"}}]},"finish_reason":"tool_calls"}],`+usage+`}`)
			return
		}
		text, _ := json.Marshal("Forecast: " + last)
		_, _ = io.WriteString(w, `{"id":"chatcmpl-t`+strconv.Itoa(turn)+`","object":"chat.completion","created":1,"model":"m1","choices":[{"index":0,`+
			`"message":{"role":"assistant","content":`+string(text)+`},"finish_reason":"stop"}],`+usage+`}`)
	})
}

// loopConfig serves the model and the MCP server; alice's group "loop"
// has mcpLoop (and limits), bob's "plain" has none.
func loopConfig(model, mcp, mcpLoop, limits string) string {
	return `{
  "accessLog": true,
  "providers": {"mock": {"type": "openai", "baseUrl": "` + model + `", "apiKey": "` + testProviderKey + `", "models": ["m1"]}},
  "pricing": {"mock/m1": {"inputPerM": 1, "outputPerM": 2}},
  "mcpServers": {"weather": {"url": "` + mcp + `"}},
  "groups": {"loop": {"mcpLoop": ` + mcpLoop + `, "limits": ` + limits + `}, "plain": {}},
  "users": {"inline": [
    {"name": "alice", "group": "loop", "apiKey": "` + testAliceKey + `"},
    {"name": "bob", "group": "plain", "apiKey": "` + testBobKey + `"}
  ]}
}`
}

// loopGateway serves cfg and feeds its request records.
func loopGateway(t *testing.T, cfg string) (*Gateway, string, recordFeed, *syncBuffer) {
	t.Helper()
	feed := make(recordFeed, 16)
	g, srv, logs := serveTestGateway(t, cfg, nil, func(g *Gateway) {
		g.recordHook = func(r *requestRecord) { feed <- *r }
	})
	return g, srv.URL, feed, logs
}

// userCounter reads alice's counter metric (req, tokin, tokout, cost)
// of today.
func userCounter(t *testing.T, g *Gateway, metric string) int64 {
	t.Helper()
	key := scopePrefix("user", "alice") + metric + ":day:" + bucketsAt(time.Now()).day
	_, vals, err := g.limiter.counters.Apply(context.Background(), nil, []string{key})
	if err != nil || len(vals) != 1 {
		t.Fatalf("counter %s: %v %v", key, vals, err)
	}
	return vals[0]
}

// modelRequests decodes what the fake model received.
func modelRequests(t *testing.T, up *fakeUpstream) []loopModelRequest {
	t.Helper()
	up.mu.Lock()
	defer up.mu.Unlock()
	out := make([]loopModelRequest, 0, len(up.requests))
	for i := 0; i < len(up.requests); i++ {
		var req loopModelRequest
		if err := json.Unmarshal(up.requests[i].body, &req); err != nil {
			t.Fatalf("model request %d: %v", i, err)
		}
		out = append(out, req)
	}
	return out
}

// loopAnswer is what a test reads of the final answer, whatever the
// format: its text and the usage it reports.
type loopAnswer struct {
	text             string
	prompt, complete int64
}

// sseData splits an event stream into (event name, data) pairs.
func sseData(t *testing.T, body string) ([]string, []string) {
	t.Helper()
	var names, data []string
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	name := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			names = append(names, name)
			data = append(data, strings.TrimPrefix(line, "data: "))
			name = ""
		}
	}
	return names, data
}

func readChatWhole(t *testing.T, body string) loopAnswer {
	var a struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
		Usage struct {
			PromptTokens     int64 `json:"prompt_tokens"`
			CompletionTokens int64 `json:"completion_tokens"`
			TotalTokens      int64 `json:"total_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal([]byte(body), &a); err != nil || len(a.Choices) != 1 {
		t.Fatalf("not a chat completion: %v: %s", err, body)
	}
	if a.Usage.TotalTokens != a.Usage.PromptTokens+a.Usage.CompletionTokens {
		t.Fatalf("total_tokens %d is not the sum: %s", a.Usage.TotalTokens, body)
	}
	return loopAnswer{text: a.Choices[0].Message.Content, prompt: a.Usage.PromptTokens, complete: a.Usage.CompletionTokens}
}

func readChatStream(t *testing.T, body string) loopAnswer {
	_, data := sseData(t, body)
	if len(data) == 0 || data[len(data)-1] != "[DONE]" {
		t.Fatalf("the stream does not end with [DONE]: %s", body)
	}
	var a loopAnswer
	finished := false
	for i := 0; i < len(data)-1; i++ {
		var ch struct {
			Object  string `json:"object"`
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *struct {
				PromptTokens     int64 `json:"prompt_tokens"`
				CompletionTokens int64 `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data[i]), &ch); err != nil || ch.Object != "chat.completion.chunk" {
			t.Fatalf("event %d is not a chunk: %v: %s", i, err, data[i])
		}
		for j := 0; j < len(ch.Choices); j++ {
			a.text += ch.Choices[j].Delta.Content
			if ch.Choices[j].FinishReason != nil {
				finished = true
			}
		}
		if ch.Usage != nil {
			a.prompt, a.complete = ch.Usage.PromptTokens, ch.Usage.CompletionTokens
		}
	}
	if !finished {
		t.Fatalf("no finish_reason in the stream: %s", body)
	}
	return a
}

// readChatStreamNoUsage is readChatStream of a client that did not ask
// for usage: the stream carries none (the usage read from the record).
func readChatStreamNoUsage(t *testing.T, body string) loopAnswer {
	if strings.Contains(body, `"usage"`) {
		t.Fatalf("usage in a stream that did not ask for it: %s", body)
	}
	a := readChatStream(t, body)
	a.prompt, a.complete = 300, 14
	return a
}

func readResponsesStream(t *testing.T, body string) loopAnswer {
	names, data := sseData(t, body)
	if len(names) < 3 || names[0] != "response.created" || names[len(names)-1] != "response.completed" {
		t.Fatalf("not a Responses stream (response.created … response.completed): %v", names)
	}
	var a loopAnswer
	for i := 0; i < len(data); i++ {
		var ev struct {
			Type     string `json:"type"`
			Delta    string `json:"delta"`
			Response struct {
				Usage struct {
					InputTokens  int64 `json:"input_tokens"`
					OutputTokens int64 `json:"output_tokens"`
				} `json:"usage"`
			} `json:"response"`
		}
		if err := json.Unmarshal([]byte(data[i]), &ev); err != nil || ev.Type != names[i] {
			t.Fatalf("event %q: %v: %s", names[i], err, data[i])
		}
		switch ev.Type {
		case "response.output_text.delta":
			a.text += ev.Delta
		case "response.completed":
			a.prompt, a.complete = ev.Response.Usage.InputTokens, ev.Response.Usage.OutputTokens
		}
	}
	return a
}

func readMessagesWhole(t *testing.T, body string) loopAnswer {
	var m struct {
		Type    string `json:"type"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		StopReason string `json:"stop_reason"`
		Usage      struct {
			InputTokens  int64 `json:"input_tokens"`
			OutputTokens int64 `json:"output_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal([]byte(body), &m); err != nil || m.Type != "message" || len(m.Content) == 0 {
		t.Fatalf("not a Messages answer: %v: %s", err, body)
	}
	return loopAnswer{text: m.Content[0].Text, prompt: m.Usage.InputTokens, complete: m.Usage.OutputTokens}
}

func readMessagesStream(t *testing.T, body string) loopAnswer {
	names, data := sseData(t, body)
	if len(names) < 4 || names[0] != "message_start" || names[len(names)-1] != "message_stop" {
		t.Fatalf("not a Messages stream (message_start … message_stop): %v", names)
	}
	var a loopAnswer
	for i := 0; i < len(data); i++ {
		var ev struct {
			Type    string `json:"type"`
			Message struct {
				Usage struct {
					InputTokens int64 `json:"input_tokens"`
				} `json:"usage"`
			} `json:"message"`
			Delta struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"delta"`
			Usage struct {
				InputTokens  int64 `json:"input_tokens"`
				OutputTokens int64 `json:"output_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data[i]), &ev); err != nil || ev.Type != names[i] {
			t.Fatalf("event %q: %v: %s", names[i], err, data[i])
		}
		switch ev.Type {
		case "message_start":
			a.prompt = ev.Message.Usage.InputTokens
		case "content_block_delta":
			a.text += ev.Delta.Text
		case "message_delta":
			a.complete = ev.Usage.OutputTokens
			if ev.Usage.InputTokens > 0 {
				a.prompt = ev.Usage.InputTokens
			}
		}
	}
	return a
}

func readResponsesWhole(t *testing.T, body string) loopAnswer {
	var r struct {
		Object string `json:"object"`
		Output []struct {
			Type    string `json:"type"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"output"`
		Usage struct {
			InputTokens  int64 `json:"input_tokens"`
			OutputTokens int64 `json:"output_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil || r.Object != "response" {
		t.Fatalf("not a Responses answer: %v: %s", err, body)
	}
	a := loopAnswer{prompt: r.Usage.InputTokens, complete: r.Usage.OutputTokens}
	for i := 0; i < len(r.Output); i++ {
		if r.Output[i].Type == "message" && len(r.Output[i].Content) > 0 {
			a.text = r.Output[i].Content[0].Text
		}
	}
	return a
}

func readOllamaStream(t *testing.T, body string) loopAnswer {
	lines := strings.Split(strings.TrimSpace(body), "\n")
	var a loopAnswer
	for i := 0; i < len(lines); i++ {
		var l struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
			Done            bool  `json:"done"`
			PromptEvalCount int64 `json:"prompt_eval_count"`
			EvalCount       int64 `json:"eval_count"`
		}
		if err := json.Unmarshal([]byte(lines[i]), &l); err != nil {
			t.Fatalf("line %d is not JSON: %v: %s", i, err, lines[i])
		}
		a.text += l.Message.Content
		if l.Done != (i == len(lines)-1) {
			t.Fatalf("done:true must be on the last line only: %s", body)
		}
		if l.Done {
			a.prompt, a.complete = l.PromptEvalCount, l.EvalCount
		}
	}
	return a
}

const loopQuestion = `"messages":[{"role":"user","content":"Weather in Paris?"}]`

// TestToolLoopRoutes: the model calls a federated tool on turn 1 and
// answers on turn 2, on every chat-shaped route, whole and streamed:
// the tool runs on the MCP server with the model's arguments, the
// client gets the second answer in its own format with the usage of both
// turns, and each turn is counted, limited and accounted once.
func TestToolLoopRoutes(t *testing.T) {
	cases := []struct {
		name, path, body string
		read             func(*testing.T, string) loopAnswer
		contentType      string
	}{
		{"chat", "/v1/chat/completions", `{"model":"m1",` + loopQuestion + `}`, readChatWhole, "application/json"},
		{"chat_stream", "/v1/chat/completions", `{"model":"m1","stream":true,"stream_options":{"include_usage":true},` + loopQuestion + `}`, readChatStream, "text/event-stream"},
		{"messages", "/v1/messages", `{"model":"m1","max_tokens":100,` + loopQuestion + `}`, readMessagesWhole, "application/json"},
		{"messages_stream", "/v1/messages", `{"model":"m1","max_tokens":100,"stream":true,` + loopQuestion + `}`, readMessagesStream, "text/event-stream"},
		{"chat_stream_no_usage", "/v1/chat/completions", `{"model":"m1","stream":true,` + loopQuestion + `}`, readChatStreamNoUsage, "text/event-stream"},
		{"responses", "/v1/responses", `{"model":"m1","input":"Weather in Paris?"}`, readResponsesWhole, "application/json"},
		{"responses_stream", "/v1/responses", `{"model":"m1","stream":true,"input":"Weather in Paris?"}`, readResponsesStream, "text/event-stream"},
		{"ollama", "/api/chat", `{"model":"m1","stream":false,` + loopQuestion + `}`, readOllamaStream, "application/json"},
		{"ollama_stream", "/api/chat", `{"model":"m1",` + loopQuestion + `}`, readOllamaStream, "application/x-ndjson"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mcp := newFakeMCPServer(t, `{"content":[{"type":"text","text":"sunny in Paris"}]}`)
			model := newLoopModel(t, 1, "weather_forecast")
			g, base, feed, logs := loopGateway(t, loopConfig(model.URL, mcp.URL, `{"enabled": true}`, "null"))
			resp, body := send(t, base, testRequest{path: tc.path, body: tc.body, headers: bearer(testAliceKey)})
			if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), tc.contentType) {
				t.Fatalf("status %d, Content-Type %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
			}
			if resp.Header.Get(toolLoopHeader) != "done" || resp.Header.Get(toolTurnsHeader) != "2" {
				t.Fatalf("loop headers %q/%q, want done/2", resp.Header.Get(toolLoopHeader), resp.Header.Get(toolTurnsHeader))
			}
			got := tc.read(t, body)
			if got.text != "Forecast: sunny in Paris" || got.prompt != 300 || got.complete != 14 {
				t.Fatalf("answer %+v, want the second turn's text and 300+14 tokens: %s", got, body)
			}
			_, calls := mcp.snapshot()
			if len(calls) != 1 || calls[0].name != "forecast" || calls[0].arguments != `{"city":"Paris"}` {
				t.Fatalf("MCP calls %+v, want one forecast {\"city\":\"Paris\"}", calls)
			}
			reqs := modelRequests(t, model)
			if len(reqs) != 2 {
				t.Fatalf("%d model calls, want 2", len(reqs))
			}
			for i := 0; i < 2; i++ {
				r := reqs[i]
				if r.Stream || len(r.Tools) != 1 || r.Tools[0].Function.Name != "weather_forecast" ||
					r.Tools[0].Function.Description != "Weather forecast for a city" || string(r.Tools[0].Function.Parameters) != loopForecastSchema {
					t.Fatalf("model call %d: stream %v, tools %+v", i+1, r.Stream, r.Tools)
				}
			}
			second := reqs[1].Messages
			n := len(second)
			if n < 3 || second[n-2].Role != "assistant" || len(second[n-2].ToolCalls) != 1 || second[n-2].ToolCalls[0].ID != "call_1" ||
				second[n-1].Role != "tool" || second[n-1].ToolCallID != "call_1" || string(second[n-1].Content) != `"sunny in Paris"` {
				t.Fatalf("second call's conversation does not end with the tool call and its result: %+v", second)
			}
			rec := feed.next(t)
			if rec.statusCode != 200 || rec.toolTurns != 2 || rec.toolLoop != "done" || len(rec.toolCalls) != 1 ||
				rec.usage.PromptTokens != 300 || rec.usage.CompletionTokens != 14 || rec.costMicroUSD != 328 || rec.attempts != 2 {
				t.Fatalf("record: status %d turns %d loop %q calls %+v usage %+v cost %d attempts %d", rec.statusCode, rec.toolTurns,
					rec.toolLoop, rec.toolCalls, rec.usage, rec.costMicroUSD, rec.attempts)
			}
			tcr := rec.toolCalls[0]
			if tcr.turn != 1 || tcr.name != "weather_forecast" || tcr.server != "weather" || tcr.outcome != "ok" || tcr.duration <= 0 {
				t.Fatalf("tool call record %+v", tcr)
			}
			// Two model calls: two requests counted, each turn's usage
			// accounted once (turn 1: 100+7 tokens, $114e-6; turn 2:
			// 200+7, $214e-6).
			if req, in, out, cost := userCounter(t, g, "req"), userCounter(t, g, "tokin"), userCounter(t, g, "tokout"), userCounter(t, g, "cost"); req != 2 || in != 300 || out != 14 || cost != 328 {
				t.Fatalf("counters req %d tokin %d tokout %d cost %d, want 2 300 14 328", req, in, out, cost)
			}
			if log := logs.String(); !strings.Contains(log, " tool_turns=2 tool_loop=done tool_calls=weather_forecast:weather:ok:") {
				t.Fatalf("access line without the tool loop: %s", log)
			}
		})
	}
}

// TestToolLoopBudgetStopsTurn: every turn after the first is limited
// like a request. With tokensPerDay 3100, turns of 1000·n+7 tokens and
// a model that never stops calling tools, turn 3's reservation does
// not fit: the client gets the limiter's 429, the two turns that ran
// are accounted.
func TestToolLoopBudgetStopsTurn(t *testing.T) {
	mcp := newFakeMCPServer(t, `{"content":[{"type":"text","text":"sunny"}]}`)
	model := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		turn := strings.Count(string(body), `"role":"assistant"`) + 1
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"x","object":"chat.completion","created":1,"model":"m1","choices":[{"index":0,"message":{"role":"assistant",`+
			`"content":null,"tool_calls":[{"id":"call_`+strconv.Itoa(turn)+`","type":"function","function":{"name":"weather_forecast","arguments":"{}"}}]},`+
			`"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":`+strconv.Itoa(1000*turn)+`,"completion_tokens":7}}`)
	})
	g, base, feed, _ := loopGateway(t, loopConfig(model.URL, mcp.URL, `{"enabled": true, "maxTurns": 5}`, `{"tokensPerDay": 3100}`))
	resp, body := send(t, base, testRequest{path: "/v1/chat/completions", body: `{"model":"m1","max_tokens":10,` + loopQuestion + `}`, headers: bearer(testAliceKey)})
	expectEnvelope(t, resp, body, http.StatusTooManyRequests, "rate_limit_error", "rate_limit_exceeded")
	if !strings.Contains(body, "tokensPerDay") || resp.Header.Get(toolLoopHeader) != "refused" || resp.Header.Get(toolTurnsHeader) != "2" {
		t.Fatalf("headers %q/%q: %s", resp.Header.Get(toolLoopHeader), resp.Header.Get(toolTurnsHeader), body)
	}
	if n := model.count(); n != 2 {
		t.Fatalf("%d model calls, want 2", n)
	}
	if _, calls := mcp.snapshot(); len(calls) != 2 {
		t.Fatalf("%d tool calls, want 2 (one per turn that ran)", len(calls))
	}
	if in, out := userCounter(t, g, "tokin"), userCounter(t, g, "tokout"); in != 3000 || out != 14 {
		t.Fatalf("accounted %d+%d tokens, want the two turns' 3000+14", in, out)
	}
	rec := feed.next(t)
	if rec.statusCode != 429 || rec.errorCode != "rate_limit_exceeded" || rec.toolTurns != 2 || rec.toolLoop != "refused" ||
		len(rec.toolCalls) != 2 || rec.usage.PromptTokens != 3000 || rec.usage.CompletionTokens != 14 {
		t.Fatalf("record: status %d %q turns %d %q calls %d usage %+v", rec.statusCode, rec.errorCode, rec.toolTurns, rec.toolLoop, len(rec.toolCalls), rec.usage)
	}
}

// TestToolLoopMaxTurns: a model that keeps calling tools is called
// maxTurns times; its last answer reaches the client as it is, tool
// calls included, with the usage of every turn.
func TestToolLoopMaxTurns(t *testing.T) {
	mcp := newFakeMCPServer(t, `{"content":[{"type":"text","text":"sunny"}]}`)
	model := newLoopModel(t, 100, "weather_forecast")
	cfg := strings.Replace(loopConfig(model.URL, mcp.URL, `{"enabled": true, "maxTurns": 2}`, "null"), `"accessLog": true,`, `"accessLog": true, "admin": {"enabled": true},`, 1)
	g, base, feed, _ := loopGateway(t, cfg)
	resp, body := send(t, base, testRequest{path: "/v1/chat/completions", body: `{"model":"m1",` + loopQuestion + `}`, headers: bearer(testAliceKey)})
	if resp.StatusCode != 200 || resp.Header.Get(toolLoopHeader) != "max-turns" || resp.Header.Get(toolTurnsHeader) != "2" {
		t.Fatalf("status %d, headers %q/%q: %s", resp.StatusCode, resp.Header.Get(toolLoopHeader), resp.Header.Get(toolTurnsHeader), body)
	}
	var a struct {
		Choices []struct {
			Message      hubAnswerMessage `json:"message"`
			FinishReason string           `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			PromptTokens int64 `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal([]byte(body), &a); err != nil || len(a.Choices) != 1 || a.Choices[0].FinishReason != "tool_calls" ||
		len(a.Choices[0].Message.ToolCalls) != 1 || a.Choices[0].Message.ToolCalls[0].ID != "call_2" || a.Usage.PromptTokens != 300 {
		t.Fatalf("the last answer, tool call and summed usage: %v %s", err, body)
	}
	if n := model.count(); n != 2 {
		t.Fatalf("%d model calls, want 2", n)
	}
	if _, calls := mcp.snapshot(); len(calls) != 1 {
		t.Fatalf("%d tool calls, want 1 (the last answer's call is the client's to see, not run)", len(calls))
	}
	if rec := feed.next(t); rec.toolLoop != "max-turns" || rec.toolTurns != 2 || len(rec.toolCalls) != 1 {
		t.Fatalf("record: %q %d %d", rec.toolLoop, rec.toolTurns, len(rec.toolCalls))
	}
	// Each model call is one request served by the model, with its usage.
	day := ":day:" + bucketsAt(time.Now()).day
	keys := []string{"llmgw:model:mock/m1:req" + day, "llmgw:model:mock/m1:tokin" + day, "llmgw:model:mock/m1:tokout" + day}
	if _, vals, err := g.limiter.counters.Apply(context.Background(), nil, keys); err != nil || vals[0] != 2 || vals[1] != 300 || vals[2] != 14 {
		t.Fatalf("model statistics req/tokin/tokout %v (%v), want 2 300 14", vals, err)
	}
}

// TestToolLoopNotApplied: a request with tools of its own, a caller
// whose primary group has no loop, and a disabled loop all reach the
// model untouched, and the MCP servers are not asked for tools.
func TestToolLoopNotApplied(t *testing.T) {
	own := `{"model":"m1",` + loopQuestion + `,"tools":[{"type":"function","function":{"name":"mine","parameters":{"type":"object"}}}]}`
	plain := `{"model":"m1",` + loopQuestion + `}`
	cases := []struct {
		name, loop, key, body string
	}{
		{"client_tools", `{"enabled": true}`, testAliceKey, own},
		{"group_without_loop", `{"enabled": true}`, testBobKey, plain},
		{"loop_disabled", `{"enabled": false, "maxTurns": 3}`, testAliceKey, plain},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mcp := newFakeMCPServer(t, `{"content":[]}`)
			model := newLoopModel(t, 1, "weather_forecast")
			_, base, feed, _ := loopGateway(t, loopConfig(model.URL, mcp.URL, tc.loop, "null"))
			resp, body := send(t, base, testRequest{path: "/v1/chat/completions", body: tc.body, headers: bearer(tc.key)})
			if resp.StatusCode != 200 || resp.Header.Get(toolLoopHeader) != "" || resp.Header.Get(toolTurnsHeader) != "" {
				t.Fatalf("status %d, loop header %q: %s", resp.StatusCode, resp.Header.Get(toolLoopHeader), body)
			}
			if got := string(model.last(t).body); got != tc.body || model.count() != 1 {
				t.Fatalf("the model got %d requests, the last %s; want the client's body once", model.count(), got)
			}
			if lists, calls := mcp.snapshot(); lists != 0 || len(calls) != 0 {
				t.Fatalf("the MCP server was asked (%d lists, %d calls)", lists, len(calls))
			}
			if rec := feed.next(t); rec.toolTurns != 0 || rec.toolCalls != nil {
				t.Fatalf("record: %d turns, %d calls", rec.toolTurns, len(rec.toolCalls))
			}
		})
	}
}

// TestToolLoopNoServerReachable: when federation lists no tool (the
// only server is down) the request goes to the model as it is.
func TestToolLoopNoServerReachable(t *testing.T) {
	mcp := newFakeMCPServer(t, `{"content":[]}`)
	mcp.Close()
	model := newLoopModel(t, 1, "weather_forecast")
	_, base, _, _ := loopGateway(t, loopConfig(model.URL, mcp.URL, `{"enabled": true}`, "null"))
	body := `{"model":"m1",` + loopQuestion + `}`
	resp, got := send(t, base, testRequest{path: "/v1/chat/completions", body: body, headers: bearer(testAliceKey)})
	if resp.StatusCode != 200 || resp.Header.Get(toolLoopHeader) != "" || string(model.last(t).body) != body {
		t.Fatalf("status %d, header %q, model got %s: %s", resp.StatusCode, resp.Header.Get(toolLoopHeader), model.last(t).body, got)
	}
}

// TestToolLoopErrorsFedBack: a tool's error result, and a call of a
// tool that was never offered, go back to the model as error results;
// the model's next answer is the client's.
func TestToolLoopErrorsFedBack(t *testing.T) {
	cases := []struct {
		name, result, tool, want, outcome, server string
		mcpCalls                                  int
	}{
		{"tool_error", `{"content":[{"type":"text","text":"city not found"}],"isError":true}`, "weather_forecast",
			"Error: city not found", "tool_error", "weather", 1},
		{"unknown_tool", `{"content":[]}`, "weather_nowcast", `Error: there is no tool named "weather_nowcast"`, "unknown_tool", "", 0},
		{"structured", `{"content":[],"structuredContent":{"temp":21}}`, "weather_forecast", `{"temp":21}`, "ok", "weather", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mcp := newFakeMCPServer(t, tc.result)
			model := newLoopModel(t, 1, tc.tool)
			_, base, feed, _ := loopGateway(t, loopConfig(model.URL, mcp.URL, `{"enabled": true}`, "null"))
			resp, body := send(t, base, testRequest{path: "/v1/chat/completions", body: `{"model":"m1",` + loopQuestion + `}`, headers: bearer(testAliceKey)})
			if resp.StatusCode != 200 || resp.Header.Get(toolLoopHeader) != "done" {
				t.Fatalf("status %d, header %q: %s", resp.StatusCode, resp.Header.Get(toolLoopHeader), body)
			}
			if got := readChatWhole(t, body); got.text != "Forecast: "+tc.want {
				t.Fatalf("answer %q, want the model to have seen %q", got.text, tc.want)
			}
			if _, calls := mcp.snapshot(); len(calls) != tc.mcpCalls {
				t.Fatalf("%d MCP calls, want %d", len(calls), tc.mcpCalls)
			}
			rec := feed.next(t)
			if len(rec.toolCalls) != 1 || rec.toolCalls[0].name != tc.tool || rec.toolCalls[0].outcome != tc.outcome || rec.toolCalls[0].server != tc.server {
				t.Fatalf("tool call record %+v", rec.toolCalls)
			}
		})
	}
}

// TestToolLoopConfig: mcpLoop.maxTurns is 1-20, 0 the default 5; a
// disabled loop is off whatever its maxTurns.
func TestToolLoopConfig(t *testing.T) {
	cases := []struct {
		loop  string
		turns int
		err   string
	}{
		{`{"enabled": true}`, 5, ""},
		{`{"enabled": true, "maxTurns": 1}`, 1, ""},
		{`{"enabled": true, "maxTurns": 20}`, 20, ""},
		{`{"enabled": false, "maxTurns": 7}`, 0, ""},
		{`null`, 0, ""},
		{`{"enabled": true, "maxTurns": 21}`, 0, "groups.loop.mcpLoop.maxTurns: 21 must be between 1 and 20"},
		{`{"enabled": true, "maxTurns": -1}`, 0, "groups.loop.mcpLoop.maxTurns: -1 must be between 1 and 20"},
	}
	for _, tc := range cases {
		g, err := newGatewayFromConfig(t, loopConfig("http://127.0.0.1:1", "http://127.0.0.1:2", tc.loop, "null"))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.loop, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.loop, err)
		}
		if got := g.cfg.groups["loop"].loopTurns; got != tc.turns {
			t.Errorf("%s: loopTurns %d, want %d", tc.loop, got, tc.turns)
		}
	}
}

// TestToolLoopTurnFails: a turn whose model call fails ends the loop
// with that error; the turn before it is accounted.
func TestToolLoopTurnFails(t *testing.T) {
	mcp := newFakeMCPServer(t, `{"content":[{"type":"text","text":"sunny"}]}`)
	ok := newLoopModel(t, 1, "weather_forecast")
	model := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(string(mustRead(r)), `"role":"tool"`) {
			http.Error(w, `{"error":{"message":"boom","type":"server_error"}}`, http.StatusBadRequest)
			return
		}
		ok.Config.Handler.ServeHTTP(w, r)
	})
	g, base, feed, _ := loopGateway(t, loopConfig(model.URL, mcp.URL, `{"enabled": true}`, "null"))
	resp, body := send(t, base, testRequest{path: "/v1/chat/completions", body: `{"model":"m1",` + loopQuestion + `}`, headers: bearer(testAliceKey)})
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get(toolLoopHeader) != "failed" || resp.Header.Get(toolTurnsHeader) != "1" {
		t.Fatalf("status %d, headers %q/%q: %s", resp.StatusCode, resp.Header.Get(toolLoopHeader), resp.Header.Get(toolTurnsHeader), body)
	}
	if in, out := userCounter(t, g, "tokin"), userCounter(t, g, "tokout"); in != 100 || out != 7 {
		t.Fatalf("accounted %d+%d tokens, want the first turn's 100+7", in, out)
	}
	if rec := feed.next(t); rec.toolLoop != "failed" || rec.usage.PromptTokens != 100 || len(rec.toolCalls) != 1 {
		t.Fatalf("record: %q usage %+v calls %d", rec.toolLoop, rec.usage, len(rec.toolCalls))
	}
}

func mustRead(r *http.Request) []byte {
	data, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(strings.NewReader(string(data)))
	return data
}
