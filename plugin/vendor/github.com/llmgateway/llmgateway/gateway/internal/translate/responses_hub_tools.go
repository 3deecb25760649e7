package translate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// The tools half of the Responses → hub request translation
// (responses_hub_request.go has the entry point):
//
//   - function tools (flat: name, description, parameters, strict) →
//     hub function tools, parameters verbatim ({"type":"object",
//     "properties":{}} when absent), strict kept when sent;
//   - a namespace tool ({"type":"namespace","name":N,"tools":[…]}) →
//     one hub function per function (or custom tool) in it, named
//     responsesFlatName(N, name): N + "__" + name, without the separator
//     when N already ends with "_" or the name starts with one (Codex's
//     own spelling of MCP namespaces, "mcp__server__" + "tool"); the
//     namespace's description opens each function's. The mapping back is
//     in ResponsesInbound.Namespaces and Functions;
//   - a custom tool (free-form input, e.g. Codex's apply_patch with a
//     Lark grammar) → a function with one required string parameter,
//     "input", whose description says to pass the raw text, and
//     includes the grammar (or regex) definition, cut after
//     responsesGrammarLimit bytes; its calls come back as
//     custom_tool_call items (ResponsesInbound.Custom);
//   - every other tool type is a built-in tool no chat backend runs
//     (web_search, file_search, code_interpreter, computer_use*, mcp,
//     image_generation, local_shell, tool_search, …): dropped, its type
//     recorded once in ResponsesInbound.DroppedTools, never a 400;
//   - tool_choice: "auto", "none", "required" as they are; a function
//     or custom tool by name (and namespace) → that hub function;
//     allowed_tools → the hub's allowed_tools with the same mode, its
//     built-in tools left out ("none" when none is left); a built-in
//     tool by type → "auto" (the tool is not offered). With no tool
//     left, tool_choice and parallel_tool_calls are dropped;
//   - refused with a 400: a tool without a type or name, parameters
//     that are not an object, two tools under one hub name, a
//     tool_choice naming a tool that is not offered.

// responsesNamespaceSeparator joins a namespace's name and a function's
// name into the function's hub name.
const responsesNamespaceSeparator = "__"

// responsesNameChars are the characters of an OpenAI function name
// (^[a-zA-Z0-9_-]{1,64}$); responsesNameLimit is its length limit.
const (
	responsesNameChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"
	responsesNameLimit = 64
)

// responsesGrammarLimit caps the bytes of a custom tool's grammar sent
// in its function's description.
const responsesGrammarLimit = 4096

// responsesInTools converts the tools.
func responsesInTools(raw json.RawMessage, st *responsesInState) *apierr.Error {
	if isJSONNull(raw) {
		return nil
	}
	tools, e := readArray(raw, "tools")
	if e != nil {
		return e
	}
	for i := 0; i < len(tools); i++ {
		path := "tools[" + strconv.Itoa(i) + "]"
		kind, e := responsesInToolKind(tools[i], path)
		if e != nil {
			return e
		}
		switch kind {
		case "function", "custom":
			e = responsesInFunctionTool(tools[i], path, "", "", st)
		case "namespace":
			e = responsesInNamespaceTool(tools[i], path, st)
		default:
			responsesInDropTool(kind, st.in)
		}
		if e != nil {
			return e
		}
	}
	return nil
}

// responsesInToolKind reads a tool definition's type.
func responsesInToolKind(raw json.RawMessage, path string) (string, *apierr.Error) {
	var t responsesInToolType
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &t) != nil {
		return "", errInvalidField(path, "an object")
	}
	kind, e := readString(t.Type, path+".type")
	if e != nil || kind == "" {
		return "", errInvalidField(path+".type", "a non-empty string")
	}
	return kind, nil
}

// responsesInDropTool records a dropped built-in tool's type, once.
func responsesInDropTool(kind string, in *ResponsesInbound) {
	for i := 0; i < len(in.DroppedTools); i++ {
		if in.DroppedTools[i] == kind {
			return
		}
	}
	in.DroppedTools = append(in.DroppedTools, kind)
}

// responsesInNamespaceTool converts a namespace tool's functions.
func responsesInNamespaceTool(raw json.RawMessage, path string, st *responsesInState) *apierr.Error {
	var ns responsesInTool
	if err := json.Unmarshal(raw, &ns); err != nil {
		return anthropicInTypeError(path, err)
	}
	if ns.Name == "" {
		return errInvalidField(path+".name", "a non-empty string")
	}
	if isJSONNull(ns.Tools) {
		return nil
	}
	children, e := readArray(ns.Tools, path+".tools")
	if e != nil {
		return e
	}
	for j := 0; j < len(children); j++ {
		child := path + ".tools[" + strconv.Itoa(j) + "]"
		kind, e := responsesInToolKind(children[j], child)
		if e != nil {
			return e
		}
		if kind != "function" && kind != "custom" {
			responsesInDropTool(kind, st.in)
			continue
		}
		if e := responsesInFunctionTool(children[j], child, ns.Name, ns.Description, st); e != nil {
			return e
		}
	}
	return nil
}

// responsesInFunctionTool converts a function or custom tool, of
// namespace (with its description) when namespace is set.
func responsesInFunctionTool(raw json.RawMessage, path, namespace, nsDescription string, st *responsesInState) *apierr.Error {
	var t responsesInTool
	if err := json.Unmarshal(raw, &t); err != nil {
		return anthropicInTypeError(path, err)
	}
	if t.Name == "" {
		return errInvalidField(path+".name", "a non-empty string")
	}
	name := t.Name
	if namespace != "" {
		name = responsesFlatName(namespace, t.Name)
	}
	if prev, taken := st.names[name]; taken {
		return errInvalidField(path+".name", "unique: the function name \""+name+"\" is already used by "+prev)
	}
	st.names[name] = path
	fn := responsesHubFunction{Name: name, Description: t.Description}
	if t.Type == "custom" {
		fn.Description = responsesCustomDescription(t.Description, t.Format)
		fn.Parameters = json.RawMessage(responsesHubCustomParameters)
		st.in.Custom[name] = true
	} else {
		fn.Parameters, fn.Strict = t.Parameters, t.Strict
		if isJSONNull(fn.Parameters) {
			fn.Parameters = json.RawMessage(anthropicInDefaultSchema)
		} else if fn.Parameters[0] != '{' {
			return errInvalidField(path+".parameters", "an object")
		}
	}
	if namespace != "" {
		if nsDescription != "" {
			fn.Description = strings.TrimSpace(nsDescription + "\n\n" + fn.Description)
		}
		st.in.Namespaces[name] = namespace
		st.in.Functions[name] = t.Name
		st.qualified[namespace+"\x00"+t.Name] = name
	}
	st.hub.Tools = append(st.hub.Tools, responsesHubTool{Type: "function", Function: fn})
	return nil
}

// responsesFlatName is the hub name of function name of namespace (see
// the file comment), made a valid OpenAI function name
// (responsesFunctionName).
func responsesFlatName(namespace, name string) string {
	sep := responsesNamespaceSeparator
	if strings.HasSuffix(namespace, "_") || strings.HasPrefix(name, "_") {
		sep = ""
	}
	return responsesFunctionName(namespace + sep + name)
}

// responsesFunctionName is name when it is a valid OpenAI function name;
// else its invalid characters become "_" and it ends with "_" and 8 hex
// digits of its SHA-256, within 64 characters, so that different names
// stay different.
func responsesFunctionName(name string) string {
	if name != "" && len(name) <= responsesNameLimit && strings.Trim(name, responsesNameChars) == "" {
		return name
	}
	clean := strings.Map(responsesNameRune, name)
	if n := responsesNameLimit - 9; len(clean) > n {
		clean = clean[:n]
	}
	sum := sha256.Sum256([]byte(name))
	return clean + "_" + hex.EncodeToString(sum[:4])
}

// responsesNameRune keeps a function name's valid characters and turns
// any other into "_".
func responsesNameRune(r rune) rune {
	if strings.ContainsRune(responsesNameChars, r) {
		return r
	}
	return '_'
}

// responsesCustomDescription is the description of a custom tool's
// function: the tool's own, how to pass the input, and its grammar.
func responsesCustomDescription(description string, format *responsesInCustomFormat) string {
	var sb strings.Builder
	if description != "" {
		sb.WriteString(description)
		sb.WriteString("\n\n")
	}
	sb.WriteString(`This tool takes free-form text, not JSON: pass the raw text, exactly as the tool expects it, as the one string argument "input".`)
	if format == nil || format.Type != "grammar" || format.Definition == "" {
		return sb.String()
	}
	if format.Syntax == "regex" {
		sb.WriteString(" The input must match this regular expression:\n")
	} else {
		syntax := format.Syntax
		if syntax == "" {
			syntax = "lark"
		}
		sb.WriteString(" The input must follow this " + syntax + " grammar:\n")
	}
	definition := format.Definition
	if len(definition) > responsesGrammarLimit {
		definition = strings.ToValidUTF8(definition[:responsesGrammarLimit], "") + "\n[grammar truncated]"
	}
	sb.WriteString(definition)
	return sb.String()
}

// responsesInToolChoice maps tool_choice and parallel_tool_calls, once
// the tools are converted.
func responsesInToolChoice(raw, parallel json.RawMessage, st *responsesInState) *apierr.Error {
	var parallelCalls *bool
	if !isJSONNull(parallel) {
		b, e := readBool(parallel, "parallel_tool_calls")
		if e != nil {
			return e
		}
		parallelCalls = &b
	}
	var choice json.RawMessage
	if !isJSONNull(raw) {
		var e *apierr.Error
		choice, e = responsesInToolChoiceValue(raw, st)
		if e != nil {
			return e
		}
	}
	if len(st.hub.Tools) > 0 {
		st.hub.ToolChoice, st.hub.ParallelToolCalls = choice, parallelCalls
	}
	return nil
}

// responsesInToolChoiceValue is the hub tool_choice for a non-null
// tool_choice.
func responsesInToolChoiceValue(raw json.RawMessage, st *responsesInState) (json.RawMessage, *apierr.Error) {
	if raw[0] == '"' {
		switch jsonStringValue(raw) {
		case "auto", "none", "required":
			return raw, nil
		}
		return nil, errInvalidField("tool_choice", `"auto", "none", "required" or an object`)
	}
	var c responsesInChoice
	if raw[0] != '{' {
		return nil, errInvalidField("tool_choice", `"auto", "none", "required" or an object`)
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, anthropicInTypeError("tool_choice", err)
	}
	switch c.Type {
	case "function", "custom":
		named, e := responsesInNamedChoice(c.Namespace, c.Name, "tool_choice", st)
		if e != nil {
			return nil, e
		}
		return json.RawMessage(encodeJSON(&named)), nil
	case "allowed_tools":
		return responsesInAllowedTools(&c, st)
	case "":
		return nil, errInvalidField("tool_choice.type", "a non-empty string")
	}
	return json.RawMessage(`"auto"`), nil
}

// responsesInNamedChoice is the hub choice of one offered function or
// custom tool.
func responsesInNamedChoice(namespace, name, path string, st *responsesInState) (hubRequestNamedChoice, *apierr.Error) {
	if name == "" {
		return hubRequestNamedChoice{}, errInvalidField(path+".name", "a non-empty string")
	}
	hubName := responsesInCallName(namespace, name, st)
	if _, ok := st.names[hubName]; !ok {
		return hubRequestNamedChoice{}, errInvalidField(path+".name", "the name of a function or custom tool in \"tools\"")
	}
	return hubRequestNamedChoice{Type: "function", Function: hubRequestNamed{Name: hubName}}, nil
}

// responsesInAllowedTools maps an allowed_tools choice.
func responsesInAllowedTools(c *responsesInChoice, st *responsesInState) (json.RawMessage, *apierr.Error) {
	mode := c.Mode
	if mode == "" {
		mode = "auto"
	}
	if mode != "auto" && mode != "required" {
		return nil, errInvalidField("tool_choice.mode", `"auto" or "required"`)
	}
	group := responsesHubAllowedGroup{Mode: mode, Tools: []hubRequestNamedChoice{}}
	for i := 0; i < len(c.Tools); i++ {
		t := &c.Tools[i]
		if t.Type != "function" && t.Type != "custom" {
			continue
		}
		named, e := responsesInNamedChoice(t.Namespace, t.Name, "tool_choice.tools["+strconv.Itoa(i)+"]", st)
		if e != nil {
			return nil, e
		}
		group.Tools = append(group.Tools, named)
	}
	if len(group.Tools) == 0 {
		return json.RawMessage(`"none"`), nil
	}
	choice := responsesHubAllowedTools{Type: "allowed_tools", AllowedTools: group}
	return json.RawMessage(encodeJSON(&choice)), nil
}
