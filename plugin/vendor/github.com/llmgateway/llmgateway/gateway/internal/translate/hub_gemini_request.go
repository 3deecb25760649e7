package translate

import (
	"encoding/json"
	"strconv"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// Hub (OpenAI chat) request → Gemini generateContent request: the entry
// point, the refused parameters and generationConfig. hub_gemini.go
// describes the whole mapping.

// GeminiChatRequest translates an OpenAI chat request into a Gemini
// generateContent request body; the bool reports the client's "stream".
func GeminiChatRequest(body []byte) ([]byte, bool, *apierr.Error) {
	top, te := decodeRequestObject(body)
	if te != nil {
		return nil, false, te
	}
	return GeminiChatRequestFields(top)
}

// GeminiChatRequestFields is GeminiChatRequest for a body already decoded
// into its top-level members (json.Unmarshal into a
// map[string]json.RawMessage), which it only reads.
func GeminiChatRequestFields(top map[string]json.RawMessage) ([]byte, bool, *apierr.Error) {
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
func geminiRejectUnsupported(top map[string]json.RawMessage) *apierr.Error {
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

// geminiThinkingBudgets maps reasoning_effort to
// thinkingConfig.thinkingBudget in tokens (0 turns thinking off).
var geminiThinkingBudgets = map[string]string{
	"none":    "0",
	"minimal": "1024",
	"low":     "1024",
	"medium":  "8192",
	"high":    "24576",
	"xhigh":   "24576",
	"max":     "24576",
}

// geminiGenerationConfig fills gen from the sampling fields, checked in
// a fixed order so the first bad field is the one reported.
func geminiGenerationConfig(top map[string]json.RawMessage, gen *geminiWireGenerationConfig, stream bool) *apierr.Error {
	temperature, e := geminiOptionalNumber(top, "temperature")
	if e != nil {
		return e
	}
	gen.Temperature = temperature
	topP, e := geminiOptionalNumber(top, "top_p")
	if e != nil {
		return e
	}
	gen.TopP = topP
	if e := geminiMaxOutputTokens(top, gen); e != nil {
		return e
	}
	if raw := top["stop"]; !isJSONNull(raw) {
		stop, e := readStopSequences(raw, false)
		if e != nil {
			return e
		}
		gen.StopSequences = stop
	}
	if e := geminiCandidateCount(top["n"], gen, stream); e != nil {
		return e
	}
	if e := geminiPenaltiesAndSeed(top, gen); e != nil {
		return e
	}
	if e := geminiThinking(top["reasoning_effort"], gen); e != nil {
		return e
	}
	return geminiResponseFormat(top["response_format"], gen)
}

// geminiOptionalNumber returns the exact text of the number field name,
// nil when it is absent or null.
func geminiOptionalNumber(top map[string]json.RawMessage, name string) (json.RawMessage, *apierr.Error) {
	raw := top[name]
	if isJSONNull(raw) {
		return nil, nil
	}
	return readNumberText(raw, name)
}

// geminiMaxOutputTokens maps max_completion_tokens, or else the legacy
// max_tokens, to maxOutputTokens.
func geminiMaxOutputTokens(top map[string]json.RawMessage, gen *geminiWireGenerationConfig) *apierr.Error {
	name := "max_completion_tokens"
	raw := top[name]
	if isJSONNull(raw) {
		name = "max_tokens"
		raw = top[name]
	}
	if isJSONNull(raw) {
		return nil
	}
	n, e := readInteger(raw, name)
	if e != nil {
		return e
	}
	if n < 1 {
		return errInvalidRequest(`"` + name + `" must be at least 1`)
	}
	gen.MaxOutputTokens = n
	return nil
}

// geminiCandidateCount maps n to candidateCount. Only candidate 0 is
// streamed, so n > 1 with stream is refused.
func geminiCandidateCount(raw json.RawMessage, gen *geminiWireGenerationConfig, stream bool) *apierr.Error {
	if isJSONNull(raw) {
		return nil
	}
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
	return nil
}

// geminiPenaltiesAndSeed maps the non-zero presence and frequency
// penalties and the seed.
func geminiPenaltiesAndSeed(top map[string]json.RawMessage, gen *geminiWireGenerationConfig) *apierr.Error {
	presence, e := geminiOptionalNumber(top, "presence_penalty")
	if e != nil {
		return e
	}
	if isJSONTruthy(presence) {
		gen.PresencePenalty = presence
	}
	frequency, e := geminiOptionalNumber(top, "frequency_penalty")
	if e != nil {
		return e
	}
	if isJSONTruthy(frequency) {
		gen.FrequencyPenalty = frequency
	}
	if raw := top["seed"]; !isJSONNull(raw) {
		n, e := readInteger(raw, "seed")
		if e != nil {
			return e
		}
		gen.Seed = json.RawMessage(strconv.FormatInt(n, 10))
	}
	return nil
}

// geminiThinking maps reasoning_effort to a thinking budget.
func geminiThinking(raw json.RawMessage, gen *geminiWireGenerationConfig) *apierr.Error {
	if isJSONNull(raw) {
		return nil
	}
	effort, e := readString(raw, "reasoning_effort")
	if e != nil {
		return e
	}
	budget, known := geminiThinkingBudgets[effort]
	if !known {
		return apierr.BadRequest("unsupported_value", `"reasoning_effort" value "`+effort+`" is not supported for Gemini models`)
	}
	gen.ThinkingConfig = &geminiWireThinkingConfig{ThinkingBudget: json.RawMessage(budget)}
	return nil
}

// geminiResponseFormat maps response_format: json_object to a JSON MIME
// type, json_schema to that plus the schema.
func geminiResponseFormat(raw json.RawMessage, gen *geminiWireGenerationConfig) *apierr.Error {
	if isJSONNull(raw) {
		return nil
	}
	rf, ok := parseJSONObject(raw)
	if !ok {
		return errInvalidField("response_format", "an object")
	}
	typ, e := readString(rf["type"], "response_format.type")
	if e != nil {
		return e
	}
	switch typ {
	case "text":
		return nil
	case "json_object":
		gen.ResponseMimeType = "application/json"
		return nil
	case "json_schema":
		gen.ResponseMimeType = "application/json"
		return geminiResponseSchema(rf["json_schema"], gen)
	}
	return apierr.BadRequest("unsupported_value", `"response_format.type" value "`+typ+`" is not supported`)
}

// geminiResponseSchema sends a json_schema's schema as responseSchema
// when it fits Gemini's subset (with propertyOrdering, so the answer
// keeps the client's property order), else verbatim as
// responseJsonSchema.
func geminiResponseSchema(raw json.RawMessage, gen *geminiWireGenerationConfig) *apierr.Error {
	js, ok := parseJSONObject(raw)
	if !ok {
		return errInvalidField("response_format.json_schema", "an object")
	}
	schema := js["schema"]
	if isJSONNull(schema) {
		return nil
	}
	if schema[0] != '{' {
		return errInvalidField("response_format.json_schema.schema", "a JSON object")
	}
	if conv, ok := geminiConvertSchema(schema, 0, true); ok {
		gen.ResponseSchema = conv
	} else {
		gen.ResponseJSONSchema = schema
	}
	return nil
}
