package gateway

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// provider wraps one provider body in a minimal valid config.
func configWithProvider(name, body string) string {
	return `{"providers":{"` + name + `":` + body + `},"groups":{"g":{}},"users":{"inline":[{"name":"u","group":"g","apiKey":"k"}]}}`
}

func configWithUsers(users string) string {
	return `{"providers":{"p":{"type":"openai"}},"groups":{"g":{},"h":{}},"users":{"inline":[` + users + `]}}`
}

func TestConfigValidationErrors(t *testing.T) {
	setenv(t, "LLMGW_TEST_EMPTY", "")
	dir := t.TempDir()
	emptyFile := filepath.Join(dir, "empty")
	if err := os.WriteFile(emptyFile, []byte(" \n\t"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		config string
		want   []string // substrings: field path and offending value
	}{
		{"no_providers", `{}`, []string{"providers"}},
		{"empty_providers", `{"providers":{}}`, []string{"providers"}},
		{"name_with_space", configWithProvider("bad name", `{"type":"openai"}`), []string{"providers", `"bad name"`}},
		{"name_with_slash", configWithProvider("a/b", `{"type":"openai"}`), []string{"providers", `"a/b"`}},
		{"name_unicode", configWithProvider("é", `{"type":"openai"}`), []string{"providers", `"é"`}},
		{"name_empty", configWithProvider("", `{"type":"openai"}`), []string{"providers", "empty"}},
		{"name_dotdot", configWithProvider("..", `{"type":"openai"}`), []string{"providers", `".."`}},
		{"reserved_v1", configWithProvider("v1", `{"type":"openai"}`), []string{"providers", `"v1"`, "reserved"}},
		{"reserved_mcp", configWithProvider("mcp", `{"type":"openai"}`), []string{"providers", `"mcp"`, "reserved"}},
		{"reserved_a2a", configWithProvider("a2a", `{"type":"openai"}`), []string{"providers", `"a2a"`, "reserved"}},
		{"reserved_admin", configWithProvider("admin", `{"type":"openai"}`), []string{"providers", `"admin"`, "reserved"}},
		{"nil_provider", configWithProvider("p", `null`), []string{"providers.p", "nil"}},
		{"unknown_type", configWithProvider("p", `{"type":"azure"}`), []string{"providers.p.type", `"azure"`}},
		{"missing_type", configWithProvider("p", `{}`), []string{"providers.p.type", `""`}},
		{"bad_base_url_scheme", configWithProvider("p", `{"type":"openai","baseUrl":"ftp://x"}`), []string{"providers.p.baseUrl", `"ftp://x"`}},
		{"bad_base_url_no_host", configWithProvider("p", `{"type":"openai","baseUrl":"http://"}`), []string{"providers.p.baseUrl", `"http://"`}},
		{"base_url_with_query", configWithProvider("p", `{"type":"openai","baseUrl":"http://h/?a=1"}`), []string{"providers.p.baseUrl"}},
		{"anthropic_needs_key", configWithProvider("p", `{"type":"anthropic"}`), []string{"providers.p.apiKey", "anthropic"}},
		{"gemini_needs_key", configWithProvider("p", `{"type":"gemini"}`), []string{"providers.p.apiKey", "gemini"}},
		{"provider_key_env_unset", configWithProvider("p", `{"type":"openai","apiKey":"env:LLMGW_TEST_UNSET_VAR"}`), []string{"providers.p.apiKey", "LLMGW_TEST_UNSET_VAR"}},
		{"provider_key_env_empty", configWithProvider("p", `{"type":"openai","apiKey":"env:LLMGW_TEST_EMPTY"}`), []string{"providers.p.apiKey", "LLMGW_TEST_EMPTY"}},
		{"provider_key_file_missing", configWithProvider("p", `{"type":"openai","apiKey":"file:`+dir+`/nope"}`), []string{"providers.p.apiKey", dir + "/nope"}},
		{"provider_key_file_empty", configWithProvider("p", `{"type":"openai","apiKey":"file:`+emptyFile+`"}`), []string{"providers.p.apiKey", emptyFile, "empty"}},
		{"empty_model", configWithProvider("p", `{"type":"openai","models":["m",""]}`), []string{"providers.p.models[1]"}},
		{"duplicate_model", configWithProvider("p", `{"type":"openai","models":["m","m"]}`), []string{"providers.p.models[1]", `"m"`}},
		{"global_timeout_unparseable", `{"requestTimeout":"soon","providers":{"p":{"type":"openai"}}}`, []string{"requestTimeout", `"soon"`}},
		{"global_timeout_zero", `{"requestTimeout":"0s","providers":{"p":{"type":"openai"}}}`, []string{"requestTimeout", `"0s"`}},
		{"global_timeout_bare_zero", `{"requestTimeout":"0","providers":{"p":{"type":"openai"}}}`, []string{"requestTimeout", `"0"`}},
		{"global_timeout_negative", `{"requestTimeout":"-5s","providers":{"p":{"type":"openai"}}}`, []string{"requestTimeout", `"-5s"`}},
		{"global_timeout_no_unit", `{"requestTimeout":"30","providers":{"p":{"type":"openai"}}}`, []string{"requestTimeout", `"30"`}},
		{"provider_timeout_bad", configWithProvider("p", `{"type":"openai","requestTimeout":"1 minute"}`), []string{"providers.p.requestTimeout", `"1 minute"`}},
		{"provider_timeout_negative", configWithProvider("p", `{"type":"openai","requestTimeout":"-1ms"}`), []string{"providers.p.requestTimeout", `"-1ms"`}},
		{"nil_group", `{"providers":{"p":{"type":"openai"}},"groups":{"g":null}}`, []string{"groups.g", "nil"}},
		{"bad_group_glob", `{"providers":{"p":{"type":"openai"}},"groups":{"g":{"models":["ok","[x"]}}}`, []string{"groups.g.models[1]", `"[x"`}},
		{"bad_group_provider_glob", `{"providers":{"p":{"type":"openai"}},"groups":{"g":{"providers":["\\"]}}}`, []string{"groups.g.providers[0]"}},
		{"nil_user", configWithUsers(`null`), []string{"users.inline[0]", "nil"}},
		{"user_without_name", configWithUsers(`{"group":"g","apiKey":"k"}`), []string{"users.inline[0].name"}},
		{"user_unknown_group", configWithUsers(`{"name":"u","group":"nogroup","apiKey":"k"}`), []string{"users.inline[0]", `"nogroup"`}},
		{"user_unknown_extra_group", configWithUsers(`{"name":"u","group":"g","groups":["h","ghost"],"apiKey":"k"}`), []string{"users.inline[0]", `"ghost"`}},
		{"user_without_group", configWithUsers(`{"name":"u","apiKey":"k"}`), []string{"users.inline[0]", "group"}},
		{"user_empty_key", configWithUsers(`{"name":"u","group":"g","apiKey":""}`), []string{"users.inline[0]", "apiKey"}},
		{"user_missing_key", configWithUsers(`{"name":"u","group":"g"}`), []string{"users.inline[0]", "apiKey"}},
		{"user_key_env_unset", configWithUsers(`{"name":"u","group":"g","apiKey":"env:LLMGW_TEST_UNSET_VAR"}`), []string{"users.inline[0]", "apiKey", "LLMGW_TEST_UNSET_VAR"}},
		{"duplicate_user_key", configWithUsers(`{"name":"u","group":"g","apiKey":"same"},{"name":"v","group":"h","apiKey":"same"}`), []string{"users.inline[1]", "apiKey", "duplicate", `"u"`}},
		{"duplicate_user_name", configWithUsers(`{"name":"u","group":"g","apiKey":"a"},{"name":"u","group":"h","apiKey":"b"}`), []string{"users.inline[1]", "name", `"u"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newGatewayFromConfig(t, tc.config)
			if err == nil {
				t.Fatal("config accepted")
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Fatalf("error %q does not contain %q", err, want)
				}
			}
			if !strings.HasPrefix(err.Error(), "config: ") {
				t.Fatalf("error %q lacks the config: prefix", err)
			}
		})
	}
}

func TestNewNilConfig(t *testing.T) {
	g, err := New(nil, nil, Options{LogOutput: &syncBuffer{}})
	if err == nil || g != nil {
		t.Fatalf("New(nil config) = %v, %v", g, err)
	}
}

func TestConfigCompiledDefaults(t *testing.T) {
	g, err := newGatewayFromConfig(t, `{
  "requestTimeout": "90s",
  "providers": {
    "o": {"type": "openai", "models": ["b", "a"]},
    "an": {"type": "anthropic", "apiKey": "sk-a", "baseUrl": "https://proxy.example/anthropic///", "requestTimeout": "2s"},
    "ge": {"type": "gemini", "apiKey": "sk-g", "passthrough": false},
    "x.y_z-1": {"type": "openai", "passthrough": true}
  },
  "groups": {"g": {}},
  "users": {"inline": [{"name": "u", "group": "g", "groups": ["g", ""], "apiKey": "k", "admin": true}]}
}`)
	if err != nil {
		t.Fatal(err)
	}
	c := g.cfg
	cases := []struct {
		name        string
		baseURL     string
		timeout     time.Duration
		passthrough bool
	}{
		{"o", "https://api.openai.com", 90 * time.Second, true},
		{"an", "https://proxy.example/anthropic", 2 * time.Second, true},
		{"ge", "https://generativelanguage.googleapis.com", 90 * time.Second, false},
		{"x.y_z-1", "https://api.openai.com", 90 * time.Second, true},
	}
	for _, tc := range cases {
		p := c.providers[tc.name]
		if p == nil {
			t.Fatalf("provider %s missing", tc.name)
		}
		if p.baseURL != tc.baseURL || p.timeout != tc.timeout || p.passthrough != tc.passthrough {
			t.Errorf("%s: base %q timeout %v passthrough %v", tc.name, p.baseURL, p.timeout, p.passthrough)
		}
	}
	if strings.Join(c.providers["o"].models, ",") != "a,b" {
		t.Errorf("models %v", c.providers["o"].models)
	}
	if len(c.users) != 1 || len(c.users[0].user.grants) != 1 || !c.users[0].user.admin {
		t.Errorf("user %+v", c.users)
	}
	g2, err := newGatewayFromConfig(t, `{"providers":{"o":{"type":"openai"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	if g2.cfg.requestTimeout != 5*time.Minute || g2.cfg.providers["o"].timeout != 5*time.Minute {
		t.Errorf("default timeout %v / %v", g2.cfg.requestTimeout, g2.cfg.providers["o"].timeout)
	}
}

// With no users every request to a gateway route is refused.
func TestConfigNoUsersRefusesAll(t *testing.T) {
	srv, _ := newTestGateway(t, `{"providers":{"o":{"type":"openai","models":["m"]}}}`, nil)
	resp, body := send(t, srv.URL, testRequest{method: "GET", path: "/v1/models", headers: bearer("anything")})
	expectEnvelope(t, resp, body, 401, "authentication_error", "invalid_api_key")
}
