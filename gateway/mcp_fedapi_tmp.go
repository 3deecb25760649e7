package gateway

// TEMPORARY: a minimal stand-in for the federation's two functions
// (mcp_federated.go), so the tool loop compiles and its tests run. The
// real federation replaces this file when the branches merge; nothing
// outside mcp_loop*.go uses it. JSON answers only, no session
// handshake, no cache.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"
)

// federatedTool is one tool of a reachable MCP server under its
// federated name.
type federatedTool struct {
	name        string // "<server>_<tool>"
	description string
	inputSchema json.RawMessage
	server      *targetRuntime
	tool        string
}

// federatedTools lists the tools of every MCP server the user reaches
// (tools/list on each, a failing server skipped), filtered by mcpTools.
func (g *Gateway) federatedTools(ctx context.Context, user *userRuntime, tr *requestTrace) ([]federatedTool, error) {
	servers := g.reachableTargets(user, targetMCP)
	var out []federatedTool
	reached := false
	for i := 0; i < len(servers); i++ {
		t := servers[i]
		if t.legacySSE {
			continue
		}
		var res struct {
			Tools []struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				InputSchema json.RawMessage `json:"inputSchema"`
			} `json:"tools"`
		}
		if err := tmpRPC(ctx, g, t, "tools/list", json.RawMessage(`{}`), tr, &res); err != nil {
			continue
		}
		reached = true
		for j := 0; j < len(res.Tools); j++ {
			tl := res.Tools[j]
			name := t.name + "_" + tl.Name
			if !user.allowsTool(name) {
				continue
			}
			out = append(out, federatedTool{name: name, description: tl.Description, inputSchema: tl.InputSchema, server: t, tool: tl.Name})
		}
	}
	if !reached && len(servers) > 0 {
		return nil, errors.New("no MCP server reachable")
	}
	return out, nil
}

// callFederatedTool calls a federated tool by its name (longest
// "<server>_" prefix) and returns the CallToolResult.
func (g *Gateway) callFederatedTool(ctx context.Context, user *userRuntime, name string, arguments json.RawMessage, tr *requestTrace) (json.RawMessage, error) {
	var server *targetRuntime
	servers := g.reachableTargets(user, targetMCP)
	for i := 0; i < len(servers); i++ {
		t := servers[i]
		if !t.legacySSE && strings.HasPrefix(name, t.name+"_") && (server == nil || len(t.name) > len(server.name)) {
			server = t
		}
	}
	if server == nil || !user.allowsTool(name) {
		return nil, errors.New("unknown tool")
	}
	params, _ := json.Marshal(struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}{strings.TrimPrefix(name, server.name+"_"), arguments})
	var res json.RawMessage
	if err := tmpRPC(ctx, g, server, "tools/call", params, tr, &res); err != nil {
		return nil, err
	}
	return res, nil
}

// tmpRPC POSTs one JSON-RPC request to t and decodes its result.
func tmpRPC(ctx context.Context, g *Gateway, t *targetRuntime, method string, params json.RawMessage, tr *requestTrace, result interface{}) error {
	body, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      int             `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
	}{"2.0", 1, method, params})
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.base.String(), bytes.NewReader(body))
	if err != nil {
		return errors.New("bad target URL")
	}
	for k, v := range t.header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	setUpstreamTrace(req.Header, tr, 1)
	resp, err := g.transport.RoundTrip(req)
	if err != nil {
		return errors.New("connection failed")
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return errors.New("HTTP " + resp.Status)
	}
	var env struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &env) != nil {
		return errors.New("not a JSON-RPC answer")
	}
	if env.Error != nil {
		return errors.New("JSON-RPC error: " + env.Error.Message)
	}
	if len(env.Result) == 0 {
		return errors.New("no result")
	}
	return json.Unmarshal(env.Result, result)
}
