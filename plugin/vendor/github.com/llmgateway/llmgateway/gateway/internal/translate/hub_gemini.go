package translate

import (
	"encoding/json"
	"net/http"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// Hub ⇄ Gemini (v1beta): OpenAI-shaped chat, embeddings and image
// requests to generateContent / streamGenerateContent?alt=sse /
// embedContent / batchEmbedContents / Imagen predict, and back. The
// pipeline builds the URLs; the model lives there, not in the bodies
// (except embeddings, where every request names "models/<id>").
//
// Files: hub_gemini_request.go (entry point, generationConfig),
// hub_gemini_messages.go and hub_gemini_parts.go (the conversation),
// hub_gemini_tools.go and hub_gemini_schema.go (tools), then
// hub_gemini_response.go and hub_gemini_stream.go (answers),
// hub_gemini_media.go (embeddings, images); the Gemini shapes are in
// hub_gemini_wire.go. This file describes the mapping and holds the
// errors they share.
//
// Chat request mapping (GeminiChatRequest):
//
//   - system/developer messages → systemInstruction.parts, hoisted in
//     order from anywhere in the conversation; user → "user", assistant →
//     "model", tool → a functionResponse part in a "user" turn.
//     Consecutive turns of the same role are merged. Empty text is
//     skipped, and a turn left with no parts is dropped.
//   - Parts: text; image_url data: URLs (parseDataURL) → inlineData,
//     http(s) URLs → fileData with a MIME type guessed from the path's
//     extension (image/jpeg when unknown); input_audio (wav, mp3) →
//     inlineData; file.file_data (a data URL, or base64 with a filename
//     of a known type) → inlineData (file_id is a 400: an OpenAI file id
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
// one; a call's thought signature rides in its id (geminiSignatureMark)
// and returns to Gemini with the call in the next request. A prompt blocked before generation (promptFeedback.blockReason,
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
// no "usage" and the Usage has Reported false; a stream then sends a
// zero usage chunk when include_usage asked for one.
//
// Stream: a role chunk on the first upstream event; one content chunk
// per run of text parts, one tool_calls chunk per (whole) functionCall;
// a finish chunk with an empty delta; events after the finish only
// update the usage (Gemini may send a usage-only final event); an
// {"error":...} event ends the stream with a 502 upstream_error; an end
// without any finishReason is a 502 upstream_stream_truncated. Only
// candidate 0 is streamed (n > 1 with stream is refused).

// geminiUnsupported is the 400 for a meaningful parameter Gemini cannot
// express.
func geminiUnsupported(msg string) *apierr.Error {
	return apierr.BadRequest("unsupported_parameter", msg)
}

// geminiBadResponse is the 502 for a Gemini answer that does not parse;
// cause is logged, never sent.
func geminiBadResponse(cause error) *apierr.Error {
	e := apierr.New(http.StatusBadGateway, "server_error", "upstream_bad_response",
		"the gemini upstream returned a response the gateway could not parse")
	e.Cause = cause
	return e
}

// geminiUpstreamError turns a Gemini {"error":{...}} body into a 502 that
// carries Gemini's status and message, with the body under
// error.upstream.
func geminiUpstreamError(raw json.RawMessage, whole []byte) *apierr.Error {
	var ge geminiWireError
	_ = json.Unmarshal(raw, &ge)
	msg := "the gemini upstream reported an error"
	if ge.Status != "" {
		msg += ": " + ge.Status
	}
	if ge.Message != "" {
		msg += ": " + ge.Message
	}
	e := apierr.New(http.StatusBadGateway, "server_error", "upstream_error", msg)
	e.Upstream = apierr.EmbedUpstream(whole)
	return e
}

// geminiStreamError is geminiUpstreamError for an error event inside a
// stream, whose status is already out: it keeps Gemini's code when that
// says rate limited (429) or overloaded (503), so a client's mid-stream
// error names what happened (an Anthropic client gets rate_limit_error
// or overloaded_error) rather than a gateway failure.
func geminiStreamError(raw json.RawMessage, whole []byte) *apierr.Error {
	e := geminiUpstreamError(raw, whole)
	var ge geminiWireError
	_ = json.Unmarshal(raw, &ge)
	switch ge.Code {
	case http.StatusTooManyRequests:
		e.Status, e.Kind, e.Class = http.StatusTooManyRequests, "rate_limit_error", apierr.ClassRateLimited
	case http.StatusServiceUnavailable:
		e.Status, e.Class = http.StatusServiceUnavailable, apierr.ClassServer
	}
	return e
}
