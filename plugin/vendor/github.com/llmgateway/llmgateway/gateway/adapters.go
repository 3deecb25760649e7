package gateway

import (
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// routeHandler serves one unified route against one provider type.
type routeHandler func(g *Gateway, w http.ResponseWriter, r *http.Request, c *unifiedCall)

// providerAdapter is what a provider type supports on the unified
// routes; a nil handler is a 501.
type providerAdapter struct {
	chat, embeddings, images, speech, transcriptions routeHandler
}

func (a *providerAdapter) handler(kind routeKind) routeHandler {
	switch kind {
	case routeChat:
		return a.chat
	case routeEmbeddings:
		return a.embeddings
	case routeImages:
		return a.images
	case routeSpeech:
		return a.speech
	case routeTranscriptions:
		return a.transcriptions
	}
	return nil
}

var (
	openAIAdapter = &providerAdapter{
		chat:           openAIForward,
		embeddings:     openAIForward,
		images:         openAIForward,
		speech:         openAISpeech,
		transcriptions: openAITranscription,
	}
	anthropicAdapter = &providerAdapter{
		chat: func(g *Gateway, w http.ResponseWriter, r *http.Request, c *unifiedCall) {
			anthropicChat.serve(g, w, r, c)
		},
	}
	geminiAdapter = &providerAdapter{
		chat: func(g *Gateway, w http.ResponseWriter, r *http.Request, c *unifiedCall) {
			geminiChat.serve(g, w, r, c)
		},
		embeddings: geminiEmbeddings,
		images:     geminiImages,
	}

	anthropicChat = &chatTranslation{
		request: anthropicChatRequest,
		url: func(p *providerRuntime, model string, stream bool) string {
			return p.baseURL + "/v1/messages"
		},
		response: anthropicChatResponse,
		stream:   newAnthropicStream,
	}
	geminiChat = &chatTranslation{
		request: func(body []byte, model string) ([]byte, bool, *apiError) {
			return geminiChatRequest(body)
		},
		url: func(p *providerRuntime, model string, stream bool) string {
			if stream {
				return geminiModelURL(p, model, "streamGenerateContent") + "?alt=sse"
			}
			return geminiModelURL(p, model, "generateContent")
		},
		response: geminiChatResponse,
		stream:   newGeminiStream,
	}
)

// geminiModelURL is {base}/v1beta/models/{model}:{method}; the model id
// is path-escaped so it cannot add path segments or a query.
func geminiModelURL(p *providerRuntime, model, method string) string {
	return p.baseURL + "/v1beta/models/" + url.PathEscape(model) + ":" + method
}

// geminiEmbeddings maps OpenAI embeddings to :embedContent (one input)
// or :batchEmbedContents (a list).
func geminiEmbeddings(g *Gateway, w http.ResponseWriter, r *http.Request, c *unifiedCall) {
	body, batch, e := geminiEmbedRequest(c.req.raw, c.model)
	if e != nil {
		writeOpenAIError(w, e)
		return
	}
	method := "embedContent"
	if batch {
		method = "batchEmbedContents"
	}
	tc := c.translateContext()
	g.translatedJSON(w, r, c, geminiModelURL(c.provider, c.model, method), body, func(data []byte) ([]byte, usage, *apiError) {
		out, u, e := geminiEmbedResponse(data, tc, batch)
		if e == nil && geminiEmbedWantsBase64(c.req.raw) {
			// The official SDKs ask for base64 by default.
			out, e = geminiEmbedBase64(out)
		}
		if e == nil && !u.reported {
			u = estimateUsage(len(c.req.raw))
		}
		return out, u, e
	})
}

// geminiImages maps images/generations to Imagen's :predict. Images are
// request-counted only: no tokens, no cost.
func geminiImages(g *Gateway, w http.ResponseWriter, r *http.Request, c *unifiedCall) {
	body, e := geminiImageRequest(c.req.raw)
	if e != nil {
		writeOpenAIError(w, e)
		return
	}
	created := time.Now().Unix()
	g.translatedJSON(w, r, c, geminiModelURL(c.provider, c.model, "predict"), body, func(data []byte) ([]byte, usage, *apiError) {
		out, e := geminiImageResponse(data, created)
		return out, usage{}, e
	})
}

func adapterFor(kind string) *providerAdapter {
	switch kind {
	case providerAnthropic:
		return anthropicAdapter
	case providerGemini:
		return geminiAdapter
	}
	return openAIAdapter
}

// openAIForward: the body forwarded verbatim, model rewritten (and
// max_tokens renamed for reasoning models on chat).
func openAIForward(g *Gateway, w http.ResponseWriter, r *http.Request, c *unifiedCall) {
	body := c.req.withModel(c.model)
	if c.route.kind == routeChat {
		body = c.req.forOpenAI(c.model)
	}
	g.forwardOpenAI(w, r, c, body)
}

// openAITranscription forwards the multipart body: replayed
// byte-for-byte when its model field is already the upstream id,
// otherwise rebuilt with only the model part rewritten.
func openAITranscription(g *Gateway, w http.ResponseWriter, r *http.Request, c *unifiedCall) {
	p := c.provider
	body := c.req.raw
	contentType := r.Header.Get("Content-Type")
	if c.model != c.req.model {
		rebuilt, rebuiltType, e := rewriteMultipartModel(contentType, body, c.model)
		if e != nil {
			writeOpenAIError(w, e)
			return
		}
		body = rebuilt
		contentType = rebuiltType
	}
	o := &outbound{provider: p, model: c.model, method: http.MethodPost, url: p.baseURL + c.route.path, body: body,
		contentType: contentType, accept: r.Header.Get("Accept"), readWhole: true}
	x, e := g.send(r, o)
	if e != nil {
		g.fail(w, r, e)
		return
	}
	defer x.done()
	c.record(g, usage{})
	copyResponseHeaders(w.Header(), x.resp.Header)
	writeJSONResponse(w, x.resp.StatusCode, x.data)
}

// openAISpeech forwards audio/speech and streams the binary answer to the
// client as it arrives. Retry happens only before the first byte; a
// response over the size cap, or one cut by the upstream, aborts the
// client connection (there is no in-band way to signal it in audio).
func openAISpeech(g *Gateway, w http.ResponseWriter, r *http.Request, c *unifiedCall) {
	p := c.provider
	o := &outbound{provider: p, model: c.model, method: http.MethodPost, url: p.baseURL + c.route.path,
		body: c.req.withModel(c.model), contentType: "application/json"}
	x, e := g.send(r, o)
	if e != nil {
		g.fail(w, r, e)
		return
	}
	defer x.done()
	c.record(g, usage{})
	if x.resp.ContentLength > maxUpstreamResponseBytes {
		g.fail(w, r, errUpstreamTooLarge(p.name))
		return
	}
	h := w.Header()
	if ct := x.resp.Header.Get("Content-Type"); ct != "" {
		h.Set("Content-Type", ct)
	}
	if x.resp.ContentLength >= 0 {
		h.Set("Content-Length", strconv.FormatInt(x.resp.ContentLength, 10))
	}
	w.WriteHeader(x.resp.StatusCode)
	flusher, _ := w.(http.Flusher)
	buf := make([]byte, 32<<10)
	var total int64
	for {
		n, err := x.body.Read(buf)
		if n > 0 {
			total += int64(n)
			if total > maxUpstreamResponseBytes {
				g.log.errorf("%s: aborting the audio stream", errUpstreamTooLarge(p.name).Error())
				panic(http.ErrAbortHandler)
			}
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		if err == io.EOF {
			return
		}
		if err != nil {
			if r.Context().Err() != nil {
				return
			}
			g.log.errorf("%s: aborting the audio stream", streamInterrupted(p.name, x.wd, r, err).Error())
			panic(http.ErrAbortHandler)
		}
	}
}

// attributed names the provider in an upstream-side error a translator
// raised (the translators know the provider's type, not its name).
func attributed(p *providerRuntime, e *apiError) *apiError {
	if e != nil && e.status >= 500 {
		e.message = "provider \"" + p.name + "\": " + e.message
	}
	return e
}

// chatTranslation is a translating provider type's chat adapter: pure
// translators plus the upstream URL.
type chatTranslation struct {
	request  func(body []byte, upstreamModel string) ([]byte, bool, *apiError)
	url      func(p *providerRuntime, model string, stream bool) string
	response func(body []byte, tc translateContext) ([]byte, usage, *apiError)
	stream   func(tc translateContext) streamTranslator
}

// serve translates the client's OpenAI request, calls the provider and
// translates its answer back, streamed event by event when the client
// asked for a stream.
func (t *chatTranslation) serve(g *Gateway, w http.ResponseWriter, r *http.Request, c *unifiedCall) {
	p := c.provider
	body, stream, e := t.request(c.req.raw, c.model)
	if e != nil {
		writeOpenAIError(w, e)
		return
	}
	accept := "application/json"
	if stream {
		accept = "text/event-stream"
	}
	o := &outbound{provider: p, model: c.model, method: http.MethodPost, url: t.url(p, c.model, stream),
		body: body, contentType: "application/json", accept: accept, readWhole: !stream}
	x, e := g.send(r, o)
	if e != nil {
		g.fail(w, r, e)
		return
	}
	defer x.done()
	tc := c.translateContext()
	if !stream {
		out, u, e := t.response(x.data, tc)
		if e != nil {
			g.fail(w, r, attributed(p, e))
			return
		}
		if !u.reported {
			u = estimateUsage(len(c.req.raw))
		}
		c.record(g, u)
		writeJSONResponse(w, http.StatusOK, out)
		g.saveCached(r, c, http.StatusOK, "application/json", out)
		return
	}
	if !isEventStream(x.resp.Header) {
		g.fail(w, r, newError(http.StatusBadGateway, "server_error", "upstream_bad_response",
			"provider \""+p.name+"\" answered a streaming request without an event stream"))
		return
	}
	g.relayTranslated(w, r, c, x, t.stream(tc))
}

// translatedJSON runs a non-streaming translated exchange (embeddings,
// images): build the provider body and URL, call, translate back.
func (g *Gateway) translatedJSON(w http.ResponseWriter, r *http.Request, c *unifiedCall, url string, body []byte,
	response func(data []byte) ([]byte, usage, *apiError)) {
	o := &outbound{provider: c.provider, model: c.model, method: http.MethodPost, url: url, body: body,
		contentType: "application/json", accept: "application/json", readWhole: true}
	x, e := g.send(r, o)
	if e != nil {
		g.fail(w, r, e)
		return
	}
	defer x.done()
	out, u, e := response(x.data)
	if e != nil {
		g.fail(w, r, attributed(c.provider, e))
		return
	}
	c.record(g, u)
	writeJSONResponse(w, http.StatusOK, out)
	g.saveCached(r, c, http.StatusOK, "application/json", out)
}
