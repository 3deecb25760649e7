package gateway

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/store"
)

// The per-target proxy against fake targets speaking the wire formats:
// Streamable HTTP (JSON and SSE answers), legacy HTTP+SSE (the endpoint
// event), and A2A (the agent card).

const (
	proxyAliceKey = "sk-proxy-alice"
	proxyBobKey   = "sk-proxy-bob"
	proxySlowKey  = "sk-proxy-slow"
	proxyToken    = "target-token-0123456789"
)

// proxyConfig serves the MCP servers and agents blocks (JSON members,
// without braces) with requestTimeout. alice reaches every target; bob
// (group other) only "other"; slow may send one request a minute.
func proxyConfig(servers, agents, requestTimeout, extra string) string {
	if requestTimeout == "" {
		requestTimeout = "5s"
	}
	return `{` + extra + `
  "requestTimeout": "` + requestTimeout + `",
  "providers": {"p": {"type": "openai"}},
  "mcpServers": {` + servers + `},
  "agents": {` + agents + `},
  "groups": {"all": {}, "other": {"mcpServers": ["other"], "agents": ["other"]}, "slow": {"limits": {"requestsPerMinute": 1}}},
  "users": {"inline": [
    {"name": "alice", "group": "all", "apiKey": "` + proxyAliceKey + `"},
    {"name": "bob", "group": "other", "apiKey": "` + proxyBobKey + `"},
    {"name": "slow", "group": "slow", "apiKey": "` + proxySlowKey + `"}
  ]}
}`
}

// proxyGateway serves cfg, its records fed to the returned feed.
func proxyGateway(t *testing.T, cfg string) (*Gateway, string, recordFeed, *syncBuffer) {
	t.Helper()
	feed := make(recordFeed, 64)
	g, srv, logs := serveTestGateway(t, cfg, nil, func(g *Gateway) {
		g.recordHook = func(r *requestRecord) { feed <- *r }
	})
	return g, srv.URL, feed, logs
}

// mcpJSON answers an MCP request with a JSON-RPC result, setting the
// session on initialize and echoing what the proxy must pass through.
func mcpJSON() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "fail503") {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Mcp-Session-Id", "sess-from-server")
		w.Header().Set("X-Request-Id", "upstream-req-1")
		w.Header().Set("Traceparent", "00-11111111111111111111111111111111-2222222222222222-01")
		w.Header().Set("Connection", "X-Resp-Hop")
		w.Header().Set("X-Resp-Hop", "must-not-pass")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18"}}`)
	}
}

func TestTargetProxyRefusals(t *testing.T) {
	up := newFakeUpstream(t, mcpJSON())
	cfg := proxyConfig(`"main": {"url": "`+up.URL+`/mcp"}, "other": {"url": "`+up.URL+`/other"}`, `"agent": {"url": "`+up.URL+`/a2a"}`, "", "")
	_, base, feed, _ := proxyGateway(t, cfg)
	post := func(path, key string, h map[string]string) testRequest {
		headers := map[string]string{"Content-Type": "application/json"}
		if key != "" {
			headers["Authorization"] = "Bearer " + key
		}
		for k, v := range h {
			headers[k] = v
		}
		return testRequest{method: "POST", path: path, body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, headers: headers}
	}
	cases := []struct {
		name       string
		req        testRequest
		status     int
		kind, code string
	}{
		{"no_key", post("/mcp/main/", "", nil), 401, "authentication_error", "invalid_api_key"},
		{"wrong_key", post("/mcp/main/", "sk-nope", nil), 401, "authentication_error", "invalid_api_key"},
		{"unknown_server", post("/mcp/nope/", proxyAliceKey, nil), 404, "invalid_request_error", "target_not_found"},
		{"unknown_agent", post("/a2a/main/", proxyAliceKey, nil), 404, "invalid_request_error", "target_not_found"},
		{"empty_name", post("/mcp/", proxyAliceKey, nil), 404, "invalid_request_error", "target_not_found"},
		{"denied_server", post("/mcp/main/x", proxyBobKey, nil), 403, "permission_error", "target_not_allowed"},
		{"denied_agent", post("/a2a/agent", proxyBobKey, nil), 403, "permission_error", "target_not_allowed"},
		{"dotdot", post("/mcp/main/../admin", proxyAliceKey, nil), 400, "invalid_request_error", "invalid_path"},
		{"dot", post("/mcp/main/./x", proxyAliceKey, nil), 400, "invalid_request_error", "invalid_path"},
		{"escaped_dotdot", post("/mcp/main/%2e%2e/x", proxyAliceKey, nil), 400, "invalid_request_error", "invalid_path"},
		{"mixed_escaped_dotdot", post("/mcp/main/.%2E", proxyAliceKey, nil), 400, "invalid_request_error", "invalid_path"},
		{"escaped_slash_dotdot", post("/mcp/main/a%2F..%2Fb", proxyAliceKey, nil), 400, "invalid_request_error", "invalid_path"},
		{"escaped_backslash_dotdot", post("/mcp/main/a%5C..%5Cb", proxyAliceKey, nil), 400, "invalid_request_error", "invalid_path"},
		{"nul", post("/mcp/main/a%00b", proxyAliceKey, nil), 400, "invalid_request_error", "invalid_path"},
		{"control", post("/mcp/main/a%0Ab", proxyAliceKey, nil), 400, "invalid_request_error", "invalid_path"},
		{"tab", post("/mcp/main/a%09b", proxyAliceKey, nil), 400, "invalid_request_error", "invalid_path"},
		{"del", post("/mcp/main/a%7Fb", proxyAliceKey, nil), 400, "invalid_request_error", "invalid_path"},
		{"escaped_name_dotdot", post("/mcp/%2e%2e/x", proxyAliceKey, nil), 400, "invalid_request_error", "invalid_path"},
		{"upgrade", post("/mcp/main/", proxyAliceKey, map[string]string{"Upgrade": "websocket", "Connection": "Upgrade"}), 501, "invalid_request_error", "upgrade_not_supported"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := send(t, base, tc.req)
			expectEnvelope(t, resp, body, tc.status, tc.kind, tc.code)
			if resp.Header.Get("X-Request-Id") == "" {
				t.Error("no X-Request-Id on the refusal")
			}
			rec := feed.next(t)
			if rec.statusCode != tc.status || rec.errorCode != tc.code || rec.attempts != 0 {
				t.Errorf("record status %d code %q attempts %d", rec.statusCode, rec.errorCode, rec.attempts)
			}
		})
	}
	t.Run("rate_limited", func(t *testing.T) {
		resp, body := send(t, base, post("/mcp/main/", proxySlowKey, nil))
		if resp.StatusCode != 200 {
			t.Fatalf("first: %d %s", resp.StatusCode, body)
		}
		feed.next(t)
		resp, body = send(t, base, post("/mcp/main/", proxySlowKey, nil))
		expectEnvelope(t, resp, body, http.StatusTooManyRequests, "rate_limit_error", "rate_limit_exceeded")
		if rec := feed.next(t); rec.route != "mcp" || rec.statusCode != 429 {
			t.Errorf("record %+v", rec)
		}
	})
	if n := up.count(); n != 1 {
		t.Errorf("the target saw %d requests; only the first rate-limited one was allowed through", n)
	}
}

func TestTargetProxyHeadersAndPaths(t *testing.T) {
	up := newFakeUpstream(t, mcpJSON())
	cfg := proxyConfig(`"main": {"url": "`+up.URL+`/mcp"},
		"secure": {"url": "`+up.URL+`/secure?tenant=t1", "headers": {"Authorization": "Bearer `+proxyToken+`", "X-Target-Token": "`+proxyToken+`"}}`, "", "", "")
	_, base, feed, _ := proxyGateway(t, cfg)
	clientTrace := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	headers := map[string]string{
		"Authorization":        "Bearer " + proxyAliceKey,
		"X-Api-Key":            proxyAliceKey,
		"Cookie":               "session=browser",
		"Content-Type":         "application/json",
		"Accept":               "application/json, text/event-stream",
		"Mcp-Session-Id":       "sess-from-client",
		"Mcp-Protocol-Version": "2025-06-18",
		"Last-Event-Id":        "ev-41",
		"Origin":               "http://app.example",
		"Traceparent":          clientTrace,
		"X-Request-Id":         "client-req-7",
		"Connection":           "X-Client-Hop",
		"X-Client-Hop":         "hop-value",
		"X-Custom":             "end-to-end",
	}
	cases := []struct {
		name, method, path   string
		wantPath, wantQuery  string
		wantRawPath          string
		injected, authorized bool
	}{
		{name: "exact_name", method: "POST", path: "/mcp/main", wantPath: "/mcp"},
		{name: "trailing_slash", method: "POST", path: "/mcp/main/", wantPath: "/mcp"},
		{name: "rest_and_query", method: "POST", path: "/mcp/main/a/b?x=1&y=%20", wantPath: "/mcp/a/b", wantQuery: "x=1&y=%20"},
		{name: "escaped_slash_kept", method: "GET", path: "/mcp/main/a%2Fb", wantPath: "/mcp/a/b", wantRawPath: "/mcp/a%2Fb"},
		{name: "delete", method: "DELETE", path: "/mcp/main/", wantPath: "/mcp"},
		{name: "configured_query_and_headers", method: "POST", path: "/mcp/secure/?x=2", wantPath: "/secure", wantQuery: "tenant=t1&x=2", injected: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := ""
			if tc.method == "POST" {
				body = `{"jsonrpc":"2.0","id":1,"method":"initialize"}`
			}
			resp, got := send(t, base, testRequest{method: tc.method, path: tc.path, body: body, headers: headers})
			if resp.StatusCode != 200 || got != `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18"}}` {
				t.Fatalf("status %d body %s", resp.StatusCode, got)
			}
			// The answer's headers: the session relayed, hop-by-hop dropped,
			// the gateway's ids.
			if v := resp.Header.Get("Mcp-Session-Id"); v != "sess-from-server" {
				t.Errorf("Mcp-Session-Id = %q", v)
			}
			if v := resp.Header.Get("X-Resp-Hop"); v != "" {
				t.Errorf("hop-by-hop response header relayed: %q", v)
			}
			if v := resp.Header.Values("X-Request-Id"); len(v) != 1 || v[0] != "client-req-7" {
				t.Errorf("X-Request-Id = %v", v)
			}
			if v := resp.Header.Get("X-Upstream-Request-Id"); v != "upstream-req-1" {
				t.Errorf("X-Upstream-Request-Id = %q", v)
			}
			if v := resp.Header.Values("Traceparent"); len(v) != 1 || !strings.HasPrefix(v[0], "00-0af7651916cd43dd8448eb211c80319c-") {
				t.Errorf("Traceparent = %v", v)
			}
			r := up.last(t)
			if r.method != tc.method || r.path != tc.wantPath || r.query != tc.wantQuery {
				t.Errorf("upstream got %s %s ? %s, want %s %s ? %s", r.method, r.path, r.query, tc.method, tc.wantPath, tc.wantQuery)
			}
			h := r.header
			for k, want := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
				"Mcp-Session-Id": "sess-from-client", "Mcp-Protocol-Version": "2025-06-18", "Last-Event-Id": "ev-41",
				"Origin": "http://app.example", "X-Custom": "end-to-end", "X-Request-Id": "client-req-7"} {
				if tc.method != "POST" && k == "Content-Type" {
					continue
				}
				if got := h.Get(k); got != want {
					t.Errorf("upstream %s = %q, want %q", k, got, want)
				}
			}
			for _, k := range []string{"X-Api-Key", "Cookie", "X-Client-Hop", "Accept-Encoding"} {
				if v := h.Get(k); v != "" && !(k == "Accept-Encoding" && v == "gzip") {
					t.Errorf("upstream got %s: %q", k, v)
				}
			}
			if tp := h.Get("Traceparent"); !strings.HasPrefix(tp, "00-0af7651916cd43dd8448eb211c80319c-") || tp == clientTrace || !validTraceparent(tp) {
				t.Errorf("upstream traceparent %q: the client's trace, a span of the gateway's", tp)
			}
			if tc.injected {
				if h.Get("Authorization") != "Bearer "+proxyToken || h.Get("X-Target-Token") != proxyToken {
					t.Errorf("configured headers not injected: %v", h)
				}
			} else if v := h.Get("Authorization"); v != "" {
				t.Errorf("the caller's Authorization reached the target: %q", v)
			}
			if strings.Contains(strings.Join(h.Values("Authorization"), " ")+h.Get("X-Api-Key"), proxyAliceKey) {
				t.Error("the gateway key reached the target")
			}
			rec := feed.next(t)
			name := strings.Split(tc.path, "/")[2]
			if rec.route != "mcp" || rec.provider != name || rec.user != "alice" || rec.statusCode != 200 || rec.errorCode != "" ||
				rec.attempts != 1 || rec.method != tc.method || rec.latency <= 0 || rec.firstByte.IsZero() {
				t.Errorf("record %+v", rec)
			}
		})
	}
	t.Run("escaped_path_raw", func(t *testing.T) {
		// The fake records the decoded path; the target URL keeps the
		// client's escaping.
		tt := &targetRuntime{kind: targetMCP, name: "main", base: mustParseURL(t, "http://h/mcp")}
		in := mustParseURL(t, "http://gw/mcp/main/a%2Fb?q=1")
		u := targetURL(tt, "a%2Fb", in)
		if u.String() != "http://h/mcp/a%2Fb?q=1" {
			t.Errorf("targetURL = %s", u)
		}
	})
}

func mustParseURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestTargetProxySSEFlushedPerEvent: each event of a POST's SSE answer
// reaches the client before the target writes the next one.
func TestTargetProxySSEFlushedPerEvent(t *testing.T) {
	const events = 3
	gates := make([]chan struct{}, events)
	for i := 0; i < events; i++ {
		gates[i] = make(chan struct{})
	}
	timedOut := make(chan int, events)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Mcp-Session-Id", "sse-session")
		w.WriteHeader(200)
		for i := 0; i < events; i++ {
			_, _ = io.WriteString(w, "id: "+strconv.Itoa(i)+"\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"n\":"+strconv.Itoa(i)+"}}\n\n")
			w.(http.Flusher).Flush()
			select {
			case <-gates[i]:
			case <-time.After(5 * time.Second):
				timedOut <- i
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	_, base, feed, _ := proxyGateway(t, proxyConfig(`"sse": {"url": "`+srv.URL+`/mcp"}`, "", "", ""))
	req, _ := http.NewRequest("POST", base+"/mcp/sse/", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`))
	req.Header.Set("Authorization", "Bearer "+proxyAliceKey)
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get("Mcp-Session-Id") != "sse-session" {
		t.Fatalf("status %d headers %v", resp.StatusCode, resp.Header)
	}
	rd := bufio.NewReader(resp.Body)
	for i := 0; i < events; i++ {
		var block strings.Builder
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				t.Fatalf("event %d: %v (read %q)", i, err, block.String())
			}
			block.WriteString(line)
			if line == "\n" {
				break
			}
		}
		want := "id: " + strconv.Itoa(i) + "\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"n\":" + strconv.Itoa(i) + "}}\n\n"
		if block.String() != want {
			t.Errorf("event %d = %q, want %q", i, block.String(), want)
		}
		// The target holds the next event until the client has this one.
		close(gates[i])
	}
	if rest, _ := io.ReadAll(rd); len(rest) != 0 {
		t.Errorf("trailing bytes %q", rest)
	}
	select {
	case i := <-timedOut:
		t.Fatalf("event %d never reached the client while the target waited: the stream was buffered", i)
	default:
	}
	if rec := feed.next(t); rec.statusCode != 200 || rec.errorCode != "" {
		t.Errorf("record %+v", rec)
	}
}

// TestTargetProxyLongStream: a GET event stream lives past
// requestTimeout while events keep coming, and is ended once nothing came
// for requestTimeout.
func TestTargetProxyLongStream(t *testing.T) {
	// The flowing stream outlasts the stall timeout (1 s) with an event
	// every 20 ms: a gap 50 times the interval, which no load here makes.
	const timeout, lasts, gap = time.Second, 1500 * time.Millisecond, 20 * time.Millisecond
	sent := make(chan int, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		if r.URL.Path == "/mcp/idle" {
			_, _ = io.WriteString(w, "data: 0\n\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		start, n := time.Now(), 0
		for ; n == 0 || time.Since(start) < lasts; n++ {
			_, _ = io.WriteString(w, "data: "+strconv.Itoa(n)+"\n\n")
			w.(http.Flusher).Flush()
			time.Sleep(gap)
		}
		sent <- n
	}))
	t.Cleanup(srv.Close)
	_, base, feed, _ := proxyGateway(t, proxyConfig(`"s": {"url": "`+srv.URL+`/mcp"}`, "", timeout.String(), ""))
	started := time.Now()
	resp, body := send(t, base, testRequest{method: "GET", path: "/mcp/s/", headers: map[string]string{"Authorization": "Bearer " + proxyAliceKey, "Accept": "text/event-stream"}})
	events := <-sent
	if resp.StatusCode != 200 || strings.Count(body, "data: ") != events {
		t.Fatalf("status %d, %d events of %d, body %q", resp.StatusCode, strings.Count(body, "data: "), events, body)
	}
	if took := time.Since(started); took < timeout {
		t.Fatalf("the stream took %s, less than the %s timeout it must outlast", took, timeout)
	}
	if rec := feed.next(t); rec.errorCode != "" {
		t.Errorf("a flowing stream recorded %q", rec.errorCode)
	}
	// The idle stream is cut: the client sees the event, then the
	// connection end before the chunked body's end.
	req, _ := http.NewRequest("GET", base+"/mcp/s/idle", nil)
	req.Header.Set("Authorization", "Bearer "+proxyAliceKey)
	idle, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(idle.Body)
	idle.Body.Close()
	if idle.StatusCode != 200 || string(data) != "data: 0\n\n" || err != io.ErrUnexpectedEOF {
		t.Fatalf("idle stream: status %d body %q err %v", idle.StatusCode, data, err)
	}
	if rec := feed.next(t); rec.errorCode != "upstream_timeout" || rec.errorClass != "stall" || rec.statusCode != 200 {
		t.Errorf("idle stream record: code %q class %q status %d", rec.errorCode, rec.errorClass, rec.statusCode)
	}
}

// legacyServer is a legacy HTTP+SSE server: GET <stream> answers the
// endpoint event (endpoint) between a comment and a message event;
// anything else is recorded (the client's posts).
func legacyServer(t *testing.T, stream string, endpoint func(origin string) string, crlf bool) (*fakeUpstream, string) {
	var origin string
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "GET" && r.URL.Path == stream {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, legacyStream(endpoint(origin), crlf))
			return
		}
		w.WriteHeader(http.StatusAccepted)
	})
	origin = up.URL
	return up, up.URL
}

func legacyStream(endpoint string, crlf bool) string {
	s := ": welcome\n\nevent: endpoint\ndata: " + endpoint + "\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{}}\n\n"
	if crlf {
		s = strings.ReplaceAll(s, "\n", "\r\n")
	}
	return s
}

func TestTargetProxyLegacyEndpoint(t *testing.T) {
	cases := []struct {
		name       string
		urlPath    string // the configured URL's path
		getPath    string // the client's GET through the proxy
		stream     string // the upstream path of the stream
		endpoint   func(origin string) string
		crlf       bool
		rewritten  string // "" when relayed unchanged
		upPath     string // where the rewritten endpoint's POST lands
		upQuery    string
		logMessage string
	}{
		{name: "absolute_path_below_base", urlPath: "/x/sse", getPath: "/mcp/leg/sse", stream: "/x/sse",
			endpoint: func(string) string { return "/x/messages?sessionId=abc" }, rewritten: "/mcp/leg/messages?sessionId=abc", upPath: "/x/messages", upQuery: "sessionId=abc"},
		{name: "configured_url_itself", urlPath: "/x/sse", getPath: "/mcp/leg", stream: "/x/sse",
			endpoint: func(string) string { return "/x/messages?sessionId=abc" }, rewritten: "/mcp/leg/messages?sessionId=abc", upPath: "/x/messages", upQuery: "sessionId=abc"},
		{name: "relative", urlPath: "/x/sse", getPath: "/mcp/leg/sse", stream: "/x/sse",
			endpoint: func(string) string { return "messages/?sessionId=r1" }, rewritten: "/mcp/leg/messages/?sessionId=r1", upPath: "/x/messages/", upQuery: "sessionId=r1"},
		{name: "absolute_same_origin", urlPath: "/x/sse", getPath: "/mcp/leg/sse", stream: "/x/sse",
			endpoint: func(o string) string { return o + "/x/deep/post?sessionId=a%2Fb" }, rewritten: "/mcp/leg/deep/post?sessionId=a%2Fb", upPath: "/x/deep/post", upQuery: "sessionId=a%2Fb"},
		{name: "root_sse", urlPath: "/sse", getPath: "/mcp/leg/sse", stream: "/sse",
			endpoint: func(string) string { return "/messages?sessionId=1" }, rewritten: "/mcp/leg/messages?sessionId=1", upPath: "/messages", upQuery: "sessionId=1"},
		{name: "crlf", urlPath: "/x/sse", getPath: "/mcp/leg/sse", stream: "/x/sse", crlf: true,
			endpoint: func(string) string { return "/x/m?s=2" }, rewritten: "/mcp/leg/m?s=2", upPath: "/x/m", upQuery: "s=2"},
		{name: "streamable_server_get", urlPath: "/mcp", getPath: "/mcp/leg/", stream: "/mcp",
			endpoint: func(string) string { return "/mcp/post?id=3" }, rewritten: "/mcp/leg/post?id=3", upPath: "/mcp/post", upQuery: "id=3"},
		{name: "other_origin_unchanged", urlPath: "/x/sse", getPath: "/mcp/leg/sse", stream: "/x/sse",
			endpoint: func(string) string { return "http://elsewhere.example/x/messages?sessionId=z" }, logMessage: "outside the target's base path"},
		{name: "outside_base_unchanged", urlPath: "/x/sse", getPath: "/mcp/leg/sse", stream: "/x/sse",
			endpoint: func(string) string { return "/y/messages?sessionId=z" }, logMessage: "outside the target's base path"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up, origin := legacyServer(t, tc.stream, tc.endpoint, tc.crlf)
			_, base, feed, logs := proxyGateway(t, proxyConfig(`"leg": {"url": "`+origin+tc.urlPath+`"}`, "", "", ""))
			auth := map[string]string{"Authorization": "Bearer " + proxyAliceKey, "Accept": "text/event-stream"}
			resp, body := send(t, base, testRequest{method: "GET", path: tc.getPath, headers: auth})
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			feed.next(t)
			want := legacyStream(tc.endpoint(origin), tc.crlf)
			if tc.rewritten != "" {
				want = legacyStream(tc.rewritten, tc.crlf)
			}
			if body != want {
				t.Fatalf("stream\n got %q\nwant %q", body, want)
			}
			if tc.rewritten == "" {
				if !strings.Contains(logs.String(), tc.logMessage) || strings.Contains(logs.String(), "sessionId=z") {
					t.Errorf("log lacks %q (or names the URL): %s", tc.logMessage, logs.String())
				}
				return
			}
			// The client posts to the rewritten endpoint: the proxy maps it
			// back to the URL the target named.
			resp, body = send(t, base, testRequest{method: "POST", path: tc.rewritten, body: `{"jsonrpc":"2.0","id":1,"method":"initialize"}`,
				headers: bearer(proxyAliceKey)})
			if resp.StatusCode != http.StatusAccepted {
				t.Fatalf("post: status %d %s", resp.StatusCode, body)
			}
			feed.next(t)
			r := up.last(t)
			if r.method != "POST" || r.path != tc.upPath || r.query != tc.upQuery {
				t.Errorf("the post reached %s %s?%s, want %s?%s", r.method, r.path, r.query, tc.upPath, tc.upQuery)
			}
		})
	}
}

func TestSSEBlockEnd(t *testing.T) {
	cases := map[string]int{"": -1, "data: x\n": -1, "data: x\n\n": 9, "a\r\n\r\nb\n\n": 5, "a\n\nb\r\n\r\n": 3, ": c\n\n": 5}
	for in, want := range cases {
		if got := sseBlockEnd([]byte(in)); got != want {
			t.Errorf("sseBlockEnd(%q) = %d, want %d", in, got, want)
		}
	}
}

const testCard = `{
  "protocolVersion": "0.3.0",
  "name": "Weather Agent — ünïcode",
  "url":"AGENT/a2a/v1",
  "preferredTransport": "JSONRPC",
  "additionalInterfaces": [ {"transport": "JSONRPC", "url": "AGENT/a2a/v1"}, {"url" : "AGENT/a2a/rest", "transport": "HTTP+JSON"},
    {"transport": "GRPC", "url": "grpc.example:443"} ],
  "supportedInterfaces": [{"protocolBinding": "JSONRPC", "url": "https://public.example/a2a/v1", "protocolVersion": "1.0"}],
  "capabilities": {"streaming": true, "url": "nested-not-rewritten"},
  "skills": [{"id": "forecast", "examples": ["Rain in <Paris> & Lyon?"]}]
}`

func TestTargetProxyAgentCard(t *testing.T) {
	var origin string
	big := `{"url":"x","pad":"` + strings.Repeat("p", maxAgentCardBytes) + `"}`
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/.well-known/agent-card.json":
			_, _ = io.WriteString(w, strings.ReplaceAll(testCard, "AGENT", origin))
		case "/big/card":
			_, _ = io.WriteString(w, big)
		case "/text/card":
			_, _ = io.WriteString(w, `not json {"url":"x"}`)
		default:
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":"r1","result":{"kind":"message","role":"agent","parts":[{"kind":"text","text":"ok"}]}}`)
		}
	})
	origin = up.URL
	cfg := proxyConfig("", `"weather": {"url": "`+up.URL+`"}, "big": {"url": "`+up.URL+`/big", "card": "/card"}, "text": {"url": "`+up.URL+`/text", "card": "/card"}`,
		"", `"trustedProxies": ["10.9.9.9"],`)
	_, base, feed, logs := proxyGateway(t, cfg)
	host := strings.TrimPrefix(base, "http://")
	gw := "http://" + host + "/a2a/weather"
	wantCard := testCard
	wantCard = strings.Replace(wantCard, `"url":"AGENT/a2a/v1"`, `"url":"`+gw+`/a2a/v1"`, 1)
	wantCard = strings.Replace(wantCard, `"url": "AGENT/a2a/v1"`, `"url": "`+gw+`/a2a/v1"`, 1)
	wantCard = strings.Replace(wantCard, `"url" : "AGENT/a2a/rest"`, `"url" : "`+gw+`/a2a/rest"`, 1)
	wantCard = strings.Replace(wantCard, `"url": "grpc.example:443"`, `"url": "`+gw+`"`, 1)
	wantCard = strings.Replace(wantCard, `"url": "https://public.example/a2a/v1"`, `"url": "`+gw+`"`, 1)

	resp, body := send(t, base, testRequest{method: "GET", path: "/a2a/weather/.well-known/agent-card.json", headers: bearer(proxyAliceKey)})
	if resp.StatusCode != 200 || body != wantCard {
		t.Fatalf("status %d card\n got %s\nwant %s", resp.StatusCode, body, wantCard)
	}
	if resp.Header.Get("Content-Length") != strconv.Itoa(len(wantCard)) {
		t.Errorf("Content-Length %q for %d bytes", resp.Header.Get("Content-Length"), len(wantCard))
	}
	if rec := feed.next(t); rec.route != "a2a" || rec.provider != "weather" || rec.statusCode != 200 {
		t.Errorf("record %+v", rec)
	}
	// The rewritten url reaches the agent through the gateway.
	resp, body = send(t, base, testRequest{method: "POST", path: "/a2a/weather/a2a/v1", headers: bearer(proxyAliceKey),
		body: `{"jsonrpc":"2.0","id":"r1","method":"message/send","params":{"message":{"kind":"message","messageId":"m-1","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`})
	if resp.StatusCode != 200 || !strings.Contains(body, `"text":"ok"`) || up.last(t).path != "/a2a/v1" {
		t.Errorf("message/send: %d %s (upstream path %q)", resp.StatusCode, body, up.last(t).path)
	}
	feed.next(t)
	// X-Forwarded-* from a peer that is not a trusted proxy are ignored.
	_, body = send(t, base, testRequest{method: "GET", path: "/a2a/weather/.well-known/agent-card.json",
		headers: map[string]string{"Authorization": "Bearer " + proxyAliceKey, "X-Forwarded-Proto": "https", "X-Forwarded-Host": "evil.example"}})
	if body != wantCard {
		t.Errorf("untrusted X-Forwarded-* used: %s", body)
	}
	feed.next(t)
	for _, tc := range []struct{ name, path, want, log string }{
		{"over_cap", "/a2a/big/card", big, "exceeds"},
		{"not_json", "/a2a/text/card", `not json {"url":"x"}`, "not a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := send(t, base, testRequest{method: "GET", path: tc.path, headers: bearer(proxyAliceKey)})
			if resp.StatusCode != 200 || body != tc.want {
				t.Errorf("status %d, body of %d bytes (want %d, unchanged)", resp.StatusCode, len(body), len(tc.want))
			}
			if !strings.Contains(logs.String(), tc.log) {
				t.Errorf("log lacks %q", tc.log)
			}
			feed.next(t)
		})
	}
}

func TestPublicOriginTrustedProxy(t *testing.T) {
	g, err := newGatewayFromConfig(t, proxyConfig("", "", "", `"trustedProxies": ["10.0.0.0/8"],`))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, remote, proto, host, want string
	}{
		{"direct", "192.0.2.1:5000", "https", "evil.example", "http://gw.example:8080"},
		{"trusted", "10.1.2.3:5000", "https", "public.example", "https://public.example"},
		{"trusted_list", "10.1.2.3:5000", "https, http", "a.example, b.example", "https://a.example"},
		{"trusted_bad_values", "10.1.2.3:5000", "gopher", "bad host/x", "http://gw.example:8080"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "http://gw.example:8080/a2a/x/card", nil)
			r.RemoteAddr = tc.remote
			r.Header.Set("X-Forwarded-Proto", tc.proto)
			r.Header.Set("X-Forwarded-Host", tc.host)
			if got := publicOrigin(&call{g: g, r: r}); got != tc.want {
				t.Errorf("publicOrigin = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTargetProxyFailures(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURL := "http://" + closed.Addr().String()
	closed.Close()
	release := make(chan struct{})
	stall := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(stall.Close)
	t.Cleanup(func() { close(release) })
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/e503":
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
		case "/e404":
			http.Error(w, "unknown session", http.StatusNotFound)
		default:
			w.WriteHeader(200)
		}
	})
	cfg := proxyConfig(`"dead": {"url": "`+deadURL+`/mcp?token=SECRET-QUERY"}, "stall": {"url": "`+stall.URL+`/mcp"},
		"e503": {"url": "`+up.URL+`/e503"}, "e404": {"url": "`+up.URL+`/e404"}`, "", "300ms", `"targetHealth": {"failureThreshold": 2},`)
	g, base, feed, logs := proxyGateway(t, cfg)
	cases := []struct {
		name, target     string
		status           int
		code, class      string
		state, lastError string
		failures         int
		event            string
	}{
		{"connection_refused", "dead", 502, "upstream_error", "connect", targetUnknown, "connection refused", 1, eventUpstream},
		{"connection_refused_again", "dead", 502, "upstream_error", "connect", targetUnhealthy, "connection refused", 2, eventUpstream},
		{"no_headers", "stall", 504, "upstream_timeout", "stall", targetUnknown, "timeout after 300ms", 1, eventTimeout},
		{"http_503", "e503", 503, "upstream_error", "server", targetUnknown, "HTTP 503", 1, eventUpstream},
		{"http_404_is_the_callers", "e404", 404, "", "", targetHealthy, "", 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := send(t, base, testRequest{method: "POST", path: "/mcp/" + tc.target + "/", body: `{}`, headers: bearer(proxyAliceKey)})
			switch tc.status {
			case 502, 504:
				d := expectEnvelope(t, resp, body, tc.status, "server_error", tc.code)
				if !strings.Contains(d.Message, `MCP server "`+tc.target+`"`) {
					t.Errorf("message %q", d.Message)
				}
			default:
				if resp.StatusCode != tc.status {
					t.Fatalf("status %d: %s", resp.StatusCode, body)
				}
			}
			if strings.Contains(body, "SECRET-QUERY") || strings.Contains(body, "127.0.0.1") {
				t.Errorf("the answer names the target's URL: %s", body)
			}
			rec := feed.next(t)
			if rec.route != "mcp" || rec.provider != tc.target || rec.statusCode != tc.status || rec.errorCode != tc.code || rec.errorClass != tc.class || rec.attempts != 1 {
				t.Errorf("record route %q provider %q status %d code %q class %q attempts %d", rec.route, rec.provider, rec.statusCode, rec.errorCode, rec.errorClass, rec.attempts)
			}
			v := g.target(targetMCP, tc.target).health.view()
			if v.State != tc.state || v.ConsecutiveFailures != tc.failures || v.Source != "passive" || v.LastError == nil || *v.LastError != tc.lastError || v.LatencyMs == nil {
				t.Errorf("health %+v (lastError %v)", v, v.LastError)
			}
			evs := g.events.recent(1)
			if tc.event == "" {
				if len(evs) > 0 && evs[0].Provider == tc.target {
					t.Errorf("an event for a 4xx: %+v", evs[0])
				}
				return
			}
			if len(evs) != 1 || evs[0].Kind != tc.event || evs[0].Route != "mcp" || evs[0].Provider != tc.target || evs[0].Status != tc.status {
				t.Errorf("events %+v", evs)
			}
		})
	}
	if strings.Contains(logs.String(), "SECRET-QUERY") {
		t.Errorf("the log names the target's URL query:\n%s", logs.String())
	}
}

// TestTargetProxyCounters: an allowed request counts once in the
// target's counters and the caller's; a refused one does not.
func TestTargetProxyCounters(t *testing.T) {
	up := newFakeUpstream(t, mcpJSON())
	g, base, feed, _ := proxyGateway(t, proxyConfig(`"main": {"url": "`+up.URL+`/mcp"}, "other": {"url": "`+up.URL+`/other"}`, `"ag": {"url": "`+up.URL+`/a2a"}`, "", ""))
	for _, r := range []struct {
		path, key string
	}{{"/mcp/main/", proxyAliceKey}, {"/mcp/main/x", proxyAliceKey}, {"/a2a/ag/", proxyAliceKey}, {"/mcp/main/", proxyBobKey}, {"/mcp/other/", proxyBobKey}} {
		send(t, base, testRequest{method: "POST", path: r.path, body: `{}`, headers: bearer(r.key)})
		feed.next(t)
	}
	g.limiter.async.wait()
	m := g.limiter.counters.(*store.Memory)
	want := map[string]int64{"llmgw:target:mcp:main:req:min:": 2, "llmgw:target:mcp:main:req:day:": 2, "llmgw:target:mcp:main:req:month:": 2,
		"llmgw:tcaller:mcp:main:alice:req:day:": 2, "llmgw:tcaller:mcp:main:bob:req:day:": 0,
		"llmgw:target:agent:ag:req:min:": 1, "llmgw:tcaller:agent:ag:alice:req:month:": 1,
		"llmgw:target:mcp:other:req:day:": 1, "llmgw:tcaller:mcp:other:bob:req:day:": 1}
	for prefix, n := range want {
		var sum int64
		for _, v := range m.Snapshot(prefix) {
			sum += v
		}
		if sum != n {
			t.Errorf("%s* = %d, want %d", prefix, sum, n)
		}
	}
}

// TestTargetProxyClientGone: a client leaving mid-stream ends the
// upstream request and records a client cancel, not a target failure.
func TestTargetProxyClientGone(t *testing.T) {
	upstreamDone := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(upstreamDone)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: 1\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	g, base, feed, _ := proxyGateway(t, proxyConfig(`"s": {"url": "`+srv.URL+`"}`, "", "", ""))
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/mcp/s/", nil)
	req.Header.Set("Authorization", "Bearer "+proxyAliceKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(resp.Body).ReadString('\n')
	if line != "data: 1\n" {
		t.Fatalf("first line %q", line)
	}
	cancel()
	resp.Body.Close()
	select {
	case <-upstreamDone:
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream request outlived the client")
	}
	rec := feed.next(t)
	if rec.errorCode != "client_closed_request" {
		t.Errorf("record code %q", rec.errorCode)
	}
	if v := g.target(targetMCP, "s").health.view(); v.State != targetHealthy {
		t.Errorf("health %+v", v)
	}
}

// /mcp/{name}/ with no rest reaches the configured URL as written: a
// server mounted on a ServeMux subtree ("…/mcp/") is not redirected.
func TestTargetProxyTrailingSlashEndpoint(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle("/mcp/", mcpJSON())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	_, base, _, _ := proxyGateway(t, proxyConfig(`"sub": {"url": "`+srv.URL+`/mcp/"}`, ``, ``, ``))
	for _, p := range []string{"/mcp/sub/", "/mcp/sub"} {
		status, _, body := do(t, "POST", base+p, proxyAliceKey, `{"jsonrpc":"2.0","id":1,"method":"initialize"}`)
		if status != 200 || !strings.Contains(body, `"protocolVersion"`) {
			t.Fatalf("POST %s: %d %s", p, status, body)
		}
	}
}
