package gateway

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
)

// Gemini (v1beta) translation: OpenAI-shaped chat, embeddings and image
// requests to generateContent / streamGenerateContent?alt=sse /
// embedContent / batchEmbedContents / Imagen predict, and back. The
// pipeline builds the URLs; the model lives there, not in the bodies
// (except embeddings, where every request names "models/<id>").
//
// Chat request mapping (geminiChatRequest):
//
//   - system/developer messages → systemInstruction.parts, hoisted in
//     order from anywhere in the conversation; user → "user", assistant →
//     "model", tool → a functionResponse part in a "user" turn.
//     Consecutive turns of the same role are merged. Empty text is
//     skipped, and a turn left with no parts is dropped.
//   - Parts: text; image_url data: URLs → inlineData, http(s) URLs →
//     fileData with a MIME type guessed from the path's extension
//     (image/jpeg when unknown); input_audio (wav, mp3) → inlineData;
//     file.file_data → inlineData (file_id is a 400: an OpenAI file id
//     means nothing to Gemini); an assistant refusal part → text.
//     image_url.detail is dropped (Gemini has no per-image detail).
//   - Assistant tool_calls → functionCall {name, args}; arguments must
//     be a JSON object (empty = {}), else 400.
//   - A tool message → functionResponse {name, response:{"output": X}},
//     X the content parsed as JSON when it is a JSON object, else the
//     content string ("output" is the key Gemini documents for function
//     output). The name comes from the latest earlier assistant
//     tool_call with that tool_call_id; an unknown id is a 400.
//   - tools[].function → functionDeclarations. "strict" is dropped. A
//     parameters schema inside Gemini's OpenAPI subset is sent as
//     "parameters" (types upper-cased, ["T","null"] → nullable,
//     annotation-only keys such as $schema and boolean
//     additionalProperties dropped, unsupported "format"s dropped); any
//     other schema ($ref, oneOf, const, ...) is sent verbatim as
//     "parametersJsonSchema", so no constraint is silently lost. An
//     object schema without properties is sent as no parameters.
//   - tool_choice auto/none/required → AUTO/NONE/ANY; a named function →
//     ANY + allowedFunctionNames; allowed_tools required → ANY + names,
//     allowed_tools auto → AUTO with the declarations narrowed to the
//     allowed ones. A choice naming an undeclared tool is a 400.
//   - generationConfig: temperature, top_p → topP,
//     max_completion_tokens ?? max_tokens → maxOutputTokens, stop →
//     stopSequences, n → candidateCount, non-zero presence_penalty /
//     frequency_penalty, seed, response_format json_object →
//     responseMimeType, json_schema → responseMimeType + responseSchema
//     (same subset rules, plus propertyOrdering to keep the client's
//     property order) or responseJsonSchema verbatim, reasoning_effort →
//     thinkingConfig.thinkingBudget (none 0, minimal/low 1024, medium
//     8192, high/xhigh/max 24576).
//   - 400 unsupported_parameter: non-empty logit_bias, logprobs true,
//     top_logprobs > 0, n > 1 with stream (a non-stream n maps to
//     candidateCount and yields one choice per candidate), audio output
//     (audio, modalities other than text), parallel_tool_calls false with
//     tools, web_search_options, legacy functions/function_call and role
//     "function", verbosity other than "medium", non-function tools.
//   - Dropped (no effect on the generated content): user, metadata,
//     store, service_tier, safety_identifier, prompt_cache_key,
//     prediction, stream_options (the pipeline reads include_usage),
//     message "name", unknown fields.
//
// Responses: text parts are joined, thought parts and other part kinds
// (inline images, executable code) are dropped; functionCall parts
// become tool_calls with ids "call_<base>_<n>" (base = responseId, or
// the fallback id without "chatcmpl-"), or Gemini's own id when it sends
// one. A prompt blocked before generation (promptFeedback.blockReason,
// no candidates) becomes one choice with empty content and
// finish_reason "content_filter". finishReason: STOP → stop (tool_calls
// when the candidate called a function), MAX_TOKENS → length,
// SAFETY/RECITATION/BLOCKLIST/PROHIBITED_CONTENT/SPII/IMAGE_SAFETY →
// content_filter, anything else → stop (tool_calls with a call).
//
// Usage: prompt_tokens = promptTokenCount (which already includes
// cachedContentTokenCount) + toolUsePromptTokenCount, cached_tokens =
// cachedContentTokenCount, completion_tokens = candidatesTokenCount +
// thoughtsTokenCount, reasoning_tokens = thoughtsTokenCount, total =
// prompt + completion. When usageMetadata is absent the response carries
// no "usage" and the usage is reported=false; a stream then sends a
// zero usage chunk when include_usage asked for one.
//
// Stream: a role chunk on the first upstream event; one content chunk
// per run of text parts, one tool_calls chunk per (whole) functionCall;
// a finish chunk with an empty delta; events after the finish only
// update the usage (Gemini may send a usage-only final event); an
// {"error":...} event ends the stream with a 502 upstream_error; an end
// without any finishReason is a 502 upstream_stream_truncated. Only
// candidate 0 is streamed (n > 1 with stream is refused).

// ---------------------------------------------------------------------
// Errors

func gemBadRequest(msg string) *apiError {
	return errBadRequest("invalid_request", msg)
}

func gemUnsupported(msg string) *apiError {
	return errBadRequest("unsupported_parameter", msg)
}

func gemBadUpstream(cause error) *apiError {
	e := newError(http.StatusBadGateway, "server_error", "upstream_bad_response",
		"the gemini upstream returned a response the gateway could not parse")
	e.cause = cause
	return e
}

type gemErrorIn struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
}

// gemUpstreamError turns a Gemini {"error":{...}} body into a 502 that
// carries Gemini's status and message, with the body under
// error.upstream.
func gemUpstreamError(raw json.RawMessage, whole []byte) *apiError {
	var ge gemErrorIn
	_ = json.Unmarshal(raw, &ge)
	msg := "the gemini upstream reported an error"
	if ge.Status != "" {
		msg += ": " + ge.Status
	}
	if ge.Message != "" {
		msg += ": " + ge.Message
	}
	e := newError(http.StatusBadGateway, "server_error", "upstream_error", msg)
	e.upstream = embedUpstreamBody(whole)
	return e
}

// ---------------------------------------------------------------------
// JSON helpers (the input has passed json.Valid before these run)

// gemMarshal encodes v without HTML escaping and without a trailing
// newline.
func gemMarshal(v interface{}) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

func gemQuote(s string) json.RawMessage {
	return json.RawMessage(gemMarshal(s))
}

func gemIsNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

func gemParseObject(raw json.RawMessage) (map[string]json.RawMessage, bool) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, false
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, false
	}
	return m, true
}

func gemParseArray(raw json.RawMessage) ([]json.RawMessage, bool) {
	if len(raw) == 0 || raw[0] != '[' {
		return nil, false
	}
	var a []json.RawMessage
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, false
	}
	return a, true
}

func gemString(raw json.RawMessage, name string) (string, *apiError) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", gemBadRequest(`"` + name + `" must be a string`)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", gemBadRequest(`"` + name + `" must be a string`)
	}
	return s, nil
}

func gemIsNumber(raw json.RawMessage) bool {
	if len(raw) == 0 {
		return false
	}
	c := raw[0]
	return c == '-' || (c >= '0' && c <= '9')
}

// gemNumber returns a number's exact text.
func gemNumber(raw json.RawMessage, name string) (json.RawMessage, *apiError) {
	if !gemIsNumber(raw) {
		return nil, gemBadRequest(`"` + name + `" must be a number`)
	}
	return raw, nil
}

func gemInt(raw json.RawMessage, name string) (int64, *apiError) {
	if !gemIsNumber(raw) {
		return 0, gemBadRequest(`"` + name + `" must be an integer`)
	}
	if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return n, nil
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1e15 {
		return 0, gemBadRequest(`"` + name + `" must be an integer`)
	}
	return int64(f), nil
}

func gemBool(raw json.RawMessage, name string) (bool, *apiError) {
	switch string(raw) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, gemBadRequest(`"` + name + `" must be a boolean`)
}

// gemTruthy reports whether a JSON value is set to something other than
// null, false, "", 0, [] or {}.
func gemTruthy(raw json.RawMessage) bool {
	s := string(raw)
	switch s {
	case "", "null", "false", `""`, "[]", "{}":
		return false
	}
	if gemIsNumber(raw) {
		f, err := strconv.ParseFloat(s, 64)
		return err != nil || f != 0
	}
	if raw[0] == '[' || raw[0] == '{' {
		return len(bytes.TrimSpace(raw[1:len(raw)-1])) > 0
	}
	return true
}

func gemTopObject(body []byte) (map[string]json.RawMessage, *apiError) {
	if !json.Valid(body) {
		return nil, errBadRequest("invalid_json", "request body is not valid JSON")
	}
	top, ok := gemParseObject(json.RawMessage(bytes.TrimSpace(body)))
	if !ok {
		return nil, errBadRequest("invalid_json", "request body must be a JSON object")
	}
	return top, nil
}

// gemOrderedObject decodes a JSON object keeping its key order.
func gemOrderedObject(raw json.RawMessage) ([]string, []json.RawMessage, bool) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, nil, false
	}
	if d, isDelim := tok.(json.Delim); !isDelim || d != '{' {
		return nil, nil, false
	}
	var keys []string
	var vals []json.RawMessage
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, nil, false
		}
		key, isStr := kt.(string)
		if !isStr {
			return nil, nil, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, false
		}
		keys = append(keys, key)
		vals = append(vals, v)
	}
	return keys, vals, true
}

// ---------------------------------------------------------------------
// Gemini request shapes

type gemBlob struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

type gemFileData struct {
	MimeType string `json:"mimeType"`
	FileURI  string `json:"fileUri"`
}

type gemFuncCallOut struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type gemFuncRespBody struct {
	Output json.RawMessage `json:"output"`
}

type gemFuncRespOut struct {
	Name     string          `json:"name"`
	Response gemFuncRespBody `json:"response"`
}

type gemPartOut struct {
	Text             string          `json:"text,omitempty"`
	InlineData       *gemBlob        `json:"inlineData,omitempty"`
	FileData         *gemFileData    `json:"fileData,omitempty"`
	FunctionCall     *gemFuncCallOut `json:"functionCall,omitempty"`
	FunctionResponse *gemFuncRespOut `json:"functionResponse,omitempty"`
}

type gemContentOut struct {
	Role  string       `json:"role,omitempty"`
	Parts []gemPartOut `json:"parts"`
}

type gemFuncDecl struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description,omitempty"`
	Parameters           json.RawMessage `json:"parameters,omitempty"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`
}

type gemToolOut struct {
	FunctionDeclarations []gemFuncDecl `json:"functionDeclarations"`
}

type gemFuncCallingConfig struct {
	Mode                 string   `json:"mode"`
	AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
}

type gemToolConfig struct {
	FunctionCallingConfig gemFuncCallingConfig `json:"functionCallingConfig"`
}

type gemThinkingConfig struct {
	ThinkingBudget json.RawMessage `json:"thinkingBudget"`
}

type gemGenConfig struct {
	StopSequences      []string           `json:"stopSequences,omitempty"`
	ResponseMimeType   string             `json:"responseMimeType,omitempty"`
	ResponseSchema     json.RawMessage    `json:"responseSchema,omitempty"`
	ResponseJSONSchema json.RawMessage    `json:"responseJsonSchema,omitempty"`
	CandidateCount     int64              `json:"candidateCount,omitempty"`
	MaxOutputTokens    int64              `json:"maxOutputTokens,omitempty"`
	Temperature        json.RawMessage    `json:"temperature,omitempty"`
	TopP               json.RawMessage    `json:"topP,omitempty"`
	Seed               json.RawMessage    `json:"seed,omitempty"`
	PresencePenalty    json.RawMessage    `json:"presencePenalty,omitempty"`
	FrequencyPenalty   json.RawMessage    `json:"frequencyPenalty,omitempty"`
	ThinkingConfig     *gemThinkingConfig `json:"thinkingConfig,omitempty"`
}

type gemChatReqOut struct {
	SystemInstruction *gemContentOut  `json:"systemInstruction,omitempty"`
	Contents          []gemContentOut `json:"contents"`
	Tools             []gemToolOut    `json:"tools,omitempty"`
	ToolConfig        *gemToolConfig  `json:"toolConfig,omitempty"`
	GenerationConfig  *gemGenConfig   `json:"generationConfig,omitempty"`
}

// ---------------------------------------------------------------------
// Chat request

// geminiChatRequest translates an OpenAI chat request into a Gemini
// generateContent request body. stream reports the client's "stream".
//
// The exported-shape functions only delegate: under Yaegi a named result
// assigned in a function body can keep its value into the next call, so
// the bodies have unnamed results.
func geminiChatRequest(body []byte) (out []byte, stream bool, e *apiError) {
	return gemChatRequest(body)
}

func gemChatRequest(body []byte) ([]byte, bool, *apiError) {
	top, te := gemTopObject(body)
	if te != nil {
		return nil, false, te
	}
	isStream := false
	if raw := top["stream"]; !gemIsNull(raw) {
		b, be := gemBool(raw, "stream")
		if be != nil {
			return nil, false, be
		}
		isStream = b
	}
	if ue := gemRejectUnsupported(top); ue != nil {
		return nil, false, ue
	}

	req := gemChatReqOut{}
	gen := &gemGenConfig{}
	if ge := gemGenerationConfig(top, gen, isStream); ge != nil {
		return nil, false, ge
	}

	decls, de := gemTools(top["tools"])
	if de != nil {
		return nil, false, de
	}
	if raw := top["parallel_tool_calls"]; !gemIsNull(raw) {
		ptc, pe := gemBool(raw, "parallel_tool_calls")
		if pe != nil {
			return nil, false, pe
		}
		if !ptc && len(decls) > 0 {
			return nil, false, gemUnsupported(`"parallel_tool_calls": false is not supported by Gemini, which may call several functions in one turn`)
		}
	}
	cfg, kept, ce := gemToolChoice(top["tool_choice"], decls)
	if ce != nil {
		return nil, false, ce
	}
	if len(kept) > 0 {
		req.Tools = []gemToolOut{{FunctionDeclarations: kept}}
	}
	req.ToolConfig = cfg

	sys, contents, me := gemMessages(top["messages"])
	if me != nil {
		return nil, false, me
	}
	req.SystemInstruction = sys
	req.Contents = contents
	if string(gemMarshal(gen)) != "{}" {
		req.GenerationConfig = gen
	}
	return gemMarshal(req), isStream, nil
}

// gemRejectUnsupported refuses the OpenAI fields Gemini cannot express.
func gemRejectUnsupported(top map[string]json.RawMessage) *apiError {
	if raw := top["logit_bias"]; gemTruthy(raw) {
		return gemUnsupported(`"logit_bias" is not supported by Gemini`)
	}
	if raw := top["logprobs"]; !gemIsNull(raw) {
		lp, e := gemBool(raw, "logprobs")
		if e != nil {
			return e
		}
		if lp {
			return gemUnsupported(`"logprobs" is not supported for Gemini models by this gateway`)
		}
	}
	if raw := top["top_logprobs"]; gemTruthy(raw) {
		return gemUnsupported(`"top_logprobs" is not supported for Gemini models by this gateway`)
	}
	if raw := top["audio"]; !gemIsNull(raw) {
		return gemUnsupported(`"audio" output is not supported for Gemini models`)
	}
	if raw := top["modalities"]; !gemIsNull(raw) {
		mods, ok := gemParseArray(raw)
		if !ok {
			return gemBadRequest(`"modalities" must be an array of strings`)
		}
		for i := 0; i < len(mods); i++ {
			m, e := gemString(mods[i], "modalities")
			if e != nil {
				return e
			}
			if m != "text" {
				return gemUnsupported(`"modalities" may only contain "text" for Gemini models`)
			}
		}
	}
	if raw := top["web_search_options"]; !gemIsNull(raw) {
		return gemUnsupported(`"web_search_options" is not supported for Gemini models`)
	}
	if raw := top["functions"]; !gemIsNull(raw) {
		return gemUnsupported(`"functions" is deprecated and not supported for Gemini models; use "tools"`)
	}
	if raw := top["function_call"]; !gemIsNull(raw) {
		return gemUnsupported(`"function_call" is deprecated and not supported for Gemini models; use "tool_choice"`)
	}
	if raw := top["verbosity"]; !gemIsNull(raw) {
		v, e := gemString(raw, "verbosity")
		if e != nil {
			return e
		}
		if v != "medium" {
			return gemUnsupported(`"verbosity" is not supported for Gemini models`)
		}
	}
	return nil
}

// gemGenerationConfig fills gen.
func gemGenerationConfig(top map[string]json.RawMessage, gen *gemGenConfig, stream bool) *apiError {
	if raw := top["temperature"]; !gemIsNull(raw) {
		v, e := gemNumber(raw, "temperature")
		if e != nil {
			return e
		}
		gen.Temperature = v
	}
	if raw := top["top_p"]; !gemIsNull(raw) {
		v, e := gemNumber(raw, "top_p")
		if e != nil {
			return e
		}
		gen.TopP = v
	}
	maxName := "max_completion_tokens"
	maxRaw := top[maxName]
	if gemIsNull(maxRaw) {
		maxName = "max_tokens"
		maxRaw = top[maxName]
	}
	if !gemIsNull(maxRaw) {
		n, e := gemInt(maxRaw, maxName)
		if e != nil {
			return e
		}
		if n < 1 {
			return gemBadRequest(`"` + maxName + `" must be at least 1`)
		}
		gen.MaxOutputTokens = n
	}
	if raw := top["stop"]; !gemIsNull(raw) {
		if raw[0] == '"' {
			s, e := gemString(raw, "stop")
			if e != nil {
				return e
			}
			if s != "" {
				gen.StopSequences = []string{s}
			}
		} else {
			arr, ok := gemParseArray(raw)
			if !ok {
				return gemBadRequest(`"stop" must be a string or an array of strings`)
			}
			for i := 0; i < len(arr); i++ {
				s, e := gemString(arr[i], "stop")
				if e != nil {
					return e
				}
				if s != "" {
					gen.StopSequences = append(gen.StopSequences, s)
				}
			}
		}
	}
	if raw := top["n"]; !gemIsNull(raw) {
		n, e := gemInt(raw, "n")
		if e != nil {
			return e
		}
		if n < 1 {
			return gemBadRequest(`"n" must be at least 1`)
		}
		if n > 1 && stream {
			return gemUnsupported(`"n" greater than 1 is not supported with "stream" for Gemini models`)
		}
		gen.CandidateCount = n
	}
	if raw := top["presence_penalty"]; !gemIsNull(raw) {
		v, e := gemNumber(raw, "presence_penalty")
		if e != nil {
			return e
		}
		if gemTruthy(v) {
			gen.PresencePenalty = v
		}
	}
	if raw := top["frequency_penalty"]; !gemIsNull(raw) {
		v, e := gemNumber(raw, "frequency_penalty")
		if e != nil {
			return e
		}
		if gemTruthy(v) {
			gen.FrequencyPenalty = v
		}
	}
	if raw := top["seed"]; !gemIsNull(raw) {
		n, e := gemInt(raw, "seed")
		if e != nil {
			return e
		}
		gen.Seed = json.RawMessage(strconv.FormatInt(n, 10))
	}
	if raw := top["reasoning_effort"]; !gemIsNull(raw) {
		effort, e := gemString(raw, "reasoning_effort")
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
		gen.ThinkingConfig = &gemThinkingConfig{ThinkingBudget: json.RawMessage(budget)}
	}
	if raw := top["response_format"]; !gemIsNull(raw) {
		rf, ok := gemParseObject(raw)
		if !ok {
			return gemBadRequest(`"response_format" must be an object`)
		}
		typ, e := gemString(rf["type"], "response_format.type")
		if e != nil {
			return e
		}
		switch typ {
		case "text":
		case "json_object":
			gen.ResponseMimeType = "application/json"
		case "json_schema":
			gen.ResponseMimeType = "application/json"
			js, ok := gemParseObject(rf["json_schema"])
			if !ok {
				return gemBadRequest(`"response_format.json_schema" must be an object`)
			}
			schema := js["schema"]
			if !gemIsNull(schema) {
				if schema[0] != '{' {
					return gemBadRequest(`"response_format.json_schema.schema" must be a JSON object`)
				}
				if conv, ok := gemConvertSchema(schema, 0, true); ok {
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

// gemTools converts tools[] into function declarations.
func gemTools(raw json.RawMessage) ([]gemFuncDecl, *apiError) {
	if gemIsNull(raw) {
		return nil, nil
	}
	arr, ok := gemParseArray(raw)
	if !ok {
		return nil, gemBadRequest(`"tools" must be an array`)
	}
	var decls []gemFuncDecl
	for i := 0; i < len(arr); i++ {
		where := "tools[" + strconv.Itoa(i) + "]"
		tool, ok := gemParseObject(arr[i])
		if !ok {
			return nil, gemBadRequest(`"` + where + `" must be an object`)
		}
		if t := tool["type"]; !gemIsNull(t) {
			typ, e := gemString(t, where+".type")
			if e != nil {
				return nil, e
			}
			if typ != "function" {
				return nil, gemUnsupported(`"` + where + `.type" "` + typ + `" is not supported for Gemini models (only "function")`)
			}
		}
		fn, ok := gemParseObject(tool["function"])
		if !ok {
			return nil, gemBadRequest(`"` + where + `.function" must be an object`)
		}
		name, e := gemString(fn["name"], where+".function.name")
		if e != nil {
			return nil, e
		}
		if name == "" {
			return nil, gemBadRequest(`"` + where + `.function.name" must not be empty`)
		}
		d := gemFuncDecl{Name: name}
		if raw := fn["description"]; !gemIsNull(raw) {
			desc, de := gemString(raw, where+".function.description")
			if de != nil {
				return nil, de
			}
			d.Description = desc
		}
		if params := fn["parameters"]; !gemIsNull(params) {
			if params[0] != '{' {
				return nil, gemBadRequest(`"` + where + `.function.parameters" must be a JSON object`)
			}
			if !gemEmptyObjectSchema(params) {
				if conv, ok := gemConvertSchema(params, 0, false); ok {
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

// gemToolChoice maps tool_choice, possibly narrowing the declarations.
func gemToolChoice(raw json.RawMessage, decls []gemFuncDecl) (*gemToolConfig, []gemFuncDecl, *apiError) {
	if gemIsNull(raw) {
		return nil, decls, nil
	}
	mode := ""
	var names []string
	narrow := false
	if raw[0] == '"' {
		s, e := gemString(raw, "tool_choice")
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
			return nil, nil, gemBadRequest(`"tool_choice" must be "auto", "none", "required" or an object`)
		}
	} else {
		obj, ok := gemParseObject(raw)
		if !ok {
			return nil, nil, gemBadRequest(`"tool_choice" must be a string or an object`)
		}
		typ, e := gemString(obj["type"], "tool_choice.type")
		if e != nil {
			return nil, nil, e
		}
		switch typ {
		case "function":
			fn, ok := gemParseObject(obj["function"])
			if !ok {
				return nil, nil, gemBadRequest(`"tool_choice.function" must be an object`)
			}
			name, e := gemString(fn["name"], "tool_choice.function.name")
			if e != nil {
				return nil, nil, e
			}
			mode = "ANY"
			names = []string{name}
		case "allowed_tools":
			at, ok := gemParseObject(obj["allowed_tools"])
			if !ok {
				return nil, nil, gemBadRequest(`"tool_choice.allowed_tools" must be an object`)
			}
			m, e := gemString(at["mode"], "tool_choice.allowed_tools.mode")
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
				return nil, nil, gemBadRequest(`"tool_choice.allowed_tools.mode" must be "auto" or "required"`)
			}
			list, ok := gemParseArray(at["tools"])
			if !ok || len(list) == 0 {
				return nil, nil, gemBadRequest(`"tool_choice.allowed_tools.tools" must be a non-empty array`)
			}
			for i := 0; i < len(list); i++ {
				where := "tool_choice.allowed_tools.tools[" + strconv.Itoa(i) + "]"
				t, ok := gemParseObject(list[i])
				if !ok {
					return nil, nil, gemBadRequest(`"` + where + `" must be an object`)
				}
				fn, ok := gemParseObject(t["function"])
				if !ok {
					return nil, nil, gemUnsupported(`"` + where + `" must be a function tool`)
				}
				name, e := gemString(fn["name"], where+".function.name")
				if e != nil {
					return nil, nil, e
				}
				names = append(names, name)
			}
		default:
			return nil, nil, gemUnsupported(`"tool_choice.type" "` + typ + `" is not supported for Gemini models`)
		}
	}
	if len(decls) == 0 {
		if mode == "AUTO" || mode == "NONE" {
			return nil, decls, nil
		}
		return nil, nil, gemBadRequest(`"tool_choice" requires "tools"`)
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
			return nil, nil, gemBadRequest(`"tool_choice" names the function "` + names[i] + `", which is not in "tools"`)
		}
	}
	cfg := &gemToolConfig{FunctionCallingConfig: gemFuncCallingConfig{Mode: mode}}
	if narrow {
		var kept []gemFuncDecl
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

// gemMessages converts messages[] into systemInstruction and contents.
func gemMessages(raw json.RawMessage) (*gemContentOut, []gemContentOut, *apiError) {
	msgs, ok := gemParseArray(raw)
	if !ok || len(msgs) == 0 {
		return nil, nil, gemBadRequest(`"messages" must be a non-empty array`)
	}
	var sys *gemContentOut
	var contents []gemContentOut
	add := func(role string, parts []gemPartOut) {
		if len(parts) == 0 {
			return
		}
		n := len(contents)
		if n > 0 && contents[n-1].Role == role {
			contents[n-1].Parts = append(contents[n-1].Parts, parts...)
			return
		}
		contents = append(contents, gemContentOut{Role: role, Parts: parts})
	}
	callNames := map[string]string{}
	for i := 0; i < len(msgs); i++ {
		where := "messages[" + strconv.Itoa(i) + "]"
		m, ok := gemParseObject(msgs[i])
		if !ok {
			return nil, nil, gemBadRequest(`"` + where + `" must be an object`)
		}
		role, e := gemString(m["role"], where+".role")
		if e != nil {
			return nil, nil, e
		}
		switch role {
		case "system", "developer":
			if gemIsNull(m["content"]) {
				return nil, nil, gemBadRequest(`"` + where + `.content" is required`)
			}
			parts, e := gemContentParts(m["content"], where, "system")
			if e != nil {
				return nil, nil, e
			}
			if len(parts) > 0 {
				if sys == nil {
					sys = &gemContentOut{}
				}
				sys.Parts = append(sys.Parts, parts...)
			}
		case "user":
			if gemIsNull(m["content"]) {
				return nil, nil, gemBadRequest(`"` + where + `.content" is required`)
			}
			parts, e := gemContentParts(m["content"], where, "user")
			if e != nil {
				return nil, nil, e
			}
			add("user", parts)
		case "assistant":
			parts, e := gemContentParts(m["content"], where, "assistant")
			if e != nil {
				return nil, nil, e
			}
			calls, e := gemAssistantCalls(m["tool_calls"], where, callNames)
			if e != nil {
				return nil, nil, e
			}
			if !gemIsNull(m["function_call"]) {
				return nil, nil, gemUnsupported(`"` + where + `.function_call" is deprecated and not supported for Gemini models; use "tool_calls"`)
			}
			add("model", append(parts, calls...))
		case "tool":
			id, e := gemString(m["tool_call_id"], where+".tool_call_id")
			if e != nil {
				return nil, nil, e
			}
			name, found := callNames[id]
			if !found {
				return nil, nil, gemBadRequest(`"` + where + `.tool_call_id" "` + id + `" does not match a tool call of an earlier assistant message`)
			}
			output, e := gemToolOutput(m["content"], where)
			if e != nil {
				return nil, nil, e
			}
			add("user", []gemPartOut{{FunctionResponse: &gemFuncRespOut{Name: name, Response: gemFuncRespBody{Output: output}}}})
		case "function":
			return nil, nil, gemUnsupported(`"` + where + `.role" "function" is deprecated and not supported for Gemini models; use "tool"`)
		default:
			return nil, nil, gemBadRequest(`"` + where + `.role" "` + role + `" is not a valid role`)
		}
	}
	if len(contents) == 0 {
		return nil, nil, gemBadRequest(`"messages" must contain at least one user or assistant message with content`)
	}
	return sys, contents, nil
}

// gemContentParts converts a message's content. User messages may carry
// image, audio and file parts, assistant messages refusal parts, system
// messages text only.
func gemContentParts(raw json.RawMessage, where string, kind string) ([]gemPartOut, *apiError) {
	media := kind == "user"
	if gemIsNull(raw) {
		return nil, nil
	}
	if raw[0] == '"' {
		s, e := gemString(raw, where+".content")
		if e != nil {
			return nil, e
		}
		if s == "" {
			return nil, nil
		}
		return []gemPartOut{{Text: s}}, nil
	}
	arr, ok := gemParseArray(raw)
	if !ok {
		return nil, gemBadRequest(`"` + where + `.content" must be a string or an array of content parts`)
	}
	var parts []gemPartOut
	for j := 0; j < len(arr); j++ {
		pw := where + ".content[" + strconv.Itoa(j) + "]"
		p, ok := gemParseObject(arr[j])
		if !ok {
			return nil, gemBadRequest(`"` + pw + `" must be an object`)
		}
		typ, e := gemString(p["type"], pw+".type")
		if e != nil {
			return nil, e
		}
		switch {
		case typ == "text":
			s, e := gemString(p["text"], pw+".text")
			if e != nil {
				return nil, e
			}
			if s != "" {
				parts = append(parts, gemPartOut{Text: s})
			}
		case typ == "refusal" && kind == "assistant":
			s, e := gemString(p["refusal"], pw+".refusal")
			if e != nil {
				return nil, e
			}
			if s != "" {
				parts = append(parts, gemPartOut{Text: s})
			}
		case typ == "image_url" && media:
			part, e := gemImagePart(p["image_url"], pw)
			if e != nil {
				return nil, e
			}
			parts = append(parts, part)
		case typ == "input_audio" && media:
			part, e := gemAudioPart(p["input_audio"], pw)
			if e != nil {
				return nil, e
			}
			parts = append(parts, part)
		case typ == "file" && media:
			part, e := gemFilePart(p["file"], pw)
			if e != nil {
				return nil, e
			}
			parts = append(parts, part)
		default:
			return nil, gemUnsupported(`"` + pw + `.type" "` + typ + `" is not supported in this message for Gemini models`)
		}
	}
	return parts, nil
}

// gemDataURL splits "data:<mime>;base64,<data>".
func gemDataURL(url string) (mime, data string, ok bool) {
	if !strings.HasPrefix(url, "data:") {
		return "", "", false
	}
	comma := strings.IndexByte(url, ',')
	if comma < 0 {
		return "", "", false
	}
	meta := url[len("data:"):comma]
	if !strings.HasSuffix(meta, ";base64") {
		return "", "", false
	}
	mime = strings.TrimSuffix(meta, ";base64")
	if i := strings.IndexByte(mime, ';'); i >= 0 {
		mime = mime[:i]
	}
	data = url[comma+1:]
	if mime == "" || data == "" {
		return "", "", false
	}
	return mime, data, true
}

// gemMimeFromPath guesses a MIME type from a URL path or file name.
func gemMimeFromPath(p string) string {
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	dot := strings.LastIndexByte(p, '.')
	if dot < 0 || strings.IndexByte(p[dot:], '/') >= 0 {
		return ""
	}
	switch strings.ToLower(p[dot+1:]) {
	case "png":
		return "image/png"
	case "jpg", "jpeg":
		return "image/jpeg"
	case "webp":
		return "image/webp"
	case "gif":
		return "image/gif"
	case "heic":
		return "image/heic"
	case "heif":
		return "image/heif"
	case "pdf":
		return "application/pdf"
	case "txt":
		return "text/plain"
	case "wav":
		return "audio/wav"
	case "mp3":
		return "audio/mp3"
	}
	return ""
}

func gemImagePart(raw json.RawMessage, where string) (gemPartOut, *apiError) {
	obj, ok := gemParseObject(raw)
	if !ok {
		return gemPartOut{}, gemBadRequest(`"` + where + `.image_url" must be an object`)
	}
	url, e := gemString(obj["url"], where+".image_url.url")
	if e != nil {
		return gemPartOut{}, e
	}
	if strings.HasPrefix(url, "data:") {
		mime, data, ok := gemDataURL(url)
		if !ok {
			return gemPartOut{}, gemBadRequest(`"` + where + `.image_url.url" must be a base64 data URL ("data:<mime>;base64,<data>") or an http(s) URL`)
		}
		return gemPartOut{InlineData: &gemBlob{MimeType: mime, Data: data}}, nil
	}
	lower := strings.ToLower(url)
	if strings.HasPrefix(lower, "https://") || strings.HasPrefix(lower, "http://") {
		mime := gemMimeFromPath(url)
		if mime == "" {
			mime = "image/jpeg"
		}
		return gemPartOut{FileData: &gemFileData{MimeType: mime, FileURI: url}}, nil
	}
	return gemPartOut{}, gemBadRequest(`"` + where + `.image_url.url" must be a base64 data URL or an http(s) URL`)
}

func gemAudioPart(raw json.RawMessage, where string) (gemPartOut, *apiError) {
	obj, ok := gemParseObject(raw)
	if !ok {
		return gemPartOut{}, gemBadRequest(`"` + where + `.input_audio" must be an object`)
	}
	data, e := gemString(obj["data"], where+".input_audio.data")
	if e != nil {
		return gemPartOut{}, e
	}
	format, e := gemString(obj["format"], where+".input_audio.format")
	if e != nil {
		return gemPartOut{}, e
	}
	mime := ""
	switch format {
	case "wav":
		mime = "audio/wav"
	case "mp3":
		mime = "audio/mp3"
	default:
		return gemPartOut{}, gemUnsupported(`"` + where + `.input_audio.format" "` + format + `" is not supported (use "wav" or "mp3")`)
	}
	if data == "" {
		return gemPartOut{}, gemBadRequest(`"` + where + `.input_audio.data" must not be empty`)
	}
	return gemPartOut{InlineData: &gemBlob{MimeType: mime, Data: data}}, nil
}

func gemFilePart(raw json.RawMessage, where string) (gemPartOut, *apiError) {
	obj, ok := gemParseObject(raw)
	if !ok {
		return gemPartOut{}, gemBadRequest(`"` + where + `.file" must be an object`)
	}
	if !gemIsNull(obj["file_id"]) {
		return gemPartOut{}, gemUnsupported(`"` + where + `.file.file_id" is not supported for Gemini models; send "file_data"`)
	}
	data, e := gemString(obj["file_data"], where+".file.file_data")
	if e != nil {
		return gemPartOut{}, e
	}
	if strings.HasPrefix(data, "data:") {
		mime, b64, ok := gemDataURL(data)
		if !ok {
			return gemPartOut{}, gemBadRequest(`"` + where + `.file.file_data" is not a base64 data URL`)
		}
		return gemPartOut{InlineData: &gemBlob{MimeType: mime, Data: b64}}, nil
	}
	name := ""
	if raw := obj["filename"]; !gemIsNull(raw) {
		fn, fe := gemString(raw, where+".file.filename")
		if fe != nil {
			return gemPartOut{}, fe
		}
		name = fn
	}
	mime := gemMimeFromPath(name)
	if mime == "" || data == "" {
		return gemPartOut{}, gemBadRequest(`"` + where + `.file.file_data" must be a base64 data URL, or base64 with a "filename" of a known type`)
	}
	return gemPartOut{InlineData: &gemBlob{MimeType: mime, Data: data}}, nil
}

// gemAssistantCalls converts tool_calls and records id → name.
func gemAssistantCalls(raw json.RawMessage, where string, names map[string]string) ([]gemPartOut, *apiError) {
	if gemIsNull(raw) {
		return nil, nil
	}
	arr, ok := gemParseArray(raw)
	if !ok {
		return nil, gemBadRequest(`"` + where + `.tool_calls" must be an array`)
	}
	var parts []gemPartOut
	for j := 0; j < len(arr); j++ {
		cw := where + ".tool_calls[" + strconv.Itoa(j) + "]"
		call, ok := gemParseObject(arr[j])
		if !ok {
			return nil, gemBadRequest(`"` + cw + `" must be an object`)
		}
		if t := call["type"]; !gemIsNull(t) {
			typ, e := gemString(t, cw+".type")
			if e != nil {
				return nil, e
			}
			if typ != "function" {
				return nil, gemUnsupported(`"` + cw + `.type" "` + typ + `" is not supported for Gemini models`)
			}
		}
		fn, ok := gemParseObject(call["function"])
		if !ok {
			return nil, gemBadRequest(`"` + cw + `.function" must be an object`)
		}
		name, e := gemString(fn["name"], cw+".function.name")
		if e != nil {
			return nil, e
		}
		if name == "" {
			return nil, gemBadRequest(`"` + cw + `.function.name" must not be empty`)
		}
		args := json.RawMessage("{}")
		if raw := fn["arguments"]; !gemIsNull(raw) {
			s, e := gemString(raw, cw+".function.arguments")
			if e != nil {
				return nil, e
			}
			s = strings.TrimSpace(s)
			if s != "" {
				if s[0] != '{' || !json.Valid([]byte(s)) {
					return nil, gemBadRequest(`"` + cw + `.function.arguments" must be a JSON object encoded as a string`)
				}
				args = json.RawMessage(s)
			}
		}
		if rawID := call["id"]; !gemIsNull(rawID) {
			id, e := gemString(rawID, cw+".id")
			if e != nil {
				return nil, e
			}
			names[id] = name
		}
		parts = append(parts, gemPartOut{FunctionCall: &gemFuncCallOut{Name: name, Args: args}})
	}
	return parts, nil
}

// gemToolOutput turns a tool message's content into functionResponse
// output: a JSON object as is, anything else as a string.
func gemToolOutput(raw json.RawMessage, where string) (json.RawMessage, *apiError) {
	text := ""
	switch {
	case gemIsNull(raw):
	case raw[0] == '"':
		s, e := gemString(raw, where+".content")
		if e != nil {
			return nil, e
		}
		text = s
	default:
		arr, ok := gemParseArray(raw)
		if !ok {
			return nil, gemBadRequest(`"` + where + `.content" must be a string or an array of text parts`)
		}
		var sb strings.Builder
		for j := 0; j < len(arr); j++ {
			pw := where + ".content[" + strconv.Itoa(j) + "]"
			p, ok := gemParseObject(arr[j])
			if !ok {
				return nil, gemBadRequest(`"` + pw + `" must be an object`)
			}
			typ, e := gemString(p["type"], pw+".type")
			if e != nil {
				return nil, e
			}
			if typ != "text" {
				return nil, gemUnsupported(`"` + pw + `.type" "` + typ + `" is not supported in a tool message for Gemini models`)
			}
			s, e := gemString(p["text"], pw+".text")
			if e != nil {
				return nil, e
			}
			sb.WriteString(s)
		}
		text = sb.String()
	}
	trimmed := strings.TrimSpace(text)
	if strings.HasPrefix(trimmed, "{") && json.Valid([]byte(trimmed)) {
		return json.RawMessage(trimmed), nil
	}
	return gemQuote(text), nil
}

// ---------------------------------------------------------------------
// JSON Schema → Gemini Schema (OpenAPI 3.0 subset)

// gemEmptyObjectSchema reports whether a parameters schema is an object
// that declares no properties (Gemini rejects an OBJECT without
// properties; such a function takes no arguments).
func gemEmptyObjectSchema(raw json.RawMessage) bool {
	keys, vals, ok := gemOrderedObject(raw)
	if !ok {
		return false
	}
	isObject := false
	for i := 0; i < len(keys); i++ {
		var compact bytes.Buffer
		if json.Compact(&compact, vals[i]) != nil {
			return false
		}
		v := compact.String()
		switch keys[i] {
		case "type":
			if v != `"object"` {
				return false
			}
			isObject = true
		case "properties", "required":
			if v != "{}" && v != "[]" {
				return false
			}
		case "additionalProperties":
			if v != "false" && v != "true" {
				return false
			}
		case "$schema", "$id", "$comment", "title", "description", "strict":
		default:
			return false
		}
	}
	return isObject
}

func gemSchemaType(raw json.RawMessage) (string, bool, bool) {
	upper := func(t string) string {
		switch t {
		case "string", "number", "integer", "boolean", "array", "object", "null":
			return strings.ToUpper(t)
		}
		return ""
	}
	if len(raw) > 0 && raw[0] == '"' {
		var t string
		if json.Unmarshal(raw, &t) != nil {
			return "", false, false
		}
		u := upper(t)
		return u, false, u != ""
	}
	arr, ok := gemParseArray(raw)
	if !ok {
		return "", false, false
	}
	nullable := false
	typ := ""
	for i := 0; i < len(arr); i++ {
		var t string
		if len(arr[i]) == 0 || arr[i][0] != '"' || json.Unmarshal(arr[i], &t) != nil {
			return "", false, false
		}
		if t == "null" {
			nullable = true
			continue
		}
		if typ != "" {
			return "", false, false
		}
		typ = upper(t)
		if typ == "" {
			return "", false, false
		}
	}
	if typ == "" {
		return "", false, false
	}
	return typ, nullable, true
}

func gemStringArray(raw json.RawMessage) bool {
	arr, ok := gemParseArray(raw)
	if !ok {
		return false
	}
	for i := 0; i < len(arr); i++ {
		if len(arr[i]) == 0 || arr[i][0] != '"' {
			return false
		}
	}
	return true
}

// gemConvertSchema converts a JSON Schema to Gemini's Schema, or
// reports false when the schema uses anything outside the subset (the
// caller then sends it verbatim as a JSON Schema). ordering adds
// propertyOrdering so Gemini keeps the declared property order.
func gemConvertSchema(raw json.RawMessage, depth int, ordering bool) (json.RawMessage, bool) {
	if depth > 32 {
		return nil, false
	}
	keys, vals, ok := gemOrderedObject(raw)
	if !ok {
		return nil, false
	}
	hasKey := func(k string) bool {
		for i := 0; i < len(keys); i++ {
			if keys[i] == k {
				return true
			}
		}
		return false
	}
	if !hasKey("type") && !hasKey("anyOf") {
		return nil, false
	}
	var buf bytes.Buffer
	buf.WriteByte('{')
	first := true
	write := func(k string, v []byte) {
		if !first {
			buf.WriteByte(',')
		}
		first = false
		buf.Write(gemQuote(k))
		buf.WriteByte(':')
		buf.Write(v)
	}
	isObject := false
	var propNames []string
	for i := 0; i < len(keys); i++ {
		k, v := keys[i], vals[i]
		switch k {
		case "type":
			t, nullable, ok := gemSchemaType(v)
			if !ok {
				return nil, false
			}
			write("type", gemQuote(t))
			if nullable && !hasKey("nullable") {
				write("nullable", []byte("true"))
			}
			isObject = t == "OBJECT"
		case "format":
			var f string
			if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &f) != nil {
				return nil, false
			}
			switch f {
			case "enum", "date-time", "float", "double", "int32", "int64":
				write(k, v)
			}
		case "description", "title", "pattern":
			if len(v) == 0 || v[0] != '"' {
				return nil, false
			}
			write(k, v)
		case "nullable":
			if string(v) != "true" && string(v) != "false" {
				return nil, false
			}
			write(k, v)
		case "enum", "required", "propertyOrdering":
			if !gemStringArray(v) {
				return nil, false
			}
			write(k, v)
		case "minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties", "minimum", "maximum":
			if !gemIsNumber(v) {
				return nil, false
			}
			write(k, v)
		case "default", "example":
			write(k, v)
		case "items":
			conv, ok := gemConvertSchema(v, depth+1, ordering)
			if !ok {
				return nil, false
			}
			write(k, conv)
		case "properties":
			pk, pv, ok := gemOrderedObject(v)
			if !ok {
				return nil, false
			}
			var pb bytes.Buffer
			pb.WriteByte('{')
			for j := 0; j < len(pk); j++ {
				conv, ok := gemConvertSchema(pv[j], depth+1, ordering)
				if !ok {
					return nil, false
				}
				if j > 0 {
					pb.WriteByte(',')
				}
				pb.Write(gemQuote(pk[j]))
				pb.WriteByte(':')
				pb.Write(conv)
			}
			pb.WriteByte('}')
			write(k, pb.Bytes())
			propNames = pk
		case "anyOf":
			arr, ok := gemParseArray(v)
			if !ok || len(arr) == 0 {
				return nil, false
			}
			var ab bytes.Buffer
			ab.WriteByte('[')
			for j := 0; j < len(arr); j++ {
				conv, ok := gemConvertSchema(arr[j], depth+1, ordering)
				if !ok {
					return nil, false
				}
				if j > 0 {
					ab.WriteByte(',')
				}
				ab.Write(conv)
			}
			ab.WriteByte(']')
			write(k, ab.Bytes())
		case "additionalProperties":
			if string(v) != "true" && string(v) != "false" {
				return nil, false
			}
		case "$schema", "$id", "$comment", "examples", "readOnly", "writeOnly", "deprecated", "strict":
		default:
			return nil, false
		}
	}
	if isObject && len(propNames) == 0 {
		return nil, false
	}
	if ordering && len(propNames) > 1 && !hasKey("propertyOrdering") {
		write("propertyOrdering", gemMarshal(propNames))
	}
	buf.WriteByte('}')
	return json.RawMessage(buf.Bytes()), true
}

// ---------------------------------------------------------------------
// Gemini response shapes

type gemFuncCallIn struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
	ID   string          `json:"id"`
}

type gemPartIn struct {
	Text         *string        `json:"text"`
	Thought      bool           `json:"thought"`
	FunctionCall *gemFuncCallIn `json:"functionCall"`
}

type gemContentIn struct {
	Role  string      `json:"role"`
	Parts []gemPartIn `json:"parts"`
}

type gemCandidateIn struct {
	Content      *gemContentIn `json:"content"`
	FinishReason string        `json:"finishReason"`
	Index        int64         `json:"index"`
}

type gemPromptFeedbackIn struct {
	BlockReason string `json:"blockReason"`
}

type gemUsageIn struct {
	PromptTokenCount        int64 `json:"promptTokenCount"`
	CandidatesTokenCount    int64 `json:"candidatesTokenCount"`
	ThoughtsTokenCount      int64 `json:"thoughtsTokenCount"`
	CachedContentTokenCount int64 `json:"cachedContentTokenCount"`
	ToolUsePromptTokenCount int64 `json:"toolUsePromptTokenCount"`
	TotalTokenCount         int64 `json:"totalTokenCount"`
}

type gemRespIn struct {
	Candidates     []gemCandidateIn     `json:"candidates"`
	PromptFeedback *gemPromptFeedbackIn `json:"promptFeedback"`
	UsageMetadata  *gemUsageIn          `json:"usageMetadata"`
	ResponseID     string               `json:"responseId"`
	Error          json.RawMessage      `json:"error"`
}

// OpenAI response shapes.

type gemOAFunctionOut struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type gemOAToolCallOut struct {
	ID       string           `json:"id"`
	Type     string           `json:"type"`
	Function gemOAFunctionOut `json:"function"`
}

type gemOAToolCallDelta struct {
	Index    int              `json:"index"`
	ID       string           `json:"id"`
	Type     string           `json:"type"`
	Function gemOAFunctionOut `json:"function"`
}

type gemOAMessageOut struct {
	Role      string             `json:"role"`
	Content   *string            `json:"content"`
	Refusal   *string            `json:"refusal"`
	ToolCalls []gemOAToolCallOut `json:"tool_calls,omitempty"`
}

type gemOAChoiceOut struct {
	Index        int             `json:"index"`
	Message      gemOAMessageOut `json:"message"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason string          `json:"finish_reason"`
}

type gemOAPromptDetails struct {
	CachedTokens int64 `json:"cached_tokens"`
}

type gemOACompletionDetails struct {
	ReasoningTokens int64 `json:"reasoning_tokens"`
}

type gemOAUsageOut struct {
	PromptTokens            int64                  `json:"prompt_tokens"`
	CompletionTokens        int64                  `json:"completion_tokens"`
	TotalTokens             int64                  `json:"total_tokens"`
	PromptTokensDetails     gemOAPromptDetails     `json:"prompt_tokens_details"`
	CompletionTokensDetails gemOACompletionDetails `json:"completion_tokens_details"`
}

type gemOACompletionOut struct {
	ID      string           `json:"id"`
	Object  string           `json:"object"`
	Created int64            `json:"created"`
	Model   string           `json:"model"`
	Choices []gemOAChoiceOut `json:"choices"`
	Usage   *gemOAUsageOut   `json:"usage,omitempty"`
}

type gemOADelta struct {
	Role      string               `json:"role,omitempty"`
	Content   *string              `json:"content,omitempty"`
	ToolCalls []gemOAToolCallDelta `json:"tool_calls,omitempty"`
}

type gemOAChunkChoice struct {
	Index        int        `json:"index"`
	Delta        gemOADelta `json:"delta"`
	FinishReason *string    `json:"finish_reason"`
}

type gemOAChunk struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []gemOAChunkChoice `json:"choices"`
	Usage   *gemOAUsageOut     `json:"usage,omitempty"`
}

// gemFinishReason maps a Gemini finishReason to OpenAI's.
func gemFinishReason(reason string, toolCalls bool) string {
	switch reason {
	case "MAX_TOKENS":
		return "length"
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY":
		return "content_filter"
	}
	if toolCalls {
		return "tool_calls"
	}
	return "stop"
}

func gemUsage(u *gemUsageIn) (usage, gemOAUsageOut) {
	prompt := u.PromptTokenCount + u.ToolUsePromptTokenCount
	completion := u.CandidatesTokenCount + u.ThoughtsTokenCount
	out := gemOAUsageOut{
		PromptTokens:            prompt,
		CompletionTokens:        completion,
		TotalTokens:             prompt + completion,
		PromptTokensDetails:     gemOAPromptDetails{CachedTokens: u.CachedContentTokenCount},
		CompletionTokensDetails: gemOACompletionDetails{ReasoningTokens: u.ThoughtsTokenCount},
	}
	return usage{
		promptTokens:     prompt,
		completionTokens: completion,
		cacheReadTokens:  u.CachedContentTokenCount,
		reported:         true,
	}, out
}

// gemCallArgs renders functionCall.args as compact JSON arguments.
func gemCallArgs(args json.RawMessage) string {
	if gemIsNull(args) {
		return "{}"
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, args); err != nil {
		return "{}"
	}
	return buf.String()
}

// gemCallIDBase is the per-response part of generated tool call ids.
func gemCallIDBase(responseID, idFallback string) string {
	if responseID != "" {
		return responseID
	}
	return strings.TrimPrefix(idFallback, "chatcmpl-")
}

func gemCallID(call *gemFuncCallIn, base string, n int) string {
	if call.ID != "" {
		return call.ID
	}
	if base == "" {
		return "call_" + strconv.Itoa(n)
	}
	return "call_" + base + "_" + strconv.Itoa(n)
}

func gemResponseID(responseID, idFallback string) string {
	if responseID != "" {
		return "chatcmpl-" + responseID
	}
	return idFallback
}

// geminiChatResponse translates a generateContent response into an
// OpenAI chat.completion.
func geminiChatResponse(body []byte, tc translateContext) ([]byte, usage, *apiError) {
	var r gemRespIn
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, usage{}, gemBadUpstream(err)
	}
	if !gemIsNull(r.Error) {
		return nil, usage{}, gemUpstreamError(r.Error, body)
	}
	out := gemOACompletionOut{
		ID:      gemResponseID(r.ResponseID, tc.idFallback),
		Object:  "chat.completion",
		Created: tc.created,
		Model:   tc.requestedModel,
		Choices: []gemOAChoiceOut{},
	}
	base := gemCallIDBase(r.ResponseID, tc.idFallback)
	callN := 0
	for i := 0; i < len(r.Candidates); i++ {
		cand := &r.Candidates[i]
		var sb strings.Builder
		var calls []gemOAToolCallOut
		if cand.Content != nil {
			for j := 0; j < len(cand.Content.Parts); j++ {
				p := &cand.Content.Parts[j]
				if p.Thought {
					continue
				}
				if p.FunctionCall != nil {
					calls = append(calls, gemOAToolCallOut{
						ID:       gemCallID(p.FunctionCall, base, callN),
						Type:     "function",
						Function: gemOAFunctionOut{Name: p.FunctionCall.Name, Arguments: gemCallArgs(p.FunctionCall.Args)},
					})
					callN++
					continue
				}
				if p.Text != nil {
					sb.WriteString(*p.Text)
				}
			}
		}
		text := sb.String()
		msg := gemOAMessageOut{Role: "assistant", ToolCalls: calls}
		if text != "" || len(calls) == 0 {
			msg.Content = &text
		}
		out.Choices = append(out.Choices, gemOAChoiceOut{
			Index:        i,
			Message:      msg,
			FinishReason: gemFinishReason(cand.FinishReason, len(calls) > 0),
		})
	}
	if len(r.Candidates) == 0 {
		if r.PromptFeedback == nil || r.PromptFeedback.BlockReason == "" {
			return nil, usage{}, gemBadUpstream(nil)
		}
		empty := ""
		out.Choices = append(out.Choices, gemOAChoiceOut{
			Message:      gemOAMessageOut{Role: "assistant", Content: &empty},
			FinishReason: "content_filter",
		})
	}
	var u usage
	if r.UsageMetadata != nil {
		ru, uo := gemUsage(r.UsageMetadata)
		u = ru
		out.Usage = &uo
	}
	return gemMarshal(out), u, nil
}

// ---------------------------------------------------------------------
// Streaming

type geminiStream struct {
	tc        translateContext
	id        string
	callBase  string
	started   bool
	finished  bool
	sawCall   bool
	calls     int
	u         usage
	usageOut  gemOAUsageOut
	haveUsage bool
}

// newGeminiStream translates :streamGenerateContent?alt=sse events.
func newGeminiStream(tc translateContext) streamTranslator {
	return &geminiStream{tc: tc}
}

func (s *geminiStream) chunk(delta gemOADelta, finish string) []byte {
	c := gemOAChunk{
		ID:      s.id,
		Object:  "chat.completion.chunk",
		Created: s.tc.created,
		Model:   s.tc.requestedModel,
		Choices: []gemOAChunkChoice{{Index: 0, Delta: delta}},
	}
	if finish != "" {
		c.Choices[0].FinishReason = &finish
	}
	return sseData(gemMarshal(c))
}

// textChunk appends a content delta for non-empty text.
func (s *geminiStream) textChunk(out []byte, text string) []byte {
	if text == "" {
		return out
	}
	return append(out, s.chunk(gemOADelta{Content: &text}, "")...)
}

func (s *geminiStream) event(ev sseEvent) ([]byte, *apiError) {
	data := bytes.TrimSpace(ev.data)
	if len(data) == 0 || string(data) == "[DONE]" {
		return nil, nil
	}
	if data[0] != '{' {
		return nil, gemBadUpstream(nil)
	}
	var r gemRespIn
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, gemBadUpstream(err)
	}
	if !gemIsNull(r.Error) {
		return nil, gemUpstreamError(r.Error, data)
	}
	var out []byte
	if !s.started {
		s.started = true
		s.id = gemResponseID(r.ResponseID, s.tc.idFallback)
		s.callBase = gemCallIDBase(r.ResponseID, s.tc.idFallback)
		empty := ""
		out = append(out, s.chunk(gemOADelta{Role: "assistant", Content: &empty}, "")...)
	}
	if r.UsageMetadata != nil {
		ru, uo := gemUsage(r.UsageMetadata)
		s.u = ru
		s.usageOut = uo
		s.haveUsage = true
	}
	if s.finished {
		return out, nil
	}
	if len(r.Candidates) == 0 && r.PromptFeedback != nil && r.PromptFeedback.BlockReason != "" {
		s.finished = true
		return append(out, s.chunk(gemOADelta{}, "content_filter")...), nil
	}
	for i := 0; i < len(r.Candidates); i++ {
		cand := &r.Candidates[i]
		if cand.Index != 0 {
			continue
		}
		text := ""
		if cand.Content != nil {
			for j := 0; j < len(cand.Content.Parts); j++ {
				p := &cand.Content.Parts[j]
				if p.Thought {
					continue
				}
				if p.FunctionCall != nil {
					out = s.textChunk(out, text)
					text = ""
					d := gemOAToolCallDelta{
						Index:    s.calls,
						ID:       gemCallID(p.FunctionCall, s.callBase, s.calls),
						Type:     "function",
						Function: gemOAFunctionOut{Name: p.FunctionCall.Name, Arguments: gemCallArgs(p.FunctionCall.Args)},
					}
					s.calls++
					s.sawCall = true
					out = append(out, s.chunk(gemOADelta{ToolCalls: []gemOAToolCallDelta{d}}, "")...)
					continue
				}
				if p.Text != nil {
					text += *p.Text
				}
			}
		}
		out = s.textChunk(out, text)
		if cand.FinishReason != "" {
			s.finished = true
			out = append(out, s.chunk(gemOADelta{}, gemFinishReason(cand.FinishReason, s.sawCall))...)
		}
		break
	}
	return out, nil
}

func (s *geminiStream) finish() ([]byte, *apiError) {
	if !s.finished {
		return nil, newError(http.StatusBadGateway, "server_error", "upstream_stream_truncated",
			"the gemini stream ended before a finish reason")
	}
	var out []byte
	if s.tc.includeUsage {
		uo := s.usageOut
		c := gemOAChunk{
			ID:      s.id,
			Object:  "chat.completion.chunk",
			Created: s.tc.created,
			Model:   s.tc.requestedModel,
			Choices: []gemOAChunkChoice{},
			Usage:   &uo,
		}
		out = append(out, sseData(gemMarshal(c))...)
	}
	return append(out, sseDone...), nil
}

func (s *geminiStream) usage() usage {
	return s.u
}

// ---------------------------------------------------------------------
// Embeddings

type gemTextPart struct {
	Text string `json:"text"`
}

type gemEmbedContent struct {
	Parts []gemTextPart `json:"parts"`
}

type gemEmbedReq struct {
	Model                string          `json:"model"`
	Content              gemEmbedContent `json:"content"`
	OutputDimensionality int64           `json:"outputDimensionality,omitempty"`
}

type gemBatchEmbedReq struct {
	Requests []gemEmbedReq `json:"requests"`
}

// geminiEmbedRequest translates an OpenAI embeddings request into an
// :embedContent body (a string input) or a :batchEmbedContents body (an
// array input, batch=true). Token-array inputs are a 400; dimensions
// maps to outputDimensionality. encoding_format "float" and "base64"
// are accepted: Gemini returns floats, and for "base64" the pipeline
// re-encodes the translated response with geminiEmbedBase64.
func geminiEmbedRequest(body []byte, upstreamModel string) (out []byte, batch bool, e *apiError) {
	return gemEmbedRequest(body, upstreamModel)
}

func gemEmbedRequest(body []byte, upstreamModel string) ([]byte, bool, *apiError) {
	top, e := gemTopObject(body)
	if e != nil {
		return nil, false, e
	}
	model := upstreamModel
	if !strings.HasPrefix(model, "models/") && !strings.HasPrefix(model, "tunedModels/") {
		model = "models/" + model
	}
	var dims int64
	if raw := top["dimensions"]; !gemIsNull(raw) {
		d, de := gemInt(raw, "dimensions")
		if de != nil {
			return nil, false, de
		}
		dims = d
		if dims < 1 {
			return nil, false, gemBadRequest(`"dimensions" must be at least 1`)
		}
	}
	if raw := top["encoding_format"]; !gemIsNull(raw) {
		f, e := gemString(raw, "encoding_format")
		if e != nil {
			return nil, false, e
		}
		if f != "float" && f != "base64" {
			return nil, false, errBadRequest("unsupported_value", `"encoding_format" must be "float" or "base64"`)
		}
	}
	one := func(text string) gemEmbedReq {
		return gemEmbedReq{Model: model, Content: gemEmbedContent{Parts: []gemTextPart{{Text: text}}}, OutputDimensionality: dims}
	}
	raw := top["input"]
	if gemIsNull(raw) {
		return nil, false, gemBadRequest(`"input" is required`)
	}
	if raw[0] == '"' {
		s, e := gemString(raw, "input")
		if e != nil {
			return nil, false, e
		}
		if s == "" {
			return nil, false, gemBadRequest(`"input" must not be empty`)
		}
		return gemMarshal(one(s)), false, nil
	}
	arr, ok := gemParseArray(raw)
	if !ok {
		return nil, false, gemBadRequest(`"input" must be a string or an array of strings`)
	}
	if len(arr) == 0 {
		return nil, false, gemBadRequest(`"input" must not be empty`)
	}
	reqs := make([]gemEmbedReq, 0, len(arr))
	for i := 0; i < len(arr); i++ {
		where := "input[" + strconv.Itoa(i) + "]"
		if len(arr[i]) == 0 || arr[i][0] != '"' {
			return nil, false, gemUnsupported(`"input" as token arrays is not supported for Gemini models (` + where + ` is not a string)`)
		}
		s, e := gemString(arr[i], where)
		if e != nil {
			return nil, false, e
		}
		if s == "" {
			return nil, false, gemBadRequest(`"` + where + `" must not be empty`)
		}
		reqs = append(reqs, one(s))
	}
	return gemMarshal(gemBatchEmbedReq{Requests: reqs}), true, nil
}

type gemEmbedValues struct {
	Values []json.Number `json:"values"`
}

type gemEmbedRespIn struct {
	Embedding  *gemEmbedValues  `json:"embedding"`
	Embeddings []gemEmbedValues `json:"embeddings"`
	Error      json.RawMessage  `json:"error"`
}

type gemOAEmbeddingOut struct {
	Object    string        `json:"object"`
	Index     int           `json:"index"`
	Embedding []json.Number `json:"embedding"`
}

type gemOAEmbedUsage struct {
	PromptTokens int64 `json:"prompt_tokens"`
	TotalTokens  int64 `json:"total_tokens"`
}

type gemOAEmbeddingsOut struct {
	Object string              `json:"object"`
	Data   []gemOAEmbeddingOut `json:"data"`
	Model  string              `json:"model"`
	Usage  gemOAEmbedUsage     `json:"usage"`
}

// geminiEmbedResponse translates an :embedContent (batch=false) or
// :batchEmbedContents (batch=true) response. The float values keep the
// exact text the upstream sent. Gemini reports no token counts, so the
// body's usage is zero and the returned usage is reported=false.
func geminiEmbedResponse(body []byte, tc translateContext, batch bool) ([]byte, usage, *apiError) {
	var r gemEmbedRespIn
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, usage{}, gemBadUpstream(err)
	}
	if !gemIsNull(r.Error) {
		return nil, usage{}, gemUpstreamError(r.Error, body)
	}
	var list []gemEmbedValues
	if batch {
		if len(r.Embeddings) == 0 {
			return nil, usage{}, gemBadUpstream(nil)
		}
		list = r.Embeddings
	} else {
		if r.Embedding == nil {
			return nil, usage{}, gemBadUpstream(nil)
		}
		list = []gemEmbedValues{*r.Embedding}
	}
	out := gemOAEmbeddingsOut{Object: "list", Model: tc.requestedModel, Data: make([]gemOAEmbeddingOut, 0, len(list))}
	for i := 0; i < len(list); i++ {
		vals := list[i].Values
		if vals == nil {
			return nil, usage{}, gemBadUpstream(nil)
		}
		for j := 0; j < len(vals); j++ {
			if vals[j] == "" {
				return nil, usage{}, gemBadUpstream(nil)
			}
		}
		out.Data = append(out.Data, gemOAEmbeddingOut{Object: "embedding", Index: i, Embedding: vals})
	}
	data := gemMarshal(out)
	if data == nil {
		return nil, usage{}, gemBadUpstream(nil)
	}
	return data, usage{}, nil
}

// geminiEmbedWantsBase64 reports whether an OpenAI embeddings request
// asked for encoding_format "base64".
func geminiEmbedWantsBase64(body []byte) bool {
	var req struct {
		EncodingFormat string `json:"encoding_format"`
	}
	if json.Unmarshal(body, &req) != nil {
		return false
	}
	return req.EncodingFormat == "base64"
}

type gemOAEmbeddingIn struct {
	Object    string          `json:"object"`
	Index     int             `json:"index"`
	Embedding json.RawMessage `json:"embedding"`
}

type gemOAEmbeddingsIn struct {
	Object string             `json:"object"`
	Data   []gemOAEmbeddingIn `json:"data"`
	Model  string             `json:"model"`
	Usage  json.RawMessage    `json:"usage"`
}

// geminiEmbedBase64 rewrites an OpenAI embeddings response's float
// arrays as base64 of little-endian float32, OpenAI's
// encoding_format "base64".
func geminiEmbedBase64(body []byte) ([]byte, *apiError) {
	var in gemOAEmbeddingsIn
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, gemBadUpstream(err)
	}
	for i := 0; i < len(in.Data); i++ {
		var nums []json.Number
		if err := json.Unmarshal(in.Data[i].Embedding, &nums); err != nil {
			return nil, gemBadUpstream(err)
		}
		buf := make([]byte, 4*len(nums))
		for j := 0; j < len(nums); j++ {
			f, err := strconv.ParseFloat(string(nums[j]), 32)
			if err != nil && !errors.Is(err, strconv.ErrRange) {
				return nil, gemBadUpstream(err)
			}
			binary.LittleEndian.PutUint32(buf[4*j:], math.Float32bits(float32(f)))
		}
		in.Data[i].Embedding = gemQuote(base64.StdEncoding.EncodeToString(buf))
	}
	return gemMarshal(in), nil
}

// ---------------------------------------------------------------------
// Images (Imagen :predict)

type gemImageInstance struct {
	Prompt string `json:"prompt"`
}

type gemImageParams struct {
	SampleCount int64  `json:"sampleCount"`
	AspectRatio string `json:"aspectRatio"`
}

type gemImageReq struct {
	Instances  []gemImageInstance `json:"instances"`
	Parameters gemImageParams     `json:"parameters"`
}

// geminiImageRequest translates an OpenAI images/generations request
// into an Imagen :predict body: n → sampleCount (default 1), size →
// aspectRatio (1024x1024/512x512 → 1:1, 1792x1024 → 16:9, 1024x1792 →
// 9:16, absent → 1:1, anything else a 400). response_format "url", a
// truthy quality or style, and a missing prompt are 400s; other fields
// are ignored.
func geminiImageRequest(body []byte) (out []byte, e *apiError) {
	return gemImageRequest(body)
}

func gemImageRequest(body []byte) ([]byte, *apiError) {
	top, e := gemTopObject(body)
	if e != nil {
		return nil, e
	}
	raw := top["prompt"]
	if gemIsNull(raw) {
		return nil, gemBadRequest(`"prompt" is required`)
	}
	prompt, e := gemString(raw, "prompt")
	if e != nil {
		return nil, e
	}
	if strings.TrimSpace(prompt) == "" {
		return nil, gemBadRequest(`"prompt" must not be empty`)
	}
	if gemTruthy(top["quality"]) {
		return nil, gemUnsupported(`"quality" is not supported for Gemini (Imagen) models`)
	}
	if gemTruthy(top["style"]) {
		return nil, gemUnsupported(`"style" is not supported for Gemini (Imagen) models`)
	}
	if raw := top["response_format"]; !gemIsNull(raw) {
		f, e := gemString(raw, "response_format")
		if e != nil {
			return nil, e
		}
		switch f {
		case "b64_json":
		case "url":
			return nil, gemUnsupported(`"response_format": "url" is not supported for Gemini (Imagen) models; use "b64_json"`)
		default:
			return nil, errBadRequest("unsupported_value", `"response_format" must be "b64_json" or "url"`)
		}
	}
	n := int64(1)
	if raw := top["n"]; !gemIsNull(raw) {
		v, ne := gemInt(raw, "n")
		if ne != nil {
			return nil, ne
		}
		n = v
		if n < 1 {
			return nil, gemBadRequest(`"n" must be at least 1`)
		}
	}
	ratio := "1:1"
	if raw := top["size"]; !gemIsNull(raw) {
		size, e := gemString(raw, "size")
		if e != nil {
			return nil, e
		}
		switch size {
		case "1024x1024", "512x512":
		case "1792x1024":
			ratio = "16:9"
		case "1024x1792":
			ratio = "9:16"
		default:
			return nil, errBadRequest("unsupported_value", `"size" "`+size+`" is not supported for Gemini (Imagen) models (use 1024x1024, 512x512, 1792x1024 or 1024x1792)`)
		}
	}
	req := gemImageReq{
		Instances:  []gemImageInstance{{Prompt: prompt}},
		Parameters: gemImageParams{SampleCount: n, AspectRatio: ratio},
	}
	return gemMarshal(req), nil
}

type gemPredictionIn struct {
	BytesBase64Encoded *string `json:"bytesBase64Encoded"`
	RaiFilteredReason  string  `json:"raiFilteredReason"`
}

type gemPredictRespIn struct {
	Predictions []gemPredictionIn `json:"predictions"`
	Error       json.RawMessage   `json:"error"`
}

type gemOAImageOut struct {
	B64JSON string `json:"b64_json"`
}

type gemOAImagesOut struct {
	Created int64           `json:"created"`
	Data    []gemOAImageOut `json:"data"`
}

// geminiImageResponse translates an Imagen :predict response into
// OpenAI's {"created","data":[{"b64_json"}]}. Predictions Imagen
// filtered (no image bytes) are skipped; when nothing is left the
// request was blocked, a 400 content_policy_violation.
func geminiImageResponse(body []byte, created int64) ([]byte, *apiError) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, gemBadUpstream(nil)
	}
	var r gemPredictRespIn
	if err := json.Unmarshal(trimmed, &r); err != nil {
		return nil, gemBadUpstream(err)
	}
	if !gemIsNull(r.Error) {
		return nil, gemUpstreamError(r.Error, body)
	}
	out := gemOAImagesOut{Created: created, Data: []gemOAImageOut{}}
	for i := 0; i < len(r.Predictions); i++ {
		p := r.Predictions[i]
		if p.BytesBase64Encoded == nil || *p.BytesBase64Encoded == "" {
			continue
		}
		out.Data = append(out.Data, gemOAImageOut{B64JSON: *p.BytesBase64Encoded})
	}
	if len(out.Data) == 0 {
		return nil, errBadRequest("content_policy_violation",
			"the image request was blocked by the provider's safety filters (no image was returned)")
	}
	return gemMarshal(out), nil
}
