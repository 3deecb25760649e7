package gateway

import (
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// The per-target proxy: /mcp/{name}/{rest...} and /a2a/{name}/{rest...}
// reverse-proxied to the target's URL + "/" + rest (the query kept;
// /mcp/{name} and /mcp/{name}/ reach the configured URL itself). Its
// stages:
//
//	identify → the path (400 on traversal) → the target (404 unknown,
//	403 not reachable by the caller's groups) → 501 on Upgrade → limit
//	(the user's request-rate scopes, one checkAndCount) → the target's
//	own counters → proxy (httputil.ReverseProxy under the idle
//	watchdog) → health (passive) → record
//
// On the way out the caller's credential headers are removed (the
// gateway key never reaches a target) and the target's configured
// headers are set; Accept-Encoding is dropped so the gateway reads the
// answers it rewrites in clear. Every other end-to-end header passes
// (Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID, Accept,
// Content-Type, Origin, ...); hop-by-hop headers are not forwarded in
// either direction (ReverseProxy's rules); the request carries the
// gateway's X-Request-Id and a traceparent of its own span. The answer's
// headers are relayed (the target's X-Request-Id as
// X-Upstream-Request-Id, its trace headers replaced by the gateway's,
// its CORS, nosniff and HSTS headers by the gateway's edge headers:
// dropEdgeHeaders), its body streamed: ReverseProxy flushes a text/event-stream answer
// after every write.
//
// Timeouts: the watchdog allows requestTimeout without progress — to the
// response headers (then 504), and between two reads of the body once it
// flows, so a long-lived event stream lives as long as events (or
// keepalive comments) come at least once per requestTimeout.
//
// Rewrites (mcp_proxy_rewrite.go): a legacy HTTP+SSE stream's first
// endpoint event, so the client posts through the proxy; an agent card's
// url fields, so an A2A client talks to the gateway.
//
// Health: an answer with headers is a success for the target unless it
// is a 5xx (a 4xx is the caller's problem: the target is up); a
// connection failure, a timeout to the headers or a 5xx is a failure.

// The proxy's accounting rows: request-counted, never priced (an
// arbitrary MCP or A2A answer carries no usage).
var (
	mcpProxyRoute = &route{path: "/mcp/{name}/", format: openAIFormat, name: "mcp", maxBodyBytes: maxPassthroughRequestBytes}
	a2aProxyRoute = &route{path: "/a2a/{name}/", format: openAIFormat, name: "a2a", maxBodyBytes: maxPassthroughRequestBytes}
)

// serveTargetProxy is the per-target proxy (/mcp/{name}/..., /a2a/{name}/...).
// rest is the decoded path after the route's prefix (the escaped path is
// what it reads).
func (g *Gateway) serveTargetProxy(w http.ResponseWriter, r *http.Request, kind, rest string, tr *requestTrace) {
	rt := mcpProxyRoute
	if kind == targetAgent {
		rt = a2aProxyRoute
	}
	c := newCall(g, w, r, rt, tr)
	defer finish(c)
	defer targetStats(c)
	if !identify(c) {
		return
	}
	t, sub, e := admitTarget(c, kind)
	if e != nil {
		reject(c, e)
		return
	}
	c.rec.provider = t.name
	if e := count(c, 0, 0, nil); e != nil {
		reject(c, e)
		return
	}
	g.countTargets(c.user.name, []*targetRuntime{t})
	proxyTarget(c, t, sub)
}

// targetStats writes the statistics of a target request (the user's
// scopes' last-seen): without the target's name as the record's
// provider, so that a target's failure never counts as a provider's.
func targetStats(c *call) {
	if c.g.stats == nil || c.statsDone {
		return
	}
	name := c.rec.provider
	c.rec.provider = ""
	writeStats(c.g.limiter, finishStats(c))
	c.rec.provider = name
}

// targetNoun is what a target of kind is called in messages.
func targetNoun(kind string) string {
	if kind == targetAgent {
		return "agent"
	}
	return "MCP server"
}

// targetLabel names a target in messages: `MCP server "x"`, `agent "x"`.
func targetLabel(kind, name string) string {
	return targetNoun(kind) + " \"" + name + "\""
}

// admitTarget checks the path and the target: the target, and its
// escaped path after /{prefix}/{name} ("" when none).
func admitTarget(c *call, kind string) (*targetRuntime, string, *apiError) {
	prefix := "/mcp/"
	if kind == targetAgent {
		prefix = "/a2a/"
	}
	esc := c.r.URL.EscapedPath()
	if !strings.HasPrefix(esc, prefix) {
		return nil, "", apierr.BadRequest("invalid_path", "the path must start with "+prefix+" unescaped")
	}
	esc = esc[len(prefix):]
	escName := esc
	sub := ""
	if i := strings.IndexByte(esc, '/'); i >= 0 {
		escName, sub = esc[:i], esc[i+1:]
	}
	name, err := url.PathUnescape(escName)
	if err != nil || hasTraversal(escName) || hasTraversal(sub) {
		return nil, "", apierr.BadRequest("invalid_path", "path segments \".\" and \"..\" (also escaped) and control characters are not allowed")
	}
	t := c.g.target(kind, name)
	if t == nil {
		return nil, "", apierr.New(http.StatusNotFound, "invalid_request_error", "target_not_found", "no "+targetNoun(kind)+" named \""+name+"\" is configured")
	}
	if !c.user.canReach(t) {
		return nil, "", apierr.New(http.StatusForbidden, "permission_error", "target_not_allowed", targetLabel(kind, name)+" is not available to your group")
	}
	if c.r.Header.Get("Upgrade") != "" {
		return nil, "", apierr.New(http.StatusNotImplemented, "invalid_request_error", "upgrade_not_supported",
			"protocol upgrades (WebSocket) are not supported on target routes")
	}
	if c.r.ContentLength > maxPassthroughRequestBytes {
		return nil, "", errTooLarge(maxPassthroughRequestBytes)
	}
	return t, sub, nil
}

// hasTraversal reports whether an escaped path holds a segment that is,
// or decodes to, "." or ".." — also one an escaped "/" or "\" splits
// off — or a control character (NUL included), or an invalid escape.
func hasTraversal(esc string) bool {
	if esc == "" {
		return false
	}
	dec, err := url.PathUnescape(esc)
	// One stdlib scan each (cheap under Yaegi): every control character.
	if err != nil || strings.ContainsAny(dec, headerControlChars) || strings.IndexByte(dec, '\t') >= 0 {
		return true
	}
	// Every separator the target might honour: "/" (escaped or not) and
	// "\".
	parts := strings.Split(strings.ReplaceAll(dec, "\\", "/"), "/")
	for i := 0; i < len(parts); i++ {
		if parts[i] == "." || parts[i] == ".." {
			return true
		}
	}
	return false
}

// mountPath is the path the proxy maps /{prefix}/{name}/{rest} under: the
// target's URL path, or for a legacy HTTP+SSE server (URL ending in
// /sse) its parent, so that /mcp/{name}/sse reaches the configured
// stream and a sibling endpoint (/x/messages of /x/sse) is reachable.
func mountPath(t *targetRuntime) string {
	if t.legacySSE {
		return strings.TrimSuffix(t.base.Path, "/sse")
	}
	return t.base.Path
}

// targetURL is the upstream URL of a proxied request: the configured URL
// (its path as written) when sub is empty, else the mount path + "/" + sub (the client's own
// escaping kept); the configured query, then the client's.
func targetURL(t *targetRuntime, sub string, in *url.URL) *url.URL {
	u := *t.base
	u.User = nil
	u.Fragment = ""
	if sub == "" {
		u.Path = t.endpointPath // as configured, a trailing slash kept
		u.RawPath = ""
		if u.Path == "" {
			u.Path = "/"
		}
	} else {
		mount := mountPath(t)
		dec, _ := url.PathUnescape(sub)
		u.Path = mount + "/" + dec
		u.RawPath = (&url.URL{Path: mount}).EscapedPath() + "/" + sub
	}
	switch {
	case u.RawQuery == "":
		u.RawQuery = in.RawQuery
	case in.RawQuery != "":
		u.RawQuery = u.RawQuery + "&" + in.RawQuery
	}
	return &u
}

// targetExchange is one proxied exchange's state, shared by the
// ReverseProxy hooks.
type targetExchange struct {
	c      *call
	t      *targetRuntime
	target *url.URL
	wd     *watchdog
	body   *cappedBody
	sent   time.Time
	// resp is the answer's body wrapper (nil until the headers came).
	resp *targetBody
	// card: the request reads the agent's card (rewritten).
	card bool
}

// proxyTarget runs one proxied exchange through httputil.ReverseProxy
// under the idle watchdog.
func proxyTarget(c *call, t *targetRuntime, sub string) {
	g, r := c.g, c.r
	ctx, wd := startWatchdog(r.Context(), g.cfg.requestTimeout)
	defer wd.stop()
	body := newCappedBody(r, wd)
	defer body.close()
	in := r.WithContext(ctx)
	if r.Body != nil && r.Body != http.NoBody {
		in.Body = io.NopCloser(body)
	}
	x := &targetExchange{c: c, t: t, target: targetURL(t, sub, r.URL), wd: wd, body: body}
	x.card = t.kind == targetAgent && r.Method == http.MethodGet && x.target.Path == mountPath(t)+t.card
	_ = http.NewResponseController(c.w).EnableFullDuplex()
	rp := &httputil.ReverseProxy{}
	rp.Transport = g.transport
	rp.Rewrite = func(pr *httputil.ProxyRequest) { x.rewrite(pr) }
	rp.ModifyResponse = func(resp *http.Response) error { return x.modify(resp) }
	rp.ErrorHandler = func(rw http.ResponseWriter, req *http.Request, err error) { x.failed(err) }
	defer x.done()
	x.sent = time.Now()
	rp.ServeHTTP(c.w, in)
}

// rewrite prepares the outbound request: the target's URL, no client
// credential, the target's headers, the gateway's ids.
func (x *targetExchange) rewrite(pr *httputil.ProxyRequest) {
	pr.Out.URL = x.target
	pr.Out.Host = ""
	h := pr.Out.Header
	for i := 0; i < len(clientCredentialHeaders); i++ {
		h.Del(clientCredentialHeaders[i])
	}
	h.Del("Accept-Encoding")
	for k, vs := range x.t.header {
		h[k] = append([]string(nil), vs...)
	}
	if u := x.t.base.User; u != nil && h.Get("Authorization") == "" {
		pass, _ := u.Password()
		h.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(u.Username()+":"+pass)))
	}
	h.Set("X-Request-Id", x.c.trace.requestID)
	setUpstreamTrace(h, x.c.trace, 1)
}

// modify handles the answer's headers: the outcome for health and the
// record, the relayed headers, and the body's wrappers.
func (x *targetExchange) modify(resp *http.Response) error {
	c := x.c
	g := c.g
	t := x.t
	x.wd.progress()
	c.rec.attempts = 1
	status := resp.StatusCode
	latency := time.Since(x.sent)
	if status >= 500 {
		msg := "HTTP " + strconv.Itoa(status)
		g.observeTarget(t, false, msg, latency, "passive")
		c.rec.errorCode = "upstream_error"
		c.rec.errorClass = "server"
		c.rec.errorMessage = targetLabel(t.kind, t.name) + " returned " + msg
	} else {
		g.observeTarget(t, true, "", latency, "passive")
	}
	noteWrite(&c.rec, status)
	upstreamRequestID(resp.Header)
	delete(resp.Header, "Traceparent")
	delete(resp.Header, "Tracestate")
	dropEdgeHeaders(resp.Header)
	x.resp = &targetBody{r: resp.Body, c: resp.Body, wd: x.wd}
	resp.Body = x.resp
	if secrets := targetSecrets(t); len(secrets) > 0 {
		redactTargetHeaders(resp.Header, secrets)
		if status >= 400 {
			redactTargetBody(resp, secrets)
			return nil
		}
	}
	switch {
	case status != http.StatusOK || !identityEncoded(resp.Header):
	case x.card:
		x.rewriteCard(resp)
	case c.r.Method == http.MethodGet && isEventStream(resp.Header):
		resp.Body = &endpointRewriter{src: resp.Body, x: x}
		resp.ContentLength = -1
		resp.Header.Del("Content-Length")
	}
	return nil
}

// failed handles an exchange that produced no answer: the request body
// over its cap (413), the client gone (499, written to nobody), no
// headers within the watchdog (504), anything else (502).
func (x *targetExchange) failed(err error) {
	c, t := x.c, x.t
	label := targetLabel(t.kind, t.name)
	var e *apiError
	switch {
	case x.body.tooLarge():
		e = errTooLarge(maxPassthroughRequestBytes)
	case c.r.Context().Err() != nil:
		e = upstreamFailure(apierr.ClassClientCancel, "client closed the request", nil)
	case x.wd.stalled():
		wait := x.wd.timeout.String()
		e = upstreamFailure(apierr.ClassStall, label+" sent no response headers within "+wait, nil)
		e.Status = http.StatusGatewayTimeout
		c.g.observeTarget(t, false, "timeout after "+wait, time.Since(x.sent), "passive")
	default:
		reason := connectFailure(err)
		e = upstreamFailure(apierr.ClassConnect, label+" could not be reached ("+reason+")", nil)
		c.g.observeTarget(t, false, reason, time.Since(x.sent), "passive")
	}
	c.rec.attempts = 1
	fail(c, e)
}

// done completes the record once the exchange is over (also when
// ReverseProxy aborts a broken stream by panicking): the upstream time,
// and a body that broke after the headers.
func (x *targetExchange) done() {
	c := x.c
	c.rec.upstream += time.Since(x.sent)
	if x.resp == nil || x.resp.err == nil {
		return
	}
	label := targetLabel(x.t.kind, x.t.name)
	switch {
	case c.r.Context().Err() != nil:
		noteError(&c.rec, upstreamFailure(apierr.ClassClientCancel, "client closed the request", nil))
	case x.wd.stalled():
		noteError(&c.rec, upstreamFailure(apierr.ClassStall, label+" sent nothing for "+x.wd.timeout.String()+"; the stream was ended", nil))
	default:
		noteError(&c.rec, upstreamFailure(apierr.ClassInterrupted, "the answer of "+label+" broke off", nil))
	}
}

// connectFailure names a transport error in the gateway's own words
// (never the error's text, which holds the URL).
func connectFailure(err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "connection refused"):
		return "connection refused"
	case strings.Contains(msg, "no such host"):
		return "host not found"
	case strings.Contains(msg, "connection reset"):
		return "connection reset"
	case strings.Contains(msg, "tls:") || strings.Contains(msg, "x509:") || strings.Contains(msg, "certificate"):
		return "TLS handshake failed"
	case strings.Contains(msg, "EOF"):
		return "connection closed before an answer"
	case strings.Contains(msg, "timeout"):
		return "connection timeout"
	}
	return "connection failed"
}

// targetBody is an answer's body as relayed: it feeds the watchdog and
// keeps the first read error (the stream broke after the headers).
type targetBody struct {
	r   io.Reader
	c   io.Closer
	wd  *watchdog
	err error
}

func (b *targetBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if n > 0 {
		b.wd.progress()
	}
	if err != nil && err != io.EOF && b.err == nil {
		b.err = err
	}
	return n, err
}

func (b *targetBody) Close() error { return b.c.Close() }

// identityEncoded reports whether an answer's body is not compressed
// (the transport decompresses what it asked for itself; anything else is
// relayed untouched, never rewritten).
func identityEncoded(h http.Header) bool {
	enc := h.Get("Content-Encoding")
	return enc == "" || strings.EqualFold(enc, "identity")
}
