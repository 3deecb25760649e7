package gateway

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// unifiedRoute is the data that distinguishes one OpenAI-shaped metered
// route from another; the stages are shared (serveUnified).
type unifiedRoute struct {
	path         string // client-facing and upstream path
	streamable   bool   // the upstream may answer with text/event-stream
	maxBodyBytes int64
}

var (
	chatRoute       = &unifiedRoute{path: "/v1/chat/completions", streamable: true, maxBodyBytes: maxUnifiedRequestBytes}
	embeddingsRoute = &unifiedRoute{path: "/v1/embeddings", maxBodyBytes: maxUnifiedRequestBytes}
)

// serveUnified runs the pipeline every unified route shares:
// identify → read body → resolve and authorize the model → call the
// provider → relay the response.
func (g *Gateway) serveUnified(w http.ResponseWriter, r *http.Request, unified *unifiedRoute) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeOpenAIError(w, errMethodNotAllowed(r.Method, unified.path, http.MethodPost))
		return
	}
	user := g.authenticate(w, r)
	if user == nil {
		return
	}
	body, e := readRequestBody(r, unified.maxBodyBytes)
	if e != nil {
		writeOpenAIError(w, e)
		return
	}
	req, e := parseJSONRequest(body)
	if e != nil {
		writeOpenAIError(w, e)
		return
	}
	route, e := g.resolveModel(user, req.model)
	if e != nil {
		writeOpenAIError(w, e)
		return
	}
	provider := route.provider
	if provider.kind != providerOpenAI {
		writeOpenAIError(w, newError(http.StatusNotImplemented, "invalid_request_error", "provider_not_supported",
			"provider \""+provider.name+"\" is of type "+provider.kind+": translation to it is not available yet on "+unified.path))
		return
	}
	g.callOpenAI(w, r, unified, provider, req.withModel(route.model))
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

// callOpenAI sends body to an openai-type provider and relays the answer:
// an event stream event by event, a JSON body whole, a non-2xx status
// wrapped in the gateway's envelope.
func (g *Gateway) callOpenAI(w http.ResponseWriter, r *http.Request, route *unifiedRoute, p *providerRuntime, body []byte) {
	ctx, wd := startWatchdog(r.Context(), p.timeout)
	defer wd.stop()
	out, err := http.NewRequestWithContext(ctx, http.MethodPost, p.baseURL+route.path, bytes.NewReader(body))
	if err != nil {
		g.fail(w, r, upstreamFailure(p.name, wd, r.Context(), err))
		return
	}
	out.Header.Set("Content-Type", "application/json")
	if accept := r.Header.Get("Accept"); accept != "" {
		out.Header.Set("Accept", accept)
	}
	p.injectAuth(out.Header)
	resp, err := g.transport.RoundTrip(out)
	if err != nil {
		g.fail(w, r, upstreamFailure(p.name, wd, r.Context(), err))
		return
	}
	wd.progress()
	defer resp.Body.Close()
	respBody := &progressReader{r: resp.Body, wd: wd}
	switch {
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		g.fail(w, r, upstreamHTTPError(p, resp, respBody))
	case route.streamable && isEventStream(resp.Header):
		g.relayStream(w, r, p, resp, respBody, wd)
	default:
		g.relayJSON(w, r, p, resp, respBody, wd)
	}
}

// relayJSON reads the whole upstream body (so an oversized or stalled one
// becomes a clean 502 before any header is sent) and writes it.
func (g *Gateway) relayJSON(w http.ResponseWriter, r *http.Request, p *providerRuntime, resp *http.Response, body io.Reader, wd *watchdog) {
	data, tooBig, err := readCapped(body, maxUpstreamResponseBytes)
	if err != nil {
		g.fail(w, r, upstreamFailure(p.name, wd, r.Context(), err))
		return
	}
	if tooBig {
		g.fail(w, r, newError(http.StatusBadGateway, "server_error", "upstream_response_too_large",
			"provider \""+p.name+"\" sent a response over the "+formatBytes(maxUpstreamResponseBytes)+" limit"))
		return
	}
	copyResponseHeaders(w.Header(), resp.Header)
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(data)
}

// relayStream relays an upstream event stream and, when it does not end
// cleanly (read error, stall, size cap, no [DONE]), appends an error
// event so the client can tell a cut stream from a finished one.
func (g *Gateway) relayStream(w http.ResponseWriter, r *http.Request, p *providerRuntime, resp *http.Response, body io.Reader, wd *watchdog) {
	h := w.Header()
	copyResponseHeaders(h, resp.Header)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(resp.StatusCode)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	res := relaySSE(w, body, maxUpstreamResponseBytes)
	if r.Context().Err() != nil {
		g.log.infof("client closed the stream from provider %q after %d events", p.name, res.events)
		return
	}
	var e *apiError
	switch {
	case res.tooLarge:
		e = newError(http.StatusBadGateway, "server_error", "upstream_response_too_large",
			"stream from provider \""+p.name+"\" exceeded the "+formatBytes(maxUpstreamResponseBytes)+" limit")
	case res.err != nil:
		e = upstreamFailure(p.name, wd, r.Context(), res.err)
		e.code = "upstream_stream_interrupted"
		if wd.stalled() {
			e.code = "upstream_timeout"
		} else {
			e.message = "stream from provider \"" + p.name + "\" was interrupted"
		}
	case !res.sawDone || res.partial:
		e = newError(http.StatusBadGateway, "server_error", "upstream_stream_truncated",
			"stream from provider \""+p.name+"\" ended without [DONE]")
	default:
		return
	}
	g.log.errorf("%s (after %d events)", e.Error(), res.events)
	writeSSEError(w, e)
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
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
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
