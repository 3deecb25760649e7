package mockupstream

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Request validation: the mock refuses what the real Gemini API refuses
// (unknown fields, bad roles and parts, JSON-Schema-only keywords, unanswered
// function calls, missing Gemini 3 thought signatures).

// camelKey turns a proto field name in snake_case into its JSON name.
func camelKey(k string) string {
	if !strings.Contains(k, "_") {
		return k
	}
	var b strings.Builder
	up := false
	for _, c := range k {
		if c == '_' {
			up = true
			continue
		}
		if up && c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		up = false
		b.WriteRune(c)
	}
	return b.String()
}

// protoObject decodes a JSON object of a proto message, accepting both
// the camelCase and the snake_case field names, and refuses fields not in
// allowed the way the API does ("Unknown name").
func protoObject(raw json.RawMessage, where string, allowed ...string) (map[string]json.RawMessage, string) {
	var in map[string]json.RawMessage
	if err := json.Unmarshal(raw, &in); err != nil || in == nil {
		return nil, "Invalid JSON payload received. Expected an object at '" + where + "'."
	}
	ok := map[string]bool{}
	for _, a := range allowed {
		ok[a] = true
	}
	keys := make([]string, 0, len(in))
	for k := range in {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make(map[string]json.RawMessage, len(in))
	for _, k := range keys {
		c := camelKey(k)
		if !ok[c] {
			at := ""
			if where != "" {
				at = " at '" + where + "'"
			}
			return nil, fmt.Sprintf("Invalid JSON payload received. Unknown name %q%s: Cannot find field.", k, at)
		}
		out[c] = in[k]
	}
	return out, ""
}

// geminiRequest is what the mock reads from a GenerateContentRequest.
type geminiRequest struct {
	functions   []string
	mode        string // functionCallingConfig.mode
	allowed     []string
	lastUser    string
	promptWords int
	maxTokens   int // -1: none
	stops       []string
	turn        []turnMessage // the conversation as ToolTurn sees it
}

var geminiFunctionName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_.:-]{0,127}$`)

var geminiSchemaKeys = []string{
	"type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems", "properties",
	"required", "minProperties", "maxProperties", "minLength", "maxLength", "pattern", "example", "anyOf",
	"propertyOrdering", "default", "items", "minimum", "maximum",
}

// protoValue decodes one field of a request object into v. An absent
// field (nil raw) leaves v as it is; a value of the wrong JSON type is
// refused as the API refuses it: "Invalid value at 'where' (protoType)".
func protoValue(raw json.RawMessage, where, protoType string, v any) string {
	if raw == nil || json.Unmarshal(raw, v) == nil {
		return ""
	}
	return "Invalid value at '" + where + "' (" + protoType + "), " + string(raw)
}

// checkSchema validates an OpenAPI-subset Schema (functionDeclarations
// parameters); JSON-Schema-only keywords such as additionalProperties or
// $schema are refused, as the API does.
func checkSchema(raw json.RawMessage, where string) string {
	m, msg := protoObject(raw, where, geminiSchemaKeys...)
	if msg != "" {
		return msg
	}
	if t, ok := m["type"]; ok {
		var s string
		if msg := protoValue(t, where+".type", "type.googleapis.com/google.ai.generativelanguage.v1beta.Type", &s); msg != "" {
			return msg
		}
		switch strings.ToUpper(s) {
		case "STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL", "TYPE_UNSPECIFIED":
		default:
			return fmt.Sprintf("Invalid value at '%s.type' (type.googleapis.com/google.ai.generativelanguage.v1beta.Type), %s", where, t)
		}
	}
	if props, ok := m["properties"]; ok {
		var pm map[string]json.RawMessage
		if json.Unmarshal(props, &pm) != nil {
			return "Invalid JSON payload received. Expected an object at '" + where + ".properties'."
		}
		names := make([]string, 0, len(pm))
		for k := range pm {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			if msg := checkSchema(pm[k], where+".properties["+k+"].value"); msg != "" {
				return msg
			}
		}
	}
	if items, ok := m["items"]; ok {
		if msg := checkSchema(items, where+".items"); msg != "" {
			return msg
		}
	}
	if any, ok := m["anyOf"]; ok {
		var list []json.RawMessage
		if json.Unmarshal(any, &list) != nil {
			return "Invalid JSON payload received. Expected a list at '" + where + ".any_of'."
		}
		for i, s := range list {
			if msg := checkSchema(s, fmt.Sprintf("%s.any_of[%d]", where, i)); msg != "" {
				return msg
			}
		}
	}
	return ""
}

// contentInfo is what the mock needs of one Content.
type contentInfo struct {
	role, text      string
	calls           int  // functionCall parts
	responses       int  // functionResponse parts
	hasText         bool // at least one text part
	firstCallSigned bool // the first functionCall part carries a thoughtSignature
}

// geminiContent validates a Content and returns what the mock needs.
func geminiContent(raw json.RawMessage, where string, system bool) (info contentInfo, msg string) {
	c, msg := protoObject(raw, where, "role", "parts")
	if msg != "" {
		return info, msg
	}
	if v, ok := c["role"]; ok {
		if msg := protoValue(v, where+".role", "TYPE_STRING", &info.role); msg != "" {
			return info, msg
		}
	}
	if role := info.role; !system && role != "" && role != "user" && role != "model" && role != "function" {
		return info, "Please use a valid role: user, model."
	}
	var parts []json.RawMessage
	if v, ok := c["parts"]; ok {
		if json.Unmarshal(v, &parts) != nil {
			return info, "Invalid JSON payload received. Expected a list at '" + where + ".parts'."
		}
	}
	if len(parts) == 0 {
		return info, "* GenerateContentRequest." + where + ".parts: contents.parts must not be empty."
	}
	var b strings.Builder
	for j, raw := range parts {
		pw := fmt.Sprintf("%s.parts[%d]", where, j)
		part, msg := protoObject(raw, pw, "text", "inlineData", "fileData", "functionCall", "functionResponse",
			"thought", "thoughtSignature", "executableCode", "codeExecutionResult", "videoMetadata", "partMetadata")
		if msg != "" {
			return info, msg
		}
		data := 0
		for _, k := range []string{"text", "inlineData", "fileData", "functionCall", "functionResponse", "executableCode", "codeExecutionResult"} {
			if _, ok := part[k]; ok {
				data++
			}
		}
		if data != 1 {
			return info, "* GenerateContentRequest." + pw + ".data: required oneof field 'data' must have one initialized field"
		}
		if t, ok := part["text"]; ok {
			var s string
			if json.Unmarshal(t, &s) != nil {
				return info, "Invalid value at '" + pw + ".text' (TYPE_STRING)"
			}
			b.WriteString(s)
			b.WriteByte(' ')
			info.hasText = true
		}
		if v, ok := part["inlineData"]; ok {
			blob, msg := protoObject(v, pw+".inline_data", "mimeType", "data")
			if msg != "" {
				return info, msg
			}
			var data string
			if msg := protoValue(blob["data"], pw+".inline_data.data", "TYPE_BYTES", &data); msg != "" {
				return info, msg
			}
			if _, err := base64.StdEncoding.DecodeString(data); err != nil {
				return info, "Invalid value at '" + pw + ".inline_data.data' (TYPE_BYTES), Base64 decoding failed"
			}
		}
		if v, ok := part["functionCall"]; ok {
			fc, msg := protoObject(v, pw+".function_call", "id", "name", "args")
			if msg != "" {
				return info, msg
			}
			if args, ok := fc["args"]; ok && !isJSONObject(args) {
				return info, "Invalid value at '" + pw + ".function_call.args' (type.googleapis.com/google.protobuf.Struct)"
			}
			if info.calls == 0 {
				var sig string
				if msg := protoValue(part["thoughtSignature"], pw+".thought_signature", "TYPE_BYTES", &sig); msg != "" {
					return info, msg
				}
				info.firstCallSigned = sig != ""
			}
			info.calls++
		}
		if v, ok := part["functionResponse"]; ok {
			fr, msg := protoObject(v, pw+".function_response", "id", "name", "response", "willContinue", "scheduling", "parts")
			if msg != "" {
				return info, msg
			}
			var name string
			if msg := protoValue(fr["name"], pw+".function_response.name", "TYPE_STRING", &name); msg != "" {
				return info, msg
			}
			if name == "" {
				return info, "* GenerateContentRequest." + pw + ".function_response.name: Name cannot be empty."
			}
			if !isJSONObject(fr["response"]) {
				return info, "Invalid value at '" + pw + ".function_response.response' (type.googleapis.com/google.protobuf.Struct)"
			}
			info.responses++
		}
	}
	info.text = b.String()
	return info, ""
}

var geminiGenerationConfigKeys = []string{
	"stopSequences", "responseMimeType", "responseSchema", "responseJsonSchema", "responseModalities",
	"candidateCount", "maxOutputTokens", "temperature", "topP", "topK", "seed", "presencePenalty",
	"frequencyPenalty", "responseLogprobs", "logprobs", "enableEnhancedCivicAnswers", "speechConfig",
	"thinkingConfig", "imageConfig", "mediaResolution",
}

// parseGeminiRequest validates a GenerateContentRequest the way the API
// does (unknown fields, roles, parts, schemas) and returns what the mock
// needs, or an error message.
//
// Like the API, it requires every functionResponse turn to answer as many
// calls as the function call turn before it made, and, for gemini-3*
// models, the first functionCall part of every model step of the current
// turn to carry the thoughtSignature the model sent (any non-empty value
// passes, as the API's documented bypass values do).
func parseGeminiRequest(body []byte, model string) (geminiRequest, string) {
	out := geminiRequest{maxTokens: -1}
	top, msg := protoObject(body, "", "model", "contents", "systemInstruction", "tools", "toolConfig",
		"safetySettings", "generationConfig", "cachedContent")
	if msg != "" {
		return out, msg
	}
	var contents []json.RawMessage
	if v, ok := top["contents"]; ok && json.Unmarshal(v, &contents) != nil {
		return out, "Invalid JSON payload received. Expected a list at 'contents'."
	}
	if len(contents) == 0 {
		return out, "* GenerateContentRequest.contents: contents is not specified"
	}
	if v, ok := top["systemInstruction"]; ok {
		info, msg := geminiContent(v, "system_instruction", true)
		if msg != "" {
			return out, msg
		}
		out.promptWords += words(info.text)
	}
	infos := make([]contentInfo, len(contents))
	turnStart := 0 // index of the last user content with text: the current turn
	for i, c := range contents {
		info, msg := geminiContent(c, fmt.Sprintf("contents[%d]", i), false)
		if msg != "" {
			return out, msg
		}
		infos[i] = info
		out.promptWords += words(info.text)
		if info.role == "user" || info.role == "" {
			out.lastUser = info.text
			if info.hasText && info.responses == 0 {
				turnStart = i
			}
		}
		if info.responses > 0 && (i == 0 || infos[i-1].calls != info.responses) {
			return out, "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn."
		}
	}
	if strings.HasPrefix(model, "gemini-3") {
		for i := turnStart; i < len(infos); i++ {
			if infos[i].role == "model" && infos[i].calls > 0 && !infos[i].firstCallSigned {
				return out, fmt.Sprintf("Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, "+
					"and missing thought_signature may lead to degraded model performance. Additional data, function call position %d. "+
					"Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.", i)
			}
		}
	}
	if v, ok := top["tools"]; ok {
		var tools []json.RawMessage
		if json.Unmarshal(v, &tools) != nil {
			return out, "Invalid JSON payload received. Expected a list at 'tools'."
		}
		for i, raw := range tools {
			tw := fmt.Sprintf("tools[%d]", i)
			tool, msg := protoObject(raw, tw, "functionDeclarations", "googleSearch", "googleSearchRetrieval",
				"codeExecution", "urlContext", "computerUse", "fileSearch", "googleMaps")
			if msg != "" {
				return out, msg
			}
			var decls []json.RawMessage
			if fd, ok := tool["functionDeclarations"]; ok && json.Unmarshal(fd, &decls) != nil {
				return out, "Invalid JSON payload received. Expected a list at '" + tw + ".function_declarations'."
			}
			for j, raw := range decls {
				dw := fmt.Sprintf("%s.function_declarations[%d]", tw, j)
				d, msg := protoObject(raw, dw, "name", "description", "parameters", "parametersJsonSchema",
					"response", "responseJsonSchema", "behavior")
				if msg != "" {
					return out, msg
				}
				var name string
				if msg := protoValue(d["name"], dw+".name", "TYPE_STRING", &name); msg != "" {
					return out, msg
				}
				if !geminiFunctionName.MatchString(name) {
					return out, "* GenerateContentRequest." + dw + ".name: Invalid function name. Must start with a letter or an underscore. Must be a-z, A-Z, 0-9, or contain underscores, dots, colons and dashes, with a maximum length of 128."
				}
				_, hasParams := d["parameters"]
				_, hasJSON := d["parametersJsonSchema"]
				if hasParams && hasJSON {
					return out, "* GenerateContentRequest." + dw + ": parameters and parameters_json_schema are mutually exclusive"
				}
				if hasParams {
					if msg := checkSchema(d["parameters"], dw+".parameters"); msg != "" {
						return out, msg
					}
				}
				out.functions = append(out.functions, name)
			}
		}
	}
	if v, ok := top["toolConfig"]; ok {
		tc, msg := protoObject(v, "tool_config", "functionCallingConfig", "retrievalConfig")
		if msg != "" {
			return out, msg
		}
		if fc, ok := tc["functionCallingConfig"]; ok {
			cfg, msg := protoObject(fc, "tool_config.function_calling_config", "mode", "allowedFunctionNames")
			if msg != "" {
				return out, msg
			}
			if msg := protoValue(cfg["mode"], "tool_config.function_calling_config.mode", "type.googleapis.com/google.ai.generativelanguage.v1beta.FunctionCallingConfig.Mode", &out.mode); msg != "" {
				return out, msg
			}
			if msg := protoValue(cfg["allowedFunctionNames"], "tool_config.function_calling_config.allowed_function_names", "TYPE_STRING", &out.allowed); msg != "" {
				return out, msg
			}
			switch out.mode {
			case "", "MODE_UNSPECIFIED", "AUTO", "ANY", "NONE", "VALIDATED":
			default:
				return out, "Invalid value at 'tool_config.function_calling_config.mode' (type.googleapis.com/google.ai.generativelanguage.v1beta.FunctionCallingConfig.Mode), \"" + out.mode + "\""
			}
			for _, n := range out.allowed {
				if !contains(out.functions, n) {
					return out, "* GenerateContentRequest.tool_config.function_calling_config.allowed_function_names: " + n + " is not a declared function"
				}
			}
		}
	}
	if v, ok := top["generationConfig"]; ok {
		gc, msg := protoObject(v, "generation_config", geminiGenerationConfigKeys...)
		if msg != "" {
			return out, msg
		}
		if raw, ok := gc["maxOutputTokens"]; ok {
			if json.Unmarshal(raw, &out.maxTokens) != nil || out.maxTokens < 1 {
				return out, "* GenerateContentRequest.generation_config.max_output_tokens: must be positive"
			}
		}
		if raw, ok := gc["stopSequences"]; ok {
			if json.Unmarshal(raw, &out.stops) != nil || len(out.stops) > 5 {
				return out, "* GenerateContentRequest.generation_config.stop_sequences: at most 5 stop sequences"
			}
		}
		if raw, ok := gc["temperature"]; ok {
			var t float64
			if json.Unmarshal(raw, &t) != nil || t < 0 || t > 2 {
				return out, "* GenerateContentRequest.generation_config.temperature: must be in [0, 2]"
			}
		}
		if raw, ok := gc["candidateCount"]; ok {
			var n int
			if json.Unmarshal(raw, &n) != nil || n < 1 || n > 8 {
				return out, "* GenerateContentRequest.generation_config.candidate_count: must be in [1, 8]"
			}
		}
	}
	return out, ""
}
