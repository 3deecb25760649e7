package translate

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// compactJSON strips insignificant whitespace from a literal so expected
// bodies can be written readably and still be compared byte for byte.
func compactJSON(t *testing.T, s string) string {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(s)); err != nil {
		t.Fatalf("bad expected JSON %q: %v", s, err)
	}
	return buf.String()
}

// anthropicRequestCases are OpenAI requests and the Anthropic request
// each translates to (for upstream model claude-up).
var anthropicRequestCases = []struct {
	name       string
	in         string
	want       string
	wantStream bool
}{
	{name: "minimal_default_max_tokens",
		in:   `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`,
		want: `{"model":"claude-up","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`},
	{name: "system_hoisted_from_anywhere_and_turns_merged",
		in: `{"model":"m","messages":[
			{"role":"system","content":"A"},
			{"role":"user","content":"u1","name":"alice"},
			{"role":"developer","content":[{"type":"text","text":"B"},{"type":"text","text":""}]},
			{"role":"user","content":[{"type":"text","text":"u2"}]},
			{"role":"assistant","content":"a1"},
			{"role":"system","content":"C"},
			{"role":"assistant","content":[{"type":"text","text":"a2"}]},
			{"role":"user","content":""},
			{"role":"user","content":[{"type":"text","text":" \n\t"}]},
			{"role":"assistant","content":"a3"},
			{"role":"assistant","content":"\n\n","tool_calls":[]}]}`,
		want: `{"model":"claude-up","max_tokens":4096,"system":"A\n\nB\n\nC","messages":[
			{"role":"user","content":[{"type":"text","text":"u1"},{"type":"text","text":"u2"}]},
			{"role":"assistant","content":[{"type":"text","text":"a1"},{"type":"text","text":"a2"},{"type":"text","text":"a3"}]}]}`},
	{name: "image_parts",
		in: `{"model":"m","messages":[{"role":"user","content":[
			{"type":"text","text":"What is this?"},
			{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/4AAQ","detail":"high"}},
			{"type":"image_url","image_url":{"url":"https://example.com/cat.png"}},
			{"type":"image_url","image_url":"http://example.com/dog.gif"}]}]}`,
		want: `{"model":"claude-up","max_tokens":4096,"messages":[{"role":"user","content":[
			{"type":"text","text":"What is this?"},
			{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"/9j/4AAQ"}},
			{"type":"image","source":{"type":"url","url":"https://example.com/cat.png"}},
			{"type":"image","source":{"type":"url","url":"http://example.com/dog.gif"}}]}]}`},
	{name: "file_part_becomes_document",
		in: `{"model":"m","messages":[{"role":"user","content":[
			{"type":"file","file":{"file_data":"data:application/pdf;base64,JVBERi0x","filename":"a.pdf"}},
			{"type":"file","file":{"file_data":"JVBERi0y","filename":"b.pdf"}}]}]}`,
		want: `{"model":"claude-up","max_tokens":4096,"messages":[{"role":"user","content":[
			{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0x"}},
			{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0y"}}]}]}`},
	{name: "tool_round_trip",
		in: `{"model":"m","tool_choice":{"type":"function","function":{"name":"get_weather"}},"parallel_tool_calls":false,
			"tools":[
				{"type":"function","function":{"name":"get_weather","description":"Current weather","strict":true,
					"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}},
				{"type":"function","function":{"name":"now"}}],
			"messages":[
				{"role":"user","content":"Weather and time?"},
				{"role":"assistant","content":null,"tool_calls":[
					{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},
					{"id":"call_2","type":"function","function":{"name":"now","arguments":""}},
					{"id":"call_3","type":"function","function":{"name":"now","arguments":"{not json"}},
					{"id":"call_4","type":"function","function":{"name":"now","arguments":"[1]"}}]},
				{"role":"tool","tool_call_id":"call_1","content":"{\"temp_c\":18}"},
				{"role":"tool","tool_call_id":"call_2","content":[{"type":"text","text":"12:00"},{"type":"text","text":"UTC"}]},
				{"role":"tool","tool_call_id":"call_3","content":""},
				{"role":"tool","tool_call_id":"call_4"},
				{"role":"user","content":"Thanks"}]}`,
		want: `{"model":"claude-up","max_tokens":4096,"messages":[
			{"role":"user","content":[{"type":"text","text":"Weather and time?"}]},
			{"role":"assistant","content":[
				{"type":"tool_use","id":"call_1","name":"get_weather","input":{"city":"Paris"}},
				{"type":"tool_use","id":"call_2","name":"now","input":{}},
				{"type":"tool_use","id":"call_3","name":"now","input":{}},
				{"type":"tool_use","id":"call_4","name":"now","input":{}}]},
			{"role":"user","content":[
				{"type":"tool_result","tool_use_id":"call_1","content":"{\"temp_c\":18}"},
				{"type":"tool_result","tool_use_id":"call_2","content":[{"type":"text","text":"12:00"},{"type":"text","text":"UTC"}]},
				{"type":"tool_result","tool_use_id":"call_3"},
				{"type":"tool_result","tool_use_id":"call_4"},
				{"type":"text","text":"Thanks"}]}],
			"tools":[
				{"name":"get_weather","description":"Current weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},
				{"name":"now","input_schema":{"type":"object","properties":{}}}],
			"tool_choice":{"type":"tool","name":"get_weather","disable_parallel_tool_use":true}}`},
	{name: "tool_results_before_user_text_of_the_same_turn",
		in: `{"model":"m","messages":[
			{"role":"user","content":"go"},
			{"role":"assistant","content":"Calling.","tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"f","arguments":"{}"}}]},
			{"role":"user","content":[{"type":"text","text":"note"},{"type":"image_url","image_url":{"url":"https://x.test/i.png"}}]},
			{"role":"tool","tool_call_id":"toolu_1","content":"done"}]}`,
		want: `{"model":"claude-up","max_tokens":4096,"messages":[
			{"role":"user","content":[{"type":"text","text":"go"}]},
			{"role":"assistant","content":[{"type":"text","text":"Calling."},{"type":"tool_use","id":"toolu_1","name":"f","input":{}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"done"},
				{"type":"text","text":"note"},{"type":"image","source":{"type":"url","url":"https://x.test/i.png"}}]}]}`},
	{name: "big_integer_in_tool_arguments_survives",
		in: `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f",
			"arguments":"{\"n\": 12345678901234567890123, \"f\": 1.000000000000000000001, \"e\": 1e400}"}}]}]}`,
		want: `{"model":"claude-up","max_tokens":4096,"messages":[{"role":"assistant","content":[
			{"type":"tool_use","id":"c","name":"f","input":{"n":12345678901234567890123,"f":1.000000000000000000001,"e":1e400}}]}]}`},
	{name: "arguments_sent_as_object",
		in:   `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":{"a":99999999999999999999}}}]}]}`,
		want: `{"model":"claude-up","max_tokens":4096,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"c","name":"f","input":{"a":99999999999999999999}}]}]}`},
	{name: "sampling_parameters",
		in: `{"model":"m","messages":[{"role":"user","content":"x"}],"temperature":1.7,"top_p":0.9,"stop":"END",
			"user":"u-42","stream":true,"stream_options":{"include_usage":true},"max_tokens":100}`,
		want: `{"model":"claude-up","max_tokens":100,"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],
			"stop_sequences":["END"],"temperature":1,"top_p":0.9,"metadata":{"user_id":"u-42"},"stream":true}`,
		wantStream: true},
	{name: "negative_temperature_clamped_and_stop_array",
		in: `{"model":"m","messages":[{"role":"user","content":"x"}],"temperature":-0.5,"stop":["a","","b"],"stream":false,
			"max_tokens":100,"max_completion_tokens":50}`,
		want: `{"model":"claude-up","max_tokens":50,"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],
			"stop_sequences":["a","b"],"temperature":0}`},
	{name: "max_completion_tokens_alone",
		in:   `{"model":"m","messages":[{"role":"user","content":"x"}],"max_completion_tokens":7,"max_tokens":null,"temperature":0.25}`,
		want: `{"model":"claude-up","max_tokens":7,"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"temperature":0.25}`},
	{name: "harmless_fields_and_no_op_values_dropped",
		in: `{"model":"m","messages":[{"role":"user","content":"x"}],"store":true,"metadata":{"k":"v"},"service_tier":"flex",
			"n":1,"logprobs":false,"top_logprobs":0,"presence_penalty":0,"frequency_penalty":0,"logit_bias":{},
			"response_format":{"type":"text"},"modalities":["text"],"seed":null,"audio":null,"prediction":{"type":"content","content":"x"},
			"prompt_cache_key":"k","verbosity":"low","some_future_field":{"a":1},"safety_identifier":"sid"}`,
		want: `{"model":"claude-up","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"metadata":{"user_id":"sid"}}`},
	{name: "tool_choice_auto",
		in:   `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"auto"}`,
		want: `{"model":"claude-up","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"tools":[{"name":"f","input_schema":{"type":"object","properties":{}}}],"tool_choice":{"type":"auto"}}`},
	{name: "tool_choice_required",
		in:   `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"required","parallel_tool_calls":true}`,
		want: `{"model":"claude-up","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"tools":[{"name":"f","input_schema":{"type":"object","properties":{}}}],"tool_choice":{"type":"any"}}`},
	{name: "tool_choice_none_ignores_parallel",
		in:   `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"none","parallel_tool_calls":false}`,
		want: `{"model":"claude-up","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"tools":[{"name":"f","input_schema":{"type":"object","properties":{}}}],"tool_choice":{"type":"none"}}`},
	{name: "parallel_false_adds_auto",
		in:   `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],"parallel_tool_calls":false}`,
		want: `{"model":"claude-up","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"tools":[{"name":"f","input_schema":{"type":"object","properties":{}}}],"tool_choice":{"type":"auto","disable_parallel_tool_use":true}}`},
	{name: "tool_choice_without_tools_dropped",
		in:   `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[],"tool_choice":"none","parallel_tool_calls":false}`,
		want: `{"model":"claude-up","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}]}`},
	{name: "reasoning_effort_without_cap_grows_max_tokens",
		in:   `{"model":"m","messages":[{"role":"user","content":"x"}],"reasoning_effort":"medium"}`,
		want: `{"model":"claude-up","max_tokens":8192,"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"thinking":{"type":"enabled","budget_tokens":4096}}`},
	{name: "reasoning_effort_budget_kept_below_cap",
		in:   `{"model":"m","messages":[{"role":"user","content":"x"}],"reasoning_effort":"high","max_completion_tokens":5000}`,
		want: `{"model":"claude-up","max_tokens":5000,"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"thinking":{"type":"enabled","budget_tokens":4999}}`},
	{name: "reasoning_effort_minimal_means_no_thinking",
		in:   `{"model":"m","messages":[{"role":"user","content":"x"}],"reasoning_effort":"minimal"}`,
		want: `{"model":"claude-up","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}]}`},
	{name: "assistant_refusal_and_html_not_escaped",
		in: `{"model":"m","messages":[{"role":"user","content":"<b>&amp;</b>"},
			{"role":"assistant","content":[{"type":"refusal","refusal":"I can't <help>."}]},
			{"role":"assistant","content":null,"refusal":"No & no."}]}`,
		want: `{"model":"claude-up","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"<b>&amp;</b>"}]},
			{"role":"assistant","content":[{"type":"text","text":"I can't <help>."},{"type":"text","text":"No & no."}]}]}`},
}

func TestAnthropicChatRequest(t *testing.T) {
	for i := 0; i < len(anthropicRequestCases); i++ {
		tc := anthropicRequestCases[i]
		t.Run(tc.name, func(t *testing.T) {
			out, stream, e := AnthropicChatRequest([]byte(tc.in), "claude-up")
			if e != nil {
				t.Fatalf("unexpected error: %s (%s)", e.Message, e.Code)
			}
			if want := compactJSON(t, tc.want); string(out) != want {
				t.Errorf("got\n%s\nwant\n%s", out, want)
			}
			if stream != tc.wantStream {
				t.Errorf("stream = %v, want %v", stream, tc.wantStream)
			}
		})
	}
}

// anthropicTestUser and anthropicTestTool complete a request in the error
// cases: one user message, one function tool.
const anthropicTestUser = `"messages":[{"role":"user","content":"x"}]`
const anthropicTestTool = `"tools":[{"type":"function","function":{"name":"f"}}]`

// anthropicRequestErrorCases are requests AnthropicChatRequest refuses,
// with the error code and a part of the message each must get.
var anthropicRequestErrorCases = []struct {
	name     string
	in       string
	code     string
	contains string // must appear in the message
}{
	{"invalid_json", `{"model":`, "invalid_json", "not valid JSON"},
	{"not_an_object", `[1,2]`, "invalid_json", "must be a JSON object"},
	{"null_body", `null`, "invalid_json", "must be a JSON object"},
	{"messages_missing", `{"model":"m"}`, "invalid_request", `"messages" is required`},
	{"messages_not_array", `{"messages":{"role":"user"}}`, "invalid_request", `"messages" must be an array`},
	{"messages_empty", `{"messages":[]}`, "invalid_request", `"messages" must not be empty`},
	{"only_system", `{"messages":[{"role":"system","content":"s"}]}`, "invalid_request", "at least one non-empty"},
	{"message_not_object", `{"messages":["hi"]}`, "invalid_request", `"messages[0]" must be an object`},
	{"role_missing", `{"messages":[{"content":"hi"}]}`, "invalid_request", `"messages[0].role" must be a string`},
	{"role_unknown", `{"messages":[{"role":"robot","content":"hi"}]}`, "invalid_request", `"messages[0].role"`},
	{"role_function", `{"messages":[{"role":"function","name":"f","content":"x"}]}`, "unsupported_parameter", `parameter "messages[0].role" (role "function"`},
	{"user_content_number", `{"messages":[{"role":"user","content":5}]}`, "invalid_request", `"messages[0].content" must be a string or an array`},
	{"user_content_null", `{"messages":[{"role":"user","content":null}]}`, "invalid_request", `"messages[0].content"`},
	{"part_type_unknown", `{"messages":[{"role":"user","content":[{"type":"video","video":{}}]}]}`, "unsupported_parameter", `content part type "video"`},
	{"text_part_not_string", `{"messages":[{"role":"user","content":[{"type":"text","text":1}]}]}`, "invalid_request", `"messages[0].content[0].text" must be a string`},
	{"image_in_system", `{"messages":[{"role":"system","content":[{"type":"image_url","image_url":{"url":"https://x"}}]}]}`, "invalid_request", "allowed in system messages"},
	{"image_bad_scheme", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"ftp://x/y.png"}}]}]}`, "invalid_request", `"messages[0].content[0].image_url.url"`},
	{"image_data_not_base64", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png,abc"}}]}]}`, "invalid_request", "image_url.url"},
	{"input_audio", `{"messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"AAA","format":"wav"}}]}]}`, "unsupported_parameter", `"input_audio"`},
	{"file_id", `{"messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"file-1"}}]}]}`, "unsupported_parameter", `file.file_id`},
	{"tool_without_call_id", `{"messages":[{"role":"tool","content":"x"}]}`, "invalid_request", `"messages[0].tool_call_id"`},
	{"tool_call_without_id", `{"messages":[{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f"}}]}]}`, "invalid_request", `"messages[0].tool_calls[0].id"`},
	{"tool_call_without_name", `{"messages":[{"role":"assistant","tool_calls":[{"id":"c","function":{"arguments":"{}"}}]}]}`, "invalid_request", `tool_calls[0].function.name`},
	{"tool_call_custom", `{"messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"custom","custom":{}}]}]}`, "unsupported_parameter", `tool call type "custom"`},
	{"assistant_function_call", `{"messages":[{"role":"assistant","function_call":{"name":"f","arguments":"{}"}}]}`, "unsupported_parameter", `messages[0].function_call`},
	{"n_2", `{"n":2,` + anthropicTestUser + `}`, "unsupported_parameter", `parameter "n"`},
	{"n_0", `{"n":0,` + anthropicTestUser + `}`, "invalid_request", `"n" must be at least 1`},
	{"logit_bias", `{"logit_bias":{"50256":-100},` + anthropicTestUser + `}`, "unsupported_parameter", `parameter "logit_bias"`},
	{"logprobs", `{"logprobs":true,` + anthropicTestUser + `}`, "unsupported_parameter", `parameter "logprobs"`},
	{"top_logprobs", `{"top_logprobs":3,` + anthropicTestUser + `}`, "unsupported_parameter", `parameter "top_logprobs"`},
	{"presence_penalty", `{"presence_penalty":0.5,` + anthropicTestUser + `}`, "unsupported_parameter", `parameter "presence_penalty"`},
	{"frequency_penalty", `{"frequency_penalty":-1,` + anthropicTestUser + `}`, "unsupported_parameter", `parameter "frequency_penalty"`},
	{"seed", `{"seed":42,` + anthropicTestUser + `}`, "unsupported_parameter", `parameter "seed"`},
	{"response_format_json_object", `{"response_format":{"type":"json_object"},` + anthropicTestUser + `}`, "unsupported_parameter", `parameter "response_format" (type "json_object")`},
	{"response_format_json_schema", `{"response_format":{"type":"json_schema","json_schema":{"name":"a","schema":{}}},` + anthropicTestUser + `}`, "unsupported_parameter", `parameter "response_format" (type "json_schema")`},
	{"modalities_audio", `{"modalities":["text","audio"],` + anthropicTestUser + `}`, "unsupported_parameter", `parameter "modalities"`},
	{"audio", `{"audio":{"voice":"alloy","format":"wav"},` + anthropicTestUser + `}`, "unsupported_parameter", `parameter "audio"`},
	{"functions", `{"functions":[{"name":"f"}],` + anthropicTestUser + `}`, "unsupported_parameter", `parameter "functions"`},
	{"function_call", `{"function_call":"auto",` + anthropicTestUser + `}`, "unsupported_parameter", `parameter "function_call"`},
	{"web_search_options", `{"web_search_options":{},` + anthropicTestUser + `}`, "unsupported_parameter", `parameter "web_search_options"`},
	{"tool_choice_allowed_tools", `{` + anthropicTestTool + `,"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[]}},` + anthropicTestUser + `}`, "unsupported_parameter", `parameter "tool_choice"`},
	{"tool_choice_unknown_string", `{` + anthropicTestTool + `,"tool_choice":"sometimes",` + anthropicTestUser + `}`, "invalid_request", `"tool_choice"`},
	{"tool_choice_required_without_tools", `{"tool_choice":"required",` + anthropicTestUser + `}`, "invalid_request", `"tools" must be non-empty`},
	{"tool_type_custom", `{"tools":[{"type":"custom","custom":{"name":"x"}}],` + anthropicTestUser + `}`, "unsupported_parameter", `tool type "custom"`},
	{"tool_parameters_not_object", `{"tools":[{"type":"function","function":{"name":"f","parameters":[]}}],` + anthropicTestUser + `}`, "invalid_request", `"tools[0].function.parameters" must be an object`},
	{"max_tokens_zero", `{"max_tokens":0,` + anthropicTestUser + `}`, "invalid_request", `"max_tokens" must be at least 1`},
	{"max_tokens_string", `{"max_completion_tokens":"10",` + anthropicTestUser + `}`, "invalid_request", `"max_completion_tokens" must be an integer`},
	{"max_tokens_fraction", `{"max_tokens":10.5,` + anthropicTestUser + `}`, "invalid_request", `"max_tokens" must be an integer`},
	{"temperature_string", `{"temperature":"hot",` + anthropicTestUser + `}`, "invalid_request", `"temperature" must be a number`},
	{"stop_number", `{"stop":5,` + anthropicTestUser + `}`, "invalid_request", `"stop" must be a string or an array of strings`},
	{"stream_string", `{"stream":"yes",` + anthropicTestUser + `}`, "invalid_request", `"stream" must be a boolean`},
	{"user_number", `{"user":7,` + anthropicTestUser + `}`, "invalid_request", `"user" must be a string`},
	{"reasoning_effort_unknown", `{"reasoning_effort":"extreme",` + anthropicTestUser + `}`, "invalid_request", `"reasoning_effort"`},
	{"reasoning_effort_cap_too_small", `{"reasoning_effort":"low","max_tokens":1000,` + anthropicTestUser + `}`, "unsupported_parameter", `parameter "reasoning_effort"`},
}

func TestAnthropicChatRequestErrors(t *testing.T) {
	for i := 0; i < len(anthropicRequestErrorCases); i++ {
		tc := anthropicRequestErrorCases[i]
		t.Run(tc.name, func(t *testing.T) {
			out, _, e := AnthropicChatRequest([]byte(tc.in), "claude-up")
			if e == nil {
				t.Fatalf("no error; translated to %s", out)
			}
			if e.Status != 400 || e.Kind != "invalid_request_error" || e.Code != tc.code {
				t.Errorf("got %d %s %s, want 400 invalid_request_error %s", e.Status, e.Kind, e.Code, tc.code)
			}
			if !strings.Contains(e.Message, tc.contains) {
				t.Errorf("message %q does not contain %q", e.Message, tc.contains)
			}
			if e.Code == "unsupported_parameter" && !strings.Contains(e.Message, "not supported by anthropic-type providers") {
				t.Errorf("message %q does not say which provider type cannot do it", e.Message)
			}
		})
	}
}

func TestAnthropicChatResponse(t *testing.T) {
	tc := anthropicTestContext(false)
	cases := []struct {
		name      string
		in        string
		want      string
		wantUsage Usage
	}{
		{name: "text_with_cache_tokens",
			in: `{"id":"msg_01XYZ","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929",
				"content":[{"type":"text","text":"18 °C "},{"type":"text","text":"in <Paris>."}],"stop_reason":"end_turn","stop_sequence":null,
				"usage":{"input_tokens":410,"output_tokens":12,"cache_creation_input_tokens":100,"cache_read_input_tokens":64}}`,
			want: `{"id":"msg_01XYZ","object":"chat.completion","created":1700000000,"model":"claude-alias",
				"choices":[{"index":0,"message":{"role":"assistant","content":"18 °C in <Paris>."},"logprobs":null,"finish_reason":"stop"}],
				"usage":{"prompt_tokens":574,"completion_tokens":12,"total_tokens":586,"prompt_tokens_details":{"cached_tokens":64}}}`,
			wantUsage: Usage{PromptTokens: 574, CompletionTokens: 12, CacheCreationTokens: 100, CacheReadTokens: 64, Reported: true}},
		{name: "tool_only_content_is_null",
			in: `{"id":"msg_2","type":"message","role":"assistant","content":[
				{"type":"thinking","thinking":"hmm","signature":"sig"},
				{"type":"tool_use","id":"toolu_01A","name":"get_weather","input":{"city": "Paris", "n": 12345678901234567890123}},
				{"type":"tool_use","id":"toolu_01B","name":"now","input":{}}],
				"stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":5}}`,
			want: `{"id":"msg_2","object":"chat.completion","created":1700000000,"model":"claude-alias",
				"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[
					{"id":"toolu_01A","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\",\"n\":12345678901234567890123}"}},
					{"id":"toolu_01B","type":"function","function":{"name":"now","arguments":"{}"}}]},"logprobs":null,"finish_reason":"tool_calls"}],
				"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":0}}}`,
			wantUsage: Usage{PromptTokens: 10, CompletionTokens: 5, Reported: true}},
		{name: "text_and_tool_and_fallback_id_without_usage",
			in: `{"type":"message","content":[{"type":"redacted_thinking","data":"x"},{"type":"text","text":"Let me check."},
				{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"q":"x"}},
				{"type":"tool_use","id":"toolu_1","name":"f"}],"stop_reason":"max_tokens"}`,
			want: `{"id":"chatcmpl-fallback","object":"chat.completion","created":1700000000,"model":"claude-alias",
				"choices":[{"index":0,"message":{"role":"assistant","content":"Let me check.","tool_calls":[
					{"id":"toolu_1","type":"function","function":{"name":"f","arguments":"{}"}}]},"logprobs":null,"finish_reason":"length"}]}`},
		{name: "empty_content",
			in: `{"id":"msg_3","type":"message","content":[],"stop_reason":"refusal","usage":{"input_tokens":1,"output_tokens":0}}`,
			want: `{"id":"msg_3","object":"chat.completion","created":1700000000,"model":"claude-alias",
				"choices":[{"index":0,"message":{"role":"assistant","content":""},"logprobs":null,"finish_reason":"content_filter"}],
				"usage":{"prompt_tokens":1,"completion_tokens":0,"total_tokens":1,"prompt_tokens_details":{"cached_tokens":0}}}`,
			wantUsage: Usage{PromptTokens: 1, Reported: true}},
	}
	for i := 0; i < len(cases); i++ {
		c := cases[i]
		t.Run(c.name, func(t *testing.T) {
			out, u, e := AnthropicChatResponse([]byte(c.in), tc)
			if e != nil {
				t.Fatalf("unexpected error: %s", e.Error())
			}
			if want := compactJSON(t, c.want); string(out) != want {
				t.Errorf("got\n%s\nwant\n%s", out, want)
			}
			if u != c.wantUsage {
				t.Errorf("usage %+v, want %+v", u, c.wantUsage)
			}
		})
	}
}

func TestAnthropicFinishReasons(t *testing.T) {
	cases := map[string]string{
		"end_turn": "stop", "stop_sequence": "stop", "pause_turn": "stop", "max_tokens": "length",
		"model_context_window_exceeded": "length", "tool_use": "tool_calls", "refusal": "content_filter",
		"some_future_reason": "stop", "null": "stop",
	}
	for reason, want := range cases {
		stop := `"` + reason + `"`
		if reason == "null" {
			stop = "null"
		}
		out, _, e := AnthropicChatResponse([]byte(`{"type":"message","content":[],"stop_reason":`+stop+`}`), anthropicTestContext(false))
		if e != nil {
			t.Fatalf("%s: %v", reason, e)
		}
		if !strings.Contains(string(out), `"finish_reason":"`+want+`"`) {
			t.Errorf("%s: got %s, want finish_reason %q", reason, out, want)
		}
	}
}

func TestAnthropicChatResponseErrors(t *testing.T) {
	const secret = "SECRET-BODY-CONTENT"
	cases := []struct {
		name, in, code, contains string
	}{
		{"not_json", "<html>" + secret + "</html>", "upstream_bad_response", "malformed response"},
		{"truncated_json", `{"type":"message","content":[{"type":"text","text":"` + secret, "upstream_bad_response", "malformed response"},
		{"array", `["` + secret + `"]`, "upstream_bad_response", "not a JSON object"},
		{"null", `null`, "upstream_bad_response", "not a JSON object"},
		{"empty", ``, "upstream_bad_response", "not a JSON object"},
		{"not_a_message", `{"hello":"` + secret + `"}`, "upstream_bad_response", "not a message"},
		{"wrong_types", `{"type":"message","content":"` + secret + `"}`, "upstream_bad_response", "malformed response"},
		{"error_body", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, "upstream_error", "overloaded_error: Overloaded"},
	}
	for i := 0; i < len(cases); i++ {
		c := cases[i]
		t.Run(c.name, func(t *testing.T) {
			out, u, e := AnthropicChatResponse([]byte(c.in), anthropicTestContext(false))
			if e == nil {
				t.Fatalf("no error; got %s", out)
			}
			if e.Status != 502 || e.Kind != "server_error" || e.Code != c.code || u.Reported {
				t.Errorf("got %d %s %s (usage %+v), want 502 server_error %s", e.Status, e.Kind, e.Code, u, c.code)
			}
			if !strings.Contains(e.Message, c.contains) || !strings.Contains(e.Message, "anthropic-type provider") {
				t.Errorf("message %q does not contain %q and the provider type", e.Message, c.contains)
			}
			if strings.Contains(e.Message, secret) {
				t.Errorf("message leaks the upstream body: %q", e.Message)
			}
		})
	}
}
