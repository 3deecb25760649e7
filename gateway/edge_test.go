package gateway

import (
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// The edge stage (edge.go): the security headers on every answer the
// gateway writes, HSTS over TLS, the admin pages' frame headers, and
// what the gateway hands to next untouched.

// Every answer the gateway writes itself carries one
// X-Content-Type-Options: nosniff: the JSON answers of every route
// family, success and error, and the streams and text answers too.
func TestNosniffEveryAnswer(t *testing.T) {
	base, _, _, _ := panicGateway(t, nil)
	alice := bearer(testAliceKey)
	cases := []struct {
		name, method, path, body string
		headers                  map[string]string
		status                   int
	}{
		{"chat", "POST", "/v1/chat/completions", panicChatBody, alice, 200},
		{"chat-stream", "POST", "/v1/chat/completions", panicChatStream, alice, 200},
		{"chat-401", "POST", "/v1/chat/completions", panicChatBody, nil, 401},
		{"chat-400", "POST", "/v1/chat/completions", `{"messages":[]}`, alice, 400},
		{"chat-405", "GET", "/v1/chat/completions", "", alice, 405},
		{"messages", "POST", "/v1/messages", panicMessagesBody, alice, 200},
		{"responses", "POST", "/v1/responses", `{"model":"m1","input":"hi"}`, alice, 200},
		{"ollama-chat", "POST", "/api/chat", `{"model":"m1","stream":false,"messages":[{"role":"user","content":"hi"}]}`, alice, 200},
		{"ollama-tags", "GET", "/api/tags", "", alice, 200},
		{"ollama-version", "GET", "/api/version", "", nil, 200},
		{"models", "GET", "/v1/models", "", alice, 200},
		{"model-404", "GET", "/v1/models/nope", "", alice, 404},
		{"registry", "GET", "/v1/mcp/servers", "", alice, 200},
		{"mcp-federated", "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, alice, 200},
		{"mcp-proxy", "POST", "/mcp/tools/", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, alice, 200},
		{"a2a-card", "GET", "/a2a/helper/.well-known/agent-card.json", "", alice, 200},
		{"admin-api", "GET", "/admin/api/overview", "", alice, 200},
		{"admin-401", "GET", "/admin/api/overview", "", nil, 401},
		{"metrics", "GET", "/metrics", "", alice, 200},
		{"passthrough", "POST", "/mock/v1/chat/completions", panicChatBody, alice, 200},
		{"not-found", "GET", "/nowhere", "", nil, 404},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := send(t, base, testRequest{method: tc.method, path: tc.path, headers: tc.headers, body: tc.body})
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %.300s", resp.StatusCode, tc.status, body)
			}
			if got := resp.Header.Values("X-Content-Type-Options"); len(got) != 1 || got[0] != "nosniff" {
				t.Fatalf("X-Content-Type-Options %q, want one nosniff", got)
			}
			if resp.Header.Get("Strict-Transport-Security") != "" {
				t.Fatalf("HSTS on a plain-HTTP answer")
			}
		})
	}
}

// The admin pages, their assets and the admin API (answers and
// refusals) carry X-Frame-Options: DENY and the admin CSP.
func TestAdminFrameHeaders(t *testing.T) {
	base, _, _, _ := panicGateway(t, nil)
	var asset string
	for name := range adminAssets {
		asset = name
		break
	}
	paths := []string{"/admin", "/admin/", "/admin/api/overview", "/admin/nowhere"}
	if asset != "" {
		paths = append(paths, "/admin/assets/"+asset)
	}
	for _, p := range paths {
		for _, key := range []string{testAliceKey, ""} {
			status, h, _ := do(t, "GET", base+p, key, "")
			if h.Get("X-Frame-Options") != "DENY" || h.Get("Content-Security-Policy") != adminCSP || h.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("GET %s (key %v): %d with XFO %q CSP %q", p, key != "", status, h.Get("X-Frame-Options"), h.Get("Content-Security-Policy"))
			}
		}
	}
}

// HSTS goes on an answer to a request that came over TLS: its own TLS
// connection, or a trusted proxy's X-Forwarded-Proto: https (its first
// entry). An untrusted peer's header, or "http", sets nothing.
func TestHSTSOverTLS(t *testing.T) {
	up := panicUpstream(t)
	cfg := strings.Replace(panicConfig(up.URL), "{", `{"trustedProxies": ["10.0.0.0/8"],`, 1)
	g, err := newGatewayFromConfig(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, remote, proto string
		tls                 bool
		want                bool
	}{
		{"plain", "192.0.2.1:5000", "", false, false},
		{"tls", "192.0.2.1:5000", "", true, true},
		{"untrusted-forwarded", "192.0.2.1:5000", "https", false, false},
		{"trusted-forwarded", "10.1.2.3:5000", "https", false, true},
		{"trusted-forwarded-list", "10.1.2.3:5000", "HTTPS, http", false, true},
		{"trusted-forwarded-http", "10.1.2.3:5000", "http, https", false, false},
	}
	for _, tc := range cases {
		for _, path := range []string{"/v1/models", "/nowhere", "/admin"} {
			r := httptest.NewRequest("GET", "http://gw.example"+path, nil)
			r.RemoteAddr = tc.remote
			if tc.proto != "" {
				r.Header.Set("X-Forwarded-Proto", tc.proto)
			}
			if tc.tls {
				r.TLS = &tls.ConnectionState{}
			}
			w := httptest.NewRecorder()
			g.ServeHTTP(w, r)
			got := w.Header().Get("Strict-Transport-Security")
			if tc.want && got != hstsMaxAge || !tc.want && got != "" {
				t.Errorf("%s %s: Strict-Transport-Security %q, want it %v", tc.name, path, got, tc.want)
			}
		}
	}
	srv := httptest.NewTLSServer(g)
	t.Cleanup(srv.Close)
	resp, err := srv.Client().Get(srv.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.Header.Get("Strict-Transport-Security") != hstsMaxAge {
		t.Fatalf("over a real TLS connection: HSTS %q", resp.Header.Get("Strict-Transport-Security"))
	}
}

// With passthroughUnknown, what the gateway does not answer goes to next
// untouched (no edge header, a preflight included), and ownsPath agrees
// with the dispatch on every kind of path.
func TestOwnsPathFollowsDispatch(t *testing.T) {
	up := panicUpstream(t)
	cfg := strings.Replace(panicConfig(up.URL), "{", `{"passthroughUnknown": true, "cors": {"allowedOrigins": ["`+corsOrigin+`"]},`, 1)
	var reached atomic.Bool
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Store(true)
		w.WriteHeader(299)
	})
	g, srv, _ := serveTestGateway(t, cfg, next, nil)
	paths := []string{"/", "/v1/chat/completions", "/v1/embeddings", "/v1/messages", "/v1/messages/count_tokens", "/v1/responses",
		"/v1/models", "/v1/models/m1", "/v1/unknown", "/api/chat", "/api/tags", "/api/show", "/api/version", "/api/ps", "/api/pull",
		"/v1/mcp/servers", "/v1/agents", "/mcp", "/mcp/tools/", "/a2a/helper/x", "/admin", "/admin/api/overview", "/administrator",
		"/metrics", "/metrics/x", "/mock/v1/chat/completions", "/mock", "/other/path", "/mcpx"}
	for _, p := range paths {
		for _, method := range []string{"GET", "OPTIONS"} {
			reached.Store(false)
			r := httptest.NewRequest(method, "http://gw.example"+p, nil)
			owns := g.ownsPath(r)
			req, _ := http.NewRequest(method, srv.URL+p, nil)
			req.Header.Set("Origin", corsOrigin)
			if method == "OPTIONS" {
				req.Header.Set("Access-Control-Request-Method", "POST")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if reached.Load() == owns {
				t.Errorf("%s %s: ownsPath %v, but next reached %v", method, p, owns, reached.Load())
			}
			if reached.Load() {
				for k := range resp.Header {
					if strings.HasPrefix(k, "Access-Control-") || k == "X-Content-Type-Options" || k == "Vary" || k == "X-Request-Id" {
						t.Errorf("%s %s: next's answer carries %s", method, p, k)
					}
				}
			}
		}
	}
}

// Without a next handler, passthroughUnknown changes nothing for the
// edge: the 404 is the gateway's own and carries its headers.
func TestEdgeWithoutNext(t *testing.T) {
	up := panicUpstream(t)
	cfg := strings.Replace(panicConfig(up.URL), "{", `{"passthroughUnknown": true, "cors": {"allowedOrigins": ["`+corsOrigin+`"]},`, 1)
	srv, _ := newTestGateway(t, cfg, nil)
	resp, body := send(t, srv.URL, testRequest{method: "GET", path: "/other/path", headers: map[string]string{"Origin": corsOrigin}})
	if resp.StatusCode != http.StatusNotFound || resp.Header.Get("X-Content-Type-Options") != "nosniff" ||
		resp.Header.Get("Access-Control-Allow-Origin") != corsOrigin {
		t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, body)
	}
	decodeEnvelope(t, body)
}
