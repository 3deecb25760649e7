package gateway

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// adminTargetsConfig has three MCP servers (one URL with userinfo and a
// query, one legacy SSE) and two agents; group all reaches files and
// docs-* and helper, group docs docs-* and helper: docs-search and
// helper are reached by every group (access null), files by all only,
// legacy and planner by none ([]). alice (admin) is in all, bob in docs.
func adminTargetsConfig(extra string) string {
	return `{` + extra + `
  "admin": {"enabled": true},
  "providers": {"p": {"type": "openai", "baseUrl": "http://127.0.0.1:1", "models": ["m1"]}},
  "mcpServers": {
    "docs-search": {"url": "http://svc:pw-target-1@docs.internal:8080/mcp?token=tq-target-1", "headers": {"X-Token": "hv-target-1"}},
    "files": {"url": "http://files.internal/mcp/"},
    "legacy": {"url": "http://legacy.internal/sse"}},
  "agents": {
    "helper": {"url": "https://helper.internal/a2a"},
    "planner": {"url": "http://planner.internal", "card": "/card.json"}},
  "groups": {
    "all": {"mcpServers": ["files", "docs-*"], "agents": ["helper"]},
    "docs": {"mcpServers": ["docs-*"], "agents": ["helper"]}},
  "users": {"inline": [
    {"name": "alice", "group": "all", "apiKey": "` + testAliceKey + `", "admin": true},
    {"name": "bob", "group": "docs", "apiKey": "` + testBobKey + `"}]}}`
}

// The targets route: every target with its stripped URL, access,
// counters (driven here through countTargets, the proxy's and
// federation's counting call, which are built on other branches) and
// health (through observeTarget); the golden file holds the answer.
func TestAdminTargets(t *testing.T) {
	g, base, _, clock := clockGateway(t, adminTargetsConfig(`"targetHealth": {"failureThreshold": 2},`))
	files, docs := g.target(targetMCP, "files"), g.target(targetMCP, "docs-search")
	helper := g.target(targetAgent, "helper")
	count := func(at time.Time, user string, targets ...*targetRuntime) {
		clock.Store(at)
		g.countTargets(user, targets)
	}
	count(statsClock, "alice", files, docs)
	count(statsClock, "alice", files, docs)
	count(statsClock, "bob", docs)
	count(statsClock.Add(-time.Hour), "alice", helper)
	count(statsClock.AddDate(0, 0, -1), "bob", helper)
	clock.Store(statsClock)
	g.limiter.async.wait()
	// docs-search: a success; files: one failure (below the threshold:
	// unknown, every field shown); helper: two failures (unhealthy);
	// legacy and planner: never observed.
	g.observeTarget(docs, true, "", 12*time.Millisecond, "passive")
	g.observeTarget(files, false, "HTTP 503", 40*time.Millisecond, "passive")
	g.observeTarget(helper, false, "connection refused", time.Millisecond, "passive")
	g.observeTarget(helper, false, "timeout after 5s", 5*time.Second, "probe")

	body := getAdminJSON(t, base+"/admin/api/targets", 200)
	for _, secret := range []string{"pw-target-1", "tq-target-1", "hv-target-1", "svc"} {
		if strings.Contains(body, secret) {
			t.Fatalf("the answer carries %q: %s", secret, body)
		}
	}
	var ans struct {
		McpServers []struct {
			Health map[string]interface{} `json:"health"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(body), &ans); err != nil || len(ans.McpServers) != 3 {
		t.Fatalf("%s (%v)", body, err)
	}
	if at, _ := ans.McpServers[0].Health["lastCheck"].(string); at == "" {
		t.Fatalf("docs-search has no lastCheck: %s", body)
	}
	checkGolden(t, "targets", []byte(body), "lastCheck")
}

// No targets: both lists empty arrays. The store down: the route still
// answers — access and health need no store — with every counters
// member absent and countersUnavailable set.
func TestAdminTargetsDegraded(t *testing.T) {
	up := newFakeUpstream(t, okJSON(chatOK))
	_, none, _ := statsGateway(t, adminConfig(up.URL, `"admin": {"enabled": true},`))
	if body := getAdminJSON(t, none+"/admin/api/targets", 200); body != `{"mcpServers":[],"agents":[]}` {
		t.Fatalf("no targets: %s", body)
	}
	g, down, _ := statsGateway(t, adminTargetsConfig(`"redis": {"address": "127.0.0.1:1"},`))
	g.observeTarget(g.target(targetAgent, "helper"), true, "", time.Millisecond, "probe")
	body := getAdminJSON(t, down+"/admin/api/targets", 200)
	var ans adminTargetsAnswer
	if err := json.Unmarshal([]byte(body), &ans); err != nil || !ans.CountersUnavailable || len(ans.McpServers) != 3 || len(ans.Agents) != 2 ||
		strings.Contains(body, `"counters"`) || ans.Agents[0].Health.State != targetHealthy || ans.Agents[0].Access != nil {
		t.Fatalf("store down: %s (%v)", body, err)
	}
}

// End to end: federated traffic shows in the admin targets route — the
// server's request counters and its passively recorded health.
func TestAdminTargetsFromFederatedTraffic(t *testing.T) {
	f := newFakeMCP(t, "alpha", "json", "echo")
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	g, base, _ := fedGateway(t, map[string]*fakeMCP{"alpha": f}, map[string]interface{}{"admin": map[string]interface{}{"enabled": true}},
		func(g *Gateway) { g.mcp.now = func() time.Time { return now } })
	userByName(t, g, "alice").admin = true
	for i := 0; i < 2; i++ {
		if status, reply := rpc(t, base.URL, fedAliceKey, "tools/list", `{}`, nil); status != 200 || reply.Error != nil {
			t.Fatalf("tools/list %d: %d %+v", i, status, reply.Error)
		}
		now = now.Add(federatedToolsTTL + time.Second) // the second listing reaches the server again
	}
	g.limiter.async.wait()
	status, _, body := getAdmin(t, base.URL+"/admin/api/targets", fedAliceKey)
	if status != 200 || !strings.Contains(body, `"requestsPerDay":2`) || !strings.Contains(body, `"state":"healthy"`) || !strings.Contains(body, `"source":"passive"`) {
		t.Fatalf("targets after two federated listings: %d %s", status, body)
	}
}
