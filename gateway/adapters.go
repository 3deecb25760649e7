package gateway

import (
	"io"
	"net/http"
	"strconv"
)

// routeHandler serves one unified route against one provider type.
type routeHandler func(g *Gateway, w http.ResponseWriter, r *http.Request, c *unifiedCall)

// providerAdapter is what a provider type supports on the unified
// routes; a nil handler is a 501.
type providerAdapter struct {
	chat, embeddings, images, speech routeHandler
	// transcriptions is true when the type serves audio/transcriptions
	// (openai only: a multipart forward).
	transcriptions bool
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
	}
	return nil
}

var (
	openAIAdapter = &providerAdapter{
		chat:           openAIForward,
		embeddings:     openAIForward,
		images:         openAIForward,
		speech:         openAISpeech,
		transcriptions: true,
	}
	anthropicAdapter = &providerAdapter{}
	geminiAdapter    = &providerAdapter{}
)

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

// openAISpeech forwards audio/speech and streams the binary answer to the
// client as it arrives. Retry happens only before the first byte; a
// response over the size cap, or one cut by the upstream, aborts the
// client connection (there is no in-band way to signal it in audio).
func openAISpeech(g *Gateway, w http.ResponseWriter, r *http.Request, c *unifiedCall) {
	p := c.provider
	o := &outbound{provider: p, method: http.MethodPost, url: p.baseURL + c.route.path,
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
