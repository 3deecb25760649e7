package gateway

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The active probe sweep against fake targets speaking the wire
// formats (Streamable HTTP, legacy HTTP+SSE, an A2A agent card). The
// passive half (proxied and federated traffic) is recorded by the proxy
// and federation through observeTarget; the tests here call it directly
// where they need passive observations, since those routes are built on
// other branches.

// targetsConfig is one provider, alice (admin, group all) and bob
// (group all), admin and metrics on, and extra top-level keys (the
// targets, targetHealth).
func targetsConfig(upURL, extra string) string {
	return `{` + extra + `
  "admin": {"enabled": true}, "metrics": {"enabled": true},
  "providers": {"p": {"type": "openai", "baseUrl": "` + upURL + `", "models": ["m1"]}},
  "groups": {"all": {}},
  "users": {"inline": [
    {"name": "alice", "group": "all", "apiKey": "` + testAliceKey + `", "admin": true},
    {"name": "bob", "group": "all", "apiKey": "` + testBobKey + `"}]}}`
}

// sweepGateway serves cfg with the sweep's clock on clock (moved by the
// test), a probe timeout, and each finished sweep reported on done.
func sweepGateway(t *testing.T, cfg string, timeout time.Duration) (*Gateway, string, *atomic.Value, chan struct{}) {
	t.Helper()
	clock := &atomic.Value{}
	clock.Store(statsClock)
	done := make(chan struct{}, 16)
	g, srv, _ := serveTestGateway(t, cfg, nil, func(g *Gateway) {
		g.sweeper.now = func() time.Time { return clock.Load().(time.Time) }
		g.sweeper.timeout = timeout
		g.sweeper.onDone = func() { done <- struct{}{} }
	})
	return g, srv.URL, clock, done
}

func waitSweep(t *testing.T, done chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("no sweep ended within 10s")
	}
}

// probeSeen is one request a fake target received.
type probeSeen struct {
	method, path, query, body string
	header                    http.Header
}

// probeRecorder records every request of a fake target.
type probeRecorder struct {
	mu   sync.Mutex
	seen []probeSeen
}

func (p *probeRecorder) record(r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<16))
	p.mu.Lock()
	p.seen = append(p.seen, probeSeen{r.Method, r.URL.Path, r.URL.RawQuery, string(body), r.Header.Clone()})
	p.mu.Unlock()
}

// find is the first request of method on path.
func (p *probeRecorder) find(method, path string) *probeSeen {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range p.seen {
		if p.seen[i].method == method && p.seen[i].path == path {
			s := p.seen[i]
			return &s
		}
	}
	return nil
}

// refusedURL is an http URL nothing listens on.
func refusedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

func writeBody(w http.ResponseWriter, status int, contentType, body string) {
	if contentType != "" {
		w.Header().Set("Content-Type", contentType)
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// holdStream writes an SSE event and keeps the stream open until the
// client goes; closed is closed then.
func holdStream(w http.ResponseWriter, r *http.Request, event string, closed chan struct{}) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	_, _ = io.WriteString(w, event)
	w.(http.Flusher).Flush()
	<-r.Context().Done()
	close(closed)
}

// Every verdict of the probes, one sweep over targets answering each
// way (failureThreshold 1: one failed probe is unhealthy).
func TestTargetProbeVerdicts(t *testing.T) {
	setenv(t, "LLMGW_TEST_TARGET_TOKEN", "tok-probe-1")
	rec := &probeRecorder{}
	sseClosed, legacyClosed := make(chan struct{}), make(chan struct{})
	const pingOK = `{"jsonrpc":"2.0","id":"llmgw-probe","result":{}}`
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.record(r)
		switch r.URL.Path {
		case "/json/mcp":
			writeBody(w, 200, "application/json", pingOK)
		case "/sse/mcp":
			holdStream(w, r, "event: message\ndata: "+pingOK+"\n\n", sseClosed)
		case "/session/mcp":
			if r.Method == http.MethodPost {
				w.Header().Set("Mcp-Session-Id", "sess-7")
			}
			writeBody(w, 200, "application/json", pingOK)
		case "/bare400/mcp":
			writeBody(w, 400, "text/plain", "Bad Request: Missing session ID")
		case "/rpc405/mcp":
			writeBody(w, 405, "application/json", `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Method not allowed."}}`)
		case "/session404/mcp":
			writeBody(w, 404, "text/plain", "Session not found")
		case "/missing/mcp":
			writeBody(w, 404, "text/plain", "404 page not found")
		case "/auth/mcp":
			writeBody(w, 401, "application/json", `{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"no session without a token"}}`)
		case "/busy/mcp":
			writeBody(w, 429, "", "")
		case "/broken/mcp":
			writeBody(w, 503, "text/plain", "upstream connect error http://10.1.2.3/secret")
		case "/moved/mcp":
			http.Redirect(w, r, "/json/mcp", http.StatusFound)
		case "/slow/mcp":
			<-r.Context().Done()
		case "/legacy/sse":
			holdStream(w, r, "event: endpoint\ndata: /messages?sessionId=abc\n\n", legacyClosed)
		case "/jsonlegacy/sse":
			writeBody(w, 200, "application/json", "{}")
		case "/agents/helper/.well-known/agent-card.json", "/agents/custom/card.json":
			writeBody(w, 200, "application/json", `{"name":"Helper","url":"http://x/a2a"}`)
		case "/agents/array/.well-known/agent-card.json":
			writeBody(w, 200, "application/json", `[]`)
		default:
			writeBody(w, 404, "text/plain", "not found")
		}
	}))
	defer fake.Close()
	u := fake.URL
	servers := map[string]string{
		"json": u + "/json/mcp", "sse": u + "/sse/mcp", "session": u + "/session/mcp", "bare400": u + "/bare400/mcp",
		"rpc405": u + "/rpc405/mcp", "session404": u + "/session404/mcp", "missing": u + "/missing/mcp",
		"auth": u + "/auth/mcp", "busy": u + "/busy/mcp", "broken": u + "/broken/mcp", "moved": u + "/moved/mcp",
		"slow": u + "/slow/mcp", "refused": refusedURL(t) + "/mcp", "legacy": u + "/legacy/sse", "jsonlegacy": u + "/jsonlegacy/sse",
	}
	var mcp []string
	for name, url := range servers {
		headers := ""
		if name == "json" {
			headers = `, "headers": {"X-Target-Token": "env:LLMGW_TEST_TARGET_TOKEN"}`
		}
		mcp = append(mcp, `"`+name+`": {"url": "`+url+`"`+headers+`}`)
	}
	cfg := targetsConfig(u, `"targetHealth": {"enabled": true, "failureThreshold": 1},
  "mcpServers": {`+strings.Join(mcp, ", ")+`},
  "agents": {"helper": {"url": "`+u+`/agents/helper/"}, "custom": {"url": "`+u+`/agents/custom", "card": "/card.json?v=1"},
    "array": {"url": "`+u+`/agents/array"}, "gone": {"url": "`+u+`/agents/gone"}},`)
	g, _, _, done := sweepGateway(t, cfg, 500*time.Millisecond)
	g.maybeSweepTargets()
	waitSweep(t, done)

	for _, tc := range []struct {
		kind, name, state, lastError string
	}{
		{targetMCP, "json", targetHealthy, ""},
		{targetMCP, "sse", targetHealthy, ""},
		{targetMCP, "session", targetHealthy, ""},
		{targetMCP, "bare400", targetHealthy, ""},
		{targetMCP, "rpc405", targetHealthy, ""},
		{targetMCP, "session404", targetHealthy, ""},
		{targetMCP, "missing", targetUnhealthy, "HTTP 404"},
		{targetMCP, "auth", targetUnhealthy, "HTTP 401"},
		{targetMCP, "busy", targetUnhealthy, "HTTP 429"},
		{targetMCP, "broken", targetUnhealthy, "HTTP 503"},
		{targetMCP, "moved", targetUnhealthy, "HTTP 302"},
		{targetMCP, "slow", targetUnhealthy, "timeout after 500ms"},
		{targetMCP, "refused", targetUnhealthy, "connection refused"},
		{targetMCP, "legacy", targetHealthy, ""},
		{targetMCP, "jsonlegacy", targetUnhealthy, "HTTP 200 without text/event-stream"},
		{targetAgent, "helper", targetHealthy, ""},
		{targetAgent, "custom", targetHealthy, ""},
		{targetAgent, "array", targetUnhealthy, "the agent card is not a JSON object"},
		{targetAgent, "gone", targetUnhealthy, "HTTP 404"},
	} {
		v := g.target(tc.kind, tc.name).health.view()
		wantFailures := 0
		if tc.state == targetUnhealthy {
			wantFailures = 1
		}
		if v.State != tc.state || v.LastError == nil || *v.LastError != tc.lastError || v.Source != "probe" ||
			v.LastCheck == nil || v.LatencyMs == nil || v.ConsecutiveFailures != wantFailures {
			t.Errorf("%s %s: %+v (lastError %v), want %s %q", tc.kind, tc.name, v, strDeref(v.LastError), tc.state, tc.lastError)
		}
	}

	// The ping: the JSON-RPC request, its headers, the target's own
	// header, nothing of a caller's.
	ping := rec.find(http.MethodPost, "/json/mcp")
	if ping == nil || ping.body != probeMCPRequestRaw || ping.header.Get("Content-Type") != "application/json" ||
		ping.header.Get("Accept") != "application/json, text/event-stream" || ping.header.Get("X-Target-Token") != "tok-probe-1" ||
		ping.header.Get("Authorization") != "" || ping.header.Get("X-Api-Key") != "" || ping.header.Get("Traceparent") != "" ||
		ping.header.Get("Mcp-Session-Id") != "" {
		t.Fatalf("ping: %+v", ping)
	}
	if other := rec.find(http.MethodPost, "/broken/mcp"); other == nil || other.header.Get("X-Target-Token") != "" {
		t.Fatalf("another target got the header: %+v", other)
	}
	// The session the ping opened is deleted.
	if del := rec.find(http.MethodDelete, "/session/mcp"); del == nil || del.header.Get("Mcp-Session-Id") != "sess-7" {
		t.Fatalf("session not deleted: %+v", del)
	}
	// The redirect was not followed.
	if n := countPath(rec, "/json/mcp"); n != 1 {
		t.Fatalf("/json/mcp got %d requests, want 1 (redirects are not followed)", n)
	}
	// The legacy stream is a GET asking for SSE; the agent cards are the
	// card path under the agent's URL, a card's query kept.
	if get := rec.find(http.MethodGet, "/legacy/sse"); get == nil || get.header.Get("Accept") != "text/event-stream" {
		t.Fatalf("legacy probe: %+v", get)
	}
	if card := rec.find(http.MethodGet, "/agents/custom/card.json"); card == nil || card.query != "v=1" || card.header.Get("Accept") != "application/json" {
		t.Fatalf("custom card probe: %+v", card)
	}
	if rec.find(http.MethodGet, "/agents/helper/.well-known/agent-card.json") == nil {
		t.Fatal("the default card path was not probed")
	}
	// Both streams were closed by the probe.
	waitClosed(t, "sse", sseClosed)
	waitClosed(t, "legacy", legacyClosed)
}

func waitClosed(t *testing.T, name string, ch chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatalf("the %s stream was left open", name)
	}
}

func strDeref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

func countPath(rec *probeRecorder, path string) int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	n := 0
	for _, s := range rec.seen {
		if s.path == path {
			n++
		}
	}
	return n
}

// blockingTarget is an MCP server whose every ping waits for a token on
// release (or the client's going); arrivals are reported on hits.
func blockingTarget(t *testing.T) (*httptest.Server, chan struct{}, chan struct{}) {
	t.Helper()
	hits, release := make(chan struct{}, 64), make(chan struct{}, 64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read to the end: only then does the server notice the client
		// going (r.Context()).
		_, _ = io.Copy(io.Discard, r.Body)
		hits <- struct{}{}
		select {
		case <-release:
			writeBody(w, 200, "application/json", `{"jsonrpc":"2.0","id":"llmgw-probe","result":{}}`)
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	return srv, hits, release
}

func waitHit(t *testing.T, hits chan struct{}) {
	t.Helper()
	select {
	case <-hits:
	case <-time.After(10 * time.Second):
		t.Fatal("no probe arrived within 10s")
	}
}

// When a sweep starts: enabled only, the first trigger, then once per
// probeInterval since the last start, never two at a time, and from
// each of the four routes — which answer while the sweep is still
// running.
func TestTargetSweepSchedule(t *testing.T) {
	target, hits, release := blockingTarget(t)
	servers := `"mcpServers": {"files": {"url": "` + target.URL + `/mcp"}},`

	// Disabled (the default): nothing starts, ever.
	off, _, _, _ := sweepGateway(t, targetsConfig(target.URL, servers), time.Second)
	off.maybeSweepTargets()
	if off.sweeper.last.Load() != 0 || off.sweeper.running {
		t.Fatal("a sweep started with targetHealth off")
	}
	// Enabled without targets: nothing to probe, nothing starts.
	empty, _, _, _ := sweepGateway(t, targetsConfig(target.URL, `"targetHealth": {"enabled": true},`), time.Second)
	empty.maybeSweepTargets()
	if empty.sweeper.last.Load() != 0 {
		t.Fatal("a sweep started without targets")
	}

	g, base, clock, done := sweepGateway(t, targetsConfig(target.URL, servers+`"targetHealth": {"enabled": true, "probeInterval": "30s"},`), 5*time.Second)
	s := g.sweeper
	at := statsClock
	for _, route := range []struct{ path, key string }{
		{"/metrics", testAliceKey},
		{"/admin/api/targets", testAliceKey},
		{"/v1/mcp/servers", testBobKey},
		{"/v1/agents", testBobKey},
	} {
		// The route answers while its sweep's probe is held.
		if status, _, body := do(t, "GET", base+route.path, route.key, ""); status != 200 {
			t.Fatalf("%s: %d %s", route.path, status, body)
		}
		waitHit(t, hits)
		if s.last.Load() != at.UnixNano() {
			t.Fatalf("%s: the sweep's start is %d, want %d", route.path, s.last.Load(), at.UnixNano())
		}
		// Due again, but one is running: no second sweep.
		clock.Store(at.Add(time.Minute))
		g.maybeSweepTargets()
		if s.last.Load() != at.UnixNano() {
			t.Fatalf("%s: a second sweep started while one was running", route.path)
		}
		release <- struct{}{}
		waitSweep(t, done)
		if v := g.target(targetMCP, "files").health.view(); v.State != targetHealthy || v.Source != "probe" {
			t.Fatalf("%s: health %+v", route.path, v)
		}
		// Within the interval of the last start: nothing.
		clock.Store(at.Add(30*time.Second - time.Nanosecond))
		g.maybeSweepTargets()
		if s.last.Load() != at.UnixNano() || len(hits) != 0 {
			t.Fatalf("%s: a sweep started within probeInterval", route.path)
		}
		// The interval passed: the next route's call starts one.
		at = at.Add(30 * time.Second)
		clock.Store(at)
	}
}

// A sweep probes at most sweepConcurrency targets at once, and every
// target once.
func TestTargetSweepConcurrency(t *testing.T) {
	var inFlight, peak atomic.Int64
	release := make(chan struct{}, 64)
	arrived := make(chan struct{}, 64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		n := inFlight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		inFlight.Add(-1)
		writeBody(w, 200, "application/json", `{"jsonrpc":"2.0","id":"llmgw-probe","result":{}}`)
	}))
	defer srv.Close()
	const n = 11
	var servers []string
	for i := 0; i < n; i++ {
		servers = append(servers, `"s`+itoa64(int64(i))+`": {"url": "`+srv.URL+`/mcp"}`)
	}
	g, _, _, done := sweepGateway(t, targetsConfig(srv.URL, `"targetHealth": {"enabled": true}, "mcpServers": {`+strings.Join(servers, ", ")+`},`), 10*time.Second)
	g.maybeSweepTargets()
	for i := 0; i < sweepConcurrency; i++ {
		waitHit(t, arrived)
	}
	if got := inFlight.Load(); got != sweepConcurrency {
		t.Fatalf("%d probes in flight, want %d", got, sweepConcurrency)
	}
	for i := 0; i < n; i++ {
		release <- struct{}{}
	}
	waitSweep(t, done)
	if len(arrived) != n-sweepConcurrency || peak.Load() != sweepConcurrency {
		t.Fatalf("arrivals after the first %d: %d (want %d), peak %d", sweepConcurrency, len(arrived), n-sweepConcurrency, peak.Load())
	}
	for _, name := range g.cfg.mcpNames {
		if v := g.target(targetMCP, name).health.view(); v.State != targetHealthy {
			t.Fatalf("%s: %+v", name, v)
		}
	}
}

// Close cancels a running sweep and waits for it: the held probe ends
// at once (long before its timeout), records nothing, and no sweep
// starts afterwards.
func TestTargetSweepClose(t *testing.T) {
	target, hits, _ := blockingTarget(t)
	cfg := targetsConfig(target.URL, `"targetHealth": {"enabled": true}, "mcpServers": {"files": {"url": "`+target.URL+`/mcp"}},`)
	g, _, clock, done := sweepGateway(t, cfg, time.Minute)
	g.maybeSweepTargets()
	waitHit(t, hits)
	closed := make(chan struct{})
	go func() {
		_ = g.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return within 10s of a held probe (its timeout is 1m)")
	}
	waitSweep(t, done)
	if v := g.target(targetMCP, "files").health.view(); v.LastCheck != nil || v.State != targetUnknown {
		t.Fatalf("a cancelled probe was recorded: %+v", v)
	}
	last := g.sweeper.last.Load()
	clock.Store(statsClock.Add(time.Hour))
	g.maybeSweepTargets()
	if g.sweeper.last.Load() != last {
		t.Fatal("a sweep started after Close")
	}
}

// Passive observations and probes share one book: failureThreshold
// failures in a row (of either source) make a target unhealthy, one
// success healthy; a target observed but never successful is unknown
// with every field.
func TestTargetHealthBook(t *testing.T) {
	up := newFakeUpstream(t, okJSON(chatOK))
	g, _ := newGatewayFromConfig(t, targetsConfig(up.URL, `"targetHealth": {"failureThreshold": 2}, "mcpServers": {"files": {"url": "http://127.0.0.1:1/mcp"}},`))
	tg := g.target(targetMCP, "files")
	if v := tg.health.view(); v.State != targetUnknown || v.LastCheck != nil || v.LastError != nil || v.LatencyMs != nil || v.Source != "" {
		t.Fatalf("never observed: %+v", v)
	}
	g.observeTarget(tg, false, "HTTP 502", 3*time.Millisecond, "passive")
	if v := tg.health.view(); v.State != targetUnknown || v.ConsecutiveFailures != 1 || strDeref(v.LastError) != "HTTP 502" || *v.LatencyMs != 3 || v.Source != "passive" {
		t.Fatalf("one failure: %+v", v)
	}
	g.observeTarget(tg, false, "timeout after 5s", 5*time.Second, "probe")
	if v := tg.health.view(); v.State != targetUnhealthy || v.ConsecutiveFailures != 2 || strDeref(v.LastError) != "timeout after 5s" || v.Source != "probe" {
		t.Fatalf("two failures: %+v", v)
	}
	g.observeTarget(tg, true, "", 7*time.Millisecond, "passive")
	if v := tg.health.view(); v.State != targetHealthy || v.ConsecutiveFailures != 0 || strDeref(v.LastError) != "" || *v.LatencyMs != 7 {
		t.Fatalf("recovered: %+v", v)
	}
}
