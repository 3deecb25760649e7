package translate

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// responsesInCases are Responses requests, the hub request each
// translates to, and what the pipeline is told about it.
var responsesInCases = []struct {
	name   string
	in     string
	want   string
	wantIn ResponsesInbound
}{
	{name: "input_string",
		in:     `{"model":"gpt-4.1","input":"Hello"}`,
		want:   `{"model":"gpt-4.1","messages":[{"role":"user","content":"Hello"}]}`,
		wantIn: ResponsesInbound{Model: "gpt-4.1"}},
	{name: "parameters_kept_and_dropped",
		in: `{"model":"m","instructions":"Be terse.","input":"x","stream":true,"max_output_tokens":256,"temperature":0.20,"top_p":1,
			"user":"u-1","metadata":{"a":"b"},"store":false,"include":["reasoning.encrypted_content"],"prompt_cache_key":"k",
			"client_metadata":{"c":"d"},"service_tier":"auto","truncation":"auto","stream_options":{"include_obfuscation":false},
			"text":{"verbosity":"low"},"background":false,"previous_response_id":null,"safety_identifier":"s","max_tool_calls":3}`,
		want: `{"model":"m","messages":[{"role":"system","content":"Be terse."},{"role":"user","content":"x"}],"max_tokens":256,
			"temperature":0.20,"top_p":1,"stream":true,"user":"u-1"}`,
		wantIn: ResponsesInbound{Model: "m", Stream: true}},
	{name: "message_items_and_roles",
		in: `{"model":"m","input":[
			{"type":"message","role":"developer","id":"msg_1","content":[{"type":"input_text","text":"Rules."}]},
			{"role":"system","content":"Sys."},
			{"type":"message","role":"user","content":[{"type":"input_text","text":"Look:"},
				{"type":"input_image","image_url":"data:image/png;base64,iVBO","detail":"low"},
				{"type":"input_image","image_url":"https://x.test/a.jpg"},
				{"type":"input_file","filename":"a.pdf","file_data":"data:application/pdf;base64,JVBE"}]},
			{"type":"message","role":"assistant","id":"msg_2","status":"completed","content":[{"type":"output_text","text":"Seen ","annotations":[]},
				{"type":"refusal","refusal":"but no."}]},
			{"type":"message","role":"assistant","content":[]},
			{"type":"message","role":"assistant","content":""},
			{"type":"message","role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_text","text":"b"}]}]}`,
		want: `{"model":"m","messages":[{"role":"developer","content":"Rules."},{"role":"system","content":"Sys."},
			{"role":"user","content":[{"type":"text","text":"Look:"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBO","detail":"low"}},
				{"type":"image_url","image_url":{"url":"https://x.test/a.jpg"}},
				{"type":"file","file":{"filename":"a.pdf","file_data":"data:application/pdf;base64,JVBE"}}]},
			{"role":"assistant","content":"Seen but no."},
			{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]}`,
		wantIn: ResponsesInbound{Model: "m"}},
	{name: "calls_join_the_assistant_message_outputs_become_tool_messages",
		in: `{"model":"m","input":[{"role":"user","content":"Weather in Paris and Rome?"},
			{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAAA"},
			{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Checking."}]},
			{"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}","status":"completed"},
			{"type":"reasoning","id":"rs_2","summary":[{"type":"summary_text","text":"more"}]},
			{"type":"function_call","call_id":"call_2","name":"get_weather","arguments":{"city":"Rome","n":1.50}},
			{"type":"function_call_output","id":"fco_1","call_id":"call_1","output":"{\"temp_c\":18}"},
			{"type":"function_call_output","call_id":"call_2","output":[{"type":"input_text","text":"line 1"},
				{"type":"input_image","image_url":"https://x.test/map.png"},{"type":"input_text","text":"line 2"}]},
			{"role":"user","content":"Thanks."}]}`,
		want: `{"model":"m","messages":[{"role":"user","content":"Weather in Paris and Rome?"},
			{"role":"assistant","content":"Checking.","tool_calls":[
				{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},
				{"id":"call_2","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Rome\",\"n\":1.50}"}}]},
			{"role":"tool","content":"{\"temp_c\":18}","tool_call_id":"call_1"},
			{"role":"tool","content":"line 1\nline 2","tool_call_id":"call_2"},
			{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x.test/map.png"}}]},
			{"role":"user","content":"Thanks."}]}`,
		wantIn: ResponsesInbound{Model: "m"}},
	{name: "call_after_a_tool_message_opens_a_new_assistant_message",
		in: `{"model":"m","input":[{"type":"function_call","call_id":"a","name":"f","arguments":""},
			{"type":"function_call_output","call_id":"a","output":null},
			{"type":"function_call","call_id":"b","name":"f"},
			{"type":"function_call_output","call_id":"b","output":[{"type":"input_image","image_url":"https://x.test/s.png"}]}]}`,
		want: `{"model":"m","messages":[
			{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]},
			{"role":"tool","content":"","tool_call_id":"a"},
			{"role":"assistant","content":null,"tool_calls":[{"id":"b","type":"function","function":{"name":"f","arguments":"{}"}}]},
			{"role":"tool","content":"","tool_call_id":"b"},
			{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x.test/s.png"}}]}]}`,
		wantIn: ResponsesInbound{Model: "m"}},
	{name: "custom_and_namespace_calls_in_the_input",
		in: `{"model":"m","tools":[{"type":"namespace","name":"multi_agent_v1","tools":[{"type":"function","name":"spawn_agent"}]},
				{"type":"custom","name":"apply_patch"}],"input":[
			{"type":"function_call","call_id":"c1","name":"spawn_agent","namespace":"multi_agent_v1","arguments":"{\"task\":\"t\"}"},
			{"type":"function_call","call_id":"c2","name":"old_fn","namespace":"gone_ns","arguments":"{}"},
			{"type":"custom_tool_call","id":"ctc_1","call_id":"c3","name":"apply_patch","input":"*** Begin Patch\n\"x\" <y>\n*** End Patch","status":"completed"},
			{"type":"function_call_output","call_id":"c1","output":"spawned"},
			{"type":"function_call_output","call_id":"c2","output":"ok"},
			{"type":"custom_tool_call_output","call_id":"c3","output":"Done!"}]}`,
		want: `{"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[
				{"id":"c1","type":"function","function":{"name":"multi_agent_v1__spawn_agent","arguments":"{\"task\":\"t\"}"}},
				{"id":"c2","type":"function","function":{"name":"gone_ns__old_fn","arguments":"{}"}},
				{"id":"c3","type":"function","function":{"name":"apply_patch","arguments":"{\"input\":\"*** Begin Patch\\n\\\"x\\\" <y>\\n*** End Patch\"}"}}]},
			{"role":"tool","content":"spawned","tool_call_id":"c1"},{"role":"tool","content":"ok","tool_call_id":"c2"},
			{"role":"tool","content":"Done!","tool_call_id":"c3"}],
			"tools":[{"type":"function","function":{"name":"multi_agent_v1__spawn_agent","parameters":{"type":"object","properties":{}}}},
				{"type":"function","function":{"name":"apply_patch","description":"` + responsesTestCustomNote + `","parameters":` + responsesHubCustomParameters + `}}]}`,
		wantIn: ResponsesInbound{Model: "m", Namespaces: map[string]string{"multi_agent_v1__spawn_agent": "multi_agent_v1"},
			Functions: map[string]string{"multi_agent_v1__spawn_agent": "spawn_agent"}, Custom: map[string]bool{"apply_patch": true}}},
	{name: "tools_function_namespace_custom_and_built_in",
		in: `{"model":"m","input":"x","tool_choice":{"type":"function","name":"spawn_agent","namespace":"multi_agent_v1"},"parallel_tool_calls":false,"tools":[
			{"type":"function","name":"exec_command","description":"Runs a command.","strict":false,
				"parameters":{"type":"object","properties":{"cmd":{"type":"string"},"n":{"type":"integer","maximum":9007199254740993}},"required":["cmd"]}},
			{"type":"web_search","external_web_access":false},
			{"type":"namespace","name":"multi_agent_v1","description":"Sub-agents.","tools":[
				{"type":"function","name":"spawn_agent","description":"Spawns one.","strict":true,"parameters":{"type":"object"}},
				{"type":"function","name":"wait"},{"type":"web_search_preview"}]},
			{"type":"namespace","name":"mcp__docs__","tools":[{"type":"function","name":"search"}]},
			{"type":"namespace","name":"mcp__codex_apps__gmail","tools":[{"type":"function","name":"_search_emails"}]},
			{"type":"file_search","vector_store_ids":["vs_1"]},{"type":"web_search","search_context_size":7},
			{"type":"mcp","server_label":"x","server_url":"https://x.test"},
			{"type":"custom","name":"apply_patch","description":"Edits files.","format":{"type":"grammar","syntax":"lark","definition":"start: begin_patch hunk+ end_patch"}},
			{"type":"custom","name":"match","format":{"type":"grammar","syntax":"regex","definition":"^[a-z]+$"}},
			{"type":"custom","name":"plain","format":{"type":"text"}}]}`,
		want: `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[
			{"type":"function","function":{"name":"exec_command","description":"Runs a command.",
				"parameters":{"type":"object","properties":{"cmd":{"type":"string"},"n":{"type":"integer","maximum":9007199254740993}},"required":["cmd"]},"strict":false}},
			{"type":"function","function":{"name":"multi_agent_v1__spawn_agent","description":"Sub-agents.\n\nSpawns one.","parameters":{"type":"object"},"strict":true}},
			{"type":"function","function":{"name":"multi_agent_v1__wait","description":"Sub-agents.","parameters":{"type":"object","properties":{}}}},
			{"type":"function","function":{"name":"mcp__docs__search","parameters":{"type":"object","properties":{}}}},
			{"type":"function","function":{"name":"mcp__codex_apps__gmail_search_emails","parameters":{"type":"object","properties":{}}}},
			{"type":"function","function":{"name":"apply_patch","description":"Edits files.\n\n` + responsesTestCustomNote +
			` The input must follow this lark grammar:\nstart: begin_patch hunk+ end_patch","parameters":` + responsesHubCustomParameters + `}},
			{"type":"function","function":{"name":"match","description":"` + responsesTestCustomNote +
			` The input must match this regular expression:\n^[a-z]+$","parameters":` + responsesHubCustomParameters + `}},
			{"type":"function","function":{"name":"plain","description":"` + responsesTestCustomNote + `","parameters":` + responsesHubCustomParameters + `}}],
			"tool_choice":{"type":"function","function":{"name":"multi_agent_v1__spawn_agent"}},"parallel_tool_calls":false}`,
		wantIn: ResponsesInbound{Model: "m", DroppedTools: []string{"web_search", "web_search_preview", "file_search", "mcp"},
			Namespaces: map[string]string{"multi_agent_v1__spawn_agent": "multi_agent_v1", "multi_agent_v1__wait": "multi_agent_v1",
				"mcp__docs__search": "mcp__docs__", "mcp__codex_apps__gmail_search_emails": "mcp__codex_apps__gmail"},
			Functions: map[string]string{"multi_agent_v1__spawn_agent": "spawn_agent", "multi_agent_v1__wait": "wait",
				"mcp__docs__search": "search", "mcp__codex_apps__gmail_search_emails": "_search_emails"},
			Custom: map[string]bool{"apply_patch": true, "match": true, "plain": true}}},
	{name: "only_built_in_tools_drop_tool_choice",
		in:     `{"model":"m","input":"x","tools":[{"type":"web_search"},{"type":"code_interpreter","container":{"type":"auto"}}],"tool_choice":"required","parallel_tool_calls":true}`,
		want:   `{"model":"m","messages":[{"role":"user","content":"x"}]}`,
		wantIn: ResponsesInbound{Model: "m", DroppedTools: []string{"web_search", "code_interpreter"}}},
	{name: "tool_choice_strings_and_custom",
		in: `{"model":"m","input":"x","tools":[{"type":"function","name":"f"},{"type":"custom","name":"g"}],"tool_choice":{"type":"custom","name":"g"}}`,
		want: `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{}}}},
			{"type":"function","function":{"name":"g","description":"` + responsesTestCustomNote + `","parameters":` + responsesHubCustomParameters + `}}],
			"tool_choice":{"type":"function","function":{"name":"g"}}}`,
		wantIn: ResponsesInbound{Model: "m", Custom: map[string]bool{"g": true}}},
	{name: "tool_choice_required_kept",
		in:     `{"model":"m","input":"x","tools":[{"type":"function","name":"f"}],"tool_choice":"required"}`,
		want:   `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{}}}}],"tool_choice":"required"}`,
		wantIn: ResponsesInbound{Model: "m"}},
	{name: "tool_choice_built_in_becomes_auto",
		in:     `{"model":"m","input":"x","tools":[{"type":"function","name":"f"},{"type":"web_search"}],"tool_choice":{"type":"web_search"}}`,
		want:   `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{}}}}],"tool_choice":"auto"}`,
		wantIn: ResponsesInbound{Model: "m", DroppedTools: []string{"web_search"}}},
	{name: "tool_choice_allowed_tools",
		in: `{"model":"m","input":"x","tools":[{"type":"function","name":"f"},{"type":"function","name":"g"}],
			"tool_choice":{"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"g"},{"type":"web_search"}]}}`,
		want: `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{}}}},
			{"type":"function","function":{"name":"g","parameters":{"type":"object","properties":{}}}}],
			"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"required","tools":[{"type":"function","function":{"name":"g"}}]}}}`,
		wantIn: ResponsesInbound{Model: "m"}},
	{name: "tool_choice_allowed_tools_only_built_in_is_none",
		in:     `{"model":"m","input":"x","tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"allowed_tools","tools":[{"type":"mcp","server_label":"s"}]}}`,
		want:   `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{}}}}],"tool_choice":"none"}`,
		wantIn: ResponsesInbound{Model: "m"}},
	{name: "text_format_json_schema",
		in: `{"model":"m","input":"x","text":{"format":{"type":"json_schema","name":"answer","description":"An answer.","strict":true,
			"schema":{"type":"object","properties":{"a":{"type":"number"}},"required":["a"],"additionalProperties":false}},"verbosity":"high"}}`,
		want: `{"model":"m","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"answer","description":"An answer.",
			"schema":{"type":"object","properties":{"a":{"type":"number"}},"required":["a"],"additionalProperties":false},"strict":true}}}`,
		wantIn: ResponsesInbound{Model: "m"}},
	{name: "text_format_json_object_and_text",
		in:     `{"model":"m","input":"x","text":{"format":{"type":"json_object"}}}`,
		want:   `{"model":"m","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_object"}}`,
		wantIn: ResponsesInbound{Model: "m"}},
	{name: "text_format_text_is_nothing",
		in:     `{"model":"m","input":"x","text":{"format":{"type":"text"}}}`,
		want:   `{"model":"m","messages":[{"role":"user","content":"x"}]}`,
		wantIn: ResponsesInbound{Model: "m"}},
	{name: "reasoning_effort_and_summary",
		in:     `{"model":"m","input":"x","reasoning":{"effort":"high","summary":"detailed"}}`,
		want:   `{"model":"m","messages":[{"role":"user","content":"x"}],"reasoning_effort":"high"}`,
		wantIn: ResponsesInbound{Model: "m", Reasoning: true}},
	{name: "reasoning_summary_only",
		in:     `{"model":"m","input":"x","reasoning":{"summary":"auto","context":"all_turns"}}`,
		want:   `{"model":"m","messages":[{"role":"user","content":"x"}]}`,
		wantIn: ResponsesInbound{Model: "m", Reasoning: true}},
	{name: "reasoning_effort_none",
		in:     `{"model":"m","input":"x","reasoning":{"effort":"none","summary":null}}`,
		want:   `{"model":"m","messages":[{"role":"user","content":"x"}],"reasoning_effort":"none"}`,
		wantIn: ResponsesInbound{Model: "m"}},
	{name: "reasoning_generate_summary",
		in:     `{"model":"m","input":"x","reasoning":{"generate_summary":"concise"}}`,
		want:   `{"model":"m","messages":[{"role":"user","content":"x"}]}`,
		wantIn: ResponsesInbound{Model: "m", Reasoning: true}},
	{name: "whitespace_instructions_dropped_and_escaped_keys",
		in:     " \n{\"model\":\"m\",\"instructions\":\"  \",\"input\":[{\"type\":\"message\",\"role\":\"\\u0075ser\",\"content\":\"x\"}]}\n",
		want:   `{"model":"m","messages":[{"role":"user","content":"x"}]}`,
		wantIn: ResponsesInbound{Model: "m"}},
}

// responsesTestCustomNote is what a custom tool's function description
// says about its input.
const responsesTestCustomNote = `This tool takes free-form text, not JSON: pass the raw text, exactly as the tool expects it, as the one string argument \"input\".`

func TestHubFromResponsesRequest(t *testing.T) {
	for i := 0; i < len(responsesInCases); i++ {
		tc := responsesInCases[i]
		t.Run(tc.name, func(t *testing.T) {
			out, in, e := HubFromResponsesRequest([]byte(tc.in))
			if e != nil {
				t.Fatalf("error %+v", e)
			}
			if want := compactJSON(t, tc.want); string(out) != want {
				t.Errorf("got\n%s\nwant\n%s", out, want)
			}
			if !reflect.DeepEqual(in, tc.wantIn) {
				t.Errorf("inbound %+v, want %+v", in, tc.wantIn)
			}
		})
	}
}

func TestResponsesFunctionName(t *testing.T) {
	cases := []struct{ namespace, name, want string }{
		{"multi_agent_v1", "spawn_agent", "multi_agent_v1__spawn_agent"},
		{"mcp__server__", "tool", "mcp__server__tool"},
		{"ns", "_tool", "ns_tool"},
		{"a-b", "c-d", "a-b__c-d"},
	}
	for i := 0; i < len(cases); i++ {
		if got := responsesFlatName(cases[i].namespace, cases[i].name); got != cases[i].want {
			t.Errorf("%s + %s = %q, want %q", cases[i].namespace, cases[i].name, got, cases[i].want)
		}
	}
	odd := []string{"a.b", "a_b", strings.Repeat("x", 65), strings.Repeat("x", 64) + "y", "ünï", ""}
	seen := map[string]string{}
	for i := 0; i < len(odd); i++ {
		got := responsesFunctionName(odd[i])
		if len(got) == 0 || len(got) > 64 || strings.Trim(got, responsesNameChars) != "" {
			t.Errorf("%q → %q is not a valid function name", odd[i], got)
		}
		if prev, dup := seen[got]; dup {
			t.Errorf("%q and %q both → %q", prev, odd[i], got)
		}
		seen[got] = odd[i]
	}
	if got := responsesFunctionName(strings.Repeat("x", 64)); got != strings.Repeat("x", 64) {
		t.Errorf("a valid 64-character name changed: %q", got)
	}
	// Through a request: the hub names, and the mapping back to the
	// namespace and the function's own name.
	long, fn := strings.Repeat("n", 40), strings.Repeat("f", 30)
	body := `{"model":"m","input":"x","tools":[{"type":"namespace","name":"mcp.server","tools":[{"type":"function","name":"read file"}]},` +
		`{"type":"namespace","name":"` + long + `","tools":[{"type":"function","name":"` + fn + `"}]}]}`
	out, in, e := HubFromResponsesRequest([]byte(body))
	if e != nil {
		t.Fatal(e)
	}
	oddName := "mcp_server__read_file_" + responsesTestHash("mcp.server__read file")
	longName := long + "__" + strings.Repeat("f", 13) + "_" + responsesTestHash(long+"__"+fn)
	want := `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[` +
		`{"type":"function","function":{"name":"` + oddName + `","parameters":{"type":"object","properties":{}}}},` +
		`{"type":"function","function":{"name":"` + longName + `","parameters":{"type":"object","properties":{}}}}]}`
	if string(out) != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
	if len(longName) != 64 || in.Namespaces[oddName] != "mcp.server" || in.Functions[oddName] != "read file" ||
		in.Namespaces[longName] != long || in.Functions[longName] != fn {
		t.Errorf("inbound %+v", in)
	}
}

// responsesTestHash is the 8 hex digits responsesFunctionName appends
// to name.
func responsesTestHash(name string) string {
	full := responsesFunctionName(name)
	return full[len(full)-8:]
}

func TestResponsesCustomGrammarTruncated(t *testing.T) {
	grammar := "a" + strings.Repeat("é", responsesGrammarLimit) // the cut falls inside an "é"
	body := `{"model":"m","input":"x","tools":[{"type":"custom","name":"p","format":{"type":"grammar","definition":"` + grammar + `"}}]}`
	out, _, e := HubFromResponsesRequest([]byte(body))
	if e != nil {
		t.Fatal(e)
	}
	var hub responsesHubRequest
	if err := json.Unmarshal(out, &hub); err != nil || len(hub.Tools) != 1 {
		t.Fatalf("%v: %s", err, out)
	}
	d := hub.Tools[0].Function.Description
	if !strings.HasSuffix(d, "é\n[grammar truncated]") || !strings.Contains(d, "lark grammar") || len(d) > responsesGrammarLimit+400 ||
		!utf8.ValidString(d) {
		t.Errorf("description (%d bytes) ends %q", len(d), d[len(d)-40:])
	}
}

// responsesInErrorCases are requests refused with a 400, and the code
// and message each gets.
var responsesInErrorCases = []struct {
	name, in, code, message string
}{
	{"previous_response_id", `{"model":"m","previous_response_id":"resp_1","input":"x"}`, "previous_response_id_unsupported",
		`"previous_response_id" is not supported: this gateway is stateless and keeps no responses or conversations: ` +
			`send the whole conversation in "input" (as Codex does with "store": false)`},
	{"conversation", `{"model":"m","conversation":"conv_1","input":"x"}`, "conversation_unsupported",
		`"conversation" is not supported: this gateway is stateless and keeps no responses or conversations: ` +
			`send the whole conversation in "input" (as Codex does with "store": false)`},
	{"prompt", `{"model":"m","prompt":{"id":"pmpt_1"},"input":"x"}`, "prompt_unsupported",
		`"prompt" (a stored prompt template) is not supported: this gateway keeps no prompts; send the instructions and input themselves`},
	{"not_json", `{"model":`, "invalid_json", "request body is not valid JSON"},
	{"array_body", `[{"model":"m"}]`, "invalid_json", "request body must be a JSON object"},
	{"no_model", `{"input":"x"}`, "invalid_request", `"model" is required`},
	{"model_number", `{"model":4,"input":"x"}`, "invalid_request", `"model" must be a non-empty string`},
	{"no_input", `{"model":"m"}`, "invalid_request", `"input" is required (this gateway keeps no conversation state)`},
	{"input_number", `{"model":"m","input":5}`, "invalid_request", `"input" must be a string or an array of input items`},
	{"input_empty", `{"model":"m","instructions":"s","input":[]}`, "invalid_request", `"input" must hold at least one message, tool call or tool output`},
	{"input_only_reasoning", `{"model":"m","input":[{"type":"reasoning","summary":[]}]}`, "invalid_request",
		`"input" must hold at least one message, tool call or tool output`},
	{"item_not_object", `{"model":"m","input":["hi"]}`, "invalid_request", `"input[0]" must be an object`},
	{"item_reference", `{"model":"m","input":[{"role":"user","content":"x"},{"type":"item_reference","id":"msg_1"}]}`, "unsupported_parameter",
		`"input[1].type": input item type "item_reference" cannot be sent to this model's provider`},
	{"item_unknown_type", `{"model":"m","input":[{"type":"web_search_call","id":"ws_1"}]}`, "unsupported_parameter",
		`"input[0].type": input item type "web_search_call" cannot be sent to this model's provider`},
	{"item_without_type_or_role", `{"model":"m","input":[{"content":"x"}]}`, "invalid_request", `"input[0].type" must be a non-empty string`},
	{"item_type_number", `{"model":"m","input":[{"type":1}]}`, "invalid_request", `"input[0].type" must be a string`},
	{"role_unknown", `{"model":"m","input":[{"type":"message","role":"tool","content":"x"}]}`, "invalid_request",
		`"input[0].role" must be "user", "assistant", "system" or "developer"`},
	{"content_missing", `{"model":"m","input":[{"type":"message","role":"user"}]}`, "invalid_request", `"input[0].content" is required`},
	{"content_number", `{"model":"m","input":[{"type":"message","role":"user","content":3}]}`, "invalid_request",
		`"input[0].content" must be a string or an array of content parts`},
	{"part_text_number", `{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":1}]}]}`, "invalid_request",
		`"input[0].content[0].text" must be a string`},
	{"part_not_object", `{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"a"},"b"]}]}`, "invalid_request",
		`"input[0].content[1]" must be an object`},
	{"part_unknown", `{"model":"m","input":[{"role":"user","content":[{"type":"input_audio"}]}]}`, "unsupported_parameter",
		`"input[0].content[0].type": content part type "input_audio" cannot be sent to this model's provider`},
	{"part_without_type", `{"model":"m","input":[{"role":"user","content":[{"text":"a"}]}]}`, "invalid_request",
		`"input[0].content[0].type" must be a non-empty string`},
	{"image_in_developer_message", `{"model":"m","input":[{"role":"developer","content":[{"type":"input_image","image_url":"https://x"}]}]}`,
		"invalid_request", `"input[0].content[0].type" must be a text part in system or developer messages (got "input_image")`},
	{"image_in_assistant_message", `{"model":"m","input":[{"role":"assistant","content":[{"type":"input_image","image_url":"https://x"}]}]}`,
		"invalid_request", `"input[0].content[0].type" must be a text part in assistant messages (got "input_image")`},
	{"image_by_file_id", `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","file_id":"file_1"}]}]}`,
		"unsupported_parameter", `"input[0].content[0].file_id": an image by file id cannot be sent to this model's provider`},
	{"image_without_url", `{"model":"m","input":[{"role":"user","content":[{"type":"input_image"}]}]}`,
		"invalid_request", `"input[0].content[0].image_url" must be a non-empty string`},
	{"file_by_id", `{"model":"m","input":[{"role":"user","content":[{"type":"input_file","file_id":"file_1"}]}]}`,
		"unsupported_parameter", `"input[0].content[0].file_id": a file by file id cannot be sent to this model's provider`},
	{"file_by_url", `{"model":"m","input":[{"role":"user","content":[{"type":"input_file","file_url":"https://x/a.pdf"}]}]}`,
		"unsupported_parameter", `"input[0].content[0].file_url": a file by URL cannot be sent to this model's provider`},
	{"call_without_call_id", `{"model":"m","input":[{"type":"function_call","name":"f","arguments":"{}"}]}`, "invalid_request",
		`"input[0].call_id" must be a non-empty string`},
	{"call_without_name", `{"model":"m","input":[{"type":"function_call","call_id":"c","arguments":"{}"}]}`, "invalid_request",
		`"input[0].name" must be a non-empty string`},
	{"call_arguments_number", `{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f","arguments":5}]}`, "invalid_request",
		`"input[0].arguments" must be a string`},
	{"custom_call_input_object", `{"model":"m","input":[{"type":"custom_tool_call","call_id":"c","name":"f","input":{}}]}`, "invalid_request",
		`"input[0].input" must be a string`},
	{"output_without_call_id", `{"model":"m","input":[{"type":"function_call_output","output":"x"}]}`, "invalid_request",
		`"input[0].call_id" must be a non-empty string`},
	{"output_number", `{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":5}]}`, "invalid_request",
		`"input[0].output" must be a string or an array of content parts`},
	{"output_part_unknown", `{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":[{"type":"input_video"}]}]}`,
		"unsupported_parameter", `"input[0].output[0].type": content part type "input_video" cannot be sent to this model's provider`},
	{"max_output_tokens_zero", `{"model":"m","input":"x","max_output_tokens":0}`, "invalid_request", `"max_output_tokens" must be at least 1`},
	{"max_output_tokens_string", `{"model":"m","input":"x","max_output_tokens":"9"}`, "invalid_request", `"max_output_tokens" must be an integer`},
	{"stream_string", `{"model":"m","input":"x","stream":"yes"}`, "invalid_request", `"stream" must be a boolean`},
	{"temperature_string", `{"model":"m","input":"x","temperature":"hot"}`, "invalid_request", `"temperature" must be a number`},
	{"top_p_bool", `{"model":"m","input":"x","top_p":true}`, "invalid_request", `"top_p" must be a number`},
	{"user_number", `{"model":"m","input":"x","user":1}`, "invalid_request", `"user" must be a string`},
	{"instructions_number", `{"model":"m","input":"x","instructions":1}`, "invalid_request", `"instructions" must be a string`},
	{"reasoning_string", `{"model":"m","input":"x","reasoning":"high"}`, "invalid_request", `"reasoning" must be an object`},
	{"reasoning_effort_number", `{"model":"m","input":"x","reasoning":{"effort":3}}`, "invalid_request", `"reasoning.effort" must be a string`},
	{"reasoning_summary_bool", `{"model":"m","input":"x","reasoning":{"summary":true}}`, "invalid_request", `"reasoning.summary" must be a string`},
	{"text_string", `{"model":"m","input":"x","text":"json"}`, "invalid_request", `"text" must be an object`},
	{"text_format_unknown", `{"model":"m","input":"x","text":{"format":{"type":"yaml"}}}`, "invalid_request",
		`"text.format.type" must be one of "text", "json_object" or "json_schema"`},
	{"text_format_schema_without_name", `{"model":"m","input":"x","text":{"format":{"type":"json_schema","schema":{}}}}`, "invalid_request",
		`"text.format.name" must be a non-empty string`},
	{"text_format_schema_missing", `{"model":"m","input":"x","text":{"format":{"type":"json_schema","name":"a"}}}`, "invalid_request",
		`"text.format.schema" must be an object`},
	{"text_format_strict_string", `{"model":"m","input":"x","text":{"format":{"type":"json_schema","name":"a","schema":{},"strict":"yes"}}}`,
		"invalid_request", `"text.format.strict" must be a boolean`},
	{"tools_object", `{"model":"m","input":"x","tools":{}}`, "invalid_request", `"tools" must be an array`},
	{"tool_not_object", `{"model":"m","input":"x","tools":[{"type":"function","name":"a"},7]}`, "invalid_request", `"tools[1]" must be an object`},
	{"tool_without_type", `{"model":"m","input":"x","tools":[{"name":"a"}]}`, "invalid_request", `"tools[0].type" must be a non-empty string`},
	{"function_without_name", `{"model":"m","input":"x","tools":[{"type":"function","parameters":{}}]}`, "invalid_request",
		`"tools[0].name" must be a non-empty string`},
	{"function_parameters_string", `{"model":"m","input":"x","tools":[{"type":"function","name":"f","parameters":"object"}]}`,
		"invalid_request", `"tools[0].parameters" must be an object`},
	{"function_strict_string", `{"model":"m","input":"x","tools":[{"type":"function","name":"f","strict":"no"}]}`,
		"invalid_request", `"tools[0].strict" must be a boolean`},
	{"namespace_without_name", `{"model":"m","input":"x","tools":[{"type":"namespace","tools":[]}]}`, "invalid_request",
		`"tools[0].name" must be a non-empty string`},
	{"namespace_tools_object", `{"model":"m","input":"x","tools":[{"type":"namespace","name":"n","tools":{}}]}`, "invalid_request",
		`"tools[0].tools" must be an array`},
	{"namespace_function_without_name", `{"model":"m","input":"x","tools":[{"type":"namespace","name":"n","tools":[{"type":"function"}]}]}`,
		"invalid_request", `"tools[0].tools[0].name" must be a non-empty string`},
	{"duplicate_names", `{"model":"m","input":"x","tools":[{"type":"function","name":"n__f"},{"type":"namespace","name":"n","tools":[{"type":"function","name":"f"}]}]}`,
		"invalid_request", `"tools[1].tools[0].name" must be unique: the function name "n__f" is already used by tools[0]`},
	{"tool_choice_unknown_string", `{"model":"m","input":"x","tools":[{"type":"function","name":"f"}],"tool_choice":"any"}`, "invalid_request",
		`"tool_choice" must be "auto", "none", "required" or an object`},
	{"tool_choice_number", `{"model":"m","input":"x","tool_choice":1}`, "invalid_request", `"tool_choice" must be "auto", "none", "required" or an object`},
	{"tool_choice_unknown_name", `{"model":"m","input":"x","tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"function","name":"g"}}`,
		"invalid_request", `"tool_choice.name" must be the name of a function or custom tool in "tools"`},
	{"tool_choice_without_name", `{"model":"m","input":"x","tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"function"}}`,
		"invalid_request", `"tool_choice.name" must be a non-empty string`},
	{"tool_choice_without_type", `{"model":"m","input":"x","tools":[{"type":"function","name":"f"}],"tool_choice":{"name":"f"}}`,
		"invalid_request", `"tool_choice.type" must be a non-empty string`},
	{"tool_choice_allowed_mode", `{"model":"m","input":"x","tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"allowed_tools","mode":"none","tools":[]}}`,
		"invalid_request", `"tool_choice.mode" must be "auto" or "required"`},
	{"tool_choice_allowed_unknown", `{"model":"m","input":"x","tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"allowed_tools","tools":[{"type":"function","name":"g"}]}}`,
		"invalid_request", `"tool_choice.tools[0].name" must be the name of a function or custom tool in "tools"`},
	{"parallel_tool_calls_string", `{"model":"m","input":"x","parallel_tool_calls":"yes"}`, "invalid_request", `"parallel_tool_calls" must be a boolean`},
}

func TestHubFromResponsesRequestErrors(t *testing.T) {
	for i := 0; i < len(responsesInErrorCases); i++ {
		tc := responsesInErrorCases[i]
		t.Run(tc.name, func(t *testing.T) {
			out, _, e := HubFromResponsesRequest([]byte(tc.in))
			if e == nil {
				t.Fatalf("no error; output %s", out)
			}
			if out != nil || e.Status != 400 || e.Kind != "invalid_request_error" || e.Code != tc.code || e.Message != tc.message {
				t.Errorf("got %d %s %s %q (output %q), want 400 invalid_request_error %s %q", e.Status, e.Kind, e.Code, e.Message, out, tc.code, tc.message)
			}
		})
	}
}
