package translate

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmgateway/llmgateway/gateway/internal/sse"
)

// geminiTestContext is the fixed context every Gemini golden is
// produced with.
func geminiTestContext() Context {
	return Context{RequestedModel: "gemini-alias", UpstreamModel: "gemini-2.5-flash",
		Created: 1700000000, IDFallback: "chatcmpl-test", IncludeUsage: true}
}

// runGeminiStream is runStream with the Gemini translator.
func runGeminiStream(input []byte, tc Context) []byte {
	return runStream(input, NewGeminiStream(tc))
}

// geminiAccumulatedCall is one tool call as a client SDK assembles it.
type geminiAccumulatedCall struct {
	id, name, args string
}

// geminiAccumulated is what a client ends up with, accumulating with
// openai-go's ChatCompletionAccumulator semantics: one id for every
// chunk, content concatenated, tool calls keyed by index (id/type/name
// from the first fragment, arguments concatenated), the last
// finish_reason, the usage chunk.
type geminiAccumulated struct {
	id         string
	role       string
	content    string
	calls      []geminiAccumulatedCall
	finish     string
	usage      map[string]interface{}
	done       bool
	errCode    string
	errMessage string
}

// accumulateGemini parses client-facing SSE the way openai-go's
// accumulator would, failing on anything a strict client would reject.
func accumulateGemini(t *testing.T, out []byte) geminiAccumulated {
	t.Helper()
	var res geminiAccumulated
	payloads := hubTestPayloads(t, out)
	for i := 0; i < len(payloads); i++ {
		payload := payloads[i]
		if res.done {
			t.Fatalf("event after [DONE]: %q", payload)
		}
		if payload == "[DONE]" {
			res.done = true
			continue
		}
		var c hubTestChunk
		if err := json.Unmarshal([]byte(payload), &c); err != nil {
			t.Fatalf("event %d is not JSON: %v: %s", i, err, payload)
		}
		if c.Error != nil {
			if i != len(payloads)-1 {
				t.Fatalf("error event is not last")
			}
			res.errCode = c.Error.Code
			res.errMessage = c.Error.Message
			continue
		}
		res.addChunk(t, i, payload, &c)
	}
	return res
}

// addChunk folds one chunk in: the header must match the stream's, the
// usage chunk comes once with no choices, and nothing follows the
// finish_reason but the usage chunk.
func (res *geminiAccumulated) addChunk(t *testing.T, i int, payload string, c *hubTestChunk) {
	t.Helper()
	if c.Object != "chat.completion.chunk" || c.Created != 1700000000 || c.Model != "gemini-alias" {
		t.Fatalf("chunk %d header: %s", i, payload)
	}
	if res.id == "" {
		res.id = c.ID
	} else if res.id != c.ID {
		t.Fatalf("chunk id changed from %q to %q", res.id, c.ID)
	}
	if !isJSONNull(c.Usage) {
		if len(c.Choices) != 0 || res.usage != nil {
			t.Fatalf("usage chunk must have no choices and come once: %s", payload)
		}
		if err := json.Unmarshal(c.Usage, &res.usage); err != nil {
			t.Fatalf("usage chunk: %v: %s", err, payload)
		}
	}
	for j := 0; j < len(c.Choices); j++ {
		ch := &c.Choices[j]
		if ch.Index != 0 {
			t.Fatalf("choice index %d", ch.Index)
		}
		if res.finish != "" {
			t.Fatalf("chunk after finish_reason: %s", payload)
		}
		if ch.Delta.Role != nil && *ch.Delta.Role != "" {
			res.role = *ch.Delta.Role
		}
		if ch.Delta.Content != nil {
			res.content += *ch.Delta.Content
		}
		for k := 0; k < len(ch.Delta.ToolCalls); k++ {
			res.addToolCall(t, payload, &ch.Delta.ToolCalls[k])
		}
		if ch.FinishReason != nil {
			res.finish = *ch.FinishReason
		}
	}
}

// addToolCall folds a tool call fragment in, keyed by its index: the
// first fragment of a call has its id, type and name.
func (res *geminiAccumulated) addToolCall(t *testing.T, payload string, tc *hubTestToolCall) {
	t.Helper()
	if tc.Index == nil {
		t.Fatalf("tool call delta without index: %s", payload)
	}
	idx := *tc.Index
	if idx == len(res.calls) {
		if tc.ID == "" || tc.Type != "function" || tc.Function.Name == "" {
			t.Fatalf("first tool call fragment lacks id/type/name: %s", payload)
		}
		res.calls = append(res.calls, geminiAccumulatedCall{id: tc.ID, name: tc.Function.Name})
	} else if idx > len(res.calls) || idx < 0 {
		t.Fatalf("tool call index %d out of order", idx)
	}
	if tc.Function.Arguments != nil {
		res.calls[idx].args += *tc.Function.Arguments
	}
}

var geminiStreamCases = []struct {
	name    string
	id      string
	content string
	calls   []geminiAccumulatedCall
	finish  string
	usage   string // compact JSON of the usage chunk
	errCode string
	errHas  string
}{
	{name: "text", id: "chatcmpl-mD9dZ3qZ", content: "18 °C in <Paris> & \"France\".", finish: "stop",
		usage: `{"completion_tokens":8,"completion_tokens_details":{"reasoning_tokens":0},"prompt_tokens":410,"prompt_tokens_details":{"cached_tokens":0},"total_tokens":418}`},
	{name: "function_calls", id: "chatcmpl-test", content: "Checking both.", finish: "tool_calls",
		calls: []geminiAccumulatedCall{
			{id: "call_test_0_tsig_c2lnbmF0dXJlLTE", name: "get_weather", args: `{"city":"Paris","units":"metric"}`},
			{id: "call_test_1", name: "get_time", args: `{"tz":"Europe/Paris"}`},
		},
		usage: `{"completion_tokens":31,"completion_tokens_details":{"reasoning_tokens":0},"prompt_tokens":52,"prompt_tokens_details":{"cached_tokens":0},"total_tokens":83}`},
	{name: "thoughts", id: "chatcmpl-th0ught5", content: "The answer is 4.", finish: "stop",
		usage: `{"completion_tokens":101,"completion_tokens_details":{"reasoning_tokens":96},"prompt_tokens":1200,"prompt_tokens_details":{"cached_tokens":1024},"total_tokens":1301}`},
	{name: "usage_final", id: "chatcmpl-u5age", content: "Hello world", finish: "length",
		usage: `{"completion_tokens":5,"completion_tokens_details":{"reasoning_tokens":3},"prompt_tokens":7,"prompt_tokens_details":{"cached_tokens":0},"total_tokens":12}`},
	{name: "prompt_blocked", id: "chatcmpl-bl0ck", content: "", finish: "content_filter",
		usage: `{"completion_tokens":0,"completion_tokens_details":{"reasoning_tokens":0},"prompt_tokens":15,"prompt_tokens_details":{"cached_tokens":0},"total_tokens":15}`},
	{name: "safety_stop", id: "chatcmpl-saf3", content: "I can start", finish: "content_filter",
		usage: `{"completion_tokens":3,"completion_tokens_details":{"reasoning_tokens":0},"prompt_tokens":20,"prompt_tokens_details":{"cached_tokens":0},"total_tokens":23}`},
	{name: "error_midstream", id: "chatcmpl-err0r", content: "Once upon",
		errCode: "upstream_error", errHas: "UNAVAILABLE: The model is overloaded."},
	{name: "truncated", id: "chatcmpl-trunc", content: "Once upon a time",
		errCode: "upstream_stream_truncated", errHas: "ended before a finish reason"},
}

func TestGeminiStreamGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/gemini/*.sse")
	if err != nil || len(files) != len(geminiStreamCases) {
		t.Fatalf("transcripts %v (%v), want %d", files, err, len(geminiStreamCases))
	}
	for i := 0; i < len(geminiStreamCases); i++ {
		tc := geminiStreamCases[i]
		t.Run(tc.name, func(t *testing.T) {
			in, err := os.ReadFile("testdata/gemini/" + tc.name + ".sse")
			if err != nil {
				t.Fatal(err)
			}
			out := runGeminiStream(in, geminiTestContext())
			checkGolden(t, "testdata/gemini/"+tc.name+".golden", out)

			res := accumulateGemini(t, out)
			if res.id != tc.id || res.role != "assistant" || res.content != tc.content || res.finish != tc.finish {
				t.Errorf("id %q role %q content %q finish %q, want %q assistant %q %q",
					res.id, res.role, res.content, res.finish, tc.id, tc.content, tc.finish)
			}
			if len(res.calls) != len(tc.calls) {
				t.Fatalf("tool calls %+v, want %+v", res.calls, tc.calls)
			}
			for j := 0; j < len(tc.calls); j++ {
				if res.calls[j] != tc.calls[j] {
					t.Errorf("tool call %d = %+v, want %+v", j, res.calls[j], tc.calls[j])
				}
			}
			if tc.errCode != "" {
				if res.errCode != tc.errCode || !strings.Contains(res.errMessage, tc.errHas) || res.done || res.usage != nil {
					t.Errorf("error %q %q done %v usage %v, want %q containing %q and no [DONE]/usage",
						res.errCode, res.errMessage, res.done, res.usage, tc.errCode, tc.errHas)
				}
				return
			}
			if !res.done || res.errCode != "" {
				t.Fatalf("done %v err %q", res.done, res.errCode)
			}
			got, _ := json.Marshal(res.usage)
			if string(got) != tc.usage {
				t.Errorf("usage %s, want %s", got, tc.usage)
			}
		})
	}
}

// TestGeminiStreamUsage checks the translator's usage() and that no
// usage chunk is sent without include_usage.
func TestGeminiStreamUsage(t *testing.T) {
	in, err := os.ReadFile("testdata/gemini/thoughts.sse")
	if err != nil {
		t.Fatal(err)
	}
	tc := geminiTestContext()
	tc.IncludeUsage = false
	reader := sse.NewReader(bytes.NewReader(in), 1<<20)
	tr := NewGeminiStream(tc)
	var out []byte
	for {
		ev, err := reader.Next()
		if err != nil {
			break
		}
		b, e := translateEvent(tr, ev)
		if e != nil {
			t.Fatal(e)
		}
		out = append(out, b...)
	}
	tail, e := translateFinish(tr)
	if e != nil {
		t.Fatal(e)
	}
	out = append(out, tail...)
	if bytes.Contains(out, []byte(`"usage"`)) || !bytes.HasSuffix(out, []byte("}\n\ndata: [DONE]\n\n")) {
		t.Errorf("stream without include_usage: %s", out)
	}
	want := Usage{PromptTokens: 1200, CompletionTokens: 101, CacheReadTokens: 1024, Reported: true}
	if got := tr.Usage(); got != want {
		t.Errorf("usage() = %+v, want %+v", got, want)
	}
}

func TestGeminiStreamEdgeCases(t *testing.T) {
	tc := geminiTestContext()
	cases := []struct {
		name, in, want string
	}{
		{"empty stream is truncated", "",
			`data: {"error":{"message":"the gemini stream ended before a finish reason","type":"server_error","param":null,"code":"upstream_stream_truncated"}}` + "\n\n"},
		{"non-JSON event", "data: nope\n\n",
			`data: {"error":{"message":"the gemini upstream returned a response the gateway could not parse","type":"server_error","param":null,"code":"upstream_bad_response"}}` + "\n\n"},
		{"error as first event", `data: {"error":{"code":429,"message":"Resource exhausted","status":"RESOURCE_EXHAUSTED"}}` + "\n\n",
			`data: {"error":{"message":"the gemini upstream reported an error: RESOURCE_EXHAUSTED: Resource exhausted","type":"rate_limit_error","param":null,"code":"upstream_error"}}` + "\n\n"},
		{"content after finish is ignored, gemini call id kept",
			`data: {"candidates":[{"content":{"parts":[{"functionCall":{"id":"fc-1","name":"f"}}]},"finishReason":"STOP"}]}` + "\n\n" +
				`data: {"candidates":[{"content":{"parts":[{"text":"late"}]}}]}` + "\n\n",
			`data: {"id":"chatcmpl-test","object":"chat.completion.chunk","created":1700000000,"model":"gemini-alias","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n" +
				`data: {"id":"chatcmpl-test","object":"chat.completion.chunk","created":1700000000,"model":"gemini-alias","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"fc-1","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":null}]}` + "\n\n" +
				`data: {"id":"chatcmpl-test","object":"chat.completion.chunk","created":1700000000,"model":"gemini-alias","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}` + "\n\n" +
				`data: {"id":"chatcmpl-test","object":"chat.completion.chunk","created":1700000000,"model":"gemini-alias","choices":[],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}}` + "\n\n" +
				"data: [DONE]\n\n"},
		{"text, call, text keep their order; other candidates ignored",
			`data: {"candidates":[{"content":{"parts":[{"text":"a"},{"text":"b"},{"functionCall":{"name":"f","args":{"x":[1, 2]}}},{"text":"c"}]},"finishReason":"OTHER"},{"index":1,"content":{"parts":[{"text":"zzz"}]}}],"responseId":"r"}` + "\n\n",
			`data: {"id":"chatcmpl-r","object":"chat.completion.chunk","created":1700000000,"model":"gemini-alias","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n" +
				`data: {"id":"chatcmpl-r","object":"chat.completion.chunk","created":1700000000,"model":"gemini-alias","choices":[{"index":0,"delta":{"content":"ab"},"finish_reason":null}]}` + "\n\n" +
				`data: {"id":"chatcmpl-r","object":"chat.completion.chunk","created":1700000000,"model":"gemini-alias","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_r_0","type":"function","function":{"name":"f","arguments":"{\"x\":[1,2]}"}}]},"finish_reason":null}]}` + "\n\n" +
				`data: {"id":"chatcmpl-r","object":"chat.completion.chunk","created":1700000000,"model":"gemini-alias","choices":[{"index":0,"delta":{"content":"c"},"finish_reason":null}]}` + "\n\n" +
				`data: {"id":"chatcmpl-r","object":"chat.completion.chunk","created":1700000000,"model":"gemini-alias","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}` + "\n\n" +
				`data: {"id":"chatcmpl-r","object":"chat.completion.chunk","created":1700000000,"model":"gemini-alias","choices":[],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}}` + "\n\n" +
				"data: [DONE]\n\n"},
	}
	for i := 0; i < len(cases); i++ {
		got := string(runGeminiStream([]byte(cases[i].in), tc))
		if got != cases[i].want {
			t.Errorf("%s:\n got %s\nwant %s", cases[i].name, got, cases[i].want)
		}
	}
}
