package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The federation (mcp_federation.go, mcp_client.go) against the fake MCP
// servers of mcp_federated_test.go: the fan-out, tools/call routing, the
// session handshake, the cache, the backend requests, counters and
// health.

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

// A server configured with a trailing slash ("…/mcp/", a ServeMux
// subtree) is POSTed at exactly that URL: the slash-less form would be
// redirected, and the call fail.
func TestFederatedTrailingSlashEndpoint(t *testing.T) {
	f := newFakeMCP(t, "slash", "json", "echo")
	mux := http.NewServeMux()
	mux.Handle("/mcp/", f)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	_, base, _ := fedGateway(t, map[string]*fakeMCP{}, map[string]interface{}{
		"mcpServers": map[string]interface{}{"slash": map[string]interface{}{"url": srv.URL + "/mcp/"}}}, nil)
	status, reply := rpc(t, base.URL, fedAliceKey, "tools/list", `{}`, nil)
	if status != 200 || reply.Error != nil || len(toolNames(t, reply.Result)) != 1 || toolNames(t, reply.Result)[0] != "slash_echo" {
		t.Fatalf("tools/list through a trailing-slash URL: %d %+v %s", status, reply.Error, reply.Result)
	}
}
