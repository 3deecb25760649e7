package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestUnifiedForwardsBodyByteExact(t *testing.T) {
	up := newFakeUpstream(t, okJSON(`{"id":"ok"}`))
	srv, _ := newTestGateway(t, standardConfig(up.URL), nil)
	cases := []struct {
		name, path, in, want string
	}{
		{"bare_model_untouched", "/v1/chat/completions",
			"{ \"model\" : \"m1\",\n\t\"n\": 12345678901234567890, \"unknown\": {\"deep\": [1, 2.50, -0e0]} }",
			"{ \"model\" : \"m1\",\n\t\"n\": 12345678901234567890, \"unknown\": {\"deep\": [1, 2.50, -0e0]} }"},
		{"prefixed_model_rewritten_only", "/v1/chat/completions",
			"{\"messages\":[{\"role\":\"user\",\"content\":\"h\\u00e9\"}],  \"model\"  :  \"mock/m2\" , \"x\":1e400}",
			"{\"messages\":[{\"role\":\"user\",\"content\":\"h\\u00e9\"}],  \"model\"  :  \"m2\" , \"x\":1e400}"},
		{"escaped_model_value", "/v1/chat/completions",
			`{"model":"mock\/m1","z":null}`,
			`{"model":"m1","z":null}`},
		{"nested_model_ignored", "/v1/chat/completions",
			`{"tools":[{"model":"mock/m2"}],"model":"mock/m1"}`,
			`{"tools":[{"model":"mock/m2"}],"model":"m1"}`},
		{"embeddings", "/v1/embeddings",
			`{"input":["a","b"],"model":"mock/m1","dimensions":12345678901234567890123}`,
			`{"input":["a","b"],"model":"m1","dimensions":12345678901234567890123}`},
		{"trailing_whitespace_kept", "/v1/embeddings", "{\"model\":\"m1\"}\n\r\n ", "{\"model\":\"m1\"}\n\r\n "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := send(t, srv.URL, testRequest{path: tc.path, body: tc.in, headers: map[string]string{
				"Authorization": "Bearer " + testAliceKey, "Cookie": "a=" + testAliceKey, "X-Api-Key": testAliceKey, "Content-Type": "application/json"}})
			if resp.StatusCode != 200 || body != `{"id":"ok"}` {
				t.Fatalf("status %d body %s", resp.StatusCode, body)
			}
			got := up.last(t)
			if string(got.body) != tc.want {
				t.Fatalf("upstream body\n got %q\nwant %q", got.body, tc.want)
			}
			if got.method != "POST" || got.path != tc.path {
				t.Fatalf("upstream got %s %s", got.method, got.path)
			}
			if a := got.header.Get("Authorization"); a != "Bearer "+testProviderKey {
				t.Fatalf("upstream Authorization %q", a)
			}
			for _, h := range []string{"X-Api-Key", "Cookie"} {
				if v := got.header.Get(h); v != "" {
					t.Fatalf("client %s forwarded: %q", h, v)
				}
			}
			if ct := got.header.Get("Content-Type"); ct != "application/json" {
				t.Fatalf("upstream Content-Type %q", ct)
			}
		})
	}
}

func TestUnifiedKeylessProviderAndXAPIKey(t *testing.T) {
	up := newFakeUpstream(t, okJSON(`{"id":"ok"}`))
	cfg := `{"providers":{"local":{"type":"openai","baseUrl":"` + up.URL + `/","models":["llama"]}},
	"groups":{"g":{}},"users":{"inline":[{"name":"u","group":"g","apiKey":"sk-keyless-user"}]}}`
	srv, _ := newTestGateway(t, cfg, nil)
	resp, body := send(t, srv.URL, testRequest{path: "/v1/chat/completions", body: `{"model":"local/llama"}`,
		headers: map[string]string{"X-Api-Key": "sk-keyless-user"}})
	if resp.StatusCode != 200 {
		t.Fatalf("status %d body %s", resp.StatusCode, body)
	}
	got := up.last(t)
	if got.path != "/v1/chat/completions" {
		t.Fatalf("path %q (trailing slash of baseUrl must be trimmed)", got.path)
	}
	for _, h := range []string{"Authorization", "X-Api-Key"} {
		if v, ok := got.header[h]; ok {
			t.Fatalf("keyless provider got %s %q", h, v)
		}
	}
	if string(got.body) != `{"model":"llama"}` {
		t.Fatalf("body %s", got.body)
	}
}

func TestUnifiedUpstreamErrors(t *testing.T) {
	cases := []struct {
		name       string
		status     int
		ctype      string
		body       string
		retryAfter string
		wantStatus int
		wantType   string
		wantUp     string // expected error.upstream, compacted JSON
	}{
		{"bad_request_passes", 400, "application/json", `{"error":{"message":"bad thing","code":"x"}}`, "", 400, "invalid_request_error", `{"error":{"message":"bad thing","code":"x"}}`},
		{"not_found_passes", 404, "application/json", `{"error":"nope"}`, "", 404, "invalid_request_error", `{"error":"nope"}`},
		{"unauthorized_becomes_502", 401, "application/json", `{"error":{"message":"bad key"}}`, "", 502, "server_error", `{"error":{"message":"bad key"}}`},
		{"forbidden_becomes_502", 403, "text/plain", `denied`, "", 502, "server_error", `"denied"`},
		{"rate_limited_keeps_retry_after", 429, "application/json", `{"error":"slow down"}`, "17", 429, "rate_limit_error", `{"error":"slow down"}`},
		{"server_error", 500, "text/html", "<html>oops</html>", "", 500, "server_error", `"\u003chtml\u003eoops\u003c/html\u003e"`},
		{"overloaded_529", 529, "application/json", `{"type":"overloaded"}`, "", 529, "server_error", `{"type":"overloaded"}`},
		{"redirect_becomes_502", 302, "text/plain", "moved", "", 502, "server_error", `"moved"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.ctype)
				if tc.retryAfter != "" {
					w.Header().Set("Retry-After", tc.retryAfter)
				}
				if tc.status == 302 {
					w.Header().Set("Location", "/elsewhere")
				}
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			})
			srv, _ := newTestGateway(t, standardConfig(up.URL), nil)
			resp, body := send(t, srv.URL, testRequest{path: "/v1/chat/completions", body: `{"model":"m1"}`, headers: bearer(testAliceKey)})
			d := expectEnvelope(t, resp, body, tc.wantStatus, tc.wantType, "upstream_error")
			var compact strings.Builder
			enc := json.NewEncoder(&compact)
			var v interface{}
			if err := json.Unmarshal(d.Upstream, &v); err != nil {
				t.Fatalf("error.upstream %s: %v", d.Upstream, err)
			}
			_ = enc.Encode(v)
			var wantV interface{}
			_ = json.Unmarshal([]byte(tc.wantUp), &wantV)
			var wantC strings.Builder
			_ = json.NewEncoder(&wantC).Encode(wantV)
			if compact.String() != wantC.String() {
				t.Fatalf("error.upstream = %s, want %s", d.Upstream, tc.wantUp)
			}
			if got := resp.Header.Get("Retry-After"); got != tc.retryAfter {
				t.Fatalf("Retry-After %q, want %q", got, tc.retryAfter)
			}
			if up.count() != 1 {
				t.Fatalf("upstream called %d times", up.count())
			}
		})
	}
}

func TestUnifiedRequestErrors(t *testing.T) {
	up := newFakeUpstream(t, okJSON(`{"id":"ok"}`))
	srv, _ := newTestGateway(t, standardConfig(up.URL), nil)
	overCap := `{"model":"m1","pad":"` + strings.Repeat("x", maxUnifiedRequestBytes) + `"}`
	auth := bearer(testAliceKey)
	cases := []struct {
		name   string
		req    testRequest
		status int
		kind   string
		code   string
		allow  string
	}{
		{"no_key", testRequest{path: "/v1/chat/completions", body: `{"model":"m1"}`}, 401, "authentication_error", "invalid_api_key", ""},
		{"malformed_json", testRequest{path: "/v1/chat/completions", body: `{"model":"m1",`, headers: auth}, 400, "invalid_request_error", "invalid_json", ""},
		{"garbage", testRequest{path: "/v1/chat/completions", body: `model=m1`, headers: auth}, 400, "invalid_request_error", "invalid_json", ""},
		{"empty_body", testRequest{path: "/v1/chat/completions", headers: auth}, 400, "invalid_request_error", "invalid_json", ""},
		{"array_body", testRequest{path: "/v1/chat/completions", body: `[{"model":"m1"}]`, headers: auth}, 400, "invalid_request_error", "invalid_json", ""},
		{"string_body", testRequest{path: "/v1/chat/completions", body: `"m1"`, headers: auth}, 400, "invalid_request_error", "invalid_json", ""},
		{"null_body", testRequest{path: "/v1/embeddings", body: `null`, headers: auth}, 400, "invalid_request_error", "invalid_json", ""},
		{"missing_model", testRequest{path: "/v1/chat/completions", body: `{"messages":[]}`, headers: auth}, 400, "invalid_request_error", "missing_model", ""},
		{"empty_model", testRequest{path: "/v1/chat/completions", body: `{"model":""}`, headers: auth}, 400, "invalid_request_error", "missing_model", ""},
		{"model_not_string", testRequest{path: "/v1/chat/completions", body: `{"model":7}`, headers: auth}, 400, "invalid_request_error", "invalid_model", ""},
		{"duplicate_model", testRequest{path: "/v1/chat/completions", body: `{"model":"m1","model":"m2"}`, headers: auth}, 400, "invalid_request_error", "invalid_request", ""},
		{"duplicate_model_escaped_key", testRequest{path: "/v1/embeddings", body: `{"model":"m1","mod\u0065l":"m2"}`, headers: auth}, 400, "invalid_request_error", "invalid_request", ""},
		{"case_variant_model_key", testRequest{path: "/v1/chat/completions", body: `{"model":"m1","Model":"m2"}`, headers: auth}, 400, "invalid_request_error", "invalid_request", ""},
		{"only_case_variant_model_key", testRequest{path: "/v1/chat/completions", body: `{"MODEL":"m1"}`, headers: auth}, 400, "invalid_request_error", "invalid_request", ""},
		{"trailing_object", testRequest{path: "/v1/chat/completions", body: `{"model":"m1"}{"model":"m2"}`, headers: auth}, 400, "invalid_request_error", "invalid_json", ""},
		{"trailing_garbage", testRequest{path: "/v1/chat/completions", body: `{"model":"m1"} x`, headers: auth}, 400, "invalid_request_error", "invalid_json", ""},
		{"trailing_bracket", testRequest{path: "/v1/chat/completions", body: `{"model":"m1"}]`, headers: auth}, 400, "invalid_request_error", "invalid_json", ""},
		{"unknown_model", testRequest{path: "/v1/chat/completions", body: `{"model":"gpt-9"}`, headers: auth}, 404, "invalid_request_error", "model_not_found", ""},
		{"unknown_prefixed_model", testRequest{path: "/v1/chat/completions", body: `{"model":"mock/gpt-9"}`, headers: auth}, 404, "invalid_request_error", "model_not_found", ""},
		{"denied_model", testRequest{path: "/v1/chat/completions", body: `{"model":"m2"}`, headers: bearer(testBobKey)}, 403, "permission_error", "model_not_allowed", ""},
		{"denied_prefixed_model", testRequest{path: "/v1/embeddings", body: `{"model":"mock/m2"}`, headers: bearer(testBobKey)}, 403, "permission_error", "model_not_allowed", ""},
		{"too_large_chunked", testRequest{path: "/v1/embeddings", body: overCap, headers: auth, chunked: true}, 413, "invalid_request_error", "request_too_large", ""},
		{"get_chat", testRequest{method: "GET", path: "/v1/chat/completions", headers: auth}, 405, "invalid_request_error", "method_not_allowed", "POST"},
		{"put_embeddings", testRequest{method: "PUT", path: "/v1/embeddings", body: `{"model":"m1"}`, headers: auth}, 405, "invalid_request_error", "method_not_allowed", "POST"},
		{"post_models", testRequest{method: "POST", path: "/v1/models", body: `{}`, headers: auth}, 405, "invalid_request_error", "method_not_allowed", "GET, HEAD"},
		{"delete_model", testRequest{method: "DELETE", path: "/v1/models/m1", headers: auth}, 405, "invalid_request_error", "method_not_allowed", "GET, HEAD"},
		{"unknown_route", testRequest{path: "/v1/completions", body: `{"model":"m1"}`, headers: auth}, 404, "invalid_request_error", "not_found", ""},
		{"unknown_route_subpath", testRequest{path: "/v1/chat/completions/x", body: `{"model":"m1"}`, headers: auth}, 404, "invalid_request_error", "not_found", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := up.count()
			resp, body := send(t, srv.URL, tc.req)
			expectEnvelope(t, resp, body, tc.status, tc.kind, tc.code)
			if got := resp.Header.Get("Allow"); got != tc.allow {
				t.Fatalf("Allow %q, want %q", got, tc.allow)
			}
			if up.count() != before {
				t.Fatal("a refused request reached the upstream")
			}
		})
	}
}

func TestUnifiedDeclaredLengthTooLarge(t *testing.T) {
	up := newFakeUpstream(t, okJSON(`{"id":"ok"}`))
	srv, _ := newTestGateway(t, standardConfig(up.URL), nil)
	for _, path := range []string{"/v1/chat/completions", "/v1/embeddings"} {
		t.Run(path, func(t *testing.T) {
			resp, body := sendDeclaredLength(t, srv.URL, path, bearer(testAliceKey), maxUnifiedRequestBytes+1)
			expectEnvelope(t, resp, body, 413, "invalid_request_error", "request_too_large")
			if up.count() != 0 {
				t.Fatal("an oversized request reached the upstream")
			}
		})
	}
}

func TestUnifiedBodyAtLimitIsAccepted(t *testing.T) {
	t.Parallel()
	up := newFakeUpstream(t, okJSON(`{"id":"ok"}`))
	srv, _ := newTestGateway(t, standardConfig(up.URL), nil)
	head, tail := `{"model":"m1","pad":"`, `"}`
	body := head + strings.Repeat("x", maxUnifiedRequestBytes-len(head)-len(tail)) + tail
	resp, out := send(t, srv.URL, testRequest{path: "/v1/chat/completions", body: body, headers: bearer(testAliceKey), chunked: true})
	if resp.StatusCode != 200 || len(up.last(t).body) != maxUnifiedRequestBytes {
		t.Fatalf("status %d body %.200s", resp.StatusCode, out)
	}
}

func TestUnifiedUnknownRoutes(t *testing.T) {
	up := newFakeUpstream(t, okJSON(`{}`))
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Next", "1")
		_, _ = io.WriteString(w, "next:"+r.URL.Path)
	})
	cfgWith := strings.Replace(standardConfig(up.URL), `"providers"`, `"passthroughUnknown": true, "providers"`, 1)
	cases := []struct {
		name   string
		config string
		next   http.Handler
		toNext bool
	}{
		{"passthrough_unknown_true", cfgWith, next, true},
		{"passthrough_unknown_false_with_next", standardConfig(up.URL), next, false},
		{"passthrough_unknown_true_without_next", cfgWith, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := newTestGateway(t, tc.config, tc.next)
			for _, p := range []string{"/", "/health", "/v1/completions", "/v1/chat/completions/", "/v1"} {
				resp, body := send(t, srv.URL, testRequest{method: "GET", path: p})
				if p == "/" && tc.config == standardConfig(up.URL) {
					// Ollama clients probe the root: answered when nothing else
					// may have it.
					if resp.StatusCode != 200 || body != "Ollama is running" {
						t.Fatalf("GET /: %d %q, want Ollama's probe answer", resp.StatusCode, body)
					}
					continue
				}
				if tc.toNext {
					if resp.StatusCode != 200 || body != "next:"+p || resp.Header.Get("X-Next") != "1" {
						t.Fatalf("%s: status %d body %s", p, resp.StatusCode, body)
					}
					continue
				}
				d := expectEnvelope(t, resp, body, 404, "invalid_request_error", "not_found")
				if !strings.Contains(d.Message, p) {
					t.Fatalf("%s: message %q does not name the path", p, d.Message)
				}
			}
		})
	}
}

func TestUnifiedNonOpenAIProvider(t *testing.T) {
	cfg := `{"providers":{"ant":{"type":"anthropic","baseUrl":"http://127.0.0.1:9","apiKey":"sk-ant-x","models":["claude"]}},
	"groups":{"g":{}},"users":{"inline":[{"name":"u","group":"g","apiKey":"sk-u"}]}}`
	srv, _ := newTestGateway(t, cfg, nil)
	// Anthropic has no embeddings endpoint.
	resp, body := send(t, srv.URL, testRequest{path: "/v1/embeddings", body: `{"model":"claude","input":"x"}`, headers: bearer("sk-u")})
	expectEnvelope(t, resp, body, 501, "invalid_request_error", "provider_not_supported")
}

func TestUnifiedResponseHeadersAndStatus(t *testing.T) {
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("X-Request-Id", "rid-1")
		w.Header().Set("Openai-Processing-Ms", "12")
		w.Header().Set("Set-Cookie", "acct=secret")
		w.Header().Set("Openai-Organization", "org-private")
		w.WriteHeader(201)
		_, _ = io.WriteString(w, `{"a":12345678901234567890}`)
	})
	srv, _ := newTestGateway(t, standardConfig(up.URL), nil)
	resp, body := send(t, srv.URL, testRequest{path: "/v1/embeddings", body: `{"model":"m1"}`, headers: bearer(testAliceKey)})
	if resp.StatusCode != 201 || body != `{"a":12345678901234567890}` {
		t.Fatalf("status %d body %s", resp.StatusCode, body)
	}
	want := map[string]string{"Content-Type": "application/json; charset=utf-8", "X-Upstream-Request-Id": "rid-1", "Openai-Processing-Ms": "12", "Set-Cookie": "", "Openai-Organization": ""}
	if ids := resp.Header.Values("X-Request-Id"); len(ids) != 1 || len(ids[0]) != 32 {
		t.Errorf("X-Request-ID %q, want the gateway's one", ids)
	}
	for k, v := range want {
		if got := resp.Header.Get(k); got != v {
			t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
	if resp.ContentLength != int64(len(body)) {
		t.Errorf("Content-Length %d", resp.ContentLength)
	}
}

func TestUnifiedUpstreamResponseTooLarge(t *testing.T) {
	t.Parallel()
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		chunk := strings.Repeat("x", 1<<20)
		_, _ = io.WriteString(w, `{"pad":"`)
		for i := 0; i < 33; i++ {
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
		_, _ = io.WriteString(w, `"}`)
	})
	srv, _ := newTestGateway(t, standardConfig(up.URL), nil)
	resp, body := send(t, srv.URL, testRequest{path: "/v1/chat/completions", body: `{"model":"m1"}`, headers: bearer(testAliceKey)})
	expectEnvelope(t, resp, body, 502, "server_error", "upstream_response_too_large")
}

func TestUnifiedUpstreamUnreachable(t *testing.T) {
	cfg := standardConfig("http://127.0.0.1:9")
	srv, logs := newTestGateway(t, cfg, nil)
	resp, body := send(t, srv.URL, testRequest{path: "/v1/chat/completions", body: `{"model":"m1"}`, headers: bearer(testAliceKey)})
	expectEnvelope(t, resp, body, 502, "server_error", "upstream_error")
	if !strings.Contains(logs.String(), "ERROR") {
		t.Fatalf("failure not logged: %s", logs)
	}
}
