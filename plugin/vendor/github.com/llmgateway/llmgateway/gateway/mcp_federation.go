package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// The federation behind POST /mcp (mcp_federated.go), also used by the
// tool-calling loop: the tools a user may list and call through it
// (federatedTools), a tool call routed to its server
// (callFederatedTool), and the gateway's book of cached listings.
//
// A user's federated servers are the MCP servers its groups reach, the
// legacy HTTP+SSE ones (URL path ending in /sse) excluded. tools/list
// fans out to them concurrently, each under federatedListTimeout, every
// tool renamed "<server>_<tool>" and filtered by the groups' mcpTools,
// merged in server-name order; a server that fails is skipped (logged
// once per failure streak), and when every one fails the listing fails.
// A server's listing is cached for federatedToolsTTL: a cached server is
// not contacted, so not counted. tools/call resolves the server by the
// longest "<server>_" prefix of the name, strips it, and forwards the
// call under federatedCallTimeout. Every server contacted counts in its
// target counters (one batch per listing or call) and its outcome in its
// health (source "passive").

// federatedTool is one tool of the federation: name is
// "<server>_<tool>", server and tool the backend's names, raw the tool
// object as tools/list answers it (every member the backend sent,
// renamed). Shared by the requests that read a cached listing:
// read-only.
type federatedTool struct {
	name        string
	description string
	inputSchema json.RawMessage
	server      string
	tool        string
	raw         json.RawMessage
}

// mcpToolError is the error of federatedTools and callFederatedTool: a
// JSON-RPC code and message — rpcInvalidParams for a tool nothing
// routes, rpcInternalError when the server (for tools/list, every
// server) failed, or the backend's own error, data as it sent it.
type mcpToolError struct {
	code    int64
	message string
	data    json.RawMessage
}

func (e *mcpToolError) Error() string {
	return "mcp: " + e.message + " (JSON-RPC error " + strconv.FormatInt(e.code, 10) + ")"
}

// federatedServers are the MCP servers the user reaches that federation
// serves (not the legacy HTTP+SSE ones), by name.
func federatedServers(g *Gateway, user *userRuntime) []*targetRuntime {
	all := g.reachableTargets(user, targetMCP)
	out := make([]*targetRuntime, 0, len(all))
	for i := 0; i < len(all); i++ {
		if !all[i].legacySSE {
			out = append(out, all[i])
		}
	}
	return out
}

// serverListing is one server's part of a fan-out.
type serverListing struct {
	tools   []federatedTool
	failure *mcpFailure
	cached  bool
	sent    int
}

// federatedListing is a tools/list fan-out's outcome: the caller's tools
// in server-name order; allFailed when no server answered (failures by
// server, class the last one's); sent, the HTTP requests made.
type federatedListing struct {
	tools     []federatedTool
	allFailed bool
	failures  map[string]string
	class     apierr.Class
	sent      int
}

// federatedTools is every tool the user may list and call through
// federation (for the tool-calling loop): an mcpToolError when every
// reachable server failed; none, without error, when the user reaches
// no server. The tools are shared: read-only.
func (g *Gateway) federatedTools(ctx context.Context, user *userRuntime, tr *requestTrace) ([]federatedTool, error) {
	l := listFederatedTools(g, ctx, user, tr)
	if l.allFailed {
		return nil, &mcpToolError{code: rpcInternalError, message: "no MCP server reachable"}
	}
	return l.tools, nil
}

// listFederatedTools is the tools/list fan-out: each server's cached
// listing when fresh, else its own listing, concurrently; the tools the
// user's mcpTools allow, merged in server-name order. The servers
// actually contacted are counted in their target counters, one batch.
func listFederatedTools(g *Gateway, ctx context.Context, user *userRuntime, tr *requestTrace) *federatedListing {
	servers := federatedServers(g, user)
	out := &federatedListing{tools: []federatedTool{}}
	if len(servers) == 0 {
		return out
	}
	lists := make([]serverListing, len(servers))
	var wg sync.WaitGroup
	for i := 0; i < len(servers); i++ {
		tools, fresh, gen := cachedTools(&g.mcp, servers[i].name)
		if fresh {
			lists[i].tools = tools
			lists[i].cached = true
			continue
		}
		wg.Add(1)
		go fetchServerListing(g, ctx, servers[i], tr, gen, &lists[i], &wg)
	}
	wg.Wait()
	var attempted []*targetRuntime
	answered := 0
	for i := 0; i < len(servers); i++ {
		l := &lists[i]
		if !l.cached {
			attempted = append(attempted, servers[i])
			out.sent += l.sent
		}
		if l.failure != nil {
			if out.failures == nil {
				out.failures = map[string]string{}
			}
			out.failures[servers[i].name] = l.failure.message
			out.class = l.failure.class
			continue
		}
		answered++
		for j := 0; j < len(l.tools); j++ {
			if user.allowsTool(l.tools[j].name) {
				out.tools = append(out.tools, l.tools[j])
			}
		}
	}
	g.countTargets(user.name, attempted)
	out.allFailed = answered == 0
	return out
}

// fetchServerListing lists one server's tools into out (a fan-out
// goroutine: it recovers, and marks wg done).
func fetchServerListing(g *Gateway, ctx context.Context, t *targetRuntime, tr *requestTrace, gen int64, out *serverListing, wg *sync.WaitGroup) {
	defer func() {
		if r := recover(); r != nil {
			out.failure = &mcpFailure{message: "internal error", class: apierr.ClassBadResponse}
			logBackgroundPanic(g.log, "mcp tools/list fan-out", tr.logTail, r)
		}
		wg.Done()
	}()
	timeout := federatedListTimeout
	if g.mcp.listTimeout > 0 {
		timeout = g.mcp.listTimeout
	}
	tools, f, sent := listServerTools(g, ctx, t, tr, timeout, gen)
	out.tools = tools
	out.failure = f
	out.sent = sent
	if f == nil || f.class != apierr.ClassClientCancel {
		noteServerOutcome(g, t, f, "tools/list", tr)
	}
}

// toolCallOutcome is a federated tools/call's outcome: unresolved (no
// server routes the name), the server's failure, its JSON-RPC error, or
// its result; sent, the HTTP requests made.
type toolCallOutcome struct {
	server     *targetRuntime
	unresolved bool
	failure    *mcpFailure
	rpcError   json.RawMessage
	result     json.RawMessage
	sent       int
}

// callFederatedTool calls the federated tool name with arguments (for
// the tool-calling loop) and returns its CallToolResult, as the server
// sent it; an mcpToolError otherwise.
func (g *Gateway) callFederatedTool(ctx context.Context, user *userRuntime, name string, arguments json.RawMessage, tr *requestTrace) (json.RawMessage, error) {
	if len(bytes.TrimSpace(arguments)) == 0 {
		arguments = json.RawMessage(`{}`)
	}
	params, err := json.Marshal(map[string]json.RawMessage{"name": jsonString(name), "arguments": arguments})
	if err != nil {
		return nil, &mcpToolError{code: rpcInvalidParams, message: "the arguments are not JSON"}
	}
	o := federatedCall(g, ctx, user, name, params, tr)
	switch {
	case o.unresolved:
		return nil, &mcpToolError{code: rpcInvalidParams, message: "unknown tool " + strconv.Quote(name)}
	case o.failure != nil:
		return nil, &mcpToolError{code: rpcInternalError, message: "mcp server " + strconv.Quote(o.server.name) + " failed: " + o.failure.message}
	case o.rpcError != nil:
		var e mcpWireError
		_ = json.Unmarshal(o.rpcError, &e)
		te := &mcpToolError{code: rpcInternalError, message: e.Message, data: e.Data}
		if e.Code != nil {
			te.code = *e.Code
		}
		return nil, te
	}
	return o.result, nil
}

// federatedCall resolves name to a server (longest "<server>_" prefix
// among the user's federated servers, the tool allowed by mcpTools) and
// forwards the call, params renamed, under federatedCallTimeout.
func federatedCall(g *Gateway, ctx context.Context, user *userRuntime, name string, params json.RawMessage, tr *requestTrace) *toolCallOutcome {
	t, tool := resolveFederatedTool(federatedServers(g, user), name)
	if t == nil || !user.allowsTool(name) {
		return &toolCallOutcome{unresolved: true}
	}
	out := &toolCallOutcome{server: t}
	fwd, ok := forwardedCallParams(params, tool)
	if !ok {
		return &toolCallOutcome{unresolved: true}
	}
	g.countTargets(user.name, []*targetRuntime{t})
	timeout := federatedCallTimeout
	if g.mcp.callTimeout > 0 {
		timeout = g.mcp.callTimeout
	}
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	x := newMCPExchange(g, t, tr, callCtx, ctx, timeout)
	started := time.Now()
	a, f := mcpCall(x, "tools/call", fwd)
	if f == nil && a.rpcError == nil && !isJSONObject(a.result) {
		f = &mcpFailure{message: "the tools/call result is not an object", class: apierr.ClassBadResponse}
	}
	observeMCP(g, x, f, started)
	mcpClose(x)
	out.sent = x.sent
	if f == nil || f.class != apierr.ClassClientCancel {
		noteServerOutcome(g, t, f, "tools/call", tr)
	}
	if f != nil {
		out.failure = f
		return out
	}
	if a.listChanged {
		invalidateTools(&g.mcp, t.name)
	}
	// A JSON-RPC error is an error answer: the target's own credentials
	// quoted in it are redacted, as in a proxied error answer.
	if a.rpcError != nil {
		out.rpcError = json.RawMessage(redactTargetSecrets([]byte(a.rpcError), t))
	}
	out.result = a.result
	return out
}

// resolveFederatedTool is the server whose "<name>_" is the longest
// prefix of tool name, and the name without it (nil when none).
func resolveFederatedTool(servers []*targetRuntime, name string) (*targetRuntime, string) {
	var best *targetRuntime
	for i := 0; i < len(servers); i++ {
		s := servers[i].name
		if len(name) > len(s)+1 && name[len(s)] == '_' && strings.HasPrefix(name, s) && (best == nil || len(s) > len(best.name)) {
			best = servers[i]
		}
	}
	if best == nil {
		return nil, ""
	}
	return best, name[len(best.name)+1:]
}

// forwardedCallParams are the caller's tools/call params for the
// server: its own tool name, and _meta without the stateless dialect's
// keys (the gateway speaks the session dialect to servers); every other
// member as sent.
func forwardedCallParams(params json.RawMessage, tool string) (json.RawMessage, bool) {
	var p map[string]json.RawMessage
	if json.Unmarshal(params, &p) != nil || p == nil {
		return nil, false
	}
	p["name"] = jsonString(tool)
	if meta, ok := p["_meta"]; ok {
		var mm map[string]json.RawMessage
		if json.Unmarshal(meta, &mm) != nil {
			delete(p, "_meta")
		} else {
			for k := range mm {
				if strings.HasPrefix(k, mcpMetaPrefix) {
					delete(mm, k)
				}
			}
			if len(mm) == 0 {
				delete(p, "_meta")
			} else if data, err := json.Marshal(mm); err == nil {
				p["_meta"] = data
			}
		}
	}
	data, err := json.Marshal(p)
	if err != nil {
		return nil, false
	}
	return data, true
}

// isJSONObject reports whether raw is a JSON object.
func isJSONObject(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) >= 2 && t[0] == '{'
}

// federationState is the gateway's federation book: each server's cached
// tools/list, a generation per server that an invalidation bumps (a
// listing fetched across an invalidation is not stored), and the servers
// whose current failure streak was logged — at most one entry of each
// per configured server. Its zero value is ready; now is the clock (nil:
// time.Now; tests set it).
type federationState struct {
	mu      sync.Mutex
	lists   map[string]*toolsEntry
	gens    map[string]int64
	failing map[string]bool
	now     func() time.Time
	// listTimeout and callTimeout replace federatedListTimeout and
	// federatedCallTimeout when set (tests).
	listTimeout time.Duration
	callTimeout time.Duration
}

// toolsEntry is one server's cached tools (read-only once stored).
type toolsEntry struct {
	tools []federatedTool
	at    time.Time
}

func (s *federationState) clock() time.Time {
	if s.now != nil {
		return s.now()
	}
	return time.Now()
}

// cachedTools is the server's cached tools when fresh, and the
// generation a new listing must be stored under.
func cachedTools(s *federationState, name string) ([]federatedTool, bool, int64) {
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	gen := s.gens[name]
	if e := s.lists[name]; e != nil && now.Sub(e.at) < federatedToolsTTL && !now.Before(e.at) {
		return e.tools, true, gen
	}
	return nil, false, gen
}

// storeTools caches a server's listing unless it was invalidated since
// the listing began (gen).
func storeTools(s *federationState, name string, gen int64, tools []federatedTool) {
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gens[name] != gen {
		return
	}
	if s.lists == nil {
		s.lists = map[string]*toolsEntry{}
	}
	s.lists[name] = &toolsEntry{tools: tools, at: now}
}

// invalidateTools drops a server's cached listing (a backend said
// notifications/tools/list_changed).
func invalidateTools(s *federationState, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gens == nil {
		s.gens = map[string]int64{}
	}
	s.gens[name]++
	delete(s.lists, name)
}

// noteServerOutcome logs a server's failure once per failure streak (the
// first failure after a success, or ever), and its recovery.
func noteServerOutcome(g *Gateway, t *targetRuntime, f *mcpFailure, what string, tr *requestTrace) {
	s := &g.mcp
	s.mu.Lock()
	logged := s.failing[t.name]
	if f == nil {
		delete(s.failing, t.name)
	} else if !logged {
		if s.failing == nil {
			s.failing = map[string]bool{}
		}
		s.failing[t.name] = true
	}
	s.mu.Unlock()
	if f != nil && !logged {
		g.log.line("WARN", "federated "+what+": mcp server "+strconv.Quote(t.name)+" failed: "+f.message+
			" (logged once until it answers again)"+tr.logTail)
	} else if f == nil && logged {
		g.log.line("INFO", "federated "+what+": mcp server "+strconv.Quote(t.name)+" answers again"+tr.logTail)
	}
}
