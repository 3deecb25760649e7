package translate

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
	"github.com/llmgateway/llmgateway/gateway/internal/sse"
)

// The client side of these tests is the Responses stream framing, as
// the gateway's responses wire format writes it: each payload a named
// event, "event: NAME\ndata: DATA\n\n"; a failure as the translator's
// own response.failed event (ResponsesStreamFailed for a read error);
// no terminator after the terminal event.

// responsesFrame frames payloads as Responses events, appended to dst.
func responsesFrame(dst []byte, payloads []Payload) []byte {
	for i := 0; i < len(payloads); i++ {
		dst = append(dst, "event: "...)
		dst = append(dst, payloads[i].Name...)
		dst = append(dst, "\ndata: "...)
		dst = append(dst, payloads[i].Data...)
		dst = append(dst, "\n\n"...)
	}
	return dst
}

// runResponsesOut feeds an upstream transcript through sse.NewReader and
// tr the way the pipeline does, returning exactly what a Responses
// client receives, and the error that ended the stream (nil for a clean
// end).
func runResponsesOut(input []byte, tr StreamTranslator) ([]byte, *apierr.Error) {
	reader := sse.NewReader(bytes.NewReader(input), 1<<20)
	var out []byte
	for {
		ev, err := reader.Next()
		if err == io.EOF && !reader.Partial() {
			break
		}
		if err != nil {
			e := apierr.New(502, "server_error", "upstream_stream_interrupted", err.Error())
			return responsesFrame(out, ResponsesStreamFailed(tr, e, nil)), e
		}
		payloads, e := tr.Event(ev, nil)
		out = responsesFrame(out, payloads)
		if e != nil {
			return out, e
		}
	}
	payloads, e := tr.Finish(nil)
	return responsesFrame(out, payloads), e
}

// responsesOutTestContext is the fixed context the Responses client
// tests run with.
func responsesOutTestContext() Context {
	return Context{RequestedModel: "gpt-5-codex", UpstreamModel: "gpt-4o", Created: 1700000000,
		IncludeUsage: true, IDFallback: "resp_fallback"}
}

// responsesOutTestRequest offers the tools the transcripts call: flat
// functions, a namespace's function and a custom tool.
const responsesOutTestRequest = `{"model":"gpt-5-codex","stream":true,"input":"hi","tools":[
	{"type":"function","name":"get_weather","parameters":{"type":"object"}},
	{"type":"function","name":"get_time","parameters":{"type":"object"}},
	{"type":"function","name":"lookup"},
	{"type":"namespace","name":"multi_agent_v1","tools":[{"type":"function","name":"spawn_agent","parameters":{"type":"object"}}]},
	{"type":"custom","name":"apply_patch","format":{"type":"grammar","syntax":"lark","definition":"start: patch"}},
	{"type":"web_search","external_web_access":false}]`

// responsesOutTestInbound is what HubFromResponsesRequest reports for
// responsesOutTestRequest, with reasoning asked for or not.
func responsesOutTestInbound(t testing.TB, reasoning bool) ResponsesInbound {
	body := responsesOutTestRequest + "}"
	if reasoning {
		body = responsesOutTestRequest + `,"reasoning":{"summary":"auto"}}`
	}
	_, in, e := HubFromResponsesRequest([]byte(body))
	if e != nil {
		t.Fatal(e)
	}
	return in
}

// newResponsesOutTest is the translator under test: over an OpenAI
// stream, or over a Gemini stream's translator.
func newResponsesOutTest(t testing.TB, gemini, reasoning bool) StreamTranslator {
	var inner StreamTranslator
	if gemini {
		inner = NewGeminiStream(anthropicOutInnerContext(true))
	}
	return NewResponsesOutStream(inner, responsesOutTestContext(), responsesOutTestInbound(t, reasoning))
}

// responsesOutStreamCases are the golden transcripts: the input under
// testdata/responses_out/, and what a client accumulates from the
// output.
var responsesOutStreamCases = []struct {
	name, input string
	gemini      bool
	reasoning   bool
	id          string
	items       []responsesTestItem
	terminal    string
	reason      string
	usage       *responsesOutUsage
	errorCode   string
}{
	{name: "openai_text", input: "openai_text", id: "resp_R1Text",
		items:    []responsesTestItem{{kind: "message", id: "msg_R1Text_0", status: "completed", text: "Hello, <world> & \"friends\"\n¡ünïcödé ✓ \u2028"}},
		terminal: "response.completed", usage: responsesTestUsage(25, 0, 9, 0)},
	{name: "openai_tool_call", input: "openai_tool_call", id: "resp_R2Tool",
		items: []responsesTestItem{{kind: "message", id: "msg_R2Tool_0", status: "completed", text: "Checking the weather."},
			{kind: "function_call", id: "fc_R2Tool_1", status: "completed", callID: "call_W1", name: "get_weather",
				args: `{"city": "Paris", "n": 12345678901234567890123}`},
			{kind: "function_call", id: "fc_R2Tool_2", status: "completed", callID: "call_W2", name: "get_time", args: `{"tz":"Europe/Paris"}`}},
		terminal: "response.completed", usage: responsesTestUsage(410, 256, 38, 0)},
	{name: "openai_namespace_call", input: "openai_namespace_call", id: "resp_R3Ns",
		items: []responsesTestItem{{kind: "function_call", id: "fc_R3Ns_0", status: "completed", callID: "call_N1",
			name: "spawn_agent", namespace: "multi_agent_v1", args: `{"task":"review the diff"}`}},
		terminal: "response.completed", usage: responsesTestUsage(900, 0, 20, 0)},
	{name: "openai_custom_call", input: "openai_custom_call", id: "resp_R4Patch",
		items: []responsesTestItem{{kind: "message", id: "msg_R4Patch_0", status: "completed", text: "Applying the patch."},
			{kind: "custom_tool_call", id: "ctc_R4Patch_1", status: "completed", callID: "call_P1", name: "apply_patch",
				args: "*** Begin Patch\n*** Update File: a.go\n@@\n-old <x>\n+new \"y\"\n*** End Patch"}},
		terminal: "response.completed", usage: responsesTestUsage(1200, 1024, 40, 12)},
	{name: "openai_length", input: "openai_length", id: "resp_R5Len",
		items:    []responsesTestItem{{kind: "message", id: "msg_R5Len_0", status: "incomplete", text: "A long answer that was cut"}},
		terminal: "response.incomplete", reason: "max_output_tokens", usage: responsesTestUsage(12, 0, 6, 0)},
	{name: "openai_error_midstream", input: "openai_error_midstream", id: "resp_R6Err",
		items:    []responsesTestItem{{kind: "message", id: "msg_R6Err_0", text: "Partial"}},
		terminal: "response.failed", errorCode: "upstream_error"},
	{name: "openai_truncated", input: "openai_truncated", id: "resp_R7Cut",
		items: []responsesTestItem{{kind: "message", id: "msg_R7Cut_0", status: "completed", text: "Cut "},
			{kind: "function_call", id: "fc_R7Cut_1", callID: "call_C3", name: "lookup", args: `{"q":`}},
		terminal: "response.failed", errorCode: "upstream_stream_truncated"},
	{name: "openai_reasoning", input: "openai_reasoning", reasoning: true, id: "resp_R8Think",
		items: []responsesTestItem{{kind: "reasoning", id: "rs_R8Think_0", status: "completed", text: "The user wants 2+2. That is 4."},
			{kind: "message", id: "msg_R8Think_1", status: "completed", text: "2 + 2 = 4."}},
		terminal: "response.completed", usage: responsesTestUsage(30, 0, 57, 50)},
	{name: "openai_reasoning_dropped", input: "openai_reasoning", id: "resp_R8Think",
		items:    []responsesTestItem{{kind: "message", id: "msg_R8Think_0", status: "completed", text: "2 + 2 = 4."}},
		terminal: "response.completed", usage: responsesTestUsage(30, 0, 57, 50)},
	{name: "gemini_text", input: "gemini_text", gemini: true, id: "resp_gText",
		items:    []responsesTestItem{{kind: "message", id: "msg_gText_0", status: "completed", text: "Hello, <world> & \"friends\"\n¡ünïcödé ✓"}},
		terminal: "response.completed", usage: responsesTestUsage(12, 0, 9, 0)},
	{name: "gemini_tool_call", input: "gemini_tool_call", gemini: true, id: "resp_gTool",
		items: []responsesTestItem{{kind: "message", id: "msg_gTool_0", status: "completed", text: "Checking both."},
			{kind: "function_call", id: "fc_gTool_1", status: "completed", callID: "call_gTool_0_tsig_c2lnLTE", name: "get_weather",
				args: `{"city":"Paris","n":12345678901234567890123}`},
			{kind: "function_call", id: "fc_gTool_2", status: "completed", callID: "call_gTool_1", name: "get_time", args: `{"tz":"Europe/Paris"}`}},
		terminal: "response.completed", usage: responsesTestUsage(52, 32, 31, 0)},
	{name: "gemini_namespace_call", input: "gemini_namespace_call", gemini: true, id: "resp_gNs",
		items: []responsesTestItem{{kind: "function_call", id: "fc_gNs_0", status: "completed", callID: "call_gNs_0",
			name: "spawn_agent", namespace: "multi_agent_v1", args: `{"task":"review the diff"}`}},
		terminal: "response.completed", usage: responsesTestUsage(900, 0, 20, 0)},
	{name: "gemini_custom_call", input: "gemini_custom_call", gemini: true, id: "resp_gPatch",
		items: []responsesTestItem{{kind: "message", id: "msg_gPatch_0", status: "completed", text: "Applying the patch."},
			{kind: "custom_tool_call", id: "ctc_gPatch_1", status: "completed", callID: "call_gPatch_0", name: "apply_patch",
				args: "*** Begin Patch\n*** Update File: a.go\n@@\n-old <x>\n+new \"y\"\n*** End Patch"}},
		terminal: "response.completed", usage: responsesTestUsage(1200, 0, 40, 0)},
	{name: "gemini_length", input: "gemini_length", gemini: true, id: "resp_gLen",
		items:    []responsesTestItem{{kind: "message", id: "msg_gLen_0", status: "incomplete", text: "A long answer that was cut"}},
		terminal: "response.incomplete", reason: "max_output_tokens", usage: responsesTestUsage(7, 0, 6, 0)},
	{name: "gemini_error_midstream", input: "gemini_error_midstream", gemini: true, id: "resp_gErr",
		items:    []responsesTestItem{{kind: "message", id: "msg_gErr_0", text: "Partial"}},
		terminal: "response.failed", errorCode: "upstream_error", usage: responsesTestUsage(9, 0, 0, 0)},
	{name: "gemini_truncated", input: "gemini_truncated", gemini: true, id: "resp_gCut",
		items: []responsesTestItem{{kind: "message", id: "msg_gCut_0", status: "completed", text: "Cut "},
			{kind: "function_call", id: "fc_gCut_1", callID: "call_gCut_0", name: "lookup", args: `{"q":"x"}`}},
		terminal: "response.failed", errorCode: "upstream_stream_truncated", usage: responsesTestUsage(9, 0, 0, 0)},
}

// responsesTestUsage is a Response usage.
func responsesTestUsage(input, cached, output, reasoning int64) *responsesOutUsage {
	return &responsesOutUsage{InputTokens: input, InputTokensDetails: responsesOutInputDetails{CachedTokens: cached},
		OutputTokens: output, OutputTokensDetails: responsesOutOutputDetails{ReasoningTokens: reasoning}, TotalTokens: input + output}
}

func TestResponsesOutStreamGolden(t *testing.T) {
	for i := 0; i < len(responsesOutStreamCases); i++ {
		tc := responsesOutStreamCases[i]
		t.Run(tc.name, func(t *testing.T) {
			input, err := os.ReadFile("testdata/responses_out/" + tc.input + ".sse")
			if err != nil {
				t.Fatal(err)
			}
			got, _ := runResponsesOut(input, newResponsesOutTest(t, tc.gemini, tc.reasoning))
			checkGolden(t, "testdata/responses_out/"+tc.name+".golden", got)
		})
	}
}

func TestResponsesOutStreamSemantics(t *testing.T) {
	for i := 0; i < len(responsesOutStreamCases); i++ {
		tc := responsesOutStreamCases[i]
		t.Run(tc.name, func(t *testing.T) {
			input, err := os.ReadFile("testdata/responses_out/" + tc.input + ".sse")
			if err != nil {
				t.Fatal(err)
			}
			out, e := runResponsesOut(input, newResponsesOutTest(t, tc.gemini, tc.reasoning))
			if (e != nil) != (tc.errorCode != "") || e != nil && e.Code != tc.errorCode {
				t.Fatalf("error %v, want code %q", e, tc.errorCode)
			}
			acc := accumulateResponses(t, out)
			if acc.id != tc.id || acc.model != "gpt-5-codex" {
				t.Errorf("response id %q model %q", acc.id, acc.model)
			}
			if len(acc.items) != len(tc.items) {
				t.Fatalf("items %+v, want %+v", acc.items, tc.items)
			}
			for j := 0; j < len(tc.items); j++ {
				if acc.items[j] != tc.items[j] {
					t.Errorf("item %d = %+v, want %+v", j, acc.items[j], tc.items[j])
				}
			}
			if acc.terminal != tc.terminal || acc.reason != tc.reason || acc.errorCode != tc.errorCode {
				t.Errorf("terminal %s reason %q error %q, want %s %q %q", acc.terminal, acc.reason, acc.errorCode, tc.terminal, tc.reason, tc.errorCode)
			}
			if (acc.usage == nil) != (tc.usage == nil) || acc.usage != nil && *acc.usage != *tc.usage {
				t.Errorf("usage %+v, want %+v", acc.usage, tc.usage)
			}
			if tc.errorCode != "" && acc.errorMsg == "" {
				t.Error("response.failed without an error message")
			}
		})
	}
}

// responsesChunkEvents frames hub chunks (each a delta JSON object, a
// whole chunk starting with {"id", {"error" or {"choices", "finish:X",
// or "[DONE]") as an OpenAI upstream sends them.
func responsesChunkEvents(chunks ...string) []byte {
	var b strings.Builder
	for i := 0; i < len(chunks); i++ {
		c := chunks[i]
		switch {
		case c == "[DONE]" || strings.HasPrefix(c, `{"id"`) || strings.HasPrefix(c, `{"error"`) || strings.HasPrefix(c, `{"choices"`):
		case strings.HasPrefix(c, "finish:"):
			c = `{"id":"chatcmpl-S","choices":[{"index":0,"delta":{},"finish_reason":"` + c[len("finish:"):] + `"}]}`
		default:
			c = `{"id":"chatcmpl-S","choices":[{"index":0,"delta":` + c + `,"finish_reason":null}]}`
		}
		b.WriteString("data: " + c + "\n\n")
	}
	return []byte(b.String())
}

// responsesTraceOf runs input through tr and returns the client's view
// of it, one line per event that matters (see the accumulator).
func responsesTraceOf(t *testing.T, input []byte, tr StreamTranslator) string {
	t.Helper()
	out, _ := runResponsesOut(input, tr)
	return strings.Join(accumulateResponses(t, out).trace, "\n")
}

const responsesUsageChunk = `{"id":"chatcmpl-S","choices":[],"usage":{"prompt_tokens":50,"completion_tokens":9,"prompt_tokens_details":{"cached_tokens":10}}}`

func TestResponsesOutStreamScenarios(t *testing.T) {
	cases := []struct {
		name      string
		reasoning bool
		input     []byte
		want      string
	}{
		{"parallel_calls_interleaved_are_buffered", false, responsesChunkEvents(
			`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"x\":"}}]}`,
			`{"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"get_time","arguments":"{\"y\":"}}]}`,
			`{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}`,
			`{"tool_calls":[{"index":1,"function":{"arguments":"2}"}}]}`,
			"finish:tool_calls", responsesUsageChunk, "[DONE]"),
			"created resp_S\nadd 0 function_call call_1 get_weather\n0 function_call_arguments.delta {\"x\":\n0 function_call_arguments.delta 1}\n" +
				"done 0 completed\nadd 1 function_call call_2 get_time\n1 function_call_arguments.delta {\"y\":\n1 function_call_arguments.delta 2}\n" +
				"done 1 completed\n" +
				"completed in=50 out=9 cached=10"},
		{"text_after_an_incomplete_call_waits_for_it", false, responsesChunkEvents(
			`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"lookup","arguments":"{\"q\":"}}]}`,
			`{"content":"late "}`, `{"content":"text"}`, `{"tool_calls":[{"index":0,"function":{"arguments":"2}"}}]}`,
			`{"content":"!"}`, "finish:stop", "[DONE]"),
			"created resp_S\nadd 0 function_call call_1 lookup\n0 function_call_arguments.delta {\"q\":\n0 function_call_arguments.delta 2}\n" +
				"done 0 completed\nadd 1 message\n1 output_text.delta late text\n1 output_text.delta !\ndone 1 completed\ncompleted"},
		{"call_without_arguments_gets_an_empty_object", false, responsesChunkEvents(
			`{"tool_calls":[{"index":0,"id":"c0","type":"function","function":{"name":"lookup","arguments":""}}]}`, "finish:tool_calls", "[DONE]"),
			"created resp_S\nadd 0 function_call c0 lookup\n0 function_call_arguments.delta {}\ndone 0 completed\ncompleted"},
		{"custom_call_input_sent_whole_at_close", false, responsesChunkEvents(
			`{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"apply_patch","arguments":"{\"input\":\"a\\n"}}]}`,
			`{"tool_calls":[{"index":0,"function":{"arguments":"b\"}"}}]}`, "finish:tool_calls", "[DONE]"),
			"created resp_S\nadd 0 custom_tool_call c1 apply_patch\n0 custom_tool_call_input.delta a\nb\ndone 0 completed\ncompleted"},
		{"custom_call_with_raw_text_arguments", false, responsesChunkEvents(
			`{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"apply_patch","arguments":"*** Begin Patch"}}]}`,
			"finish:tool_calls", "[DONE]"),
			"created resp_S\nadd 0 custom_tool_call c1 apply_patch\n0 custom_tool_call_input.delta *** Begin Patch\ndone 0 completed\ncompleted"},
		{"calls_without_index_or_id", false, responsesChunkEvents(
			`{"tool_calls":[{"function":{"name":"lookup","arguments":"{\"k\":"}}]}`,
			`{"tool_calls":[{"function":{"arguments":"true}"}}]}`,
			`{"tool_calls":[{"id":"c9","function":{"name":"multi_agent_v1__spawn_agent","arguments":{"obj":[1, 2]}}}]}`,
			"finish:stop", "[DONE]"),
			"created resp_S\nadd 0 function_call call_S_0 lookup\n0 function_call_arguments.delta {\"k\":\n0 function_call_arguments.delta true}\n" +
				"done 0 completed\nadd 1 function_call c9 spawn_agent ns=multi_agent_v1\n1 function_call_arguments.delta {\"obj\":[1,2]}\ndone 1 completed\ncompleted"},
		{"interleaved_reasoning_and_text", true, responsesChunkEvents(
			`{"reasoning_content":"First."}`, `{"reasoning_content":" Then."}`, `{"content":"Answer"}`,
			`{"reasoning":"Again."}`, `{"content":" more","reasoning_content":""}`, "finish:stop", "[DONE]"),
			"created resp_S\nadd 0 reasoning\n0 reasoning_summary_text.delta First.\n0 reasoning_summary_text.delta  Then.\ndone 0 completed\n" +
				"add 1 message\n1 output_text.delta Answer\ndone 1 completed\nadd 2 reasoning\n2 reasoning_summary_text.delta Again.\ndone 2 completed\n" +
				"add 3 message\n3 output_text.delta  more\ndone 3 completed\ncompleted"},
		{"reasoning_dropped_when_not_asked", false, responsesChunkEvents(
			`{"reasoning_content":"First."}`, `{"content":"Answer"}`, `{"reasoning":"Again."}`, `{"content":" more"}`, "finish:stop", "[DONE]"),
			"created resp_S\nadd 0 message\n0 output_text.delta Answer\n0 output_text.delta  more\ndone 0 completed\ncompleted"},
		{"refusal", false, responsesChunkEvents(`{"refusal":"I can't."}`, "finish:stop", "[DONE]"),
			"created resp_S\nadd 0 message\n0 refusal.delta I can't.\ndone 0 completed\ncompleted"},
		{"content_filter_is_incomplete", false, responsesChunkEvents(
			`{"content":[{"type":"text","text":"par\"t"},{"type":"image_url"}]}`, "finish:content_filter", "[DONE]"),
			"created resp_S\nadd 0 message\n0 output_text.delta par\"t\ndone 0 incomplete\nincomplete content_filter"},
		{"usage_in_the_finish_chunk_waits_for_done", false, responsesChunkEvents(`{"content":"x"}`,
			`{"id":"chatcmpl-S","choices":[{"index":0,"delta":{},"finish_reason":"length"}],"usage":{"prompt_tokens":7,"completion_tokens":1}}`, "[DONE]"),
			"created resp_S\nadd 0 message\n0 output_text.delta x\ndone 0 incomplete\nincomplete max_output_tokens in=7 out=1 cached=0"},
		{"usage_before_finish_does_not_end_the_response", false, responsesChunkEvents(`{"content":"x"}`, responsesUsageChunk,
			`{"content":"y"}`, "finish:stop", "[DONE]"),
			"created resp_S\nadd 0 message\n0 output_text.delta x\n0 output_text.delta y\ndone 0 completed\ncompleted in=50 out=9 cached=10"},
		{"done_without_finish", false, responsesChunkEvents(`{"content":"x"}`, "[DONE]"),
			"created resp_S\nadd 0 message\n0 output_text.delta x\ndone 0 completed\ncompleted"},
		{"only_done", false, responsesChunkEvents("[DONE]"), "created resp_fallback\ncompleted"},
		{"finish_without_done_ends_cleanly", false, responsesChunkEvents(`{"content":"x"}`, "finish:stop"),
			"created resp_S\nadd 0 message\n0 output_text.delta x\ndone 0 completed\ncompleted"},
		{"events_after_the_end_ignored", false, responsesChunkEvents(`{"content":"x"}`, "finish:stop", responsesUsageChunk,
			`{"content":"late"}`, `{"error":{"message":"late","type":"server_error"}}`, "[DONE]"),
			"created resp_S\nadd 0 message\n0 output_text.delta x\ndone 0 completed\ncompleted in=50 out=9 cached=10"},
		{"other_choices_ignored", false, responsesChunkEvents(
			`{"id":"chatcmpl-S","choices":[{"index":1,"delta":{"content":"other"}},{"index":0,"delta":{"content":"mine"}}]}`, "finish:stop", "[DONE]"),
			"created resp_S\nadd 0 message\n0 output_text.delta mine\ndone 0 completed\ncompleted"},
		{"error_first", false, responsesChunkEvents(`{"error":{"message":"Overloaded","type":"overloaded_error"}}`),
			"created resp_fallback\nfailed upstream_error"},
		{"error_after_finish_before_usage", false, responsesChunkEvents(`{"content":"x"}`, "finish:stop", `{"error":{"message":"boom","code":500}}`),
			"created resp_S\nadd 0 message\n0 output_text.delta x\ndone 0 completed\nfailed upstream_error"},
		{"not_json", false, []byte("data: {\"content\":\"x\"}\n\ndata: hello\n\n"), "created resp_fallback\nfailed upstream_bad_response"},
		{"empty_stream_is_truncated", false, nil, "created resp_fallback\nfailed upstream_stream_truncated"},
		{"read_error_reported_through_the_translator", false, []byte("data: {\"id\":\"chatcmpl-S\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\ndata: {\"cut"),
			"created resp_S\nadd 0 message\n0 output_text.delta x\nfailed upstream_stream_interrupted"},
		{"odd_types_read_leniently", false, responsesChunkEvents(`{"id":"chatcmpl-S","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":7}]}`,
			`{"id":"chatcmpl-S","choices":[{"index":0,"delta":{"content":5,"tool_calls":"no"},"finish_reason":"stop"}]}`, "[DONE]"),
			"created resp_S\nadd 0 message\n0 output_text.delta x\ndone 0 completed\ncompleted"},
	}
	for i := 0; i < len(cases); i++ {
		tc := cases[i]
		t.Run(tc.name, func(t *testing.T) {
			tr := NewResponsesOutStream(nil, responsesOutTestContext(), responsesOutTestInbound(t, tc.reasoning))
			if got := responsesTraceOf(t, tc.input, tr); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestResponsesOutStreamErrors(t *testing.T) {
	cases := []struct {
		name   string
		input  []byte
		status int
		code   string
		class  apierr.Class
	}{
		{"rate_limited", responsesChunkEvents(`{"error":{"message":"Slow down","type":"requests","code":"rate_limit_exceeded"}}`),
			429, "upstream_error", apierr.ClassRateLimited},
		{"overloaded", responsesChunkEvents(`{"error":{"message":"Overloaded","type":"overloaded_error"}}`), 529, "upstream_error", apierr.ClassServer},
		{"numeric_code", responsesChunkEvents(`{"error":{"message":"unavailable","code":503}}`), 503, "upstream_error", apierr.ClassServer},
		{"bad_json", []byte("data: {\"choices\":[\n\n"), 502, "upstream_bad_response", apierr.ClassBadResponse},
	}
	for i := 0; i < len(cases); i++ {
		tc := cases[i]
		t.Run(tc.name, func(t *testing.T) {
			tr := NewResponsesOutStream(nil, responsesOutTestContext(), ResponsesInbound{})
			reader := sse.NewReader(bytes.NewReader(tc.input), 1<<20)
			ev, err := reader.Next()
			if err != nil {
				t.Fatal(err)
			}
			out, e := tr.Event(ev, nil)
			if e == nil || len(out) != 3 || out[2].Name != "response.failed" {
				t.Fatalf("got %d payloads, error %v; want created, in_progress, failed and the error", len(out), e)
			}
			if e.Status != tc.status || e.Code != tc.code || e.Class != tc.class {
				t.Errorf("error %d %s class %d, want %d %s class %d", e.Status, e.Code, e.Class, tc.status, tc.code, tc.class)
			}
			if !bytes.Contains(out[2].Data, []byte(`"error":{"code":"`+tc.code+`","message":`)) {
				t.Errorf("response.failed %s", out[2].Data)
			}
			if more := ResponsesStreamFailed(tr, e, nil); len(more) != 0 {
				t.Errorf("a second failure event: %s", more[0].Data)
			}
			if more, e := tr.Finish(nil); len(more) != 0 || e != nil {
				t.Errorf("finish after the failure: %d payloads, %v", len(more), e)
			}
		})
	}
	t.Run("truncated", func(t *testing.T) {
		tr := NewResponsesOutStream(nil, responsesOutTestContext(), ResponsesInbound{})
		if _, e := tr.Event(sse.Event{Data: []byte(`{"choices":[{"index":0,"delta":{"content":"x"}}]}`)}, nil); e != nil {
			t.Fatal(e)
		}
		out, e := tr.Finish(nil)
		if e == nil || e.Status != 502 || e.Code != "upstream_stream_truncated" || e.Class != apierr.ClassTruncated ||
			len(out) != 1 || out[0].Name != "response.failed" {
			t.Fatalf("finish without finish_reason: %d payloads, %+v", len(out), e)
		}
	})
	t.Run("failed_not_for_other_translators", func(t *testing.T) {
		if out := ResponsesStreamFailed(NewGeminiStream(anthropicOutInnerContext(true)), apierr.New(502, "server_error", "x", "y"), nil); len(out) != 0 {
			t.Errorf("payloads %d", len(out))
		}
	})
}

func TestResponsesOutStreamInner(t *testing.T) {
	chunk := func(delta string) string {
		return `{"id":"chatcmpl-in","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}`
	}
	finish := `{"id":"chatcmpl-in","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`
	overloaded := apierr.New(529, "server_error", "upstream_error", "overloaded")
	t.Run("error_after_payloads_keeps_its_status", func(t *testing.T) {
		inner := &scriptedStream{events: [][]string{{chunk(`{"content":"a"}`), chunk(`{"content":"b"}`)}}, errs: []*apierr.Error{overloaded}}
		tr := NewResponsesOutStream(inner, responsesOutTestContext(), ResponsesInbound{})
		out, e := tr.Event(sse.Event{Data: []byte("x")}, nil)
		if e != overloaded || len(out) != 7 || out[6].Name != "response.failed" {
			t.Fatalf("got %d payloads and %v; want created, in_progress, added, part, two deltas, failed, then the inner error", len(out), e)
		}
	})
	t.Run("finish_translates_trailing_payloads_then_completes", func(t *testing.T) {
		inner := &scriptedStream{events: [][]string{{chunk(`{"content":"a"}`), finish}}, errs: []*apierr.Error{nil},
			finish: []string{`{"id":"chatcmpl-in","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"completion_tokens_details":{"reasoning_tokens":1}}}`}}
		tr := NewResponsesOutStream(inner, responsesOutTestContext(), ResponsesInbound{})
		got := responsesTraceOf(t, []byte("data: x\n\n"), tr)
		want := "created resp_in\nadd 0 message\n0 output_text.delta a\ndone 0 completed\ncompleted in=5 out=2 cached=0"
		if got != want || !inner.finished {
			t.Errorf("got\n%s\nwant\n%s", got, want)
		}
		if u := tr.Usage(); u != (Usage{PromptTokens: 5, CompletionTokens: 2, Reported: true}) {
			t.Errorf("usage %+v", u)
		}
	})
	t.Run("finish_error_after_its_payloads", func(t *testing.T) {
		inner := &scriptedStream{events: [][]string{{chunk(`{"content":"a"}`)}}, errs: []*apierr.Error{nil},
			finish: []string{chunk(`{"content":"b"}`)}, finishE: overloaded}
		tr := NewResponsesOutStream(inner, responsesOutTestContext(), ResponsesInbound{})
		if _, e := tr.Event(sse.Event{Data: []byte("x")}, nil); e != nil {
			t.Fatal(e)
		}
		out, e := tr.Finish(nil)
		if e != overloaded || len(out) != 2 || out[0].Name != "response.output_text.delta" || out[1].Name != "response.failed" {
			t.Fatalf("got %d payloads, %v", len(out), e)
		}
	})
	t.Run("inner_usage_when_no_usage_chunk", func(t *testing.T) {
		inner := &scriptedStream{events: [][]string{{chunk(`{"content":"a"}`), finish}}, errs: []*apierr.Error{nil},
			usage: Usage{PromptTokens: 300, CompletionTokens: 12, CacheReadTokens: 100, Reported: true}}
		tr := NewResponsesOutStream(inner, responsesOutTestContext(), ResponsesInbound{})
		got := responsesTraceOf(t, []byte("data: x\n\n"), tr)
		if !strings.HasSuffix(got, "completed in=300 out=12 cached=100") {
			t.Errorf("got\n%s", got)
		}
		if u := tr.Usage(); u != inner.usage {
			t.Errorf("usage %+v, want the inner's", u)
		}
	})
	t.Run("no_usage_anywhere_is_null", func(t *testing.T) {
		tr := NewResponsesOutStream(nil, responsesOutTestContext(), ResponsesInbound{})
		out, _ := runResponsesOut(responsesChunkEvents(`{"content":"a"}`, "finish:stop", "[DONE]"), tr)
		acc := accumulateResponses(t, out)
		if acc.usage != nil || tr.Usage().Reported {
			t.Errorf("usage %+v / %+v", acc.usage, tr.Usage())
		}
	})
}

// TestResponsesOutStreamCompletedItems checks the terminal Response of
// a golden transcript item by item: what Codex reads from
// response.completed.
func TestResponsesOutStreamCompletedItems(t *testing.T) {
	input, err := os.ReadFile("testdata/responses_out/openai_custom_call.sse")
	if err != nil {
		t.Fatal(err)
	}
	out, e := runResponsesOut(input, newResponsesOutTest(t, false, false))
	if e != nil {
		t.Fatal(e)
	}
	acc := accumulateResponses(t, out)
	want := []string{
		`{"type":"message","id":"msg_R4Patch_0","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Applying the patch.","annotations":[]}]}`,
		`{"type":"custom_tool_call","id":"ctc_R4Patch_1","status":"completed","call_id":"call_P1","name":"apply_patch",` +
			`"input":"*** Begin Patch\n*** Update File: a.go\n@@\n-old <x>\n+new \"y\"\n*** End Patch"}`,
	}
	if len(acc.output) != len(want) {
		t.Fatalf("output %s", acc.output)
	}
	for i := 0; i < len(want); i++ {
		var got, exp interface{}
		if json.Unmarshal(acc.output[i], &got) != nil || json.Unmarshal([]byte(want[i]), &exp) != nil || !jsonEqual(got, exp) {
			t.Errorf("item %d\n got %s\nwant %s", i, acc.output[i], want[i])
		}
	}
}

// jsonEqual compares two decoded JSON values.
func jsonEqual(a, b interface{}) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}
