package gateway

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// configWithTargets is a minimal valid config with the given top-level
// target blocks (`"mcpServers": {...}` etc.) and groups.
func configWithTargets(blocks, groups string) string {
	if groups == "" {
		groups = `"g":{}`
	}
	if blocks != "" {
		blocks += ","
	}
	return `{` + blocks + `"providers":{"p":{"type":"openai"}},"groups":{` + groups + `},"users":{"inline":[{"name":"u","group":"g","apiKey":"k"}]}}`
}

func TestTargetConfigErrors(t *testing.T) {
	setenv(t, "LLMGW_TEST_TARGET_EMPTY", "")
	setenv(t, "LLMGW_TEST_TARGET_NL", "abc\ndef")
	dir := t.TempDir()
	cases := []struct {
		name   string
		config string
		want   []string // substrings: field path and offending value
	}{
		{"url_missing", configWithTargets(`"mcpServers":{"s":{}}`, ""), []string{"mcpServers.s.url", "required"}},
		{"url_unparseable", configWithTargets(`"mcpServers":{"s":{"url":"http://[::1"}}`, ""), []string{"mcpServers.s.url", `"http://[::1"`}},
		{"url_not_absolute", configWithTargets(`"mcpServers":{"s":{"url":"/mcp"}}`, ""), []string{"mcpServers.s.url", `"/mcp"`}},
		{"url_ftp", configWithTargets(`"mcpServers":{"s":{"url":"ftp://h/x"}}`, ""), []string{"mcpServers.s.url", `"ftp://h/x"`}},
		{"url_ws", configWithTargets(`"agents":{"a":{"url":"ws://h/x"}}`, ""), []string{"agents.a.url", `"ws://h/x"`}},
		{"url_no_host", configWithTargets(`"mcpServers":{"s":{"url":"http://"}}`, ""), []string{"mcpServers.s.url", "with a host"}},
		{"url_fragment", configWithTargets(`"mcpServers":{"s":{"url":"http://h/x#f"}}`, ""), []string{"mcpServers.s.url"}},
		{"url_secret_query_not_echoed", configWithTargets(`"mcpServers":{"s":{"url":"ftp://h/x?token=SECRETQ"}}`, ""), []string{"mcpServers.s.url", `"ftp://h/x"`}},
		{"nil_server", configWithTargets(`"mcpServers":{"s":null}`, ""), []string{"mcpServers.s", "nil"}},
		{"nil_agent", configWithTargets(`"agents":{"a":null}`, ""), []string{"agents.a", "nil"}},
		{"name_space", configWithTargets(`"mcpServers":{"a b":{"url":"http://h"}}`, ""), []string{"mcpServers.a b", `"a b"`}},
		{"name_slash", configWithTargets(`"agents":{"a/b":{"url":"http://h"}}`, ""), []string{"agents.a/b", `"a/b"`}},
		{"name_dotdot", configWithTargets(`"mcpServers":{"..":{"url":"http://h"}}`, ""), []string{`".."`}},
		{"name_reserved_mcp", configWithTargets(`"mcpServers":{"mcp":{"url":"http://h"}}`, ""), []string{"mcpServers.mcp", "reserved"}},
		{"name_reserved_v1", configWithTargets(`"agents":{"v1":{"url":"http://h"}}`, ""), []string{"agents.v1", "reserved"}},
		{"card_relative", configWithTargets(`"agents":{"a":{"url":"http://h","card":"card.json"}}`, ""), []string{"agents.a.card", `"card.json"`}},
		{"card_control", configWithTargets(`"agents":{"a":{"url":"http://h","card":"/c\u0000"}}`, ""), []string{"agents.a.card"}},
		{"header_bad_name", configWithTargets(`"mcpServers":{"s":{"url":"http://h","headers":{"Bad Header":"v"}}}`, ""), []string{"mcpServers.s.headers", `"Bad Header"`}},
		{"header_host", configWithTargets(`"mcpServers":{"s":{"url":"http://h","headers":{"Host":"other"}}}`, ""), []string{"mcpServers.s.headers", `"Host"`}},
		{"header_connection", configWithTargets(`"agents":{"a":{"url":"http://h","headers":{"connection":"close"}}}`, ""), []string{"agents.a.headers", `"connection"`}},
		{"header_content_length", configWithTargets(`"mcpServers":{"s":{"url":"http://h","headers":{"Content-Length":"1"}}}`, ""), []string{"mcpServers.s.headers", `"Content-Length"`}},
		{"header_env_unset", configWithTargets(`"mcpServers":{"s":{"url":"http://h","headers":{"X-Token":"env:LLMGW_TEST_TARGET_UNSET"}}}`, ""), []string{"mcpServers.s.headers.X-Token", "LLMGW_TEST_TARGET_UNSET"}},
		{"header_env_empty", configWithTargets(`"mcpServers":{"s":{"url":"http://h","headers":{"X-Token":"env:LLMGW_TEST_TARGET_EMPTY"}}}`, ""), []string{"mcpServers.s.headers.X-Token", "LLMGW_TEST_TARGET_EMPTY"}},
		{"header_file_missing", configWithTargets(`"agents":{"a":{"url":"http://h","headers":{"X-Token":"file:`+dir+`/nope"}}}`, ""), []string{"agents.a.headers.X-Token", dir + "/nope"}},
		{"header_env_control_char", configWithTargets(`"mcpServers":{"s":{"url":"http://h","headers":{"X-Token":"env:LLMGW_TEST_TARGET_NL"}}}`, ""), []string{"mcpServers.s.headers.X-Token", "control character"}},
		{"probe_interval_short", configWithTargets(`"targetHealth":{"probeInterval":"5s"}`, ""), []string{"targetHealth.probeInterval", `"5s"`}},
		{"probe_interval_long", configWithTargets(`"targetHealth":{"probeInterval":"2h"}`, ""), []string{"targetHealth.probeInterval", `"2h"`}},
		{"probe_interval_bad", configWithTargets(`"targetHealth":{"probeInterval":"soon"}`, ""), []string{"targetHealth.probeInterval", `"soon"`}},
		{"threshold_high", configWithTargets(`"targetHealth":{"failureThreshold":101}`, ""), []string{"targetHealth.failureThreshold", "101"}},
		{"threshold_negative", configWithTargets(`"targetHealth":{"failureThreshold":-1}`, ""), []string{"targetHealth.failureThreshold", "-1"}},
		{"group_mcp_glob", configWithTargets("", `"g":{"mcpServers":["[x"]}`), []string{"groups.g.mcpServers[0]", `"[x"`}},
		{"group_agent_glob", configWithTargets("", `"g":{"agents":["ok","[y"]}`), []string{"groups.g.agents[1]", `"[y"`}},
		{"group_tools_glob", configWithTargets("", `"g":{"mcpTools":["[z"]}`), []string{"groups.g.mcpTools[0]", `"[z"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newGatewayFromConfig(t, tc.config)
			if err == nil {
				t.Fatal("construction succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "SECRETQ") {
				t.Errorf("error %q echoes the URL's query", err)
			}
		})
	}
}

func TestTargetConfigCompiled(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte("  file-token-value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	setenv(t, "LLMGW_TEST_TARGET_TOKEN", "env-token-value")
	cfg := configWithTargets(`"mcpServers":{
		"plain":{"url":"http://u:pw@h:8080/mcp/?token=q"},
		"legacy":{"url":"http://h/x/sse"},
		"secret":{"url":"https://h","headers":{"authorization":"env:LLMGW_TEST_TARGET_TOKEN","x-file":"file:`+file+`","X-Lit":"literal-value"}}},
		"agents":{"a":{"url":"http://h/a2a"},"b":{"url":"http://h","card":"/card.json"}},
		"targetHealth":{"enabled":true,"probeInterval":"10s","failureThreshold":100}`, "")
	g, err := newGatewayFromConfig(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	plain := g.target(targetMCP, "plain")
	if plain.display != "http://h:8080/mcp/" || plain.base.Path != "/mcp" || plain.header != nil || plain.legacySSE {
		t.Errorf("plain: display %q path %q header %v legacy %v", plain.display, plain.base.Path, plain.header, plain.legacySSE)
	}
	if !g.target(targetMCP, "legacy").legacySSE {
		t.Error("a URL ending in /sse is a legacy HTTP+SSE server")
	}
	h := g.target(targetMCP, "secret").header
	for k, want := range map[string]string{"Authorization": "env-token-value", "X-File": "file-token-value", "X-Lit": "literal-value"} {
		if got := h.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	if a := g.target(targetAgent, "a"); a.card != defaultAgentCard {
		t.Errorf("default card %q", a.card)
	}
	if b := g.target(targetAgent, "b"); b.card != "/card.json" {
		t.Errorf("card %q", b.card)
	}
	if hs := g.cfg.targetHealth; !hs.enabled || hs.interval != 10*time.Second || hs.threshold != 100 {
		t.Errorf("targetHealth %+v", hs)
	}
	g2, err := newGatewayFromConfig(t, configWithTargets("", ""))
	if err != nil {
		t.Fatal(err)
	}
	if hs := g2.cfg.targetHealth; hs.enabled || hs.interval != time.Minute || hs.threshold != 3 {
		t.Errorf("default targetHealth %+v", hs)
	}
}

// registryConfig has five MCP servers and two agents, and users whose
// groups reach some of them.
const registryConfig = `{
  "providers": {"p": {"type": "openai"}},
  "mcpServers": {
    "zeta": {"url": "http://zeta.internal/mcp"},
    "alpha": {"url": "http://user:pw@alpha.internal:9000/mcp?token=secret#frag-not-allowed"},
    "tools-a": {"url": "https://tools.internal/a"},
    "tools-b": {"url": "https://tools.internal/b"},
    "legacy": {"url": "http://legacy.internal/sse"}
  },
  "agents": {
    "weather": {"url": "http://weather.internal/a2a?k=v"},
    "planner": {"url": "http://planner.internal", "card": "/.well-known/agent.json"}
  },
  "groups": {
    "all": {},
    "tools": {"mcpServers": ["tools-*"], "agents": ["weather"]},
    "alpha": {"mcpServers": ["alpha", "z?ta"], "agents": ["nothing-matches"]}
  },
  "users": {"inline": [
    {"name": "root", "group": "all", "apiKey": "k-root"},
    {"name": "toolsy", "group": "tools", "apiKey": "k-tools"},
    {"name": "both", "group": "tools", "groups": ["alpha"], "apiKey": "k-both"}
  ]}
}`

func TestTargetRegistry(t *testing.T) {
	cfg := strings.Replace(registryConfig, "#frag-not-allowed", "", 1)
	srv, _ := newTestGateway(t, cfg, nil)
	cases := []struct {
		name, key, path string
		want            string
	}{
		{"servers_all", "k-root", "/v1/mcp/servers", `{"servers":[{"name":"alpha","url":"http://alpha.internal:9000/mcp"},{"name":"legacy","url":"http://legacy.internal/sse"},` +
			`{"name":"tools-a","url":"https://tools.internal/a"},{"name":"tools-b","url":"https://tools.internal/b"},{"name":"zeta","url":"http://zeta.internal/mcp"}]}`},
		{"servers_glob", "k-tools", "/v1/mcp/servers", `{"servers":[{"name":"tools-a","url":"https://tools.internal/a"},{"name":"tools-b","url":"https://tools.internal/b"}]}`},
		{"servers_union", "k-both", "/v1/mcp/servers", `{"servers":[{"name":"alpha","url":"http://alpha.internal:9000/mcp"},{"name":"tools-a","url":"https://tools.internal/a"},` +
			`{"name":"tools-b","url":"https://tools.internal/b"},{"name":"zeta","url":"http://zeta.internal/mcp"}]}`},
		{"agents_all", "k-root", "/v1/agents", `{"agents":[{"name":"planner","url":"http://planner.internal","card":"/a2a/planner/.well-known/agent.json"},` +
			`{"name":"weather","url":"http://weather.internal/a2a","card":"/a2a/weather/.well-known/agent-card.json"}]}`},
		{"agents_glob", "k-tools", "/v1/agents", `{"agents":[{"name":"weather","url":"http://weather.internal/a2a","card":"/a2a/weather/.well-known/agent-card.json"}]}`},
		{"agents_union", "k-both", "/v1/agents", `{"agents":[{"name":"weather","url":"http://weather.internal/a2a","card":"/a2a/weather/.well-known/agent-card.json"}]}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, h, body := do(t, "GET", srv.URL+tc.path, tc.key, "")
			if status != 200 || !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
				t.Fatalf("status %d type %q: %s", status, h.Get("Content-Type"), body)
			}
			var got, want interface{}
			if err := json.Unmarshal([]byte(body), &got); err != nil {
				t.Fatalf("%v: %s", err, body)
			}
			_ = json.Unmarshal([]byte(tc.want), &want)
			gb, _ := json.Marshal(got)
			wb, _ := json.Marshal(want)
			if string(gb) != string(wb) {
				t.Errorf("body\n got %s\nwant %s", gb, wb)
			}
			for _, secret := range []string{"pw", "token=", "k=v"} {
				if strings.Contains(body, secret) {
					t.Errorf("registry shows %q: %s", secret, body)
				}
			}
		})
	}
	t.Run("empty_list_is_an_array", func(t *testing.T) {
		_, _, body := do(t, "GET", srv.URL+"/v1/agents", "k-both", "")
		if !strings.Contains(body, `"agents":[`) {
			t.Errorf("%s", body)
		}
	})
	t.Run("unauthorized", func(t *testing.T) {
		for _, p := range []string{"/v1/mcp/servers", "/v1/agents"} {
			resp, body := send(t, srv.URL, testRequest{method: "GET", path: p})
			expectEnvelope(t, resp, body, http.StatusUnauthorized, "authentication_error", "invalid_api_key")
			resp, body = send(t, srv.URL, testRequest{method: "GET", path: p, headers: bearer("k-wrong")})
			expectEnvelope(t, resp, body, http.StatusUnauthorized, "authentication_error", "invalid_api_key")
		}
	})
	t.Run("method_not_allowed", func(t *testing.T) {
		for _, p := range []string{"/v1/mcp/servers", "/v1/agents"} {
			resp, body := send(t, srv.URL, testRequest{method: "POST", path: p, body: `{}`, headers: bearer("k-root")})
			if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
				t.Errorf("%s: status %d Allow %q: %s", p, resp.StatusCode, resp.Header.Get("Allow"), body)
			}
			decodeEnvelope(t, body)
		}
	})
}

func TestTargetConfigFragmentRefused(t *testing.T) {
	_, err := newGatewayFromConfig(t, registryConfig)
	if err == nil || !strings.Contains(err.Error(), "mcpServers.alpha.url") || strings.Contains(err.Error(), "pw") || strings.Contains(err.Error(), "secret") {
		t.Fatalf("err %v", err)
	}
}
