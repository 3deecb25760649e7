package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The federated POST /mcp against fake MCP servers speaking Streamable
// HTTP exactly: a JSON answer, an SSE answer (notifications, a server
// request and an answer to another id before the response), a server
// that needs a session (400 without Mcp-Session-Id, the id set by
// initialize, ended by DELETE), a failing one (503), a slow one, and one
// that answers JSON that is not JSON-RPC.

const (
	fedAliceKey = "sk-fed-alice-0001"
	fedBobKey   = "sk-fed-bob-0001"
)

// mcpSeen is one request a fake MCP server received.
type mcpSeen struct {
	httpMethod string
	rpcMethod  string
	header     http.Header
	body       string
}

// fakeMCP is a fake MCP server. mode: "json", "sse", "session" (400
// without its session), "session-rpc" (a JSON-RPC error without it, as
// the MCP Go SDK's stateful handler answers), "fail" (503), "slow"
// (answers nothing until the request ends) or "garbage" (JSON, not
// JSON-RPC). tools are its tool names; pages splits tools/list into
// that many pages (nextCursor).
type fakeMCP struct {
	*httptest.Server
	name  string
	mode  string
	tools []string
	pages int
	// listChanged: the next SSE answer carries
	// notifications/tools/list_changed.
	listChanged atomic.Bool
	mu          sync.Mutex
	seen        []mcpSeen
}

func newFakeMCP(t *testing.T, name, mode string, tools ...string) *fakeMCP {
	t.Helper()
	f := &fakeMCP{name: name, mode: mode, tools: tools, pages: 1}
	f.Server = httptest.NewServer(f)
	t.Cleanup(f.Close)
	return f
}

func (f *fakeMCP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	_ = json.Unmarshal(body, &m)
	f.mu.Lock()
	f.seen = append(f.seen, mcpSeen{httpMethod: r.Method, rpcMethod: m.Method, header: r.Header.Clone(), body: string(body)})
	f.mu.Unlock()
	switch f.mode {
	case "fail":
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		return
	case "slow":
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		<-ctx.Done()
		cancel()
		return
	case "garbage":
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"hello":"world"}`)
		return
	}
	session := "sess-" + f.name
	if r.Method == http.MethodDelete {
		if (f.mode == "session" || f.mode == "session-rpc") && r.Header.Get("Mcp-Session-Id") == session {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	needsSession := f.mode == "session" || f.mode == "session-rpc"
	if needsSession && m.Method != "initialize" && r.Header.Get("Mcp-Session-Id") != session {
		if f.mode == "session" {
			http.Error(w, "Bad Request: missing session ID", http.StatusBadRequest)
			return
		}
		// As the MCP Go SDK's stateful handler answers: a JSON-RPC error
		// in an event stream, HTTP 200.
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":"+string(m.ID)+
			",\"error\":{\"code\":0,\"message\":\"method is invalid during session initialization\"}}\n\n")
		return
	}
	if len(m.ID) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if m.Method == "initialize" && needsSession {
		w.Header().Set("Mcp-Session-Id", session)
	}
	answer := `{"jsonrpc":"2.0","id":` + string(m.ID) + `,` + f.answer(m.Method, m.Params) + `}`
	if f.mode != "sse" {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, answer)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	events := []string{
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"working"}}`,
		`{"jsonrpc":"2.0","id":"srv-1","method":"ping"}`,
		`{"jsonrpc":"2.0","id":424242,"result":{}}`,
	}
	if f.listChanged.Swap(false) {
		events = append(events, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
	}
	for _, ev := range events {
		_, _ = io.WriteString(w, "event: message\ndata: "+ev+"\n\n")
	}
	_, _ = io.WriteString(w, ": keepalive\n\nid: 7\nevent: message\ndata: "+answer+"\n\n")
}

// answer is the result or error member for method.
func (f *fakeMCP) answer(method string, params json.RawMessage) string {
	switch method {
	case "initialize":
		return `"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"` + f.name + `","version":"1"}}`
	case "tools/list":
		var p struct {
			Cursor string `json:"cursor"`
		}
		_ = json.Unmarshal(params, &p)
		page, _ := strconv.Atoi(strings.TrimPrefix(p.Cursor, "page-"))
		per := (len(f.tools) + f.pages - 1) / f.pages
		var tools []string
		for i := page * per; i < len(f.tools) && i < (page+1)*per; i++ {
			tools = append(tools, `{"name":"`+f.tools[i]+`","title":"T `+f.tools[i]+`","description":"`+f.name+` does `+f.tools[i]+
				`","inputSchema":{"type":"object","properties":{"x":{"type":"string"}}},"annotations":{"readOnlyHint":true}}`)
		}
		next := ""
		if page+1 < f.pages {
			next = `,"nextCursor":"page-` + strconv.Itoa(page+1) + `"`
		}
		return `"result":{"tools":[` + strings.Join(tools, ",") + `]` + next + `}`
	case "tools/call":
		var p struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		_ = json.Unmarshal(params, &p)
		for _, tool := range f.tools {
			if tool == p.Name {
				text, _ := json.Marshal(f.name + ":" + p.Name + ":" + string(p.Arguments))
				return `"result":{"content":[{"type":"text","text":` + string(text) + `}],"isError":false}`
			}
		}
		return `"error":{"code":-32602,"message":"unknown tool","data":{"tool":"` + p.Name + `"}}`
	}
	return `"error":{"code":-32601,"message":"method not found"}`
}

// requests is what f received, in order.
func (f *fakeMCP) requests() []mcpSeen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]mcpSeen(nil), f.seen...)
}

// calls lists f's requests as "HTTP rpc-method" strings.
func (f *fakeMCP) calls() []string {
	var out []string
	for _, s := range f.requests() {
		out = append(out, strings.TrimSpace(s.httpMethod+" "+s.rpcMethod))
	}
	return out
}

// fedGateway is a gateway with the given MCP servers (name → fake);
// alice reaches every server, bob (group "narrow") only servers
// matching "alpha*" and tools matching "alpha_echo"; extra are more
// top-level config keys.
func fedGateway(t *testing.T, servers map[string]*fakeMCP, extra map[string]interface{}, setup func(*Gateway)) (*Gateway, *httptest.Server, *syncBuffer) {
	t.Helper()
	mcp := map[string]interface{}{}
	for name, f := range servers {
		mcp[name] = map[string]interface{}{"url": f.URL}
	}
	cfg := map[string]interface{}{
		"providers": map[string]interface{}{"mock": map[string]interface{}{"type": "openai", "baseUrl": "http://127.0.0.1:9", "models": []string{"m1"}}},
		"groups": map[string]interface{}{
			"all":    map[string]interface{}{},
			"narrow": map[string]interface{}{"mcpServers": []string{"alpha*"}, "mcpTools": []string{"alpha_echo"}},
		},
		"users": map[string]interface{}{"inline": []interface{}{
			map[string]interface{}{"name": "alice", "group": "all", "apiKey": fedAliceKey},
			map[string]interface{}{"name": "bob", "group": "narrow", "apiKey": fedBobKey},
		}},
		"mcpServers": mcp,
	}
	for k, v := range extra {
		if k == "mcpServers" {
			for name, sv := range v.(map[string]interface{}) {
				mcp[name] = sv
			}
			continue
		}
		cfg[k] = v
	}
	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return serveTestGateway(t, string(data), nil, setup)
}

// rpcReply is a decoded JSON-RPC answer of the gateway.
type rpcReply struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// postMCP sends body to POST /mcp with key (none when "") and headers.
func postMCP(t *testing.T, base, key, body string, headers map[string]string) (*http.Response, string) {
	t.Helper()
	h := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
	if key != "" {
		h["Authorization"] = "Bearer " + key
	}
	for k, v := range headers {
		h[k] = v
	}
	return send(t, base, testRequest{method: http.MethodPost, path: "/mcp", headers: h, body: body})
}

// rpc sends one request and decodes the answer, which must be JSON.
func rpc(t *testing.T, base, key, method, params string, headers map[string]string) (int, rpcReply) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":42,"method":"` + method + `"`
	if params != "" {
		body += `,"params":` + params
	}
	resp, data := postMCP(t, base, key, body+"}", headers)
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("%s: Content-Type %q, body %s", method, ct, data)
	}
	if resp.Header.Get("Mcp-Session-Id") != "" {
		t.Errorf("%s: the gateway created a session", method)
	}
	var out rpcReply
	if err := json.Unmarshal([]byte(data), &out); err != nil {
		t.Fatalf("%s: not JSON: %s", method, data)
	}
	if out.JSONRPC != "2.0" || string(out.ID) != "42" {
		t.Fatalf("%s: jsonrpc %q id %s: %s", method, out.JSONRPC, out.ID, data)
	}
	return resp.StatusCode, out
}

// toolNames lists a tools/list result's names.
func toolNames(t *testing.T, result json.RawMessage) []string {
	t.Helper()
	var r struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
		NextCursor *string `json:"nextCursor"`
	}
	if err := json.Unmarshal(result, &r); err != nil || r.Tools == nil {
		t.Fatalf("not a tools/list result: %s", result)
	}
	if r.NextCursor != nil {
		t.Errorf("the federated answer carries a cursor: %s", result)
	}
	names := []string{}
	for _, tool := range r.Tools {
		names = append(names, tool.Name)
	}
	return names
}

func TestFederatedEnvelope(t *testing.T) {
	alpha := newFakeMCP(t, "alpha", "json", "echo")
	_, srv, _ := fedGateway(t, map[string]*fakeMCP{"alpha": alpha}, nil, nil)
	cases := []struct {
		name    string
		method  string
		key     string
		body    string
		headers map[string]string
		status  int
		code    int    // JSON-RPC error code; 0: none
		id      string // the answer's id
		empty   bool   // no body at all
	}{
		{name: "get is 405 before auth", method: http.MethodGet, status: 405},
		{name: "delete is 405", method: http.MethodDelete, key: fedAliceKey, status: 405},
		{name: "no key", key: "", body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, status: 401},
		{name: "upgrade", key: fedAliceKey, body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, headers: map[string]string{"Upgrade": "websocket", "Connection": "Upgrade"}, status: 501},
		{name: "parse error", key: fedAliceKey, body: `{"jsonrpc":"2.0","id":1,`, status: 400, code: -32700, id: "null"},
		{name: "empty body", key: fedAliceKey, body: ` `, status: 400, code: -32700, id: "null"},
		{name: "batch", key: fedAliceKey, body: `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, status: 400, code: -32600, id: "null"},
		{name: "not an object", key: fedAliceKey, body: `"ping"`, status: 400, code: -32600, id: "null"},
		{name: "no method", key: fedAliceKey, body: `{"jsonrpc":"2.0","id":1,"result":{}}`, status: 400, code: -32600, id: "null"},
		{name: "wrong version", key: fedAliceKey, body: `{"jsonrpc":"1.0","id":1,"method":"ping"}`, status: 400, code: -32600, id: "null"},
		{name: "object id", key: fedAliceKey, body: `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, status: 400, code: -32600, id: "null"},
		{name: "scalar params", key: fedAliceKey, body: `{"jsonrpc":"2.0","id":1,"method":"ping","params":3}`, status: 400, code: -32600, id: "null"},
		{name: "ping", key: fedAliceKey, body: `{"jsonrpc":"2.0","id":"p-1","method":"ping"}`, status: 200, id: `"p-1"`},
		{name: "unknown method", key: fedAliceKey, body: `{"jsonrpc":"2.0","id":7,"method":"resources/list"}`, status: 200, code: -32601, id: "7"},
		{name: "unknown method, stateless", key: fedAliceKey, body: `{"jsonrpc":"2.0","id":7,"method":"resources/list"}`, headers: map[string]string{"Mcp-Protocol-Version": "2026-07-28"}, status: 404, code: -32601, id: "7"},
		{name: "notification", key: fedAliceKey, body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, status: 202, empty: true},
		{name: "notification with an id", key: fedAliceKey, body: `{"jsonrpc":"2.0","id":3,"method":"notifications/cancelled","params":{"requestId":1}}`, status: 202, empty: true},
		{name: "request without id", key: fedAliceKey, body: `{"jsonrpc":"2.0","method":"tools/list"}`, status: 202, empty: true},
		{name: "unresolvable tool", key: fedAliceKey, body: `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"nosuch_echo"}}`, status: 200, code: -32602, id: "8"},
		{name: "tool without name", key: fedAliceKey, body: `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{}}`, status: 200, code: -32602, id: "8"},
		{name: "unresolvable tool, stateless", key: fedAliceKey, body: `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"nosuch_echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, status: 400, code: -32602, id: "8"},
		{name: "unknown header version", key: fedAliceKey, body: `{"jsonrpc":"2.0","id":9,"method":"ping"}`, headers: map[string]string{"Mcp-Protocol-Version": "2024-01-01"}, status: 400, code: -32600, id: "9"},
		{name: "future stateless version", key: fedAliceKey, body: `{"jsonrpc":"2.0","id":9,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2027-01-01"}}}`, status: 400, code: -32022, id: "9"},
		{name: "method header mismatch", key: fedAliceKey, body: `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`, headers: map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call"}, status: 400, code: -32020, id: "9"},
		{name: "name header mismatch", key: fedAliceKey, body: `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"alpha_echo"}}`, headers: map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "alpha_other"}, status: 400, code: -32020, id: "9"},
		{name: "too large", key: fedAliceKey, body: `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", maxFederatedRequestBytes) + `"}}`, status: 413},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = http.MethodPost
			}
			h := map[string]string{"Content-Type": "application/json"}
			if tc.key != "" {
				h["Authorization"] = "Bearer " + tc.key
			}
			for k, v := range tc.headers {
				h[k] = v
			}
			resp, body := send(t, srv.URL, testRequest{method: method, path: "/mcp", headers: h, body: tc.body})
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			switch {
			case tc.status == 405:
				if got := resp.Header.Get("Allow"); got != "POST" {
					t.Errorf("Allow %q", got)
				}
				expectEnvelope(t, resp, body, 405, "invalid_request_error", "method_not_allowed")
				return
			case tc.status == 401:
				expectEnvelope(t, resp, body, 401, "authentication_error", "invalid_api_key")
				return
			case tc.status == 413:
				expectEnvelope(t, resp, body, 413, "invalid_request_error", "request_too_large")
				return
			case tc.status == 501:
				expectEnvelope(t, resp, body, 501, "invalid_request_error", "upgrade_not_supported")
				return
			case tc.empty:
				if body != "" {
					t.Errorf("a notification got a body: %q", body)
				}
				return
			}
			var out rpcReply
			if err := json.Unmarshal([]byte(body), &out); err != nil {
				t.Fatalf("not JSON: %s", body)
			}
			if out.JSONRPC != "2.0" || string(out.ID) != tc.id {
				t.Errorf("jsonrpc %q id %s, want id %s", out.JSONRPC, out.ID, tc.id)
			}
			if tc.code == 0 {
				if out.Error != nil || string(out.Result) != "{}" {
					t.Errorf("want the result {}: %s", body)
				}
				return
			}
			if out.Error == nil || out.Error.Code != tc.code || out.Error.Message == "" || out.Result != nil {
				t.Errorf("want error %d: %s", tc.code, body)
			}
		})
	}
	// Only the unresolvable tool calls were refused after dispatch: none
	// reached the server.
	if n := len(alpha.requests()); n != 0 {
		t.Errorf("the server got %d requests: %v", n, alpha.calls())
	}
}

func TestFederatedInitializeVersions(t *testing.T) {
	_, srv, _ := fedGateway(t, nil, nil, nil)
	for _, tc := range []struct{ asked, want string }{
		{"2024-11-05", "2024-11-05"}, {"2025-03-26", "2025-03-26"}, {"2025-06-18", "2025-06-18"},
		{"2025-11-25", "2025-11-25"}, {"2026-07-28", "2025-11-25"}, {"1999-01-01", "2025-11-25"},
		{"", "2025-11-25"}, {"<script>", "2025-11-25"},
	} {
		params := `{"protocolVersion":"` + tc.asked + `","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`
		if tc.asked == "" {
			params = `{}`
		}
		status, out := rpc(t, srv.URL, fedAliceKey, "initialize", params, nil)
		var res struct {
			ProtocolVersion string `json:"protocolVersion"`
			Capabilities    struct {
				Tools *struct {
					ListChanged *bool `json:"listChanged"`
				} `json:"tools"`
			} `json:"capabilities"`
			ServerInfo struct {
				Name    string `json:"name"`
				Version string `json:"version"`
			} `json:"serverInfo"`
		}
		if status != 200 || json.Unmarshal(out.Result, &res) != nil {
			t.Fatalf("%q: status %d %s", tc.asked, status, out.Result)
		}
		if res.ProtocolVersion != tc.want {
			t.Errorf("asked %q: protocolVersion %q, want %q", tc.asked, res.ProtocolVersion, tc.want)
		}
		if res.Capabilities.Tools == nil || res.Capabilities.Tools.ListChanged == nil || *res.Capabilities.Tools.ListChanged {
			t.Errorf("capabilities: %s", out.Result)
		}
		if res.ServerInfo.Name != "llmgateway" || res.ServerInfo.Version != Version {
			t.Errorf("serverInfo: %s", out.Result)
		}
	}
}

func TestFederatedDiscover(t *testing.T) {
	_, srv, _ := fedGateway(t, nil, nil, nil)
	// What the MCP Go SDK v1.8.0 client sends first.
	params := `{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"probe","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`
	status, out := rpc(t, srv.URL, fedAliceKey, "server/discover", params,
		map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"})
	var res struct {
		ResultType        string   `json:"resultType"`
		SupportedVersions []string `json:"supportedVersions"`
		Capabilities      struct {
			Tools *struct {
				ListChanged bool `json:"listChanged"`
			} `json:"tools"`
		} `json:"capabilities"`
		Meta map[string]struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"_meta"`
	}
	if status != 200 || json.Unmarshal(out.Result, &res) != nil {
		t.Fatalf("status %d: %s", status, out.Result)
	}
	want := "2026-07-28,2025-11-25,2025-06-18,2025-03-26,2024-11-05"
	if strings.Join(res.SupportedVersions, ",") != want || res.ResultType != "complete" || res.Capabilities.Tools == nil {
		t.Errorf("discover: %s", out.Result)
	}
	if info := res.Meta["io.modelcontextprotocol/serverInfo"]; info.Name != "llmgateway" || info.Version != Version {
		t.Errorf("serverInfo: %s", out.Result)
	}
	// A future stateless version: -32022 names what the gateway supports.
	status, out = rpc(t, srv.URL, fedAliceKey, "server/discover", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2027-03-01"}}`, nil)
	var data struct {
		Supported []string `json:"supported"`
		Requested string   `json:"requested"`
	}
	if status != 400 || out.Error == nil || out.Error.Code != -32022 || json.Unmarshal(out.Error.Data, &data) != nil ||
		strings.Join(data.Supported, ",") != want || data.Requested != "2027-03-01" {
		t.Errorf("future version: %d %+v", status, out.Error)
	}
}

// targetCount is the day requests counted for the MCP server name.
func targetCount(g *Gateway, name string) int64 {
	snap := g.limiter.counters.(interface {
		Snapshot(prefix string) map[string]int64
	}).Snapshot("llmgw:target:mcp:" + name + ":req:day:")
	var n int64
	for _, v := range snap {
		n += v
	}
	return n
}

// userByName is the configured user called name.
func userByName(t *testing.T, g *Gateway, name string) *userRuntime {
	t.Helper()
	store, _ := g.users.store.Load().(*authStore)
	for _, u := range store.users {
		if u.user.name == name {
			return u.user
		}
	}
	t.Fatalf("no user %q", name)
	return nil
}

func TestFederatedRecords(t *testing.T) {
	servers := map[string]*fakeMCP{"alpha": newFakeMCP(t, "alpha", "json", "echo")}
	var mu sync.Mutex
	var recs []*requestRecord
	_, srv, _ := fedGateway(t, servers, nil, func(g *Gateway) {
		g.recordHook = func(r *requestRecord) { mu.Lock(); recs = append(recs, r); mu.Unlock() }
	})
	rpc(t, srv.URL, fedAliceKey, "tools/call", `{"name":"alpha_echo"}`, nil)
	rpc(t, srv.URL, fedAliceKey, "resources/list", ``, nil)
	postMCP(t, srv.URL, fedAliceKey, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil)
	send(t, srv.URL, testRequest{method: http.MethodGet, path: "/mcp"})
	mu.Lock()
	defer mu.Unlock()
	var got []string
	for _, r := range recs {
		got = append(got, r.route+" "+r.user+" "+strconv.Itoa(r.statusCode)+" "+r.errorCode+" "+strconv.Itoa(r.attempts))
	}
	sort.Strings(got)
	want := []string{"mcp-federated  405 method_not_allowed 0", "mcp-federated alice 200  1", "mcp-federated alice 200 method_not_found 0",
		"mcp-federated alice 202  0"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("records\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// FuzzDecodeRPC: any body decodes to a request with a method, or to a
// parse error or an invalid request — never a panic.
func FuzzDecodeRPC(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, `{"jsonrpc":"2.0","id":{},"method":"x"}`, `{"jsonrpc":"2.0","id":null,"method":"x","params":7}`,
		`{`, ``, `null`, `"x"`, `{"jsonrpc":"2.0","id":-1e9,"method":"x","params":[]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		m, code, msg := decodeRPC(body)
		switch {
		case code == 0 && (m == nil || m.method == "" || msg != ""):
			t.Fatalf("accepted without a method: %q", body)
		case code == 0 && m.id != nil && !json.Valid(m.id):
			t.Fatalf("an id that is not JSON: %q", body)
		case code != 0 && (m != nil || msg == "" || code != rpcParseError && code != rpcInvalidRequest):
			t.Fatalf("refusal %d %q for %q", code, msg, body)
		}
	})
}
