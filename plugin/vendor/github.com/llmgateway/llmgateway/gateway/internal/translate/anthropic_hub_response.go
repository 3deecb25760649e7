package translate

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// Hub chat.completion → Anthropic Message (AnthropicFromHubResponse), and
// what the stream translator (anthropic_hub_stream.go) shares with it:
// ids, stop reasons, usage and errors.
//
//   - content blocks in this order: thinking (the message's
//     reasoning_content or reasoning, only when the client enabled
//     thinking; its signature is empty), text (content; a refusal when
//     there is no content), then one tool_use per tool call, its input
//     the arguments object ({} when they are empty or not an object) and
//     its id the hub's (so a Gemini call id comes back unchanged in the
//     tool_result), generated when missing;
//   - stop_reason: tool_use whenever a tool_use block is sent, else
//     length → max_tokens, tool_calls/function_call → tool_use,
//     content_filter (or a refusal) → refusal, anything else → end_turn.
//     OpenAI does not say which stop sequence matched, so stop_sequence
//     is always null;
//   - usage: input_tokens = prompt_tokens − cached_tokens,
//     cache_read_input_tokens = cached_tokens, cache_creation 0,
//     output_tokens = completion_tokens (zeros when the hub sent none);
//   - only choice 0 is read: an Anthropic request asks for one.

// AnthropicFromHubResponse translates a whole hub answer (an OpenAI
// chat.completion) into an Anthropic Message for a client that enabled
// thinking or not (in.Thinking), and reports its usage (Reported when
// the hub sent usage). A body that is not a chat.completion is a 502 of
// class ClassBadResponse; an error body is the provider's error.
func AnthropicFromHubResponse(hub []byte, ctx Context, in AnthropicInbound) ([]byte, Usage, *apierr.Error) {
	trimmed := bytes.TrimSpace(hub)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, Usage{}, hubBadResponse("answer (not a JSON object)", nil)
	}
	var body hubReadBody
	if err := json.Unmarshal(trimmed, &body); err != nil && !isTypeMismatch(err) {
		return nil, Usage{}, hubBadResponse("answer", err)
	}
	if !isJSONNull(body.Error) {
		return nil, Usage{}, hubUpstreamError(body.Error, trimmed)
	}
	if body.Choices == nil || body.Object != "" && body.Object != "chat.completion" {
		return nil, Usage{}, hubBadResponse("answer (not a chat.completion)", nil)
	}
	msg := anthropicOutMessage{ID: anthropicMessageID(body.ID, ctx.IDFallback), Type: "message", Role: "assistant",
		Model: ctx.RequestedModel, Content: []anthropicOutBlock{}}
	finish := ""
	refusal := false
	if len(body.Choices) > 0 {
		choice := &body.Choices[0]
		finish = choice.FinishReason
		msg.Content, refusal = anthropicOutBlocks(&choice.Message, msg.ID, in.Thinking)
	}
	toolUse := false
	for i := 0; i < len(msg.Content); i++ {
		toolUse = toolUse || msg.Content[i].Type == "tool_use"
	}
	stop := anthropicStopReason(finish, toolUse, refusal)
	msg.StopReason = &stop
	var u Usage
	if body.Usage != nil {
		msg.Usage, u = anthropicUsageFromHub(body.Usage)
	}
	data := encodeJSON(&msg)
	if data == nil {
		return nil, Usage{}, hubBadResponse("answer", nil)
	}
	return data, u, nil
}

// anthropicOutBlocks is the content of a hub message; the bool reports a
// refusal.
func anthropicOutBlocks(m *hubReadMessage, msgID string, thinking bool) ([]anthropicOutBlock, bool) {
	blocks := make([]anthropicOutBlock, 0, 2+len(m.ToolCalls))
	if thinking {
		reasoning := jsonStringValue(m.ReasoningContent)
		if reasoning == "" {
			reasoning = jsonStringValue(m.Reasoning)
		}
		if reasoning != "" {
			blocks = append(blocks, anthropicOutThinkingBlock(reasoning))
		}
	}
	text := anthropicOutContentText(m.Content)
	refusal := jsonStringValue(m.Refusal)
	if text == "" {
		text = refusal
	}
	if text != "" {
		blocks = append(blocks, anthropicOutTextBlock(text))
	}
	for i := 0; i < len(m.ToolCalls); i++ {
		call := &m.ToolCalls[i]
		id := call.ID
		if id == "" {
			id = anthropicToolID(msgID, i)
		}
		blocks = append(blocks, anthropicOutBlock{Type: "tool_use", ID: id, Name: call.Function.Name,
			Input: anthropicToolInputFrom(call.Function.Arguments)})
	}
	return blocks, refusal != ""
}

// anthropicOutTextBlock is a text block. A function, so every block
// points at its own string.
func anthropicOutTextBlock(text string) anthropicOutBlock {
	return anthropicOutBlock{Type: "text", Text: &text}
}

// anthropicOutThinkingBlock is a thinking block with an empty signature.
func anthropicOutThinkingBlock(thinking string) anthropicOutBlock {
	signature := ""
	return anthropicOutBlock{Type: "thinking", Thinking: &thinking, Signature: &signature}
}

// anthropicOutContentText is a hub message's text: its content string,
// or the text parts of an array content, concatenated.
func anthropicOutContentText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	if raw[0] == '"' {
		return jsonStringValue(raw)
	}
	var parts []hubReadPart
	if raw[0] != '[' || json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var sb strings.Builder
	for i := 0; i < len(parts); i++ {
		if parts[i].Type == "text" {
			sb.WriteString(parts[i].Text)
		}
	}
	return sb.String()
}

// anthropicToolInputFrom is a tool_use input for a tool call's
// arguments: the object the JSON string holds (or, from providers that
// send one, the object itself), numbers digit for digit; {} when they
// are empty or not an object.
func anthropicToolInputFrom(args json.RawMessage) json.RawMessage {
	if len(args) > 0 && args[0] == '{' {
		return json.RawMessage(compactArguments(args))
	}
	return anthropicToolInput(jsonStringValue(args))
}

// jsonStringValue is the string raw holds, "" when it holds anything
// else.
func jsonStringValue(raw json.RawMessage) string {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// isTypeMismatch reports whether a decode error (not nil) only says that
// a value had an unexpected type: the rest was decoded, and the value
// is read as absent.
func isTypeMismatch(err error) bool {
	_, ok := err.(*json.UnmarshalTypeError)
	return ok
}

// anthropicMessageID is the Anthropic id for a hub answer: "msg_" and
// the hub id without its "chatcmpl-" prefix (fallback when the hub sent
// none); an id that already starts with "msg_" is kept.
func anthropicMessageID(hubID, fallback string) string {
	id := hubID
	if id == "" {
		id = fallback
	}
	if strings.HasPrefix(id, "msg_") {
		return id
	}
	id = strings.TrimPrefix(id, "chatcmpl-")
	if id == "" {
		id = "gateway"
	}
	return "msg_" + id
}

// anthropicToolID is the id of the n-th tool call of message msgID when
// the hub sent none.
func anthropicToolID(msgID string, n int) string {
	return "toolu_" + strings.TrimPrefix(msgID, "msg_") + "_" + strconv.Itoa(n)
}

// anthropicStopReason maps a hub finish_reason to a stop_reason.
func anthropicStopReason(finish string, toolUse, refusal bool) string {
	if toolUse {
		return "tool_use"
	}
	switch finish {
	case "length":
		return "max_tokens"
	case "tool_calls", "function_call":
		return "tool_use"
	case "content_filter":
		return "refusal"
	}
	if refusal {
		return "refusal"
	}
	return "end_turn"
}

// anthropicUsageFromHub is the Anthropic usage, and the gateway's, for a
// hub usage.
func anthropicUsageFromHub(h *hubReadUsage) (anthropicOutUsage, Usage) {
	var cached int64
	if h.PromptTokensDetails != nil {
		cached = h.PromptTokensDetails.CachedTokens
	}
	input := h.PromptTokens - cached
	if input < 0 {
		input = 0
	}
	out := anthropicOutUsage{InputTokens: input, OutputTokens: h.CompletionTokens, CacheReadInputTokens: cached}
	u := Usage{PromptTokens: h.PromptTokens, CompletionTokens: h.CompletionTokens, CacheReadTokens: cached, Reported: true}
	return out, u
}

// hubBadResponse is the 502 for a hub answer that cannot be read; cause
// is logged, never sent.
func hubBadResponse(what string, cause error) *apierr.Error {
	e := apierr.New(http.StatusBadGateway, "server_error", "upstream_bad_response", "the provider sent a malformed "+what)
	e.Class = apierr.ClassBadResponse
	e.Cause = cause
	return e
}

// hubUpstreamError is the error a hub error body (whole) becomes, with
// the provider's type and message, and a status read from its code,
// type or status (hubErrorStatus).
func hubUpstreamError(raw json.RawMessage, whole []byte) *apierr.Error {
	var detail hubReadError
	if raw[0] == '{' {
		_ = json.Unmarshal(raw, &detail)
	} else {
		detail.Message = jsonStringValue(raw)
	}
	status := hubErrorStatus(&detail)
	msg := "the provider reported an error"
	if detail.Type != "" {
		msg += ": " + detail.Type
	}
	if detail.Message != "" {
		msg += ": " + detail.Message
	}
	e := apierr.New(status, "server_error", "upstream_error", msg)
	e.Upstream = apierr.EmbedUpstream(whole)
	switch {
	case status == http.StatusTooManyRequests:
		e.Class = apierr.ClassRateLimited
	case status >= 500:
		e.Class = apierr.ClassServer
	case status == http.StatusBadRequest:
		e.Class = apierr.ClassBadRequest
	default:
		e.Class = apierr.ClassRefused
	}
	return e
}

// hubErrorStatus is the HTTP status a hub error stands for: its code
// when that is a 4xx or 5xx status (as a number or a string), else one
// recognised from its type, code and status words (rate limits 429,
// overload 529, unavailable 503, timeouts 504), else 502.
func hubErrorStatus(d *hubReadError) int {
	code := string(d.Code)
	if len(code) > 0 && code[0] == '"' {
		code = jsonStringValue(d.Code)
	}
	if n, err := strconv.Atoi(code); err == nil && n >= 400 && n <= 599 {
		return n
	}
	words := strings.ToLower(d.Type + " " + code + " " + d.Status)
	switch {
	case strings.Contains(words, "rate_limit") || strings.Contains(words, "resource_exhausted") ||
		strings.Contains(words, "insufficient_quota") || strings.Contains(words, "too_many_requests"):
		return http.StatusTooManyRequests
	case strings.Contains(words, "overloaded"):
		return 529
	case strings.Contains(words, "unavailable"):
		return http.StatusServiceUnavailable
	case strings.Contains(words, "timeout") || strings.Contains(words, "deadline_exceeded"):
		return http.StatusGatewayTimeout
	}
	return http.StatusBadGateway
}
