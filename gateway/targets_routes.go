package gateway

import (
	"net/http"
	"strings"
)

// The target routes: the registry (GET /v1/mcp/servers, GET /v1/agents),
// the per-target proxy (/mcp/{name}/..., /a2a/{name}/...: mcp_proxy.go)
// and the federated MCP endpoint (POST /mcp: mcp_federated.go).

// serveTargetRoute answers p when it is a target route; false otherwise.
func (g *Gateway) serveTargetRoute(w http.ResponseWriter, r *http.Request, p string) bool {
	switch {
	case p == "/v1/mcp/servers":
		g.serveTargetRegistry(w, r, targetMCP)
	case p == "/v1/agents":
		g.serveTargetRegistry(w, r, targetAgent)
	case p == "/mcp":
		g.serveFederatedMCP(w, r, startTrace(w, r))
	case strings.HasPrefix(p, "/mcp/"):
		g.serveTargetProxy(w, r, targetMCP, strings.TrimPrefix(p, "/mcp/"), startTrace(w, r))
	case strings.HasPrefix(p, "/a2a/"):
		g.serveTargetProxy(w, r, targetAgent, strings.TrimPrefix(p, "/a2a/"), startTrace(w, r))
	default:
		return false
	}
	return true
}

// registryServer and registryAgent are the registry's entries.
type registryServer struct {
	Name string `json:"name"`
	URL  string `json:"url"`
}

type registryAgent struct {
	Name string `json:"name"`
	URL  string `json:"url"`
	// Card is the agent card's gateway path (/a2a/{name}{card}).
	Card string `json:"card"`
}

// serveTargetRegistry is GET /v1/mcp/servers or GET /v1/agents: the
// targets the caller's groups reach, sorted by name, URLs without
// userinfo or query. Not counted (like /v1/models).
func (g *Gateway) serveTargetRegistry(w http.ResponseWriter, r *http.Request, kind string) {
	tr := startTrace(w, r)
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		defaultFormat.writeError(w, errMethodNotAllowed(r.Method, r.URL.Path, http.MethodGet))
		return
	}
	user, e := authenticate(g, r, tr)
	if e != nil {
		defaultFormat.writeError(w, e)
		return
	}
	g.maybeSweepTargets()
	targets := g.reachableTargets(user, kind)
	if kind == targetMCP {
		out := struct {
			Servers []registryServer `json:"servers"`
		}{Servers: make([]registryServer, 0, len(targets))}
		for i := 0; i < len(targets); i++ {
			out.Servers = append(out.Servers, registryServer{Name: targets[i].name, URL: targets[i].display})
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	out := struct {
		Agents []registryAgent `json:"agents"`
	}{Agents: make([]registryAgent, 0, len(targets))}
	for i := 0; i < len(targets); i++ {
		t := targets[i]
		out.Agents = append(out.Agents, registryAgent{Name: t.name, URL: t.display, Card: "/a2a/" + t.name + t.card})
	}
	writeJSON(w, http.StatusOK, out)
}
