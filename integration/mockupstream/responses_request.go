package mockupstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// responsesRequest is what the mock reads from a Responses API request.
type responsesRequest struct {
	model       string
	stream      bool
	maxTokens   int      // max_output_tokens; -1: none
	tools       []string // function names (flat, and inside namespace tools), in order
	toolChoice  string   // "", auto, none, required, function
	choiceName  string   // the function of tool_choice {"type":"function"}
	turn        []turnMessage
	promptWords int
}

// lastUser is the text of the conversation's last message when it is a
// user message, else "".
func (r responsesRequest) lastUser() string {
	if n := len(r.turn); n > 0 && r.turn[n-1].role == "user" {
		return r.turn[n-1].text
	}
	return ""
}

// responsesTopLevel are the request fields the mock accepts; any other is
// refused with "Unknown parameter", as the API does. client_metadata is
// what Codex CLI sends beside them.
var responsesTopLevel = map[string]bool{
	"model": true, "input": true, "instructions": true, "max_output_tokens": true, "max_tool_calls": true,
	"temperature": true, "top_p": true, "top_logprobs": true, "tools": true, "tool_choice": true,
	"parallel_tool_calls": true, "stream": true, "stream_options": true, "previous_response_id": true,
	"conversation": true, "store": true, "reasoning": true, "text": true, "metadata": true, "include": true,
	"user": true, "prompt_cache_key": true, "prompt_cache_retention": true, "safety_identifier": true,
	"service_tier": true, "truncation": true, "background": true, "prompt": true, "client_metadata": true,
}

// responsesItemTypes are the input item types the mock accepts. Only
// messages, function calls and their outputs take part in the
// conversation; the others are skipped.
var responsesItemTypes = map[string]bool{
	"message": true, "function_call": true, "function_call_output": true, "custom_tool_call": true,
	"custom_tool_call_output": true, "reasoning": true, "item_reference": true, "web_search_call": true,
	"file_search_call": true, "computer_call": true, "computer_call_output": true, "local_shell_call": true,
	"local_shell_call_output": true, "image_generation_call": true, "code_interpreter_call": true,
	"mcp_call": true, "mcp_list_tools": true, "mcp_approval_request": true, "mcp_approval_response": true,
	"compaction": true,
}

// responsesToolTypes are the tool types the mock accepts. Only function
// tools (flat or in a namespace) can be called.
var responsesToolTypes = map[string]bool{
	"function": true, "namespace": true, "custom": true, "web_search": true, "web_search_preview": true,
	"file_search": true, "tool_search": true, "code_interpreter": true, "computer_use_preview": true,
	"image_generation": true, "mcp": true, "local_shell": true,
}

// responsesPartTypes are the content part types a message of each role
// may carry.
var responsesPartTypes = map[string][]string{
	"user":      {"input_text", "input_image", "input_file", "input_audio"},
	"system":    {"input_text"},
	"developer": {"input_text"},
	"assistant": {"output_text", "refusal"},
}

var responsesFunctionName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// responsesItem is an input item, reduced to the fields the mock reads.
type responsesItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments *string         `json:"arguments"`
	Input     *string         `json:"input"`
	Output    json.RawMessage `json:"output"`
}

// responsesTool is a tools entry, reduced to the fields the mock reads.
type responsesTool struct {
	Type  string          `json:"type"`
	Name  string          `json:"name"`
	Tools []responsesTool `json:"tools"`
}

// parseResponsesRequest validates a Responses API body the way the API
// does (unknown parameters, item and part types per role, a call for
// every function_call_output) and returns what the mock needs, or an
// error message and the parameter it is about. previous_response_id is
// refused: the mock keeps no responses.
func parseResponsesRequest(body []byte) (responsesRequest, string, string) {
	out := responsesRequest{maxTokens: -1}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return out, "mock: invalid JSON body: " + err.Error(), ""
	}
	keys := make([]string, 0, len(top))
	for k := range top {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !responsesTopLevel[k] {
			return out, "Unknown parameter: '" + k + "'.", k
		}
	}
	var req struct {
		Model              string          `json:"model"`
		Input              json.RawMessage `json:"input"`
		Instructions       *string         `json:"instructions"`
		MaxOutputTokens    *int            `json:"max_output_tokens"`
		Stream             bool            `json:"stream"`
		Tools              []responsesTool `json:"tools"`
		ToolChoice         json.RawMessage `json:"tool_choice"`
		PreviousResponseID *string         `json:"previous_response_id"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return out, "mock: invalid request: " + err.Error(), ""
	}
	if req.Model == "" {
		return out, "Missing required parameter: 'model'.", "model"
	}
	out.model, out.stream = req.Model, req.Stream
	if req.PreviousResponseID != nil && *req.PreviousResponseID != "" {
		return out, "mock: previous_response_id is not supported (the mock keeps no responses): send the whole conversation in input", "previous_response_id"
	}
	if req.MaxOutputTokens != nil {
		if *req.MaxOutputTokens < 1 {
			return out, "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 1.", "max_output_tokens"
		}
		out.maxTokens = *req.MaxOutputTokens
	}
	if req.Instructions != nil {
		out.promptWords += words(*req.Instructions)
	}

	for i, t := range req.Tools {
		names, msg := responsesToolNames(t, fmt.Sprintf("tools[%d]", i))
		if msg != "" {
			return out, msg, fmt.Sprintf("tools[%d]", i)
		}
		out.tools = append(out.tools, names...)
	}
	if msg := out.readToolChoice(req.ToolChoice); msg != "" {
		return out, msg, "tool_choice"
	}

	items, msg := responsesItems(req.Input)
	if msg != "" {
		return out, msg, "input"
	}
	calls := map[string]bool{}
	for i, it := range items {
		where := fmt.Sprintf("input[%d]", i)
		switch it.Type {
		case "message":
			text, msg := responsesMessageText(it, where)
			if msg != "" {
				return out, msg, where
			}
			out.promptWords += words(text)
			out.addMessage(it.Role, text)
		case "function_call", "custom_tool_call":
			if it.CallID == "" || it.Name == "" {
				return out, "Missing required parameter: '" + where + ".call_id' or '" + where + ".name'.", where
			}
			if it.Type == "function_call" && it.Arguments == nil {
				return out, "Missing required parameter: '" + where + ".arguments'.", where
			}
			if it.Type == "custom_tool_call" && it.Input == nil {
				return out, "Missing required parameter: '" + where + ".input'.", where
			}
			calls[it.CallID] = true
			out.addCall(it.CallID, it.Name)
		case "function_call_output", "custom_tool_call_output":
			if it.CallID == "" {
				return out, "Missing required parameter: '" + where + ".call_id'.", where
			}
			if !calls[it.CallID] {
				return out, "No tool call found for function call output with call_id " + it.CallID + ".", where
			}
			if len(bytes.TrimSpace(it.Output)) == 0 {
				return out, "Missing required parameter: '" + where + ".output'.", where
			}
			text := contentText(it.Output)
			out.promptWords += words(text)
			out.addResult(it.CallID, text)
		}
	}
	return out, "", ""
}

// responsesItems reads input: a string (one user message) or an array of
// items, each with a known type (a message may omit it).
func responsesItems(raw json.RawMessage) ([]responsesItem, string) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, "Missing required parameter: 'input'."
	}
	var str string
	if json.Unmarshal(raw, &str) == nil {
		content, _ := json.Marshal(str)
		return []responsesItem{{Type: "message", Role: "user", Content: content}}, ""
	}
	var items []responsesItem
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, "Invalid type for 'input': expected a string or an array of input items."
	}
	if len(items) == 0 {
		return nil, "Invalid 'input': empty array. Expected an array with at least one item."
	}
	for i := range items {
		if items[i].Type == "" && items[i].Role != "" {
			items[i].Type = "message"
		}
		if !responsesItemTypes[items[i].Type] {
			return nil, fmt.Sprintf("Invalid value: '%s'. Supported values are the input item types (input[%d].type).", items[i].Type, i)
		}
	}
	return items, ""
}

// responsesMessageText validates a message item and returns its text.
func responsesMessageText(it responsesItem, where string) (string, string) {
	allowed, ok := responsesPartTypes[it.Role]
	if !ok {
		return "", "Invalid value: '" + it.Role + "'. Supported values are: 'user', 'assistant', 'system', and 'developer' (" + where + ".role)."
	}
	raw := bytes.TrimSpace(it.Content)
	var str string
	if json.Unmarshal(raw, &str) == nil {
		return str, ""
	}
	var parts []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return "", "Invalid type for '" + where + ".content': expected a string or an array of content parts."
	}
	var texts []string
	for j, p := range parts {
		if !contains(allowed, p.Type) {
			return "", fmt.Sprintf("Invalid value: '%s'. Supported values are: '%s' (%s.content[%d].type).", p.Type, strings.Join(allowed, "', '"), where, j)
		}
		if (p.Type == "input_text" || p.Type == "output_text") && p.Text == nil {
			return "", fmt.Sprintf("Missing required parameter: '%s.content[%d].text'.", where, j)
		}
		if p.Text != nil {
			texts = append(texts, *p.Text)
		}
	}
	return strings.Join(texts, "\n"), ""
}

// responsesToolNames validates a tools entry and returns the function
// names it declares.
func responsesToolNames(t responsesTool, where string) ([]string, string) {
	if !responsesToolTypes[t.Type] {
		return nil, "Invalid value: '" + t.Type + "'. Supported values are the tool types (" + where + ".type)."
	}
	switch t.Type {
	case "function", "custom":
		if !responsesFunctionName.MatchString(t.Name) {
			return nil, "Invalid '" + where + ".name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'."
		}
		if t.Type == "function" {
			return []string{t.Name}, ""
		}
	case "namespace":
		var names []string
		for i, inner := range t.Tools {
			if inner.Type != "function" {
				return nil, fmt.Sprintf("Invalid value: '%s'. A namespace holds function tools (%s.tools[%d].type).", inner.Type, where, i)
			}
			got, msg := responsesToolNames(inner, fmt.Sprintf("%s.tools[%d]", where, i))
			if msg != "" {
				return nil, msg
			}
			names = append(names, got...)
		}
		return names, ""
	}
	return nil, ""
}

// readToolChoice reads tool_choice: "auto", "none", "required" or
// {"type":"function","name":...} naming a declared function.
func (r *responsesRequest) readToolChoice(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var mode string
	if json.Unmarshal(raw, &mode) == nil {
		switch mode {
		case "auto", "none", "required":
			r.toolChoice = mode
			return ""
		}
		return "Invalid value: '" + mode + "'. Supported values are: 'none', 'auto', and 'required'."
	}
	var fn struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if json.Unmarshal(raw, &fn) != nil || fn.Type != "function" {
		return "Invalid 'tool_choice': the mock understands a mode or {\"type\":\"function\",\"name\":...}."
	}
	if !contains(r.tools, fn.Name) {
		return "Tool choice 'function' not found in 'tools' parameter: " + fn.Name + "."
	}
	r.toolChoice, r.choiceName = "function", fn.Name
	return ""
}

// addMessage appends a message to the turn's view: user and assistant
// messages only. A user message right after tool results joins them, as
// in chatTurnMessages.
func (r *responsesRequest) addMessage(role, text string) {
	n := len(r.turn)
	switch role {
	case "user":
		if n > 0 && r.turn[n-1].role == "user" && len(r.turn[n-1].results) > 0 {
			r.turn[n-1].text += text
			return
		}
		r.turn = append(r.turn, turnMessage{role: "user", text: text})
	case "assistant":
		r.turn = append(r.turn, turnMessage{role: "assistant", text: text, calls: map[string]string{}})
	}
}

// addCall records a function call item: it belongs to the assistant
// message before it, or starts one.
func (r *responsesRequest) addCall(id, name string) {
	n := len(r.turn)
	if n == 0 || r.turn[n-1].role != "assistant" {
		r.turn = append(r.turn, turnMessage{role: "assistant", calls: map[string]string{}})
		n++
	}
	r.turn[n-1].calls[id] = name
}

// addResult records a function call output item: consecutive outputs
// form one user message.
func (r *responsesRequest) addResult(id, text string) {
	res := turnResult{id: id, text: text}
	if n := len(r.turn); n > 0 && r.turn[n-1].role == "user" && len(r.turn[n-1].results) > 0 {
		r.turn[n-1].results = append(r.turn[n-1].results, res)
		return
	}
	r.turn = append(r.turn, turnMessage{role: "user", results: []turnResult{res}})
}
