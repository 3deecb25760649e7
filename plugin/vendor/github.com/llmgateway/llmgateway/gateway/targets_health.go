package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Target health: what the gateway has observed of each MCP server and
// agent. Every proxied or federated call records its outcome (source
// "passive"); with targetHealth.enabled an active probe sweep adds its
// own (source "probe"). A target is "unknown" until a call succeeds,
// "healthy" after a success, and "unhealthy" once failureThreshold
// observations in a row have failed; a success makes it healthy again.
//
// The active sweep (targetHealth.enabled) is never run by a timer: the
// routes that show health — /metrics, GET /admin/api/targets, GET
// /v1/mcp/servers and GET /v1/agents — call maybeSweepTargets, which
// starts one background sweep when probeInterval has passed since the
// last one started and none is running, and returns at once: the route
// answers from the state already recorded and never waits for it. A
// sweep probes every configured MCP server and agent (whoever asked),
// sweepConcurrency at a time, each within probeTimeout. A probe sends the
// target's configured headers and nothing of any caller's (no key, no
// trace context). What it asks, and what counts as up:
//
//   - MCP server (Streamable HTTP): POST {url} with the JSON-RPC
//     request {"jsonrpc":"2.0","id":"llmgw-probe","method":"ping"},
//     Content-Type application/json, Accept application/json,
//     text/event-stream, no session. Up: any 2xx (a JSON or an SSE
//     answer; the SSE stream is closed once its headers arrive); a 400
//     (the Streamable HTTP answer to a request without a session, or one
//     the server otherwise refused — it is answering); any other 4xx but
//     401, 403, 407 and 429 whose body (its first 64 KiB) is a JSON-RPC
//     error answer or names a session ("needs a session"). Down: no
//     answer (connection error, timeout), 1xx/3xx (redirects are not
//     followed: they could carry the headers elsewhere), 5xx, 401/403/407
//     (the target refuses the gateway's request), 429, any other 4xx.
//     When the answer opens a session (Mcp-Session-Id), the probe
//     deletes it (DELETE with that header, best effort).
//   - legacy HTTP+SSE server (URL path ending in /sse): GET {url} with
//     Accept text/event-stream. Up: 200 with Content-Type
//     text/event-stream (the stream is closed at once).
//   - agent: GET {url}{card} — the card path appended to the agent's
//     URL, the upstream of the gateway's /a2a/{name}{card} — with Accept
//     application/json. Up: 2xx whose body (at most 1 MiB) is a JSON
//     object.
//
// A URL's userinfo is not sent (the transport does not turn it into a
// credential; configure headers). The recorded error is the gateway's
// own words ("HTTP 503", "timeout after 5s", "connection refused"),
// never a body, header or URL; the latency is the probe's, to its
// verdict. Gateway.Close cancels a running sweep (its probes' requests
// end with it, nothing more is recorded) and waits for it to return —
// at most probeTimeout, in practice as soon as the connections close.

// Target health states.
const (
	targetUnknown   = "unknown"
	targetHealthy   = "healthy"
	targetUnhealthy = "unhealthy"
)

// targetHealth is one target's observations.
type targetHealth struct {
	mu        sync.Mutex
	observed  bool
	state     string
	lastCheck time.Time
	lastError string
	failures  int
	latency   time.Duration
	source    string
}

// targetHealthView is a copy of a targetHealth for the admin API and
// /metrics (the fields past State are omitted while never observed).
type targetHealthView struct {
	State               string     `json:"state"`
	LastCheck           *time.Time `json:"lastCheck,omitempty"`
	LastError           *string    `json:"lastError,omitempty"`
	ConsecutiveFailures int        `json:"consecutiveFailures"`
	LatencyMs           *int64     `json:"latencyMs,omitempty"`
	Source              string     `json:"source,omitempty"`
}

// observe records one call's outcome. errMsg describes a failure in the
// gateway's own words (never a URL, header or body of the target's).
func (h *targetHealth) observe(ok bool, errMsg string, latency time.Duration, source string, threshold int, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.observed = true
	h.lastCheck = now
	h.latency = latency
	h.source = source
	if ok {
		h.state = targetHealthy
		h.failures = 0
		h.lastError = ""
		return
	}
	h.failures++
	h.lastError = errMsg
	if h.state == "" {
		h.state = targetUnknown
	}
	if h.failures >= threshold {
		h.state = targetUnhealthy
	}
}

// view is the health as the admin API shows it.
func (h *targetHealth) view() targetHealthView {
	h.mu.Lock()
	defer h.mu.Unlock()
	v := targetHealthView{State: targetUnknown, ConsecutiveFailures: h.failures}
	if !h.observed {
		return v
	}
	if h.state != "" {
		v.State = h.state
	}
	at := h.lastCheck
	msg := h.lastError
	ms := h.latency.Milliseconds()
	v.LastCheck = &at
	v.LastError = &msg
	v.LatencyMs = &ms
	v.Source = h.source
	return v
}

// observeTarget records a call's outcome on t's health.
func (g *Gateway) observeTarget(t *targetRuntime, ok bool, errMsg string, latency time.Duration, source string) {
	t.health.observe(ok, errMsg, latency, source, g.cfg.targetHealth.threshold, time.Now())
}

// The sweep's bounds.
const (
	sweepConcurrency   = 8
	probeTimeout       = 5 * time.Second
	probeBodyLimit     = 64 << 10 // an MCP answer's bytes looked at
	probeCardLimit     = 1 << 20  // an agent card's
	probeMCPRequestRaw = `{"jsonrpc":"2.0","id":"llmgw-probe","method":"ping"}`
)

// targetSweeper is the active sweep's state: when the last one started,
// whether one is running, and what Close needs to end it.
type targetSweeper struct {
	// last is the unix nanoseconds the last sweep started (0: never):
	// read without the lock, so that a route's call costs one atomic
	// load while no sweep is due.
	last atomic.Int64

	mu      sync.Mutex
	running bool
	closed  bool
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	// now is the sweep's clock, timeout a probe's bound; onDone, when
	// set, is called as each sweep ends, its observations recorded.
	// Tests set them before the gateway serves.
	now     func() time.Time
	timeout time.Duration
	onDone  func()
}

func newTargetSweeper() *targetSweeper {
	ctx, cancel := context.WithCancel(context.Background())
	return &targetSweeper{ctx: ctx, cancel: cancel, now: time.Now, timeout: probeTimeout}
}

// close cancels a running sweep, waits for it, and keeps any other from
// starting.
func (s *targetSweeper) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
}

// maybeSweepTargets starts the active probe sweep when targetHealth is
// enabled, probeInterval has passed since the last one started and none
// is running; it never waits for it.
func (g *Gateway) maybeSweepTargets() {
	hs := g.cfg.targetHealth
	s := g.sweeper
	if !hs.enabled || s == nil || len(g.cfg.mcpNames)+len(g.cfg.agentNames) == 0 {
		return
	}
	now := s.now().UnixNano()
	if last := s.last.Load(); last != 0 && now-last < int64(hs.interval) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	last := s.last.Load()
	if s.closed || s.running || last != 0 && now-last < int64(hs.interval) {
		return
	}
	s.last.Store(now)
	s.running = true
	s.wg.Add(1)
	go g.sweepTargets(s)
}

// sweepTargets probes every target, sweepConcurrency at a time.
func (g *Gateway) sweepTargets(s *targetSweeper) {
	defer s.wg.Done()
	defer func() {
		if v := recover(); v != nil {
			s.mu.Lock()
			s.running = false
			s.mu.Unlock()
			logBackgroundPanic(g.log, "target probe sweep", "", v)
		}
	}()
	var targets []*targetRuntime
	for i := 0; i < len(g.cfg.mcpNames); i++ {
		targets = append(targets, g.cfg.mcpServers[g.cfg.mcpNames[i]])
	}
	for i := 0; i < len(g.cfg.agentNames); i++ {
		targets = append(targets, g.cfg.agents[g.cfg.agentNames[i]])
	}
	workers := sweepConcurrency
	if len(targets) < workers {
		workers = len(targets)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	wg.Add(workers)
	for w := 0; w < workers; w++ {
		go func() {
			defer wg.Done()
			defer recoverBackground(g.log, "target probe", "")
			for {
				i := int(next.Add(1) - 1)
				if i >= len(targets) || s.ctx.Err() != nil {
					return
				}
				g.probeAndObserve(s, targets[i])
			}
		}()
	}
	wg.Wait()
	s.mu.Lock()
	s.running = false
	s.mu.Unlock()
	if s.onDone != nil {
		s.onDone()
	}
}

// probeAndObserve probes t and records the verdict (not when the sweep
// was cancelled: a closing gateway's aborted probe says nothing).
func (g *Gateway) probeAndObserve(s *targetSweeper, t *targetRuntime) {
	ctx, cancel := context.WithTimeout(s.ctx, s.timeout)
	defer cancel()
	started := time.Now()
	var ok bool
	var msg string
	switch {
	case t.kind == targetAgent:
		ok, msg = g.probeAgent(ctx, t, s.timeout)
	case t.legacySSE:
		ok, msg = g.probeLegacySSE(ctx, t, s.timeout)
	default:
		ok, msg = g.probeMCP(ctx, t, s.timeout)
	}
	if s.ctx.Err() != nil {
		return
	}
	g.observeTarget(t, ok, msg, time.Since(started), "probe")
}

// probeURL is t's URL with path appended (it may carry a query, joined
// to the configured one), without userinfo.
func probeURL(t *targetRuntime, path string) string {
	u := *t.base
	u.User = nil
	if i := strings.IndexByte(path, '?'); i >= 0 {
		if u.RawQuery != "" {
			u.RawQuery += "&" + path[i+1:]
		} else {
			u.RawQuery = path[i+1:]
		}
		path = path[:i]
	}
	u.Path += path
	return u.String()
}

// probeRequest is a request to t carrying its configured headers.
func probeRequest(ctx context.Context, t *targetRuntime, method, target string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return nil, err
	}
	for k, v := range t.header {
		req.Header[k] = append([]string(nil), v...)
	}
	return req, nil
}

// probeMCP pings a Streamable HTTP server (see the file comment for the
// verdicts).
func (g *Gateway) probeMCP(ctx context.Context, t *targetRuntime, timeout time.Duration) (bool, string) {
	target := t.endpoint // where federation POSTs, as configured
	req, err := probeRequest(ctx, t, http.MethodPost, target, strings.NewReader(probeMCPRequestRaw))
	if err != nil {
		return false, "the probe request could not be built"
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := g.transport.RoundTrip(req)
	if err != nil {
		return false, probeErrText(ctx, err, timeout)
	}
	ok, msg := mcpProbeVerdict(resp)
	resp.Body.Close()
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" && !hasControlChar(sid) {
		g.deleteProbeSession(ctx, t, target, sid)
	}
	return ok, msg
}

// mcpProbeVerdict judges an MCP server's answer to the probe's ping; an
// answer that is not an SSE stream is read (at most probeBodyLimit).
func mcpProbeVerdict(resp *http.Response) (bool, string) {
	status := resp.StatusCode
	sse := isEventStream(resp.Header)
	var body []byte
	if !sse {
		body, _ = io.ReadAll(io.LimitReader(resp.Body, probeBodyLimit))
	}
	switch {
	case status >= 200 && status < 300 || status == http.StatusBadRequest:
		return true, ""
	case status == http.StatusUnauthorized || status == http.StatusForbidden ||
		status == http.StatusProxyAuthRequired || status == http.StatusTooManyRequests:
		return false, "HTTP " + strconv.Itoa(status)
	case status > 400 && status < 500 && (isJSONRPCError(body) || bytes.Contains(bytes.ToLower(body), []byte("session"))):
		return true, ""
	}
	return false, "HTTP " + strconv.Itoa(status)
}

// isJSONRPCError reports whether body is a JSON-RPC 2.0 error answer.
func isJSONRPCError(body []byte) bool {
	var m struct {
		JSONRPC string          `json:"jsonrpc"`
		Error   json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &m) != nil {
		return false
	}
	return m.JSONRPC == "2.0" && len(m.Error) > 0 && string(m.Error) != "null"
}

// deleteProbeSession ends the session a probe's ping opened; best effort
// (within what is left of the probe's time), its outcome ignored.
func (g *Gateway) deleteProbeSession(ctx context.Context, t *targetRuntime, target, sid string) {
	req, err := probeRequest(ctx, t, http.MethodDelete, target, nil)
	if err != nil {
		return
	}
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := g.transport.RoundTrip(req)
	if err != nil {
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, probeBodyLimit))
	resp.Body.Close()
}

// probeLegacySSE opens a legacy server's SSE stream and closes it once
// its headers say it is one.
func (g *Gateway) probeLegacySSE(ctx context.Context, t *targetRuntime, timeout time.Duration) (bool, string) {
	req, err := probeRequest(ctx, t, http.MethodGet, probeURL(t, ""), nil)
	if err != nil {
		return false, "the probe request could not be built"
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := g.transport.RoundTrip(req)
	if err != nil {
		return false, probeErrText(ctx, err, timeout)
	}
	resp.Body.Close()
	switch {
	case resp.StatusCode != http.StatusOK:
		return false, "HTTP " + strconv.Itoa(resp.StatusCode)
	case !isEventStream(resp.Header):
		return false, "HTTP 200 without text/event-stream"
	}
	return true, ""
}

// probeAgent reads an agent's card.
func (g *Gateway) probeAgent(ctx context.Context, t *targetRuntime, timeout time.Duration) (bool, string) {
	req, err := probeRequest(ctx, t, http.MethodGet, probeURL(t, t.card), nil)
	if err != nil {
		return false, "the probe request could not be built"
	}
	req.Header.Set("Accept", "application/json")
	resp, err := g.transport.RoundTrip(req)
	if err != nil {
		return false, probeErrText(ctx, err, timeout)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return false, "HTTP " + strconv.Itoa(resp.StatusCode)
	}
	data, tooBig, err := readCapped(resp.Body, probeCardLimit)
	switch {
	case err != nil:
		return false, probeErrText(ctx, err, timeout)
	case tooBig:
		return false, "the agent card is larger than 1 MiB"
	}
	var card map[string]interface{}
	if json.Unmarshal(data, &card) != nil || card == nil {
		return false, "the agent card is not a JSON object"
	}
	return true, ""
}

// probeErrText describes a probe's transport error in the gateway's own
// words (never the error's text: it may quote the URL).
func probeErrText(ctx context.Context, err error, timeout time.Duration) string {
	if ctx.Err() == context.DeadlineExceeded {
		return "timeout after " + timeout.String()
	}
	s := err.Error()
	switch {
	case strings.Contains(s, "connection refused"):
		return "connection refused"
	case strings.Contains(s, "no such host"):
		return "host not found"
	case strings.Contains(s, "connection reset"):
		return "connection reset"
	case strings.Contains(s, "tls:") || strings.Contains(s, "x509:"):
		return "TLS handshake failed"
	case strings.Contains(s, "EOF"):
		return "connection closed without an answer"
	}
	return "connection failed"
}
