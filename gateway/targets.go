package gateway

import (
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/store"
)

// Targets: the MCP servers (mcpServers) and A2A agents (agents) the
// gateway reaches on a caller's behalf. Each is compiled once into a
// targetRuntime; which ones a user reaches is the union of the member
// groups' mcpServers/agents globs (an empty list allows every one; a
// personal grant takes no part). Every call to a target — proxied or
// federated — counts in the target's own request counters, and its
// outcome is recorded in the target's health (targets_health.go).
//
// Counter keys (requests only: a target's answer carries no usage):
//
//	llmgw:target:{mcp|agent}:{name}:req:{min|day|month}:{b}
//	llmgw:tcaller:{mcp|agent}:{name}:{user}:req:{day|month}:{b}
//
// written through the background batch (writeStats), one batch per
// request however many targets it attempted.

// Target kinds (the counter keys' and the admin API's spelling).
const (
	targetMCP   = "mcp"
	targetAgent = "agent"
)

const (
	defaultAgentCard              = "/.well-known/agent-card.json"
	defaultTargetProbeInterval    = 60 * time.Second
	minTargetProbeInterval        = 10 * time.Second
	maxTargetProbeInterval        = time.Hour
	defaultTargetFailureThreshold = 3
)

// targetRuntime is one MCP server or agent, compiled.
type targetRuntime struct {
	kind string // targetMCP or targetAgent
	name string
	// base is the configured URL, parsed (its path without a trailing
	// slash); display is the URL the gateway shows (no userinfo, query
	// or fragment).
	base    *url.URL
	display string
	// endpoint is the configured URL as written (a trailing slash kept):
	// where federation and the MCP probe POST (a server mounted at
	// "/mcp/" may redirect "/mcp"); endpointPath is its path, what the
	// proxy's /mcp/{name}/ (no rest) reaches.
	endpoint     string
	endpointPath string
	// card is an agent's card path (starts with "/").
	card string
	// header holds the configured headers, secrets resolved: sent on
	// every request to the target. Nil when none. Never logged or shown.
	header http.Header
	// legacySSE: the URL's path ends in /sse (the HTTP+SSE transport):
	// proxied, never federated.
	legacySSE bool
	health    *targetHealth
}

// targetHealthSettings is the compiled targetHealth block.
type targetHealthSettings struct {
	enabled   bool
	interval  time.Duration
	threshold int
}

// refusedTargetHeaders are headers a target's headers block may not set:
// the hop-by-hop ones and what the proxy itself owns.
var refusedTargetHeaders = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Connection": true, "Transfer-Encoding": true, "Te": true,
	"Trailer": true, "Upgrade": true, "Host": true, "Content-Length": true, "Content-Type": true,
}

// compileTargets compiles mcpServers, agents and targetHealth.
func (c *compiledConfig) compileTargets(cfg *Config) error {
	hs, err := compileTargetHealth(cfg.TargetHealth)
	if err != nil {
		return err
	}
	c.targetHealth = hs
	c.mcpServers = map[string]*targetRuntime{}
	for name, tc := range cfg.McpServers {
		field := "mcpServers." + name
		if tc == nil {
			return fmt.Errorf("config: %s: nil value", field)
		}
		t, err := compileTarget(field, targetMCP, name, tc.URL, tc.Headers)
		if err != nil {
			return err
		}
		c.mcpServers[name] = t
		c.mcpNames = append(c.mcpNames, name)
	}
	sort.Strings(c.mcpNames)
	c.agents = map[string]*targetRuntime{}
	for name, ac := range cfg.Agents {
		field := "agents." + name
		if ac == nil {
			return fmt.Errorf("config: %s: nil value", field)
		}
		t, err := compileTarget(field, targetAgent, name, ac.URL, ac.Headers)
		if err != nil {
			return err
		}
		t.card = defaultAgentCard
		if ac.Card != "" {
			if !strings.HasPrefix(ac.Card, "/") || hasControlChar(ac.Card) {
				return fmt.Errorf("config: %s.card: %q must be a path starting with \"/\"", field, ac.Card)
			}
			t.card = ac.Card
		}
		c.agents[name] = t
		c.agentNames = append(c.agentNames, name)
	}
	sort.Strings(c.agentNames)
	return nil
}

func compileTarget(field, kind, name, raw string, headers map[string]string) (*targetRuntime, error) {
	if err := validateTargetName(name); err != nil {
		return nil, fmt.Errorf("config: %s: %v", field, err)
	}
	if raw == "" {
		return nil, fmt.Errorf("config: %s.url: required", field)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Fragment != "" {
		return nil, fmt.Errorf("config: %s.url: %q is not an http(s) URL with a host", field, stripURLSecrets(raw))
	}
	endpoint := u.String()
	endpointPath := u.Path
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	t := &targetRuntime{kind: kind, name: name, base: u, endpoint: endpoint, endpointPath: endpointPath, display: stripURLSecrets(raw),
		legacySSE: strings.HasSuffix(u.Path, "/sse"), health: &targetHealth{}}
	for k, v := range headers {
		canon := http.CanonicalHeaderKey(k)
		if !validHeaderName(k) || refusedTargetHeaders[canon] {
			return nil, fmt.Errorf("config: %s.headers: %q is not a header the gateway may set", field, k)
		}
		value, err := resolveSecret(v)
		if err != nil {
			return nil, fmt.Errorf("config: %s.headers.%s: %v", field, k, err)
		}
		if hasControlChar(value) {
			return nil, fmt.Errorf("config: %s.headers.%s: the value holds a control character", field, k)
		}
		if t.header == nil {
			t.header = http.Header{}
		}
		t.header.Set(canon, value)
	}
	return t, nil
}

// validHeaderName reports whether s is an HTTP token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		ok := ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", ch) >= 0
		if !ok {
			return false
		}
	}
	return true
}

func compileTargetHealth(hc *TargetHealthConfig) (targetHealthSettings, error) {
	s := targetHealthSettings{interval: defaultTargetProbeInterval, threshold: defaultTargetFailureThreshold}
	if hc == nil {
		return s, nil
	}
	s.enabled = hc.Enabled
	if hc.ProbeInterval != "" {
		d, err := time.ParseDuration(hc.ProbeInterval)
		if err != nil || d < minTargetProbeInterval || d > maxTargetProbeInterval {
			return s, fmt.Errorf("config: targetHealth.probeInterval: %q must be a duration from 10s to 1h", hc.ProbeInterval)
		}
		s.interval = d
	}
	if hc.FailureThreshold != 0 {
		if hc.FailureThreshold < 1 || hc.FailureThreshold > 100 {
			return s, fmt.Errorf("config: targetHealth.failureThreshold: %d must be between 1 and 100 (0: the default, 3)", hc.FailureThreshold)
		}
		s.threshold = hc.FailureThreshold
	}
	return s, nil
}

// target is the configured target of kind by name, or nil.
func (g *Gateway) target(kind, name string) *targetRuntime {
	if kind == targetMCP {
		return g.cfg.mcpServers[name]
	}
	return g.cfg.agents[name]
}

// targetNames are the configured names of kind, sorted.
func (g *Gateway) targetNames(kind string) []string {
	if kind == targetMCP {
		return g.cfg.mcpNames
	}
	return g.cfg.agentNames
}

// canReach reports whether the user may reach t: some member group's
// mcpServers (or agents) list admits its name.
func (u *userRuntime) canReach(t *targetRuntime) bool {
	for i := 0; i < len(u.grants); i++ {
		gr := u.grants[i]
		if gr.personal {
			continue
		}
		patterns := gr.mcpServers
		if t.kind == targetAgent {
			patterns = gr.agents
		}
		if matchesAny(patterns, t.name) {
			return true
		}
	}
	return false
}

// allowsTool reports whether some member group's mcpTools admit the
// federated tool name ("<server>_<tool>").
func (u *userRuntime) allowsTool(federated string) bool {
	for i := 0; i < len(u.grants); i++ {
		gr := u.grants[i]
		if !gr.personal && matchesAny(gr.mcpTools, federated) {
			return true
		}
	}
	return false
}

// reachableTargets are the targets of kind the user may reach, by name.
func (g *Gateway) reachableTargets(u *userRuntime, kind string) []*targetRuntime {
	names := g.targetNames(kind)
	var out []*targetRuntime
	for i := 0; i < len(names); i++ {
		if t := g.target(kind, names[i]); u.canReach(t) {
			out = append(out, t)
		}
	}
	return out
}

// targetAccess is the names of the groups that reach t: nil when every
// configured group does, [] when none (the admin targets route).
func (g *Gateway) targetAccess(t *targetRuntime) []string {
	names := sortedGroupNames(g.cfg.groups)
	out := []string{}
	for i := 0; i < len(names); i++ {
		gr := g.cfg.groups[names[i]]
		patterns := gr.mcpServers
		if t.kind == targetAgent {
			patterns = gr.agents
		}
		if matchesAny(patterns, t.name) {
			out = append(out, names[i])
		}
	}
	if len(out) == len(names) {
		return nil
	}
	return out
}

// targetPrefix is t's counter key prefix.
func targetPrefix(t *targetRuntime) string {
	return "llmgw:target:" + t.kind + ":" + statsID(t.name) + ":"
}

// targetCallerPrefix is t's per-caller counter key prefix.
func targetCallerPrefix(t *targetRuntime, user string) string {
	return "llmgw:tcaller:" + t.kind + ":" + statsID(t.name) + ":" + statsID(user) + ":"
}

// appendTargetIncrs appends one request's counters of t for user.
func appendTargetIncrs(incrs []store.Incr, t *targetRuntime, user string, now time.Time) []store.Incr {
	b := bucketsAt(now)
	p := targetPrefix(t)
	incrs = append(incrs,
		store.Incr{Key: p + "req:min:" + b.of(minuteWindow), Delta: 1, TTL: minuteWindow.ttl},
		store.Incr{Key: p + "req:day:" + b.of(dayWindow), Delta: 1, TTL: dayWindow.ttl},
		store.Incr{Key: p + "req:month:" + b.of(monthWindow), Delta: 1, TTL: monthWindow.ttl})
	if user != "" {
		cp := targetCallerPrefix(t, user)
		incrs = append(incrs,
			store.Incr{Key: cp + "req:day:" + b.of(dayWindow), Delta: 1, TTL: dayWindow.ttl},
			store.Incr{Key: cp + "req:month:" + b.of(monthWindow), Delta: 1, TTL: monthWindow.ttl})
	}
	return incrs
}

// countTargets writes one request's target counters: every target it
// attempted, one batch.
func (g *Gateway) countTargets(user string, attempted []*targetRuntime) {
	if len(attempted) == 0 {
		return
	}
	now := g.limiter.now()
	var incrs []store.Incr
	for i := 0; i < len(attempted); i++ {
		incrs = appendTargetIncrs(incrs, attempted[i], user, now)
	}
	writeStats(g.limiter, incrs)
}
