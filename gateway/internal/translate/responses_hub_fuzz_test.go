package translate

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
	"github.com/llmgateway/llmgateway/gateway/internal/sse"
)

func FuzzHubFromResponsesRequest(f *testing.F) {
	// Codex's requests without most of their 17 KB prompt: the fuzzer
	// mutates small inputs faster.
	long := strings.Repeat(`- Follow the \"rules\" & <guidelines>.\n`, 399)
	seeds := []string{
		`{"model":"m","input":"hi"}`,
		strings.Replace(codexRequest(), long, "", 1),
		strings.Replace(codexRequest(codexFollowUp...), long, "", 1),
		`{"model":"m","instructions":"s","stream":true,"max_output_tokens":9,"temperature":0.5,"reasoning":{"effort":"low","summary":"auto"},` +
			`"text":{"format":{"type":"json_schema","name":"a","schema":{"type":"object"},"strict":true}},` +
			`"input":[{"role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"data:image/png;base64,AA"},` +
			`{"type":"input_file","filename":"a.pdf","file_data":"data:application/pdf;base64,JV"}]},` +
			`{"type":"function_call","call_id":"c","name":"f","arguments":"{\"n\":123456789012345678901}"},` +
			`{"type":"function_call_output","call_id":"c","output":[{"type":"input_image","image_url":"https://x/y.png"}]}],` +
			`"tools":[{"type":"function","name":"f"},{"type":"namespace","name":"n.s","tools":[{"type":"custom","name":"g"},{"type":"web_search"}]}],` +
			`"tool_choice":{"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"g","namespace":"n.s"}]}}`,
		`{"model":"m","previous_response_id":"resp_1","input":"x"}`,
		`{"model":"m","input":[{"type":"item_reference","id":"x"}]}`,
		`{"model":"m","input":[{"type":"message","role":"tool","content":"x"}]}`,
		`{"model":"m","input":[]}`,
		`{"model":"m","input":{}}`,
		`[]`,
	}
	for i := 0; i < len(seeds); i++ {
		f.Add([]byte(seeds[i]))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		out, in, e := HubFromResponsesRequest(body)
		if e != nil {
			if out != nil || e.Status != 400 || e.Kind != "invalid_request_error" || e.Code == "" || e.Message == "" {
				t.Fatalf("error %+v with output %q", e, out)
			}
			return
		}
		var hub struct {
			Model    string `json:"model"`
			Stream   bool   `json:"stream"`
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
			Tools []responsesHubTool `json:"tools"`
		}
		if err := json.Unmarshal(out, &hub); err != nil {
			t.Fatalf("output is not a JSON object: %v: %s", err, out)
		}
		if hub.Model == "" || hub.Model != in.Model || len(hub.Messages) == 0 || hub.Stream != in.Stream {
			t.Fatalf("output lacks model or messages, or disagrees with %+v: %s", in, out)
		}
		for i := 0; i < len(hub.Messages); i++ {
			switch hub.Messages[i].Role {
			case "system", "developer", "user", "assistant", "tool":
			default:
				t.Fatalf("message %d has role %q: %s", i, hub.Messages[i].Role, out)
			}
		}
		names := map[string]bool{}
		for i := 0; i < len(hub.Tools); i++ {
			fn := hub.Tools[i].Function
			if fn.Name == "" || names[fn.Name] || len(fn.Parameters) == 0 || fn.Parameters[0] != '{' {
				t.Fatalf("tool %d: %s", i, out)
			}
			names[fn.Name] = true
		}
		for name, ns := range in.Namespaces {
			if !names[name] || ns == "" || in.Functions[name] == "" || len(name) > 64 || strings.Trim(name, responsesNameChars) != "" {
				t.Fatalf("namespace function %q (%q) is not a valid offered name: %s", name, ns, out)
			}
		}
		for name := range in.Custom {
			if !names[name] {
				t.Fatalf("custom tool %q not offered: %s", name, out)
			}
		}
		for i := 0; i < len(in.DroppedTools); i++ {
			for j := 0; j < i; j++ {
				if in.DroppedTools[i] == in.DroppedTools[j] {
					t.Fatalf("dropped tools repeat: %v", in.DroppedTools)
				}
			}
		}
	})
}

func FuzzResponsesFromHubResponse(f *testing.F) {
	seeds := []string{
		`{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi","reasoning_content":"r","refusal":"no",` +
			`"tool_calls":[{"id":"c","type":"function","function":{"name":"apply_patch","arguments":"{\"input\":\"x\"}"}},` +
			`{"function":{"name":"multi_agent_v1__spawn_agent","arguments":{"b":2}}}]},"finish_reason":"length"}],` +
			`"usage":{"prompt_tokens":3,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":1},"completion_tokens_details":{"reasoning_tokens":1}}}`,
		`{"choices":[{"message":{"content":[{"type":"text","text":"x"}]},"finish_reason":"content_filter"}]}`,
		`{"error":{"message":"x","code":429}}`,
		`{"object":"chat.completion.chunk","choices":[]}`,
		`null`,
	}
	for i := 0; i < len(seeds); i++ {
		f.Add([]byte(seeds[i]), true)
	}
	f.Fuzz(func(t *testing.T, body []byte, reasoning bool) {
		in := responsesOutTestInbound(t, reasoning)
		out, u, e := ResponsesFromHubResponse(body, responsesOutTestContext(), in)
		if e != nil {
			if out != nil || e.Status < 400 || e.Status > 599 || e.Message == "" {
				t.Fatalf("error %+v with output %q", e, out)
			}
			return
		}
		var r responsesTestResponse
		if err := json.Unmarshal(out, &r); err != nil || r.ID == "" || r.Object != "response" || r.Model != "gpt-5-codex" || r.Output == nil ||
			r.Status != "completed" && r.Status != "incomplete" || (r.Status == "incomplete") != (r.IncompleteDetails != nil) || (r.Usage != nil) != u.Reported {
			t.Fatalf("bad response (%v): %s", err, out)
		}
		for i := 0; i < len(r.Output); i++ {
			var it responsesTestWireItem
			if err := json.Unmarshal(r.Output[i], &it); err != nil || it.ID == "" {
				t.Fatalf("item %d: %s", i, out)
			}
			switch it.Type {
			case "message", "function_call", "custom_tool_call":
			case "reasoning":
				if !reasoning {
					t.Fatalf("reasoning item without reasoning: %s", out)
				}
			default:
				t.Fatalf("item type %q: %s", it.Type, out)
			}
			if (it.Type == "function_call" || it.Type == "custom_tool_call") && it.CallID == "" {
				t.Fatalf("call without call_id: %s", out)
			}
		}
	})
}

// FuzzResponsesOutStream feeds arbitrary bytes as an OpenAI stream (or a
// Gemini one, through its translator) through the SSE reader and the
// translator, as the pipeline does. Whatever happens, the client must
// receive a well-formed Responses event stream (accumulateResponses:
// JSON data of the event's type, sequence_number counting from 0,
// response.created and response.in_progress first, items opened and
// closed in order, .done events that agree with the deltas, a terminal
// Response holding the items done, nothing after it); a clean end sends
// response.completed or response.incomplete, and a failure
// response.failed and an error with a status and a message.
func FuzzResponsesOutStream(f *testing.F) {
	seeds := testdataSeeds(f, "responses_out/*.sse")
	for i := 0; i < len(seeds); i++ {
		f.Add(seeds[i], i%2 == 0, false)
		f.Add(seeds[i], i%2 == 1, true)
	}
	f.Add(responsesChunkEvents(`{"tool_calls":[{"index":0,"id":"a","function":{"name":"apply_patch","arguments":"{\"input\":"}}]}`,
		`{"tool_calls":[{"index":1,"id":"b","function":{"name":"multi_agent_v1__spawn_agent","arguments":"{}"}}]}`,
		`{"content":"t","reasoning":"r","refusal":"no"}`, `{"tool_calls":[{"index":0,"function":{"arguments":"\"x\"}"}}]}`, "finish:length"), false, true)
	f.Add([]byte("data: [DONE]\n\n"), false, false)
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":{\"arguments\":{\"a\":1}}}]}}]}\n\n"), false, false)
	f.Add([]byte("data: {\"candidates\":[{\"finishReason\":\"STOP\"}]}\n\n"), true, false)
	f.Fuzz(func(t *testing.T, input []byte, gemini, reasoning bool) {
		var inner StreamTranslator
		if gemini {
			inner = NewGeminiStream(anthropicOutInnerContext(reasoning))
		}
		tr := NewResponsesOutStream(inner, responsesOutTestContext(), responsesOutTestInbound(t, reasoning))
		reader := sse.NewReader(bytes.NewReader(input), 64<<10)
		var out []byte
		var failed *apierr.Error
		// late: the read failed after the translator had ended the
		// stream (a usage chunk after the finish closes it); the client
		// has its terminal event already and gets nothing more.
		late := false
		for failed == nil {
			ev, err := reader.Next()
			if err == io.EOF && !reader.Partial() {
				payloads, e := tr.Finish(nil)
				out, failed = responsesFrame(out, payloads), e
				break
			}
			if err != nil {
				failed = apierr.New(502, "server_error", "upstream_stream_interrupted", "read failed")
				more := ResponsesStreamFailed(tr, failed, nil)
				late = len(more) == 0
				out = responsesFrame(out, more)
				break
			}
			payloads, e := tr.Event(ev, nil)
			out, failed = responsesFrame(out, payloads), e
		}
		if failed != nil && (failed.Status < 400 || failed.Status > 599 || failed.Message == "" || failed.Code == "") {
			t.Fatalf("bad stream error %+v", failed)
		}
		acc := accumulateResponses(t, out)
		switch {
		case late && acc.terminal != "response.completed" && acc.terminal != "response.incomplete":
			t.Fatalf("error %v after the end, which was %q: %q", failed, acc.terminal, out)
		case failed != nil && !late && acc.terminal != "response.failed":
			t.Fatalf("error %v ended with %q: %q", failed, acc.terminal, out)
		case failed == nil && acc.terminal != "response.completed" && acc.terminal != "response.incomplete":
			t.Fatalf("clean end with %q: %q", acc.terminal, out)
		}
		_ = tr.Usage()
	})
}
