package gateway

import (
	"encoding/json"
	"strconv"
)

// OpenAI chat request → Gemini generateContent request.

// geminiChatRequest translates an OpenAI chat request into a Gemini
// generateContent request body. stream reports the client's "stream".
//
// The exported-shape functions only delegate: under Yaegi a named result
// assigned in a function body can keep its value into the next call, so
// the bodies have unnamed results.
func geminiChatRequest(body []byte) (out []byte, stream bool, e *apiError) {
	return geminiBuildChatRequest(body)
}

func geminiBuildChatRequest(body []byte) ([]byte, bool, *apiError) {
	top, te := decodeRequestObject(body)
	if te != nil {
		return nil, false, te
	}
	isStream := false
	if raw := top["stream"]; !isJSONNull(raw) {
		b, be := readBool(raw, "stream")
		if be != nil {
			return nil, false, be
		}
		isStream = b
	}
	if ue := geminiRejectUnsupported(top); ue != nil {
		return nil, false, ue
	}

	req := geminiWireRequest{}
	gen := &geminiWireGenerationConfig{}
	if ge := geminiGenerationConfig(top, gen, isStream); ge != nil {
		return nil, false, ge
	}

	decls, de := geminiFunctionDeclarations(top["tools"])
	if de != nil {
		return nil, false, de
	}
	if raw := top["parallel_tool_calls"]; !isJSONNull(raw) {
		ptc, pe := readBool(raw, "parallel_tool_calls")
		if pe != nil {
			return nil, false, pe
		}
		if !ptc && len(decls) > 0 {
			return nil, false, geminiUnsupported(`"parallel_tool_calls": false is not supported by Gemini, which may call several functions in one turn`)
		}
	}
	cfg, kept, ce := geminiToolChoice(top["tool_choice"], decls)
	if ce != nil {
		return nil, false, ce
	}
	if len(kept) > 0 {
		req.Tools = []geminiWireTool{{FunctionDeclarations: kept}}
	}
	req.ToolConfig = cfg

	sys, contents, me := geminiMessages(top["messages"])
	if me != nil {
		return nil, false, me
	}
	req.SystemInstruction = sys
	req.Contents = contents
	if string(encodeJSON(gen)) != "{}" {
		req.GenerationConfig = gen
	}
	return encodeJSON(req), isStream, nil
}

// geminiRejectUnsupported refuses the OpenAI fields Gemini cannot express.
func geminiRejectUnsupported(top map[string]json.RawMessage) *apiError {
	if raw := top["logit_bias"]; isJSONTruthy(raw) {
		return geminiUnsupported(`"logit_bias" is not supported by Gemini`)
	}
	if raw := top["logprobs"]; !isJSONNull(raw) {
		lp, e := readBool(raw, "logprobs")
		if e != nil {
			return e
		}
		if lp {
			return geminiUnsupported(`"logprobs" is not supported for Gemini models by this gateway`)
		}
	}
	if raw := top["top_logprobs"]; isJSONTruthy(raw) {
		return geminiUnsupported(`"top_logprobs" is not supported for Gemini models by this gateway`)
	}
	if raw := top["audio"]; !isJSONNull(raw) {
		return geminiUnsupported(`"audio" output is not supported for Gemini models`)
	}
	if raw := top["modalities"]; !isJSONNull(raw) {
		mods, ok := parseJSONArray(raw)
		if !ok {
			return errInvalidRequest(`"modalities" must be an array of strings`)
		}
		for i := 0; i < len(mods); i++ {
			m, e := readString(mods[i], "modalities")
			if e != nil {
				return e
			}
			if m != "text" {
				return geminiUnsupported(`"modalities" may only contain "text" for Gemini models`)
			}
		}
	}
	if raw := top["web_search_options"]; !isJSONNull(raw) {
		return geminiUnsupported(`"web_search_options" is not supported for Gemini models`)
	}
	if raw := top["functions"]; !isJSONNull(raw) {
		return geminiUnsupported(`"functions" is deprecated and not supported for Gemini models; use "tools"`)
	}
	if raw := top["function_call"]; !isJSONNull(raw) {
		return geminiUnsupported(`"function_call" is deprecated and not supported for Gemini models; use "tool_choice"`)
	}
	if raw := top["verbosity"]; !isJSONNull(raw) {
		v, e := readString(raw, "verbosity")
		if e != nil {
			return e
		}
		if v != "medium" {
			return geminiUnsupported(`"verbosity" is not supported for Gemini models`)
		}
	}
	return nil
}

// geminiGenerationConfig fills gen.
func geminiGenerationConfig(top map[string]json.RawMessage, gen *geminiWireGenerationConfig, stream bool) *apiError {
	if raw := top["temperature"]; !isJSONNull(raw) {
		v, e := readNumberText(raw, "temperature")
		if e != nil {
			return e
		}
		gen.Temperature = v
	}
	if raw := top["top_p"]; !isJSONNull(raw) {
		v, e := readNumberText(raw, "top_p")
		if e != nil {
			return e
		}
		gen.TopP = v
	}
	maxName := "max_completion_tokens"
	maxRaw := top[maxName]
	if isJSONNull(maxRaw) {
		maxName = "max_tokens"
		maxRaw = top[maxName]
	}
	if !isJSONNull(maxRaw) {
		n, e := readInteger(maxRaw, maxName)
		if e != nil {
			return e
		}
		if n < 1 {
			return errInvalidRequest(`"` + maxName + `" must be at least 1`)
		}
		gen.MaxOutputTokens = n
	}
	if raw := top["stop"]; !isJSONNull(raw) {
		if raw[0] == '"' {
			s, e := readString(raw, "stop")
			if e != nil {
				return e
			}
			if s != "" {
				gen.StopSequences = []string{s}
			}
		} else {
			arr, ok := parseJSONArray(raw)
			if !ok {
				return errInvalidRequest(`"stop" must be a string or an array of strings`)
			}
			for i := 0; i < len(arr); i++ {
				s, e := readString(arr[i], "stop")
				if e != nil {
					return e
				}
				if s != "" {
					gen.StopSequences = append(gen.StopSequences, s)
				}
			}
		}
	}
	if raw := top["n"]; !isJSONNull(raw) {
		n, e := readInteger(raw, "n")
		if e != nil {
			return e
		}
		if n < 1 {
			return errInvalidRequest(`"n" must be at least 1`)
		}
		if n > 1 && stream {
			return geminiUnsupported(`"n" greater than 1 is not supported with "stream" for Gemini models`)
		}
		gen.CandidateCount = n
	}
	if raw := top["presence_penalty"]; !isJSONNull(raw) {
		v, e := readNumberText(raw, "presence_penalty")
		if e != nil {
			return e
		}
		if isJSONTruthy(v) {
			gen.PresencePenalty = v
		}
	}
	if raw := top["frequency_penalty"]; !isJSONNull(raw) {
		v, e := readNumberText(raw, "frequency_penalty")
		if e != nil {
			return e
		}
		if isJSONTruthy(v) {
			gen.FrequencyPenalty = v
		}
	}
	if raw := top["seed"]; !isJSONNull(raw) {
		n, e := readInteger(raw, "seed")
		if e != nil {
			return e
		}
		gen.Seed = json.RawMessage(strconv.FormatInt(n, 10))
	}
	if raw := top["reasoning_effort"]; !isJSONNull(raw) {
		effort, e := readString(raw, "reasoning_effort")
		if e != nil {
			return e
		}
		budget := ""
		switch effort {
		case "none":
			budget = "0"
		case "minimal", "low":
			budget = "1024"
		case "medium":
			budget = "8192"
		case "high", "xhigh", "max":
			budget = "24576"
		default:
			return errBadRequest("unsupported_value", `"reasoning_effort" value "`+effort+`" is not supported for Gemini models`)
		}
		gen.ThinkingConfig = &geminiWireThinkingConfig{ThinkingBudget: json.RawMessage(budget)}
	}
	if raw := top["response_format"]; !isJSONNull(raw) {
		rf, ok := parseJSONObject(raw)
		if !ok {
			return errInvalidRequest(`"response_format" must be an object`)
		}
		typ, e := readString(rf["type"], "response_format.type")
		if e != nil {
			return e
		}
		switch typ {
		case "text":
		case "json_object":
			gen.ResponseMimeType = "application/json"
		case "json_schema":
			gen.ResponseMimeType = "application/json"
			js, ok := parseJSONObject(rf["json_schema"])
			if !ok {
				return errInvalidRequest(`"response_format.json_schema" must be an object`)
			}
			schema := js["schema"]
			if !isJSONNull(schema) {
				if schema[0] != '{' {
					return errInvalidRequest(`"response_format.json_schema.schema" must be a JSON object`)
				}
				if conv, ok := geminiConvertSchema(schema, 0, true); ok {
					gen.ResponseSchema = conv
				} else {
					gen.ResponseJSONSchema = schema
				}
			}
		default:
			return errBadRequest("unsupported_value", `"response_format.type" value "`+typ+`" is not supported`)
		}
	}
	return nil
}

// geminiFunctionDeclarations converts tools[] into function declarations.
func geminiFunctionDeclarations(raw json.RawMessage) ([]geminiWireFunctionDeclaration, *apiError) {
	if isJSONNull(raw) {
		return nil, nil
	}
	arr, ok := parseJSONArray(raw)
	if !ok {
		return nil, errInvalidRequest(`"tools" must be an array`)
	}
	var decls []geminiWireFunctionDeclaration
	for i := 0; i < len(arr); i++ {
		where := "tools[" + strconv.Itoa(i) + "]"
		tool, ok := parseJSONObject(arr[i])
		if !ok {
			return nil, errInvalidRequest(`"` + where + `" must be an object`)
		}
		if t := tool["type"]; !isJSONNull(t) {
			typ, e := readString(t, where+".type")
			if e != nil {
				return nil, e
			}
			if typ != "function" {
				return nil, geminiUnsupported(`"` + where + `.type" "` + typ + `" is not supported for Gemini models (only "function")`)
			}
		}
		fn, ok := parseJSONObject(tool["function"])
		if !ok {
			return nil, errInvalidRequest(`"` + where + `.function" must be an object`)
		}
		name, e := readString(fn["name"], where+".function.name")
		if e != nil {
			return nil, e
		}
		if name == "" {
			return nil, errInvalidRequest(`"` + where + `.function.name" must not be empty`)
		}
		d := geminiWireFunctionDeclaration{Name: name}
		if raw := fn["description"]; !isJSONNull(raw) {
			desc, de := readString(raw, where+".function.description")
			if de != nil {
				return nil, de
			}
			d.Description = desc
		}
		if params := fn["parameters"]; !isJSONNull(params) {
			if params[0] != '{' {
				return nil, errInvalidRequest(`"` + where + `.function.parameters" must be a JSON object`)
			}
			if !geminiEmptyObjectSchema(params) {
				if conv, ok := geminiConvertSchema(params, 0, false); ok {
					d.Parameters = conv
				} else {
					d.ParametersJSONSchema = params
				}
			}
		}
		decls = append(decls, d)
	}
	return decls, nil
}

// geminiToolChoice maps tool_choice, possibly narrowing the declarations.
func geminiToolChoice(raw json.RawMessage, decls []geminiWireFunctionDeclaration) (*geminiWireToolConfig, []geminiWireFunctionDeclaration, *apiError) {
	if isJSONNull(raw) {
		return nil, decls, nil
	}
	mode := ""
	var names []string
	narrow := false
	if raw[0] == '"' {
		s, e := readString(raw, "tool_choice")
		if e != nil {
			return nil, nil, e
		}
		switch s {
		case "auto":
			mode = "AUTO"
		case "none":
			mode = "NONE"
		case "required":
			mode = "ANY"
		default:
			return nil, nil, errInvalidRequest(`"tool_choice" must be "auto", "none", "required" or an object`)
		}
	} else {
		obj, ok := parseJSONObject(raw)
		if !ok {
			return nil, nil, errInvalidRequest(`"tool_choice" must be a string or an object`)
		}
		typ, e := readString(obj["type"], "tool_choice.type")
		if e != nil {
			return nil, nil, e
		}
		switch typ {
		case "function":
			fn, ok := parseJSONObject(obj["function"])
			if !ok {
				return nil, nil, errInvalidRequest(`"tool_choice.function" must be an object`)
			}
			name, e := readString(fn["name"], "tool_choice.function.name")
			if e != nil {
				return nil, nil, e
			}
			mode = "ANY"
			names = []string{name}
		case "allowed_tools":
			at, ok := parseJSONObject(obj["allowed_tools"])
			if !ok {
				return nil, nil, errInvalidRequest(`"tool_choice.allowed_tools" must be an object`)
			}
			m, e := readString(at["mode"], "tool_choice.allowed_tools.mode")
			if e != nil {
				return nil, nil, e
			}
			switch m {
			case "auto":
				mode = "AUTO"
				narrow = true
			case "required":
				mode = "ANY"
			default:
				return nil, nil, errInvalidRequest(`"tool_choice.allowed_tools.mode" must be "auto" or "required"`)
			}
			list, ok := parseJSONArray(at["tools"])
			if !ok || len(list) == 0 {
				return nil, nil, errInvalidRequest(`"tool_choice.allowed_tools.tools" must be a non-empty array`)
			}
			for i := 0; i < len(list); i++ {
				where := "tool_choice.allowed_tools.tools[" + strconv.Itoa(i) + "]"
				t, ok := parseJSONObject(list[i])
				if !ok {
					return nil, nil, errInvalidRequest(`"` + where + `" must be an object`)
				}
				fn, ok := parseJSONObject(t["function"])
				if !ok {
					return nil, nil, geminiUnsupported(`"` + where + `" must be a function tool`)
				}
				name, e := readString(fn["name"], where+".function.name")
				if e != nil {
					return nil, nil, e
				}
				names = append(names, name)
			}
		default:
			return nil, nil, geminiUnsupported(`"tool_choice.type" "` + typ + `" is not supported for Gemini models`)
		}
	}
	if len(decls) == 0 {
		if mode == "AUTO" || mode == "NONE" {
			return nil, decls, nil
		}
		return nil, nil, errInvalidRequest(`"tool_choice" requires "tools"`)
	}
	for i := 0; i < len(names); i++ {
		found := false
		for j := 0; j < len(decls); j++ {
			if decls[j].Name == names[i] {
				found = true
				break
			}
		}
		if !found {
			return nil, nil, errInvalidRequest(`"tool_choice" names the function "` + names[i] + `", which is not in "tools"`)
		}
	}
	cfg := &geminiWireToolConfig{FunctionCallingConfig: geminiWireFunctionCallingConfig{Mode: mode}}
	if narrow {
		var kept []geminiWireFunctionDeclaration
		for j := 0; j < len(decls); j++ {
			for i := 0; i < len(names); i++ {
				if decls[j].Name == names[i] {
					kept = append(kept, decls[j])
					break
				}
			}
		}
		return cfg, kept, nil
	}
	cfg.FunctionCallingConfig.AllowedFunctionNames = names
	return cfg, decls, nil
}

// geminiMessages converts messages[] into systemInstruction and contents.
func geminiMessages(raw json.RawMessage) (*geminiWireContent, []geminiWireContent, *apiError) {
	msgs, ok := parseJSONArray(raw)
	if !ok || len(msgs) == 0 {
		return nil, nil, errInvalidRequest(`"messages" must be a non-empty array`)
	}
	var sys *geminiWireContent
	var contents []geminiWireContent
	add := func(role string, parts []geminiWirePart) {
		if len(parts) == 0 {
			return
		}
		n := len(contents)
		if n > 0 && contents[n-1].Role == role {
			contents[n-1].Parts = append(contents[n-1].Parts, parts...)
			return
		}
		contents = append(contents, geminiWireContent{Role: role, Parts: parts})
	}
	callNames := map[string]string{}
	for i := 0; i < len(msgs); i++ {
		where := "messages[" + strconv.Itoa(i) + "]"
		m, ok := parseJSONObject(msgs[i])
		if !ok {
			return nil, nil, errInvalidRequest(`"` + where + `" must be an object`)
		}
		role, e := readString(m["role"], where+".role")
		if e != nil {
			return nil, nil, e
		}
		switch role {
		case "system", "developer":
			if isJSONNull(m["content"]) {
				return nil, nil, errInvalidRequest(`"` + where + `.content" is required`)
			}
			parts, e := geminiContentParts(m["content"], where, "system")
			if e != nil {
				return nil, nil, e
			}
			if len(parts) > 0 {
				if sys == nil {
					sys = &geminiWireContent{}
				}
				sys.Parts = append(sys.Parts, parts...)
			}
		case "user":
			if isJSONNull(m["content"]) {
				return nil, nil, errInvalidRequest(`"` + where + `.content" is required`)
			}
			parts, e := geminiContentParts(m["content"], where, "user")
			if e != nil {
				return nil, nil, e
			}
			add("user", parts)
		case "assistant":
			parts, e := geminiContentParts(m["content"], where, "assistant")
			if e != nil {
				return nil, nil, e
			}
			calls, e := geminiFunctionCallParts(m["tool_calls"], where, callNames)
			if e != nil {
				return nil, nil, e
			}
			if !isJSONNull(m["function_call"]) {
				return nil, nil, geminiUnsupported(`"` + where + `.function_call" is deprecated and not supported for Gemini models; use "tool_calls"`)
			}
			add("model", append(parts, calls...))
		case "tool":
			id, e := readString(m["tool_call_id"], where+".tool_call_id")
			if e != nil {
				return nil, nil, e
			}
			name, found := callNames[id]
			if !found {
				return nil, nil, errInvalidRequest(`"` + where + `.tool_call_id" "` + id + `" does not match a tool call of an earlier assistant message`)
			}
			output, e := geminiToolOutput(m["content"], where)
			if e != nil {
				return nil, nil, e
			}
			add("user", []geminiWirePart{{FunctionResponse: &geminiWireFunctionResponse{Name: name, Response: geminiWireFunctionOutput{Output: output}}}})
		case "function":
			return nil, nil, geminiUnsupported(`"` + where + `.role" "function" is deprecated and not supported for Gemini models; use "tool"`)
		default:
			return nil, nil, errInvalidRequest(`"` + where + `.role" "` + role + `" is not a valid role`)
		}
	}
	if len(contents) == 0 {
		return nil, nil, errInvalidRequest(`"messages" must contain at least one user or assistant message with content`)
	}
	return sys, contents, nil
}
