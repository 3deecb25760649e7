package gateway

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// CORS (cors.go): the block's validation, preflights on every route
// family before authentication, the headers of actual answers, and the
// headers of proxied targets and of next's answers.

const (
	corsOrigin   = "https://app.example.com"
	corsWildcard = "https://*.corp.example"
)

// corsConfig is panicConfig (every route family) with a cors block.
func corsConfig(upstreamURL, cors string) string {
	return "{\n  \"cors\": " + cors + "," + strings.TrimPrefix(panicConfig(upstreamURL), "{")
}

func corsGateway(t *testing.T, cors string) (string, *fakeUpstream) {
	t.Helper()
	up := panicUpstream(t)
	srv, _ := newTestGateway(t, corsConfig(up.URL, cors), nil)
	return srv.URL, up
}

func TestCORSConfigRefused(t *testing.T) {
	cases := []struct{ name, cors, want string }{
		{"no-origins", `{}`, "cors.allowedOrigins: at least one origin is required"},
		{"any-with-credentials", `{"allowedOrigins": ["*"], "allowCredentials": true}`, `"*" cannot be combined with allowCredentials`},
		{"null", `{"allowedOrigins": ["null"]}`, `cors.allowedOrigins[0]: "null" is refused`},
		{"trailing-slash", `{"allowedOrigins": ["https://a.example/"]}`, `cors.allowedOrigins[0]: "https://a.example/" is not an origin`},
		{"path", `{"allowedOrigins": ["https://a.example", "https://a.example/app"]}`, `cors.allowedOrigins[1]: "https://a.example/app" is not an origin`},
		{"no-scheme", `{"allowedOrigins": ["a.example"]}`, `is not an origin`},
		{"inner-wildcard", `{"allowedOrigins": ["https://a.*.example"]}`, `a wildcard is only "*." before a domain`},
		{"bare-wildcard", `{"allowedOrigins": ["https://*."]}`, `a wildcard is only "*." before a domain`},
		{"bad-method", `{"allowedOrigins": ["*"], "allowedMethods": ["GET", "PO ST"]}`, `cors.allowedMethods[1]: "PO ST" is not a valid name`},
		{"star-method", `{"allowedOrigins": ["*"], "allowedMethods": ["*"]}`, `cors.allowedMethods[0]`},
		{"bad-header", `{"allowedOrigins": ["*"], "allowedHeaders": ["x-a:b"]}`, `cors.allowedHeaders[0]: "x-a:b" is not a valid name`},
		{"glob-header", `{"allowedOrigins": ["*"], "allowedHeaders": ["x-*"]}`, `cors.allowedHeaders[0]`},
		{"expose-star-credentials", `{"allowedOrigins": ["https://a.example"], "allowCredentials": true, "exposeHeaders": ["*"]}`, `cors.exposeHeaders: "*" cannot be combined`},
		{"max-age-bad", `{"allowedOrigins": ["*"], "maxAge": "ten"}`, `cors.maxAge: "ten" is not a Go duration`},
		{"max-age-negative", `{"allowedOrigins": ["*"], "maxAge": "-1s"}`, `cors.maxAge: "-1s" must be between 0s and 24h`},
		{"max-age-long", `{"allowedOrigins": ["*"], "maxAge": "25h"}`, `must be between 0s and 24h`},
		{"unknown-key", `{"allowedOrigin": ["*"]}`, `unknown config key "allowedOrigin"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newGatewayFromConfig(t, corsConfig("http://127.0.0.1:1", tc.cors))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// The plugin's decoder refuses an unknown cors key by its path and reads
// Traefik's strings (a comma-separated list, "true", a duration).
func TestCORSConfigFromMap(t *testing.T) {
	base := map[string]interface{}{
		"providers": map[string]interface{}{"mock": map[string]interface{}{"type": "openai", "models": "m1"}},
	}
	base["cors"] = map[string]interface{}{"allowedOrigins": "https://a.example", "exposeheaders": "X-Request-Id", "allowedOrigin": "x"}
	if _, err := ConfigFromMap(base); err == nil || !strings.Contains(err.Error(), `cors: unknown config key "allowedOrigin"`) {
		t.Fatalf("unknown key: %v", err)
	}
	base["cors"] = map[string]interface{}{"allowedOrigins": "https://a.example,https://*.b.example", "allowCredentials": "true", "maxAge": "90s"}
	cfg, err := ConfigFromMap(base)
	if err != nil {
		t.Fatal(err)
	}
	p, err := compileCORS(cfg.Cors)
	if err != nil {
		t.Fatal(err)
	}
	if !p.credentials || p.maxAge[0] != "90" || !p.allows("https://a.example") || !p.allows("https://x.b.example") || p.allows("https://b.example") {
		t.Fatalf("compiled %+v", p)
	}
}

func TestCORSOriginMatching(t *testing.T) {
	p, err := compileCORS(&CORSConfig{AllowedOrigins: []string{"https://App.Example.com:443", "http://localhost:5173", corsWildcard}})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		origin string
		want   bool
	}{
		{"https://app.example.com", true},
		{"HTTPS://APP.EXAMPLE.COM", true},
		{"https://app.example.com:8443", false},
		{"http://app.example.com", false},
		{"https://app.example.com.evil.test", false},
		{"http://localhost:5173", true},
		{"http://localhost:5174", false},
		{"https://a.corp.example", true},
		{"https://a.b.corp.example", true},
		{"https://corp.example", false},
		{"https://.corp.example", false},
		{"https://a..corp.example", false},
		{"https://evilcorp.example", false},
		{"http://a.corp.example", false},
		{"https://a.corp.example:8443", false},
		{"https://a_b.corp.example", false},
		{"null", false},
		{"", false},
	}
	for _, tc := range cases {
		if got := p.allows(tc.origin); got != tc.want {
			t.Errorf("allows(%q) = %v, want %v", tc.origin, got, tc.want)
		}
	}
}

// corsRoutes are one path of every route family, with the envelope a
// refused preflight answers in.
var corsRoutes = []struct {
	name, path string
	check      func(*testing.T, string)
}{
	{"chat", "/v1/chat/completions", nil},
	{"embeddings", "/v1/embeddings", nil},
	{"messages", "/v1/messages", func(t *testing.T, body string) { anthropicError(t, body) }},
	{"responses", "/v1/responses", nil},
	{"ollama-chat", "/api/chat", expectOllamaEnvelope},
	{"ollama-tags", "/api/tags", expectOllamaEnvelope},
	{"models", "/v1/models", nil},
	{"registry", "/v1/agents", nil},
	{"mcp-federated", "/mcp", nil},
	{"mcp-proxy", "/mcp/tools/", nil},
	{"a2a-proxy", "/a2a/helper/", nil},
	{"admin", "/admin/api/overview", nil},
	{"metrics", "/metrics", nil},
	{"passthrough", "/mock/v1/chat/completions", nil},
}

func expectOllamaEnvelope(t *testing.T, body string) {
	t.Helper()
	if !strings.HasPrefix(body, `{"error":"`) {
		t.Fatalf("not Ollama's envelope: %s", body)
	}
}

// A preflight (OPTIONS with Origin and Access-Control-Request-Method) is
// answered on every route family before authentication: 204 with the
// allow headers for an allowed origin (the asked headers reflected by
// default), 403 in the route's envelope without any of them for another.
// Nothing reaches the upstream.
func TestCORSPreflightEveryRoute(t *testing.T) {
	base, up := corsGateway(t, `{"allowedOrigins": ["`+corsOrigin+`", "`+corsWildcard+`"]}`)
	asked := "authorization,content-type,x-stainless-os"
	for _, rt := range corsRoutes {
		t.Run(rt.name, func(t *testing.T) {
			for _, origin := range []string{corsOrigin, "https://team.corp.example"} {
				resp, body := send(t, base, testRequest{method: http.MethodOptions, path: rt.path, headers: map[string]string{
					"Origin": origin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": asked}})
				h := resp.Header
				if resp.StatusCode != http.StatusNoContent || body != "" {
					t.Fatalf("%s: preflight %d %q, want 204 without a body", origin, resp.StatusCode, body)
				}
				want := map[string]string{"Access-Control-Allow-Origin": origin, "Access-Control-Allow-Methods": defaultCORSMethods,
					"Access-Control-Allow-Headers": asked, "Access-Control-Max-Age": "600", "X-Content-Type-Options": "nosniff"}
				for k, v := range want {
					if got := h.Values(k); len(got) != 1 || got[0] != v {
						t.Errorf("%s: %s = %q, want %q", origin, k, got, v)
					}
				}
				if h.Get("Access-Control-Allow-Credentials") != "" || h.Get("X-Request-Id") == "" ||
					!strings.Contains(strings.Join(h.Values("Vary"), ","), "Access-Control-Request-Headers") {
					t.Errorf("%s: headers %v", origin, h)
				}
			}
			resp, body := send(t, base, testRequest{method: http.MethodOptions, path: rt.path, headers: map[string]string{
				"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"}})
			if resp.StatusCode != http.StatusForbidden {
				t.Fatalf("refused preflight %d %s, want 403", resp.StatusCode, body)
			}
			if rt.check != nil {
				rt.check(t, body)
			} else if d := decodeEnvelope(t, body); d.Code != "cors_origin_not_allowed" {
				t.Errorf("refused preflight code %q", d.Code)
			}
			for k := range resp.Header {
				if strings.HasPrefix(k, "Access-Control-") {
					t.Errorf("refused preflight carries %s", k)
				}
			}
		})
	}
	if up.count() != 0 {
		t.Fatalf("%d preflights reached the upstream", up.count())
	}
}

// An allowed origin's every answer carries Access-Control-Allow-Origin
// and the exposed headers (errors and streams included); another
// origin's, and an answer without Origin, none; every answer varies on
// Origin. An OPTIONS without Origin or without
// Access-Control-Request-Method is no preflight: it is routed (405).
func TestCORSActualRequests(t *testing.T) {
	base, _ := corsGateway(t, `{"allowedOrigins": ["`+corsOrigin+`"]}`)
	cases := []struct {
		name, method, path, key, body, origin string
		extra                                 map[string]string
		status                                int
		allowed                               bool
	}{
		{"chat", "POST", "/v1/chat/completions", testAliceKey, panicChatBody, corsOrigin, nil, 200, true},
		{"stream", "POST", "/v1/chat/completions", testAliceKey, panicChatStream, corsOrigin, nil, 200, true},
		{"unauthenticated", "POST", "/v1/chat/completions", "", panicChatBody, corsOrigin, nil, 401, true},
		{"not-found", "GET", "/nowhere", testAliceKey, "", corsOrigin, nil, 404, true},
		{"models", "GET", "/v1/models", testAliceKey, "", corsOrigin, nil, 200, true},
		{"passthrough", "POST", "/mock/v1/chat/completions", testAliceKey, panicChatBody, corsOrigin, nil, 200, true},
		{"other-origin", "POST", "/v1/chat/completions", testAliceKey, panicChatBody, "https://evil.example", nil, 200, false},
		{"no-origin", "POST", "/v1/chat/completions", testAliceKey, panicChatBody, "", nil, 200, false},
		{"options-without-method", "OPTIONS", "/v1/chat/completions", testAliceKey, "", corsOrigin, nil, 405, true},
		{"options-without-origin", "OPTIONS", "/v1/chat/completions", testAliceKey, "", "", map[string]string{"Access-Control-Request-Method": "POST"}, 405, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			headers := map[string]string{"Content-Type": "application/json"}
			if tc.key != "" {
				headers["Authorization"] = "Bearer " + tc.key
			}
			if tc.origin != "" {
				headers["Origin"] = tc.origin
			}
			for k, v := range tc.extra {
				headers[k] = v
			}
			resp, body := send(t, base, testRequest{method: tc.method, path: tc.path, headers: headers, body: tc.body})
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			h := resp.Header
			if tc.allowed {
				if got := h.Values("Access-Control-Allow-Origin"); len(got) != 1 || got[0] != corsOrigin {
					t.Errorf("Access-Control-Allow-Origin %q", got)
				}
				if h.Get("Access-Control-Expose-Headers") != defaultCORSExpose {
					t.Errorf("Access-Control-Expose-Headers %q", h.Get("Access-Control-Expose-Headers"))
				}
			} else if h.Get("Access-Control-Allow-Origin") != "" || h.Get("Access-Control-Expose-Headers") != "" {
				t.Errorf("CORS headers on an answer to %q: %v", tc.origin, h)
			}
			if h.Get("Access-Control-Allow-Methods") != "" {
				t.Errorf("a non-preflight carries Access-Control-Allow-Methods")
			}
			if !strings.Contains(strings.Join(h.Values("Vary"), ","), "Origin") {
				t.Errorf("Vary %q, want Origin", h.Values("Vary"))
			}
		})
	}
}

// Without the block nothing changes: a preflight is an OPTIONS like any
// other (405 on a POST route) and no answer carries a CORS header.
func TestCORSOffByDefault(t *testing.T) {
	up := panicUpstream(t)
	srv, _ := newTestGateway(t, panicConfig(up.URL), nil)
	resp, _ := send(t, srv.URL, testRequest{method: http.MethodOptions, path: "/v1/chat/completions", headers: map[string]string{
		"Origin": corsOrigin, "Access-Control-Request-Method": "POST"}})
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("preflight without cors: %d, want 405", resp.StatusCode)
	}
	headers := bearer(testAliceKey)
	headers["Origin"] = corsOrigin
	resp2, _ := send(t, srv.URL, testRequest{path: "/v1/chat/completions", headers: headers, body: panicChatBody})
	for _, h := range []http.Header{resp.Header, resp2.Header} {
		for k := range h {
			if strings.HasPrefix(k, "Access-Control-") || k == "Vary" {
				t.Errorf("CORS off, yet the answer carries %s", k)
			}
		}
	}
}

// The block's other keys: "*" (no Vary: Origin on actual answers),
// credentials, a fixed header list, methods, maxAge 0, exposed headers.
func TestCORSOptions(t *testing.T) {
	t.Run("any-origin", func(t *testing.T) {
		base, _ := corsGateway(t, `{"allowedOrigins": ["*"], "allowedHeaders": ["Authorization", "Content-Type"], "maxAge": "0s"}`)
		resp, _ := send(t, base, testRequest{method: "OPTIONS", path: "/v1/models", headers: map[string]string{
			"Origin": "https://anyone.example", "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "x-other"}})
		h := resp.Header
		if resp.StatusCode != 204 || h.Get("Access-Control-Allow-Origin") != "*" || h.Get("Access-Control-Allow-Headers") != "Authorization, Content-Type" ||
			h.Get("Access-Control-Max-Age") != "0" {
			t.Fatalf("preflight %d %v", resp.StatusCode, h)
		}
		resp, _ = send(t, base, testRequest{method: "GET", path: "/v1/models", headers: map[string]string{"Origin": "https://anyone.example", "Authorization": "Bearer " + testAliceKey}})
		if resp.Header.Get("Access-Control-Allow-Origin") != "*" || len(resp.Header.Values("Vary")) != 0 {
			t.Fatalf("actual answer %v", resp.Header)
		}
	})
	t.Run("credentials", func(t *testing.T) {
		base, _ := corsGateway(t, `{"allowedOrigins": ["`+corsOrigin+`"], "allowCredentials": true, "allowedMethods": ["get", "post"], "exposeHeaders": ["X-Request-Id"], "maxAge": "2h"}`)
		resp, _ := send(t, base, testRequest{method: "OPTIONS", path: "/v1/chat/completions", headers: map[string]string{
			"Origin": corsOrigin, "Access-Control-Request-Method": "POST"}})
		h := resp.Header
		if h.Get("Access-Control-Allow-Credentials") != "true" || h.Get("Access-Control-Allow-Methods") != "GET, POST" ||
			h.Get("Access-Control-Max-Age") != "7200" || h.Get("Access-Control-Allow-Headers") != "" {
			t.Fatalf("preflight %v", h)
		}
		headers := bearer(testAliceKey)
		headers["Origin"] = corsOrigin
		resp, _ = send(t, base, testRequest{path: "/v1/chat/completions", headers: headers, body: panicChatBody})
		h = resp.Header
		if h.Get("Access-Control-Allow-Credentials") != "true" || h.Get("Access-Control-Expose-Headers") != "X-Request-Id" ||
			h.Get("Access-Control-Allow-Origin") != corsOrigin {
			t.Fatalf("actual answer %v", h)
		}
	})
	t.Run("unsafe-asked-headers", func(t *testing.T) {
		base, _ := corsGateway(t, `{"allowedOrigins": ["`+corsOrigin+`"]}`)
		resp, _ := send(t, base, testRequest{method: "OPTIONS", path: "/v1/models", headers: map[string]string{
			"Origin": corsOrigin, "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "x-a:b"}})
		if resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Headers") != "" {
			t.Fatalf("a malformed header list was reflected: %d %v", resp.StatusCode, resp.Header)
		}
	})
}

// A proxied target's own CORS and security headers never reach the
// client: the gateway's edge headers replace them (CORS on or off).
func TestCORSProxyDropsTargetHeaders(t *testing.T) {
	mcp := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Header().Set("Access-Control-Allow-Credentials", "true")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Strict-Transport-Security", "max-age=1")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	})
	for _, cors := range []string{"", `"cors": {"allowedOrigins": ["` + corsOrigin + `"]},`} {
		cfg := proxyConfig(`"tools": {"url": "`+mcp.URL+`/mcp"}`, "", "", cors)
		srv, _ := newTestGateway(t, cfg, nil)
		resp, body := send(t, srv.URL, testRequest{path: "/mcp/tools/", body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, headers: map[string]string{
			"Authorization": "Bearer " + proxyAliceKey, "Origin": corsOrigin, "Content-Type": "application/json"}})
		h := resp.Header
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		wantOrigin := []string(nil)
		if cors != "" {
			wantOrigin = []string{corsOrigin}
		}
		if got := h.Values("Access-Control-Allow-Origin"); strings.Join(got, "|") != strings.Join(wantOrigin, "|") ||
			h.Get("Access-Control-Allow-Credentials") != "" || len(h.Values("X-Content-Type-Options")) != 1 || h.Get("Strict-Transport-Security") != "" {
			t.Fatalf("cors %q: headers %v", cors, h)
		}
	}
}
