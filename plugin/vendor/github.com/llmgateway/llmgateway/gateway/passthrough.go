package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
	"github.com/llmgateway/llmgateway/gateway/internal/translate"
)

// passthroughTarget splits "/{provider}/{rest}" when {provider} names a
// configured provider whose native passthrough is enabled.
func (g *Gateway) passthroughTarget(p string) (*providerRuntime, string, bool) {
	if len(p) < 2 || p[0] != '/' {
		return nil, "", false
	}
	name, rest := p[1:], ""
	if i := strings.IndexByte(name, '/'); i >= 0 {
		name, rest = name[:i], name[i+1:]
	}
	provider, ok := g.cfg.providers[name]
	if !ok || !provider.passthrough {
		return nil, "", false
	}
	return provider, rest, true
}

// servePassthrough proxies /{provider}/{rest} to the provider untouched,
// swapping the client's credential for the provider's own. It walks the
// pipeline's stages on the passthrough route: identify → authorize the
// provider and path (and the body's model when grants restrict models)
// → limit → the provider's concurrency slot → proxy → account → record.
func (g *Gateway) servePassthrough(w http.ResponseWriter, r *http.Request, p *providerRuntime, rest string, tr *requestTrace) {
	c := newCall(g, w, r, passthroughRoute, tr)
	defer finish(c)
	c.rec.provider = p.name
	if !identify(c) {
		return
	}
	model, body, e := admitPassthrough(c, p, rest)
	if e != nil {
		reject(c, e)
		return
	}
	c.rec.requestedModel, c.rec.model = model, model
	tokens, cost := passthroughReservation(c, p, model)
	if e := admit(c, p.name, model, tokens, cost); e != nil {
		reject(c, e)
		return
	}
	if p.slots != nil {
		if !p.slots.acquire(r.Context()) {
			reject(c, errSaturated(p, p.slots))
			return
		}
		defer p.slots.release()
	}
	_ = http.NewResponseController(w).EnableFullDuplex()
	out := proxy(c, p, body, model)
	account(c, out)
}

// passthroughReservation is a passthrough request's worst case: the
// prompt estimate, ceil(body bytes / 4) — of the body read by the peek,
// else of its Content-Length (a binary body is not read; a binary body
// without one estimates 0) — plus the body's output cap, else the
// model's maximum output when known, else defaultOutputCapTokens; the
// cost at the model's price.
func passthroughReservation(c *call, p *providerRuntime, model string) (int64, int64) {
	if !c.user.budgeted || !mayCost(c.r) {
		return 0, 0
	}
	var prompt, bodyCap int64
	if c.peek != nil {
		prompt, bodyCap = int64((c.peek.bytes+3)/4), c.peek.cap
	} else if n := c.r.ContentLength; n > 0 {
		prompt = (n + 3) / 4
	}
	var modelMax int64
	if reg, _ := c.g.registry.Load().(*modelRegistry); reg != nil && model != "" && bodyCap == 0 {
		modelMax = reg.resolveMeta(modelRoute{provider: p, model: model}).maxOutput
	}
	output := outputCap(bodyCap, modelMax)
	var cost int64
	if c.user.costBudget && model != "" {
		cost = worstCost(c.g, []candidate{{provider: p, model: model, weight: 1}}, prompt, output)
	}
	return prompt + output, cost
}

// admitPassthrough checks a passthrough request before any upstream
// call: the path, the caller's grants for the provider and path, the
// body's size, and — when grants restrict models, or a cost budget
// needs a price — the body's model.
func admitPassthrough(c *call, p *providerRuntime, rest string) (string, *cappedBody, *apiError) {
	r := c.r
	if hasDotSegment(rest) {
		return "", nil, apierr.BadRequest("invalid_path", "path segments \".\" and \"..\" are not allowed")
	}
	grants := c.user.passthroughGrants(p.name, rest)
	if len(grants) == 0 {
		return "", nil, apierr.New(http.StatusForbidden, "permission_error", "provider_not_allowed",
			"provider \""+p.name+"\" path \""+rest+"\" is not available to your group")
	}
	if r.Header.Get("Upgrade") != "" {
		return "", nil, apierr.New(http.StatusNotImplemented, "invalid_request_error", "upgrade_not_supported",
			"protocol upgrades are not supported on passthrough routes")
	}
	if r.ContentLength > maxPassthroughRequestBytes {
		return "", nil, errTooLarge(maxPassthroughRequestBytes)
	}
	body := newCappedBody(r, nil)
	// Gemini names the model in the path (".../models/{id}:generateContent"):
	// that is the model the upstream serves, whatever the body says.
	if pm := pathModel(p, rest); pm != "" {
		if modelRestricted(grants) && !anyGrantAllowsModel(grants, p.name, pm) {
			return "", nil, errPassthroughModelDenied(p.name)
		}
		_, e := budgetPeek(c, body)
		return pm, body, e
	}
	if modelRestricted(grants) {
		m, e := checkPassthroughModel(c, body, grants, p.name)
		return m, body, e
	}
	if !c.g.cfg.allowUnpriced && c.user.costBudget && mayCost(r) {
		return pricedPassthroughModel(c, body)
	}
	m, e := budgetPeek(c, body)
	return m, body, e
}

// budgetPeek reads a budgeted caller's passthrough body (when it may
// cost, is not binary and was not read yet) so that its reservation has
// the body's size and output cap, and returns its model ("" when it has
// no single top-level one).
func budgetPeek(c *call, body *cappedBody) (string, *apiError) {
	if !c.user.budgeted || !mayCost(c.r) || c.peek != nil || isBinaryContentType(c.r.Header.Get("Content-Type")) {
		return "", nil
	}
	return peekPassthroughModel(c, body)
}

// passthroughPeek is what the passthrough peek learned for the
// reservation: the body's size and its output cap (0: none named).
type passthroughPeek struct {
	bytes int
	cap   int64
}

// geminiCapConfig is the output cap of a Gemini generationConfig, in
// either case style.
type geminiCapConfig struct {
	MaxOutputTokens  json.RawMessage `json:"maxOutputTokens"`
	MaxOutputTokens2 json.RawMessage `json:"max_output_tokens"`
}

// passthroughOutputCap is the largest output cap a passthrough JSON body
// names, whichever API's spelling: max_tokens, max_completion_tokens,
// max_output_tokens (Responses), generationConfig.maxOutputTokens
// (Gemini, either case style); 0 when none.
func passthroughOutputCap(data []byte) int64 {
	var b struct {
		MaxTokens           json.RawMessage  `json:"max_tokens"`
		MaxCompletionTokens json.RawMessage  `json:"max_completion_tokens"`
		MaxOutputTokens     json.RawMessage  `json:"max_output_tokens"`
		GenerationConfig    *geminiCapConfig `json:"generationConfig"`
		GenerationConfig2   *geminiCapConfig `json:"generation_config"`
	}
	if json.Unmarshal(data, &b) != nil {
		return 0
	}
	caps := []json.RawMessage{b.MaxTokens, b.MaxCompletionTokens, b.MaxOutputTokens}
	if b.GenerationConfig != nil {
		caps = append(caps, b.GenerationConfig.MaxOutputTokens, b.GenerationConfig.MaxOutputTokens2)
	}
	if b.GenerationConfig2 != nil {
		caps = append(caps, b.GenerationConfig2.MaxOutputTokens, b.GenerationConfig2.MaxOutputTokens2)
	}
	var most int64
	for i := 0; i < len(caps); i++ {
		if n := parseTokenCap(caps[i]); n > most {
			most = n
		}
	}
	return most
}

// mayCost reports whether a passthrough request can spend tokens: one
// that carries a body (GET and HEAD never generate).
func mayCost(r *http.Request) bool {
	return r.Method != http.MethodGet && r.Method != http.MethodHead
}

// pricedPassthroughModel finds the model a cost-budgeted caller's
// passthrough request is priced at: the body's single top-level model,
// or a 402 when there is none (the gateway cannot price it, so it does
// not bill it at 0).
func pricedPassthroughModel(c *call, body *cappedBody) (string, *cappedBody, *apiError) {
	if isBinaryContentType(c.r.Header.Get("Content-Type")) {
		return "", nil, errPassthroughUnpriceable()
	}
	m, e := peekPassthroughModel(c, body)
	if e != nil {
		return "", nil, e
	}
	if m == "" {
		return "", nil, errPassthroughUnpriceable()
	}
	return m, body, nil
}

// errPassthroughUnpriceable is the 402 of a cost-budgeted caller's
// passthrough request that names no model the gateway can read.
func errPassthroughUnpriceable() *apiError {
	return apierr.New(http.StatusPaymentRequired, "invalid_request_error", "model_unpriced",
		"this passthrough request names no model the gateway can read (a JSON body's single top-level \"model\" "+
			"within its first 64 KiB, or a Gemini path's models/{id}), and your group or user has a cost budget: "+
			"it cannot be priced, so it is not sent")
}

func errPassthroughModelDenied(provider string) *apiError {
	return apierr.New(http.StatusForbidden, "permission_error", "model_not_allowed",
		"this passthrough request names no model your group may use on provider \""+provider+"\"")
}

// pathModel is the model a Gemini passthrough path names
// ("v1beta/models/{id}:method" or ".../models/{id}"), "" for any other
// provider type or path.
func pathModel(p *providerRuntime, rest string) string {
	if p.kind != providerGemini {
		return ""
	}
	i := strings.Index(rest, "models/")
	if i < 0 || (i > 0 && rest[i-1] != '/') {
		return ""
	}
	id := rest[i+len("models/"):]
	if j := strings.IndexAny(id, ":/"); j >= 0 {
		id = id[:j]
	}
	return id
}

// proxy runs one native passthrough exchange through
// httputil.ReverseProxy, under the provider's progress watchdog, and
// reports what it delivered (usage sniffed from the body as it flowed).
// A body cut after the headers went out makes ReverseProxy abort the
// handler (panic(http.ErrAbortHandler)); the exchange is then recorded
// and accounted on the way out (proxyAborted).
func proxy(c *call, p *providerRuntime, body *cappedBody, model string) *outcome {
	g, r, w := c.g, c.r, c.w
	out := &outcome{}
	target := passthroughURL(p, r.URL)
	ctx, wd := startWatchdog(r.Context(), p.timeout)
	defer wd.stop()
	guard := startWriteGuard(w, wd)
	defer stopWriteGuard(guard)
	var capped *responseCap
	relayed := false
	sent := time.Now()
	defer func() {
		if !relayed {
			proxyAborted(c, p, wd, capped, body, out, sent)
		}
	}()
	body.wd = wd
	in := r.WithContext(ctx)
	if r.Body != nil && r.Body != http.NoBody {
		in.Body = io.NopCloser(body)
	}
	rp := &httputil.ReverseProxy{}
	rp.Transport = g.transport
	// ErrorLog stays nil (the standard logger): Yaegi wraps *log.Logger
	// in its own type, so assigning one here fails under the interpreter.
	rp.Rewrite = func(pr *httputil.ProxyRequest) {
		pr.Out.URL = target
		pr.Out.Host = ""
		pr.Out.Header.Del("Accept-Encoding")
		dropBillingHeaders(pr.Out.Header, p, r.URL.Path)
		p.injectAuth(pr.Out.Header)
		// The gateway's ids replace the client's: its request id (the
		// client's own when it was valid) and a span of the gateway's.
		pr.Out.Header.Set("X-Request-Id", c.trace.requestID)
		setUpstreamTrace(pr.Out.Header, c.trace, 1)
	}
	rp.ModifyResponse = func(resp *http.Response) error {
		wd.progress()
		c.rec.attempts = 1
		failed := false
		var row *failurePolicy
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			row = &failureTable[statusClass(p, resp.StatusCode, nil)]
			failed = row.providerFault
		}
		g.limiter.recordAttempt(p.name, "", failed)
		if resp.ContentLength > maxUpstreamResponseBytes {
			return errPassthroughTooLarge
		}
		filterResponseHeaders(resp.Header)
		upstreamRequestID(resp.Header)
		noteWrite(&c.rec, resp.StatusCode)
		out.status = resp.StatusCode
		if row != nil {
			// Relayed as the upstream sent it; the record notes its class.
			c.rec.errorCode, c.rec.errorClass = row.code, row.name
		}
		// Over the cap mid-body, the read fails and ReverseProxy aborts the
		// client connection: never a short response that looks complete.
		capped = &responseCap{r: resp.Body, remaining: maxUpstreamResponseBytes}
		resp.Body = &progressReadCloser{progressReader: progressReader{r: capped, wd: wd}, c: resp.Body}
		if resp.StatusCode >= 300 {
			redactResponseBody(resp, p.apiKey)
			return nil
		}
		resp.Body = newUsageSniffer(resp.Body, resp.Header.Get("Content-Type"), func(u translate.Usage, streamed bool, text int64) {
			out.usage, out.streamed = u, streamed
			out.requestBytes = int(body.sent.Load())
			out.contentBytes = text
		})
		return nil
	}
	rp.ErrorHandler = func(rw http.ResponseWriter, req *http.Request, err error) {
		out.err = passthroughFailure(c, p, body, wd, err)
		out.status = out.err.Status
		fail(c, out.err)
	}
	sent = time.Now()
	rp.ServeHTTP(w, in)
	relayed = true
	c.rec.upstream += time.Since(sent)
	body.close()
	return out
}

// proxyAborted records and accounts a passthrough exchange whose body was
// cut after its headers reached the client, while ReverseProxy's abort
// unwinds the handler: the client's connection is then closed, so its
// HTTP library reports an incomplete body. What was relayed is accounted
// like any stream (the sniffer has seen it: ReverseProxy closed the
// body first).
func proxyAborted(c *call, p *providerRuntime, wd *watchdog, capped *responseCap, body *cappedBody, out *outcome, sent time.Time) {
	c.rec.upstream += time.Since(sent)
	body.close()
	e := passthroughCut(c, p, wd, capped)
	out.err = e
	noteError(&c.rec, e)
	if e.Class == apierr.ClassClientCancel {
		c.g.log.infof("client closed the passthrough response from provider %q%s", p.name, c.trace.logTail)
	} else {
		c.g.log.errorf("%s: passthrough response cut after its headers%s", e.Error(), c.trace.logTail)
	}
	account(c, out)
}

// passthroughCut classifies a passthrough body cut after the headers:
// the client gone (its context ended, or no upstream read failed, so a
// write to it did), the response cap, or the upstream read that failed
// (stalled, interrupted).
func passthroughCut(c *call, p *providerRuntime, wd *watchdog, capped *responseCap) *apiError {
	switch {
	case c.r.Context().Err() != nil || capped == nil || capped.err == nil:
		return upstreamFailure(apierr.ClassClientCancel, "client closed the request", nil)
	case capped.err == errPassthroughTooLarge:
		return errUpstreamTooLarge(p.name)
	}
	return streamReadFailure(p.name, wd, c.r.Context(), capped.err)
}

// billingHeaders are the request headers that choose an upstream
// billing account or paid features: native passthrough drops them unless
// the provider's passthroughHeaders allows them. anthropic-beta is one on
// every path but Anthropic's /v1/messages (where Claude Code needs it).
var billingHeaders = map[string]bool{"Openai-Organization": true, "Openai-Project": true, "Anthropic-Beta": true}

// dropBillingHeaders removes the billing headers the provider does not
// allow from a passthrough request to path.
func dropBillingHeaders(h http.Header, p *providerRuntime, path string) {
	for name := range billingHeaders {
		if p.passthroughHeaders[name] || h.Get(name) == "" {
			continue
		}
		if name == "Anthropic-Beta" && p.kind == providerAnthropic && strings.HasPrefix(path, "/"+p.name+"/v1/messages") {
			continue
		}
		h.Del(name)
	}
}

// relayedPassthroughHeaders and relayedPassthroughPrefixes are the
// upstream response headers native passthrough hands the client: the
// body's framing, caching and retry hints, request ids, timings and rate
// limits. Everything else — Set-Cookie, organisation and project ids,
// anything unknown — is dropped.
var (
	relayedPassthroughHeaders = map[string]bool{
		"Content-Type": true, "Content-Length": true, "Content-Encoding": true, "Content-Disposition": true,
		"Cache-Control": true, "Retry-After": true, "Date": true,
		"X-Request-Id": true, "Request-Id": true, "Openai-Processing-Ms": true, "Openai-Version": true, "Openai-Model": true,
	}
	relayedPassthroughPrefixes = []string{"X-Ratelimit-", "Anthropic-Ratelimit-"}
)

// filterResponseHeaders keeps only the relayed headers of a passthrough
// response.
func filterResponseHeaders(h http.Header) {
	for name := range h {
		if relayedPassthroughHeaders[name] || hasRelayedPrefix(name) {
			continue
		}
		delete(h, name)
	}
}

// upstreamRequestID renames a passthrough answer's X-Request-Id to
// X-Upstream-Request-Id: the client's X-Request-ID is the gateway's.
func upstreamRequestID(h http.Header) {
	if v := h["X-Request-Id"]; v != nil {
		h["X-Upstream-Request-Id"] = v
		delete(h, "X-Request-Id")
	}
}

func hasRelayedPrefix(name string) bool {
	for i := 0; i < len(relayedPassthroughPrefixes); i++ {
		if strings.HasPrefix(name, relayedPassthroughPrefixes[i]) {
			return true
		}
	}
	return false
}

// passthroughFailure classifies a passthrough exchange that failed.
func passthroughFailure(c *call, p *providerRuntime, body *cappedBody, wd *watchdog, err error) *apiError {
	if body.tooLarge() {
		return errTooLarge(maxPassthroughRequestBytes)
	}
	if err == errPassthroughTooLarge {
		return errUpstreamTooLarge(p.name)
	}
	e := exchangeFailure(p.name, wd, c.r.Context(), err)
	c.rec.attempts = 1
	c.g.limiter.recordAttempt(p.name, "", attemptFailed(e))
	return e
}

// passthroughURL builds the upstream URL for /{provider}/{rest}: the
// provider's scheme and host always, never anything the client's path can
// smuggle in (an escaped "/" or "@" stays inside the path).
func passthroughURL(p *providerRuntime, in *url.URL) *url.URL {
	prefix := "/" + p.name
	rest := strings.TrimPrefix(in.Path, prefix)
	target := *p.base
	target.Path = p.base.Path + rest
	target.RawPath = ""
	if escaped := in.EscapedPath(); escaped == prefix || strings.HasPrefix(escaped, prefix+"/") {
		// Keep the client's own escaping (e.g. %2F inside a segment) when
		// it decodes to the same path; url.URL ignores it otherwise.
		target.RawPath = p.base.EscapedPath() + escaped[len(prefix):]
	}
	target.RawQuery = in.RawQuery
	target.Fragment = ""
	return &target
}

// checkPassthroughModel enforces model-restricted grants on native
// passthrough: the JSON body's top-level "model" must appear within the
// first 64 KiB, exactly once in the whole body, and be allowed by one of
// the grants that reach the provider. Anything else is a 403 (fail
// closed). The body is read (up to the passthrough cap) and replayed.
func checkPassthroughModel(c *call, body *cappedBody, grants []*grant, provider string) (string, *apiError) {
	if isBinaryContentType(c.r.Header.Get("Content-Type")) {
		return "", errPassthroughModelDenied(provider)
	}
	model, e := peekPassthroughModel(c, body)
	if e != nil {
		return "", e
	}
	if model == "" || !anyGrantAllowsModel(grants, provider, model) {
		return "", errPassthroughModelDenied(provider)
	}
	return model, nil
}

// peekPassthroughModel reads the whole body (up to the passthrough cap)
// under a body-admission slot — so the memory such reads hold at once is
// bounded by the slots × the cap — arranges for it to be replayed, and
// returns its single top-level "model" ("" when there is none within the
// first 64 KiB, or two).
func peekPassthroughModel(c *call, body *cappedBody) (string, *apiError) {
	slot := takeBodySlot(c.g.admission)
	if slot == nil {
		return "", errBodyCapacity()
	}
	defer releaseSlot(slot)
	data, e := readPeekedBody(c, body, slot)
	if e != nil {
		return "", e
	}
	body.r = bytes.NewReader(data)
	body.remaining = maxPassthroughRequestBytes
	body.sent.Store(0)
	if c.user.budgeted {
		c.peek = &passthroughPeek{bytes: len(data), cap: passthroughOutputCap(data)}
	}
	model, ok := singleTopLevelModel(data)
	if !ok {
		return "", nil
	}
	return model, nil
}

// readPeekedBody reads a passthrough body whole for the model check,
// under the same per-64 KiB read deadline as a unified body
// (readTimedBody), so a stalled upload cannot keep its slot; the
// cappedBody refuses what passes the passthrough cap.
func readPeekedBody(c *call, body *cappedBody, slot *bodySlot) ([]byte, *apiError) {
	data, _, e := readTimedBody(c.w, body, c.r.ContentLength, maxPassthroughRequestBytes, slot)
	if body.exceeded {
		return nil, errTooLarge(maxPassthroughRequestBytes)
	}
	return data, e
}

// singleTopLevelModel returns the body's top-level "model" string when the
// body is one JSON object whose only "model" key starts within the first
// 64 KiB. A duplicate key fails: an upstream may read the other value.
func singleTopLevelModel(data []byte) (string, bool) {
	req, e := parseJSONRequest(data)
	if e != nil || req.modelStart >= maxPassthroughPeekBytes {
		return "", false
	}
	return req.model, true
}

// redactResponseBody removes the provider's own key from an error body an
// upstream sent back (some echo the credential they rejected). Bodies up
// to 1 MiB are scanned; the rest of a larger body follows unscanned.
func redactResponseBody(resp *http.Response, secret string) {
	if secret == "" {
		return
	}
	head, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		head = nil
	}
	clean := redactSecret(head, secret)
	resp.Body = &progressReadCloser{progressReader: progressReader{r: io.MultiReader(bytes.NewReader(clean), resp.Body), wd: nil}, c: resp.Body}
	resp.ContentLength = -1
	resp.Header.Del("Content-Length")
}

// cappedBody fails the read that would take a request body past its cap,
// so an oversized chunked body is refused rather than cut short.
//
// It is also the fence between the transport and the server: the
// transport may still be reading the request body after the response came
// back (an upstream can answer before consuming the upload), and
// net/http panics if the server then reads the same connection. close
// waits for a read in flight and makes every later read fail.
//
// Once a body of declared length has given all its bytes, it answers
// io.EOF without reading the client's body again. The transport, having
// copied the declared length, reads once more to check that nothing
// follows; by then a server that does not read the request body while
// writing the response (HTTP/1, without full duplex: Traefik's writer)
// may have closed that body on writing the answer's headers, and its
// "invalid Read on closed Body" would make the transport tear down the
// upstream connection and cut the answer it is reading.
type cappedBody struct {
	mu        sync.Mutex
	r         io.Reader
	declared  int64 // the body's Content-Length; -1 when unknown
	remaining int64
	exceeded  bool
	closed    bool
	wd        *watchdog    // fed by upload progress once the call starts
	sent      atomic.Int64 // bytes handed to the transport (lock-free)
}

var (
	errRequestTooLarge = errors.New("request body too large")
	errBodyClosed      = errors.New("request body closed: the exchange is over")
)

var errPassthroughTooLarge = errors.New("upstream response exceeds the size limit")

// responseCap fails the read that takes a response body past its cap,
// and keeps the first read failure (err; nil while every read succeeded
// or ended at EOF).
type responseCap struct {
	r         io.Reader
	remaining int64
	err       error
}

func (c *responseCap) Read(b []byte) (int, error) {
	if c.remaining < 0 {
		return 0, errPassthroughTooLarge
	}
	n, err := c.r.Read(b)
	c.remaining -= int64(n)
	if c.remaining < 0 {
		c.err = errPassthroughTooLarge
		return 0, errPassthroughTooLarge
	}
	if err != nil && err != io.EOF && c.err == nil {
		c.err = err
	}
	return n, err
}

// newCappedBody is r's body under the passthrough cap; wd (nil: none
// yet) is fed by its progress.
func newCappedBody(r *http.Request, wd *watchdog) *cappedBody {
	return &cappedBody{r: r.Body, declared: r.ContentLength, remaining: maxPassthroughRequestBytes, wd: wd}
}

// close ends the body's use by the transport (see cappedBody).
func (c *cappedBody) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
}

// tooLarge reports whether the body passed its cap.
func (c *cappedBody) tooLarge() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.exceeded
}

func (c *cappedBody) Read(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, errBodyClosed
	}
	if c.declared >= 0 && c.sent.Load() >= c.declared {
		return 0, io.EOF
	}
	n, err := c.r.Read(b)
	if n > 0 && c.wd != nil {
		c.wd.progress()
	}
	c.remaining -= int64(n)
	c.sent.Add(int64(n))
	if c.remaining < 0 {
		c.exceeded = true
		return 0, errRequestTooLarge
	}
	return n, err
}

// modelRestricted is true when every grant reaching the provider and path
// limits models: only then must the body's model be checked.
func modelRestricted(grants []*grant) bool {
	for i := 0; i < len(grants); i++ {
		if len(grants[i].models) == 0 {
			return false
		}
	}
	return true
}

func anyGrantAllowsModel(grants []*grant, provider, model string) bool {
	for i := 0; i < len(grants); i++ {
		if grants[i].allowsModel(provider, model) {
			return true
		}
	}
	return false
}

// isBinaryContentType names bodies that cannot carry a JSON model field.
func isBinaryContentType(contentType string) bool {
	mediaType, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	return strings.HasPrefix(mediaType, "multipart/") || strings.HasPrefix(mediaType, "audio/") ||
		strings.HasPrefix(mediaType, "image/") || strings.HasPrefix(mediaType, "video/") ||
		mediaType == "application/octet-stream"
}

// hasDotSegment reports whether the decoded path rest holds a "." or
// ".." segment, also one split off by "\" (a separator some servers
// honour).
func hasDotSegment(rest string) bool {
	segments := strings.Split(strings.ReplaceAll(rest, "\\", "/"), "/")
	for i := 0; i < len(segments); i++ {
		if segments[i] == "." || segments[i] == ".." {
			return true
		}
	}
	return false
}
