package translate

import (
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// TEMPORARY STUBS (replaced by the real translators before merge).

type OllamaInbound struct {
	Stream, Generate, Think bool
	Model                   string
}
type OllamaTimes struct{ Start, FirstToken, End time.Time }

func HubFromOllamaChat(body []byte) ([]byte, OllamaInbound, *apierr.Error)     { return body, OllamaInbound{}, nil }
func HubFromOllamaGenerate(body []byte) ([]byte, OllamaInbound, *apierr.Error) { return body, OllamaInbound{}, nil }
func OllamaFromHubResponse(hub []byte, in OllamaInbound, t OllamaTimes) ([]byte, Usage, *apierr.Error) {
	return hub, Usage{}, nil
}
func NewOllamaOutStream(inner StreamTranslator, in OllamaInbound, now func() time.Time) StreamTranslator {
	return inner
}
func HubFromOllamaEmbed(body []byte, legacy bool) ([]byte, string, *apierr.Error) { return body, "", nil }
func OllamaFromHubEmbeddings(hub []byte, legacy bool, model string, t OllamaTimes) ([]byte, Usage, *apierr.Error) {
	return hub, Usage{}, nil
}

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
