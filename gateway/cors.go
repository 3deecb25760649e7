package gateway

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// CORSConfig is the cors block: browser cross-origin access to every
// gateway route. Omitted, the gateway sends no CORS header and an
// OPTIONS request is routed like any other (a 405 on the POST routes).
type CORSConfig struct {
	// AllowedOrigins are the origins a browser page may call from
	// (required, at least one): "scheme://host[:port]" matched exactly
	// (case-insensitively; a default port is dropped), or
	// "scheme://*.domain[:port]" for every subdomain of domain at any
	// depth (not domain itself), or "*" for any origin (not with
	// allowCredentials). "null" is refused: sandboxed frames and files
	// share it.
	AllowedOrigins []string `json:"allowedOrigins"`
	// AllowedMethods are the methods a preflight allows (default GET,
	// HEAD, POST, PUT, PATCH, DELETE; names are uppercased).
	AllowedMethods []string `json:"allowedMethods"`
	// AllowedHeaders are the request headers a preflight allows. Omitted
	// (or "*" among them): whatever headers the preflight asks for (SDKs
	// send their own, such as OpenAI's and Anthropic's x-stainless-*).
	AllowedHeaders []string `json:"allowedHeaders"`
	// ExposeHeaders are the response headers a page's script may read
	// (default: X-Request-Id, Traceparent, Retry-After, X-Llmgw-Cache,
	// X-Upstream-Request-Id, Openai-Processing-Ms, Openai-Version,
	// Mcp-Session-Id).
	ExposeHeaders []string `json:"exposeHeaders"`
	// AllowCredentials lets a page send cookies or HTTP authentication
	// (fetch's credentials: "include"), for a gateway behind a
	// cookie-based forward-auth. Default false: an API key in a header
	// needs no credentials mode.
	AllowCredentials bool `json:"allowCredentials"`
	// MaxAge is how long a browser may cache a preflight's answer (Go
	// duration, whole seconds, 0s–24h; default "10m"; browsers cap it,
	// Chromium at 2h).
	MaxAge string `json:"maxAge"`
}

// Defaults of the cors block.
const (
	defaultCORSMethods = "GET, HEAD, POST, PUT, PATCH, DELETE"
	defaultCORSExpose  = "X-Request-Id, Traceparent, Retry-After, X-Llmgw-Cache, X-Upstream-Request-Id, " +
		"Openai-Processing-Ms, Openai-Version, Mcp-Session-Id"
	defaultCORSMaxAge = 10 * time.Minute
	maxCORSMaxAge     = 24 * time.Hour
	// maxReflectedHeaders bounds a preflight's Access-Control-Request-
	// Headers the gateway echoes.
	maxReflectedHeaders = 2048
	// tokenChars are the bytes of an HTTP token (a method or header
	// name); headerListChars those of a comma-separated list of them.
	tokenChars      = "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	headerListChars = tokenChars + ", \t"
	// subdomainChars are the bytes a wildcard origin's subdomain part
	// may hold (a serialized origin's host is lowercase).
	subdomainChars = "abcdefghijklmnopqrstuvwxyz0123456789-."
)

// corsPolicy is the compiled cors block, read by every request.
type corsPolicy struct {
	anyOrigin bool
	origins   map[string]bool // exact origins, lowercase
	wildcards []originWildcard
	// methods, headers (""; reflect what the preflight asks), expose and
	// maxAge are header values, joined once.
	methods     []string
	headers     []string
	expose      []string
	maxAge      []string
	credentials bool
}

// originWildcard is "scheme://*.domain[:port]": an origin starting with
// prefix ("scheme://") and ending with suffix (".domain[:port]").
type originWildcard struct {
	prefix, suffix string
}

var (
	trueValue      = []string{"true"}
	anyOriginValue = []string{"*"}
)

// preflightVary is a preflight answer's Vary: it depends on all three.
const preflightVary = "Origin, Access-Control-Request-Method, Access-Control-Request-Headers"

// compileCORS validates the cors block (nil: CORS off).
func compileCORS(cfg *CORSConfig) (*corsPolicy, error) {
	if cfg == nil {
		return nil, nil
	}
	if len(cfg.AllowedOrigins) == 0 {
		return nil, fmt.Errorf("config: cors.allowedOrigins: at least one origin is required (omit the cors block to turn CORS off)")
	}
	p := &corsPolicy{origins: map[string]bool{}, credentials: cfg.AllowCredentials}
	for i := 0; i < len(cfg.AllowedOrigins); i++ {
		if err := p.addOrigin(cfg.AllowedOrigins[i]); err != nil {
			return nil, fmt.Errorf("config: cors.allowedOrigins[%d]: %v", i, err)
		}
	}
	if p.anyOrigin && p.credentials {
		return nil, fmt.Errorf("config: cors.allowedOrigins: \"*\" cannot be combined with allowCredentials (list the origins)")
	}
	methods, err := corsTokens("allowedMethods", cfg.AllowedMethods, true)
	if err != nil {
		return nil, err
	}
	p.methods = []string{defaultCORSMethods}
	if len(methods) > 0 {
		p.methods = []string{strings.Join(methods, ", ")}
	}
	headers, err := corsTokens("allowedHeaders", cfg.AllowedHeaders, false)
	if err != nil {
		return nil, err
	}
	if len(headers) > 0 && !containsString(headers, "*") {
		p.headers = []string{strings.Join(headers, ", ")}
	}
	expose, err := corsTokens("exposeHeaders", cfg.ExposeHeaders, false)
	if err != nil {
		return nil, err
	}
	if containsString(expose, "*") && p.credentials {
		return nil, fmt.Errorf("config: cors.exposeHeaders: \"*\" cannot be combined with allowCredentials (list the headers)")
	}
	p.expose = []string{defaultCORSExpose}
	if len(expose) > 0 {
		p.expose = []string{strings.Join(expose, ", ")}
	}
	maxAge := defaultCORSMaxAge
	if cfg.MaxAge != "" {
		if maxAge, err = time.ParseDuration(cfg.MaxAge); err != nil {
			return nil, fmt.Errorf("config: cors.maxAge: %q is not a Go duration (e.g. \"10m\")", cfg.MaxAge)
		}
		if maxAge < 0 || maxAge > maxCORSMaxAge {
			return nil, fmt.Errorf("config: cors.maxAge: %q must be between 0s and 24h", cfg.MaxAge)
		}
	}
	p.maxAge = []string{strconv.FormatInt(int64(maxAge/time.Second), 10)}
	return p, nil
}

// addOrigin validates and adds one allowedOrigins entry.
func (p *corsPolicy) addOrigin(raw string) error {
	s := strings.ToLower(strings.TrimSpace(raw))
	if s == "*" {
		p.anyOrigin = true
		return nil
	}
	if s == "null" {
		return fmt.Errorf("%q is refused: sandboxed frames and local files all send it", raw)
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Host == "" || u.User != nil || u.Opaque != "" ||
		u.Path != "" || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(s, "?") || strings.HasSuffix(s, "#") {
		return fmt.Errorf("%q is not an origin: write scheme://host[:port], without a path or a trailing slash", raw)
	}
	host := u.Host
	if port := u.Port(); u.Scheme == "https" && port == "443" || u.Scheme == "http" && port == "80" {
		host = strings.TrimSuffix(host, ":"+port)
	}
	if strings.HasPrefix(host, "*.") {
		domain := host[2:]
		if domain == "" || strings.Contains(domain, "*") || strings.HasPrefix(domain, ".") || strings.HasPrefix(domain, ":") {
			return fmt.Errorf("%q: a wildcard is only \"*.\" before a domain (scheme://*.example.com)", raw)
		}
		p.wildcards = append(p.wildcards, originWildcard{prefix: u.Scheme + "://", suffix: "." + domain})
		return nil
	}
	if strings.Contains(host, "*") {
		return fmt.Errorf("%q: a wildcard is only \"*.\" before a domain (scheme://*.example.com)", raw)
	}
	p.origins[u.Scheme+"://"+host] = true
	return nil
}

// corsTokens validates a list of methods (uppercased) or header names.
func corsTokens(field string, list []string, upper bool) ([]string, error) {
	out := make([]string, 0, len(list))
	for i := 0; i < len(list); i++ {
		s := strings.TrimSpace(list[i])
		if s == "" || strings.Trim(s, tokenChars) != "" || s != "*" && strings.Contains(s, "*") || upper && s == "*" {
			return nil, fmt.Errorf("config: cors.%s[%d]: %q is not a valid name", field, i, list[i])
		}
		if upper {
			s = strings.ToUpper(s)
		}
		out = append(out, s)
	}
	return out, nil
}

func containsString(list []string, s string) bool {
	for i := 0; i < len(list); i++ {
		if list[i] == s {
			return true
		}
	}
	return false
}

// allows reports whether a request's Origin is allowed.
func (p *corsPolicy) allows(origin string) bool {
	if p.anyOrigin {
		return true
	}
	o := strings.ToLower(origin)
	if p.origins[o] {
		return true
	}
	for i := 0; i < len(p.wildcards); i++ {
		w := &p.wildcards[i]
		if len(o) <= len(w.prefix)+len(w.suffix) || !strings.HasPrefix(o, w.prefix) || !strings.HasSuffix(o, w.suffix) {
			continue
		}
		sub := o[len(w.prefix) : len(o)-len(w.suffix)]
		if strings.Trim(sub, subdomainChars) == "" && sub[0] != '.' && sub[len(sub)-1] != '.' && !strings.Contains(sub, "..") {
			return true
		}
	}
	return false
}

// apply sets the CORS headers of an answer to r and answers a preflight
// (OPTIONS with Origin and Access-Control-Request-Method) whole: 204 for
// an allowed origin, 403 in the path's envelope for another. It reports
// whether it answered. An allowed origin's every other answer, errors
// included, carries Access-Control-Allow-Origin (and the credentials and
// exposed headers); every answer carries Vary: Origin unless any origin
// is allowed, so a cache never serves one origin's answer to another.
func (p *corsPolicy) apply(w http.ResponseWriter, r *http.Request) bool {
	h := w.Header()
	origin := r.Header.Get("Origin")
	preflight := r.Method == http.MethodOptions && origin != "" && r.Header.Get("Access-Control-Request-Method") != ""
	if preflight {
		h.Add("Vary", preflightVary)
	} else if !p.anyOrigin {
		h.Add("Vary", "Origin")
	}
	if origin == "" {
		return false
	}
	allowed := p.allows(origin)
	if allowed {
		if p.anyOrigin {
			h["Access-Control-Allow-Origin"] = anyOriginValue
		} else {
			h["Access-Control-Allow-Origin"] = []string{origin}
		}
		if p.credentials {
			h["Access-Control-Allow-Credentials"] = trueValue
		}
	}
	if !preflight {
		if allowed {
			h["Access-Control-Expose-Headers"] = p.expose
		}
		return false
	}
	startTrace(w, r)
	if !allowed {
		pathFormat(r.URL.Path).writeError(w, apierr.New(http.StatusForbidden, "permission_error", "cors_origin_not_allowed",
			"this page's origin is not in the gateway's cors.allowedOrigins"))
		return true
	}
	h["Access-Control-Allow-Methods"] = p.methods
	if p.headers != nil {
		h["Access-Control-Allow-Headers"] = p.headers
	} else if asked := r.Header.Get("Access-Control-Request-Headers"); asked != "" &&
		len(asked) <= maxReflectedHeaders && strings.Trim(asked, headerListChars) == "" {
		h["Access-Control-Allow-Headers"] = []string{asked}
	}
	h["Access-Control-Max-Age"] = p.maxAge
	w.WriteHeader(http.StatusNoContent)
	return true
}
