package translate

import (
	"encoding/json"
	"strconv"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// OpenAI tools and tool_choice → Gemini functionDeclarations and
// toolConfig.

// geminiFunctionDeclarations converts tools[] into function
// declarations.
func geminiFunctionDeclarations(raw json.RawMessage) ([]geminiWireFunctionDeclaration, *apierr.Error) {
	if isJSONNull(raw) {
		return nil, nil
	}
	arr, ok := parseJSONArray(raw)
	if !ok {
		return nil, errInvalidField("tools", "an array")
	}
	var decls []geminiWireFunctionDeclaration
	for i := 0; i < len(arr); i++ {
		d, e := geminiFunctionDeclaration(arr[i], "tools["+strconv.Itoa(i)+"]")
		if e != nil {
			return nil, e
		}
		decls = append(decls, d)
	}
	return decls, nil
}

// geminiFunctionDeclaration converts one function tool. Its parameters
// go as Gemini's schema subset when they fit it, else verbatim as a JSON
// Schema; an object schema without properties is no parameters.
func geminiFunctionDeclaration(raw json.RawMessage, where string) (geminiWireFunctionDeclaration, *apierr.Error) {
	tool, ok := parseJSONObject(raw)
	if !ok {
		return geminiWireFunctionDeclaration{}, errInvalidField(where, "an object")
	}
	if t := tool["type"]; !isJSONNull(t) {
		typ, e := readString(t, where+".type")
		if e != nil {
			return geminiWireFunctionDeclaration{}, e
		}
		if typ != "function" {
			return geminiWireFunctionDeclaration{}, geminiUnsupported(`"` + where + `.type" "` + typ + `" is not supported for Gemini models (only "function")`)
		}
	}
	fn, ok := parseJSONObject(tool["function"])
	if !ok {
		return geminiWireFunctionDeclaration{}, errInvalidField(where+".function", "an object")
	}
	name, e := readString(fn["name"], where+".function.name")
	if e != nil {
		return geminiWireFunctionDeclaration{}, e
	}
	if name == "" {
		return geminiWireFunctionDeclaration{}, errInvalidRequest(`"` + where + `.function.name" must not be empty`)
	}
	d := geminiWireFunctionDeclaration{Name: name}
	if raw := fn["description"]; !isJSONNull(raw) {
		desc, e := readString(raw, where+".function.description")
		if e != nil {
			return geminiWireFunctionDeclaration{}, e
		}
		d.Description = desc
	}
	params := fn["parameters"]
	if isJSONNull(params) {
		return d, nil
	}
	if params[0] != '{' {
		return geminiWireFunctionDeclaration{}, errInvalidField(where+".function.parameters", "a JSON object")
	}
	if geminiEmptyObjectSchema(params) {
		return d, nil
	}
	if conv, ok := geminiConvertSchema(params, 0, false); ok {
		d.Parameters = conv
	} else {
		d.ParametersJSONSchema = params
	}
	return d, nil
}

// geminiToolChoiceSpec is a tool_choice read from the request: the
// function calling mode (AUTO, NONE or ANY), the functions it names, and
// whether the declarations are narrowed to those (allowed_tools in auto
// mode) instead of listed as allowedFunctionNames.
type geminiToolChoiceSpec struct {
	mode   string
	names  []string
	narrow bool
}

// geminiToolChoice maps tool_choice to a toolConfig and returns the
// declarations to send. A choice naming an undeclared function is a
// 400, and so is one that requires a call when there are no tools.
func geminiToolChoice(raw json.RawMessage, decls []geminiWireFunctionDeclaration) (*geminiWireToolConfig, []geminiWireFunctionDeclaration, *apierr.Error) {
	if isJSONNull(raw) {
		return nil, decls, nil
	}
	choice, e := geminiReadToolChoice(raw)
	if e != nil {
		return nil, nil, e
	}
	if len(decls) == 0 {
		if choice.mode == "AUTO" || choice.mode == "NONE" {
			return nil, decls, nil
		}
		return nil, nil, errInvalidRequest(`"tool_choice" requires "tools"`)
	}
	for i := 0; i < len(choice.names); i++ {
		if !geminiDeclares(decls, choice.names[i]) {
			return nil, nil, errInvalidRequest(`"tool_choice" names the function "` + choice.names[i] + `", which is not in "tools"`)
		}
	}
	cfg := &geminiWireToolConfig{FunctionCallingConfig: geminiWireFunctionCallingConfig{Mode: choice.mode}}
	if choice.narrow {
		return cfg, geminiNarrowDeclarations(decls, choice.names), nil
	}
	cfg.FunctionCallingConfig.AllowedFunctionNames = choice.names
	return cfg, decls, nil
}

// geminiReadToolChoice reads tool_choice: "auto", "none", "required", a
// named function, or allowed_tools.
func geminiReadToolChoice(raw json.RawMessage) (geminiToolChoiceSpec, *apierr.Error) {
	if raw[0] == '"' {
		s, e := readString(raw, "tool_choice")
		if e != nil {
			return geminiToolChoiceSpec{}, e
		}
		switch s {
		case "auto":
			return geminiToolChoiceSpec{mode: "AUTO"}, nil
		case "none":
			return geminiToolChoiceSpec{mode: "NONE"}, nil
		case "required":
			return geminiToolChoiceSpec{mode: "ANY"}, nil
		}
		return geminiToolChoiceSpec{}, errInvalidRequest(`"tool_choice" must be "auto", "none", "required" or an object`)
	}
	obj, ok := parseJSONObject(raw)
	if !ok {
		return geminiToolChoiceSpec{}, errInvalidField("tool_choice", "a string or an object")
	}
	typ, e := readString(obj["type"], "tool_choice.type")
	if e != nil {
		return geminiToolChoiceSpec{}, e
	}
	switch typ {
	case "function":
		fn, ok := parseJSONObject(obj["function"])
		if !ok {
			return geminiToolChoiceSpec{}, errInvalidField("tool_choice.function", "an object")
		}
		name, e := readString(fn["name"], "tool_choice.function.name")
		if e != nil {
			return geminiToolChoiceSpec{}, e
		}
		return geminiToolChoiceSpec{mode: "ANY", names: []string{name}}, nil
	case "allowed_tools":
		return geminiAllowedTools(obj["allowed_tools"])
	}
	return geminiToolChoiceSpec{}, geminiUnsupported(`"tool_choice.type" "` + typ + `" is not supported for Gemini models`)
}

// geminiAllowedTools reads tool_choice.allowed_tools: mode required
// allows only the listed functions (ANY + their names), mode auto sends
// only their declarations (AUTO).
func geminiAllowedTools(raw json.RawMessage) (geminiToolChoiceSpec, *apierr.Error) {
	at, ok := parseJSONObject(raw)
	if !ok {
		return geminiToolChoiceSpec{}, errInvalidField("tool_choice.allowed_tools", "an object")
	}
	mode, e := readString(at["mode"], "tool_choice.allowed_tools.mode")
	if e != nil {
		return geminiToolChoiceSpec{}, e
	}
	var spec geminiToolChoiceSpec
	switch mode {
	case "auto":
		spec = geminiToolChoiceSpec{mode: "AUTO", narrow: true}
	case "required":
		spec = geminiToolChoiceSpec{mode: "ANY"}
	default:
		return geminiToolChoiceSpec{}, errInvalidRequest(`"tool_choice.allowed_tools.mode" must be "auto" or "required"`)
	}
	list, ok := parseJSONArray(at["tools"])
	if !ok || len(list) == 0 {
		return geminiToolChoiceSpec{}, errInvalidField("tool_choice.allowed_tools.tools", "a non-empty array")
	}
	for i := 0; i < len(list); i++ {
		where := "tool_choice.allowed_tools.tools[" + strconv.Itoa(i) + "]"
		t, ok := parseJSONObject(list[i])
		if !ok {
			return geminiToolChoiceSpec{}, errInvalidField(where, "an object")
		}
		fn, ok := parseJSONObject(t["function"])
		if !ok {
			return geminiToolChoiceSpec{}, geminiUnsupported(`"` + where + `" must be a function tool`)
		}
		name, e := readString(fn["name"], where+".function.name")
		if e != nil {
			return geminiToolChoiceSpec{}, e
		}
		spec.names = append(spec.names, name)
	}
	return spec, nil
}

// geminiDeclares reports whether decls declares the function name.
func geminiDeclares(decls []geminiWireFunctionDeclaration, name string) bool {
	for i := 0; i < len(decls); i++ {
		if decls[i].Name == name {
			return true
		}
	}
	return false
}

// geminiNarrowDeclarations keeps the declarations of the named
// functions, in declaration order.
func geminiNarrowDeclarations(decls []geminiWireFunctionDeclaration, names []string) []geminiWireFunctionDeclaration {
	var kept []geminiWireFunctionDeclaration
	for i := 0; i < len(decls); i++ {
		for j := 0; j < len(names); j++ {
			if decls[i].Name == names[j] {
				kept = append(kept, decls[i])
				break
			}
		}
	}
	return kept
}
