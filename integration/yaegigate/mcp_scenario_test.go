package yaegigate_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The "mcp proxy" scenario: a fake MCP server (Streamable HTTP, its
// tools/call answered as an SSE stream) behind /mcp/fake/, and the
// registry. The server is shared by every level of the gate (started once
// per test binary: gatewayConfig names its URL); each run keys its stream
// gate by a query parameter of its own, so runs never share a gate.

// fakeMCPServerName is the MCP server's name in gatewayConfig.
const fakeMCPServerName = "fake"

// fakeMCP is the shared fake MCP server.
type fakeMCP struct {
	srv      *httptest.Server
	mu       sync.Mutex
	gates    map[string]chan struct{}
	timedOut map[string]bool
	auth     map[string]string // the Authorization each gate's call carried
}

var (
	fakeMCPOnce   sync.Once
	fakeMCPShared *fakeMCP
	fakeMCPGateN  atomic.Int64
)

// sharedFakeMCP starts the fake MCP server on first use.
func sharedFakeMCP() *fakeMCP {
	fakeMCPOnce.Do(func() {
		f := &fakeMCP{gates: map[string]chan struct{}{}, timedOut: map[string]bool{}, auth: map[string]string{}}
		f.srv = httptest.NewServer(f)
		fakeMCPShared = f
	})
	return fakeMCPShared
}

// URL is the server's MCP endpoint, the configured mcpServers URL.
func (f *fakeMCP) URL() string { return f.srv.URL + "/mcp" }

func (f *fakeMCP) gate(id string) chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	g := f.gates[id]
	if g == nil {
		g = make(chan struct{})
		f.gates[id] = g
	}
	return g
}

// release lets gate id's stream go on (once).
func (f *fakeMCP) release(id string) {
	g := f.gate(id)
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-g:
	default:
		close(g)
	}
}

func (f *fakeMCP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/mcp" {
		http.NotFound(w, r)
		return
	}
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	_ = json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req)
	id := r.URL.Query().Get("gate")
	f.mu.Lock()
	f.auth[id] = r.Header.Get("Authorization") + r.Header.Get("X-Api-Key")
	f.mu.Unlock()
	w.Header().Set("Mcp-Session-Id", "fake-session-"+id)
	if req.Method != "tools/call" {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1"}}}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n")
	w.(http.Flusher).Flush()
	select {
	case <-f.gate(id):
	case <-time.After(streamGateFallback):
		f.mu.Lock()
		f.timedOut[id] = true
		f.mu.Unlock()
	}
	_, _ = io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":"+string(req.ID)+",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"18 C\"}]}}\n\n")
}

// runMCPProxyScenario lists the registry, initializes through the proxy
// (the session relayed) and calls a tool whose SSE answer's first event
// must reach the client before the server writes the second.
func runMCPProxyScenario(t *testing.T, c *scenarioClient) {
	f := sharedFakeMCP()
	resp, body := c.do(t, http.MethodGet, "/v1/mcp/servers", nil, bearer(userKey))
	require.Equal(t, http.StatusOK, resp.StatusCode, "body: %s", body)
	assert.JSONEq(t, `{"servers":[{"name":"`+fakeMCPServerName+`","url":"`+f.URL()+`"}]}`, string(body))

	gate := strconv.FormatInt(fakeMCPGateN.Add(1), 10)
	path := "/mcp/" + fakeMCPServerName + "/?gate=" + gate
	resp, body = c.do(t, http.MethodPost, path, map[string]interface{}{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]interface{}{}}, bearer(userKey))
	require.Equal(t, http.StatusOK, resp.StatusCode, "body: %s", body)
	assert.Equal(t, "fake-session-"+gate, resp.Header.Get("Mcp-Session-Id"))
	assert.Contains(t, string(body), `"serverInfo":{"name":"fake"`)

	resp, body = c.do(t, http.MethodPost, "/mcp/"+fakeMCPServerName+"/", map[string]interface{}{"jsonrpc": "2.0", "id": 1, "method": "ping"}, nil)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "body: %s", body)

	defer f.release(gate) // never leave the server waiting
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path,
		strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_weather","arguments":{"city":"Paris"}}}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+userKey)
	sresp, err := c.http.Do(req)
	require.NoError(t, err)
	defer sresp.Body.Close()
	require.Equal(t, http.StatusOK, sresp.StatusCode)
	assert.Contains(t, sresp.Header.Get("Content-Type"), "text/event-stream")
	rd := bufio.NewReader(sresp.Body)
	var data []string
	for {
		line, err := rd.ReadString('\n')
		if strings.HasPrefix(line, "data: ") {
			data = append(data, strings.TrimSpace(strings.TrimPrefix(line, "data: ")))
			if len(data) == 1 {
				f.release(gate) // the server writes its answer only now
			}
		}
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
	}
	require.Len(t, data, 2, "events: %v", data)
	assert.Contains(t, data[0], `"notifications/progress"`)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"18 C"}]}}`, data[1])
	f.mu.Lock()
	timedOut, auth := f.timedOut[gate], f.auth[gate]
	f.mu.Unlock()
	assert.False(t, timedOut, "event 1 reached the client only after the server gave up waiting: the stream was buffered")
	assert.NotContains(t, auth, userKey, "the gateway key reached the MCP server")
}
