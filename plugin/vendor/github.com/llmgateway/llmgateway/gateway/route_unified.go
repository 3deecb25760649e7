package gateway

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// routeKind names a unified route's pipeline.
type routeKind int

const (
	routeChat routeKind = iota
	routeEmbeddings
	routeImages
	routeSpeech
	routeTranscriptions
)

// unifiedRoute is the data that distinguishes one OpenAI-shaped metered
// route from another; the stages are shared (serveUnified).
type unifiedRoute struct {
	kind         routeKind
	name         string // accounting name, e.g. "chat/completions"
	path         string // client-facing path; also the openai upstream path
	maxBodyBytes int64
}

const maxMediaRequestBytes = 10 << 20

var (
	chatRoute           = &unifiedRoute{kind: routeChat, name: "chat/completions", path: "/v1/chat/completions", maxBodyBytes: maxUnifiedRequestBytes}
	embeddingsRoute     = &unifiedRoute{kind: routeEmbeddings, name: "embeddings", path: "/v1/embeddings", maxBodyBytes: maxUnifiedRequestBytes}
	imagesRoute         = &unifiedRoute{kind: routeImages, name: "images", path: "/v1/images/generations", maxBodyBytes: maxMediaRequestBytes}
	speechRoute         = &unifiedRoute{kind: routeSpeech, name: "audio/speech", path: "/v1/audio/speech", maxBodyBytes: maxMediaRequestBytes}
	transcriptionsRoute = &unifiedRoute{kind: routeTranscriptions, name: "audio/transcriptions", path: "/v1/audio/transcriptions", maxBodyBytes: maxMediaRequestBytes}
)

// unifiedCall is one request on a unified route once its model resolved.
type unifiedCall struct {
	route    *unifiedRoute
	user     *userRuntime
	provider *providerRuntime
	model    string // the provider's own model id
	req      *jsonRequest
	// cacheKey is set when the response may be cached (a miss); the
	// entry is written with cacheTTL.
	cacheKey string
	cacheTTL time.Duration
}

// translateContext builds the response translators' context.
func (c *unifiedCall) translateContext() translateContext {
	return translateContext{
		requestedModel: c.req.model,
		upstreamModel:  c.model,
		created:        time.Now().Unix(),
		includeUsage:   c.req.includeUsage,
		idFallback:     "chatcmpl-" + randomHex(12),
	}
}

func (c *unifiedCall) record(g *Gateway, u usage) {
	g.recordUsage(usageRecord{scopes: userScopesOf(c.user), user: userName(c.user), provider: c.provider.name, model: c.model, route: c.route.name, usage: u})
}

// serveUnified runs the pipeline every unified and media route shares:
// identify → read the body (under a body-admission slot) → resolve and
// authorize the model → count the request and check limits → answer from
// the response cache when it can → call the provider type's adapter.
func (g *Gateway) serveUnified(w http.ResponseWriter, r *http.Request, route *unifiedRoute) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeOpenAIError(w, errMethodNotAllowed(r.Method, route.path, http.MethodPost))
		return
	}
	user := g.authenticate(w, r)
	if user == nil {
		return
	}
	var req *jsonRequest
	var e *apiError
	if route.kind == routeTranscriptions {
		req, e = g.readTranscription(r)
	} else {
		req, e = g.readAdmitted(r, route.maxBodyBytes)
	}
	if e != nil {
		writeOpenAIError(w, e)
		return
	}
	resolved, e := g.resolveModel(user, req.model)
	if e != nil {
		writeOpenAIError(w, e)
		return
	}
	c := &unifiedCall{route: route, user: user, provider: resolved.provider, model: resolved.model, req: req}
	adapter := adapterFor(c.provider.kind)
	handler := adapter.handler(route.kind)
	if handler == nil {
		writeOpenAIError(w, errNotSupported(c.provider, route))
		return
	}
	// Media routes are request-counted only (never cost-accounted), so
	// their models need no price.
	priced := ""
	if route.kind == routeChat || route.kind == routeEmbeddings {
		priced = resolved.model
	}
	if e := g.admit(r, user, resolved.provider.name, priced); e != nil {
		writeOpenAIError(w, e)
		return
	}
	if g.serveCached(w, r, c) {
		return
	}
	handler(g, w, r, c)
}

// serveCached answers a cacheable request from the response cache when
// it holds the answer (X-Llmgw-Cache: hit), and otherwise marks the
// request for caching (X-Llmgw-Cache: miss). Cacheable: non-streaming
// chat and embeddings, when the caller's primary group has caching on.
func (g *Gateway) serveCached(w http.ResponseWriter, r *http.Request, c *unifiedCall) bool {
	if g.cache == nil || c.req.stream || len(c.user.grants) == 0 || !c.user.grants[0].cacheOn {
		return false
	}
	endpoint := cacheEndpointChat
	switch c.route.kind {
	case routeChat:
	case routeEmbeddings:
		endpoint = cacheEndpointEmbeddings
	default:
		return false
	}
	key, ok := cacheKey(c.provider.name, c.model, c.req.model, endpoint, c.req.raw)
	if !ok {
		return false
	}
	if contentType, body, hit := g.cache.lookupTyped(r.Context(), key); hit {
		if contentType == "" {
			contentType = "application/json"
		}
		w.Header().Set("X-Llmgw-Cache", "hit")
		w.Header().Set("Content-Type", contentType)
		writeJSONResponse(w, http.StatusOK, body)
		return true
	}
	w.Header().Set("X-Llmgw-Cache", "miss")
	c.cacheKey = key
	c.cacheTTL = c.user.grants[0].cacheTTL
	return false
}

// saveCached stores a 200 answer of a cacheable request (after it was
// written to the client). Oversized bodies are skipped by the cache.
func (g *Gateway) saveCached(r *http.Request, c *unifiedCall, status int, contentType string, body []byte) {
	if c.cacheKey == "" || status != http.StatusOK {
		return
	}
	g.cache.saveTyped(r.Context(), c.cacheKey, contentType, body, c.cacheTTL)
}

func errNotSupported(p *providerRuntime, route *unifiedRoute) *apiError {
	return newError(http.StatusNotImplemented, "invalid_request_error", "provider_not_supported",
		"provider \""+p.name+"\" is of type "+p.kind+", which has no "+route.path+" endpoint")
}

// resolveModel routes a client model id (alias, "provider/model" or
// bare): 404 when nothing serves it, 403 when the caller's grants may not
// use it.
func (g *Gateway) resolveModel(user *userRuntime, id string) (modelRoute, *apiError) {
	route, e := g.models().route(id)
	if e != nil {
		return modelRoute{}, e
	}
	if !user.canUseRoute(route) {
		return modelRoute{}, newError(http.StatusForbidden, "permission_error", "model_not_allowed",
			"model \""+id+"\" is not available to your group")
	}
	return route, nil
}

// readRequestBody reads the whole body, refusing one over limit with 413.
func readRequestBody(r *http.Request, limit int64) ([]byte, *apiError) {
	if r.ContentLength > limit {
		return nil, errTooLarge(limit)
	}
	body, tooBig, err := readCapped(r.Body, limit)
	if err != nil {
		return nil, errBadRequest("unreadable_body", "could not read the request body")
	}
	if tooBig {
		return nil, errTooLarge(limit)
	}
	return body, nil
}

// forwardOpenAI sends an OpenAI-shaped body to an openai-type provider's
// own path for the route and relays the answer: an event stream event by
// event, a JSON body whole, a non-2xx status wrapped in the envelope.
func (g *Gateway) forwardOpenAI(w http.ResponseWriter, r *http.Request, c *unifiedCall, body []byte) {
	stream := c.route.kind == routeChat && c.req.stream
	o := &outbound{provider: c.provider, model: c.model, method: http.MethodPost, url: c.provider.baseURL + c.route.path,
		body: body, contentType: "application/json", accept: r.Header.Get("Accept"), readWhole: !stream}
	x, e := g.send(r, o)
	if e != nil {
		g.fail(w, r, e)
		return
	}
	defer x.done()
	if stream && isEventStream(x.resp.Header) {
		g.relayStream(w, r, c, x)
		return
	}
	data := x.data
	if data == nil {
		var tooBig bool
		var err error
		data, tooBig, err = readCapped(x.body, maxUpstreamResponseBytes)
		if err != nil {
			g.fail(w, r, upstreamFailure(c.provider.name, x.wd, r.Context(), err))
			return
		}
		if tooBig {
			g.fail(w, r, errUpstreamTooLarge(c.provider.name))
			return
		}
	}
	if c.route.kind == routeChat || c.route.kind == routeEmbeddings {
		var u usage
		usageFromJSON(data, &u)
		if !u.reported {
			u = estimateUsage(len(c.req.raw))
		}
		c.record(g, u)
	} else {
		c.record(g, usage{})
	}
	copyResponseHeaders(w.Header(), x.resp.Header)
	writeJSONResponse(w, x.resp.StatusCode, data)
	g.saveCached(r, c, x.resp.StatusCode, x.resp.Header.Get("Content-Type"), data)
}

// relayStream relays an upstream OpenAI event stream and, when it does
// not end cleanly (read error, stall, size cap, no [DONE]), appends an
// error event so the client can tell a cut stream from a finished one.
func (g *Gateway) relayStream(w http.ResponseWriter, r *http.Request, c *unifiedCall, x *exchange) {
	p := c.provider
	h := w.Header()
	copyResponseHeaders(h, x.resp.Header)
	startEventStream(w, x.resp.StatusCode)
	var u usage
	res := relaySSE(w, x.body, maxUpstreamResponseBytes, func(event []byte) { usageFromSSEEvent(event, &u) })
	c.record(g, u)
	if r.Context().Err() != nil {
		g.log.infof("client closed the stream from provider %q after %d events", p.name, res.events)
		return
	}
	var e *apiError
	switch {
	case res.tooLarge:
		e = errStreamOverLimit(p.name)
	case res.err != nil:
		e = streamInterrupted(p.name, x.wd, r, res.err)
	case !res.sawDone || res.partial:
		e = newError(http.StatusBadGateway, "server_error", "upstream_stream_truncated",
			"stream from provider \""+p.name+"\" ended without [DONE]")
	default:
		return
	}
	g.log.errorf("%s (after %d events)", e.Error(), res.events)
	writeSSEError(w, e)
}

// startEventStream sends an event stream's headers at once, so the
// client sees the response start before the first token.
func startEventStream(w http.ResponseWriter, status int) {
	h := w.Header()
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "text/event-stream")
	}
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	h.Del("Content-Length")
	w.WriteHeader(status)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

func errStreamOverLimit(provider string) *apiError {
	return newError(http.StatusBadGateway, "server_error", "upstream_response_too_large",
		"stream from provider \""+provider+"\" exceeded the "+formatBytes(maxUpstreamResponseBytes)+" limit")
}

// streamInterrupted classifies a stream that failed mid-way.
func streamInterrupted(provider string, wd *watchdog, r *http.Request, err error) *apiError {
	e := upstreamFailure(provider, wd, r.Context(), err)
	e.code = "upstream_stream_interrupted"
	if wd.stalled() {
		e.code = "upstream_timeout"
	} else {
		e.message = "stream from provider \"" + provider + "\" was interrupted"
	}
	return e
}

// streamReadFailure classifies an upstream event stream that could not
// be read to its end.
func streamReadFailure(provider string, wd *watchdog, r *http.Request, rd *sseReader, err error) *apiError {
	switch {
	case err == io.EOF:
		return newError(http.StatusBadGateway, "server_error", "upstream_stream_truncated",
			"stream from provider \""+provider+"\" ended inside an event")
	case err == errStreamTooLarge:
		return errStreamOverLimit(provider)
	}
	return streamInterrupted(provider, wd, r, err)
}

// relayTranslated relays a translated provider's event stream as OpenAI
// chunks: one upstream event in, its translation out and flushed.
func (g *Gateway) relayTranslated(w http.ResponseWriter, r *http.Request, c *unifiedCall, x *exchange, st streamTranslator) {
	p := c.provider
	startEventStream(w, http.StatusOK)
	flusher, _ := w.(http.Flusher)
	f := openAIFormat
	var buf []byte
	var payloads []streamPayload
	emit := func(out []streamPayload) {
		if len(out) == 0 {
			return
		}
		buf = f.framePayloads(buf[:0], out)
		_, _ = w.Write(buf)
		if flusher != nil {
			flusher.Flush()
		}
	}
	rd := newSSEReader(x.body, maxUpstreamResponseBytes)
	events := 0
	var e *apiError
	for {
		ev, err := rd.next()
		if err != nil {
			if r.Context().Err() != nil {
				c.record(g, st.usage())
				g.log.infof("client closed the stream from provider %q after %d events", p.name, events)
				return
			}
			if err == io.EOF && !rd.partial {
				out, fe := st.finish(payloads[:0])
				emit(out)
				e = attributed(p, fe)
				if e == nil {
					_, _ = w.Write(f.streamEnd)
					if flusher != nil {
						flusher.Flush()
					}
				}
			} else {
				e = streamReadFailure(p.name, x.wd, r, rd, err)
			}
			break
		}
		events++
		out, te := st.event(ev, payloads[:0])
		payloads = out
		emit(out)
		if te != nil {
			e = attributed(p, te)
			break
		}
	}
	c.record(g, st.usage())
	if e != nil {
		g.log.errorf("%s (after %d events)", e.Error(), events)
		writeSSEError(w, e)
	}
}

// upstreamHTTPError wraps a provider's non-2xx answer in the gateway's
// envelope with the provider body under error.upstream. The status passes
// through, except 401/403: those mean the provider refused the gateway's
// own credentials, which is a gateway fault (502), not the caller's.
func upstreamHTTPError(p *providerRuntime, resp *http.Response, body io.Reader) *apiError {
	provider := p.name
	data, _, _ := readCapped(body, 1<<20)
	data = redactSecret(data, p.apiKey)
	status := resp.StatusCode
	kind := "invalid_request_error"
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden || providerRefusedKey(p, status, data):
		status = http.StatusBadGateway
		kind = "server_error"
	case status == http.StatusTooManyRequests:
		kind = "rate_limit_error"
	case status >= 500 || status < 400:
		kind = "server_error"
		if status < 400 {
			status = http.StatusBadGateway
		}
	}
	e := newError(status, kind, "upstream_error",
		"provider \""+provider+"\" returned HTTP "+strconv.Itoa(resp.StatusCode))
	e.upstream = embedUpstreamBody(data)
	e.retryAfter = resp.Header.Get("Retry-After")
	return e
}

// providerRefusedKey recognises a refusal of the gateway's own provider
// credential that does not come as 401/403: Gemini answers a bad key with
// 400 INVALID_ARGUMENT, reason API_KEY_INVALID.
func providerRefusedKey(p *providerRuntime, status int, body []byte) bool {
	return p.kind == providerGemini && status == http.StatusBadRequest && bytes.Contains(body, []byte("API_KEY_INVALID"))
}

// fail logs e and writes it, unless the client already went away.
func (g *Gateway) fail(w http.ResponseWriter, r *http.Request, e *apiError) {
	if e.status == 499 {
		g.log.infof("client closed the request: %s %s", r.Method, r.URL.Path)
		return
	}
	g.log.errorf("%s %s: %s", r.Method, r.URL.Path, e.Error())
	writeOpenAIError(w, e)
}

// relayedResponseHeaders are the upstream headers a unified route passes
// on; everything else (cookies, provider account headers) stays behind.
var relayedResponseHeaders = []string{"Content-Type", "X-Request-Id", "Openai-Processing-Ms", "Openai-Version"}

func copyResponseHeaders(dst, src http.Header) {
	for i := 0; i < len(relayedResponseHeaders); i++ {
		if v := src.Get(relayedResponseHeaders[i]); v != "" {
			dst.Set(relayedResponseHeaders[i], v)
		}
	}
}

func isEventStream(h http.Header) bool {
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(h.Get("Content-Type"))), "text/event-stream")
}

// injectAuth sets the provider's own credential in its type's header.
// A keyless openai provider sends none.
func (p *providerRuntime) injectAuth(h http.Header) {
	for i := 0; i < len(clientCredentialHeaders); i++ {
		h.Del(clientCredentialHeaders[i])
	}
	if p.apiKey == "" {
		return
	}
	switch p.kind {
	case providerAnthropic:
		h.Set("X-Api-Key", p.apiKey)
		if h.Get("Anthropic-Version") == "" {
			h.Set("Anthropic-Version", "2023-06-01")
		}
	case providerGemini:
		h.Set("X-Goog-Api-Key", p.apiKey)
	default:
		h.Set("Authorization", "Bearer "+p.apiKey)
	}
}

// randomHex returns n random bytes hex-encoded (ids for responses the
// gateway builds itself).
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// readTranscription reads the multipart body (10 MiB cap, 413 over it)
// and finds its single model field, under a body-admission slot. The
// result is a jsonRequest in name only: raw is the multipart body, model
// its model field, and nothing in it may be spliced (withModel).
func (g *Gateway) readTranscription(r *http.Request) (*jsonRequest, *apiError) {
	if !g.admission.acquire() {
		return nil, errBodyCapacity()
	}
	defer g.admission.release()
	body, e := readRequestBody(r, transcriptionsRoute.maxBodyBytes)
	if e != nil {
		return nil, e
	}
	model, e := transcriptionModel(r.Header.Get("Content-Type"), body)
	if e != nil {
		return nil, e
	}
	return &jsonRequest{raw: body, model: model, modelStart: -1, maxTokensKeyStart: -1}, nil
}
