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

// The client side of these tests is the Anthropic Messages stream
// framing, as the gateway's anthropic wire format writes it: each
// payload a named event, "event: NAME\ndata: DATA\n\n"; a mid-stream
// error as an "error" event whose type follows the error's status; no
// terminator after message_stop.

// anthropicOutFrame frames payloads as Anthropic events, appended to
// dst.
func anthropicOutFrame(dst []byte, payloads []Payload) []byte {
	for i := 0; i < len(payloads); i++ {
		dst = append(dst, "event: "...)
		dst = append(dst, payloads[i].Name...)
		dst = append(dst, "\ndata: "...)
		dst = append(dst, payloads[i].Data...)
		dst = append(dst, "\n\n"...)
	}
	return dst
}

// anthropicOutErrorType is the Anthropic error type for an error's
// status.
func anthropicOutErrorType(status int) string {
	switch status {
	case 401:
		return "authentication_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 503, 529:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

// anthropicOutErrorEvent frames e as Anthropic's mid-stream error event,
// appended to dst.
func anthropicOutErrorEvent(dst []byte, e *apierr.Error) []byte {
	var body struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	body.Type = "error"
	body.Error.Type = anthropicOutErrorType(e.Status)
	body.Error.Message = e.Message
	return anthropicOutFrame(dst, []Payload{{Name: "error", Data: encodeJSON(&body)}})
}

// runAnthropicOut feeds an upstream transcript through sse.NewReader and
// tr the way the pipeline does, returning exactly what an Anthropic
// client receives.
func runAnthropicOut(input []byte, tr StreamTranslator) []byte {
	reader := sse.NewReader(bytes.NewReader(input), 1<<20)
	var out []byte
	for {
		ev, err := reader.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return anthropicOutErrorEvent(out, apierr.New(502, "server_error", "upstream_stream_interrupted", err.Error()))
		}
		payloads, e := tr.Event(ev, nil)
		out = anthropicOutFrame(out, payloads)
		if e != nil {
			return anthropicOutErrorEvent(out, e)
		}
	}
	payloads, e := tr.Finish(nil)
	out = anthropicOutFrame(out, payloads)
	if e != nil {
		return anthropicOutErrorEvent(out, e)
	}
	return out
}

// anthropicOutInnerContext is the context the inner (Gemini) translator
// of the tests runs with.
func anthropicOutInnerContext(includeUsage bool) Context {
	return Context{RequestedModel: "gemini-upstream", UpstreamModel: "gemini-2.5-flash", Created: 1700000000,
		IncludeUsage: includeUsage, IDFallback: "chatcmpl-inner"}
}

// anthropicOutTestEstimate is the prompt-token estimate of the tests.
const anthropicOutTestEstimate = 120

// newAnthropicOutTest is the translator under test: over an OpenAI
// stream, or over a Gemini stream's translator.
func newAnthropicOutTest(gemini, thinking bool) StreamTranslator {
	var inner StreamTranslator
	if gemini {
		inner = NewGeminiStream(anthropicOutInnerContext(true))
	}
	return NewAnthropicOutStream(inner, anthropicOutTestContext(), AnthropicInbound{Stream: true, Thinking: thinking}, anthropicOutTestEstimate)
}

// anthropicOutStreamCases are the golden transcripts: the input under
// testdata/anthropic_out/, and what a client accumulates from the
// output.
var anthropicOutStreamCases = []struct {
	name, input string
	gemini      bool
	thinking    bool
	id          string
	blocks      []anthropicOutTestBlock
	stopReason  string
	usage       anthropicOutUsage
	errorType   string
}{
	{name: "openai_text", input: "openai_text", id: "msg_Bx1Text",
		blocks:     []anthropicOutTestBlock{{kind: "text", text: "Hello, <world> & \"friends\"\n¡ünïcödé ✓"}},
		stopReason: "end_turn", usage: anthropicOutUsage{InputTokens: 25, OutputTokens: 9}},
	{name: "openai_tools_parallel", input: "openai_tools_parallel", id: "msg_Bx2Tools",
		blocks: []anthropicOutTestBlock{{kind: "text", text: "Checking both."},
			{kind: "tool_use", id: "call_A1", name: "get_weather", input: `{"city": "Paris"}`},
			{kind: "tool_use", id: "call_B2", name: "get_time", input: `{"tz":"Europe/Paris","n":12345678901234567890123}`}},
		stopReason: "tool_use", usage: anthropicOutUsage{InputTokens: 410, OutputTokens: 38}},
	{name: "openai_reasoning", input: "openai_reasoning", thinking: true, id: "msg_Bx3Think",
		blocks:     []anthropicOutTestBlock{{kind: "thinking", text: "The user wants 2+2. That is 4."}, {kind: "text", text: "2 + 2 = 4."}},
		stopReason: "end_turn", usage: anthropicOutUsage{InputTokens: 30, OutputTokens: 57}},
	{name: "openai_reasoning_dropped", input: "openai_reasoning", id: "msg_Bx3Think",
		blocks:     []anthropicOutTestBlock{{kind: "text", text: "2 + 2 = 4."}},
		stopReason: "end_turn", usage: anthropicOutUsage{InputTokens: 30, OutputTokens: 57}},
	{name: "openai_usage_cached", input: "openai_usage_cached", id: "msg_Bx4Cache",
		blocks:     []anthropicOutTestBlock{{kind: "text", text: "Cached answer."}},
		stopReason: "end_turn", usage: anthropicOutUsage{InputTokens: 86, OutputTokens: 4, CacheReadInputTokens: 1920}},
	{name: "openai_length", input: "openai_length", id: "msg_Bx5Len",
		blocks:     []anthropicOutTestBlock{{kind: "text", text: "A long answer that was cut"}},
		stopReason: "max_tokens", usage: anthropicOutUsage{InputTokens: anthropicOutTestEstimate, OutputTokens: 7}},
	{name: "openai_error_midstream", input: "openai_error_midstream", id: "msg_Bx6Err",
		blocks: []anthropicOutTestBlock{{kind: "text", text: "Partial"}}, errorType: "rate_limit_error"},
	{name: "openai_truncated", input: "openai_truncated", id: "msg_Bx7Cut",
		blocks:    []anthropicOutTestBlock{{kind: "text", text: "Cut "}, {kind: "tool_use", id: "call_C3", name: "lookup", input: `{"q":`}},
		errorType: "api_error"},
	{name: "gemini_text", input: "gemini_text", gemini: true, id: "msg_gText",
		blocks:     []anthropicOutTestBlock{{kind: "text", text: "Hello, <world> & \"friends\"\n¡ünïcödé ✓"}},
		stopReason: "end_turn", usage: anthropicOutUsage{InputTokens: 12, OutputTokens: 9}},
	{name: "gemini_tools_parallel", input: "gemini_tools_parallel", gemini: true, id: "msg_gTools",
		blocks: []anthropicOutTestBlock{{kind: "text", text: "Checking all three."},
			{kind: "tool_use", id: "call_gTools_0_tsig_c2lnLTE", name: "get_weather", input: `{"city":"Paris","n":12345678901234567890123}`},
			{kind: "tool_use", id: "call_gTools_1", name: "get_time", input: `{"tz":"Europe/Paris"}`},
			{kind: "tool_use", id: "call_gTools_2", name: "list_files", input: `{}`}},
		stopReason: "tool_use", usage: anthropicOutUsage{InputTokens: 52, OutputTokens: 31}},
	{name: "gemini_reasoning", input: "gemini_reasoning", gemini: true, thinking: true, id: "msg_gThink",
		blocks:     []anthropicOutTestBlock{{kind: "text", text: "2 + 2 = 4."}},
		stopReason: "end_turn", usage: anthropicOutUsage{InputTokens: 30, OutputTokens: 57}},
	{name: "gemini_reasoning_dropped", input: "gemini_reasoning", gemini: true, id: "msg_gThink",
		blocks:     []anthropicOutTestBlock{{kind: "text", text: "2 + 2 = 4."}},
		stopReason: "end_turn", usage: anthropicOutUsage{InputTokens: 30, OutputTokens: 57}},
	{name: "gemini_usage_cached", input: "gemini_usage_cached", gemini: true, id: "msg_gCache",
		blocks:     []anthropicOutTestBlock{{kind: "text", text: "Cached answer."}},
		stopReason: "end_turn", usage: anthropicOutUsage{InputTokens: 86, OutputTokens: 7, CacheReadInputTokens: 1920}},
	{name: "gemini_length", input: "gemini_length", gemini: true, id: "msg_gLen",
		blocks:     []anthropicOutTestBlock{{kind: "text", text: "A long answer that was cut"}},
		stopReason: "max_tokens", usage: anthropicOutUsage{InputTokens: 7, OutputTokens: 6}},
	{name: "gemini_error_midstream", input: "gemini_error_midstream", gemini: true, id: "msg_gErr",
		blocks: []anthropicOutTestBlock{{kind: "text", text: "Partial"}}, errorType: "rate_limit_error"},
	{name: "gemini_truncated", input: "gemini_truncated", gemini: true, id: "msg_gCut",
		blocks:    []anthropicOutTestBlock{{kind: "text", text: "Cut "}, {kind: "tool_use", id: "call_gCut_0", name: "lookup", input: `{"q":"x"}`}},
		errorType: "api_error"},
}

func TestAnthropicOutStreamGolden(t *testing.T) {
	for i := 0; i < len(anthropicOutStreamCases); i++ {
		tc := anthropicOutStreamCases[i]
		t.Run(tc.name, func(t *testing.T) {
			input, err := os.ReadFile("testdata/anthropic_out/" + tc.input + ".sse")
			if err != nil {
				t.Fatal(err)
			}
			got := runAnthropicOut(input, newAnthropicOutTest(tc.gemini, tc.thinking))
			checkGolden(t, "testdata/anthropic_out/"+tc.name+".golden", got)
		})
	}
}

func TestAnthropicOutStreamSemantics(t *testing.T) {
	for i := 0; i < len(anthropicOutStreamCases); i++ {
		tc := anthropicOutStreamCases[i]
		t.Run(tc.name, func(t *testing.T) {
			golden, err := os.ReadFile("testdata/anthropic_out/" + tc.name + ".golden")
			if err != nil {
				t.Fatal(err)
			}
			acc := accumulateAnthropicOut(t, golden)
			if acc.id != tc.id || acc.model != "claude-sonnet-4-5" || acc.startInput != anthropicOutTestEstimate {
				t.Errorf("message_start id %q model %q input %d", acc.id, acc.model, acc.startInput)
			}
			if len(acc.blocks) != len(tc.blocks) {
				t.Fatalf("blocks %+v, want %+v", acc.blocks, tc.blocks)
			}
			for j := 0; j < len(tc.blocks); j++ {
				if acc.blocks[j] != tc.blocks[j] {
					t.Errorf("block %d = %+v, want %+v", j, acc.blocks[j], tc.blocks[j])
				}
			}
			if acc.errorType != tc.errorType {
				t.Errorf("error type %q, want %q", acc.errorType, tc.errorType)
			}
			if tc.errorType != "" {
				if acc.stopped || acc.stopReason != "" {
					t.Errorf("errored stream also stopped (%q)", acc.stopReason)
				}
				return
			}
			if !acc.stopped || acc.open >= 0 || acc.stopReason != tc.stopReason || acc.usage != tc.usage {
				t.Errorf("stopped %v open %d stop_reason %q usage %+v, want %q %+v", acc.stopped, acc.open, acc.stopReason, acc.usage, tc.stopReason, tc.usage)
			}
			for j := 0; j < len(acc.blocks); j++ {
				if b := acc.blocks[j]; b.kind == "tool_use" && !json.Valid([]byte(b.input)) {
					t.Errorf("tool %d input is not JSON: %q", j, b.input)
				}
			}
		})
	}
}

// anthropicOutChunkEvents frames hub chunks (each a delta JSON object,
// or a literal event starting with "{" for a whole chunk, or "[DONE]")
// as an OpenAI upstream sends them.
func anthropicOutChunkEvents(chunks ...string) []byte {
	var b strings.Builder
	for i := 0; i < len(chunks); i++ {
		c := chunks[i]
		switch {
		case c == "[DONE]" || strings.HasPrefix(c, "{\"id\"") || strings.HasPrefix(c, "{\"error\"") || strings.HasPrefix(c, "{\"choices\""):
		case strings.HasPrefix(c, "finish:"):
			c = `{"id":"chatcmpl-S","choices":[{"index":0,"delta":{},"finish_reason":"` + c[len("finish:"):] + `"}]}`
		default:
			c = `{"id":"chatcmpl-S","choices":[{"index":0,"delta":` + c + `,"finish_reason":null}]}`
		}
		b.WriteString("data: " + c + "\n\n")
	}
	return []byte(b.String())
}

// anthropicOutTraceOf runs input through tr and returns the client's
// view of it, one line per event (see addEvent).
func anthropicOutTraceOf(t *testing.T, input []byte, tr StreamTranslator) string {
	t.Helper()
	acc := accumulateAnthropicOut(t, runAnthropicOut(input, tr))
	return strings.Join(acc.trace, "\n")
}

const anthropicOutUsageChunk = `{"id":"chatcmpl-S","choices":[],"usage":{"prompt_tokens":50,"completion_tokens":9,"prompt_tokens_details":{"cached_tokens":10}}}`

func TestAnthropicOutStreamScenarios(t *testing.T) {
	const start = "start msg_S in=120\nping\n"
	cases := []struct {
		name     string
		thinking bool
		input    []byte
		want     string
	}{
		{"sequential_tools_stream_live", false, anthropicOutChunkEvents(
			`{"role":"assistant","content":null}`,
			`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"a","arguments":""}}]}`,
			`{"tool_calls":[{"index":0,"function":{"arguments":"{\"x\":"}}]}`,
			`{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}`,
			`{"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"b","arguments":"{}"}}]}`,
			"finish:tool_calls", anthropicOutUsageChunk, "[DONE]"),
			start + "open 0 tool_use call_1 a\n0 input_json_delta {\"x\":\n0 input_json_delta 1}\nclose 0\n" +
				"open 1 tool_use call_2 b\n1 input_json_delta {}\nclose 1\ndelta tool_use in=40 out=9 cache=10\nstop"},
		{"text_after_an_incomplete_tool_waits_for_it", false, anthropicOutChunkEvents(
			`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"a","arguments":"{\"x\":"}}]}`,
			`{"content":"late "}`, `{"content":"text"}`,
			`{"tool_calls":[{"index":0,"function":{"arguments":"2}"}}]}`,
			`{"content":"!"}`, "finish:stop", "[DONE]"),
			start + "open 0 tool_use call_1 a\n0 input_json_delta {\"x\":\n0 input_json_delta 2}\nclose 0\n" +
				"open 1 text\n1 text_delta late text\n1 text_delta !\nclose 1\ndelta tool_use in=120 out=5 cache=0\nstop"},
		{"arguments_never_complete_are_flushed_in_order", false, anthropicOutChunkEvents(
			`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"a","arguments":"{\"x\":"}}]}`,
			`{"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"b","arguments":"{\"y\":"}}]}`,
			`{"tool_calls":[{"index":1,"function":{"arguments":"3}"}}]}`,
			"finish:tool_calls", "[DONE]"),
			start + "open 0 tool_use call_1 a\n0 input_json_delta {\"x\":\nclose 0\n" +
				"open 1 tool_use call_2 b\n1 input_json_delta {\"y\":3}\nclose 1\ndelta tool_use in=120 out=4 cache=0\nstop"},
		{"whole_calls_in_one_delta", false, anthropicOutChunkEvents(
			`{"content":"Both:","tool_calls":[{"index":0,"id":"c0","type":"function","function":{"name":"a","arguments":"{\"p\":1}"}},`+
				`{"index":1,"id":"c1","type":"function","function":{"name":"b","arguments":"{\"q\":2}"}}]}`,
			"finish:tool_calls", "[DONE]"),
			start + "open 0 text\n0 text_delta Both:\nclose 0\nopen 1 tool_use c0 a\n1 input_json_delta {\"p\":1}\nclose 1\n" +
				"open 2 tool_use c1 b\n2 input_json_delta {\"q\":2}\nclose 2\ndelta tool_use in=120 out=6 cache=0\nstop"},
		{"fragments_without_index_or_id", false, anthropicOutChunkEvents(
			`{"tool_calls":[{"function":{"name":"a","arguments":"{\"k\":"}}]}`,
			`{"tool_calls":[{"function":{"arguments":"true}"}}]}`,
			`{"tool_calls":[{"id":"c9","function":{"name":"b","arguments":{"obj":[1, 2]}}}]}`,
			`{"tool_calls":[{"id":"c9","function":{"arguments":""}}]}`,
			"finish:stop", "[DONE]"),
			start + "open 0 tool_use toolu_S_0 a\n0 input_json_delta {\"k\":\n0 input_json_delta true}\nclose 0\n" +
				"open 1 tool_use c9 b\n1 input_json_delta {\"obj\":[1,2]}\nclose 1\ndelta tool_use in=120 out=7 cache=0\nstop"},
		{"tool_without_arguments", false, anthropicOutChunkEvents(
			`{"tool_calls":[{"index":0,"id":"c0","type":"function","function":{"name":"now","arguments":""}}]}`,
			`{"tool_calls":[{"index":0,"function":{"arguments":""}}]}`, "finish:tool_calls", "[DONE]"),
			start + "open 0 tool_use c0 now\nclose 0\ndelta tool_use in=120 out=0 cache=0\nstop"},
		{"interleaved_thinking_and_text", true, anthropicOutChunkEvents(
			`{"reasoning_content":"First."}`, `{"reasoning_content":" Then."}`, `{"content":"Answer"}`,
			`{"reasoning":"Again."}`, `{"content":" more","reasoning_content":""}`, "finish:stop", "[DONE]"),
			start + "open 0 thinking\n0 thinking_delta First.\n0 thinking_delta  Then.\nclose 0\nopen 1 text\n1 text_delta Answer\nclose 1\n" +
				"open 2 thinking\n2 thinking_delta Again.\nclose 2\nopen 3 text\n3 text_delta  more\nclose 3\ndelta end_turn in=120 out=8 cache=0\nstop"},
		{"reasoning_dropped_without_thinking", false, anthropicOutChunkEvents(
			`{"reasoning_content":"First."}`, `{"content":"Answer"}`, `{"reasoning":"Again."}`, `{"content":" more"}`, "finish:stop", "[DONE]"),
			start + "open 0 text\n0 text_delta Answer\n0 text_delta  more\nclose 0\ndelta end_turn in=120 out=6 cache=0\nstop"},
		{"refusal", false, anthropicOutChunkEvents(`{"refusal":"I can't."}`, "finish:stop", "[DONE]"),
			start + "open 0 text\n0 text_delta I can't.\nclose 0\ndelta refusal in=120 out=2 cache=0\nstop"},
		{"content_filter_and_array_content", false, anthropicOutChunkEvents(
			`{"content":[{"type":"text","text":"par\"t"},{"type":"image_url"}]}`, "finish:content_filter", "[DONE]"),
			start + "open 0 text\n0 text_delta par\"t\nclose 0\ndelta refusal in=120 out=2 cache=0\nstop"},
		{"usage_in_the_finish_chunk_waits_for_done", false, anthropicOutChunkEvents(`{"content":"x"}`,
			`{"id":"chatcmpl-S","choices":[{"index":0,"delta":{},"finish_reason":"length"}],"usage":{"prompt_tokens":7,"completion_tokens":1}}`, "[DONE]"),
			start + "open 0 text\n0 text_delta x\nclose 0\ndelta max_tokens in=7 out=1 cache=0\nstop"},
		{"usage_before_finish_does_not_end_the_message", false, anthropicOutChunkEvents(`{"content":"x"}`, anthropicOutUsageChunk,
			`{"content":"y"}`, "finish:stop", "[DONE]"),
			start + "open 0 text\n0 text_delta x\n0 text_delta y\nclose 0\ndelta end_turn in=40 out=9 cache=10\nstop"},
		{"done_without_finish", false, anthropicOutChunkEvents(`{"content":"x"}`, "[DONE]"),
			start + "open 0 text\n0 text_delta x\nclose 0\ndelta end_turn in=120 out=1 cache=0\nstop"},
		{"only_done", false, anthropicOutChunkEvents("[DONE]"),
			"start msg_fallback in=120\nping\ndelta end_turn in=120 out=0 cache=0\nstop"},
		{"finish_without_done_ends_cleanly", false, anthropicOutChunkEvents(`{"content":"x"}`, "finish:stop"),
			start + "open 0 text\n0 text_delta x\nclose 0\ndelta end_turn in=120 out=1 cache=0\nstop"},
		{"events_after_message_stop_ignored", false, anthropicOutChunkEvents(`{"content":"x"}`, "finish:stop", anthropicOutUsageChunk,
			`{"content":"late"}`, `{"error":{"message":"late","type":"server_error"}}`, "[DONE]"),
			start + "open 0 text\n0 text_delta x\nclose 0\ndelta end_turn in=40 out=9 cache=10\nstop"},
		{"deltas_after_finish_ignored", false, anthropicOutChunkEvents(`{"content":"x"}`, "finish:stop", `{"content":"late"}`, "[DONE]"),
			start + "open 0 text\n0 text_delta x\nclose 0\ndelta end_turn in=120 out=1 cache=0\nstop"},
		{"other_choices_ignored", false, anthropicOutChunkEvents(
			`{"id":"chatcmpl-S","choices":[{"index":1,"delta":{"content":"other"}},{"index":0,"delta":{"content":"mine"}}]}`, "finish:stop", "[DONE]"),
			start + "open 0 text\n0 text_delta mine\nclose 0\ndelta end_turn in=120 out=1 cache=0\nstop"},
		{"error_first", false, anthropicOutChunkEvents(`{"error":{"message":"Overloaded","type":"overloaded_error"}}`), "error overloaded_error"},
		{"error_after_finish_before_usage", false, anthropicOutChunkEvents(`{"content":"x"}`, "finish:stop", `{"error":{"message":"boom","code":500}}`),
			start + "open 0 text\n0 text_delta x\nclose 0\nerror api_error"},
		{"not_json", false, []byte("data: {\"content\":\"x\"}\n\ndata: hello\n\n"), "start msg_fallback in=120\nping\nerror api_error"},
		{"empty_stream_is_truncated", false, nil, "error api_error"},
		{"odd_types_read_leniently", false, anthropicOutChunkEvents(`{"id":"chatcmpl-S","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":7}]}`,
			`{"id":"chatcmpl-S","choices":[{"index":0,"delta":{"content":5,"tool_calls":"no"},"finish_reason":"stop"}]}`, "[DONE]"),
			start + "open 0 text\n0 text_delta x\nclose 0\ndelta end_turn in=120 out=1 cache=0\nstop"},
	}
	for i := 0; i < len(cases); i++ {
		tc := cases[i]
		t.Run(tc.name, func(t *testing.T) {
			tr := NewAnthropicOutStream(nil, anthropicOutTestContext(), AnthropicInbound{Thinking: tc.thinking}, anthropicOutTestEstimate)
			if got := anthropicOutTraceOf(t, tc.input, tr); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestAnthropicOutStreamErrors(t *testing.T) {
	cases := []struct {
		name   string
		input  []byte
		status int
		code   string
		class  apierr.Class
	}{
		{"rate_limited", anthropicOutChunkEvents(`{"error":{"message":"Slow down","type":"requests","code":"rate_limit_exceeded"}}`),
			429, "upstream_error", apierr.ClassRateLimited},
		{"overloaded", anthropicOutChunkEvents(`{"error":{"message":"Overloaded","type":"overloaded_error"}}`), 529, "upstream_error", apierr.ClassServer},
		{"numeric_code", anthropicOutChunkEvents(`{"error":{"message":"unavailable","code":503}}`), 503, "upstream_error", apierr.ClassServer},
		{"server_error", anthropicOutChunkEvents(`{"error":{"message":"boom","type":"server_error","code":null}}`), 502, "upstream_error", apierr.ClassServer},
		{"bad_json", []byte("data: {\"choices\":[\n\n"), 502, "upstream_bad_response", apierr.ClassBadResponse},
	}
	for i := 0; i < len(cases); i++ {
		tc := cases[i]
		t.Run(tc.name, func(t *testing.T) {
			tr := NewAnthropicOutStream(nil, anthropicOutTestContext(), AnthropicInbound{}, 1)
			reader := sse.NewReader(bytes.NewReader(tc.input), 1<<20)
			ev, err := reader.Next()
			if err != nil {
				t.Fatal(err)
			}
			out, e := tr.Event(ev, nil)
			if e == nil || len(out) != 0 {
				t.Fatalf("got %d payloads, error %v; want only an error", len(out), e)
			}
			if e.Status != tc.status || e.Code != tc.code || e.Class != tc.class {
				t.Errorf("error %d %s class %d, want %d %s class %d", e.Status, e.Code, e.Class, tc.status, tc.code, tc.class)
			}
			if tc.code == "upstream_error" && !bytes.Contains(tc.input, e.Upstream) {
				t.Errorf("upstream body %s", e.Upstream)
			}
		})
	}
	tr := NewAnthropicOutStream(nil, anthropicOutTestContext(), AnthropicInbound{}, 1)
	if _, e := tr.Event(sse.Event{Data: []byte(`{"choices":[{"index":0,"delta":{"content":"x"}}]}`)}, nil); e != nil {
		t.Fatal(e)
	}
	out, e := tr.Finish(nil)
	if e == nil || len(out) != 0 || e.Status != 502 || e.Code != "upstream_stream_truncated" || e.Class != apierr.ClassTruncated {
		t.Fatalf("finish without finish_reason: %d payloads, %+v", len(out), e)
	}
}

// scriptedStream is an inner translator that answers each event with
// the next scripted payloads and error.
type scriptedStream struct {
	events   [][]string
	errs     []*apierr.Error
	finish   []string
	finishE  *apierr.Error
	usage    Usage
	next     int
	finished bool
}

func (s *scriptedStream) Event(ev sse.Event, out []Payload) ([]Payload, *apierr.Error) {
	i := s.next
	s.next++
	if i >= len(s.events) {
		return out, nil
	}
	for j := 0; j < len(s.events[i]); j++ {
		out = append(out, Payload{Data: []byte(s.events[i][j])})
	}
	return out, s.errs[i]
}

func (s *scriptedStream) Finish(out []Payload) ([]Payload, *apierr.Error) {
	s.finished = true
	for j := 0; j < len(s.finish); j++ {
		out = append(out, Payload{Data: []byte(s.finish[j])})
	}
	return out, s.finishE
}

func (s *scriptedStream) Usage() Usage { return s.usage }

func TestAnthropicOutStreamInner(t *testing.T) {
	chunk := func(delta string) string {
		return `{"id":"chatcmpl-in","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}`
	}
	finish := `{"id":"chatcmpl-in","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`
	overloaded := apierr.New(529, "server_error", "upstream_error", "overloaded")
	t.Run("error_after_payloads_keeps_its_status", func(t *testing.T) {
		inner := &scriptedStream{events: [][]string{{chunk(`{"content":"a"}`), chunk(`{"content":"b"}`)}}, errs: []*apierr.Error{overloaded}}
		tr := NewAnthropicOutStream(inner, anthropicOutTestContext(), AnthropicInbound{}, 9)
		out, e := tr.Event(sse.Event{Data: []byte("x")}, nil)
		if e != overloaded || len(out) != 5 {
			t.Fatalf("got %d payloads and %v; want message_start, ping, start, two deltas, then the inner error", len(out), e)
		}
	})
	t.Run("finish_translates_trailing_payloads_then_closes", func(t *testing.T) {
		inner := &scriptedStream{events: [][]string{{chunk(`{"content":"a"}`), finish}}, errs: []*apierr.Error{nil},
			finish: []string{`{"id":"chatcmpl-in","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2}}`}}
		tr := NewAnthropicOutStream(inner, anthropicOutTestContext(), AnthropicInbound{}, 9)
		got := anthropicOutTraceOf(t, []byte("data: x\n\n"), tr)
		want := "start msg_in in=9\nping\nopen 0 text\n0 text_delta a\nclose 0\ndelta end_turn in=5 out=2 cache=0\nstop"
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
		tr := NewAnthropicOutStream(inner, anthropicOutTestContext(), AnthropicInbound{}, 9)
		if _, e := tr.Event(sse.Event{Data: []byte("x")}, nil); e != nil {
			t.Fatal(e)
		}
		out, e := tr.Finish(nil)
		if e != overloaded || len(out) != 1 || out[0].Name != "content_block_delta" {
			t.Fatalf("got %d payloads, %v", len(out), e)
		}
	})
	t.Run("inner_usage_when_no_usage_chunk", func(t *testing.T) {
		inner := &scriptedStream{events: [][]string{{chunk(`{"content":"a"}`), finish}}, errs: []*apierr.Error{nil},
			usage: Usage{PromptTokens: 300, CompletionTokens: 12, CacheReadTokens: 100, Reported: true}}
		tr := NewAnthropicOutStream(inner, anthropicOutTestContext(), AnthropicInbound{}, 9)
		got := anthropicOutTraceOf(t, []byte("data: x\n\n"), tr)
		if !strings.HasSuffix(got, "delta end_turn in=200 out=12 cache=100\nstop") {
			t.Errorf("got\n%s", got)
		}
		if u := tr.Usage(); u != inner.usage {
			t.Errorf("usage %+v, want the inner's", u)
		}
	})
	t.Run("gemini_without_include_usage", func(t *testing.T) {
		input, err := os.ReadFile("testdata/anthropic_out/gemini_usage_cached.sse")
		if err != nil {
			t.Fatal(err)
		}
		tr := NewAnthropicOutStream(NewGeminiStream(anthropicOutInnerContext(false)), anthropicOutTestContext(), AnthropicInbound{}, 9)
		if u := tr.Usage(); u.Reported {
			t.Fatalf("usage before any event: %+v", u)
		}
		got := anthropicOutTraceOf(t, input, tr)
		if !strings.HasSuffix(got, "delta end_turn in=86 out=7 cache=1920\nstop") {
			t.Errorf("got\n%s", got)
		}
		if u := tr.Usage(); u != (Usage{PromptTokens: 2006, CompletionTokens: 7, CacheReadTokens: 1920, Reported: true}) {
			t.Errorf("usage %+v", u)
		}
	})
}

func TestAnthropicOutStreamUsage(t *testing.T) {
	tr := NewAnthropicOutStream(nil, anthropicOutTestContext(), AnthropicInbound{}, -5)
	if u := tr.Usage(); u.Reported {
		t.Fatalf("usage before any event: %+v", u)
	}
	out, e := tr.Event(sse.Event{Data: []byte(`{"id":"chatcmpl-U","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}]}`)}, nil)
	if e != nil || len(out) < 2 || !bytes.Contains(out[0].Data, []byte(`"usage":{"input_tokens":0,"output_tokens":0,`)) {
		t.Fatalf("message_start %s (%v)", out[0].Data, e)
	}
	if u := tr.Usage(); u.Reported {
		t.Fatalf("usage reported without a usage chunk: %+v", u)
	}
	out, e = tr.Event(sse.Event{Data: []byte(anthropicOutUsageChunk)}, nil)
	if e != nil || len(out) != 2 || out[0].Name != "message_delta" || out[1].Name != "message_stop" {
		t.Fatalf("usage chunk gave %d payloads (%v)", len(out), e)
	}
	if u := tr.Usage(); u != (Usage{PromptTokens: 50, CompletionTokens: 9, CacheReadTokens: 10, Reported: true}) {
		t.Errorf("usage %+v", u)
	}
	if out, e := tr.Finish(nil); e != nil || len(out) != 0 {
		t.Errorf("finish after message_stop: %d payloads, %v", len(out), e)
	}
}
