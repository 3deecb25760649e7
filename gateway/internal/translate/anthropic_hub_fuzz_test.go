package translate

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
	"github.com/llmgateway/llmgateway/gateway/internal/sse"
)

func FuzzHubFromAnthropicRequest(f *testing.F) {
	seeds := []string{
		`{"model":"m","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],"stream":true,"thinking":{"type":"enabled","budget_tokens":1024},` +
			`"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}},` +
			`{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JV"}}]},` +
			`{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"text","text":"b"},{"type":"tool_use","id":"t1","name":"f","input":{"n":123456789012345678901}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":[{"type":"text","text":"r"},{"type":"image","source":{"type":"url","url":"https://x/y.png"}}]},{"type":"text","text":"go on"}]}],` +
			`"tools":[{"name":"f","input_schema":{"$schema":"x","type":"object"},"defer_loading":true},{"type":"web_search_20250305","name":"web_search"}],` +
			`"tool_choice":{"type":"tool","name":"f","disable_parallel_tool_use":true},"metadata":{"user_id":"{\"a\":1}"},"stop_sequences":["X",""],"temperature":0.5,"top_k":3}`,
		`{"model":"m","messages":[{"role":"assistant","content":[{"type":"redacted_thinking","data":"x"}]}]}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"server_tool_use"}]}]}`,
		`{"model":"m","messages":[{"role":"system","content":"x"}]}`,
		`{"model":"m","messages":[]}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":5}]}]}`,
		`{"model":"m","messages":{}}`,
		`[]`,
	}
	for i := 0; i < len(seeds); i++ {
		f.Add([]byte(seeds[i]))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		out, in, e := HubFromAnthropicRequest(body)
		if e != nil {
			if out != nil || e.Status != 400 || e.Kind != "invalid_request_error" || e.Code == "" || e.Message == "" {
				t.Fatalf("error %+v with output %q", e, out)
			}
			return
		}
		var hub struct {
			Model     string `json:"model"`
			MaxTokens int64  `json:"max_tokens"`
			Stream    bool   `json:"stream"`
			Messages  []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
			Tools []struct {
				Function struct {
					Name       string          `json:"name"`
					Parameters json.RawMessage `json:"parameters"`
				} `json:"function"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(out, &hub); err != nil {
			t.Fatalf("output is not a JSON object: %v: %s", err, out)
		}
		if hub.Model == "" || len(hub.Messages) == 0 || hub.MaxTokens != in.MaxTokens || hub.Stream != in.Stream {
			t.Fatalf("output lacks model or messages, or disagrees with %+v: %s", in, out)
		}
		for i := 0; i < len(hub.Messages); i++ {
			switch hub.Messages[i].Role {
			case "system", "user", "assistant", "tool":
			default:
				t.Fatalf("message %d has role %q: %s", i, hub.Messages[i].Role, out)
			}
		}
		for i := 0; i < len(hub.Tools); i++ {
			if hub.Tools[i].Function.Name == "" || len(hub.Tools[i].Function.Parameters) == 0 || hub.Tools[i].Function.Parameters[0] != '{' {
				t.Fatalf("tool %d: %s", i, out)
			}
		}
	})
}

func FuzzAnthropicFromHubResponse(f *testing.F) {
	seeds := []string{
		`{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi","reasoning_content":"r",` +
			`"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\":1e999}"}},{"function":{"arguments":{"b":2}}}]},"finish_reason":"tool_calls"}],` +
			`"usage":{"prompt_tokens":3,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":9}}}`,
		`{"choices":[{"message":{"content":[{"type":"text","text":"x"}],"refusal":"no"},"finish_reason":"content_filter"}]}`,
		`{"error":{"message":"x","code":429}}`,
		`{"object":"chat.completion.chunk","choices":[]}`,
		`null`,
	}
	for i := 0; i < len(seeds); i++ {
		f.Add([]byte(seeds[i]), true)
	}
	f.Fuzz(func(t *testing.T, body []byte, thinking bool) {
		out, u, e := AnthropicFromHubResponse(body, anthropicOutTestContext(), AnthropicInbound{Thinking: thinking})
		if e != nil {
			if out != nil || e.Status < 400 || e.Status > 599 || e.Message == "" {
				t.Fatalf("error %+v with output %q", e, out)
			}
			return
		}
		var msg struct {
			ID         string `json:"id"`
			Type       string `json:"type"`
			Role       string `json:"role"`
			Model      string `json:"model"`
			StopReason string `json:"stop_reason"`
			Content    []struct {
				Type  string          `json:"type"`
				ID    string          `json:"id"`
				Input json.RawMessage `json:"input"`
			} `json:"content"`
			Usage *anthropicOutUsage `json:"usage"`
		}
		if err := json.Unmarshal(out, &msg); err != nil || msg.Type != "message" || msg.Role != "assistant" || msg.Model != "claude-sonnet-4-5" ||
			len(msg.ID) < 5 || msg.StopReason == "" || msg.Content == nil || msg.Usage == nil {
			t.Fatalf("bad message (%v): %s", err, out)
		}
		tools := 0
		for i := 0; i < len(msg.Content); i++ {
			b := msg.Content[i]
			if b.Type == "tool_use" {
				tools++
				if b.ID == "" || len(b.Input) == 0 || b.Input[0] != '{' {
					t.Fatalf("bad tool_use block: %s", out)
				}
			}
			if b.Type == "thinking" && !thinking {
				t.Fatalf("thinking block without thinking: %s", out)
			}
		}
		if tools > 0 && msg.StopReason != "tool_use" {
			t.Fatalf("tool_use blocks with stop_reason %q", msg.StopReason)
		}
		if u.Reported && (msg.Usage.InputTokens < 0 || msg.Usage.CacheReadInputTokens != u.CacheReadTokens) {
			t.Fatalf("usage %+v vs %s", u, out)
		}
	})
}

// FuzzAnthropicOutStreamOpenAI feeds arbitrary bytes as an OpenAI stream
// through the SSE reader and the translator. Whatever happens, the
// client must receive a well-formed Anthropic event stream (see
// fuzzAnthropicOut).
func FuzzAnthropicOutStreamOpenAI(f *testing.F) {
	seeds := testdataSeeds(f, "anthropic_out/openai_*.sse")
	for i := 0; i < len(seeds); i++ {
		f.Add(seeds[i], true)
	}
	f.Add(anthropicOutChunkEvents(`{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{\"x\":"}}]}`,
		`{"tool_calls":[{"index":1,"id":"b","function":{"name":"g","arguments":"{}"}}]}`, `{"content":"t","reasoning":"r"}`,
		`{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}`, "finish:stop"), true)
	f.Add([]byte("data: [DONE]\n\n"), false)
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":{\"arguments\":{\"a\":1}}}]}}]}\n\n"), false)
	f.Fuzz(func(t *testing.T, input []byte, thinking bool) {
		tr := NewAnthropicOutStream(nil, anthropicOutTestContext(), AnthropicInbound{Thinking: thinking}, anthropicOutTestEstimate)
		fuzzAnthropicOut(t, input, tr)
	})
}

// FuzzAnthropicOutStreamGemini is FuzzAnthropicOutStreamOpenAI over a
// Gemini stream and its translator.
func FuzzAnthropicOutStreamGemini(f *testing.F) {
	seeds := append(testdataSeeds(f, "anthropic_out/gemini_*.sse"), testdataSeeds(f, "gemini/*.sse")...)
	for i := 0; i < len(seeds); i++ {
		f.Add(seeds[i], true)
	}
	f.Add([]byte("data: {\"candidates\":[{\"finishReason\":\"STOP\"}]}\n\n"), false)
	f.Fuzz(func(t *testing.T, input []byte, thinking bool) {
		inner := NewGeminiStream(anthropicOutInnerContext(thinking))
		tr := NewAnthropicOutStream(inner, anthropicOutTestContext(), AnthropicInbound{Thinking: thinking}, anthropicOutTestEstimate)
		fuzzAnthropicOut(t, input, tr)
	})
}

// fuzzAnthropicOut drives tr over arbitrary upstream bytes the way the
// pipeline does and checks what a client receives
// (accumulateAnthropicOut: JSON data of the event's type, message_start
// and ping first, consecutive block indexes, one block open at a time,
// no empty delta, nothing after message_stop or an error), that an error
// has a 4xx/5xx status and a message, and that a clean end sends
// message_stop.
func fuzzAnthropicOut(t *testing.T, input []byte, tr StreamTranslator) {
	t.Helper()
	reader := sse.NewReader(bytes.NewReader(input), 64<<10)
	var out []byte
	var failed *apierr.Error
	readFailed := false
	for {
		ev, err := reader.Next()
		if err != nil {
			if err != io.EOF && err != sse.ErrTooLarge {
				t.Fatalf("reader: %v", err)
			}
			readFailed = err == sse.ErrTooLarge
			break
		}
		payloads, e := tr.Event(ev, nil)
		out = anthropicOutFrame(out, payloads)
		if e != nil {
			failed = e
			break
		}
	}
	if failed == nil && !readFailed {
		payloads, e := tr.Finish(nil)
		out = anthropicOutFrame(out, payloads)
		failed = e
	}
	if failed != nil {
		if failed.Status < 400 || failed.Status > 599 || failed.Message == "" || failed.Code == "" {
			t.Fatalf("bad stream error %+v", failed)
		}
		out = anthropicOutErrorEvent(out, failed)
	}
	acc := accumulateAnthropicOut(t, out)
	if failed == nil && !readFailed && !acc.stopped {
		t.Fatalf("clean end without message_stop: %q", out)
	}
	_ = tr.Usage()
}
