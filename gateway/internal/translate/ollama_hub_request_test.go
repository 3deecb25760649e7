package translate

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// ollamaCompact is want without its insignificant white space, for
// comparing with a translator's output.
func ollamaCompact(t *testing.T, want string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(want)); err != nil {
		t.Fatalf("want is not JSON: %v: %s", err, want)
	}
	return b.String()
}

// Base64 openings of each sniffed image format.
const (
	ollamaPNG  = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAAB"
	ollamaJPEG = "/9j/4AAQSkZJRgABAQ"
	ollamaGIF  = "R0lGODlhAQABAIAAAP"
	ollamaWEBP = "UklGRiQAAABXRUJQVlA4IBgAAAAw"
)

// ollamaChatCases are /api/chat requests, the hub request each
// translates to, and what the pipeline is told about it.
var ollamaChatCases = []struct {
	name   string
	in     string
	want   string
	wantIn OllamaInbound
}{
	{name: "minimal_streams_by_default",
		in:     `{"model":"llama3.2","messages":[{"role":"user","content":"Hi"}]}`,
		want:   `{"model":"llama3.2","messages":[{"role":"user","content":"Hi"}],"stream":true}`,
		wantIn: OllamaInbound{Stream: true, Model: "llama3.2"}},
	{name: "stream_false_is_written",
		in:     `{"model":"m","stream":false,"messages":[{"role":"user","content":"Hi"}]}`,
		want:   `{"model":"m","messages":[{"role":"user","content":"Hi"}],"stream":false}`,
		wantIn: OllamaInbound{Model: "m"}},
	{name: "stream_null_is_the_default",
		in:     `{"model":"m","stream":null,"messages":[{"role":"user","content":"Hi"}]}`,
		want:   `{"model":"m","messages":[{"role":"user","content":"Hi"}],"stream":true}`,
		wantIn: OllamaInbound{Stream: true, Model: "m"}},
	{name: "html_characters_kept_and_unknown_keys_ignored",
		in: `{"model":"m","keep_alive":"5m","truncate":true,"shift":false,"logprobs":true,"top_logprobs":3,"messages":[
			{"role":"system","content":"Be <terse> & kind."},{"role":"user","content":"a < b","thinking":"x"}]}`,
		want:   `{"model":"m","messages":[{"role":"system","content":"Be <terse> & kind."},{"role":"user","content":"a < b"}],"stream":true}`,
		wantIn: OllamaInbound{Stream: true, Model: "m"}},
	{name: "empty_system_and_empty_assistant_dropped_thinking_dropped",
		in: `{"model":"m","messages":[{"role":"system","content":""},{"role":"user","content":"q"},
			{"role":"assistant","content":"","thinking":"hmm"},{"role":"assistant","content":"a","thinking":"why"},{"role":"user"}]}`,
		want: `{"model":"m","messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a"},
			{"role":"user","content":""}],"stream":true}`,
		wantIn: OllamaInbound{Stream: true, Model: "m"}},
	{name: "tool_round_trip_by_name",
		in: `{"model":"m","messages":[{"role":"user","content":"Weather in Paris?"},
			{"role":"assistant","content":"","tool_calls":[{"function":{"index":0,"name":"get_weather","arguments":{"city": "Paris","n":12345678901234567890123,"f":1.50}}}]},
			{"role":"tool","content":"18 C","tool_name":"get_weather"},
			{"role":"assistant","content":"It is 18 C."}]}`,
		want: `{"model":"m","messages":[{"role":"user","content":"Weather in Paris?"},
			{"role":"assistant","content":null,"tool_calls":[{"id":"call_get_weather_0","type":"function","function":{"name":"get_weather",
				"arguments":"{\"city\":\"Paris\",\"n\":12345678901234567890123,\"f\":1.50}"}}]},
			{"role":"tool","content":"18 C","tool_call_id":"call_get_weather_0"},
			{"role":"assistant","content":"It is 18 C."}],"stream":true}`,
		wantIn: OllamaInbound{Stream: true, Model: "m"}},
	{name: "parallel_calls_of_one_tool_answered_in_order",
		in: `{"model":"m","messages":[{"role":"user","content":"Paris and Rome?"},
			{"role":"assistant","content":"Checking.","tool_calls":[{"id":"a1","function":{"name":"w","arguments":{"c":"Paris"}}},
				{"id":"b2","function":{"name":"w","arguments":{"c":"Rome"}}},{"function":{"name":"t","arguments":null}}]},
			{"role":"tool","content":"18","tool_name":"w"},{"role":"tool","content":"noon","tool_name":"t"},{"role":"tool","content":"21","tool_name":"w"}]}`,
		want: `{"model":"m","messages":[{"role":"user","content":"Paris and Rome?"},
			{"role":"assistant","content":"Checking.","tool_calls":[{"id":"a1","type":"function","function":{"name":"w","arguments":"{\"c\":\"Paris\"}"}},
				{"id":"b2","type":"function","function":{"name":"w","arguments":"{\"c\":\"Rome\"}"}},
				{"id":"call_t_0","type":"function","function":{"name":"t","arguments":"{}"}}]},
			{"role":"tool","content":"18","tool_call_id":"a1"},{"role":"tool","content":"noon","tool_call_id":"call_t_0"},
			{"role":"tool","content":"21","tool_call_id":"b2"}],"stream":true}`,
		wantIn: OllamaInbound{Stream: true, Model: "m"}},
	{name: "tool_call_id_kept_unknown_name_synthesized_no_name_takes_the_next",
		in: `{"model":"m","messages":[{"role":"user","content":"go"},
			{"role":"assistant","tool_calls":[{"id":"x1","function":{"name":"f","arguments":"{\"a\":1}"}},{"id":"x2","function":{"name":"g"}}]},
			{"role":"tool","content":"r1","tool_call_id":"x1","tool_name":"g"},{"role":"tool","content":"r2"},
			{"role":"tool","content":"r3","tool_name":"lookup"},{"role":"tool","content":"r4"}]}`,
		want: `{"model":"m","messages":[{"role":"user","content":"go"},
			{"role":"assistant","content":null,"tool_calls":[{"id":"x1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}},
				{"id":"x2","type":"function","function":{"name":"g","arguments":"{}"}}]},
			{"role":"tool","content":"r1","tool_call_id":"x1"},{"role":"tool","content":"r2","tool_call_id":"x2"},
			{"role":"tool","content":"r3","tool_call_id":"call_lookup_0"},{"role":"tool","content":"r4","tool_call_id":"call_tool_1"}],"stream":true}`,
		wantIn: OllamaInbound{Stream: true, Model: "m"}},
	{name: "an_answered_name_falls_back_to_its_latest_call",
		in: `{"model":"m","messages":[{"role":"user","content":"go"},
			{"role":"assistant","tool_calls":[{"id":"old","function":{"name":"f","arguments":{}}}]},{"role":"tool","content":"1","tool_name":"f"},
			{"role":"assistant","tool_calls":[{"id":"new","function":{"name":"f","arguments":{}}}]},{"role":"tool","content":"2","tool_name":"f"},
			{"role":"tool","content":"3","tool_name":"f"}]}`,
		want: `{"model":"m","messages":[{"role":"user","content":"go"},
			{"role":"assistant","content":null,"tool_calls":[{"id":"old","type":"function","function":{"name":"f","arguments":"{}"}}]},
			{"role":"tool","content":"1","tool_call_id":"old"},
			{"role":"assistant","content":null,"tool_calls":[{"id":"new","type":"function","function":{"name":"f","arguments":"{}"}}]},
			{"role":"tool","content":"2","tool_call_id":"new"},{"role":"tool","content":"3","tool_call_id":"new"}],"stream":true}`,
		wantIn: OllamaInbound{Stream: true, Model: "m"}},
	{name: "images_sniffed_into_data_urls",
		in: `{"model":"m","messages":[{"role":"user","content":"What are these?","images":["` + ollamaPNG + `","` + ollamaJPEG + `","` +
			ollamaGIF + `","` + ollamaWEBP + `","AAAA","data:image/heic;base64,AAAB"]},{"role":"user","content":"","images":["` + ollamaJPEG + `"]}]}`,
		want: `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"What are these?"},
			{"type":"image_url","image_url":{"url":"data:image/png;base64,` + ollamaPNG + `"}},
			{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,` + ollamaJPEG + `"}},
			{"type":"image_url","image_url":{"url":"data:image/gif;base64,` + ollamaGIF + `"}},
			{"type":"image_url","image_url":{"url":"data:image/webp;base64,` + ollamaWEBP + `"}},
			{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}},
			{"type":"image_url","image_url":{"url":"data:image/heic;base64,AAAB"}}]},
			{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,` + ollamaJPEG + `"}}]}],"stream":true}`,
		wantIn: OllamaInbound{Stream: true, Model: "m"}},
	{name: "format_json",
		in:     `{"model":"m","format":"json","stream":false,"messages":[{"role":"user","content":"x"}]}`,
		want:   `{"model":"m","messages":[{"role":"user","content":"x"}],"stream":false,"response_format":{"type":"json_object"}}`,
		wantIn: OllamaInbound{Model: "m"}},
	{name: "format_schema",
		in: `{"model":"m","format":{"type":"object","properties":{"age":{"type":"integer","maximum":9007199254740993}},"required":["age"]},
			"messages":[{"role":"user","content":"x"}]}`,
		want: `{"model":"m","messages":[{"role":"user","content":"x"}],"stream":true,"response_format":{"type":"json_schema",
			"json_schema":{"name":"response","schema":{"type":"object","properties":{"age":{"type":"integer","maximum":9007199254740993}},"required":["age"]},"strict":false}}}`,
		wantIn: OllamaInbound{Stream: true, Model: "m"}},
	{name: "format_empty_is_none",
		in:     `{"model":"m","format":"","messages":[{"role":"user","content":"x"}]}`,
		want:   `{"model":"m","messages":[{"role":"user","content":"x"}],"stream":true}`,
		wantIn: OllamaInbound{Stream: true, Model: "m"}},
	{name: "options_mapped_and_ignored",
		in: `{"model":"m","messages":[{"role":"user","content":"x"}],"options":{"temperature":0.20,"top_p":0.9,"top_k":40,"min_p":0.05,
			"num_ctx":8192,"num_predict":256,"stop":["</s>","","User:"],"seed":7,"frequency_penalty":0.5,"presence_penalty":-1e-1,
			"repeat_penalty":1.1,"typical_p":1,"mirostat":2,"mirostat_tau":5.0,"mirostat_eta":0.1,"num_gpu":99,"num_thread":8,"use_mmap":true,"custom":"x"}}`,
		want: `{"model":"m","messages":[{"role":"user","content":"x"}],"stream":true,"max_tokens":256,"temperature":0.20,"top_p":0.9,
			"stop":["</s>","User:"],"seed":7,"frequency_penalty":0.5,"presence_penalty":-1e-1}`,
		wantIn: OllamaInbound{Stream: true, Model: "m"}},
	{name: "options_stop_string_seed_zero_num_predict_unlimited",
		in:     `{"model":"m","messages":[{"role":"user","content":"x"}],"options":{"stop":"\n\n","seed":0,"num_predict":-1,"temperature":null}}`,
		want:   `{"model":"m","messages":[{"role":"user","content":"x"}],"stream":true,"stop":["\n\n"],"seed":0}`,
		wantIn: OllamaInbound{Stream: true, Model: "m"}},
	{name: "options_num_predict_zero_and_fill_context_no_cap",
		in:     `{"model":"m","messages":[{"role":"user","content":"x"}],"options":{"num_predict":-2,"stop":""}}`,
		want:   `{"model":"m","messages":[{"role":"user","content":"x"}],"stream":true}`,
		wantIn: OllamaInbound{Stream: true, Model: "m"}},
	{name: "think_true_is_medium",
		in:     `{"model":"m","think":true,"messages":[{"role":"user","content":"x"}]}`,
		want:   `{"model":"m","messages":[{"role":"user","content":"x"}],"stream":true,"reasoning_effort":"medium"}`,
		wantIn: OllamaInbound{Stream: true, Think: true, Model: "m"}},
	{name: "think_level",
		in:     `{"model":"m","think":"high","messages":[{"role":"user","content":"x"}]}`,
		want:   `{"model":"m","messages":[{"role":"user","content":"x"}],"stream":true,"reasoning_effort":"high"}`,
		wantIn: OllamaInbound{Stream: true, Think: true, Model: "m"}},
	{name: "think_false",
		in:     `{"model":"m","think":false,"messages":[{"role":"user","content":"x"}]}`,
		want:   `{"model":"m","messages":[{"role":"user","content":"x"}],"stream":true}`,
		wantIn: OllamaInbound{Stream: true, Model: "m"}},
	{name: "tools_passed_through",
		in: `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"get_weather",
			"description":"Current <weather>","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]}`,
		want: `{"model":"m","messages":[{"role":"user","content":"x"}],"stream":true,"tools":[{"type":"function","function":{"name":"get_weather",
			"description":"Current <weather>","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]}`,
		wantIn: OllamaInbound{Stream: true, Model: "m"}},
	{name: "empty_tools_left_out",
		in:     `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[]}`,
		want:   `{"model":"m","messages":[{"role":"user","content":"x"}],"stream":true}`,
		wantIn: OllamaInbound{Stream: true, Model: "m"}},
}

func TestHubFromOllamaChat(t *testing.T) {
	for i := 0; i < len(ollamaChatCases); i++ {
		tc := ollamaChatCases[i]
		t.Run(tc.name, func(t *testing.T) {
			out, in, e := HubFromOllamaChat([]byte(tc.in))
			if e != nil {
				t.Fatalf("error %+v", e)
			}
			if want := ollamaCompact(t, tc.want); string(out) != want {
				t.Errorf("got\n%s\nwant\n%s", out, want)
			}
			if in != tc.wantIn {
				t.Errorf("inbound %+v, want %+v", in, tc.wantIn)
			}
		})
	}
}

var ollamaGenerateCases = []struct {
	name   string
	in     string
	want   string
	wantIn OllamaInbound
}{
	{name: "prompt_and_system",
		in:     `{"model":"llama3.2","prompt":"Why is the sky blue?","system":"Answer in <10 words."}`,
		want:   `{"model":"llama3.2","messages":[{"role":"system","content":"Answer in <10 words."},{"role":"user","content":"Why is the sky blue?"}],"stream":true}`,
		wantIn: OllamaInbound{Stream: true, Generate: true, Model: "llama3.2"}},
	{name: "raw_template_context_keep_alive_ignored_empty_suffix_accepted",
		in:     `{"model":"m","prompt":"[INST] hi [/INST]","raw":true,"template":"{{ .Prompt }}","context":[1,2,3],"keep_alive":0,"suffix":"","stream":false}`,
		want:   `{"model":"m","messages":[{"role":"user","content":"[INST] hi [/INST]"}],"stream":false}`,
		wantIn: OllamaInbound{Generate: true, Model: "m"}},
	{name: "images_format_options_think",
		in: `{"model":"m","prompt":"Describe","images":["` + ollamaJPEG + `"],"format":"json","think":"low",
			"options":{"num_predict":64,"temperature":0,"stop":["END"]}}`,
		want: `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"Describe"},
			{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,` + ollamaJPEG + `"}}]}],"stream":true,"max_tokens":64,"temperature":0,
			"stop":["END"],"response_format":{"type":"json_object"},"reasoning_effort":"low"}`,
		wantIn: OllamaInbound{Stream: true, Generate: true, Think: true, Model: "m"}},
	{name: "images_without_prompt",
		in:     `{"model":"m","images":["` + ollamaPNG + `"]}`,
		want:   `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,` + ollamaPNG + `"}}]}],"stream":true}`,
		wantIn: OllamaInbound{Stream: true, Generate: true, Model: "m"}},
}

func TestHubFromOllamaGenerate(t *testing.T) {
	for i := 0; i < len(ollamaGenerateCases); i++ {
		tc := ollamaGenerateCases[i]
		t.Run(tc.name, func(t *testing.T) {
			out, in, e := HubFromOllamaGenerate([]byte(tc.in))
			if e != nil {
				t.Fatalf("error %+v", e)
			}
			if want := ollamaCompact(t, tc.want); string(out) != want {
				t.Errorf("got\n%s\nwant\n%s", out, want)
			}
			if in != tc.wantIn {
				t.Errorf("inbound %+v, want %+v", in, tc.wantIn)
			}
		})
	}
}

func TestHubFromOllamaRequestErrors(t *testing.T) {
	const user = `[{"role":"user","content":"x"}]`
	cases := []struct {
		name     string
		generate bool
		in       string
		code     string
		message  string
	}{
		{"not_an_object", false, `[]`, "invalid_json", "request body must be a JSON object"},
		{"not_json", false, `{`, "invalid_json", "request body is not valid JSON"},
		{"no_model", false, `{"messages":` + user + `}`, "invalid_request", `"model" is required`},
		{"empty_model", false, `{"model":"","messages":` + user + `}`, "invalid_request", `"model" must be a non-empty string`},
		{"model_not_a_string", false, `{"model":7,"messages":` + user + `}`, "invalid_request", `"model" must be a non-empty string`},
		{"no_messages", false, `{"model":"m"}`, "invalid_request", `"messages" is required`},
		{"messages_not_an_array", false, `{"model":"m","messages":{}}`, "invalid_request", `"messages" must be an array`},
		{"messages_empty", false, `{"model":"m","messages":[]}`, "invalid_request", `"messages" must not be empty`},
		{"message_not_an_object", false, `{"model":"m","messages":[{"role":"user","content":"x"},1]}`, "invalid_request", `"messages[1]" must be an object`},
		{"role_missing", false, `{"model":"m","messages":[{"content":"x"}]}`, "invalid_request", `"messages[0].role" is required`},
		{"role_developer", false, `{"model":"m","messages":[{"role":"developer","content":"x"}]}`, "invalid_request",
			`"messages[0].role" must be "system", "user", "assistant" or "tool"`},
		{"role_not_a_string", false, `{"model":"m","messages":[{"role":1,"content":"x"}]}`, "invalid_request",
			`"messages[0].role" must be "system", "user", "assistant" or "tool"`},
		{"content_parts", false, `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"x"}]}]}`, "invalid_request",
			`"messages[0].content" must be a string`},
		{"images_not_strings", false, `{"model":"m","messages":[{"role":"user","content":"x","images":[1]}]}`, "invalid_request",
			`"messages[0].images" must be an array of base64 strings`},
		{"image_empty", false, `{"model":"m","messages":[{"role":"user","content":"x","images":["AAAA",""]}]}`, "invalid_request",
			`"messages[0].images[1]" must be a non-empty base64 string`},
		{"images_on_assistant", false, `{"model":"m","messages":[{"role":"assistant","content":"x","images":["AAAA"]}]}`, "unsupported_parameter",
			`"messages[0].images": images are supported on user messages only`},
		{"tool_calls_not_an_array", false, `{"model":"m","messages":[{"role":"assistant","tool_calls":{}}]}`, "invalid_request",
			`"messages[0].tool_calls" must be an array`},
		{"tool_call_function_not_an_object", false, `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"function":"f"}]}]}`, "invalid_request",
			`"messages[0].tool_calls[0].function" must be an object`},
		{"tool_call_without_name", false, `{"model":"m","messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"function":{"arguments":{}}}]}]}`,
			"invalid_request", `"messages[1].tool_calls[0].function.name" must be a non-empty string`},
		{"tool_call_arguments_array", false, `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":[1]}}]}]}`,
			"invalid_request", `"messages[0].tool_calls[0].function.arguments" must be an object`},
		{"tool_name_not_a_string", false, `{"model":"m","messages":[{"role":"tool","content":"x","tool_name":5}]}`, "invalid_request",
			`"messages[0].tool_name" must be a string`},
		{"tool_call_id_not_a_string", false, `{"model":"m","messages":[{"role":"tool","content":"x","tool_call_id":5}]}`, "invalid_request",
			`"messages[0].tool_call_id" must be a string`},
		{"only_dropped_messages", false, `{"model":"m","messages":[{"role":"system","content":""},{"role":"assistant"}]}`, "invalid_request",
			`"messages" must hold at least one message with content`},
		{"stream_not_a_boolean", false, `{"model":"m","stream":"yes","messages":` + user + `}`, "invalid_request", `"stream" must be a boolean`},
		{"format_xml", false, `{"model":"m","format":"xml","messages":` + user + `}`, "invalid_request", `"format" must be "json" or a JSON schema object`},
		{"format_array", false, `{"model":"m","format":[],"messages":` + user + `}`, "invalid_request", `"format" must be "json" or a JSON schema object`},
		{"think_max", false, `{"model":"m","think":"max","messages":` + user + `}`, "invalid_request",
			`"think" must be a boolean or one of "low", "medium", "high"`},
		{"options_not_an_object", false, `{"model":"m","options":[],"messages":` + user + `}`, "invalid_request", `"options" must be an object`},
		{"temperature_string", false, `{"model":"m","options":{"temperature":"hot"},"messages":` + user + `}`, "invalid_request",
			`"options.temperature" must be a number`},
		{"presence_penalty_bool", false, `{"model":"m","options":{"presence_penalty":true},"messages":` + user + `}`, "invalid_request",
			`"options.presence_penalty" must be a number`},
		{"num_predict_fraction", false, `{"model":"m","options":{"num_predict":1.5},"messages":` + user + `}`, "invalid_request",
			`"options.num_predict" must be an integer`},
		{"seed_string", false, `{"model":"m","options":{"seed":"7"},"messages":` + user + `}`, "invalid_request", `"options.seed" must be an integer`},
		{"stop_number", false, `{"model":"m","options":{"stop":5},"messages":` + user + `}`, "invalid_request",
			`"options.stop" must be a string or an array of strings`},
		{"stop_mixed", false, `{"model":"m","options":{"stop":["a",1]},"messages":` + user + `}`, "invalid_request",
			`"options.stop" must be a string or an array of strings`},
		{"tools_not_an_array", false, `{"model":"m","tools":{},"messages":` + user + `}`, "invalid_request", `"tools" must be an array`},
		{"tool_not_an_object", false, `{"model":"m","tools":[{"type":"function"},"f"],"messages":` + user + `}`, "invalid_request", `"tools[1]" must be an object`},
		{"generate_no_prompt", true, `{"model":"m"}`, "invalid_request", `"prompt" is required`},
		{"generate_empty_prompt", true, `{"model":"m","prompt":""}`, "invalid_request", `"prompt" is required`},
		{"generate_prompt_not_a_string", true, `{"model":"m","prompt":5}`, "invalid_request", `"prompt" must be a string`},
		{"generate_system_not_a_string", true, `{"model":"m","prompt":"x","system":{}}`, "invalid_request", `"system" must be a string`},
		{"generate_suffix", true, `{"model":"m","prompt":"def f(","suffix":"    return x"}`, "unsupported_parameter",
			`"suffix" is not supported: fill-in-the-middle cannot be sent to this model's provider`},
		{"generate_suffix_not_a_string", true, `{"model":"m","prompt":"x","suffix":1}`, "invalid_request", `"suffix" must be a string`},
		{"generate_images_not_an_array", true, `{"model":"m","prompt":"x","images":"AAAA"}`, "invalid_request", `"images" must be an array of base64 strings`},
		{"generate_no_model", true, `{"prompt":"x"}`, "invalid_request", `"model" is required`},
		{"generate_not_an_object", true, `"x"`, "invalid_json", "request body must be a JSON object"},
	}
	for i := 0; i < len(cases); i++ {
		tc := cases[i]
		t.Run(tc.name, func(t *testing.T) {
			var out []byte
			var e *apierr.Error
			if tc.generate {
				out, _, e = HubFromOllamaGenerate([]byte(tc.in))
			} else {
				out, _, e = HubFromOllamaChat([]byte(tc.in))
			}
			if e == nil || out != nil {
				t.Fatalf("got %s, %v; want a 400", out, e)
			}
			if e.Status != 400 || e.Kind != "invalid_request_error" || e.Code != tc.code || e.Message != tc.message {
				t.Errorf("got %d %s %s %q, want 400 %s %q", e.Status, e.Kind, e.Code, e.Message, tc.code, tc.message)
			}
		})
	}
}

func TestOllamaImageMediaType(t *testing.T) {
	cases := []struct{ b64, want string }{
		{ollamaPNG, "image/png"}, {ollamaJPEG, "image/jpeg"}, {ollamaGIF, "image/gif"}, {ollamaWEBP, "image/webp"},
		{"/9j/", "image/jpeg"}, {"R0lGODlh", "image/gif"}, {"UklGRiQAAABXRUJ", "image/png"}, // too short to see WEBP
		{"!!!!", "image/png"}, {"", "image/png"}, {"AAAAAAAAAAAAAAAAAAAAAAAA", "image/png"},
	}
	for i := 0; i < len(cases); i++ {
		if got := ollamaImageMediaType(cases[i].b64); got != cases[i].want {
			t.Errorf("%q: %s, want %s", cases[i].b64, got, cases[i].want)
		}
	}
}
