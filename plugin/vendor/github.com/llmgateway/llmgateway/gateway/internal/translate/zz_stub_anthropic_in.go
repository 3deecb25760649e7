package translate

import "github.com/llmgateway/llmgateway/gateway/internal/apierr"

// TEMPORARY STUB (replaced by the real translators).
type AnthropicInbound struct {
	Stream, Thinking, ThinkingDropped bool
	MaxTokens                         int64
}

func HubFromAnthropicRequest(body []byte) ([]byte, AnthropicInbound, *apierr.Error) {
	return body, AnthropicInbound{}, nil
}
func AnthropicFromHubResponse(hub []byte, ctx Context, in AnthropicInbound) ([]byte, Usage, *apierr.Error) {
	return hub, Usage{}, nil
}
func NewAnthropicOutStream(inner StreamTranslator, ctx Context, in AnthropicInbound, est int64) StreamTranslator {
	return inner
}
func AnthropicCountTokens(body []byte) (int64, *apierr.Error) { return int64(len(body)+3) / 4, nil }
