package translate

import (
	"testing"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// responsesOutHead is the start of every Response of these tests, for
// the hub id chatcmpl-T1.
const responsesOutHead = `{"id":"resp_T1","object":"response","created_at":1700000000,`

const responsesOutNoUsage = `"usage":null}`

var responsesOutResponseCases = []struct {
	name      string
	in        string
	reasoning bool
	want      string
	usage     Usage
}{
	{name: "text",
		in: hubCompletion(`{"role":"assistant","content":"Hi <there> & \"you\" ✓","refusal":null,"annotations":[]}`, `"stop"`,
			`{"prompt_tokens":20,"completion_tokens":5,"total_tokens":25,"prompt_tokens_details":{"cached_tokens":8},"completion_tokens_details":{"reasoning_tokens":2}}`),
		want: responsesOutHead + `"status":"completed","error":null,"incomplete_details":null,"model":"gpt-5-codex","output":[
			{"type":"message","id":"msg_T1_0","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hi <there> & \"you\" ✓","annotations":[]}]}],
			"usage":{"input_tokens":20,"input_tokens_details":{"cached_tokens":8},"output_tokens":5,"output_tokens_details":{"reasoning_tokens":2},"total_tokens":25}}`,
		usage: Usage{PromptTokens: 20, CompletionTokens: 5, CacheReadTokens: 8, Reported: true}},
	{name: "tool_calls_flat_namespace_custom",
		in: hubCompletion(`{"role":"assistant","content":"Let me check.","tool_calls":[
			{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\", \"n\": 12345678901234567890123}"}},
			{"type":"function","function":{"name":"lookup","arguments":""}},
			{"id":"call_3","type":"function","function":{"name":"multi_agent_v1__spawn_agent","arguments":{"task":"x","f":1.50}}},
			{"id":"call_4","type":"function","function":{"name":"apply_patch","arguments":"{\"input\":\"*** Begin Patch\\n<x> \\\"y\\\"\"}"}},
			{"id":"call_5","type":"function","function":{"name":"apply_patch","arguments":"*** raw text"}},
			{"id":"call_6","type":"function","function":{"name":"apply_patch","arguments":"{\"patch\":\"only field\"}"}}]}`, `"tool_calls"`, ""),
		want: responsesOutHead + `"status":"completed","error":null,"incomplete_details":null,"model":"gpt-5-codex","output":[
			{"type":"message","id":"msg_T1_0","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Let me check.","annotations":[]}]},
			{"type":"function_call","id":"fc_T1_1","status":"completed","call_id":"call_1","name":"get_weather","arguments":"{\"city\": \"Paris\", \"n\": 12345678901234567890123}"},
			{"type":"function_call","id":"fc_T1_2","status":"completed","call_id":"call_T1_1","name":"lookup","arguments":"{}"},
			{"type":"function_call","id":"fc_T1_3","status":"completed","call_id":"call_3","name":"spawn_agent","namespace":"multi_agent_v1","arguments":"{\"task\":\"x\",\"f\":1.50}"},
			{"type":"custom_tool_call","id":"ctc_T1_4","status":"completed","call_id":"call_4","name":"apply_patch","input":"*** Begin Patch\n<x> \"y\""},
			{"type":"custom_tool_call","id":"ctc_T1_5","status":"completed","call_id":"call_5","name":"apply_patch","input":"*** raw text"},
			{"type":"custom_tool_call","id":"ctc_T1_6","status":"completed","call_id":"call_6","name":"apply_patch","input":"only field"}],` + responsesOutNoUsage},
	{name: "reasoning_when_asked",
		in:        hubCompletion(`{"role":"assistant","content":"4.","reasoning_content":"2+2 is 4."}`, `"stop"`, ""),
		reasoning: true,
		want: responsesOutHead + `"status":"completed","error":null,"incomplete_details":null,"model":"gpt-5-codex","output":[
			{"type":"reasoning","id":"rs_T1_0","summary":[{"type":"summary_text","text":"2+2 is 4."}]},
			{"type":"message","id":"msg_T1_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"4.","annotations":[]}]}],` + responsesOutNoUsage},
	{name: "reasoning_field_when_asked",
		in:        hubCompletion(`{"role":"assistant","content":"4.","reasoning":"thought"}`, `"stop"`, ""),
		reasoning: true,
		want: responsesOutHead + `"status":"completed","error":null,"incomplete_details":null,"model":"gpt-5-codex","output":[
			{"type":"reasoning","id":"rs_T1_0","summary":[{"type":"summary_text","text":"thought"}]},
			{"type":"message","id":"msg_T1_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"4.","annotations":[]}]}],` + responsesOutNoUsage},
	{name: "reasoning_dropped_when_not_asked",
		in: hubCompletion(`{"role":"assistant","content":"4.","reasoning_content":"2+2 is 4."}`, `"stop"`, ""),
		want: responsesOutHead + `"status":"completed","error":null,"incomplete_details":null,"model":"gpt-5-codex","output":[
			{"type":"message","id":"msg_T1_0","status":"completed","role":"assistant","content":[{"type":"output_text","text":"4.","annotations":[]}]}],` + responsesOutNoUsage},
	{name: "refusal_and_array_content",
		in: hubCompletion(`{"role":"assistant","content":[{"type":"text","text":"par"},{"type":"text","text":"t"}],"refusal":"No."}`, `"stop"`, ""),
		want: responsesOutHead + `"status":"completed","error":null,"incomplete_details":null,"model":"gpt-5-codex","output":[
			{"type":"message","id":"msg_T1_0","status":"completed","role":"assistant","content":[{"type":"output_text","text":"part","annotations":[]},
				{"type":"refusal","refusal":"No."}]}],` + responsesOutNoUsage},
	{name: "length_is_incomplete",
		in: hubCompletion(`{"role":"assistant","content":"A long answer that was cut"}`, `"length"`, `{"prompt_tokens":7,"completion_tokens":6}`),
		want: responsesOutHead + `"status":"incomplete","error":null,"incomplete_details":{"reason":"max_output_tokens"},"model":"gpt-5-codex","output":[
			{"type":"message","id":"msg_T1_0","status":"incomplete","role":"assistant","content":[{"type":"output_text","text":"A long answer that was cut","annotations":[]}]}],
			"usage":{"input_tokens":7,"input_tokens_details":{"cached_tokens":0},"output_tokens":6,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":13}}`,
		usage: Usage{PromptTokens: 7, CompletionTokens: 6, Reported: true}},
	{name: "content_filter_is_incomplete",
		in: hubCompletion(`{"role":"assistant","content":null}`, `"content_filter"`, ""),
		want: responsesOutHead + `"status":"incomplete","error":null,"incomplete_details":{"reason":"content_filter"},"model":"gpt-5-codex","output":[],` +
			responsesOutNoUsage},
	{name: "no_choices_and_ids",
		in: `{"object":"chat.completion","choices":[]}`,
		want: `{"id":"resp_fallback","object":"response","created_at":1700000000,"status":"completed","error":null,"incomplete_details":null,"model":"gpt-5-codex",` +
			`"output":[],` + responsesOutNoUsage},
	{name: "resp_id_kept",
		in: `{"id":"resp_abc","choices":[{"index":0,"message":{"content":"x"},"finish_reason":"stop"}]}`,
		want: `{"id":"resp_abc","object":"response","created_at":1700000000,"status":"completed","error":null,"incomplete_details":null,"model":"gpt-5-codex",` +
			`"output":[{"type":"message","id":"msg_abc_0","status":"completed","role":"assistant","content":[{"type":"output_text","text":"x","annotations":[]}]}],` +
			responsesOutNoUsage},
}

func TestResponsesFromHubResponse(t *testing.T) {
	for i := 0; i < len(responsesOutResponseCases); i++ {
		tc := responsesOutResponseCases[i]
		t.Run(tc.name, func(t *testing.T) {
			out, u, e := ResponsesFromHubResponse([]byte(tc.in), responsesOutTestContext(), responsesOutTestInbound(t, tc.reasoning))
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

func TestResponsesFromHubResponseErrors(t *testing.T) {
	cases := []struct {
		name   string
		in     string
		status int
		code   string
		class  apierr.Class
	}{
		{"not_json", `<html>`, 502, "upstream_bad_response", apierr.ClassBadResponse},
		{"bad_json", `{"choices":[`, 502, "upstream_bad_response", apierr.ClassBadResponse},
		{"null", `null`, 502, "upstream_bad_response", apierr.ClassBadResponse},
		{"no_choices", `{"id":"x","object":"chat.completion"}`, 502, "upstream_bad_response", apierr.ClassBadResponse},
		{"a_chunk", `{"object":"chat.completion.chunk","choices":[]}`, 502, "upstream_bad_response", apierr.ClassBadResponse},
		{"rate_limited", `{"error":{"message":"Slow down","type":"requests","code":"rate_limit_exceeded"}}`, 429, "upstream_error", apierr.ClassRateLimited},
		{"bad_request", `{"error":{"message":"bad","code":400}}`, 400, "upstream_error", apierr.ClassBadRequest},
	}
	for i := 0; i < len(cases); i++ {
		tc := cases[i]
		t.Run(tc.name, func(t *testing.T) {
			out, u, e := ResponsesFromHubResponse([]byte(tc.in), responsesOutTestContext(), ResponsesInbound{})
			if e == nil || out != nil || u.Reported {
				t.Fatalf("got %s, %+v, %v", out, u, e)
			}
			if e.Status != tc.status || e.Code != tc.code || e.Class != tc.class {
				t.Errorf("error %d %s class %d, want %d %s class %d", e.Status, e.Code, e.Class, tc.status, tc.code, tc.class)
			}
		})
	}
}

func TestResponsesCustomInput(t *testing.T) {
	cases := []struct{ args, want string }{
		{`{"input":"a\nb"}`, "a\nb"},
		{`{"input":"x","other":1}`, "x"},
		{`{"patch":"y"}`, "y"},
		{`{"a":"1","b":"2"}`, ""},
		{`{}`, ""},
		{`{"input":5}`, ""},
		{`*** Begin Patch`, "*** Begin Patch"},
		{``, ""},
		{`null`, "null"},
	}
	for i := 0; i < len(cases); i++ {
		if got := responsesCustomInput(cases[i].args); got != cases[i].want {
			t.Errorf("%q → %q, want %q", cases[i].args, got, cases[i].want)
		}
	}
}
