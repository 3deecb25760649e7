package translate

import "github.com/llmgateway/llmgateway/gateway/internal/apierr"

// TEMPORARY STUBS (replaced by the real translators before merge).

type ResponsesInbound struct {
	Stream       bool
	Model        string
	DroppedTools []string
	Namespaces   map[string]string
	Custom       map[string]bool
	Reasoning    bool
}

func HubFromResponsesRequest(body []byte) ([]byte, ResponsesInbound, *apierr.Error) {
	return body, ResponsesInbound{}, nil
}
func ResponsesFromHubResponse(hub []byte, ctx Context, in ResponsesInbound) ([]byte, Usage, *apierr.Error) {
	return hub, Usage{}, nil
}
func NewResponsesOutStream(inner StreamTranslator, ctx Context, in ResponsesInbound) StreamTranslator {
	return inner
}
