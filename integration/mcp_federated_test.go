package integration_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The federated POST /mcp with the official MCP Go SDK v1.8.0 on both
// sides: three StreamableHTTPHandler servers behind the gateway binary —
// one stateless answering JSON, one that needs a session (stateful,
// answering JSON), one stateless answering with an event stream — and
// the SDK client through /mcp, negotiating the stateless 2026-07-28
// dialect (server/discover) by default and the session dialect
// (initialize) when asked for 2025-11-25.

const mcpFedKey = "sk-mcp-fed-alice-0001"

// mcpBackend is one SDK server behind the gateway, and what reached it.
type mcpBackend struct {
	name string
	srv  *httptest.Server
	mu   sync.Mutex
	// methods are the HTTP methods received; credentials counts requests
	// that carried the gateway key's headers.
	methods     []string
	credentials int
}

func (b *mcpBackend) seen() ([]string, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.methods...), b.credentials
}

type mcpEchoIn struct {
	Text string `json:"text" jsonschema:"what to echo"`
}

// startMCPBackend serves an SDK server named name with the tools echo
// and shout under opts.
func startMCPBackend(t *testing.T, name string, opts *mcp.StreamableHTTPOptions) *mcpBackend {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: name + " echoes"}, func(ctx context.Context, req *mcp.CallToolRequest, in mcpEchoIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " says " + in.Text}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "shout", Description: name + " shouts"}, func(ctx context.Context, req *mcp.CallToolRequest, in mcpEchoIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.ToUpper(in.Text)}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, opts)
	b := &mcpBackend{name: name}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		b.methods = append(b.methods, r.Method)
		if r.Header.Get("Authorization") != "" || r.Header.Get("X-Api-Key") != "" {
			b.credentials++
		}
		b.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(b.srv.Close)
	return b
}

// startMCPBackends starts the three kinds of server.
func startMCPBackends(t *testing.T) []*mcpBackend {
	return []*mcpBackend{
		startMCPBackend(t, "plain", &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}),
		startMCPBackend(t, "sess", &mcp.StreamableHTTPOptions{JSONResponse: true}),
		startMCPBackend(t, "stream", &mcp.StreamableHTTPOptions{Stateless: true}),
	}
}

func TestMCPFederatedThroughBinary(t *testing.T) {
	backends := startMCPBackends(t)
	servers := map[string]interface{}{}
	for _, b := range backends {
		servers[b.name] = map[string]interface{}{"url": b.srv.URL}
	}
	gw := startGateway(t, buildGatewayBinary(t), map[string]interface{}{
		"providers":  map[string]interface{}{"mock": map[string]interface{}{"type": "openai", "baseUrl": "http://127.0.0.1:9", "models": []string{"m"}}},
		"groups":     map[string]interface{}{"default": map[string]interface{}{}},
		"users":      map[string]interface{}{"inline": []map[string]interface{}{{"name": "alice", "group": "default", "apiKey": mcpFedKey}}},
		"mcpServers": servers,
	})
	for _, tc := range []struct {
		name, version, negotiated string
	}{
		{name: "stateless dialect", version: "", negotiated: "2026-07-28"},
		{name: "session dialect", version: "2025-11-25", negotiated: "2025-11-25"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := sdkContext(t)
			client := mcp.NewClient(&mcp.Implementation{Name: "federation-test", Version: "1.0.0"}, nil)
			transport := &mcp.StreamableClientTransport{Endpoint: gw.URL + "/mcp", HTTPClient: &http.Client{Transport: keyTransport{mcpFedKey}}, MaxRetries: -1}
			cs, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: tc.version})
			require.NoError(t, err)
			defer cs.Close()
			init := cs.InitializeResult()
			require.NotNil(t, init)
			assert.Equal(t, tc.negotiated, init.ProtocolVersion)
			require.NotNil(t, init.ServerInfo)
			assert.Equal(t, "llmgateway", init.ServerInfo.Name)
			assert.Empty(t, cs.ID(), "the federated endpoint opens no session")

			require.NoError(t, cs.Ping(ctx, nil), "ping")
			list, err := cs.ListTools(ctx, nil)
			require.NoError(t, err)
			var names []string
			for _, tool := range list.Tools {
				names = append(names, tool.Name)
				assert.NotNil(t, tool.InputSchema, tool.Name)
			}
			sort.Strings(names)
			assert.Equal(t, []string{"plain_echo", "plain_shout", "sess_echo", "sess_shout", "stream_echo", "stream_shout"}, names)
			assert.Empty(t, list.NextCursor)

			for _, b := range backends {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: b.name + "_echo", Arguments: map[string]any{"text": "hi " + tc.version}})
				require.NoError(t, err, b.name)
				require.Len(t, res.Content, 1, b.name)
				text, ok := res.Content[0].(*mcp.TextContent)
				require.True(t, ok, "%s: content %T", b.name, res.Content[0])
				assert.Equal(t, b.name+" says hi "+tc.version, text.Text)
				assert.False(t, res.IsError)
			}
			// A tool nothing routes is a JSON-RPC invalid params error.
			_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "nosuch_echo", Arguments: map[string]any{"text": "x"}})
			require.Error(t, err)
			assert.Contains(t, err.Error(), "unknown tool")
			// A tool the server does not have: the server's own error.
			_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "plain_nosuch", Arguments: map[string]any{}})
			require.Error(t, err)
			assert.Contains(t, err.Error(), "nosuch")
		})
	}
	for _, b := range backends {
		methods, creds := b.seen()
		assert.Zero(t, creds, "%s received the gateway key", b.name)
		deletes := 0
		for _, m := range methods {
			assert.Contains(t, []string{http.MethodPost, http.MethodDelete}, m, b.name)
			if m == http.MethodDelete {
				deletes++
			}
		}
		// Only the server that needs a session had one opened, and each
		// was ended: one listing (the second dialect's came from the
		// gateway's cache) and one tool call in each dialect.
		if b.name == "sess" {
			assert.Equal(t, 3, deletes, "%s: %v", b.name, methods)
		} else {
			assert.Zero(t, deletes, "%s: %v", b.name, methods)
		}
	}
}
