package translate

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// Anthropic Messages response → hub chat.completion
// (AnthropicChatResponse), and what the stream translator
// (hub_anthropic_stream.go) shares with it: finish reasons, usage and
// errors. Thinking and redacted_thinking blocks are dropped, whole or
// streamed: OpenAI's chat format has no standard field for them, and
// completion_tokens already counts them. Block types this translator
// does not know (server tools, citations) are ignored.

// anthropicFinishReason maps a stop_reason to a finish_reason; unknown
// or missing reasons read as a normal stop.
func anthropicFinishReason(stopReason *string) string {
	if stopReason == nil {
		return "stop"
	}
	switch *stopReason {
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "tool_use":
		return "tool_calls"
	case "refusal":
		return "content_filter"
	}
	return "stop"
}

// anthropicBadResponse is the 502 for an Anthropic answer that does not
// parse; cause is logged, never sent.
func anthropicBadResponse(what string, cause error) *apierr.Error {
	e := apierr.New(http.StatusBadGateway, "server_error", "upstream_bad_response",
		"anthropic-type provider sent a malformed "+what)
	e.Cause = cause
	return e
}

// addTo folds the reported counts into u; absent counts leave u
// unchanged.
func (w *anthropicWireUsage) addTo(u *Usage) {
	if w == nil {
		return
	}
	u.Reported = true
	if w.InputTokens != nil {
		u.PromptTokens = *w.InputTokens
	}
	if w.CacheCreationInputTokens != nil {
		u.CacheCreationTokens = *w.CacheCreationInputTokens
	}
	if w.CacheReadInputTokens != nil {
		u.CacheReadTokens = *w.CacheReadInputTokens
	}
	if w.OutputTokens != nil {
		u.CompletionTokens = *w.OutputTokens
	}
}

// anthropicUsageTotals turns the raw fold (PromptTokens holding
// input_tokens only) into the gateway's usage, where PromptTokens
// includes the cache counts.
func anthropicUsageTotals(raw Usage) Usage {
	raw.PromptTokens += raw.CacheCreationTokens + raw.CacheReadTokens
	return raw
}

// AnthropicChatResponse translates a non-streaming Messages response
// into an OpenAI chat.completion and reports its usage.
func AnthropicChatResponse(body []byte, tc Context) ([]byte, Usage, *apierr.Error) {
	var msg anthropicWireResponse
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, Usage{}, anthropicBadResponse("response (not a JSON object)", nil)
	}
	if err := json.Unmarshal(trimmed, &msg); err != nil {
		return nil, Usage{}, anthropicBadResponse("response", err)
	}
	if msg.Type == "error" || msg.Error != nil {
		e := anthropicStreamError(msg.Error)
		e.Upstream = apierr.EmbedUpstream(trimmed)
		return nil, Usage{}, e
	}
	if msg.Type != "message" && (msg.Type != "" || msg.Content == nil) {
		return nil, Usage{}, anthropicBadResponse("response (not a message)", nil)
	}
	var text strings.Builder
	hasText := false
	var calls []hubToolCall
	for i := 0; i < len(msg.Content); i++ {
		block := msg.Content[i]
		switch block.Type {
		case "text":
			text.WriteString(block.Text)
			hasText = true
		case "tool_use":
			calls = append(calls, hubToolCall{ID: block.ID, Type: "function",
				Function: hubFunction{Name: block.Name, Arguments: compactArguments(block.Input)}})
		}
	}
	message := hubMessage{Role: "assistant", ToolCalls: calls}
	if hasText || len(calls) == 0 {
		s := text.String()
		message.Content = &s
	}
	id := msg.ID
	if id == "" {
		id = tc.IDFallback
	}
	out := hubChatCompletion{
		ID:      id,
		Object:  "chat.completion",
		Created: tc.Created,
		Model:   tc.RequestedModel,
		Choices: []hubChoice{{Index: 0, Message: message, FinishReason: anthropicFinishReason(msg.StopReason)}},
	}
	var u Usage
	msg.Usage.addTo(&u)
	u = anthropicUsageTotals(u)
	if u.Reported {
		out.Usage = newHubUsage(u)
	}
	data := encodeJSON(&out)
	if data == nil {
		return nil, Usage{}, anthropicBadResponse("response", nil)
	}
	return data, u, nil
}

// anthropicStreamError is the error an Anthropic "error" payload
// becomes: a 502 naming Anthropic's error type and message.
func anthropicStreamError(detail *anthropicWireError) *apierr.Error {
	msg := "anthropic-type provider reported an error"
	if detail != nil && detail.Type != "" {
		msg += ": " + detail.Type
		if detail.Message != "" {
			msg += ": " + detail.Message
		}
	}
	return apierr.New(http.StatusBadGateway, "server_error", "upstream_error", msg)
}
