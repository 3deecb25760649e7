package translate

import (
	"testing"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// anthropicOutTestContext is the fixed context the Anthropic client
// tests (whole answers and goldens) run with.
func anthropicOutTestContext() Context {
	return Context{RequestedModel: "claude-sonnet-4-5", UpstreamModel: "gpt-4o", Created: 1700000000,
		IncludeUsage: true, IDFallback: "chatcmpl-fallback"}
}

// hubCompletion wraps a choice's message and finish reason (and a usage
// object, "" for none) into a chat.completion with id chatcmpl-T1.
func hubCompletion(message, finish, usage string) string {
	body := `{"id":"chatcmpl-T1","object":"chat.completion","created":1700000001,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"message":` +
		message + `,"logprobs":null,"finish_reason":` + finish + `}]`
	if usage != "" {
		body += `,"usage":` + usage
	}
	return body + `,"system_fingerprint":"fp_1"}`
}

const anthropicOutZeroUsage = `"usage":{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}`

var anthropicOutResponseCases = []struct {
	name     string
	in       string
	thinking bool
	want     string
	usage    Usage
}{
	{name: "text",
		in: hubCompletion(`{"role":"assistant","content":"Hi <there> & \"you\" ✓","refusal":null,"annotations":[]}`, `"stop"`,
			`{"prompt_tokens":20,"completion_tokens":5,"total_tokens":25,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0}}`),
		want: `{"id":"msg_T1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Hi <there> & \"you\" ✓"}],
			"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":20,"output_tokens":5,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}`,
		usage: Usage{PromptTokens: 20, CompletionTokens: 5, Reported: true}},
	{name: "tool_calls_with_text_and_cached_usage",
		in: hubCompletion(`{"role":"assistant","content":"Let me check.","tool_calls":[
			{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\", \"n\": 12345678901234567890123}"}},
			{"type":"function","function":{"name":"now","arguments":""}},
			{"id":"call_3","type":"function","function":{"name":"g","arguments":"not json"}},
			{"id":"call_4","type":"function","function":{"name":"h","arguments":"[1]"}},
			{"id":"call_5","type":"function","function":{"name":"o","arguments":{"a":1.50}}}]}`, `"tool_calls"`,
			`{"prompt_tokens":100,"completion_tokens":30,"total_tokens":130,"prompt_tokens_details":{"cached_tokens":60}}`),
		want: `{"id":"msg_T1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Let me check."},
			{"type":"tool_use","id":"call_1","name":"get_weather","input":{"city":"Paris","n":12345678901234567890123}},
			{"type":"tool_use","id":"toolu_T1_1","name":"now","input":{}},
			{"type":"tool_use","id":"call_3","name":"g","input":{}},
			{"type":"tool_use","id":"call_4","name":"h","input":{}},
			{"type":"tool_use","id":"call_5","name":"o","input":{"a":1.50}}],
			"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":40,"output_tokens":30,"cache_creation_input_tokens":0,"cache_read_input_tokens":60}}`,
		usage: Usage{PromptTokens: 100, CompletionTokens: 30, CacheReadTokens: 60, Reported: true}},
	{name: "tool_call_with_finish_stop_is_tool_use",
		in: hubCompletion(`{"role":"assistant","content":null,"tool_calls":[{"id":"call_g","type":"function","function":{"name":"f","arguments":"{}"}}]}`, `"stop"`, ""),
		want: `{"id":"msg_T1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"call_g","name":"f","input":{}}],
			"stop_reason":"tool_use","stop_sequence":null,` + anthropicOutZeroUsage + `}`},
	{name: "length",
		in:   hubCompletion(`{"role":"assistant","content":"Cut"}`, `"length"`, ""),
		want: `{"id":"msg_T1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Cut"}],"stop_reason":"max_tokens","stop_sequence":null,` + anthropicOutZeroUsage + `}`},
	{name: "content_filter",
		in:   hubCompletion(`{"role":"assistant","content":""}`, `"content_filter"`, ""),
		want: `{"id":"msg_T1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":"refusal","stop_sequence":null,` + anthropicOutZeroUsage + `}`},
	{name: "function_call_finish",
		in:   hubCompletion(`{"role":"assistant","content":"x"}`, `"function_call"`, ""),
		want: `{"id":"msg_T1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"x"}],"stop_reason":"tool_use","stop_sequence":null,` + anthropicOutZeroUsage + `}`},
	{name: "unknown_and_null_finish_are_end_turn",
		in:   hubCompletion(`{"role":"assistant","content":"x"}`, `null`, ""),
		want: `{"id":"msg_T1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"x"}],"stop_reason":"end_turn","stop_sequence":null,` + anthropicOutZeroUsage + `}`},
	{name: "refusal",
		in: hubCompletion(`{"role":"assistant","content":null,"refusal":"I can't help with that."}`, `"stop"`, ""),
		want: `{"id":"msg_T1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"I can't help with that."}],
			"stop_reason":"refusal","stop_sequence":null,` + anthropicOutZeroUsage + `}`},
	{name: "reasoning_content_with_thinking", thinking: true,
		in: hubCompletion(`{"role":"assistant","content":"4","reasoning_content":"2+2 is 4."}`, `"stop"`, ""),
		want: `{"id":"msg_T1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"thinking","thinking":"2+2 is 4.","signature":""},
			{"type":"text","text":"4"}],"stop_reason":"end_turn","stop_sequence":null,` + anthropicOutZeroUsage + `}`},
	{name: "reasoning_with_thinking", thinking: true,
		in: hubCompletion(`{"role":"assistant","content":"4","reasoning":"Adding."}`, `"stop"`, ""),
		want: `{"id":"msg_T1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"thinking","thinking":"Adding.","signature":""},
			{"type":"text","text":"4"}],"stop_reason":"end_turn","stop_sequence":null,` + anthropicOutZeroUsage + `}`},
	{name: "reasoning_without_thinking_dropped",
		in:   hubCompletion(`{"role":"assistant","content":"4","reasoning_content":"2+2 is 4."}`, `"stop"`, ""),
		want: `{"id":"msg_T1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"4"}],"stop_reason":"end_turn","stop_sequence":null,` + anthropicOutZeroUsage + `}`},
	{name: "array_content_parts_joined",
		in:   hubCompletion(`{"role":"assistant","content":[{"type":"thinking","thinking":[{"type":"text","text":"hmm"}]},{"type":"text","text":"Hello, "},{"type":"text","text":"world"}]}`, `"stop"`, ""),
		want: `{"id":"msg_T1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Hello, world"}],"stop_reason":"end_turn","stop_sequence":null,` + anthropicOutZeroUsage + `}`},
	{name: "no_choices",
		in:   `{"id":"chatcmpl-T1","object":"chat.completion","choices":[]}`,
		want: `{"id":"msg_T1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":"end_turn","stop_sequence":null,` + anthropicOutZeroUsage + `}`},
	{name: "id_fallback_and_no_object",
		in:   `{"choices":[{"index":0,"message":{"role":"assistant","content":"x"},"finish_reason":"stop"}]}`,
		want: `{"id":"msg_fallback","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"x"}],"stop_reason":"end_turn","stop_sequence":null,` + anthropicOutZeroUsage + `}`},
	{name: "msg_id_kept",
		in:   `{"id":"msg_01ABC","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"x"},"finish_reason":"stop"}]}`,
		want: `{"id":"msg_01ABC","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"x"}],"stop_reason":"end_turn","stop_sequence":null,` + anthropicOutZeroUsage + `}`},
	{name: "odd_types_read_as_absent",
		in: `{"id":"chatcmpl-T1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"x","reasoning_content":{"a":1}},"finish_reason":7}],
			"usage":{"prompt_tokens":3,"completion_tokens":"many"}}`, thinking: true,
		want: `{"id":"msg_T1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"x"}],"stop_reason":"end_turn","stop_sequence":null,
			"usage":{"input_tokens":3,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}`,
		usage: Usage{PromptTokens: 3, Reported: true}},
}

func TestAnthropicFromHubResponse(t *testing.T) {
	for i := 0; i < len(anthropicOutResponseCases); i++ {
		tc := anthropicOutResponseCases[i]
		t.Run(tc.name, func(t *testing.T) {
			out, u, e := AnthropicFromHubResponse([]byte(tc.in), anthropicOutTestContext(), AnthropicInbound{Thinking: tc.thinking})
			if e != nil {
				t.Fatalf("error %+v", e)
			}
			if want := compactJSON(t, tc.want); string(out) != want {
				t.Errorf("got\n%s\nwant\n%s", out, want)
			}
			if u != tc.usage {
				t.Errorf("usage %+v, want %+v", u, tc.usage)
			}
		})
	}
}

func TestAnthropicFromHubResponseErrors(t *testing.T) {
	cases := []struct {
		name, in string
		status   int
		code     string
		class    apierr.Class
		message  string
	}{
		{"not_json", `{"choices":[`, 502, "upstream_bad_response", apierr.ClassBadResponse, "the provider sent a malformed answer"},
		{"html", `<html>502</html>`, 502, "upstream_bad_response", apierr.ClassBadResponse, "the provider sent a malformed answer (not a JSON object)"},
		{"array", `[]`, 502, "upstream_bad_response", apierr.ClassBadResponse, "the provider sent a malformed answer (not a JSON object)"},
		{"no_choices", `{"id":"x","object":"chat.completion"}`, 502, "upstream_bad_response", apierr.ClassBadResponse,
			"the provider sent a malformed answer (not a chat.completion)"},
		{"a_chunk", `{"id":"x","object":"chat.completion.chunk","choices":[]}`, 502, "upstream_bad_response", apierr.ClassBadResponse,
			"the provider sent a malformed answer (not a chat.completion)"},
		{"rate_limit_error_body", `{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
			429, "upstream_error", apierr.ClassRateLimited, "the provider reported an error: requests: Rate limit reached"},
		{"numeric_code", `{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`,
			503, "upstream_error", apierr.ClassServer, "the provider reported an error: The model is overloaded."},
		{"plain_error", `{"error":{"message":"boom","type":"server_error"}}`, 502, "upstream_error", apierr.ClassServer,
			"the provider reported an error: server_error: boom"},
	}
	for i := 0; i < len(cases); i++ {
		tc := cases[i]
		t.Run(tc.name, func(t *testing.T) {
			out, u, e := AnthropicFromHubResponse([]byte(tc.in), anthropicOutTestContext(), AnthropicInbound{})
			if e == nil {
				t.Fatalf("no error; output %s", out)
			}
			if out != nil || u.Reported || e.Status != tc.status || e.Kind != "server_error" || e.Code != tc.code || e.Class != tc.class || e.Message != tc.message {
				t.Errorf("got %d %s %s class %d %q, want %d server_error %s class %d %q", e.Status, e.Kind, e.Code, e.Class, e.Message,
					tc.status, tc.code, tc.class, tc.message)
			}
			if tc.code == "upstream_error" && string(e.Upstream) != tc.in {
				t.Errorf("upstream body %s", e.Upstream)
			}
		})
	}
}

func TestHubErrorStatus(t *testing.T) {
	cases := []struct {
		err    hubReadError
		status int
	}{
		{hubReadError{Code: []byte(`429`)}, 429},
		{hubReadError{Code: []byte(`"500"`)}, 500},
		{hubReadError{Code: []byte(`200`)}, 502},
		{hubReadError{Code: []byte(`"rate_limit_exceeded"`)}, 429},
		{hubReadError{Type: "insufficient_quota"}, 429},
		{hubReadError{Status: "RESOURCE_EXHAUSTED"}, 429},
		{hubReadError{Type: "overloaded_error"}, 529},
		{hubReadError{Status: "UNAVAILABLE"}, 503},
		{hubReadError{Status: "DEADLINE_EXCEEDED"}, 504},
		{hubReadError{Type: "server_error", Code: []byte(`null`)}, 502},
		{hubReadError{}, 502},
	}
	for i := 0; i < len(cases); i++ {
		if got := hubErrorStatus(&cases[i].err); got != cases[i].status {
			t.Errorf("%+v: status %d, want %d", cases[i].err, got, cases[i].status)
		}
	}
}
