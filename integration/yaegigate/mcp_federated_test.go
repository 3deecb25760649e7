package yaegigate_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The federated POST /mcp in the plugin form (gateway/mcp_federated.go,
// mcp_federation.go, mcp_client.go as the plugin vendors them): three
// MCP Go SDK v1.8.0 servers — stateless answering JSON, one that needs a
// session, stateless answering with an event stream — behind the
// gateway; a federated tools/list and tools/call in plain JSON-RPC, then
// the SDK client through /mcp in the stateless dialect (server/discover)
// and the session one (initialize). The same scenario runs under the
// interpreter (TestYaegiInterpreterFederatedMCP), Traefik's loader
// (TestTraefikLoaderFederatedMCP) and a real Traefik
// (TestRealTraefikFederatedMCP).

// fedServer is one SDK server behind the gateway.
type fedServer struct {
	name string
	srv  *httptest.Server
	// keyed counts requests that reached it with the gateway key.
	keyed atomic.Int64
}

type fedEchoIn struct {
	Text string `json:"text"`
}

func startFedServer(t *testing.T, name string, opts *mcp.StreamableHTTPOptions) *fedServer {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: name + " echoes"}, func(ctx context.Context, req *mcp.CallToolRequest, in fedEchoIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " says " + in.Text}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, opts)
	f := &fedServer{name: name}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" || r.Header.Get("X-Api-Key") != "" {
			f.keyed.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// fedConfig is the plugin configuration: alice reaching the servers.
func fedConfig(servers []*fedServer) map[string]interface{} {
	mcpServers := map[string]interface{}{}
	for _, s := range servers {
		mcpServers[s.name] = map[string]interface{}{"url": s.srv.URL}
	}
	return map[string]interface{}{
		"providers":  map[string]interface{}{"mock": map[string]interface{}{"type": "openai", "baseUrl": "http://127.0.0.1:9", "models": []interface{}{"m"}}},
		"groups":     map[string]interface{}{"default": map[string]interface{}{"providers": []interface{}{}}},
		"users":      map[string]interface{}{"inline": []interface{}{map[string]interface{}{"name": "alice", "group": "default", "apiKey": userKey}}},
		"mcpServers": mcpServers,
	}
}

// fedKeyTransport adds the gateway key to the SDK client's requests.
type fedKeyTransport struct{}

func (fedKeyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+userKey)
	return http.DefaultTransport.RoundTrip(r)
}

// fedRPC posts one JSON-RPC request to /mcp and returns the result.
func fedRPC(t *testing.T, base string, id int, method string, params interface{}) json.RawMessage {
	t.Helper()
	body := map[string]interface{}{"jsonrpc": "2.0", "id": id, "method": method, "params": params}
	resp, data := newScenarioClient(base).do(t, http.MethodPost, "/mcp", body, bearer(userKey))
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", method, data)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var out struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	require.NoError(t, json.Unmarshal(data, &out), "%s: %s", method, data)
	require.Equal(t, strconv.Itoa(id), string(out.ID), "%s: the caller's id", method)
	require.Empty(t, out.Error, "%s: %s", method, data)
	return out.Result
}

// runFederatedMCPScenario runs the scenario against a gateway front
// builds.
func runFederatedMCPScenario(t *testing.T, front routeFront) {
	servers := []*fedServer{
		startFedServer(t, "plain", &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}),
		startFedServer(t, "sess", &mcp.StreamableHTTPOptions{JSONResponse: true}),
		startFedServer(t, "stream", &mcp.StreamableHTTPOptions{Stateless: true}),
	}
	base := front(t, fedConfig(servers))
	want := []string{"plain_echo", "sess_echo", "stream_echo"}

	t.Run("json-rpc", func(t *testing.T) {
		var init struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		require.NoError(t, json.Unmarshal(fedRPC(t, base, 1, "initialize", map[string]interface{}{"protocolVersion": "2025-06-18"}), &init))
		assert.Equal(t, "2025-06-18", init.ProtocolVersion)
		var list struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		require.NoError(t, json.Unmarshal(fedRPC(t, base, 2, "tools/list", map[string]interface{}{}), &list))
		var names []string
		for _, tool := range list.Tools {
			names = append(names, tool.Name)
		}
		assert.Equal(t, want, names, "server-name order")
		for i, s := range servers {
			var res struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			}
			raw := fedRPC(t, base, 10+i, "tools/call", map[string]interface{}{"name": s.name + "_echo", "arguments": map[string]interface{}{"text": "raw"}})
			require.NoError(t, json.Unmarshal(raw, &res))
			require.Len(t, res.Content, 1, "%s: %s", s.name, raw)
			assert.Equal(t, s.name+" says raw", res.Content[0].Text)
		}
	})

	for _, dialect := range []struct{ name, version, negotiated string }{
		{"sdk stateless", "", "2026-07-28"},
		{"sdk session", "2025-11-25", "2025-11-25"},
	} {
		t.Run(dialect.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
			defer cancel()
			client := mcp.NewClient(&mcp.Implementation{Name: "yaegigate", Version: "1.0.0"}, nil)
			transport := &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: fedKeyTransport{}}, MaxRetries: -1}
			cs, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: dialect.version})
			require.NoError(t, err)
			defer cs.Close()
			assert.Equal(t, dialect.negotiated, cs.InitializeResult().ProtocolVersion)
			list, err := cs.ListTools(ctx, nil)
			require.NoError(t, err)
			var names []string
			for _, tool := range list.Tools {
				names = append(names, tool.Name)
			}
			sort.Strings(names)
			assert.Equal(t, want, names)
			for _, s := range servers {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: s.name + "_echo", Arguments: map[string]any{"text": dialect.name}})
				require.NoError(t, err, s.name)
				require.Len(t, res.Content, 1, s.name)
				text, ok := res.Content[0].(*mcp.TextContent)
				require.True(t, ok, "%s: %T", s.name, res.Content[0])
				assert.Equal(t, s.name+" says "+dialect.name, text.Text)
			}
		})
	}
	for _, s := range servers {
		assert.Zero(t, s.keyed.Load(), "%s received the gateway key", s.name)
	}
}

// TestYaegiInterpreterFederatedMCP runs the scenario through the plugin
// interpreted by Yaegi.
func TestYaegiInterpreterFederatedMCP(t *testing.T) {
	p := loadInterpreted(t)
	runFederatedMCPScenario(t, interpretedFront(p, "llmgateway-mcp-federated"))
	if t.Failed() {
		t.Logf("interpreter output:\n%s", p.output.String())
	}
}

// TestTraefikLoaderFederatedMCP runs the scenario through the middleware
// built by Traefik's loader.
func TestTraefikLoaderFederatedMCP(t *testing.T) {
	runFederatedMCPScenario(t, loaderFront)
}

// TestRealTraefikFederatedMCP runs the scenario through a real Traefik
// v3.6.12 loading the plugin (LLMGW_REAL_TRAEFIK=1).
func TestRealTraefikFederatedMCP(t *testing.T) {
	runFederatedMCPScenario(t, realTraefikFront(traefikBinary(t)))
}
