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
// swapping the client's credential for the provider's own.
func (g *Gateway) servePassthrough(w http.ResponseWriter, r *http.Request, p *providerRuntime, rest string) {
	user := g.authenticate(w, r)
	if user == nil {
		return
	}
	grants := user.providerGrants(p.name)
	if len(grants) == 0 {
		writeOpenAIError(w, newError(http.StatusForbidden, "permission_error", "provider_not_allowed",
			"provider \""+p.name+"\" is not available to your group"))
		return
	}
	if hasDotSegment(rest) {
		writeOpenAIError(w, errBadRequest("invalid_path", "path segments \".\" and \"..\" are not allowed"))
		return
	}
	if r.Header.Get("Upgrade") != "" {
		writeOpenAIError(w, newError(http.StatusNotImplemented, "invalid_request_error", "upgrade_not_supported",
			"protocol upgrades are not supported on passthrough routes"))
		return
	}
	if r.ContentLength > maxPassthroughRequestBytes {
		writeOpenAIError(w, errTooLarge(maxPassthroughRequestBytes))
		return
	}
	body := &cappedBody{r: r.Body, remaining: maxPassthroughRequestBytes}
	if modelRestricted(grants) {
		peeked, err := io.ReadAll(io.LimitReader(r.Body, maxPassthroughPeekBytes))
		if err != nil {
			writeOpenAIError(w, errBadRequest("unreadable_body", "could not read the request body"))
			return
		}
		model, found := "", false
		if !isBinaryContentType(r.Header.Get("Content-Type")) {
			model, found = peekModel(peeked)
		}
		if !found || !anyGrantAllowsModel(grants, p.name, model) {
			writeOpenAIError(w, newError(http.StatusForbidden, "permission_error", "model_not_allowed",
				"this passthrough request names no model your group may use on provider \""+p.name+"\""))
			return
		}
		body.r = io.MultiReader(bytes.NewReader(peeked), r.Body)
	}
	_ = http.NewResponseController(w).EnableFullDuplex()
	g.proxy(w, r, p, body)
}

// proxy runs one native passthrough exchange through
// httputil.ReverseProxy, under the provider's progress watchdog.
func (g *Gateway) proxy(w http.ResponseWriter, r *http.Request, p *providerRuntime, body *cappedBody) {
	escapedRest := strings.TrimPrefix(r.URL.EscapedPath(), "/"+p.name)
	target, err := url.Parse(p.baseURL + escapedRest)
	if err != nil {
		writeOpenAIError(w, errBadRequest("invalid_path", "the request path cannot be forwarded"))
		return
	}
	target.RawQuery = r.URL.RawQuery
	ctx, wd := startWatchdog(r.Context(), p.timeout)
	defer wd.stop()
	in := r.WithContext(ctx)
	if r.Body != nil && r.Body != http.NoBody {
		in.Body = io.NopCloser(body)
	}
	rp := &httputil.ReverseProxy{}
	rp.Transport = g.transport
	rp.Rewrite = func(pr *httputil.ProxyRequest) {
		pr.Out.URL = target
		pr.Out.Host = ""
		pr.Out.Header.Del("Accept-Encoding")
		p.injectAuth(pr.Out.Header)
	}
	rp.ModifyResponse = func(resp *http.Response) error {
		wd.progress()
		resp.Body = &progressReadCloser{progressReader: progressReader{r: resp.Body, wd: wd}, c: resp.Body}
		return nil
	}
	rp.ErrorHandler = func(rw http.ResponseWriter, req *http.Request, err error) {
		if body.exceeded {
			writeOpenAIError(rw, errTooLarge(maxPassthroughRequestBytes))
			return
		}
		g.fail(rw, r, upstreamFailure(p.name, wd, r.Context(), err))
	}
	rp.ServeHTTP(w, in)
}

// cappedBody fails the read that would take a request body past its cap,
// so an oversized chunked body is refused rather than cut short.
type cappedBody struct {
	r         io.Reader
	remaining int64
	exceeded  bool
}

var errRequestTooLarge = errors.New("request body too large")

func (c *cappedBody) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.remaining -= int64(n)
	if c.remaining < 0 {
		c.exceeded = true
		return 0, errRequestTooLarge
	}
	return n, err
}

// modelRestricted is true when every grant reaching the provider limits
// models: only then must the body's model be checked.
func modelRestricted(grants []*groupRuntime) bool {
	for i := 0; i < len(grants); i++ {
		if len(grants[i].models) == 0 {
			return false
		}
	}
	return true
}

func anyGrantAllowsModel(grants []*groupRuntime, provider, model string) bool {
	for i := 0; i < len(grants); i++ {
		if grants[i].allowsModel(provider, model) {
			return true
		}
	}
	return false
}

// peekModel finds a top-level "model" string in a JSON object that may be
// cut short (only its first bytes were read).
func peekModel(prefix []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(prefix))
	tok, err := dec.Token()
	if delim, ok := tok.(json.Delim); err != nil || !ok || delim != '{' {
		return "", false
	}
	for dec.More() {
		keyTok, err := dec.Token()
		if err != nil {
			return "", false
		}
		if key, _ := keyTok.(string); key == "model" {
			valueTok, err := dec.Token()
			model, isString := valueTok.(string)
			return model, err == nil && isString && model != ""
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", false
		}
	}
	return "", false
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

func hasDotSegment(rest string) bool {
	segments := strings.Split(rest, "/")
	for i := 0; i < len(segments); i++ {
		if segments[i] == "." || segments[i] == ".." {
			return true
		}
	}
	return false
}
