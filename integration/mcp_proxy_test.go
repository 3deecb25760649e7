package integration_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The per-target proxy (/mcp/{name}/...) between the official MCP Go SDK
// (v1.8.0) client and its servers, all on loopback, through the gateway
// binary: a stateless Streamable HTTP server answering JSON, one with
// sessions answering SSE, and a legacy HTTP+SSE server (SSEHandler)
// reached with the SDK's SSE client transport.

const mcpProxyKey = "sk-mcp-proxy-alice"

// weatherIn and weatherOut are the tool's typed input and output.
type weatherIn struct {
	City string `json:"city" jsonschema:"the city"`
}

type weatherOut struct {
	TempC  int    `json:"temp_c"`
	Server string `json:"server"`
}

// newWeatherServer is an MCP server with one tool, get_weather, whose
// answer names the server.
func newWeatherServer(name string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "get_weather", Description: "Current weather"},
		func(ctx context.Context, req *mcp.CallToolRequest, in weatherIn) (*mcp.CallToolResult, weatherOut, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.City + ": 18 C from " + name}}},
				weatherOut{TempC: 18, Server: name}, nil
		})
	return s
}

// headerLog records, per target, what the proxied requests carried.
type headerLog struct {
	mu       sync.Mutex
	sessions map[string]bool // Mcp-Session-Id values seen
	auth     []string        // Authorization values seen
	methods  map[string]int
}

func (l *headerLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		if l.sessions == nil {
			l.sessions = map[string]bool{}
			l.methods = map[string]int{}
		}
		if s := r.Header.Get("Mcp-Session-Id"); s != "" {
			l.sessions[s] = true
		}
		l.auth = append(l.auth, r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"))
		l.methods[r.Method]++
		l.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (l *headerLog) snapshot() (map[string]bool, []string, map[string]int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := map[string]bool{}
	for k := range l.sessions {
		s[k] = true
	}
	m := map[string]int{}
	for k, v := range l.methods {
		m[k] = v
	}
	return s, append([]string(nil), l.auth...), m
}

// keyTransport adds the gateway key to every request.
type keyTransport struct{ key string }

func (k keyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+k.key)
	return http.DefaultTransport.RoundTrip(r)
}

func gatewayHTTPClient(key string) *http.Client {
	return &http.Client{Transport: keyTransport{key: key}, Timeout: 60 * time.Second}
}

func TestMCPProxySDK(t *testing.T) {
	bin := buildGatewayBinary(t)

	var statelessLog, sessionLog, legacyLog headerLog
	statelessMux := http.NewServeMux()
	statelessMux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return newWeatherServer("stateless") },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	stateless := httptest.NewServer(statelessLog.wrap(statelessMux))
	t.Cleanup(stateless.Close)

	sessionServer := newWeatherServer("sessions")
	sessionMux := http.NewServeMux()
	sessionMux.Handle("/api/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return sessionServer }, nil))
	withSessions := httptest.NewServer(sessionLog.wrap(sessionMux))
	t.Cleanup(withSessions.Close)

	legacyServer := newWeatherServer("legacy")
	legacyMux := http.NewServeMux()
	legacyMux.Handle("/v0/sse", mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return legacyServer }, nil))
	legacy := httptest.NewServer(legacyLog.wrap(legacyMux))
	t.Cleanup(legacy.Close)

	gw := startGateway(t, bin, map[string]interface{}{
		"providers": map[string]interface{}{"p": map[string]interface{}{"type": "openai", "baseUrl": "http://127.0.0.1:9"}},
		"mcpServers": map[string]interface{}{
			"stateless": map[string]interface{}{"url": stateless.URL + "/mcp"},
			"sessions":  map[string]interface{}{"url": withSessions.URL + "/api/mcp"},
			"legacy":    map[string]interface{}{"url": legacy.URL + "/v0/sse"},
		},
		"groups": map[string]interface{}{"all": map[string]interface{}{}, "none": map[string]interface{}{"mcpServers": []interface{}{"nothing"}}},
		"users": map[string]interface{}{"inline": []interface{}{
			map[string]interface{}{"name": "alice", "group": "all", "apiKey": mcpProxyKey},
			map[string]interface{}{"name": "bob", "group": "none", "apiKey": "sk-mcp-proxy-bob"},
		}},
	})

	cases := []struct {
		name, target, endpoint string
		sse, wantSession       bool
	}{
		{name: "stateless", target: "stateless", endpoint: "/mcp/stateless/"},
		{name: "sessions", target: "sessions", endpoint: "/mcp/sessions/", wantSession: true},
		{name: "legacy_sse", target: "legacy", endpoint: "/mcp/legacy/sse", sse: true, wantSession: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			hc := gatewayHTTPClient(mcpProxyKey)
			var transport mcp.Transport = &mcp.StreamableClientTransport{Endpoint: gw.URL + tc.endpoint, HTTPClient: hc, MaxRetries: -1}
			if tc.sse {
				transport = &mcp.SSEClientTransport{Endpoint: gw.URL + tc.endpoint, HTTPClient: hc}
			}
			client := mcp.NewClient(&mcp.Implementation{Name: "llmgateway-it", Version: "1.0.0"}, nil)
			cs, err := client.Connect(ctx, transport, nil)
			require.NoError(t, err, "initialize through the proxy")
			if tc.wantSession && !tc.sse {
				assert.NotEmpty(t, cs.ID(), "the session's Mcp-Session-Id reached the client")
			}
			tools, err := cs.ListTools(ctx, nil)
			require.NoError(t, err, "tools/list")
			names := []string{}
			for _, tl := range tools.Tools {
				names = append(names, tl.Name)
			}
			sort.Strings(names)
			assert.Equal(t, []string{"get_weather"}, names)
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_weather", Arguments: map[string]interface{}{"city": "Paris"}})
			require.NoError(t, err, "tools/call")
			require.False(t, res.IsError, "tool error: %+v", res.Content)
			require.Len(t, res.Content, 1)
			text, ok := res.Content[0].(*mcp.TextContent)
			require.True(t, ok, "content %T", res.Content[0])
			assert.Equal(t, "Paris: 18 C from "+tc.target, text.Text)
			id := cs.ID()
			require.NoError(t, cs.Close())

			var log *headerLog
			switch tc.target {
			case "stateless":
				log = &statelessLog
			case "sessions":
				log = &sessionLog
			default:
				log = &legacyLog
			}
			sessions, auth, methods := log.snapshot()
			for _, a := range auth {
				assert.NotContains(t, a, mcpProxyKey, "the gateway key reached the MCP server")
			}
			if tc.wantSession && !tc.sse {
				assert.True(t, sessions[id], "the server saw the client's Mcp-Session-Id %q (saw %v)", id, sessions)
				assert.Positive(t, methods["DELETE"], "the session's DELETE went through the proxy: %v", methods)
			}
			if tc.target == "stateless" {
				assert.Empty(t, sessions, "a stateless server gets no session")
			}
			if tc.sse {
				assert.Positive(t, methods["GET"], "the SSE stream: %v", methods)
				assert.Positive(t, methods["POST"], "the posts to the rewritten endpoint: %v", methods)
			}
		})
	}

	t.Run("denied_target_is_403", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		client := mcp.NewClient(&mcp.Implementation{Name: "llmgateway-it", Version: "1.0.0"}, nil)
		_, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: gw.URL + "/mcp/stateless/", HTTPClient: gatewayHTTPClient("sk-mcp-proxy-bob"), MaxRetries: -1}, nil)
		require.Error(t, err)
		resp, err := gatewayHTTPClient("sk-mcp-proxy-bob").Post(gw.URL+"/mcp/stateless/", "application/json",
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	})

	t.Run("access_log", func(t *testing.T) {
		// Every proxied call was authenticated and logged with the
		// route's name and the target.
		logs := gw.Logs()
		for _, target := range []string{"stateless", "sessions", "legacy"} {
			assert.Contains(t, logs, fmt.Sprintf("path=\"/mcp/%s/", target))
		}
		assert.NotContains(t, logs, mcpProxyKey)
	})
}
