package gateway

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	ptOpenAIKey    = "sk-pt-openai-0001"
	ptAnthropicKey = "sk-pt-anthropic-0001"
	ptGeminiKey    = "sk-pt-gemini-0001"
	ptAllKey       = "sk-pt-user-all"
	ptM1Key        = "sk-pt-user-m1"
	ptAntOnlyKey   = "sk-pt-user-ant"
	ptMixedKey     = "sk-pt-user-mixed"
	ptUnionKey     = "sk-pt-user-union"
)

// passthroughConfig points every provider at upstreamURL.
func passthroughConfig(upstreamURL string, passthroughUnknown bool) string {
	unknown := "false"
	if passthroughUnknown {
		unknown = "true"
	}
	return `{
  "passthroughUnknown": ` + unknown + `,
  "providers": {
    "oai": {"type": "openai", "baseUrl": "` + upstreamURL + `", "apiKey": "` + ptOpenAIKey + `", "models": ["m1", "m2"]},
    "ant": {"type": "anthropic", "baseUrl": "` + upstreamURL + `/", "apiKey": "` + ptAnthropicKey + `", "models": ["claude"]},
    "gem": {"type": "gemini", "baseUrl": "` + upstreamURL + `", "apiKey": "` + ptGeminiKey + `"},
    "keyless": {"type": "openai", "baseUrl": "` + upstreamURL + `"},
    "off": {"type": "openai", "baseUrl": "` + upstreamURL + `", "apiKey": "sk-pt-off", "passthrough": false}
  },
  "groups": {
    "all": {},
    "m1only": {"providers": ["oai"], "models": ["m1"]},
    "antonly": {"providers": ["ant"]},
    "m2anywhere": {"providers": ["gem"], "models": ["m2"]},
    "oaiopen": {"providers": ["oai"]}
  },
  "users": {"inline": [
    {"name": "all", "group": "all", "apiKey": "` + ptAllKey + `"},
    {"name": "m1", "group": "m1only", "apiKey": "` + ptM1Key + `"},
    {"name": "antonly", "group": "antonly", "apiKey": "` + ptAntOnlyKey + `"},
    {"name": "mixed", "groups": ["m1only", "m2anywhere"], "apiKey": "` + ptMixedKey + `"},
    {"name": "union", "groups": ["m1only", "oaiopen"], "apiKey": "` + ptUnionKey + `"}
  ]}
}`
}

func TestPassthroughForwarding(t *testing.T) {
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Upstream", "yes")
		w.Header().Set("X-Request-Id", "req-1")
		w.Header().Set("X-Ratelimit-Remaining-Requests", "99")
		w.Header().Set("Set-Cookie", "__cf_bm=abc")
		w.Header().Set("Openai-Organization", "org-secret")
		w.Header().Set("Anthropic-Organization-Id", "org-ant")
		_, _ = w.Write([]byte(`{"native":true}`))
	})
	srv, _ := newTestGateway(t, passthroughConfig(up.URL, false), nil)

	cases := []struct {
		name       string
		req        testRequest
		wantPath   string
		wantQuery  string
		wantHeader map[string]string // "" means absent
	}{
		{
			name: "openai_bearer_injected_client_credentials_stripped",
			req: testRequest{method: "POST", path: "/oai/v1/responses?stream=false&x=a%2Fb", body: `{"model":"m2","input":"hi"}`, headers: map[string]string{
				"Authorization": "Bearer " + ptAllKey, "X-Api-Key": ptAllKey, "Cookie": "session=" + ptAllKey, "Content-Type": "application/json", "X-Custom": "kept"}},
			wantPath: "/v1/responses", wantQuery: "stream=false&x=a%2Fb",
			wantHeader: map[string]string{"Authorization": "Bearer " + ptOpenAIKey, "X-Api-Key": "", "Cookie": "", "X-Custom": "kept", "Anthropic-Version": ""},
		},
		{
			name:       "anthropic_x_api_key_and_default_version",
			req:        testRequest{method: "POST", path: "/ant/v1/messages", body: `{"model":"claude"}`, headers: map[string]string{"X-Api-Key": ptAllKey}},
			wantPath:   "/v1/messages",
			wantHeader: map[string]string{"X-Api-Key": ptAnthropicKey, "Anthropic-Version": "2023-06-01", "Authorization": ""},
		},
		{
			name:       "anthropic_client_version_kept",
			req:        testRequest{method: "POST", path: "/ant/v1/messages", body: `{}`, headers: map[string]string{"Authorization": "Bearer " + ptAllKey, "Anthropic-Version": "2024-01-01"}},
			wantPath:   "/v1/messages",
			wantHeader: map[string]string{"X-Api-Key": ptAnthropicKey, "Anthropic-Version": "2024-01-01", "Authorization": ""},
		},
		{
			name:       "gemini_x_goog_api_key",
			req:        testRequest{method: "POST", path: "/gem/v1beta/models/gemini-pro:generateContent?alt=sse", body: `{}`, headers: map[string]string{"Authorization": "Bearer " + ptAllKey, "X-Goog-Api-Key": ptAllKey}},
			wantPath:   "/v1beta/models/gemini-pro:generateContent",
			wantQuery:  "alt=sse",
			wantHeader: map[string]string{"X-Goog-Api-Key": ptGeminiKey, "Authorization": "", "X-Api-Key": ""},
		},
		{
			name:       "keyless_openai_sends_no_authorization",
			req:        testRequest{method: "GET", path: "/keyless/v1/models", headers: map[string]string{"Authorization": "Bearer " + ptAllKey}},
			wantPath:   "/v1/models",
			wantHeader: map[string]string{"Authorization": "", "X-Api-Key": ""},
		},
		{
			name:       "get_without_body",
			req:        testRequest{method: "GET", path: "/oai/v1/models", headers: map[string]string{"Authorization": "Bearer " + ptAllKey}},
			wantPath:   "/v1/models",
			wantHeader: map[string]string{"Authorization": "Bearer " + ptOpenAIKey},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := up.count()
			resp, body := send(t, srv.URL, tc.req)
			if resp.StatusCode != 200 || body != `{"native":true}` {
				t.Fatalf("status %d body %s", resp.StatusCode, body)
			}
			// Response headers go through the allow-list: ids and rate
			// limits pass (the upstream's request id renamed: the client's
			// X-Request-ID is the gateway's); cookies, organisation ids and
			// unknown ones do not.
			if resp.Header.Get("X-Upstream-Request-Id") != "req-1" || resp.Header.Get("X-Ratelimit-Remaining-Requests") != "99" {
				t.Fatalf("allowed response headers lost: %v", resp.Header)
			}
			if ids := resp.Header.Values("X-Request-Id"); len(ids) != 1 || len(ids[0]) != 32 {
				t.Fatalf("X-Request-ID %q, want the gateway's one", ids)
			}
			for _, h := range []string{"X-Upstream", "Set-Cookie", "Openai-Organization", "Anthropic-Organization-Id"} {
				if v := resp.Header.Get(h); v != "" {
					t.Fatalf("response header %s = %q reached the client", h, v)
				}
			}
			if up.count() != before+1 {
				t.Fatalf("upstream saw %d requests, want 1", up.count()-before)
			}
			got := up.last(t)
			if got.method != tc.req.method || got.path != tc.wantPath || got.query != tc.wantQuery {
				t.Fatalf("upstream got %s %s?%s, want %s %s?%s", got.method, got.path, got.query, tc.req.method, tc.wantPath, tc.wantQuery)
			}
			if string(got.body) != tc.req.body {
				t.Fatalf("upstream body %q, want %q", got.body, tc.req.body)
			}
			for k, want := range tc.wantHeader {
				if v := got.header.Get(k); v != want {
					t.Errorf("upstream header %s = %q, want %q", k, v, want)
				}
			}
		})
	}
}

func TestPassthroughRefusals(t *testing.T) {
	up := newFakeUpstream(t, okJSON(`{"native":true}`))
	srv, _ := newTestGateway(t, passthroughConfig(up.URL, false), nil)
	big := strings.Repeat(" ", 70<<10)

	cases := []struct {
		name   string
		req    testRequest
		status int
		kind   string
		code   string
	}{
		{"no_key", testRequest{path: "/oai/v1/chat/completions", body: `{"model":"m1"}`}, 401, "authentication_error", "invalid_api_key"},
		{"wrong_key", testRequest{path: "/oai/v1/chat/completions", body: `{"model":"m1"}`, headers: bearer("sk-nope")}, 401, "authentication_error", "invalid_api_key"},
		{"provider_not_in_group", testRequest{path: "/oai/v1/chat/completions", body: `{"model":"m1"}`, headers: bearer(ptAntOnlyKey)}, 403, "permission_error", "provider_not_allowed"},
		{"restricted_model_denied", testRequest{path: "/oai/v1/chat/completions", body: `{"model":"m2"}`, headers: bearer(ptM1Key)}, 403, "permission_error", "model_not_allowed"},
		{"restricted_no_model", testRequest{path: "/oai/v1/chat/completions", body: `{"messages":[]}`, headers: bearer(ptM1Key)}, 403, "permission_error", "model_not_allowed"},
		{"restricted_no_body", testRequest{method: "GET", path: "/oai/v1/models", headers: bearer(ptM1Key)}, 403, "permission_error", "model_not_allowed"},
		{"restricted_non_json", testRequest{path: "/oai/v1/chat/completions", body: `model=m1`, headers: bearer(ptM1Key)}, 403, "permission_error", "model_not_allowed"},
		{"restricted_model_not_string", testRequest{path: "/oai/v1/chat/completions", body: `{"model":["m1"]}`, headers: bearer(ptM1Key)}, 403, "permission_error", "model_not_allowed"},
		{"restricted_model_nested_only", testRequest{path: "/oai/v1/chat/completions", body: `{"x":{"model":"m1"}}`, headers: bearer(ptM1Key)}, 403, "permission_error", "model_not_allowed"},
		{"restricted_binary_never_read", testRequest{path: "/oai/v1/audio/transcriptions", body: `{"model":"m1"}`, headers: map[string]string{"Authorization": "Bearer " + ptM1Key, "Content-Type": "audio/wav"}}, 403, "permission_error", "model_not_allowed"},
		{"restricted_multipart_never_read", testRequest{path: "/oai/v1/audio/transcriptions", body: `{"model":"m1"}`, headers: map[string]string{"Authorization": "Bearer " + ptM1Key, "Content-Type": "multipart/form-data; boundary=x"}}, 403, "permission_error", "model_not_allowed"},
		{"restricted_model_beyond_peek", testRequest{path: "/oai/v1/chat/completions", body: `{"pad":"` + big + `","model":"m1"}`, headers: bearer(ptM1Key)}, 403, "permission_error", "model_not_allowed"},
		{"restricted_duplicate_model", testRequest{path: "/oai/v1/chat/completions", body: `{"model":"m1","model":"m2"}`, headers: bearer(ptM1Key)}, 403, "permission_error", "model_not_allowed"},
		{"restricted_case_variant_model", testRequest{path: "/oai/v1/chat/completions", body: `{"model":"m1","Model":"m2"}`, headers: bearer(ptM1Key)}, 403, "permission_error", "model_not_allowed"},
		{"restricted_escaped_duplicate_model", testRequest{path: "/oai/v1/chat/completions", body: `{"model":"m1","mod\u0065l":"m2"}`, headers: bearer(ptM1Key)}, 403, "permission_error", "model_not_allowed"},
		// mixed: m1only reaches oai with models [m1]; m2anywhere allows m2
		// but only on gem. The union would wrongly allow oai + m2.
		{"multigroup_no_union", testRequest{path: "/oai/v1/chat/completions", body: `{"model":"m2"}`, headers: bearer(ptMixedKey)}, 403, "permission_error", "model_not_allowed"},
		{"dot_dot_segment", testRequest{path: "/oai/v1/../admin", body: `{}`, headers: bearer(ptAllKey)}, 400, "invalid_request_error", "invalid_path"},
		{"dot_segment", testRequest{path: "/oai/./v1", body: `{}`, headers: bearer(ptAllKey)}, 400, "invalid_request_error", "invalid_path"},
		{"escaped_dot_dot", testRequest{path: "/oai/v1/%2e%2e/x", body: `{}`, headers: bearer(ptAllKey)}, 400, "invalid_request_error", "invalid_path"},
		{"escaped_slash_dot_dot", testRequest{path: "/oai/v1%2F..%2Fx", body: `{}`, headers: bearer(ptAllKey)}, 400, "invalid_request_error", "invalid_path"},
		{"upgrade_refused", testRequest{method: "GET", path: "/oai/v1/realtime", headers: map[string]string{"Authorization": "Bearer " + ptAllKey, "Connection": "Upgrade", "Upgrade": "websocket"}}, 501, "invalid_request_error", "upgrade_not_supported"},
		{"passthrough_disabled", testRequest{path: "/off/v1/chat/completions", body: `{}`, headers: bearer(ptAllKey)}, 404, "invalid_request_error", "not_found"},
		{"unknown_provider", testRequest{path: "/nope/v1/chat/completions", body: `{}`, headers: bearer(ptAllKey)}, 404, "invalid_request_error", "not_found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := up.count()
			resp, body := send(t, srv.URL, tc.req)
			expectEnvelope(t, resp, body, tc.status, tc.kind, tc.code)
			if up.count() != before {
				t.Fatalf("a refused request reached the upstream")
			}
		})
	}
}

func TestPassthroughModelRestrictionAllows(t *testing.T) {
	up := newFakeUpstream(t, okJSON(`{"native":true}`))
	srv, _ := newTestGateway(t, passthroughConfig(up.URL, false), nil)
	pad := strings.Repeat("x", 200<<10)
	cases := []struct {
		name string
		key  string
		body string
	}{
		{"allowed_model", ptM1Key, `{"model":"m1","messages":[]}`},
		{"allowed_prefixed_form_pattern", ptM1Key, `{"stream":true,"model":"m1"}`},
		// The model sits in the first 64 KiB; the rest of a large body must
		// still arrive whole (peeked bytes re-joined with the remainder).
		{"large_body_after_peek", ptM1Key, `{"model":"m1","pad":"` + pad + `"}`},
		// union: m1only restricts models but oaiopen reaches oai without a
		// model list, so no restriction applies.
		{"unrestricted_grant_lifts_check", ptUnionKey, `{"model":"m2"}`},
		{"unrestricted_grant_no_model", ptUnionKey, `not json at all`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := send(t, srv.URL, testRequest{path: "/oai/v1/chat/completions", body: tc.body, headers: bearer(tc.key)})
			if resp.StatusCode != 200 || body != `{"native":true}` {
				t.Fatalf("status %d body %.300s", resp.StatusCode, body)
			}
			if got := up.last(t); string(got.body) != tc.body {
				t.Fatalf("upstream body differs: got %d bytes, want %d", len(got.body), len(tc.body))
			}
		})
	}
}

func TestPassthroughBodyTooLarge(t *testing.T) {
	t.Parallel()
	// The upstream counts what it receives instead of recording it.
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil {
			w.WriteHeader(599)
			return
		}
		_, _ = io.WriteString(w, strconv.FormatInt(n, 10))
	}))
	t.Cleanup(func() { up.Close() })
	srv, _ := newTestGateway(t, passthroughConfig(up.URL, false), nil)
	cases := []struct {
		name    string
		size    int
		chunked bool
	}{
		{"content_length_over", maxPassthroughRequestBytes + 1, false},
		{"chunked_over", maxPassthroughRequestBytes + 1, true},
		{"chunked_at_limit", maxPassthroughRequestBytes, true},
	}
	headers := map[string]string{"Authorization": "Bearer " + ptAllKey, "Content-Type": "application/octet-stream"}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var resp *http.Response
			var body string
			if tc.chunked {
				resp, body = send(t, srv.URL, testRequest{path: "/oai/v1/files", body: strings.Repeat("a", tc.size), chunked: true, headers: headers})
			} else {
				resp, body = sendDeclaredLength(t, srv.URL, "/oai/v1/files", headers, int64(tc.size))
			}
			if tc.size > maxPassthroughRequestBytes {
				expectEnvelope(t, resp, body, 413, "invalid_request_error", "request_too_large")
				// The unread rest of the body makes the connection
				// unusable: the client is told not to reuse it.
				if !resp.Close {
					t.Fatalf("413 without Connection: close (headers %v)", resp.Header)
				}
				return
			}
			if resp.StatusCode != 200 || body != strconv.Itoa(tc.size) {
				t.Fatalf("status %d body %.300s", resp.StatusCode, body)
			}
		})
	}
}

// An escaped slash right after the provider name must not let the rest
// of the path become the authority of the upstream URL: the provider's
// key would be sent to a host the client chose.
func TestPassthroughEscapedSlashStaysOnProviderHost(t *testing.T) {
	evil := newFakeUpstream(t, okJSON(`{"evil":true}`))
	up := newFakeUpstream(t, okJSON(`{"native":true}`))
	srv, _ := newTestGateway(t, passthroughConfig(up.URL, false), nil)
	evilHost := strings.TrimPrefix(evil.URL, "http://")
	paths := []string{
		"/oai%2F@" + evilHost + "/v1/models",
		"/oai%2f@" + evilHost + "/v1/models",
		"/gem%2F@" + evilHost + "/v1/models",
	}
	for _, p := range paths {
		t.Run(url.PathEscape(p), func(t *testing.T) {
			resp, body := send(t, srv.URL, testRequest{method: "GET", path: p, headers: bearer(ptAllKey)})
			if evil.count() != 0 {
				got := evil.last(t)
				t.Fatalf("request left for a client-chosen host (status %d, body %s); it carried Authorization=%q X-Goog-Api-Key=%q",
					resp.StatusCode, body, got.header.Get("Authorization"), got.header.Get("X-Goog-Api-Key"))
			}
		})
	}
}

// An escaped slash right after the provider name still yields a valid
// request to the provider: the upstream receives it on a path starting
// with "/", or the gateway refuses it with its own envelope.
func TestPassthroughEscapedSlashAfterName(t *testing.T) {
	up := newFakeUpstream(t, okJSON(`{"native":true}`))
	srv, _ := newTestGateway(t, passthroughConfig(up.URL, false), nil)
	for _, p := range []string{"/oai%2Fv1/models", "/oai%2fv1/models"} {
		t.Run(url.PathEscape(p), func(t *testing.T) {
			before := up.count()
			resp, body := send(t, srv.URL, testRequest{method: "GET", path: p, headers: bearer(ptAllKey)})
			if up.count() == before+1 {
				if got := up.last(t); !strings.HasPrefix(got.path, "/") || resp.StatusCode != 200 {
					t.Fatalf("upstream path %q, status %d", got.path, resp.StatusCode)
				}
				return
			}
			if resp.StatusCode == 200 {
				t.Fatalf("200 without reaching the upstream: %s", body)
			}
			decodeEnvelope(t, body) // the gateway's own refusal, not a relayed upstream 400
		})
	}
}

func TestPassthroughUnknownRoutesToNext(t *testing.T) {
	up := newFakeUpstream(t, okJSON(`{"native":true}`))
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Next", r.URL.Path)
		w.WriteHeader(299)
	})
	srv, _ := newTestGateway(t, passthroughConfig(up.URL, true), next)
	cases := []struct {
		name, path string
		toNext     bool
	}{
		{"disabled_provider", "/off/v1/chat/completions", true},
		{"unknown_prefix", "/whatever/x", true},
		{"root", "/", true},
		{"reserved_v1_other", "/v1/completions", true},
		{"enabled_provider_needs_auth", "/oai/v1/models", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := send(t, srv.URL, testRequest{method: "GET", path: tc.path})
			if tc.toNext {
				if resp.StatusCode != 299 || resp.Header.Get("X-Next") != tc.path {
					t.Fatalf("want next handler, got %d %s", resp.StatusCode, body)
				}
				return
			}
			expectEnvelope(t, resp, body, 401, "authentication_error", "invalid_api_key")
		})
	}
}

func TestPassthroughTimeout(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	cfg := strings.Replace(passthroughConfig(up.URL, false), `"passthroughUnknown": false,`, `"passthroughUnknown": false, "requestTimeout": "100ms",`, 1)
	srv, _ := newTestGateway(t, cfg, nil)
	resp, body := send(t, srv.URL, testRequest{method: "GET", path: "/oai/v1/models", headers: bearer(ptAllKey)})
	expectEnvelope(t, resp, body, 502, "server_error", "upstream_timeout")
}

func TestPassthroughStreamsSSEIncrementally(t *testing.T) {
	gotFirst := make(chan struct{})
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("data: one\n\n"))
		w.(http.Flusher).Flush()
		select {
		case <-gotFirst:
		case <-time.After(5 * time.Second):
			return
		}
		_, _ = w.Write([]byte("data: two\n\n"))
	})
	srv, _ := newTestGateway(t, passthroughConfig(up.URL, false), nil)
	events := readSSEIncrementally(t, srv.URL+"/oai/v1/chat/completions", ptAllKey, `{"model":"m1","stream":true}`, gotFirst)
	if strings.Join(events, "|") != "data: one|data: two" {
		t.Fatalf("events %q", events)
	}
}
