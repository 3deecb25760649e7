package translate

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
	"github.com/llmgateway/llmgateway/gateway/internal/sse"
)

// fuzzOllamaHubRequest checks what any Ollama request translation must
// give: a 400 with a code and a message and no output, or a hub request
// that is a JSON object with the model, a stream flag agreeing with in,
// and messages of the four roles.
func fuzzOllamaHubRequest(t *testing.T, out []byte, in OllamaInbound, e *apierr.Error) {
	t.Helper()
	if e != nil {
		if out != nil || e.Status != 400 || e.Kind != "invalid_request_error" || e.Code == "" || e.Message == "" {
			t.Fatalf("error %+v with output %q", e, out)
		}
		return
	}
	var hub struct {
		Model    string `json:"model"`
		Stream   *bool  `json:"stream"`
		Messages []struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			ToolCallID string          `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
		Tools json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(out, &hub); err != nil {
		t.Fatalf("output is not a JSON object: %v: %s", err, out)
	}
	if hub.Model == "" || hub.Model != in.Model || hub.Stream == nil || *hub.Stream != in.Stream || len(hub.Messages) == 0 {
		t.Fatalf("output lacks model, stream or messages, or disagrees with %+v: %s", in, out)
	}
	for i := 0; i < len(hub.Messages); i++ {
		m := hub.Messages[i]
		switch m.Role {
		case "system", "user", "assistant":
		case "tool":
			if m.ToolCallID == "" {
				t.Fatalf("tool message %d without tool_call_id: %s", i, out)
			}
		default:
			t.Fatalf("message %d has role %q: %s", i, m.Role, out)
		}
		if len(m.Content) == 0 {
			t.Fatalf("message %d without content: %s", i, out)
		}
		for j := 0; j < len(m.ToolCalls); j++ {
			if m.ToolCalls[j].ID == "" || m.ToolCalls[j].Function.Name == "" {
				t.Fatalf("tool call %d.%d without id or name: %s", i, j, out)
			}
		}
	}
	if len(hub.Tools) > 0 && hub.Tools[0] != '[' {
		t.Fatalf("tools are not an array: %s", out)
	}
}

func FuzzHubFromOllamaChat(f *testing.F) {
	for i := 0; i < len(ollamaChatCases); i++ {
		f.Add([]byte(ollamaChatCases[i].in))
	}
	seeds := []string{
		`{"model":"m","messages":[{"role":"tool","content":"x"}]}`,
		`{"model":"m","messages":[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"{"}}]},{"role":"tool","tool_name":"f"}]}`,
		`{"model":"m","messages":[{"role":"user","images":["/9j/"]}],"format":{"type":"object"},"think":"low","options":{"stop":"x","num_predict":1e3}}`,
		`{"model":"m","messages":[null]}`,
		`{"model":"m","messages":"hi"}`,
		`{"model":"m","messages":[{"role":"assistant","tool_calls":[{"function":"f"}]}]}`,
	}
	for i := 0; i < len(seeds); i++ {
		f.Add([]byte(seeds[i]))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		out, in, e := HubFromOllamaChat(body)
		if e == nil && in.Generate {
			t.Fatalf("a chat request reported as generate")
		}
		fuzzOllamaHubRequest(t, out, in, e)
	})
}

func FuzzHubFromOllamaGenerate(f *testing.F) {
	for i := 0; i < len(ollamaGenerateCases); i++ {
		f.Add([]byte(ollamaGenerateCases[i].in))
	}
	seeds := []string{
		`{"model":"m","prompt":"x","suffix":"y"}`,
		`{"model":"m","prompt":"","images":["UklGRiQAAABXRUJQVlA4IBgAAAAw","data:image/png;base64,AA"]}`,
		`{"model":"m","prompt":"x","system":"s","think":true,"stream":false,"format":"json","options":{"temperature":1e400}}`,
		`{"model":"m","prompt":5}`,
	}
	for i := 0; i < len(seeds); i++ {
		f.Add([]byte(seeds[i]))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		out, in, e := HubFromOllamaGenerate(body)
		if e == nil && !in.Generate {
			t.Fatalf("a generate request not reported as generate")
		}
		fuzzOllamaHubRequest(t, out, in, e)
	})
}

// FuzzOllamaOutStream feeds arbitrary bytes as an upstream stream
// through the SSE reader and the translator, over an OpenAI stream or a
// Gemini stream's translator (gemini), for a chat or a generate client,
// thinking or not. Whatever happens, the client must receive well-formed
// NDJSON (accumulateOllama: one JSON object per line, done:false lines
// that add something, one final done:true line with every metric,
// nothing after it), an error must have a 4xx/5xx status and a message,
// and a clean end must send the done:true line last.
func FuzzOllamaOutStream(f *testing.F) {
	seeds := testdataSeeds(f, "ollama_out/*.sse")
	for i := 0; i < len(seeds); i++ {
		f.Add(seeds[i], i%2 == 0, i%3 == 0, bytes.Contains(seeds[i], []byte("candidates")))
	}
	f.Add(ollamaChunkEvents(`{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{\"x\":"}}]}`,
		`{"tool_calls":[{"index":1,"id":"b","function":{"name":"g","arguments":"{}"}}]}`, `{"content":"t","reasoning":"r"}`,
		`{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}`, "finish:stop", ollamaUsageChunk, "[DONE]"), true, false, false)
	f.Add([]byte("data: [DONE]\n\n"), false, false, false)
	f.Add([]byte("data: {\"candidates\":[{\"finishReason\":\"STOP\"}]}\n\n"), false, false, true)
	f.Fuzz(func(t *testing.T, input []byte, think, generate, gemini bool) {
		var inner StreamTranslator
		if gemini {
			inner = NewGeminiStream(ollamaInnerContext(think))
		}
		in := OllamaInbound{Stream: true, Think: think, Generate: generate, Model: ollamaTestModel}
		tr := NewOllamaOutStream(inner, in, ollamaTestClock())
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
			out = ollamaFuzzFrame(t, out, payloads)
			if e != nil {
				failed = e
				break
			}
		}
		if failed == nil && !readFailed {
			payloads, e := tr.Finish(nil)
			out = ollamaFuzzFrame(t, out, payloads)
			failed = e
		}
		if failed != nil {
			if failed.Status < 400 || failed.Status > 599 || failed.Message == "" || failed.Code == "" {
				t.Fatalf("bad stream error %+v", failed)
			}
			if failed.Code == "upstream_stream_truncated" && failed.Class != apierr.ClassTruncated {
				t.Fatalf("truncation of class %d", failed.Class)
			}
			out = ollamaErrorLine(out, failed)
		}
		acc := accumulateOllama(t, out, generate)
		if failed == nil && !readFailed && !acc.done {
			t.Fatalf("clean end without a done:true line: %q", out)
		}
		_ = tr.Usage()
	})
}

// ollamaFuzzFrame frames payloads after checking each is one compact
// JSON object on one line, with no name.
func ollamaFuzzFrame(t *testing.T, dst []byte, payloads []Payload) []byte {
	t.Helper()
	for i := 0; i < len(payloads); i++ {
		p := payloads[i]
		if p.Name != "" || len(p.Data) == 0 || p.Data[0] != '{' || bytes.IndexByte(p.Data, '\n') >= 0 || !json.Valid(p.Data) {
			t.Fatalf("bad payload %q %q", p.Name, p.Data)
		}
	}
	return ollamaFrame(dst, payloads)
}

func FuzzOllamaFromHubResponse(f *testing.F) {
	for i := 0; i < len(ollamaResponseCases); i++ {
		f.Add([]byte(ollamaResponseCases[i].hub), i%2 == 0, i%3 == 0)
	}
	f.Add([]byte(`{"error":"x"}`), false, false)
	f.Fuzz(func(t *testing.T, body []byte, think, generate bool) {
		in := OllamaInbound{Think: think, Generate: generate, Model: ollamaTestModel}
		out, _, e := OllamaFromHubResponse(body, in, ollamaTestTimes)
		if e != nil {
			if out != nil || e.Status < 400 || e.Status > 599 || e.Message == "" {
				t.Fatalf("error %+v with output %q", e, out)
			}
			return
		}
		var l ollamaTestLine
		if err := json.Unmarshal(out, &l); err != nil || l.Model == nil || *l.Model != ollamaTestModel || l.Done == nil || !*l.Done ||
			l.DoneReason == "" || l.TotalDuration == nil || l.LoadDuration == nil || l.PromptEvalCount == nil ||
			l.PromptEvalDuration == nil || l.EvalCount == nil || l.EvalDuration == nil || l.Error != nil {
			t.Fatalf("bad answer (%v): %s", err, out)
		}
		if generate != (l.Message == nil) || generate != (l.Response != nil) || !generate && l.Message.Content == nil {
			t.Fatalf("answer of the wrong shape: %s", out)
		}
		if !think && (l.Thinking != nil || l.Message != nil && l.Message.Thinking != nil) {
			t.Fatalf("thinking without think: %s", out)
		}
		for j := 0; l.Message != nil && j < len(l.Message.ToolCalls); j++ {
			args := l.Message.ToolCalls[j].Function.Arguments
			if len(args) == 0 || args[0] != '{' || l.Message.ToolCalls[j].Function.Index != j {
				t.Fatalf("bad tool call: %s", out)
			}
		}
	})
}
