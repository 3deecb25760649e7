package translate

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// Codex CLI's requests (0.169, as observed: see the Codex CLI section of
// the real-clients reference) and the answers it needs.

// codexFlatTools are the flat function tools Codex sends.
var codexFlatTools = []string{"exec_command", "write_stdin", "request_user_input", "view_image", "get_goal", "create_goal", "update_goal"}

// codexAgentTools are the functions of its multi_agent_v1 namespace.
var codexAgentTools = []string{"spawn_agent", "send_input", "wait", "close_agent", "resume_agent"}

// codexApplyPatchGrammar is the start of a Lark grammar like apply_patch's.
const codexApplyPatchGrammar = "start: begin_patch hunk+ end_patch\nbegin_patch: \"*** Begin Patch\" LF\nend_patch: \"*** End Patch\" LF?\n"

// codexRequest is a request shaped like what Codex sends: the system
// prompt as a developer message inside input, an id on every item,
// include, prompt_cache_key, client_metadata, reasoning.summary, store
// false, 7 flat function tools, a namespace tool with 5 functions,
// web_search with external_web_access false and a custom apply_patch
// tool with a grammar; then the items of history (each with an id).
func codexRequest(history ...string) string {
	var b strings.Builder
	b.WriteString(`{"model":"gw-test-model","instructions":null,"input":[`)
	b.WriteString(`{"type":"message","id":"msg_dev","role":"developer","content":[{"type":"input_text","text":`)
	b.Write(quoteJSON("You are Codex, a coding agent.\n" + strings.Repeat("- Follow the \"rules\" & <guidelines>.\n", 400)))
	b.WriteString(`}]},{"type":"message","id":"msg_skills","role":"developer","content":[{"type":"input_text","text":"## Skills\n- none"}]},`)
	b.WriteString(`{"type":"message","id":"msg_env","role":"user","content":[{"type":"input_text","text":"<environment_context>\n  <cwd>/tmp/w</cwd>\n</environment_context>"}]},`)
	b.WriteString(`{"type":"message","id":"msg_prompt","role":"user","content":[{"type":"input_text","text":"say hi"}]}`)
	for i := 0; i < len(history); i++ {
		b.WriteString("," + history[i])
	}
	b.WriteString(`],"tools":[`)
	for i := 0; i < len(codexFlatTools); i++ {
		b.WriteString(`{"type":"function","name":"` + codexFlatTools[i] + `","description":"Codex tool ` + codexFlatTools[i] + `.","strict":false,` +
			`"parameters":{"type":"object","properties":{"cmd":{"type":"string"}},"required":["cmd"],"additionalProperties":false}},`)
	}
	b.WriteString(`{"type":"namespace","name":"multi_agent_v1","description":"Manage sub-agents.","tools":[`)
	for i := 0; i < len(codexAgentTools); i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"type":"function","name":"` + codexAgentTools[i] + `","description":"Agent ` + codexAgentTools[i] + `.","strict":false,` +
			`"parameters":{"type":"object","properties":{"id":{"type":"string"}}}}`)
	}
	b.WriteString(`]},{"type":"web_search","external_web_access":false},`)
	b.WriteString(`{"type":"custom","name":"apply_patch","description":"Use the apply_patch tool to edit files.","format":{"type":"grammar","syntax":"lark","definition":`)
	b.Write(quoteJSON(codexApplyPatchGrammar))
	b.WriteString(`}}],"tool_choice":"auto","parallel_tool_calls":true,"reasoning":{"summary":"auto"},"store":false,"stream":true,`)
	b.WriteString(`"include":["reasoning.encrypted_content"],"prompt_cache_key":"0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",`)
	b.WriteString(`"client_metadata":{"originator":"codex_exec","session":"0199a1b2"}}`)
	return b.String()
}

// codexHub is the part of a hub request the Codex tests read.
type codexHub struct {
	Model             string `json:"model"`
	Stream            bool   `json:"stream"`
	ToolChoice        string `json:"tool_choice"`
	ParallelToolCalls *bool  `json:"parallel_tool_calls"`
	Messages          []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []hubToolCall   `json:"tool_calls"`
	} `json:"messages"`
	Tools []responsesHubTool `json:"tools"`
}

func TestHubFromResponsesRequestCodex(t *testing.T) {
	out, in, e := HubFromResponsesRequest([]byte(codexRequest()))
	if e != nil {
		t.Fatal(e)
	}
	wantNs, wantFn := map[string]string{}, map[string]string{}
	for i := 0; i < len(codexAgentTools); i++ {
		wantNs["multi_agent_v1__"+codexAgentTools[i]] = "multi_agent_v1"
		wantFn["multi_agent_v1__"+codexAgentTools[i]] = codexAgentTools[i]
	}
	want := ResponsesInbound{Stream: true, Model: "gw-test-model", DroppedTools: []string{"web_search"},
		Namespaces: wantNs, Functions: wantFn, Custom: map[string]bool{"apply_patch": true}, Reasoning: true}
	if !reflect.DeepEqual(in, want) {
		t.Errorf("inbound %+v\nwant %+v", in, want)
	}
	gone := []string{"prompt_cache_key", "client_metadata", "include", "encrypted_content", "store", "reasoning", "msg_dev", "msg_prompt",
		"external_web_access", "web_search", "namespace", `"custom"`, "instructions"}
	for i := 0; i < len(gone); i++ {
		if bytes.Contains(out, []byte(gone[i])) {
			t.Errorf("output still holds %q", gone[i])
		}
	}
	var hub codexHub
	if err := json.Unmarshal(out, &hub); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if hub.Model != "gw-test-model" || !hub.Stream || hub.ToolChoice != "auto" || hub.ParallelToolCalls == nil || !*hub.ParallelToolCalls {
		t.Errorf("model %q stream %v tool_choice %q parallel %v", hub.Model, hub.Stream, hub.ToolChoice, hub.ParallelToolCalls)
	}
	roles := ""
	for i := 0; i < len(hub.Messages); i++ {
		roles += hub.Messages[i].Role + " "
	}
	if roles != "developer developer user user " {
		t.Fatalf("roles %q", roles)
	}
	var dev string
	if json.Unmarshal(hub.Messages[0].Content, &dev) != nil || !strings.HasPrefix(dev, "You are Codex") || !strings.Contains(dev, `"rules" & <guidelines>`) {
		t.Errorf("developer prompt %.80s", hub.Messages[0].Content)
	}
	var names []string
	for i := 0; i < len(hub.Tools); i++ {
		names = append(names, hub.Tools[i].Function.Name)
	}
	wantNames := append(append([]string{}, codexFlatTools...), "multi_agent_v1__spawn_agent", "multi_agent_v1__send_input", "multi_agent_v1__wait",
		"multi_agent_v1__close_agent", "multi_agent_v1__resume_agent", "apply_patch")
	if !reflect.DeepEqual(names, wantNames) {
		t.Fatalf("tools %v\nwant %v", names, wantNames)
	}
	if s := hub.Tools[0].Function.Strict; s == nil || *s {
		t.Errorf("strict:false not kept: %v", s)
	}
	patch := hub.Tools[len(hub.Tools)-1].Function
	if !strings.HasPrefix(patch.Description, "Use the apply_patch tool to edit files.\n\n") || !strings.HasSuffix(patch.Description, codexApplyPatchGrammar) ||
		string(patch.Parameters) != responsesHubCustomParameters {
		t.Errorf("apply_patch function %+v", patch)
	}
	if d := hub.Tools[7].Function.Description; d != "Manage sub-agents.\n\nAgent spawn_agent." {
		t.Errorf("namespace function description %q", d)
	}
}

// codexFollowUp is the history Codex sends after a tool call round:
// the echoed calls (function, namespace function and custom) and their
// outputs, each with an id, then the assistant's text and a new prompt.
var codexFollowUp = []string{
	`{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"Run it."}],"encrypted_content":null}`,
	`{"type":"function_call","id":"fc_1","call_id":"call_A","name":"exec_command","arguments":"{\"cmd\":\"echo codex-tool-ok\"}","status":"completed"}`,
	`{"type":"function_call","id":"fc_2","call_id":"call_B","name":"spawn_agent","namespace":"multi_agent_v1","arguments":"{\"id\":\"a1\"}","status":"completed"}`,
	`{"type":"custom_tool_call","id":"ctc_3","call_id":"call_C","name":"apply_patch","input":"*** Begin Patch\n*** End Patch\n","status":"completed"}`,
	`{"type":"function_call_output","id":"fco_1","call_id":"call_A","output":"Chunk ID: 1\nWall time: 0.01 seconds\nProcess exited with code 0\nOriginal token count: 4\nOutput:\ncodex-tool-ok\n"}`,
	`{"type":"function_call_output","id":"fco_2","call_id":"call_B","name":"spawn_agent","namespace":"multi_agent_v1","output":[{"type":"input_text","text":"agent a1 started"}]}`,
	`{"type":"custom_tool_call_output","id":"cto_3","call_id":"call_C","output":"Success. Updated the following files:\nM a.go\n"}`,
	`{"type":"message","role":"assistant","id":"msg_srv","content":[{"type":"output_text","text":"codex-tool-ok","annotations":[]}]}`,
	`{"type":"message","id":"msg_next","role":"user","content":[{"type":"input_text","text":"thanks"}]}`,
}

func TestHubFromResponsesRequestCodexFollowUp(t *testing.T) {
	out, _, e := HubFromResponsesRequest([]byte(codexRequest(codexFollowUp...)))
	if e != nil {
		t.Fatal(e)
	}
	var hub codexHub
	if err := json.Unmarshal(out, &hub); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(hub.Messages) != 10 {
		t.Fatalf("%d messages: %s", len(hub.Messages), out)
	}
	calls := hub.Messages[4]
	if calls.Role != "assistant" || string(calls.Content) != "null" || len(calls.ToolCalls) != 3 {
		t.Fatalf("the three calls are not one assistant message: %+v", calls)
	}
	wantCalls := []hubToolCall{
		{ID: "call_A", Type: "function", Function: hubFunction{Name: "exec_command", Arguments: `{"cmd":"echo codex-tool-ok"}`}},
		{ID: "call_B", Type: "function", Function: hubFunction{Name: "multi_agent_v1__spawn_agent", Arguments: `{"id":"a1"}`}},
		{ID: "call_C", Type: "function", Function: hubFunction{Name: "apply_patch", Arguments: `{"input":"*** Begin Patch\n*** End Patch\n"}`}},
	}
	for i := 0; i < len(wantCalls); i++ {
		if !reflect.DeepEqual(calls.ToolCalls[i], wantCalls[i]) {
			t.Errorf("call %d = %+v, want %+v", i, calls.ToolCalls[i], wantCalls[i])
		}
	}
	tools := []struct{ id, content string }{
		{"call_A", "Chunk ID: 1\nWall time: 0.01 seconds\nProcess exited with code 0\nOriginal token count: 4\nOutput:\ncodex-tool-ok\n"},
		{"call_B", "agent a1 started"},
		{"call_C", "Success. Updated the following files:\nM a.go\n"},
	}
	for i := 0; i < len(tools); i++ {
		m := hub.Messages[5+i]
		var content string
		if m.Role != "tool" || m.ToolCallID != tools[i].id || json.Unmarshal(m.Content, &content) != nil || content != tools[i].content {
			t.Errorf("tool message %d = %s %s %s", i, m.Role, m.ToolCallID, m.Content)
		}
	}
	if m := hub.Messages[8]; m.Role != "assistant" || string(m.Content) != `"codex-tool-ok"` {
		t.Errorf("assistant reply %s %s", m.Role, m.Content)
	}
	if m := hub.Messages[9]; m.Role != "user" || string(m.Content) != `"thanks"` {
		t.Errorf("new prompt %s %s", m.Role, m.Content)
	}
}

// TestResponsesCodexRoundTrip answers a Codex request with calls of a
// namespace function and the custom tool, and sends the items back as
// Codex does: the hub request names the functions as they were offered.
func TestResponsesCodexRoundTrip(t *testing.T) {
	_, in, e := HubFromResponsesRequest([]byte(codexRequest()))
	if e != nil {
		t.Fatal(e)
	}
	answer := hubCompletion(`{"role":"assistant","content":null,"tool_calls":[`+
		`{"id":"call_X","type":"function","function":{"name":"multi_agent_v1__wait","arguments":"{\"id\":\"a1\"}"}},`+
		`{"id":"call_Y","type":"function","function":{"name":"apply_patch","arguments":"{\"input\":\"*** Begin Patch\\n*** End Patch\"}"}}]}`,
		`"tool_calls"`, "")
	resp, _, e := ResponsesFromHubResponse([]byte(answer), responsesOutTestContext(), in)
	if e != nil {
		t.Fatal(e)
	}
	var r struct {
		Output []json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal(resp, &r); err != nil || len(r.Output) != 2 {
		t.Fatalf("%v: %s", err, resp)
	}
	if !bytes.Contains(r.Output[0], []byte(`"name":"wait","namespace":"multi_agent_v1"`)) ||
		!bytes.Contains(r.Output[1], []byte(`"type":"custom_tool_call"`)) || !bytes.Contains(r.Output[1], []byte(`"input":"*** Begin Patch\n*** End Patch"`)) {
		t.Fatalf("output %s", r.Output)
	}
	out, _, e := HubFromResponsesRequest([]byte(codexRequest(string(r.Output[0]), string(r.Output[1]))))
	if e != nil {
		t.Fatal(e)
	}
	if !bytes.Contains(out, []byte(`{"role":"assistant","content":null,"tool_calls":[`+
		`{"id":"call_X","type":"function","function":{"name":"multi_agent_v1__wait","arguments":"{\"id\":\"a1\"}"}},`+
		`{"id":"call_Y","type":"function","function":{"name":"apply_patch","arguments":"{\"input\":\"*** Begin Patch\\n*** End Patch\"}"}}]}`)) {
		t.Errorf("echoed calls do not come back as the hub's: %s", out)
	}
}
