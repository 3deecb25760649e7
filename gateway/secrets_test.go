package gateway

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolveSecret(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	padded := write("padded", "\n  sk-from-file-0001 \r\n")
	blank := write("blank", " \n\t ")
	setenv(t, "LLMGW_SECRET_SET", "sk-from-env-0001")
	setenv(t, "LLMGW_SECRET_EMPTY", "")
	cases := []struct {
		name, in, want, errHas string
	}{
		{"literal", "sk-literal", "sk-literal", ""},
		{"empty_literal", "", "", ""},
		{"literal_with_colon", "envelope:x", "envelope:x", ""},
		{"env", "env:LLMGW_SECRET_SET", "sk-from-env-0001", ""},
		{"env_unset", "env:LLMGW_SECRET_NEVER_SET", "", "LLMGW_SECRET_NEVER_SET"},
		{"env_empty", "env:LLMGW_SECRET_EMPTY", "", "LLMGW_SECRET_EMPTY"},
		{"env_no_name", "env:", "", "env:"},
		{"file_trimmed", "file:" + padded, "sk-from-file-0001", ""},
		{"file_blank", "file:" + blank, "", "empty"},
		{"file_missing", "file:" + filepath.Join(dir, "missing"), "", "no such file"},
		{"file_no_path", "file:", "", "file:"},
		{"file_is_dir", "file:" + dir, "", dir},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := resolveSecret(tc.in)
			if tc.errHas == "" {
				if err != nil || got != tc.want {
					t.Fatalf("resolveSecret(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("resolveSecret(%q) = %q, want an error", tc.in, got)
			}
			if !strings.Contains(err.Error(), tc.errHas) {
				t.Fatalf("error %q does not contain %q", err, tc.errHas)
			}
			if strings.Contains(err.Error(), "sk-from") {
				t.Fatalf("error leaks a secret: %q", err)
			}
		})
	}
}

// Secret forms resolve once at construction: changing the variable or
// the file afterwards changes nothing.
func TestSecretFormsResolvedAtConstruction(t *testing.T) {
	up := newFakeUpstream(t, okJSON(`{"id":"ok"}`))
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "user.key")
	if err := os.WriteFile(keyFile, []byte("sk-user-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	setenv(t, "LLMGW_PROVIDER_KEY", "sk-provider-from-env")
	setenv(t, "LLMGW_USER2_KEY", "sk-user-from-env")
	cfg := `{"providers":{"mock":{"type":"openai","baseUrl":"` + up.URL + `","apiKey":"env:LLMGW_PROVIDER_KEY","models":["m1"]}},
	"groups":{"g":{}},"users":{"inline":[
	  {"name":"fileuser","group":"g","apiKey":"file:` + keyFile + `"},
	  {"name":"envuser","group":"g","apiKey":"env:LLMGW_USER2_KEY"}]}}`
	srv, _ := newTestGateway(t, cfg, nil)
	setenv(t, "LLMGW_PROVIDER_KEY", "sk-changed")
	setenv(t, "LLMGW_USER2_KEY", "sk-changed-user")
	if err := os.WriteFile(keyFile, []byte("sk-changed-file"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		key    string
		status int
	}{
		{"sk-user-from-file", 200},
		{"sk-user-from-env", 200},
		{"file:" + keyFile, 401},
		{"env:LLMGW_USER2_KEY", 401},
		{"sk-changed-file", 401},
		{"sk-changed-user", 401},
	}
	for _, tc := range cases {
		t.Run(tc.key, func(t *testing.T) {
			resp, body := send(t, srv.URL, testRequest{path: "/v1/chat/completions", body: `{"model":"m1"}`, headers: bearer(tc.key)})
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d body %s", resp.StatusCode, body)
			}
			if tc.status == 200 {
				if got := up.last(t).header.Get("Authorization"); got != "Bearer sk-provider-from-env" {
					t.Fatalf("provider key %q", got)
				}
			}
		})
	}
}

// A key that resolves with surrounding whitespace (an env file's trailing
// newline, a padded literal) must either be refused at construction,
// naming the field, or work as the trimmed key. Accepting it silently
// leaves a user who can never authenticate (presented keys are trimmed)
// or a provider whose every request fails on an invalid header.
func TestSecretSurroundingWhitespace(t *testing.T) {
	up := newFakeUpstream(t, okJSON(`{"id":"ok"}`))
	cases := []struct {
		name      string
		envValue  string
		userKey   string // config value for the user's apiKey
		provKey   string // config value for the provider's apiKey
		presented string
		field     string
		upstream  string // the Authorization the provider must receive
	}{
		{"user_env_trailing_space", "sk-ws-user-env ", "env:LLMGW_WS", "sk-ws-prov", "sk-ws-user-env", "users.inline[0]", "Bearer sk-ws-prov"},
		{"user_env_trailing_newline", "sk-ws-user-nl\n", "env:LLMGW_WS", "sk-ws-prov", "sk-ws-user-nl", "users.inline[0]", "Bearer sk-ws-prov"},
		{"user_literal_leading_space", "", " sk-ws-user-lit", "sk-ws-prov", "sk-ws-user-lit", "users.inline[0]", "Bearer sk-ws-prov"},
		{"provider_env_trailing_newline", "sk-ws-prov-nl\n", "sk-ws-user", "env:LLMGW_WS", "sk-ws-user", "providers.mock.apiKey", "Bearer sk-ws-prov-nl"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			setenv(t, "LLMGW_WS", tc.envValue)
			cfg := `{"providers":{"mock":{"type":"openai","baseUrl":"` + up.URL + `","apiKey":"` + tc.provKey + `","models":["m1"]}},
			"groups":{"g":{}},"users":{"inline":[{"name":"u","group":"g","apiKey":"` + tc.userKey + `"}]}}`
			g, err := newGatewayFromConfig(t, cfg)
			if err != nil {
				if !strings.Contains(err.Error(), tc.field) {
					t.Fatalf("error %q does not name %s", err, tc.field)
				}
				if strings.Contains(err.Error(), "sk-ws-") {
					t.Fatalf("error leaks the key: %q", err)
				}
				return
			}
			srv := httptest.NewServer(g)
			defer srv.Close()
			resp, body := send(t, srv.URL, testRequest{path: "/v1/chat/completions", body: `{"model":"m1"}`, headers: bearer(tc.presented)})
			if resp.StatusCode != 200 {
				t.Fatalf("accepted at construction, but the request fails: %d %s", resp.StatusCode, body)
			}
			if got := up.last(t).header.Get("Authorization"); got != tc.upstream {
				t.Fatalf("provider key sent as %q", got)
			}
		})
	}
}
