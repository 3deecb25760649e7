package gateway

import (
	"net/http"
	"net/url"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/translate"
)

// prepareFunc is one cell of a backend's capability table: it builds the
// outbound request for one candidate of a call and says how its answer
// is read (outbound.decode, outbound.translator). It never writes to the
// client; a request the provider type cannot express is an error.
type prepareFunc func(c *call, cand candidate) (*outbound, *apiError)

// backend is a provider type's capability table: one prepareFunc per
// operation, nil where the type has no such endpoint (a 501).
type backend struct {
	ops [operationCount]prepareFunc
}

var (
	openAIBackend    = &backend{}
	anthropicBackend = &backend{}
	geminiBackend    = &backend{}
)

func init() {
	openAIBackend.ops[opChat] = openAIChat
	openAIBackend.ops[opEmbeddings] = openAIJSON
	openAIBackend.ops[opImages] = openAIJSON
	openAIBackend.ops[opSpeech] = openAISpeech
	openAIBackend.ops[opTranscriptions] = openAITranscription
	anthropicBackend.ops[opChat] = anthropicChat
	geminiBackend.ops[opChat] = geminiChat
	geminiBackend.ops[opEmbeddings] = geminiEmbeddings
	geminiBackend.ops[opImages] = geminiImages
	anthropicBackend.ops[opCountTokens] = anthropicCountTokens
	openAIBackend.ops[opCountTokens] = localCountTokens
	geminiBackend.ops[opCountTokens] = localCountTokens
	// The Messages, Ollama and Responses APIs: every type through the
	// hub (an anthropic provider gets /v1/messages as is, as does an
	// openai provider with responsesApi "native" /v1/responses).
	for _, b := range []struct {
		be               *backend
		chat, embeddings prepareFunc
	}{{openAIBackend, openAIChat, openAIJSON}, {anthropicBackend, anthropicChat, nil}, {geminiBackend, geminiChat, geminiEmbeddings}} {
		chat, embeddings := b.chat, b.embeddings
		b.be.ops[opOllamaChat] = func(c *call, cand candidate) (*outbound, *apiError) {
			return viaHub(c, cand, chat, chatRoute, ollamaChatToHub)
		}
		b.be.ops[opOllamaGenerate] = func(c *call, cand candidate) (*outbound, *apiError) {
			return viaHub(c, cand, chat, chatRoute, ollamaGenerateToHub)
		}
		b.be.ops[opResponses] = func(c *call, cand candidate) (*outbound, *apiError) {
			return viaHub(c, cand, chat, chatRoute, responsesToHub)
		}
		b.be.ops[opMessages] = func(c *call, cand candidate) (*outbound, *apiError) {
			return viaHub(c, cand, chat, chatRoute, anthropicToHub)
		}
		if embeddings != nil {
			b.be.ops[opOllamaEmbed] = func(c *call, cand candidate) (*outbound, *apiError) {
				return viaHub(c, cand, embeddings, embeddingsRoute, ollamaEmbedToHub)
			}
			b.be.ops[opOllamaEmbeddings] = func(c *call, cand candidate) (*outbound, *apiError) {
				return viaHub(c, cand, embeddings, embeddingsRoute, ollamaEmbeddingsToHub)
			}
		}
	}
	openAIBackend.ops[opResponses] = openAIResponses
	anthropicBackend.ops[opMessages] = anthropicMessages
}

// backendFor is the capability table of a provider type.
func backendFor(kind string) *backend {
	switch kind {
	case providerAnthropic:
		return anthropicBackend
	case providerGemini:
		return geminiBackend
	}
	return openAIBackend
}

// jsonOutbound is a POST of a JSON body to url.
func jsonOutbound(cand candidate, url string, body []byte) *outbound {
	return &outbound{provider: cand.provider, model: cand.model, method: http.MethodPost, url: url, body: body,
		contentType: "application/json", accept: "application/json"}
}

// openAIChat forwards the body with only the model rewritten (and
// max_tokens renamed for reasoning models); a stream is relayed as is.
// A stream whose client did not ask for usage asks for it
// (stream_options.include_usage), and the relay takes it out of what the
// client sees: every stream is accounted.
func openAIChat(c *call, cand candidate) (*outbound, *apiError) {
	body := c.req.forOpenAI(cand.model)
	strip := c.req.stream && !c.req.includeUsage
	if strip {
		body = withStreamUsage(c.req, body)
	}
	o := jsonOutbound(cand, cand.provider.baseURL+c.route.path, body)
	o.accept = c.r.Header.Get("Accept")
	o.stream = c.req.stream
	o.stripUsage = strip
	return o, nil
}

// openAIJSON forwards embeddings and images with only the model
// rewritten; the answer is relayed as is.
func openAIJSON(c *call, cand candidate) (*outbound, *apiError) {
	o := jsonOutbound(cand, cand.provider.baseURL+c.route.path, c.req.withModel(cand.model))
	o.accept = c.r.Header.Get("Accept")
	return o, nil
}

// openAISpeech forwards audio/speech; the binary answer streams to the
// client as it arrives.
func openAISpeech(c *call, cand candidate) (*outbound, *apiError) {
	o := jsonOutbound(cand, cand.provider.baseURL+c.route.path, c.req.withModel(cand.model))
	o.accept = ""
	o.stream, o.binary = true, true
	return o, nil
}

// openAITranscription forwards the multipart body: replayed
// byte-for-byte when its model field is already the upstream id,
// otherwise rebuilt with only the model part rewritten.
func openAITranscription(c *call, cand candidate) (*outbound, *apiError) {
	body := c.req.raw
	contentType := c.r.Header.Get("Content-Type")
	if cand.model != c.req.model {
		rebuilt, rebuiltType, e := rewriteMultipartModel(contentType, body, cand.model)
		if e != nil {
			return nil, e
		}
		body, contentType = rebuilt, rebuiltType
	}
	o := jsonOutbound(cand, cand.provider.baseURL+c.route.path, body)
	o.contentType = contentType
	o.accept = c.r.Header.Get("Accept")
	return o, nil
}

// anthropicChat translates the hub request to the Messages API and the
// answer back (stream or whole).
func anthropicChat(c *call, cand candidate) (*outbound, *apiError) {
	var body []byte
	var stream bool
	var e *apiError
	if c.req.fields != nil {
		body, stream, e = translate.AnthropicChatRequestFields(c.req.fields, cand.model)
	} else {
		body, stream, e = translate.AnthropicChatRequest(c.req.raw, cand.model)
	}
	if e != nil {
		return nil, e
	}
	return translatedChat(c, cand, cand.provider.baseURL+"/v1/messages", body, stream, translate.AnthropicChatResponse, translate.NewAnthropicStream), nil
}

// geminiChat translates the hub request to :generateContent (or
// :streamGenerateContent?alt=sse) and the answer back.
func geminiChat(c *call, cand candidate) (*outbound, *apiError) {
	var body []byte
	var stream bool
	var e *apiError
	if c.req.fields != nil {
		body, stream, e = translate.GeminiChatRequestFields(c.req.fields)
	} else {
		body, stream, e = translate.GeminiChatRequest(c.req.raw)
	}
	if e != nil {
		return nil, e
	}
	u := geminiModelURL(cand.provider, cand.model, "generateContent")
	if stream {
		u = geminiModelURL(cand.provider, cand.model, "streamGenerateContent") + "?alt=sse"
	}
	return translatedChat(c, cand, u, body, stream, translate.GeminiChatResponse, translate.NewGeminiStream), nil
}

// translatedChat is the outbound of a translating backend's chat call.
func translatedChat(c *call, cand candidate, url string, body []byte, stream bool,
	response func([]byte, translate.Context) ([]byte, translate.Usage, *apiError),
	newStream func(translate.Context) translate.StreamTranslator) *outbound {
	o := jsonOutbound(cand, url, body)
	tc := translateContext(c, cand.model)
	if stream {
		o.accept, o.stream = "text/event-stream", true
		o.translator = func() translate.StreamTranslator { return newStream(tc) }
		return o
	}
	o.decode = func(data []byte) ([]byte, translate.Usage, *apiError) { return response(data, tc) }
	return o
}

// geminiModelURL is {base}/v1beta/models/{model}:{method}; the model id
// is path-escaped so it cannot add path segments or a query.
func geminiModelURL(p *providerRuntime, model, method string) string {
	return p.baseURL + "/v1beta/models/" + url.PathEscape(model) + ":" + method
}

// geminiEmbeddings maps OpenAI embeddings to :embedContent (one input)
// or :batchEmbedContents (a list).
func geminiEmbeddings(c *call, cand candidate) (*outbound, *apiError) {
	body, batch, e := translate.GeminiEmbedRequest(c.req.raw, cand.model)
	if e != nil {
		return nil, e
	}
	method := "embedContent"
	if batch {
		method = "batchEmbedContents"
	}
	tc := translateContext(c, cand.model)
	wantBase64 := translate.GeminiEmbedWantsBase64(c.req.raw)
	o := jsonOutbound(cand, geminiModelURL(cand.provider, cand.model, method), body)
	o.decode = func(data []byte) ([]byte, translate.Usage, *apiError) {
		out, u, e := translate.GeminiEmbedResponse(data, tc, batch)
		if e == nil && wantBase64 {
			// The official SDKs ask for base64 by default.
			out, e = translate.GeminiEmbedBase64(out)
		}
		return out, u, e
	}
	return o, nil
}

// geminiImages maps images/generations to Imagen's :predict.
func geminiImages(c *call, cand candidate) (*outbound, *apiError) {
	body, e := translate.GeminiImageRequest(c.req.raw)
	if e != nil {
		return nil, e
	}
	created := time.Now().Unix()
	o := jsonOutbound(cand, geminiModelURL(cand.provider, cand.model, "predict"), body)
	o.decode = func(data []byte) ([]byte, translate.Usage, *apiError) {
		out, e := translate.GeminiImageResponse(data, created)
		return out, translate.Usage{}, e
	}
	return o, nil
}
