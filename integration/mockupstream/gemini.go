package mockupstream

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// DefaultGeminiModels is the Gemini model list served when
// Options.GeminiModels is empty: a chat model, an embedder and Imagen.
var DefaultGeminiModels = []string{"gemini-2.5-flash", "gemini-embedding-001", "imagen-4.0-generate-001"}

// GeminiThoughtsTokens is the thoughtsTokenCount of every generateContent
// reply; the API counts it outside candidatesTokenCount.
const GeminiThoughtsTokens = 2

// GeminiThoughtSignature is the opaque thoughtSignature the mock puts on
// a functionCall part (as Gemini 2.5+ does).
const GeminiThoughtSignature = "bW9jay10aG91Z2h0LXNpZ25hdHVyZQ=="

// GeminiDefaultSampleCount is Imagen's sampleCount when the request has
// none.
const GeminiDefaultSampleCount = 4

func isGemini(r *http.Request) bool {
	return r.URL.Path == "/v1beta" || strings.HasPrefix(r.URL.Path, "/v1beta/")
}

// geminiStatus maps an HTTP status to the google.rpc status name.
func geminiStatus(code int) string {
	switch code {
	case 400:
		return "INVALID_ARGUMENT"
	case 401:
		return "UNAUTHENTICATED"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "NOT_FOUND"
	case 409:
		return "ABORTED"
	case 429:
		return "RESOURCE_EXHAUSTED"
	case 499:
		return "CANCELLED"
	case 500:
		return "INTERNAL"
	case 501:
		return "NOT_IMPLEMENTED"
	case 503:
		return "UNAVAILABLE"
	case 504:
		return "DEADLINE_EXCEEDED"
	}
	if code >= 500 {
		return "UNKNOWN"
	}
	return "FAILED_PRECONDITION"
}

func geminiErrorEnvelope(code int, msg string, details ...interface{}) []byte {
	type errBody struct {
		Code    int           `json:"code"`
		Message string        `json:"message"`
		Status  string        `json:"status"`
		Details []interface{} `json:"details,omitempty"`
	}
	b, _ := json.Marshal(struct {
		Error errBody `json:"error"`
	}{errBody{code, msg, geminiStatus(code), details}})
	return b
}

// geminiStreamError is the mid-stream error payload.
var geminiStreamError = geminiErrorEnvelope(503, "The model is overloaded. Please try again later.")

func (s *Server) serveGemini(w http.ResponseWriter, r *http.Request, body []byte, seq string) {
	fail := func(code int, msg string, details ...interface{}) {
		writeJSON(w, code, geminiErrorEnvelope(code, msg, details...))
	}
	key := r.Header.Get("X-Goog-Api-Key")
	if key == "" {
		key = r.URL.Query().Get("key")
	}
	switch {
	case key == "":
		fail(http.StatusUnauthorized, "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.")
		return
	case s.opts.GeminiAPIKey != "" && key != s.opts.GeminiAPIKey:
		fail(http.StatusBadRequest, "API key not valid. Please pass a valid API key.", map[string]string{
			"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com",
		})
		return
	}
	if v := r.Header.Get(HeaderStatus); v != "" {
		code, err := strconv.Atoi(v)
		if err != nil || code < 200 || code > 599 {
			fail(http.StatusBadRequest, "mock: bad "+HeaderStatus+" header")
			return
		}
		if ra := r.Header.Get(HeaderRetryAfter); ra != "" {
			w.Header().Set("Retry-After", ra)
		}
		fail(code, "mock: injected status "+v)
		return
	}
	method := func(m string) bool {
		if r.Method == m {
			return true
		}
		w.Header().Set("Allow", m)
		fail(http.StatusMethodNotAllowed, "mock: method "+r.Method+" not allowed")
		return false
	}
	path := r.URL.Path
	if path == "/v1beta/models" {
		if method(http.MethodGet) {
			s.serveGeminiModels(w, r, fail)
		}
		return
	}
	rest := strings.TrimPrefix(path, "/v1beta/models/")
	if rest == path || rest == "" {
		fail(http.StatusNotFound, "mock: unknown URL "+r.Method+" "+path)
		return
	}
	model, action := rest, ""
	if i := strings.LastIndexByte(rest, ':'); i >= 0 {
		model, action = rest[:i], rest[i+1:]
	}
	if action == "" {
		if !method(http.MethodGet) {
			return
		}
		if !contains(s.opts.GeminiModels, model) {
			fail(http.StatusNotFound, "models/"+model+" is not found for API version v1beta")
			return
		}
		b, _ := json.Marshal(s.geminiModel(model))
		writeJSON(w, http.StatusOK, b)
		return
	}
	if !method(http.MethodPost) {
		return
	}
	if s.opts.StrictModels && (!contains(s.opts.GeminiModels, model) || !contains(geminiMethods(model), action)) {
		fail(http.StatusNotFound, "models/"+model+" is not found for API version v1beta, or is not supported for "+action+
			". Call ListModels to see the list of available models and their supported methods.")
		return
	}
	p, bad := s.params(r)
	if bad != "" {
		fail(http.StatusBadRequest, bad)
		return
	}
	switch action {
	case "generateContent", "streamGenerateContent":
		req, msg := parseGeminiRequest(body, model)
		if msg != "" {
			fail(http.StatusBadRequest, msg)
			return
		}
		s.serveGenerate(w, r, req, model, seq, p, action == "streamGenerateContent")
	case "countTokens":
		var wrap struct {
			GenerateContentRequest json.RawMessage `json:"generateContentRequest"`
		}
		if json.Unmarshal(body, &wrap) == nil && len(wrap.GenerateContentRequest) > 0 {
			body = wrap.GenerateContentRequest
		}
		req, msg := parseGeminiRequest(body, model)
		if msg != "" {
			fail(http.StatusBadRequest, msg)
			return
		}
		writeJSON(w, http.StatusOK, []byte(`{"totalTokens":`+strconv.Itoa(req.promptWords)+`}`))
	case "embedContent":
		values, msg := s.geminiEmbed(body, "")
		if msg != "" {
			fail(http.StatusBadRequest, msg)
			return
		}
		b, _ := json.Marshal(map[string]interface{}{"embedding": map[string]interface{}{"values": values}})
		writeJSON(w, http.StatusOK, b)
	case "batchEmbedContents":
		s.serveBatchEmbed(w, body, model, fail)
	case "predict":
		s.servePredict(w, body, fail)
	default:
		fail(http.StatusNotFound, "mock: unknown method "+action)
	}
}

// geminiMethods is the supportedGenerationMethods of a model, guessed
// from its id.
func geminiMethods(id string) []string {
	switch {
	case strings.Contains(id, "embedding"):
		return []string{"embedContent", "batchEmbedContents", "countTokens"}
	case strings.HasPrefix(id, "imagen"):
		return []string{"predict"}
	}
	return []string{"generateContent", "streamGenerateContent", "countTokens", "createCachedContent", "batchGenerateContent"}
}

type geminiModelObject struct {
	Name                       string   `json:"name"`
	Version                    string   `json:"version"`
	DisplayName                string   `json:"displayName"`
	Description                string   `json:"description"`
	InputTokenLimit            int      `json:"inputTokenLimit"`
	OutputTokenLimit           int      `json:"outputTokenLimit"`
	SupportedGenerationMethods []string `json:"supportedGenerationMethods"`
}

func (s *Server) geminiModel(id string) geminiModelObject {
	m := geminiModelObject{
		Name: "models/" + id, Version: "001", DisplayName: "Mock " + id, Description: "Deterministic mock model",
		InputTokenLimit: 1048576, OutputTokenLimit: 65536, SupportedGenerationMethods: geminiMethods(id),
	}
	if strings.Contains(id, "embedding") {
		m.InputTokenLimit, m.OutputTokenLimit = 2048, 1
	}
	if strings.HasPrefix(id, "imagen") {
		m.InputTokenLimit, m.OutputTokenLimit = 480, 8192
	}
	return m
}

// serveGeminiModels pages through GeminiModels with pageSize/pageToken.
func (s *Server) serveGeminiModels(w http.ResponseWriter, r *http.Request, fail func(int, string, ...interface{})) {
	q := r.URL.Query()
	size := 50
	if v := q.Get("pageSize"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			fail(http.StatusBadRequest, "Invalid value at 'page_size'")
			return
		}
		if n > 0 {
			size = n
		}
		if size > 1000 {
			size = 1000
		}
	}
	start := 0
	if tok := q.Get("pageToken"); tok != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(tok, "mock-page-"))
		if err != nil || !strings.HasPrefix(tok, "mock-page-") || n < 0 || n > len(s.opts.GeminiModels) {
			fail(http.StatusBadRequest, "Invalid page token")
			return
		}
		start = n
	}
	end := start + size
	next := ""
	if end < len(s.opts.GeminiModels) {
		next = "mock-page-" + strconv.Itoa(end)
	} else {
		end = len(s.opts.GeminiModels)
	}
	page := struct {
		Models        []geminiModelObject `json:"models"`
		NextPageToken string              `json:"nextPageToken,omitempty"`
	}{Models: []geminiModelObject{}, NextPageToken: next}
	for _, id := range s.opts.GeminiModels[start:end] {
		page.Models = append(page.Models, s.geminiModel(id))
	}
	b, _ := json.Marshal(page)
	writeJSON(w, http.StatusOK, b)
}

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
}

var geminiFunctionName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_.:-]{0,127}$`)

var geminiSchemaKeys = []string{
	"type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems", "properties",
	"required", "minProperties", "maxProperties", "minLength", "maxLength", "pattern", "example", "anyOf",
	"propertyOrdering", "default", "items", "minimum", "maximum",
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
		json.Unmarshal(t, &s)
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
		json.Unmarshal(v, &info.role)
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
			json.Unmarshal(blob["data"], &data)
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
				json.Unmarshal(part["thoughtSignature"], &sig)
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
			json.Unmarshal(fr["name"], &name)
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
				json.Unmarshal(d["name"], &name)
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
			json.Unmarshal(cfg["mode"], &out.mode)
			json.Unmarshal(cfg["allowedFunctionNames"], &out.allowed)
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

type geminiUsage struct {
	PromptTokenCount     int `json:"promptTokenCount"`
	CandidatesTokenCount int `json:"candidatesTokenCount,omitempty"`
	TotalTokenCount      int `json:"totalTokenCount"`
	ThoughtsTokenCount   int `json:"thoughtsTokenCount,omitempty"`
}

type geminiCandidate struct {
	Content struct {
		Parts []json.RawMessage `json:"parts"`
		Role  string            `json:"role"`
	} `json:"content"`
	FinishReason string `json:"finishReason,omitempty"`
	Index        int    `json:"index"`
}

type geminiResponse struct {
	Candidates    []geminiCandidate `json:"candidates"`
	UsageMetadata geminiUsage       `json:"usageMetadata"`
	ModelVersion  string            `json:"modelVersion"`
	ResponseID    string            `json:"responseId"`
}

func geminiText(s string) json.RawMessage {
	return json.RawMessage(`{"text":` + string(jsonString(s)) + `}`)
}

func (s *Server) serveGenerate(w http.ResponseWriter, r *http.Request, req geminiRequest, model, seq string, p streamParams, stream bool) {
	responseID := "mock-" + seq
	var tool string
	isTool := false
	if len(req.functions) > 0 || p.toolCall {
		names := req.functions
		if len(req.allowed) > 0 {
			names = req.allowed
		}
		choice := "auto"
		switch req.mode {
		case "ANY":
			choice = "any"
		case "NONE":
			choice = "none"
		}
		tool, isTool = toolCallFor(names, choice, "", req.lastUser, p.toolCall)
	}
	reply := buildReply(p.chunks, req.maxTokens, req.stops)
	finish, output := "STOP", len(reply.chunks)
	if isTool {
		output = ToolOutputTokens
	} else if reply.reason == "max_tokens" {
		finish = "MAX_TOKENS"
	}
	final := geminiUsage{
		PromptTokenCount:     req.promptWords,
		CandidatesTokenCount: output,
		ThoughtsTokenCount:   GeminiThoughtsTokens,
		TotalTokenCount:      req.promptWords + output + GeminiThoughtsTokens,
	}
	response := func(parts []json.RawMessage, finishReason string, usage geminiUsage) []byte {
		c := geminiCandidate{FinishReason: finishReason}
		c.Content.Parts = parts
		c.Content.Role = "model"
		b, _ := json.Marshal(geminiResponse{Candidates: []geminiCandidate{c}, UsageMetadata: usage, ModelVersion: model, ResponseID: responseID})
		return b
	}
	callPart := json.RawMessage(`{"functionCall":{"name":` + string(jsonString(tool)) + `,"args":` + toolArgumentsObject +
		`},"thoughtSignature":"` + GeminiThoughtSignature + `"}`)

	if !stream {
		var parts []json.RawMessage
		if isTool {
			parts = []json.RawMessage{callPart}
		} else {
			parts = []json.RawMessage{geminiText(reply.text())}
		}
		writeJSON(w, http.StatusOK, response(parts, finish, final))
		return
	}

	var payloads [][]byte
	if isTool {
		payloads = append(payloads, response([]json.RawMessage{callPart}, finish, final))
	} else {
		partial := geminiUsage{PromptTokenCount: req.promptWords, TotalTokenCount: req.promptWords}
		chunks := reply.chunks
		if len(chunks) == 0 {
			chunks = []string{""}
		}
		for i, c := range chunks {
			if i == len(chunks)-1 {
				payloads = append(payloads, response([]json.RawMessage{geminiText(c)}, finish, final))
			} else {
				payloads = append(payloads, response([]json.RawMessage{geminiText(c)}, "", partial))
			}
		}
	}

	if r.URL.Query().Get("alt") == "sse" {
		events := make([][]byte, len(payloads))
		for i, pl := range payloads {
			events[i] = append(append([]byte("data: "), pl...), "\n\n"...)
		}
		rc := startSSE(w)
		playEvents(w, r, rc, p, events, append(append([]byte("data: "), geminiStreamError...), "\n\n"...))
		return
	}
	// Without alt=sse the API streams one JSON array, element by element.
	events := make([][]byte, len(payloads))
	for i, pl := range payloads {
		sep := ",\r\n"
		if i == 0 {
			sep = "["
		}
		events[i] = append([]byte(sep), pl...)
		if i == len(payloads)-1 {
			events[i] = append(events[i], ']')
		}
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	rc.Flush()
	p.crlf = false
	playEvents(w, r, rc, p, events, append(append([]byte(",\r\n"), geminiStreamError...), ']'))
}

// geminiEmbed validates one EmbedContentRequest and returns its vector.
// wantModel, when set, is the "models/..." name the request must carry.
func (s *Server) geminiEmbed(raw json.RawMessage, wantModel string) ([]float32, string) {
	req, msg := protoObject(raw, "", "model", "content", "taskType", "title", "outputDimensionality")
	if msg != "" {
		return nil, msg
	}
	if wantModel != "" {
		var m string
		json.Unmarshal(req["model"], &m)
		if m != wantModel {
			return nil, "* BatchEmbedContentsRequest.model: model must be " + wantModel + " (got \"" + m + "\")"
		}
	}
	content, ok := req["content"]
	if !ok {
		return nil, "* EmbedContentRequest.content: content is not specified"
	}
	info, msg := geminiContent(content, "content", true)
	if msg != "" {
		return nil, msg
	}
	text := info.text
	if tt := req["taskType"]; tt != nil {
		var t string
		json.Unmarshal(tt, &t)
		switch t {
		case "TASK_TYPE_UNSPECIFIED", "RETRIEVAL_QUERY", "RETRIEVAL_DOCUMENT", "SEMANTIC_SIMILARITY",
			"CLASSIFICATION", "CLUSTERING", "QUESTION_ANSWERING", "FACT_VERIFICATION", "CODE_RETRIEVAL_QUERY":
		default:
			return nil, "Invalid value at 'task_type' (type.googleapis.com/google.ai.generativelanguage.v1beta.TaskType), \"" + t + "\""
		}
	}
	dims := s.opts.Dimensions
	if v, ok := req["outputDimensionality"]; ok {
		if json.Unmarshal(v, &dims) != nil || dims < 1 {
			return nil, "* EmbedContentRequest.output_dimensionality: must be positive"
		}
	}
	// The vector key is the text of the parts joined by single spaces
	// (the text of a single part is its key).
	return Vector(strings.TrimSuffix(text, " "), dims), ""
}

func (s *Server) serveBatchEmbed(w http.ResponseWriter, body []byte, model string, fail func(int, string, ...interface{})) {
	req, msg := protoObject(body, "", "requests")
	if msg != "" {
		fail(http.StatusBadRequest, msg)
		return
	}
	var list []json.RawMessage
	if json.Unmarshal(req["requests"], &list) != nil || len(list) == 0 {
		fail(http.StatusBadRequest, "* BatchEmbedContentsRequest.requests: requests is not specified")
		return
	}
	type vec struct {
		Values []float32 `json:"values"`
	}
	out := struct {
		Embeddings []vec `json:"embeddings"`
	}{}
	for _, one := range list {
		v, msg := s.geminiEmbed(one, "models/"+model)
		if msg != "" {
			fail(http.StatusBadRequest, msg)
			return
		}
		out.Embeddings = append(out.Embeddings, vec{v})
	}
	b, _ := json.Marshal(out)
	writeJSON(w, http.StatusOK, b)
}

// servePredict is Imagen: sampleCount deterministic PNGs (ImagePNG) for
// the single instance's prompt.
func (s *Server) servePredict(w http.ResponseWriter, body []byte, fail func(int, string, ...interface{})) {
	var req struct {
		Instances []struct {
			Prompt string `json:"prompt"`
		} `json:"instances"`
		Parameters struct {
			SampleCount *int   `json:"sampleCount"`
			AspectRatio string `json:"aspectRatio"`
		} `json:"parameters"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		fail(http.StatusBadRequest, "Invalid JSON payload received. "+err.Error())
		return
	}
	if len(req.Instances) != 1 {
		fail(http.StatusBadRequest, "Exactly one instance is supported, got "+strconv.Itoa(len(req.Instances)))
		return
	}
	if req.Instances[0].Prompt == "" {
		fail(http.StatusBadRequest, "instances[0].prompt: prompt is required")
		return
	}
	n := GeminiDefaultSampleCount
	if req.Parameters.SampleCount != nil {
		n = *req.Parameters.SampleCount
	}
	if n < 1 || n > 4 {
		fail(http.StatusBadRequest, "parameters.sampleCount must be between 1 and 4")
		return
	}
	switch req.Parameters.AspectRatio {
	case "", "1:1", "3:4", "4:3", "9:16", "16:9":
	default:
		fail(http.StatusBadRequest, "parameters.aspectRatio: unsupported aspect ratio "+req.Parameters.AspectRatio)
		return
	}
	type prediction struct {
		BytesBase64Encoded string `json:"bytesBase64Encoded"`
		MimeType           string `json:"mimeType"`
	}
	out := struct {
		Predictions []prediction `json:"predictions"`
	}{}
	for i := 0; i < n; i++ {
		out.Predictions = append(out.Predictions, prediction{base64.StdEncoding.EncodeToString(ImagePNG(req.Instances[0].Prompt, i)), "image/png"})
	}
	b, _ := json.Marshal(out)
	writeJSON(w, http.StatusOK, bytes.TrimSpace(b))
}
