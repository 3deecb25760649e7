package translate

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func anthropicFuzzSeeds(f *testing.F, pattern string) [][]byte {
	return testdataSeeds(f, "anthropic/"+pattern)
}

func FuzzAnthropicChatRequest(f *testing.F) {
	seeds := []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]},{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"n\":123456789012345678901}"}}]},{"role":"tool","tool_call_id":"c","content":[{"type":"text","text":"r"}]}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":"required","parallel_tool_calls":false}`,
		`{"messages":[{"role":"user","content":"x"}],"temperature":3,"stop":["a",""],"max_completion_tokens":9,"reasoning_effort":"high","stream":true,"user":"u"}`,
		`{"messages":[{"role":"user","content":"x"}],"n":2}`,
		`{"messages":[{"role":"user","content":[{"type":"file","file":{"file_data":"data:application/pdf;base64,JV"}}]}]}`,
		`{"messages":[{"role":"assistant","refusal":"no","content":[{"type":"refusal","refusal":"no"}]}]}`,
		`{"messages":[]}`,
		`[]`,
		`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":"data:,"}]}]}`,
	}
	for i := 0; i < len(seeds); i++ {
		f.Add([]byte(seeds[i]))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		out, _, e := AnthropicChatRequest(body, "claude-up")
		if e != nil {
			if out != nil || e.Status != 400 || e.Message == "" {
				t.Fatalf("error %+v with output %q", e, out)
			}
			return
		}
		var req struct {
			Model     string            `json:"model"`
			MaxTokens int64             `json:"max_tokens"`
			Messages  []json.RawMessage `json:"messages"`
		}
		if err := json.Unmarshal(out, &req); err != nil {
			t.Fatalf("output is not a JSON object: %v: %s", err, out)
		}
		if req.Model != "claude-up" || req.MaxTokens < 1 || len(req.Messages) == 0 {
			t.Fatalf("output lacks model, max_tokens or messages: %s", out)
		}
	})
}

func FuzzAnthropicChatResponse(f *testing.F) {
	seeds := []string{
		`{"id":"msg_1","type":"message","content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"t","name":"f","input":{"a":1e999}}],"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":2,"cache_read_input_tokens":3}}`,
		`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
		`{"type":"message","content":null}`,
		`null`,
	}
	for i := 0; i < len(seeds); i++ {
		f.Add([]byte(seeds[i]))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		out, u, e := AnthropicChatResponse(body, anthropicTestContext(false))
		if e != nil {
			if out != nil || e.Status != 502 || strings.Contains(e.Message, string(body)) && len(body) > 8 {
				t.Fatalf("error %+v with output %q", e, out)
			}
			return
		}
		var resp hubTestCompletion
		if err := json.Unmarshal(out, &resp); err != nil || resp.Object != "chat.completion" || resp.Model != "claude-alias" || len(resp.Choices) != 1 {
			t.Fatalf("bad completion (%v): %s", err, out)
		}
		calls := resp.Choices[0].Message.ToolCalls
		for i := 0; i < len(calls); i++ {
			if !json.Valid([]byte(calls[i].Function.Arguments)) {
				t.Fatalf("tool call arguments are not JSON: %q", calls[i].Function.Arguments)
			}
		}
		if u.Reported != bytes.Contains(out, []byte(`"usage":{`)) {
			t.Fatalf("usage reported %v but output %s", u.Reported, out)
		}
	})
}

// FuzzAnthropicStream feeds arbitrary bytes through the SSE reader and
// the translator. Whatever happens, the client-facing output must be
// well-framed: "data: <JSON>\n\n" events, at most one [DONE], nothing
// after it, and an error only in place of it.
func FuzzAnthropicStream(f *testing.F) {
	seeds := anthropicFuzzSeeds(f, "*.sse")
	for i := 0; i < len(seeds); i++ {
		f.Add(seeds[i], true)
	}
	f.Add([]byte("event: message_stop\n\n"), false)
	f.Add([]byte("data: {\"type\":\"content_block_delta\",\"index\":-1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"x\"}}\n\n"), false)
	f.Fuzz(func(t *testing.T, input []byte, includeUsage bool) {
		fuzzHubStream(t, input, NewAnthropicStream(anthropicTestContext(includeUsage)), true)
	})
}
