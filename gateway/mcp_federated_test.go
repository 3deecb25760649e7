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

// fedTrio is a JSON server, an SSE server and a session server.
func fedTrio(t *testing.T) map[string]*fakeMCP {
	return map[string]*fakeMCP{
		"alpha":   newFakeMCP(t, "alpha", "json", "echo", "add"),
		"beta":    newFakeMCP(t, "beta", "sse", "search"),
		"gamma_x": newFakeMCP(t, "gamma_x", "session", "fetch"),
	}
}

func TestFederatedToolsList(t *testing.T) {
	servers := fedTrio(t)
	_, srv, _ := fedGateway(t, servers, nil, nil)
	status, out := rpc(t, srv.URL, fedAliceKey, "tools/list", `{}`, nil)
	if status != 200 || out.Error != nil {
		t.Fatalf("status %d: %+v", status, out.Error)
	}
	got := strings.Join(toolNames(t, out.Result), ",")
	if got != "alpha_echo,alpha_add,beta_search,gamma_x_fetch" {
		t.Errorf("tools %s", got)
	}
	// Every member of a tool is kept, the name aside.
	var res struct {
		Tools []map[string]json.RawMessage `json:"tools"`
	}
	_ = json.Unmarshal(out.Result, &res)
	first := res.Tools[0]
	for _, k := range []string{"title", "description", "inputSchema", "annotations"} {
		if first[k] == nil {
			t.Errorf("tool member %q lost: %s", k, out.Result)
		}
	}
	if string(first["title"]) != `"T echo"` || string(first["annotations"]) != `{"readOnlyHint":true}` {
		t.Errorf("tool: %v", first)
	}
	// bob: servers alpha* only, tools alpha_echo only.
	_, out = rpc(t, srv.URL, fedBobKey, "tools/list", ``, nil)
	if got := strings.Join(toolNames(t, out.Result), ","); got != "alpha_echo" {
		t.Errorf("bob's tools %s", got)
	}
	// The stateless dialect marks the result complete and private.
	_, out = rpc(t, srv.URL, fedAliceKey, "tools/list", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`, nil)
	var sl struct {
		ResultType string `json:"resultType"`
		CacheScope string `json:"cacheScope"`
		TTLMs      *int   `json:"ttlMs"`
	}
	if json.Unmarshal(out.Result, &sl) != nil || sl.ResultType != "complete" || sl.CacheScope != "private" || sl.TTLMs == nil {
		t.Errorf("stateless tools/list: %s", out.Result)
	}
	if len(toolNames(t, out.Result)) != 4 {
		t.Errorf("stateless tools/list: %s", out.Result)
	}
}

func TestFederatedSessionHandshake(t *testing.T) {
	for _, mode := range []string{"session", "session-rpc"} {
		t.Run(mode, func(t *testing.T) { federatedHandshake(t, mode) })
	}
}

func federatedHandshake(t *testing.T, mode string) {
	servers := map[string]*fakeMCP{"gamma": newFakeMCP(t, "gamma", mode, "fetch")}
	_, srv, _ := fedGateway(t, servers, nil, nil)
	gamma := servers["gamma"]
	_, out := rpc(t, srv.URL, fedAliceKey, "tools/list", `{}`, nil)
	if got := strings.Join(toolNames(t, out.Result), ","); got != "gamma_fetch" {
		t.Fatalf("tools %s", got)
	}
	want := "POST tools/list|POST initialize|POST notifications/initialized|POST tools/list|DELETE"
	if got := strings.Join(gamma.calls(), "|"); got != want {
		t.Errorf("exchange %s\nwant     %s", got, want)
	}
	reqs := gamma.requests()
	if reqs[0].header.Get("Mcp-Session-Id") != "" || reqs[1].header.Get("Mcp-Session-Id") != "" {
		t.Error("the bare call or initialize carried a session")
	}
	for _, i := range []int{2, 3, 4} {
		if reqs[i].header.Get("Mcp-Session-Id") != "sess-gamma" {
			t.Errorf("request %d without the session", i)
		}
	}
	// The initialize is the gateway's own; the retry speaks the version
	// the server negotiated.
	if !strings.Contains(reqs[1].body, `"protocolVersion":"2025-11-25"`) || !strings.Contains(reqs[1].body, `"clientInfo":{"name":"llmgateway"`) {
		t.Errorf("initialize: %s", reqs[1].body)
	}
	if reqs[0].header.Get("Mcp-Protocol-Version") != "2025-11-25" || reqs[3].header.Get("Mcp-Protocol-Version") != "2025-06-18" {
		t.Errorf("versions %q, %q", reqs[0].header.Get("Mcp-Protocol-Version"), reqs[3].header.Get("Mcp-Protocol-Version"))
	}
	// tools/call: the same dance, the result under the caller's id.
	status, out := rpc(t, srv.URL, fedAliceKey, "tools/call", `{"name":"gamma_fetch","arguments":{"x":"u"}}`, nil)
	if status != 200 || out.Error != nil || !strings.Contains(string(out.Result), `gamma:fetch:{\"x\":\"u\"}`) {
		t.Errorf("call: %d %s %+v", status, out.Result, out.Error)
	}
	if got := strings.Join(gamma.calls()[5:], "|"); got != "POST tools/call|POST initialize|POST notifications/initialized|POST tools/call|DELETE" {
		t.Errorf("call exchange %s", got)
	}
	// A server that needs no session is never handshaken, and the 5xx of
	// another never triggers it.
	plain := map[string]*fakeMCP{"alpha": newFakeMCP(t, "alpha", "json", "echo"), "down": newFakeMCP(t, "down", "fail", "x")}
	_, srv2, _ := fedGateway(t, plain, nil, nil)
	rpc(t, srv2.URL, fedAliceKey, "tools/list", `{}`, nil)
	if got := strings.Join(plain["alpha"].calls(), "|"); got != "POST tools/list" {
		t.Errorf("json server: %s", got)
	}
	if got := strings.Join(plain["down"].calls(), "|"); got != "POST tools/list" {
		t.Errorf("failing server: %s", got)
	}
}

func TestFederatedDeleteFailureLogged(t *testing.T) {
	// A session server that refuses DELETE: the call still succeeds, the
	// failure is logged (without the session id).
	f := newFakeMCP(t, "gamma", "session", "fetch")
	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		f.ServeHTTP(w, r)
	}))
	t.Cleanup(refuse.Close)
	_, srv, logs := fedGateway(t, nil, map[string]interface{}{"mcpServers": map[string]interface{}{"gamma": map[string]interface{}{"url": refuse.URL}}}, nil)
	_, out := rpc(t, srv.URL, fedAliceKey, "tools/call", `{"name":"gamma_fetch"}`, nil)
	if out.Error != nil {
		t.Fatalf("call: %+v", out.Error)
	}
	if !strings.Contains(logs.String(), `mcp server "gamma": ending the federation's session failed: HTTP 405`) || strings.Contains(logs.String(), "sess-gamma") {
		t.Errorf("logs:\n%s", logs.String())
	}
}

func TestFederatedSkipsFailingServers(t *testing.T) {
	servers := map[string]*fakeMCP{
		"alpha": newFakeMCP(t, "alpha", "json", "echo"),
		"down":  newFakeMCP(t, "down", "fail", "x"),
		"slow":  newFakeMCP(t, "slow", "slow", "x"),
		"weird": newFakeMCP(t, "weird", "garbage", "x"),
		"zeta":  newFakeMCP(t, "zeta", "sse", "z"),
	}
	g, srv, logs := fedGateway(t, servers, nil, func(g *Gateway) { g.mcp.listTimeout = 300 * time.Millisecond })
	started := time.Now()
	for i := 0; i < 2; i++ {
		g.mcp.mu.Lock()
		g.mcp.lists = nil // no cache: both requests contact every server
		g.mcp.mu.Unlock()
		status, out := rpc(t, srv.URL, fedAliceKey, "tools/list", `{}`, nil)
		if status != 200 || out.Error != nil {
			t.Fatalf("status %d: %+v", status, out.Error)
		}
		if got := strings.Join(toolNames(t, out.Result), ","); got != "alpha_echo,zeta_z" {
			t.Errorf("tools %s", got)
		}
	}
	if elapsed := time.Since(started); elapsed > 5*time.Second {
		t.Errorf("the slow server held the listing %s", elapsed)
	}
	for name, want := range map[string]string{"down": "HTTP 503", "slow": "timeout after 300ms", "weird": "the answer is not a JSON-RPC 2.0 response to the request"} {
		v := g.target(targetMCP, name).health.view()
		if v.LastError == nil || *v.LastError != want || v.ConsecutiveFailures != 2 || v.Source != "passive" {
			t.Errorf("%s health %+v (lastError %v), want %q", name, v, v.LastError, want)
		}
		// Logged once per failure streak, in the gateway's own words.
		line := `federated tools/list: mcp server "` + name + `" failed: ` + want
		if n := strings.Count(logs.String(), line); n != 1 {
			t.Errorf("%q logged %d times:\n%s", line, n, logs.String())
		}
	}
	for _, name := range []string{"alpha", "zeta"} {
		if v := g.target(targetMCP, name).health.view(); v.State != targetHealthy || v.Source != "passive" {
			t.Errorf("%s health %+v", name, v)
		}
	}
	if strings.Contains(logs.String(), "maintenance") || strings.Contains(logs.String(), "127.0.0.1:") {
		t.Errorf("a backend body or address was logged:\n%s", logs.String())
	}
}

func TestFederatedAllServersFail(t *testing.T) {
	servers := map[string]*fakeMCP{"down": newFakeMCP(t, "down", "fail", "x"), "weird": newFakeMCP(t, "weird", "garbage", "x")}
	var recs []*requestRecord
	var mu sync.Mutex
	g, srv, _ := fedGateway(t, servers, nil, func(g *Gateway) {
		g.recordHook = func(r *requestRecord) { mu.Lock(); recs = append(recs, r); mu.Unlock() }
	})
	status, out := rpc(t, srv.URL, fedAliceKey, "tools/list", `{}`, nil)
	var data struct {
		Failures map[string]string `json:"failures"`
	}
	if status != 200 || out.Error == nil || out.Error.Code != -32603 || out.Error.Message != "no MCP server reachable" ||
		json.Unmarshal(out.Error.Data, &data) != nil || data.Failures["down"] != "HTTP 503" || data.Failures["weird"] == "" {
		t.Fatalf("status %d %+v", status, out.Error)
	}
	// The loop's entry point says the same.
	user := userByName(t, g, "alice")
	if _, err := g.federatedTools(context.Background(), user, &requestTrace{traceID: zeroTraceID, flags: "00"}); err == nil ||
		!strings.Contains(err.Error(), "no MCP server reachable") {
		t.Errorf("federatedTools: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(recs) == 0 || recs[0].route != "mcp-federated" || recs[0].format != "jsonrpc" || recs[0].errorCode != "internal_error" || recs[0].attempts != 2 {
		t.Errorf("record %+v", recs)
	}
}

func TestFederatedNoServers(t *testing.T) {
	// Zero reachable servers: an empty list, not an error (bob reaches
	// only alpha*).
	servers := map[string]*fakeMCP{"beta": newFakeMCP(t, "beta", "json", "x")}
	_, srv, _ := fedGateway(t, servers, nil, nil)
	status, out := rpc(t, srv.URL, fedBobKey, "tools/list", `{}`, nil)
	if status != 200 || out.Error != nil || string(out.Result) != `{"tools":[]}` {
		t.Errorf("status %d %s %+v", status, out.Result, out.Error)
	}
	if n := len(servers["beta"].requests()); n != 0 {
		t.Errorf("an unreachable server got %d requests", n)
	}
}

func TestFederatedLegacySSEExcluded(t *testing.T) {
	legacy := newFakeMCP(t, "old", "json", "tool")
	_, srv, _ := fedGateway(t, map[string]*fakeMCP{"alpha": newFakeMCP(t, "alpha", "json", "echo")},
		map[string]interface{}{"mcpServers": map[string]interface{}{"old": map[string]interface{}{"url": legacy.URL + "/sse"}}}, nil)
	_, out := rpc(t, srv.URL, fedAliceKey, "tools/list", `{}`, nil)
	if got := strings.Join(toolNames(t, out.Result), ","); got != "alpha_echo" {
		t.Errorf("tools %s", got)
	}
	_, out = rpc(t, srv.URL, fedAliceKey, "tools/call", `{"name":"old_tool"}`, nil)
	if out.Error == nil || out.Error.Code != -32602 {
		t.Errorf("legacy tool call: %+v", out.Error)
	}
	if n := len(legacy.requests()); n != 0 {
		t.Errorf("the legacy server got %d requests", n)
	}
}

func TestFederatedToolsCall(t *testing.T) {
	servers := map[string]*fakeMCP{
		"foo":     newFakeMCP(t, "foo", "json", "bar_baz", "qux"),
		"foo_bar": newFakeMCP(t, "foo_bar", "sse", "baz"),
		"alpha":   newFakeMCP(t, "alpha", "json", "echo", "other"),
	}
	_, srv, _ := fedGateway(t, servers, nil, nil)
	cases := []struct {
		name, key, tool, args string
		want                  string // the text the server answered; "" an error
		code                  int
		server                string // the server that must have been called
	}{
		{name: "longest prefix wins", key: fedAliceKey, tool: "foo_bar_baz", args: `{"x":"1"}`, want: `foo_bar:baz:{"x":"1"}`, server: "foo_bar"},
		{name: "shorter prefix", key: fedAliceKey, tool: "foo_qux", args: `{}`, want: `foo:qux:{}`, server: "foo"},
		{name: "sse answer", key: fedAliceKey, tool: "foo_bar_baz", want: `foo_bar:baz:`, server: "foo_bar"},
		{name: "backend error relayed", key: fedAliceKey, tool: "alpha_nosuch", code: -32602, server: "alpha"},
		{name: "prefix only", key: fedAliceKey, tool: "alpha_", code: -32602},
		{name: "no prefix", key: fedAliceKey, tool: "echo", code: -32602},
		{name: "server denied", key: fedBobKey, tool: "foo_qux", code: -32602},
		{name: "tool denied", key: fedBobKey, tool: "alpha_other", code: -32602},
		{name: "tool allowed", key: fedBobKey, tool: "alpha_echo", args: `{"x":"b"}`, want: `alpha:echo:{"x":"b"}`, server: "alpha"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := map[string]int{}
			for name, f := range servers {
				before[name] = len(f.requests())
			}
			params := `{"name":"` + tc.tool + `"`
			if tc.args != "" {
				params += `,"arguments":` + tc.args
			}
			status, out := rpc(t, srv.URL, tc.key, "tools/call", params+`}`, nil)
			if status != 200 {
				t.Fatalf("status %d", status)
			}
			if tc.want != "" {
				var res struct {
					Content []struct {
						Text string `json:"text"`
					} `json:"content"`
				}
				if out.Error != nil || json.Unmarshal(out.Result, &res) != nil || len(res.Content) != 1 || res.Content[0].Text != tc.want {
					t.Errorf("result %s %+v, want %q", out.Result, out.Error, tc.want)
				}
			} else if out.Error == nil || out.Error.Code != tc.code {
				t.Errorf("want error %d: %s %+v", tc.code, out.Result, out.Error)
			}
			if tc.name == "backend error relayed" && (out.Error.Message != "unknown tool" || string(out.Error.Data) != `{"tool":"nosuch"}`) {
				t.Errorf("the backend's error was not relayed as sent: %+v", out.Error)
			}
			for name, f := range servers {
				reqs := f.requests()[before[name]:]
				if name != tc.server {
					if len(reqs) != 0 {
						t.Errorf("server %s got %d requests", name, len(reqs))
					}
					continue
				}
				if len(reqs) == 0 || reqs[0].rpcMethod != "tools/call" {
					t.Fatalf("server %s: %v", name, f.calls())
				}
				var p struct {
					Name string `json:"name"`
				}
				var m struct {
					Params json.RawMessage `json:"params"`
				}
				_ = json.Unmarshal([]byte(reqs[0].body), &m)
				_ = json.Unmarshal(m.Params, &p)
				if want := strings.TrimPrefix(tc.tool, name+"_"); p.Name != want {
					t.Errorf("forwarded name %q, want %q", p.Name, want)
				}
			}
		})
	}
}

func TestFederatedToolsCallStateless(t *testing.T) {
	servers := map[string]*fakeMCP{"alpha": newFakeMCP(t, "alpha", "json", "echo")}
	_, srv, _ := fedGateway(t, servers, nil, nil)
	params := `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c"},"progressToken":"t1"},"name":"alpha_echo","arguments":{"x":"s"}}`
	status, out := rpc(t, srv.URL, fedAliceKey, "tools/call", params,
		map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "alpha_echo"})
	if status != 200 || out.Error != nil || !strings.HasPrefix(string(out.Result), `{"resultType":"complete","content":`) {
		t.Fatalf("status %d %s %+v", status, out.Result, out.Error)
	}
	// The server gets the session dialect: no stateless _meta keys, the
	// rest of _meta kept.
	body := servers["alpha"].requests()[0].body
	if strings.Contains(body, "io.modelcontextprotocol/") || !strings.Contains(body, `"progressToken":"t1"`) {
		t.Errorf("forwarded %s", body)
	}
}

func TestFederatedBackendHeaders(t *testing.T) {
	alpha := newFakeMCP(t, "alpha", "json", "echo")
	gamma := newFakeMCP(t, "gamma", "session", "fetch")
	_, srv, _ := fedGateway(t, nil, map[string]interface{}{"mcpServers": map[string]interface{}{
		"alpha": map[string]interface{}{"url": alpha.URL, "headers": map[string]string{"X-Backend-Token": "tok-alpha"}},
		"gamma": map[string]interface{}{"url": gamma.URL},
	}}, nil)
	traceID := "4bf92f3577b34da6a3ce929d0e0e4736"
	headers := map[string]string{"X-Api-Key": fedAliceKey, "Cookie": "c=1", "Traceparent": "00-" + traceID + "-00f067aa0ba902b7-01",
		"Tracestate": "vendor=x", "X-Request-Id": "req-fed-1"}
	rpc(t, srv.URL, fedAliceKey, "tools/list", `{}`, headers)
	rpc(t, srv.URL, fedAliceKey, "tools/call", `{"name":"alpha_echo"}`, headers)
	spans := map[string]bool{}
	all := append(alpha.requests(), gamma.requests()...)
	for i, r := range all {
		h := r.header
		for _, k := range []string{"Authorization", "X-Api-Key", "Cookie"} {
			if h.Get(k) != "" {
				t.Errorf("request %d carried %s", i, k)
			}
		}
		tp := h.Get("Traceparent")
		if !validTraceparent(tp) || tp[3:35] != traceID || tp[53:] != "01" || h.Get("Tracestate") != "vendor=x" || h.Get("X-Request-Id") != "req-fed-1" {
			t.Errorf("request %d trace %q %q %q", i, tp, h.Get("Tracestate"), h.Get("X-Request-Id"))
		}
		if spans[tp] {
			t.Errorf("request %d reuses span %s", i, tp)
		}
		spans[tp] = true
		if r.httpMethod == http.MethodPost && (h.Get("Accept") != "application/json, text/event-stream" || h.Get("Content-Type") != "application/json") {
			t.Errorf("request %d Accept %q Content-Type %q", i, h.Get("Accept"), h.Get("Content-Type"))
		}
		if h.Get("Mcp-Protocol-Version") == "" {
			t.Errorf("request %d without MCP-Protocol-Version", i)
		}
	}
	for _, r := range alpha.requests() {
		if r.header.Get("X-Backend-Token") != "tok-alpha" {
			t.Errorf("alpha's configured header missing")
		}
	}
	for _, r := range gamma.requests() {
		if r.header.Get("X-Backend-Token") != "" {
			t.Errorf("alpha's header went to gamma")
		}
	}
}

func TestFederatedToolsCache(t *testing.T) {
	servers := map[string]*fakeMCP{"alpha": newFakeMCP(t, "alpha", "json", "echo"), "beta": newFakeMCP(t, "beta", "sse", "search")}
	var mu sync.Mutex
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	g, srv, _ := fedGateway(t, servers, nil, func(g *Gateway) { g.mcp.now = clock })
	lists := func(name string) int {
		n := 0
		for _, r := range servers[name].requests() {
			if r.rpcMethod == "tools/list" {
				n++
			}
		}
		return n
	}
	list := func() {
		t.Helper()
		if _, out := rpc(t, srv.URL, fedAliceKey, "tools/list", `{}`, nil); len(toolNames(t, out.Result)) != 2 {
			t.Fatalf("tools %s", out.Result)
		}
	}
	list()
	list()
	if lists("alpha") != 1 || lists("beta") != 1 {
		t.Errorf("within the TTL: %d, %d listings", lists("alpha"), lists("beta"))
	}
	advance(federatedToolsTTL - time.Second)
	list()
	if lists("alpha") != 1 {
		t.Errorf("just before the TTL: %d listings", lists("alpha"))
	}
	advance(2 * time.Second)
	list()
	if lists("alpha") != 2 || lists("beta") != 2 {
		t.Errorf("after the TTL: %d, %d listings", lists("alpha"), lists("beta"))
	}
	// A cached server is not contacted, so not counted.
	if n := targetCount(g, "alpha"); n != 2 {
		t.Errorf("alpha counted %d times", n)
	}
	// notifications/tools/list_changed in a tools/call's stream drops
	// beta's listing only.
	servers["beta"].listChanged.Store(true)
	if _, out := rpc(t, srv.URL, fedAliceKey, "tools/call", `{"name":"beta_search"}`, nil); out.Error != nil {
		t.Fatalf("call: %+v", out.Error)
	}
	list()
	if lists("alpha") != 2 || lists("beta") != 3 {
		t.Errorf("after list_changed: %d, %d listings", lists("alpha"), lists("beta"))
	}
	// Seen during a listing, it keeps that listing out of the cache.
	servers["beta"].listChanged.Store(true)
	advance(federatedToolsTTL)
	list()
	list()
	if lists("beta") != 5 {
		t.Errorf("a listing that saw list_changed was cached: %d listings", lists("beta"))
	}
}

func TestFederatedPagination(t *testing.T) {
	f := newFakeMCP(t, "alpha", "sse", "t0", "t1", "t2", "t3", "t4", "t5")
	f.pages = 3
	many := newFakeMCP(t, "many", "json")
	for i := 0; i < 24; i++ {
		many.tools = append(many.tools, "m"+strconv.Itoa(i))
	}
	many.pages = 12 // two more than the gateway follows
	_, srv, logs := fedGateway(t, map[string]*fakeMCP{"alpha": f, "many": many}, nil, nil)
	_, out := rpc(t, srv.URL, fedAliceKey, "tools/list", `{}`, nil)
	names := toolNames(t, out.Result)
	if got := strings.Join(names[:6], ","); got != "alpha_t0,alpha_t1,alpha_t2,alpha_t3,alpha_t4,alpha_t5" {
		t.Errorf("tools %s", got)
	}
	if len(names) != 6+2*maxToolPages {
		t.Errorf("%d tools: %v", len(names), names)
	}
	if !strings.Contains(f.requests()[2].body, `"cursor":"page-2"`) {
		t.Errorf("third page: %s", f.requests()[2].body)
	}
	if !strings.Contains(logs.String(), `mcp server "many": its tools/list has more than 10 pages`) {
		t.Errorf("logs:\n%s", logs.String())
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

func TestFederatedCountersAndLimits(t *testing.T) {
	servers := fedTrio(t)
	servers["down"] = newFakeMCP(t, "down", "fail", "x")
	g, srv, _ := fedGateway(t, servers, map[string]interface{}{
		"groups": map[string]interface{}{
			"all":    map[string]interface{}{"limits": map[string]interface{}{"requestsPerMinute": 3}},
			"narrow": map[string]interface{}{"mcpServers": []string{"alpha*"}, "mcpTools": []string{"alpha_echo"}},
		},
	}, nil)
	// One listing over four servers is one request for the limiter, and
	// one for each server attempted (failed or not).
	if _, out := rpc(t, srv.URL, fedAliceKey, "tools/list", `{}`, nil); out.Error != nil {
		t.Fatalf("%+v", out.Error)
	}
	rpc(t, srv.URL, fedAliceKey, "tools/call", `{"name":"alpha_echo"}`, nil)
	// A JSON-RPC error after dispatch still counts.
	rpc(t, srv.URL, fedAliceKey, "tools/call", `{"name":"nosuch_x"}`, nil)
	resp, body := postMCP(t, srv.URL, fedAliceKey, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil)
	expectEnvelope(t, resp, body, 429, "rate_limit_error", "rate_limit_exceeded")
	for name, want := range map[string]int64{"alpha": 2, "beta": 1, "gamma_x": 1, "down": 1} {
		if n := targetCount(g, name); n != want {
			t.Errorf("%s counted %d, want %d", name, n, want)
		}
	}
	snap := g.limiter.counters.(interface {
		Snapshot(prefix string) map[string]int64
	}).Snapshot("llmgw:tcaller:mcp:alpha:alice:req:day:")
	if len(snap) != 1 {
		t.Errorf("per-caller counters %v", snap)
	}
	// A malformed envelope is refused before the limiter: a parse error,
	// not a 429.
	resp, _ = postMCP(t, srv.URL, fedAliceKey, `{"jsonrpc":`, nil)
	if resp.StatusCode != 400 {
		t.Errorf("malformed after the limit: %d (it must not reach the limiter)", resp.StatusCode)
	}
}

func TestFederatedLoopAPI(t *testing.T) {
	servers := fedTrio(t)
	g, _, _ := fedGateway(t, servers, nil, nil)
	user := userByName(t, g, "alice")
	tr := &requestTrace{requestID: "loop-1", traceID: "4bf92f3577b34da6a3ce929d0e0e4736", flags: "00"}
	tools, err := g.federatedTools(context.Background(), user, tr)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ft := range tools {
		names = append(names, ft.name+"="+ft.server+"/"+ft.tool)
		if ft.description == "" || !strings.Contains(string(ft.inputSchema), `"type":"object"`) {
			t.Errorf("tool %+v", ft)
		}
	}
	if got := strings.Join(names, ","); got != "alpha_echo=alpha/echo,alpha_add=alpha/add,beta_search=beta/search,gamma_x_fetch=gamma_x/fetch" {
		t.Errorf("tools %s", got)
	}
	res, err := g.callFederatedTool(context.Background(), user, "gamma_x_fetch", json.RawMessage(`{"x":"y"}`), tr)
	if err != nil || !strings.Contains(string(res), `gamma_x:fetch:{\"x\":\"y\"}`) {
		t.Errorf("call: %s %v", res, err)
	}
	_, err = g.callFederatedTool(context.Background(), user, "alpha_nosuch", nil, tr)
	te, ok := err.(*mcpToolError)
	if !ok || te.code != -32602 || te.message != "unknown tool" {
		t.Errorf("backend error: %v", err)
	}
	_, err = g.callFederatedTool(context.Background(), user, "zzz_x", nil, tr)
	if te, ok := err.(*mcpToolError); !ok || te.code != -32602 {
		t.Errorf("unresolvable: %v", err)
	}
	bob := userByName(t, g, "bob")
	tools, err = g.federatedTools(context.Background(), bob, tr)
	if err != nil || len(tools) != 1 || tools[0].name != "alpha_echo" {
		t.Errorf("bob's tools %v %v", tools, err)
	}
}

func TestFederatedCallTimeout(t *testing.T) {
	slow := newFakeMCP(t, "slow", "slow", "x")
	g, srv, _ := fedGateway(t, map[string]*fakeMCP{"slow": slow}, nil, func(g *Gateway) { g.mcp.callTimeout = 200 * time.Millisecond })
	status, out := rpc(t, srv.URL, fedAliceKey, "tools/call", `{"name":"slow_x"}`, nil)
	if status != 200 || out.Error == nil || out.Error.Code != -32603 || out.Error.Message != `mcp server "slow" failed: timeout after 200ms` {
		t.Errorf("status %d %+v", status, out.Error)
	}
	// A timeout is not a reason for the handshake.
	if got := strings.Join(slow.calls(), "|"); got != "POST tools/call" {
		t.Errorf("exchange %s", got)
	}
	if v := g.target(targetMCP, "slow").health.view(); v.LastError == nil || *v.LastError != "timeout after 200ms" {
		t.Errorf("health %+v", v)
	}
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

// FuzzMCPAnswer: a backend's answer, JSON or an event stream, is either
// one JSON-RPC outcome (a result or an error) or a failure in the
// gateway's own words — never a panic, never a backend byte in the
// message.
func FuzzMCPAnswer(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"x"}}`,
		`{"jsonrpc":"2.0","id":2,"result":{}}`, `{"jsonrpc":"2.0","id":1}`, `[1]`,
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
		"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"res", ": only a comment\n\n",
	} {
		f.Add([]byte(seed), seed[0] != '{' && seed[0] != '[')
	}
	f.Fuzz(func(t *testing.T, body []byte, stream bool) {
		x := &mcpExchange{ctx: context.Background(), parent: context.Background(), timeout: time.Second, t: &targetRuntime{name: "f"}}
		var a *mcpAnswer
		var fail *mcpFailure
		if stream {
			a, fail = readMCPStream(x, strings.NewReader(string(body)), "1", &mcpAnswer{})
		} else {
			a, fail = readMCPJSON(x, strings.NewReader(string(body)), "1", &mcpAnswer{})
		}
		if fail != nil {
			if a != nil || fail.message == "" || len(body) > 8 && strings.Contains(fail.message, string(body)) {
				t.Fatalf("failure %+v for %q", fail, body)
			}
			return
		}
		if (len(a.result) == 0) == (len(a.rpcError) == 0) {
			t.Fatalf("answer %+v for %q", a, body)
		}
	})
}
