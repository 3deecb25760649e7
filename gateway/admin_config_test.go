package gateway

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Secrets of the config view tests: none may ever appear in an answer.
const (
	configLiteralProviderKey = "sk-literal-provider-secret"
	configURLPassword        = "url-password-secret"
	configRedisPassword      = "redis-literal-secret"
	configEnvKey             = "sk-from-env-secret"
	configFileKey            = "sk-from-file-secret"
	configUsersFileKey       = "sk-carol-file-secret"
)

// secretsConfig has a literal, an env: and a file: provider key, a
// keyless provider, a baseUrl with userinfo, a literal Redis password,
// inline users with a literal and a file: key, and a users file. Redis
// is never dialled (nothing here reads a counter).
func secretsConfig(t *testing.T, dir string) string {
	t.Helper()
	setenv(t, "LLMGW_ADMIN_CONFIG_TEST_KEY", configEnvKey)
	files := map[string]string{
		"provider.key": configFileKey + "\n",
		"dave.key":     "sk-dave-file-secret\n",
		"users.json":   `{"users": [{"name": "carol", "group": "all", "apiKey": "` + configUsersFileKey + `"}]}`,
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return `{
  "admin": {"enabled": true},
  "redis": {"address": "127.0.0.1:1", "password": "` + configRedisPassword + `"},
  "cache": {"enabled": true, "ttl": "0s"},
  "providers": {
    "lit": {"type": "openai", "baseUrl": "http://opsuser:` + configURLPassword + `@127.0.0.1:9/v1", "apiKey": "` + configLiteralProviderKey + `", "models": ["m1"]},
    "envp": {"type": "anthropic", "baseUrl": "http://127.0.0.1:9", "apiKey": "env:LLMGW_ADMIN_CONFIG_TEST_KEY", "models": ["c1"]},
    "filep": {"type": "openai", "baseUrl": "http://127.0.0.1:9", "apiKey": "file:` + dir + `/provider.key", "models": ["m2"]},
    "keyless": {"type": "openai", "baseUrl": "http://127.0.0.1:9", "models": ["m3"]}},
  "groups": {"all": {}},
  "users": {"file": "` + dir + `/users.json", "inline": [
    {"name": "alice", "group": "all", "apiKey": "` + testAliceKey + `", "admin": true},
    {"name": "dave", "group": "all", "apiKey": "file:` + dir + `/dave.key"}]}}`
}

func TestAdminConfigRoute(t *testing.T) {
	dir := t.TempDir()
	srv, _ := newTestGateway(t, secretsConfig(t, dir), nil)
	url := srv.URL + "/admin/api/config"
	if status, _, _ := getAdmin(t, url, configUsersFileKey); status != 403 {
		t.Fatalf("a non-admin (file user) key: %d, want 403", status)
	}
	status, h, body := getAdmin(t, url, testAliceKey)
	if status != 200 || h.Get("Cache-Control") != "no-store" {
		t.Fatalf("%d %v %s", status, h, body)
	}
	// No literal secret, no resolved secret, nothing of the users file
	// but its path.
	for _, secret := range []string{configLiteralProviderKey, configURLPassword, "opsuser", configRedisPassword, testAliceKey,
		configEnvKey, configFileKey, "sk-dave-file-secret", configUsersFileKey, "carol"} {
		if strings.Contains(body, secret) {
			t.Errorf("the answer contains %q", secret)
		}
	}
	// The references are kept, as written.
	for _, ref := range []string{`"env:LLMGW_ADMIN_CONFIG_TEST_KEY"`, `"file:` + dir + `/provider.key"`, `"file:` + dir + `/dave.key"`,
		`"file":"` + dir + `/users.json"`} {
		if !strings.Contains(body, ref) {
			t.Errorf("the answer lacks %s", ref)
		}
	}
	var ans struct {
		Config struct {
			Providers map[string]struct {
				BaseURL string `json:"baseUrl"`
				APIKey  string `json:"apiKey"`
			} `json:"providers"`
			Redis struct {
				Address  string `json:"address"`
				Password string `json:"password"`
			} `json:"redis"`
			Users struct {
				Inline []struct {
					Name   string `json:"name"`
					APIKey string `json:"apiKey"`
				} `json:"inline"`
			} `json:"users"`
		} `json:"config"`
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(body), &ans); err != nil {
		t.Fatal(err)
	}
	c := ans.Config
	if p := c.Providers["lit"]; p.BaseURL != "http://127.0.0.1:9/v1" || p.APIKey != redactedValue {
		t.Errorf("lit: %+v", p)
	}
	if p := c.Providers["keyless"]; p.APIKey != "" {
		t.Errorf("keyless: %+v (an empty key stays empty)", p)
	}
	if c.Redis.Password != redactedValue || c.Redis.Address != "127.0.0.1:1" {
		t.Errorf("redis: %+v", c.Redis)
	}
	if len(c.Users.Inline) != 2 || c.Users.Inline[0].APIKey != redactedValue || c.Users.Inline[1].APIKey != "file:"+dir+"/dave.key" {
		t.Errorf("inline users: %+v", c.Users.Inline)
	}
	if len(ans.Warnings) != 1 || !strings.Contains(ans.Warnings[0], "cache.ttl") || strings.Contains(body, "warningsDropped") {
		t.Errorf("warnings: %q (warningsDropped must be omitted when 0)", ans.Warnings)
	}
	checkGolden(t, "config", []byte(strings.ReplaceAll(body, dir, "TMPDIR")))
}

// warnings is never null, and what was dropped past maxWarnings is
// counted.
func TestAdminConfigWarnings(t *testing.T) {
	up := newRoutedUpstream(t)
	srv, _ := newTestGateway(t, adminConfig(up.URL, `"admin": {"enabled": true},`), nil)
	_, _, body := getAdmin(t, srv.URL+"/admin/api/config", testAliceKey)
	if !strings.Contains(body, `"warnings":[]`) || strings.Contains(body, "warningsDropped") || !strings.Contains(body, `"features":{`) {
		t.Fatalf("no warnings: %s", body)
	}
	// 60 bare ids served by two providers: 60 collision warnings.
	var models []string
	for i := 0; i < 60; i++ {
		models = append(models, `"m`+strconv.Itoa(i)+`"`)
	}
	list := strings.Join(models, ", ")
	cfg := `{"admin": {"enabled": true},
  "providers": {"a": {"type": "openai", "baseUrl": "http://127.0.0.1:9", "models": [` + list + `]},
                "b": {"type": "openai", "baseUrl": "http://127.0.0.1:9", "models": [` + list + `]}},
  "groups": {"all": {}},
  "users": {"inline": [{"name": "alice", "group": "all", "apiKey": "` + testAliceKey + `", "admin": true}]}}`
	srv, _ = newTestGateway(t, cfg, nil)
	_, _, body = getAdmin(t, srv.URL+"/admin/api/config", testAliceKey)
	var ans adminConfigAnswer
	if err := json.Unmarshal([]byte(body), &ans); err != nil || len(ans.Warnings) != maxWarnings || ans.WarningsDropped != 10 {
		t.Fatalf("%d warnings, %d dropped (%v)", len(ans.Warnings), ans.WarningsDropped, err)
	}
}

// A view that cannot be built is an empty config and a warning, never a
// failed route.
func TestAdminConfigViewFailure(t *testing.T) {
	g, err := newGatewayFromConfig(t, adminConfig("http://127.0.0.1:9", `"admin": {"enabled": true},`))
	if err != nil {
		t.Fatal(err)
	}
	if len(g.configView) == 0 {
		t.Fatal("no config view captured")
	}
	wl := &warningLog{log: newLogger("test", io.Discard)}
	view := captureConfigView(&Config{ModelAliases: map[string]interface{}{"x": make(chan int)}}, wl)
	warnings, _ := wl.collected()
	if view == nil || len(view) != 0 || len(warnings) != 1 || !strings.Contains(warnings[0], "configuration view") {
		t.Fatalf("view %v, warnings %q", view, warnings)
	}
	g.configView = view
	g.warnings = wl
	answer, e := g.adminConfig()
	if e != nil {
		t.Fatal(e)
	}
	data, _ := json.Marshal(answer)
	if !strings.Contains(string(data), `"config":{}`) || !strings.Contains(string(data), "configuration view") {
		t.Fatalf("answer %s", data)
	}
	// With admin off nothing is captured (the route does not exist).
	g, err = newGatewayFromConfig(t, adminConfig("http://127.0.0.1:9", ``))
	if err != nil || g.configView != nil {
		t.Fatalf("admin off: view %v, %v", g.configView, err)
	}
}

// The walk, on a Config that New would refuse (a baseUrl with a query)
// and on free-form members.
func TestRedactedConfigView(t *testing.T) {
	cfg := &Config{
		Providers: map[string]*ProviderConfig{
			"q":   {Type: "openai", BaseURL: "https://user:pw-secret@api.example.com/v1?api_key=query-secret", APIKey: "lit-secret"},
			"env": {Type: "openai", BaseURL: "https://api.example.com", APIKey: "env:KEY"},
		},
		Redis:        &RedisConfig{Address: "user:addr-secret@redis.local:6379", Password: "file:/run/secrets/redis"},
		ModelAliases: map[string]interface{}{"fast": map[string]interface{}{"targets": []interface{}{"q/m"}, "APIKEY": "alias-secret"}},
		Users:        &UsersConfig{Inline: []*UserConfig{{Name: "u", APIKey: "user-secret"}}},
		Groups:       map[string]*GroupConfig{"g": {Limits: &LimitsConfig{RequestsPerDay: 9007199254740993}}},
		McpServers:   map[string]*TargetConfig{"tools": {URL: "http://t:tpw-secret@mcp.local/mcp?k=q2-secret", Headers: map[string]string{"X-Tool-Token": "hdr-secret", "X-Ref": "env:TOOL_TOKEN"}}},
		Agents:       map[string]*AgentConfig{"a": {URL: "https://agent.local/a2a", Headers: map[string]string{"Authorization": "Bearer agent-secret"}}},
	}
	view, err := redactedConfigView(cfg)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(view)
	s := string(data)
	for _, secret := range []string{"pw-secret", "query-secret", "lit-secret", "addr-secret", "alias-secret", "user-secret", "api_key",
		"tpw-secret", "q2-secret", "hdr-secret", "agent-secret"} {
		if strings.Contains(s, secret) {
			t.Errorf("the view contains %q: %s", secret, s)
		}
	}
	for _, want := range []string{`"baseUrl":"https://api.example.com/v1"`, `"apiKey":"env:KEY"`, `"address":"redis.local:6379"`,
		`"password":"file:/run/secrets/redis"`, `"APIKEY":"[redacted]"`, `"requestsPerDay":9007199254740993`,
		`"url":"http://mcp.local/mcp"`, `"X-Tool-Token":"[redacted]"`, `"X-Ref":"env:TOOL_TOKEN"`, `"Authorization":"[redacted]"`} {
		if !strings.Contains(s, want) {
			t.Errorf("the view lacks %s: %s", want, s)
		}
	}
}

func TestStripURLSecrets(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"http://u:p@h:1/v1?key=abc", "http://h:1/v1"},
		{"https://h/x?token=1", "https://h/x"},
		{"https://h/x?", "https://h/x"},
		{"https://h/v1", "https://h/v1"},
		{"redis://:pw@h:6379/0", "redis://h:6379/0"},
		{"http://u:p%zz@h/x?y=1", "http://h/x"}, // does not parse: cut by hand
		{"u:p@h:6379", "h:6379"},                // opaque: cut by hand
		{"h:6379", "h:6379"},
	} {
		if got := stripURLSecrets(tc.in); got != tc.want {
			t.Errorf("stripURLSecrets(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// address is only touched when it carries userinfo.
	for _, addr := range []string{"127.0.0.1:6379", "[::1]:6379", "redis.local:6379"} {
		if got := redactMember("address", addr); got != addr {
			t.Errorf("address %q became %v", addr, got)
		}
	}
}
