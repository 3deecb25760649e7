package gateway

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Distinctive keys, one per secret form, for providers and users.
const (
	leakProviderLiteral = "sk-LEAK-prov-literal-7f3a"
	leakProviderEnv     = "sk-LEAK-prov-env-91bc"
	leakProviderFile    = "sk-LEAK-prov-file-22de"
	leakUserLiteral     = "sk-LEAK-user-literal-5e6f"
	leakUserEnv         = "sk-LEAK-user-env-8a8a"
	leakUserFile        = "sk-LEAK-user-file-3c3c"
)

// leakSecrets are the keys and the forms of the user keys' SHA-256
// digests (what the gateway holds instead of a user key).
var leakSecrets = withDigests([]string{leakProviderLiteral, leakProviderEnv, leakProviderFile, leakUserLiteral, leakUserEnv, leakUserFile},
	leakUserLiteral, leakUserEnv, leakUserFile)

// withDigests is secrets plus the hex and base64 forms of the SHA-256 of
// each of keys.
func withDigests(secrets []string, keys ...string) []string {
	for i := 0; i < len(keys); i++ {
		sum := sha256.Sum256([]byte(keys[i]))
		secrets = append(secrets, hex.EncodeToString(sum[:]), strings.ToUpper(hex.EncodeToString(sum[:])),
			base64.StdEncoding.EncodeToString(sum[:]), base64.RawStdEncoding.EncodeToString(sum[:]),
			base64.URLEncoding.EncodeToString(sum[:]), base64.RawURLEncoding.EncodeToString(sum[:]))
	}
	return secrets
}

// echoCredentials answers 500 with every credential header it received,
// the way a careless provider error page might.
func echoCredentials(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(500)
	_, _ = io.WriteString(w, `{"error":"bad key","authorization":"`+r.Header.Get("Authorization")+`","x-api-key":"`+r.Header.Get("X-Api-Key")+`","goog":"`+r.Header.Get("X-Goog-Api-Key")+`"}`)
}

// leakFixture writes the key files and variables and returns the config.
func leakFixture(t *testing.T, upstreamURL string) string {
	t.Helper()
	dir := t.TempDir()
	provFile := filepath.Join(dir, "provider.key")
	userFile := filepath.Join(dir, "user.key")
	if err := os.WriteFile(provFile, []byte(leakProviderFile+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(userFile, []byte("  "+leakUserFile+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	setenv(t, "LLMGW_LEAK_PROVIDER", leakProviderEnv)
	setenv(t, "LLMGW_LEAK_USER", leakUserEnv)
	// The access log is on: its lines are scanned with every other.
	return `{
  "accessLog": true,
  "requestTimeout": "2s",
  "providers": {
    "lit": {"type": "openai", "baseUrl": "` + upstreamURL + `/ok", "apiKey": "` + leakProviderLiteral + `", "models": ["m-ok", "m-denied"]},
    "env": {"type": "openai", "baseUrl": "` + upstreamURL + `/echo", "apiKey": "env:LLMGW_LEAK_PROVIDER", "models": ["m-echo"]},
    "fil": {"type": "anthropic", "baseUrl": "` + upstreamURL + `/echo", "apiKey": "file:` + provFile + `", "models": ["claude"]},
    "slow": {"type": "gemini", "baseUrl": "` + upstreamURL + `/stall", "apiKey": "` + leakProviderLiteral + `", "models": ["g"], "requestTimeout": "100ms"},
    "stallo": {"type": "openai", "baseUrl": "` + upstreamURL + `/stall", "apiKey": "` + leakProviderLiteral + `", "models": ["m-stall"], "requestTimeout": "100ms"},
    "cut": {"type": "openai", "baseUrl": "` + upstreamURL + `/cut", "apiKey": "env:LLMGW_LEAK_PROVIDER", "models": ["m-cut"]}
  },
  "groups": {"all": {}, "limited": {"providers": ["lit"], "models": ["m-ok"]}},
  "users": {"inline": [
    {"name": "lituser", "group": "all", "apiKey": "` + leakUserLiteral + `"},
    {"name": "envuser", "group": "limited", "apiKey": "env:LLMGW_LEAK_USER"},
    {"name": "fileuser", "group": "all", "apiKey": "file:` + userFile + `"}
  ]}
}`
}

func leakUpstream(t *testing.T) *fakeUpstream {
	return newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/echo"):
			echoCredentials(w, r)
		case strings.HasPrefix(r.URL.Path, "/stall"):
			<-r.Context().Done()
		case strings.HasPrefix(r.URL.Path, "/cut"):
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "data: {\"n\":1}\n\n")
		default:
			okJSON(`{"id":"ok"}`)(w, r)
		}
	})
}

type leakCase struct {
	name   string
	req    testRequest
	status int
}

func checkNoSecrets(t *testing.T, where, text string) {
	t.Helper()
	for _, s := range leakSecrets {
		if strings.Contains(text, s) {
			t.Errorf("%s contains secret %q:\n%s", where, s, text)
		}
	}
}

func runLeakCases(t *testing.T, base string, logs *syncBuffer, cases []leakCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := send(t, base, tc.req)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d; body %s", resp.StatusCode, tc.status, body)
			}
			checkNoSecrets(t, "response body", body)
			var hdr strings.Builder
			for k, vs := range resp.Header {
				hdr.WriteString(k + ": " + strings.Join(vs, ",") + "\n")
			}
			checkNoSecrets(t, "response headers", hdr.String())
		})
	}
	checkNoSecrets(t, "gateway log", logs.String())
}

func TestSecretsNeverLeakUnified(t *testing.T) {
	up := leakUpstream(t)
	srv, logs := newTestGateway(t, leakFixture(t, up.URL), nil)
	big := `{"model":"m-ok","pad":"` + strings.Repeat("x", maxUnifiedRequestBytes) + `"}`
	cases := []leakCase{
		{"success_literal_user", testRequest{path: "/v1/chat/completions", body: `{"model":"m-ok"}`, headers: bearer(leakUserLiteral)}, 200},
		{"success_env_user_x_api_key", testRequest{path: "/v1/embeddings", body: `{"model":"lit/m-ok"}`, headers: map[string]string{"X-Api-Key": leakUserEnv}}, 200},
		{"success_file_user", testRequest{method: "GET", path: "/v1/models", headers: bearer(leakUserFile)}, 200},
		{"unauthorized_provider_key_as_user_key", testRequest{path: "/v1/chat/completions", body: `{"model":"m-ok"}`, headers: bearer(leakProviderLiteral)}, 401},
		{"unauthorized_both_headers", testRequest{path: "/v1/chat/completions", body: `{"model":"m-ok"}`, headers: map[string]string{"Authorization": "Bearer " + leakProviderEnv, "X-Api-Key": leakProviderFile}}, 401},
		{"forbidden_model", testRequest{path: "/v1/chat/completions", body: `{"model":"m-denied"}`, headers: bearer(leakUserEnv)}, 403},
		{"unknown_model", testRequest{path: "/v1/chat/completions", body: `{"model":"nope"}`, headers: bearer(leakUserLiteral)}, 404},
		{"model_named_like_a_key", testRequest{path: "/v1/chat/completions", body: `{"model":"x"}`, headers: bearer(leakUserFile)}, 404},
		{"too_large_chunked", testRequest{path: "/v1/chat/completions", body: big, headers: bearer(leakUserLiteral), chunked: true}, 413},
		{"malformed", testRequest{path: "/v1/chat/completions", body: `{"model":"m-ok",`, headers: bearer(leakUserLiteral)}, 400},
		{"unknown_route", testRequest{method: "GET", path: "/v1/nothing", headers: bearer(leakUserLiteral)}, 404},
		{"wrong_method", testRequest{method: "GET", path: "/v1/chat/completions", headers: bearer(leakUserLiteral)}, 405},
		{"upstream_500_echoes_provider_key", testRequest{path: "/v1/chat/completions", body: `{"model":"m-echo"}`, headers: bearer(leakUserLiteral)}, 500},
		{"provider_not_supported", testRequest{path: "/v1/audio/speech", body: `{"model":"g"}`, headers: bearer(leakUserLiteral)}, 501},
		{"translated_upstream_stall", testRequest{path: "/v1/chat/completions", body: `{"model":"g","messages":[{"role":"user","content":"hi"}]}`, headers: bearer(leakUserLiteral)}, 502},
		{"translation_refused", testRequest{path: "/v1/chat/completions", body: `{"model":"g","messages":[{"role":"user","content":"hi"}],"logit_bias":{"1":2}}`, headers: bearer(leakUserLiteral)}, 400},
		{"upstream_stall", testRequest{path: "/v1/chat/completions", body: `{"model":"m-stall"}`, headers: bearer(leakUserLiteral)}, 502},
		{"stream_truncated", testRequest{path: "/v1/chat/completions", body: `{"model":"m-cut","stream":true}`, headers: bearer(leakUserFile)}, 200},
		// The Anthropic Messages routes: their errors are in their own
		// envelope, and must hold no secret either.
		{"messages_upstream_500_echoes_provider_key", testRequest{path: "/v1/messages", body: `{"model":"m-echo","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`,
			headers: map[string]string{"X-Api-Key": leakUserLiteral}}, 500},
		{"messages_unauthorized_provider_key", testRequest{path: "/v1/messages", body: `{"model":"m-ok","messages":[]}`, headers: map[string]string{"X-Api-Key": leakProviderFile}}, 401},
		{"messages_stream_truncated", testRequest{path: "/v1/messages", body: `{"model":"m-cut","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			headers: bearer(leakUserFile)}, 200},
		{"count_tokens", testRequest{path: "/v1/messages/count_tokens", body: `{"model":"m-ok","messages":[{"role":"user","content":"hi"}]}`, headers: bearer(leakUserLiteral)}, 200},
		{"anthropic_models_wrong_key", testRequest{method: "GET", path: "/v1/models", headers: map[string]string{"X-Api-Key": leakProviderLiteral, "Anthropic-Version": "2023-06-01"}}, 401},
	}
	runLeakCases(t, srv.URL, logs, cases)
}

func TestSecretsNeverLeakPassthrough(t *testing.T) {
	up := leakUpstream(t)
	srv, logs := newTestGateway(t, leakFixture(t, up.URL), nil)
	cases := []leakCase{
		{"success", testRequest{path: "/lit/v1/chat/completions", body: `{"model":"m-ok"}`, headers: bearer(leakUserLiteral)}, 200},
		{"unauthorized", testRequest{path: "/lit/v1/chat/completions", body: `{}`, headers: bearer(leakProviderEnv)}, 401},
		{"provider_forbidden", testRequest{path: "/env/v1/chat/completions", body: `{}`, headers: bearer(leakUserEnv)}, 403},
		{"model_forbidden", testRequest{path: "/lit/v1/chat/completions", body: `{"model":"m-denied"}`, headers: bearer(leakUserEnv)}, 403},
		{"dot_segment", testRequest{path: "/lit/../x", body: `{}`, headers: bearer(leakUserLiteral)}, 400},
		{"stall", testRequest{method: "GET", path: "/slow/v1beta/models", headers: bearer(leakUserFile)}, 502},
	}
	runLeakCases(t, srv.URL, logs, cases)
}

// A native passthrough relays the provider's answer as is; when that
// answer echoes the credential the gateway injected, the provider key
// reaches the client.
func TestSecretsNeverLeakPassthroughEcho(t *testing.T) {
	up := leakUpstream(t)
	srv, logs := newTestGateway(t, leakFixture(t, up.URL), nil)
	cases := []leakCase{
		{"openai_env_key_echo", testRequest{path: "/env/v1/chat/completions", body: `{"model":"m-echo"}`, headers: bearer(leakUserLiteral)}, 500},
		{"anthropic_file_key_echo", testRequest{path: "/fil/v1/messages", body: `{"model":"claude"}`, headers: map[string]string{"X-Api-Key": leakUserFile}}, 500},
	}
	runLeakCases(t, srv.URL, logs, cases)
}

// The admin API and /metrics, after traffic of every secret form, carry
// no key and no digest; the config view keeps the env:/file: references.
func TestSecretsNeverLeakAdmin(t *testing.T) {
	up := leakUpstream(t)
	cfg := withTop(leakFixture(t, up.URL), `"admin": {"enabled": true, "stats": {"userModel": true, "latency": true}}, "metrics": {"enabled": true},`)
	cfg = strings.Replace(cfg, `"apiKey": "`+leakUserLiteral+`"`, `"apiKey": "`+leakUserLiteral+`", "admin": true`, 1)
	srv, logs := newTestGateway(t, cfg, nil)
	traffic := []leakCase{
		{"chat", testRequest{path: "/v1/chat/completions", body: `{"model":"m-ok"}`, headers: bearer(leakUserLiteral)}, 200},
		{"chat_env_user", testRequest{path: "/v1/chat/completions", body: `{"model":"m-ok"}`, headers: bearer(leakUserEnv)}, 200},
		{"echo", testRequest{path: "/v1/chat/completions", body: `{"model":"m-echo"}`, headers: bearer(leakUserFile)}, 500},
		{"passthrough", testRequest{path: "/lit/v1/chat/completions", body: `{"model":"m-ok"}`, headers: bearer(leakUserLiteral)}, 200},
	}
	cases := traffic
	for _, route := range adminRouteSamples {
		route = strings.ReplaceAll(route, "alice", "lituser")
		cases = append(cases, leakCase{"admin_" + route, testRequest{method: "GET", path: "/admin/api/" + route, headers: bearer(leakUserLiteral)}, 200})
	}
	cases = append(cases,
		leakCase{"admin_non_admin", testRequest{method: "GET", path: "/admin/api/config", headers: bearer(leakUserEnv)}, 403},
		leakCase{"admin_provider_key", testRequest{method: "GET", path: "/admin/api/config", headers: bearer(leakProviderLiteral)}, 401},
		leakCase{"metrics", testRequest{method: "GET", path: "/metrics", headers: bearer(leakUserLiteral)}, 200},
		leakCase{"admin_page", testRequest{method: "GET", path: "/admin"}, 200})
	runLeakCases(t, srv.URL, logs, cases)
	_, body := send(t, srv.URL, testRequest{method: "GET", path: "/admin/api/config", headers: bearer(leakUserLiteral)})
	for _, ref := range []string{`"env:LLMGW_LEAK_PROVIDER"`, `"env:LLMGW_LEAK_USER"`, `"file:`, `"[redacted]"`} {
		if !strings.Contains(body, ref) {
			t.Errorf("config view lacks %s: %s", ref, body)
		}
	}
}

func TestSecretsNeverLeakConstructionErrors(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "k")
	if err := os.WriteFile(keyFile, []byte(leakUserFile), 0o600); err != nil {
		t.Fatal(err)
	}
	setenv(t, "LLMGW_LEAK_USER", leakUserEnv)
	setenv(t, "LLMGW_LEAK_PROVIDER", leakProviderEnv)
	docs := map[string]string{
		"duplicate_user_keys_literal": `{"providers":{"p":{"type":"openai"}},"groups":{"g":{}},"users":{"inline":[{"name":"a","group":"g","apiKey":"` + leakUserLiteral + `"},{"name":"b","group":"g","apiKey":"` + leakUserLiteral + `"}]}}`,
		"duplicate_user_keys_forms":   `{"providers":{"p":{"type":"openai"}},"groups":{"g":{}},"users":{"inline":[{"name":"a","group":"g","apiKey":"file:` + keyFile + `"},{"name":"b","group":"g","apiKey":"` + leakUserFile + `"}]}}`,
		"user_unknown_group":          `{"providers":{"p":{"type":"openai"}},"users":{"inline":[{"name":"a","group":"nope","apiKey":"env:LLMGW_LEAK_USER"}]}}`,
		"user_without_name":           `{"providers":{"p":{"type":"openai"}},"groups":{"g":{}},"users":{"inline":[{"group":"g","apiKey":"` + leakUserLiteral + `"}]}}`,
		"provider_unknown_type":       `{"providers":{"p":{"type":"azure","apiKey":"` + leakProviderLiteral + `"}}}`,
		"provider_bad_url":            `{"providers":{"p":{"type":"openai","baseUrl":"nope","apiKey":"env:LLMGW_LEAK_PROVIDER"}}}`,
		"provider_bad_timeout":        `{"providers":{"p":{"type":"openai","apiKey":"` + leakProviderLiteral + `","requestTimeout":"x"}}}`,
		"provider_bad_name":           `{"providers":{"p q":{"type":"openai","apiKey":"` + leakProviderLiteral + `"}}}`,
		"provider_reserved":           `{"providers":{"v1":{"type":"openai","apiKey":"` + leakProviderLiteral + `"}}}`,
		"unknown_key_next_to_secret":  `{"providers":{"p":{"type":"openai","apiKey":"` + leakProviderLiteral + `","apiKeys":"` + leakProviderEnv + `"}}}`,
		"secret_with_wrong_type":      `{"providers":{"p":{"type":"openai","apiKey":["` + leakProviderLiteral + `"]}}}`,
		"syntax_error_after_secret":   `{"providers":{"p":{"apiKey":"` + leakProviderLiteral + `" "type":"openai"}}}`,
		"trailing_secret":             `{"providers":{"p":{"type":"openai"}}} "` + leakProviderLiteral + `"`,
	}
	for name, doc := range docs {
		t.Run(name, func(t *testing.T) {
			logs := &syncBuffer{}
			cfg, err := DecodeConfigJSON([]byte(doc))
			if err == nil {
				_, err = New(nil, cfg, Options{LogOutput: logs})
			}
			if err == nil {
				t.Fatal("construction succeeded")
			}
			checkNoSecrets(t, "construction error", err.Error())
			checkNoSecrets(t, "construction log", logs.String())

			var raw map[string]interface{}
			if jsonErr := jsonUnmarshalString(doc, &raw); jsonErr == nil {
				cfg2, err2 := ConfigFromMap(raw)
				if err2 == nil {
					_, err2 = New(nil, cfg2, Options{LogOutput: logs})
				}
				if err2 == nil {
					t.Fatal("ConfigFromMap construction succeeded")
				}
				checkNoSecrets(t, "ConfigFromMap error", err2.Error())
			}
		})
	}
}

func jsonUnmarshalString(doc string, v interface{}) error {
	return json.Unmarshal([]byte(doc), v)
}

// The per-target proxy: the gateway key never reaches a target (so a
// target that echoes every header it got shows none), and the headers
// configured for a target, in every secret form, do not come back in a
// target's error answer or headers, nor in the log.
func TestSecretsNeverLeakTargetProxy(t *testing.T) {
	const (
		targetEnvToken  = "tok-LEAK-target-env-6b1d"
		targetFileToken = "tok-LEAK-target-file-0c9e"
		targetLitToken  = "tok-LEAK-target-literal-44aa"
	)
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "target.token")
	if err := os.WriteFile(tokenFile, []byte(targetFileToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	setenv(t, "LLMGW_LEAK_TARGET", targetEnvToken)
	echo := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		var all strings.Builder
		for k, vs := range r.Header {
			all.WriteString(k + "=" + strings.Join(vs, ",") + ";")
		}
		if strings.HasSuffix(r.URL.Path, "/fail") {
			w.Header().Set("X-Echo", all.String())
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(500)
			_, _ = io.WriteString(w, "rejected: "+all.String())
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: "+all.String()+"\n\n")
	})
	stall := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	cfg := withTop(leakFixture(t, echo.URL), `"mcpServers": {
		"plain": {"url": "`+echo.URL+`/plain"},
		"tokened": {"url": "`+echo.URL+`/tok", "headers": {"Authorization": "Bearer env:LLMGW_LEAK_TARGET", "X-Env": "env:LLMGW_LEAK_TARGET", "X-File": "file:`+tokenFile+`", "X-Lit": "`+targetLitToken+`"}},
		"stalled": {"url": "`+stall.URL+`/mcp"},
		"dead": {"url": "http://127.0.0.1:1/mcp"}},
		"agents": {"ag": {"url": "`+echo.URL+`/ag", "headers": {"X-Env": "env:LLMGW_LEAK_TARGET"}}},`)
	// "Bearer env:..." is a literal (a secret form is the whole value):
	// the env form goes in its own header.
	cfg = strings.Replace(cfg, `"Authorization": "Bearer env:LLMGW_LEAK_TARGET", `, "", 1)
	cfg = strings.Replace(cfg, `"requestTimeout": "2s"`, `"requestTimeout": "300ms"`, 1)
	cfg = strings.Replace(cfg, `"limited": {"providers": ["lit"], "models": ["m-ok"]}`, `"limited": {"providers": ["lit"], "models": ["m-ok"], "mcpServers": ["plain"]}`, 1)
	srv, logs := newTestGateway(t, cfg, nil)
	secrets := append([]string{targetEnvToken, targetFileToken, targetLitToken}, leakSecrets...)
	sse := map[string]string{"Accept": "text/event-stream", "Cookie": "c=" + leakUserFile}
	cases := []leakCase{
		{"echo_plain_literal_user", testRequest{method: "GET", path: "/mcp/plain/", headers: mergeHeaders(bearer(leakUserLiteral), sse)}, 200},
		{"echo_plain_env_user_x_api_key", testRequest{method: "GET", path: "/mcp/plain/", headers: mergeHeaders(map[string]string{"X-Api-Key": leakUserEnv}, sse)}, 200},
		{"echo_both_credentials", testRequest{path: "/mcp/plain/x", body: `{}`, headers: map[string]string{"Authorization": "Bearer " + leakUserFile, "X-Api-Key": leakUserFile}}, 200},
		{"tokened_error_echo", testRequest{path: "/mcp/tokened/fail", body: `{}`, headers: bearer(leakUserLiteral)}, 500},
		{"agent_error_echo", testRequest{path: "/a2a/ag/fail", body: `{}`, headers: bearer(leakUserLiteral)}, 500},
		{"unauthorized", testRequest{path: "/mcp/tokened/", body: `{}`, headers: bearer(leakProviderLiteral)}, 401},
		{"forbidden", testRequest{path: "/mcp/tokened/", body: `{}`, headers: bearer(leakUserEnv)}, 403},
		{"unknown", testRequest{path: "/mcp/nothing-here/", body: `{}`, headers: bearer(leakUserLiteral)}, 404},
		{"traversal", testRequest{path: "/mcp/tokened/%2e%2e/x", body: `{}`, headers: bearer(leakUserLiteral)}, 400},
		{"stalled", testRequest{path: "/mcp/stalled/", body: `{}`, headers: bearer(leakUserFile)}, 504},
		{"dead", testRequest{path: "/mcp/dead/", body: `{}`, headers: bearer(leakUserFile)}, 502},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := send(t, srv.URL, tc.req)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d; body %s", resp.StatusCode, tc.status, body)
			}
			var hdr strings.Builder
			for k, vs := range resp.Header {
				hdr.WriteString(k + ": " + strings.Join(vs, ",") + "\n")
			}
			for _, s := range secrets {
				if strings.Contains(body, s) || strings.Contains(hdr.String(), s) {
					t.Errorf("the answer carries %q:\n%s\n%s", s, hdr.String(), body)
				}
			}
			if tc.status == 500 && !strings.Contains(body, "[REDACTED]") {
				t.Errorf("the echoed error shows no redaction: %s", body)
			}
		})
	}
	// The target did get its headers (the redaction above is not a
	// header that was never sent).
	echo.mu.Lock()
	defer echo.mu.Unlock()
	for _, r := range echo.requests {
		if strings.HasPrefix(r.path, "/tok") && (r.header.Get("X-Env") != targetEnvToken || r.header.Get("X-File") != targetFileToken || r.header.Get("X-Lit") != targetLitToken) {
			t.Errorf("the target got X-Env %q X-File %q X-Lit %q", r.header.Get("X-Env"), r.header.Get("X-File"), r.header.Get("X-Lit"))
		}
	}
	for _, s := range secrets {
		if strings.Contains(logs.String(), s) {
			t.Errorf("the log carries %q", s)
		}
	}
}

func mergeHeaders(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// A target's credential quoted back without its auth scheme ("Bearer "
// dropped), the Basic credential the proxy derives from a URL's
// userinfo, and a federated tool's JSON-RPC error quoting the server's
// headers: each is redacted (found by the binary's secrets scan,
// integration/secrets_scan_test.go).
func TestSecretsNeverLeakTargetCredentialForms(t *testing.T) {
	const (
		bearerToken = "tok-LEAK-bearer-only-5a5a"
		userinfoPw  = "pw-LEAK-userinfo-7e7e"
		headerToken = "tok-LEAK-header-9f9f"
	)
	basic := base64.StdEncoding.EncodeToString([]byte("agent:" + userinfoPw))
	quote := func(r *http.Request) string {
		auth := r.Header.Get("Authorization")
		return "auth=" + auth + " token=" + auth[strings.IndexByte(auth, ' ')+1:] + " x=" + r.Header.Get("X-Token")
	}
	echo := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/fail") {
			w.Header().Set("X-Echo", quote(r))
			w.WriteHeader(401)
			_, _ = io.WriteString(w, "refused "+quote(r))
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.NewDecoder(r.Body).Decode(&m)
		w.Header().Set("Content-Type", "application/json")
		switch m.Method {
		case "tools/list":
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"tools":[{"name":"leak","inputSchema":{"type":"object"}}]}}`)
		default:
			msg, _ := json.Marshal("refused " + quote(r))
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"error":{"code":-32001,"message":`+string(msg)+`}}`)
		}
	})
	userinfoURL := strings.Replace(echo.URL, "http://", "http://agent:"+userinfoPw+"@", 1)
	cfg := withTop(leakFixture(t, echo.URL), `"mcpServers": {
		"tok": {"url": "`+echo.URL+`/tok", "headers": {"Authorization": "Bearer `+bearerToken+`", "X-Token": "`+headerToken+`"}}},
		"agents": {"ui": {"url": "`+userinfoURL+`/ui"}},`)
	srv, logs := newTestGateway(t, cfg, nil)
	secrets := []string{bearerToken, userinfoPw, basic, headerToken}
	for _, tc := range []struct {
		name   string
		req    testRequest
		status int
	}{
		{"proxy_token_without_scheme", testRequest{path: "/mcp/tok/fail", body: `{}`, headers: bearer(leakUserLiteral)}, 401},
		{"proxy_userinfo_basic", testRequest{path: "/a2a/ui/fail", body: `{}`, headers: bearer(leakUserLiteral)}, 401},
		{"federated_rpc_error", testRequest{path: "/mcp", body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"tok_leak","arguments":{}}}`,
			headers: bearer(leakUserLiteral)}, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := send(t, srv.URL, tc.req)
			if resp.StatusCode != tc.status || !strings.Contains(body, "[REDACTED]") {
				t.Fatalf("status %d, want %d and a redaction: %s", resp.StatusCode, tc.status, body)
			}
			all := body + fmt.Sprint(resp.Header)
			for _, s := range secrets {
				if strings.Contains(all, s) {
					t.Errorf("the answer carries %q: %v %s", s, resp.Header, body)
				}
			}
		})
	}
	for _, s := range secrets {
		if strings.Contains(logs.String(), s) {
			t.Errorf("the log carries %q", s)
		}
	}
}
