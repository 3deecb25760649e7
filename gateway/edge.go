package gateway

import (
	"net"
	"net/http"
	"strings"
)

// The edge stage, written out at the top of ServeHTTP (routes.go): what
// every answer the gateway writes itself gets before its route runs —
// the baseline security headers, the CORS headers (cors.go), and a CORS
// preflight's whole answer — and the panic guard (recover.go). A request
// handed to next (passthroughUnknown) passes untouched: no header added,
// no panic recovered.
//
// The security headers:
//
//   - X-Content-Type-Options: nosniff on every answer (the JSON ones,
//     and the streams and relayed bodies too: none is meant to be
//     sniffed into something else);
//   - Strict-Transport-Security: max-age=31536000 (one year; no
//     includeSubDomains or preload, which commit sibling hosts) when the
//     request came over TLS: r.TLS is set, or the TCP peer is one of
//     trustedProxies and the first X-Forwarded-Proto entry is "https";
//   - on the admin routes, X-Frame-Options: DENY and adminCSP (admin.go).

// hstsMaxAge is the Strict-Transport-Security value.
const hstsMaxAge = "max-age=31536000"

// Header values shared by every answer (set by assignment: net/http and
// the gateway only ever replace or append to a header's slice).
var (
	nosniffValue = []string{"nosniff"}
	hstsValue    = []string{hstsMaxAge}
)

// forwardedTLS reports whether a trusted proxy says the client's
// connection was TLS: the TCP peer is one of trustedProxies and the
// first X-Forwarded-Proto entry is "https" (the entry the proxy nearest
// the client wrote, as publicOrigin reads it).
func forwardedTLS(r *http.Request, cfg *compiledConfig) bool {
	if len(cfg.trustedProxies) == 0 || len(r.Header["X-Forwarded-Proto"]) == 0 {
		return false
	}
	if !strings.EqualFold(firstForwarded(r.Header.Get("X-Forwarded-Proto")), "https") {
		return false
	}
	peer, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		peer = r.RemoteAddr
	}
	return isTrustedProxy(peer, cfg.trustedProxies)
}

// ownsPath reports whether the gateway answers r itself rather than
// handing it to next, with passthroughUnknown set and a next given to
// New (otherwise the gateway answers everything, a 404 included). It follows ServeHTTP's
// dispatch, in its order; TestOwnsPathFollowsDispatch checks that the
// two agree on every kind of path.
func (g *Gateway) ownsPath(r *http.Request) bool {
	p := r.URL.Path
	if routesByPath[p] != nil || p == "/v1/models" || strings.HasPrefix(p, "/v1/models/") {
		return true
	}
	if m := g.metrics; m != nil && p == m.settings.path {
		return true
	}
	switch p {
	case "/api/tags", "/api/show", "/api/version", "/api/ps", "/v1/mcp/servers", "/v1/agents", "/mcp":
		return true
	}
	if strings.HasPrefix(p, "/mcp/") || strings.HasPrefix(p, "/a2a/") {
		return true
	}
	if g.cfg.admin.enabled && isAdminPath(p) {
		return true
	}
	_, _, ok := g.passthroughTarget(p)
	return ok
}

// dropEdgeHeaders removes from a proxied answer's headers those the
// edge owns (the CORS headers, nosniff, HSTS), so the target's own do
// not double or contradict the gateway's.
func dropEdgeHeaders(h http.Header) {
	for name := range h {
		if strings.HasPrefix(name, "Access-Control-") {
			delete(h, name)
		}
	}
	delete(h, "X-Content-Type-Options")
	delete(h, "Strict-Transport-Security")
}
