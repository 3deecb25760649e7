package translate

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// anthropicInCases are Anthropic Messages requests, the hub request
// each translates to, and what the pipeline is told about it.
var anthropicInCases = []struct {
	name   string
	in     string
	want   string
	wantIn AnthropicInbound
}{
	// Claude Code's per-turn-control beta: a system turn inside the
	// conversation stays where it is, as a hub system message.
	{name: "system_turn_in_messages",
		in: `{"model":"m","system":"top","messages":[{"role":"user","content":"hi"},` +
			`{"role":"system","content":[{"type":"text","text":"env: linux","cache_control":{"type":"ephemeral"}},{"type":"text","text":"cwd: /tmp"}]},{"role":"assistant","content":"ok"}]}`,
		want: `{"model":"m","messages":[{"role":"system","content":"top"},{"role":"user","content":"hi"},` +
			`{"role":"system","content":"env: linux\n\ncwd: /tmp"},{"role":"assistant","content":"ok"}]}`},
	{name: "minimal",
		in:     `{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[{"role":"user","content":"Hello"}]}`,
		want:   `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"Hello"}],"max_tokens":1024}`,
		wantIn: AnthropicInbound{MaxTokens: 1024}},
	{name: "no_max_tokens_and_stream_kept",
		in:     `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`,
		want:   `{"model":"m","messages":[{"role":"user","content":"x"}],"stream":true}`,
		wantIn: AnthropicInbound{Stream: true}},
	{name: "stream_false_left_out",
		in:   `{"model":"m","stream":false,"max_tokens":5,"messages":[{"role":"user","content":"x"}]}`,
		want: `{"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":5}`, wantIn: AnthropicInbound{MaxTokens: 5}},
	{name: "system_string",
		in:   `{"model":"m","system":"Be terse.","messages":[{"role":"user","content":"x"}]}`,
		want: `{"model":"m","messages":[{"role":"system","content":"Be terse."},{"role":"user","content":"x"}]}`},
	{name: "system_blocks_joined_cache_control_dropped",
		in: `{"model":"m","system":[{"type":"text","text":"A","cache_control":{"type":"ephemeral"}},{"type":"text","text":""},
			{"type":"text","text":"B <b> & c","cache_control":{"type":"ephemeral","ttl":"1h"}}],"messages":[{"role":"user","content":"x"}]}`,
		want: `{"model":"m","messages":[{"role":"system","content":"A\n\nB <b> & c"},{"role":"user","content":"x"}]}`},
	{name: "empty_system_sends_no_system_message",
		in:   `{"model":"m","system":[],"messages":[{"role":"user","content":"x"}]}`,
		want: `{"model":"m","messages":[{"role":"user","content":"x"}]}`},
	{name: "lone_text_block_becomes_a_string",
		in:   `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"only","cache_control":{"type":"ephemeral"}}]}]}`,
		want: `{"model":"m","messages":[{"role":"user","content":"only"}]}`},
	{name: "text_blocks_become_parts",
		in: `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"one"},{"type":"text","text":""},
			{"type":"text","text":"three","citations":[]}]}]}`,
		want: `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"one"},{"type":"text","text":""},{"type":"text","text":"three"}]}]}`},
	{name: "images",
		in: `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"What is this?"},
			{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"/9j/4AAQ"}},
			{"type":"image","source":{"type":"url","url":"https://example.com/cat.png"}}]}]}`,
		want: `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"What is this?"},
			{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/4AAQ"}},
			{"type":"image_url","image_url":{"url":"https://example.com/cat.png"}}]}]}`},
	{name: "documents",
		in: `{"model":"m","messages":[{"role":"user","content":[
			{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0x"},"title":"T","cache_control":{"type":"ephemeral"}},
			{"type":"document","source":{"type":"text","media_type":"text/plain","data":"plain words"}},
			{"type":"text","text":"Summarise."}]}]}`,
		want: `{"model":"m","messages":[{"role":"user","content":[
			{"type":"file","file":{"filename":"document.pdf","file_data":"data:application/pdf;base64,JVBERi0x"}},
			{"type":"text","text":"plain words"},{"type":"text","text":"Summarise."}]}]}`},
	{name: "tool_results_before_the_rest_of_the_turn",
		in: `{"model":"m","messages":[
			{"role":"assistant","content":[{"type":"tool_use","id":"toolu_A","name":"a","input":{}},{"type":"tool_use","id":"toolu_B","name":"b","input":{}}]},
			{"role":"user","content":[{"type":"text","text":"Here you go."},
				{"type":"tool_result","tool_use_id":"toolu_A","content":"{\"temp_c\":18}"},
				{"type":"tool_result","tool_use_id":"toolu_B","content":"no such city","is_error":true,"cache_control":{"type":"ephemeral"}}]}]}`,
		want: `{"model":"m","messages":[
			{"role":"assistant","content":null,"tool_calls":[{"id":"toolu_A","type":"function","function":{"name":"a","arguments":"{}"}},
				{"id":"toolu_B","type":"function","function":{"name":"b","arguments":"{}"}}]},
			{"role":"tool","content":"{\"temp_c\":18}","tool_call_id":"toolu_A"},
			{"role":"tool","content":"Error: no such city","tool_call_id":"toolu_B"},
			{"role":"user","content":"Here you go."}]}`},
	{name: "tool_result_blocks_joined_media_moved_to_a_user_message",
		in: `{"model":"m","messages":[{"role":"user","content":[
			{"type":"tool_result","tool_use_id":"toolu_S","content":[{"type":"text","text":"line 1"},
				{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBO"}},{"type":"text","text":"line 2"}]},
			{"type":"tool_result","tool_use_id":"toolu_E","is_error":true,"content":[{"type":"text","text":"boom"}]},
			{"type":"tool_result","tool_use_id":"toolu_N"},
			{"type":"tool_result","tool_use_id":"toolu_Z","content":[]},
			{"type":"text","text":"What do you see?"}]}]}`,
		want: `{"model":"m","messages":[
			{"role":"tool","content":"line 1\nline 2","tool_call_id":"toolu_S"},
			{"role":"tool","content":"Error: boom","tool_call_id":"toolu_E"},
			{"role":"tool","content":"","tool_call_id":"toolu_N"},
			{"role":"tool","content":"","tool_call_id":"toolu_Z"},
			{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBO"}},{"type":"text","text":"What do you see?"}]}]}`},
	{name: "tool_result_media_alone_makes_the_user_message",
		in: `{"model":"m","messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[
			{"type":"image","source":{"type":"url","url":"https://x.test/shot.png"}}]}]}]}`,
		want: `{"model":"m","messages":[{"role":"tool","content":"","tool_call_id":"t"},
			{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x.test/shot.png"}}]}]}`},
	{name: "assistant_text_and_tool_use_thinking_dropped",
		in: `{"model":"m","messages":[{"role":"user","content":"Weather?"},
			{"role":"assistant","content":[{"type":"thinking","thinking":"Let me look.","signature":"sig=="},
				{"type":"redacted_thinking","data":"xyz"},{"type":"text","text":"Checking "},{"type":"text","text":"now."},
				{"type":"tool_use","id":"toolu_01","name":"get_weather","input":{"city":"Paris","n":12345678901234567890123,"f":1.50,"nested":{"a":[1, 2]}},"cache_control":{"type":"ephemeral"}}]}]}`,
		want: `{"model":"m","messages":[{"role":"user","content":"Weather?"},
			{"role":"assistant","content":"Checking now.","tool_calls":[{"id":"toolu_01","type":"function","function":{"name":"get_weather",
				"arguments":"{\"city\":\"Paris\",\"n\":12345678901234567890123,\"f\":1.50,\"nested\":{\"a\":[1,2]}}"}}]}]}`},
	{name: "assistant_string_thinking_only_and_empty_turns",
		in: `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},
			{"role":"user","content":[{"type":"thinking","thinking":"stray","signature":"s"}]},
			{"role":"assistant","content":[{"type":"thinking","thinking":"only thoughts","signature":"s"}]},
			{"role":"assistant","content":""},{"role":"user","content":"c"}]}`,
		want: `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"}]}`},
	{name: "tool_use_without_input",
		in: `{"model":"m","messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"now"}]}]}`,
		want: `{"model":"m","messages":[{"role":"user","content":"go"},
			{"role":"assistant","content":null,"tool_calls":[{"id":"t","type":"function","function":{"name":"now","arguments":"{}"}}]}]}`},
	{name: "tools_custom_kept_server_dropped",
		in: `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[
			{"name":"Read","description":"Reads a file","input_schema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object",
				"properties":{"file_path":{"type":"string"},"limit":{"type":"number","maximum":1e400}},"required":["file_path"],"additionalProperties":false,"x-custom":true},
				"cache_control":{"type":"ephemeral"},"defer_loading":true},
			{"type":"custom","name":"NoSchema"},
			{"type":"web_search_20250305","name":"web_search","max_uses":5},
			{"type":"bash_20250124","name":"bash"}],
			"tool_choice":{"type":"auto","disable_parallel_tool_use":true}}`,
		want: `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[
			{"type":"function","function":{"name":"Read","description":"Reads a file","parameters":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object",
				"properties":{"file_path":{"type":"string"},"limit":{"type":"number","maximum":1e400}},"required":["file_path"],"additionalProperties":false,"x-custom":true}}},
			{"type":"function","function":{"name":"NoSchema","parameters":{"type":"object","properties":{}}}}],
			"tool_choice":"auto","parallel_tool_calls":false}`},
	{name: "tool_choice_any",
		in:   `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"any"}}`,
		want: `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":"required"}`},
	{name: "tool_choice_named",
		in: `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"name":"f","input_schema":{"type":"object"}}],
			"tool_choice":{"type":"tool","name":"f","disable_parallel_tool_use":false}}`,
		want: `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],
			"tool_choice":{"type":"function","function":{"name":"f"}}}`},
	{name: "tool_choice_none_keeps_parallel_default",
		in: `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"name":"f","input_schema":{"type":"object"}}],
			"tool_choice":{"type":"none","disable_parallel_tool_use":true}}`,
		want: `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":"none"}`},
	{name: "tool_choice_dropped_with_only_server_tools",
		in: `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"web_search_20250305","name":"web_search"}],
			"tool_choice":{"type":"any","disable_parallel_tool_use":true}}`,
		want: `{"model":"m","messages":[{"role":"user","content":"x"}]}`},
	{name: "sampling_stop_and_user",
		in: `{"model":"m","messages":[{"role":"user","content":"x"}],"temperature":0.70,"top_p":1e-1,"top_k":40,
			"stop_sequences":["END","","\n\nHuman:"],"metadata":{"user_id":"u-42"}}`,
		want: `{"model":"m","messages":[{"role":"user","content":"x"}],"temperature":0.70,"top_p":1e-1,"stop":["END","\n\nHuman:"],"user":"u-42"}`},
	{name: "null_fields_are_absent",
		in: `{"model":"m","messages":[{"role":"user","content":"x"}],"temperature":null,"top_p":null,"stop_sequences":null,
			"metadata":{"user_id":null},"tools":null,"tool_choice":null,"system":null,"thinking":null,"max_tokens":null,"stream":null}`,
		want: `{"model":"m","messages":[{"role":"user","content":"x"}]}`},
	{name: "thinking_enabled_and_unknown_keys_dropped",
		in: `{"model":"m","max_tokens":32000,"messages":[{"role":"user","content":"x"}],"thinking":{"type":"enabled","budget_tokens":31999,"display":"omitted"},
			"context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]},"output_config":{"effort":"high"},
			"service_tier":"auto","cache_control":{"type":"ephemeral"},"container":"c","mcp_servers":[],"future_field":{"a":1}}`,
		want:   `{"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":32000}`,
		wantIn: AnthropicInbound{Thinking: true, ThinkingDropped: true, MaxTokens: 32000}},
	{name: "thinking_adaptive",
		in:     `{"model":"m","messages":[{"role":"user","content":"x"}],"thinking":{"type":"adaptive"}}`,
		want:   `{"model":"m","messages":[{"role":"user","content":"x"}]}`,
		wantIn: AnthropicInbound{Thinking: true, ThinkingDropped: true}},
	{name: "thinking_disabled_is_not_reported",
		in:   `{"model":"m","messages":[{"role":"user","content":"x"}],"thinking":{"type":"disabled"}}`,
		want: `{"model":"m","messages":[{"role":"user","content":"x"}]}`},
	{name: "thinking_unknown_type_dropped_not_enabled",
		in:     `{"model":"m","messages":[{"role":"user","content":"x"}],"thinking":{"type":"future"}}`,
		want:   `{"model":"m","messages":[{"role":"user","content":"x"}]}`,
		wantIn: AnthropicInbound{ThinkingDropped: true}},
	{name: "consecutive_turns_kept_apart",
		in:   `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"user","content":"b"},{"role":"assistant","content":"c"},{"role":"assistant","content":"d"}]}`,
		want: `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"user","content":"b"},{"role":"assistant","content":"c"},{"role":"assistant","content":"d"}]}`},
	{name: "top_level_keys_match_exactly",
		in:     `{"model":"m","max_tokens":10,"MAX_TOKENS":100000,"Model":"other","Messages":5,"messages":[{"role":"user","content":"x"}],"Stream":true}`,
		want:   `{"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":10}`,
		wantIn: AnthropicInbound{MaxTokens: 10}},
	{name: "escaped_role_and_whitespace_body",
		in:   " \n{\"model\":\"m\",\"messages\":[{\"role\":\"\\u0075ser\",\"content\":\"x\"}]}\n",
		want: `{"model":"m","messages":[{"role":"user","content":"x"}]}`},
}

func TestHubFromAnthropicRequest(t *testing.T) {
	for i := 0; i < len(anthropicInCases); i++ {
		tc := anthropicInCases[i]
		t.Run(tc.name, func(t *testing.T) {
			out, in, e := HubFromAnthropicRequest([]byte(tc.in))
			if e != nil {
				t.Fatalf("error %+v", e)
			}
			if want := compactJSON(t, tc.want); string(out) != want {
				t.Errorf("got\n%s\nwant\n%s", out, want)
			}
			if in != tc.wantIn {
				t.Errorf("inbound %+v, want %+v", in, tc.wantIn)
			}
		})
	}
}

// anthropicInErrorCases are requests refused with a 400, and the
// message each gets.
var anthropicInErrorCases = []struct {
	name, in, code, message string
}{
	{"not_json", `{"model":`, "invalid_json", "request body is not valid JSON"},
	{"empty_body", ``, "invalid_json", "request body is not valid JSON"},
	{"array_body", `[{"model":"m"}]`, "invalid_json", "request body must be a JSON object"},
	{"null_body", `null`, "invalid_json", "request body must be a JSON object"},
	{"no_model", `{"messages":[{"role":"user","content":"x"}]}`, "invalid_request", `"model" is required`},
	{"model_number", `{"model":4,"messages":[]}`, "invalid_request", `"model" must be a non-empty string`},
	{"model_empty", `{"model":"","messages":[]}`, "invalid_request", `"model" must be a non-empty string`},
	{"no_messages", `{"model":"m"}`, "invalid_request", `"messages" is required`},
	{"messages_object", `{"model":"m","messages":{"role":"user"}}`, "invalid_request", `"messages" must be an array`},
	{"messages_empty", `{"model":"m","messages":[]}`, "invalid_request", `"messages" must not be empty`},
	{"message_not_object", `{"model":"m","messages":[{"role":"user","content":"x"},"hi"]}`, "invalid_request", `"messages[1]" must be an object`},
	{"role_tool", `{"model":"m","messages":[{"role":"tool","content":"x"}]}`, "invalid_request", `"messages[0].role" must be "user", "assistant" or "system"`},
	{"role_number", `{"model":"m","messages":[{"role":1,"content":"x"}]}`, "invalid_request", `"messages[0].role" must be "user", "assistant" or "system"`},
	{"role_missing", `{"model":"m","messages":[{"content":"x"}]}`, "invalid_request", `"messages[0].role" must be "user", "assistant" or "system"`},
	{"system_turn_number", `{"model":"m","messages":[{"role":"user","content":"x"},{"role":"system","content":7}]}`, "invalid_request", `"messages[1].content" must be a string or an array of text blocks`},
	{"content_missing", `{"model":"m","messages":[{"role":"user"}]}`, "invalid_request", `"messages[0].content" is required`},
	{"content_number", `{"model":"m","messages":[{"role":"user","content":3}]}`, "invalid_request", `"messages[0].content" must be a string or an array of content blocks`},
	{"block_not_object", `{"model":"m","messages":[{"role":"user","content":["x"]}]}`, "invalid_request", `"messages[0].content[0]" must be an object`},
	{"text_not_string", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":5}]}]}`,
		"invalid_request", `"messages[0].content[1].text" must be a string`},
	{"block_type_missing", `{"model":"m","messages":[{"role":"user","content":[{"text":"a"}]}]}`, "invalid_request", `"messages[0].content[0].type" must be a non-empty string`},
	{"unknown_block", `{"model":"m","messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}]}]}`,
		"unsupported_parameter", `"messages[1].content[0].type": content block type "server_tool_use" cannot be sent to this model's provider`},
	{"tool_use_from_user", `{"model":"m","messages":[{"role":"user","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]}]}`,
		"invalid_request", `"messages[0].content[0].type" must be a block type allowed in user messages (got "tool_use")`},
	{"image_from_assistant", `{"model":"m","messages":[{"role":"assistant","content":[{"type":"image","source":{"type":"url","url":"https://x"}}]}]}`,
		"invalid_request", `"messages[0].content[0].type" must be a block type allowed in assistant messages (got "image")`},
	{"tool_result_from_assistant", `{"model":"m","messages":[{"role":"assistant","content":[{"type":"tool_result","tool_use_id":"t"}]}]}`,
		"invalid_request", `"messages[0].content[0].type" must be a block type allowed in assistant messages (got "tool_result")`},
	{"image_source_missing", `{"model":"m","messages":[{"role":"user","content":[{"type":"image"}]}]}`, "invalid_request", `"messages[0].content[0].source" must be an object`},
	{"image_source_not_object", `{"model":"m","messages":[{"role":"user","content":[{"type":"image","source":"https://x"}]}]}`,
		"invalid_request", `"messages[0].content[0].source" must be an object`},
	{"image_source_file", `{"model":"m","messages":[{"role":"user","content":[{"type":"image","source":{"type":"file","file_id":"file_1"}}]}]}`,
		"unsupported_parameter", `"messages[0].content[0].source.type": image source type "file" cannot be sent to this model's provider`},
	{"image_base64_without_media_type", `{"model":"m","messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","data":"AA"}}]}]}`,
		"invalid_request", `"messages[0].content[0].source" must be a base64 source with media_type and data`},
	{"image_url_empty", `{"model":"m","messages":[{"role":"user","content":[{"type":"image","source":{"type":"url"}}]}]}`,
		"invalid_request", `"messages[0].content[0].source.url" must be a non-empty string`},
	{"document_url", `{"model":"m","messages":[{"role":"user","content":[{"type":"document","source":{"type":"url","url":"https://x/a.pdf"}}]}]}`,
		"unsupported_parameter", `"messages[0].content[0].source.type": document source type "url" cannot be sent to this model's provider`},
	{"document_not_pdf", `{"model":"m","messages":[{"role":"user","content":[{"type":"document","source":{"type":"base64","media_type":"text/csv","data":"YQ=="}}]}]}`,
		"unsupported_parameter", `"messages[0].content[0].source.media_type": document media type "text/csv" cannot be sent to this model's provider`},
	{"document_pdf_without_data", `{"model":"m","messages":[{"role":"user","content":[{"type":"document","source":{"type":"base64","media_type":"application/pdf"}}]}]}`,
		"invalid_request", `"messages[0].content[0].source.data" must be a non-empty string`},
	{"tool_use_without_id", `{"model":"m","messages":[{"role":"assistant","content":[{"type":"tool_use","name":"f","input":{}}]}]}`,
		"invalid_request", `"messages[0].content[0].id" must be a non-empty string`},
	{"tool_use_without_name", `{"model":"m","messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","input":{}}]}]}`,
		"invalid_request", `"messages[0].content[0].name" must be a non-empty string`},
	{"tool_use_input_array", `{"model":"m","messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":[1]}]}]}`,
		"invalid_request", `"messages[0].content[0].input" must be an object`},
	{"tool_result_without_id", `{"model":"m","messages":[{"role":"user","content":[{"type":"tool_result","content":"x"}]}]}`,
		"invalid_request", `"messages[0].content[0].tool_use_id" must be a non-empty string`},
	{"tool_result_content_number", `{"model":"m","messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":5}]}]}`,
		"invalid_request", `"messages[0].content[0].content" must be a string or an array of content blocks`},
	{"tool_result_nested", `{"model":"m","messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"tool_result","tool_use_id":"u"}]}]}]}`,
		"invalid_request", `"messages[0].content[0].content[0].type" must be a block type allowed in tool_result content (got "tool_result")`},
	{"tool_result_inner_bad_text", `{"model":"m","messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":[]}]}]}]}`,
		"invalid_request", `"messages[0].content[0].content[0].text" must be a string`},
	{"is_error_string", `{"model":"m","messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","is_error":"yes"}]}]}`,
		"invalid_request", `"messages[0].content[0].is_error" must be a boolean`},
	{"max_tokens_string", `{"model":"m","max_tokens":"9","messages":[{"role":"user","content":"x"}]}`, "invalid_request", `"max_tokens" must be an integer`},
	{"max_tokens_fraction", `{"model":"m","max_tokens":1.5,"messages":[{"role":"user","content":"x"}]}`, "invalid_request", `"max_tokens" must be an integer`},
	{"max_tokens_zero", `{"model":"m","max_tokens":0,"messages":[{"role":"user","content":"x"}]}`, "invalid_request", `"max_tokens" must be at least 1`},
	{"stream_string", `{"model":"m","stream":"yes","messages":[{"role":"user","content":"x"}]}`, "invalid_request", `"stream" must be a boolean`},
	{"temperature_string", `{"model":"m","temperature":"hot","messages":[{"role":"user","content":"x"}]}`, "invalid_request", `"temperature" must be a number`},
	{"top_p_bool", `{"model":"m","top_p":true,"messages":[{"role":"user","content":"x"}]}`, "invalid_request", `"top_p" must be a number`},
	{"stop_sequences_string", `{"model":"m","stop_sequences":"END","messages":[{"role":"user","content":"x"}]}`, "invalid_request", `"stop_sequences" must be an array of strings`},
	{"stop_sequences_numbers", `{"model":"m","stop_sequences":[1],"messages":[{"role":"user","content":"x"}]}`, "invalid_request", `"stop_sequences" must be an array of strings`},
	{"metadata_string", `{"model":"m","metadata":"u","messages":[{"role":"user","content":"x"}]}`, "invalid_request", `"metadata" must be an object`},
	{"user_id_number", `{"model":"m","metadata":{"user_id":42},"messages":[{"role":"user","content":"x"}]}`, "invalid_request", `"metadata.user_id" must be a string`},
	{"thinking_string", `{"model":"m","thinking":"on","messages":[{"role":"user","content":"x"}]}`, "invalid_request", `"thinking" must be an object`},
	{"thinking_type_number", `{"model":"m","thinking":{"type":1},"messages":[{"role":"user","content":"x"}]}`, "invalid_request", `"thinking.type" must be a string`},
	{"system_number", `{"model":"m","system":1,"messages":[{"role":"user","content":"x"}]}`, "invalid_request", `"system" must be a string or an array of text blocks`},
	{"system_image", `{"model":"m","system":[{"type":"text","text":"a"},{"type":"image","source":{"type":"url","url":"https://x"}}],"messages":[{"role":"user","content":"x"}]}`,
		"invalid_request", `"system[1].type" must be "text"`},
	{"tools_object", `{"model":"m","tools":{},"messages":[{"role":"user","content":"x"}]}`, "invalid_request", `"tools" must be an array`},
	{"tool_not_object", `{"model":"m","tools":[{"name":"a"},7],"messages":[{"role":"user","content":"x"}]}`, "invalid_request", `"tools[1]" must be an object`},
	{"tool_without_name", `{"model":"m","tools":[{"input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"x"}]}`,
		"invalid_request", `"tools[0].name" must be a non-empty string`},
	{"tool_schema_string", `{"model":"m","tools":[{"name":"f","input_schema":"object"}],"messages":[{"role":"user","content":"x"}]}`,
		"invalid_request", `"tools[0].input_schema" must be an object`},
	{"tool_description_number", `{"model":"m","tools":[{"name":"f","description":1}],"messages":[{"role":"user","content":"x"}]}`,
		"invalid_request", `"tools[0].description" must be a string`},
	{"tool_choice_string", `{"model":"m","tool_choice":"auto","messages":[{"role":"user","content":"x"}]}`, "invalid_request", `"tool_choice" must be an object`},
	{"tool_choice_type_unknown", `{"model":"m","tools":[{"name":"f"}],"tool_choice":{"type":"required"},"messages":[{"role":"user","content":"x"}]}`,
		"invalid_request", `"tool_choice.type" must be one of "auto", "any", "tool" or "none"`},
	{"tool_choice_unknown_name", `{"model":"m","tools":[{"name":"f"}],"tool_choice":{"type":"tool","name":"g"},"messages":[{"role":"user","content":"x"}]}`,
		"invalid_request", `"tool_choice.name" must be the name of a custom tool in "tools"`},
	{"tool_choice_parallel_string", `{"model":"m","tools":[{"name":"f"}],"tool_choice":{"type":"auto","disable_parallel_tool_use":"true"},"messages":[{"role":"user","content":"x"}]}`,
		"invalid_request", `"tool_choice.disable_parallel_tool_use" must be a boolean`},
	{"nothing_to_send", `{"model":"m","messages":[{"role":"assistant","content":[{"type":"thinking","thinking":"x","signature":"s"}]}]}`,
		"invalid_request", `"messages" must hold at least one message with content`},
}

func TestHubFromAnthropicRequestErrors(t *testing.T) {
	for i := 0; i < len(anthropicInErrorCases); i++ {
		tc := anthropicInErrorCases[i]
		t.Run(tc.name, func(t *testing.T) {
			out, _, e := HubFromAnthropicRequest([]byte(tc.in))
			if e == nil {
				t.Fatalf("no error; output %s", out)
			}
			if out != nil || e.Status != 400 || e.Kind != "invalid_request_error" || e.Code != tc.code || e.Message != tc.message {
				t.Errorf("got %d %s %s %q (output %q), want 400 invalid_request_error %s %q", e.Status, e.Kind, e.Code, e.Message, out, tc.code, tc.message)
			}
		})
	}
}

// claudeCodeRequest is a request shaped like what Claude Code 2.1 sends:
// three system blocks (one large) with cache_control, thinking enabled,
// max_tokens 32000, context_management, metadata.user_id a JSON object in
// a string, twelve tools with $schema (some with defer_loading), and a
// user turn of nine text blocks, most of them system reminders.
func claudeCodeRequest() (string, []string, []string) {
	system := []string{
		"x-anthropic-billing-header: cc_version=2.1.328; cc_entrypoint=cli",
		"You are Claude Code, Anthropic's official CLI for Claude.",
		"You are an interactive CLI tool that helps users with software engineering tasks.\n" + strings.Repeat("# Rule\n- Be careful with \"quotes\" & <tags>.\n", 700),
	}
	var texts []string
	for i := 0; i < 8; i++ {
		texts = append(texts, "<system-reminder>\nReminder "+strconv.Itoa(i)+": the date is 2026-12-01.\n</system-reminder>")
	}
	texts = append(texts, "say hi")
	var b strings.Builder
	b.WriteString(`{"model":"claude-opus-5-5","max_tokens":32000,"stream":true,`)
	b.WriteString(`"thinking":{"type":"enabled","budget_tokens":31999,"display":"omitted"},`)
	b.WriteString(`"context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]},`)
	b.WriteString(`"metadata":{"user_id":"{\"device_id\":\"4f3c0d5e\",\"account_uuid\":\"\",\"session_id\":\"0b1e-77\"}"},`)
	b.WriteString(`"system":[`)
	for i := 0; i < len(system); i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"type":"text","text":`)
		b.Write(quoteJSON(system[i]))
		if i > 0 {
			b.WriteString(`,"cache_control":{"type":"ephemeral"}`)
		}
		b.WriteString("}")
	}
	b.WriteString(`],"messages":[{"role":"user","content":[`)
	for i := 0; i < len(texts); i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"type":"text","text":`)
		b.Write(quoteJSON(texts[i]))
		if i == len(texts)-1 {
			b.WriteString(`,"cache_control":{"type":"ephemeral"}`)
		}
		b.WriteString("}")
	}
	b.WriteString(`]}],"tools":[`)
	names := []string{"Task", "Bash", "Glob", "Grep", "Read", "Edit", "Write", "NotebookEdit", "WebFetch", "TodoWrite", "WebSearch", "BashOutput"}
	for i := 0; i < len(names); i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"name":"` + names[i] + `","description":"Tool ` + names[i] + ` does things.",`)
		b.WriteString(`"input_schema":{"type":"object","properties":{"arg":{"type":"string","description":"An argument"},"n":{"type":"integer","maximum":9007199254740993}},`)
		b.WriteString(`"required":["arg"],"additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#"}`)
		if i%3 == 0 {
			b.WriteString(`,"defer_loading":true`)
		}
		if i == len(names)-1 {
			b.WriteString(`,"cache_control":{"type":"ephemeral"}`)
		}
		b.WriteString("}")
	}
	b.WriteString(`]}`)
	return b.String(), system, texts
}

func TestHubFromAnthropicRequestClaudeCode(t *testing.T) {
	body, system, texts := claudeCodeRequest()
	out, in, e := HubFromAnthropicRequest([]byte(body))
	if e != nil {
		t.Fatal(e)
	}
	if want := (AnthropicInbound{Stream: true, Thinking: true, ThinkingDropped: true, MaxTokens: 32000}); in != want {
		t.Errorf("inbound %+v, want %+v", in, want)
	}
	gone := []string{"cache_control", "defer_loading", "context_management", "thinking", "budget_tokens", "metadata"}
	for i := 0; i < len(gone); i++ {
		if bytes.Contains(out, []byte(gone[i])) {
			t.Errorf("output still holds %q", gone[i])
		}
	}
	var hub struct {
		Model     string `json:"model"`
		MaxTokens int64  `json:"max_tokens"`
		Stream    bool   `json:"stream"`
		User      string `json:"user"`
		Messages  []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Type     string `json:"type"`
			Function struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(out, &hub); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if hub.Model != "claude-opus-5-5" || hub.MaxTokens != 32000 || !hub.Stream {
		t.Errorf("model %q max_tokens %d stream %v", hub.Model, hub.MaxTokens, hub.Stream)
	}
	if hub.User != `{"device_id":"4f3c0d5e","account_uuid":"","session_id":"0b1e-77"}` {
		t.Errorf("user %q", hub.User)
	}
	if len(hub.Messages) != 2 || hub.Messages[0].Role != "system" || hub.Messages[1].Role != "user" {
		t.Fatalf("messages: %s", out)
	}
	var sys string
	if err := json.Unmarshal(hub.Messages[0].Content, &sys); err != nil || sys != strings.Join(system, "\n\n") {
		t.Errorf("system (%v) is not the three blocks joined", err)
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(hub.Messages[1].Content, &parts); err != nil || len(parts) != len(texts) {
		t.Fatalf("user parts (%v): %s", err, hub.Messages[1].Content)
	}
	for i := 0; i < len(parts); i++ {
		if parts[i].Type != "text" || parts[i].Text != texts[i] {
			t.Errorf("part %d = %+v", i, parts[i])
		}
	}
	if len(hub.Tools) != 12 {
		t.Fatalf("%d tools, want 12", len(hub.Tools))
	}
	const schema = `{"type":"object","properties":{"arg":{"type":"string","description":"An argument"},"n":{"type":"integer","maximum":9007199254740993}},` +
		`"required":["arg"],"additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#"}`
	for i := 0; i < len(hub.Tools); i++ {
		if hub.Tools[i].Type != "function" || string(hub.Tools[i].Function.Parameters) != schema {
			t.Errorf("tool %d: %s %s", i, hub.Tools[i].Function.Name, hub.Tools[i].Function.Parameters)
		}
	}
}

func TestAnthropicCountTokens(t *testing.T) {
	body := `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"Hello, world"}]}`
	n, e := AnthropicCountTokens([]byte(body))
	if e != nil || n != int64((len(body)+3)/4) {
		t.Fatalf("got %d, %v; want %d", n, e, (len(body)+3)/4)
	}
	claude, _, _ := claudeCodeRequest()
	if n, e := AnthropicCountTokens([]byte(claude)); e != nil || n != int64((len(claude)+3)/4) || n < 5000 {
		t.Errorf("claude code request: %d, %v", n, e)
	}
	if n, e := AnthropicCountTokens([]byte(`{"model":"m","messages":[]}`)); e != nil || n < 1 {
		t.Errorf("smallest valid body: %d, %v", n, e)
	}
	bad := []struct{ in, message string }{
		{`[]`, "request body must be a JSON object"},
		{`{`, "request body is not valid JSON"},
		{`{"messages":[]}`, `"model" is required`},
		{`{"model":1,"messages":[]}`, `"model" must be a non-empty string`},
		{`{"model":"m"}`, `"messages" is required`},
		{`{"model":"m","messages":"hi"}`, `"messages" must be an array`},
	}
	for i := 0; i < len(bad); i++ {
		n, e := AnthropicCountTokens([]byte(bad[i].in))
		if e == nil || n != 0 || e.Status != 400 || e.Message != bad[i].message {
			t.Errorf("%s: got %d, %+v; want a 400 %q", bad[i].in, n, e, bad[i].message)
		}
	}
}
