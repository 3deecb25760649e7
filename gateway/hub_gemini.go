package gateway

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
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
