package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
	"github.com/llmgateway/llmgateway/gateway/internal/sse"
)

// The federated endpoint's backend client: the JSON-RPC calls the
// gateway makes to an MCP server itself, over Streamable HTTP, as its own
// client (its own protocol version and clientInfo; never the caller's
// key). A call is a POST of one JSON-RPC request; the answer is JSON or
// an event stream read until the response with the request's id. The
// session handshake fallback: every call goes bare first; when the
// backend answers with a JSON-RPC error or an HTTP 4xx ("you need a
// session"), it gets ONE retry — initialize (capturing Mcp-Session-Id),
// notifications/initialized, the call again with the session — and the
// session is ended with a best-effort DELETE once the exchange is over.
// A network failure, a timeout or a 5xx is never retried. Nothing
// outlives the client request: no session is kept across requests.
//
// Each server's tools/list is cached in process for federatedToolsTTL
// (federationState).

const (
	// mcpGatewayProtocol is the protocol version the gateway speaks to
	// backends and answers initialize with by default.
	mcpGatewayProtocol = "2025-11-25"
	// maxMCPAnswerBytes bounds one backend answer (JSON, or the whole
	// event stream read for it).
	maxMCPAnswerBytes = 8 << 20
	// mcpDeleteTimeout bounds the DELETE that ends a handshake session.
	mcpDeleteTimeout = 5 * time.Second
	// maxToolPages bounds the tools/list pages followed per server
	// (nextCursor), and maxToolsPerServer the tools kept of one server.
	maxToolPages      = 10
	maxToolsPerServer = 1000
	// federatedToolsTTL is how long a server's tools/list answer is
	// reused (invalidated early by notifications/tools/list_changed).
	federatedToolsTTL = 30 * time.Second
)

// mcpInitializeParams are the gateway's own initialize params (the
// handshake fallback).
var mcpInitializeParams = json.RawMessage(`{"protocolVersion":"` + mcpGatewayProtocol +
	`","capabilities":{},"clientInfo":{"name":"llmgateway","version":"` + Version + `"}}`)

// mcpExchange is one logical call's conversation with one backend: the
// requests it made and the session a handshake opened.
type mcpExchange struct {
	g  *Gateway
	t  *targetRuntime
	tr *requestTrace
	// ctx bounds the exchange (timeout); parent is the client's, which
	// tells a timeout from the client leaving.
	ctx     context.Context
	parent  context.Context
	timeout time.Duration
	// sessionID is the Mcp-Session-Id a handshake captured ("" none);
	// version the MCP-Protocol-Version sent; opened: the handshake ran.
	sessionID string
	version   string
	opened    bool
	// sent counts the HTTP requests made; nextID numbers the JSON-RPC
	// requests.
	sent   int
	nextID int
}

// mcpAnswer is a backend's JSON-RPC answer: exactly one of result and
// rpcError is set (raw, as the backend sent them). listChanged: the
// event stream carried notifications/tools/list_changed.
type mcpAnswer struct {
	result      json.RawMessage
	rpcError    json.RawMessage
	listChanged bool
	sessionID   string
}

// mcpFailure is a backend call without a usable JSON-RPC answer. message
// is the gateway's own words ("HTTP 503", "timeout after 20s",
// "connection refused"), never a URL, header or body of the backend's.
// status is the HTTP status of a non-2xx answer (0 otherwise);
// answered: the backend did answer in JSON-RPC (an error, or a result of
// the wrong shape), so it is reachable.
type mcpFailure struct {
	message  string
	status   int
	class    apierr.Class
	answered bool
}

// mcpWireMessage is one JSON-RPC message as a backend sends it.
type mcpWireMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// mcpWireError is a JSON-RPC error object.
type mcpWireError struct {
	Code    *int64          `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

func newMCPExchange(g *Gateway, t *targetRuntime, tr *requestTrace, ctx, parent context.Context, timeout time.Duration) *mcpExchange {
	return &mcpExchange{g: g, t: t, tr: tr, ctx: ctx, parent: parent, timeout: timeout, version: mcpGatewayProtocol}
}

// mcpCall makes one JSON-RPC call on x's backend, with the session
// handshake fallback. When the handshake itself fails, the bare outcome
// stands.
func mcpCall(x *mcpExchange, method string, params json.RawMessage) (*mcpAnswer, *mcpFailure) {
	a, f := mcpRequest(x, method, params)
	if x.opened || !needsSession(a, f) || x.ctx.Err() != nil {
		return a, f
	}
	if hf := mcpHandshake(x); hf != nil {
		if f != nil {
			f.message += " (the session handshake failed too: " + hf.message + ")"
		}
		return a, f
	}
	return mcpRequest(x, method, params)
}

// needsSession reports whether a bare call's outcome asks for the
// handshake: a JSON-RPC error, or an HTTP 4xx.
func needsSession(a *mcpAnswer, f *mcpFailure) bool {
	if f != nil {
		return f.status >= 400 && f.status <= 499
	}
	return a.rpcError != nil
}

// mcpHandshake opens a session: initialize (the gateway's own version
// and clientInfo), the Mcp-Session-Id the answer carries, the version it
// negotiated, then notifications/initialized (whose failure is not the
// call's).
func mcpHandshake(x *mcpExchange) *mcpFailure {
	x.opened = true
	a, f := mcpRequest(x, "initialize", mcpInitializeParams)
	if f != nil {
		return f
	}
	if a.rpcError != nil {
		return &mcpFailure{message: "initialize was answered with a JSON-RPC error", class: apierr.ClassBadResponse, answered: true}
	}
	x.sessionID = a.sessionID
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if json.Unmarshal(a.result, &res) == nil && knownMCPVersion(res.ProtocolVersion) {
		x.version = res.ProtocolVersion
	}
	_, _ = mcpSend(x, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), "")
	return nil
}

// mcpRequest sends one JSON-RPC request and reads its answer.
func mcpRequest(x *mcpExchange, method string, params json.RawMessage) (*mcpAnswer, *mcpFailure) {
	x.nextID++
	id := strconv.Itoa(x.nextID)
	body := make([]byte, 0, 64+len(method)+len(params))
	body = append(body, `{"jsonrpc":"2.0","id":`...)
	body = append(body, id...)
	body = append(body, `,"method":`...)
	body = append(body, jsonString(method)...)
	if len(params) > 0 {
		body = append(body, `,"params":`...)
		body = append(body, params...)
	}
	body = append(body, '}')
	return mcpSend(x, body, id)
}

// mcpSend POSTs one message (a request with id, or a notification when
// id is "") to the backend and reads the answer.
func mcpSend(x *mcpExchange, body []byte, id string) (*mcpAnswer, *mcpFailure) {
	req, err := http.NewRequestWithContext(x.ctx, http.MethodPost, x.t.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, &mcpFailure{message: "could not build the request", class: apierr.ClassConnect}
	}
	setMCPHeaders(x, req.Header)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	x.sent++
	resp, err := x.g.transport.RoundTrip(req)
	if err != nil {
		return nil, mcpTransportFailure(x, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, mcpStatusFailure(resp.StatusCode)
	}
	a := &mcpAnswer{sessionID: resp.Header.Get("Mcp-Session-Id")}
	if id == "" {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return a, nil
	}
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch mediaType {
	case "application/json":
		return readMCPJSON(x, resp.Body, id, a)
	case "text/event-stream":
		return readMCPStream(x, resp.Body, id, a)
	}
	return nil, &mcpFailure{message: "the answer is neither JSON nor an event stream", class: apierr.ClassBadResponse}
}

// setMCPHeaders sets what every request to a backend carries: its
// configured headers, the protocol version, the session when one is
// open, the request id and a span of the request's trace. The caller's
// credential is never among them (the request is the gateway's own).
func setMCPHeaders(x *mcpExchange, h http.Header) {
	for name, values := range x.t.header {
		h[name] = append([]string(nil), values...)
	}
	h.Set("Mcp-Protocol-Version", x.version)
	if x.sessionID != "" {
		h.Set("Mcp-Session-Id", x.sessionID)
	}
	h.Set("X-Request-Id", x.tr.requestID)
	h.Set("Traceparent", "00-"+x.tr.traceID+"-"+randomHex(8)+"-"+x.tr.flags)
	if x.tr.state != "" {
		h.Set("Tracestate", x.tr.state)
	}
}

// readMCPJSON reads a JSON answer.
func readMCPJSON(x *mcpExchange, body io.Reader, id string, a *mcpAnswer) (*mcpAnswer, *mcpFailure) {
	data, tooBig, err := readCapped(body, maxMCPAnswerBytes)
	if err != nil {
		return nil, mcpTransportFailure(x, err)
	}
	if tooBig {
		return nil, &mcpFailure{message: "the answer exceeds " + formatBytes(maxMCPAnswerBytes), class: apierr.ClassOversize}
	}
	var m mcpWireMessage
	if json.Unmarshal(data, &m) != nil {
		return nil, &mcpFailure{message: "the answer is not JSON-RPC", class: apierr.ClassBadResponse}
	}
	if f := checkMCPAnswer(&m, id); f != nil {
		return nil, f
	}
	a.result = m.Result
	a.rpcError = m.Error
	return a, nil
}

// readMCPStream reads an event-stream answer until the response to id:
// notifications are looked at (tools/list_changed) and skipped, and so
// are requests from the server (the gateway cannot answer them) and
// responses to other ids.
func readMCPStream(x *mcpExchange, body io.Reader, id string, a *mcpAnswer) (*mcpAnswer, *mcpFailure) {
	rd := sse.NewReader(body, maxMCPAnswerBytes)
	for {
		ev, err := rd.Next()
		if err == io.EOF {
			return nil, &mcpFailure{message: "the event stream ended before the answer", class: apierr.ClassTruncated}
		}
		if err == sse.ErrTooLarge {
			return nil, &mcpFailure{message: "the event stream exceeds " + formatBytes(maxMCPAnswerBytes), class: apierr.ClassOversize}
		}
		if err != nil {
			return nil, mcpTransportFailure(x, err)
		}
		if len(ev.Data) == 0 || ev.Name != "" && ev.Name != "message" {
			continue
		}
		var m mcpWireMessage
		if json.Unmarshal(ev.Data, &m) != nil {
			continue
		}
		if m.Method != "" {
			if m.Method == "notifications/tools/list_changed" {
				a.listChanged = true
			}
			continue
		}
		if !sameRPCID(m.ID, id) {
			continue
		}
		if f := checkMCPAnswer(&m, id); f != nil {
			return nil, f
		}
		a.result = m.Result
		a.rpcError = m.Error
		return a, nil
	}
}

// checkMCPAnswer accepts a JSON-RPC 2.0 response to id with either a
// result or a well-formed error.
func checkMCPAnswer(m *mcpWireMessage, id string) *mcpFailure {
	if m.JSONRPC != "2.0" || !sameRPCID(m.ID, id) {
		return &mcpFailure{message: "the answer is not a JSON-RPC 2.0 response to the request", class: apierr.ClassBadResponse}
	}
	if len(m.Result) == 0 && len(m.Error) == 0 {
		return &mcpFailure{message: "the answer carries neither result nor error", class: apierr.ClassBadResponse}
	}
	if len(m.Result) > 0 && len(m.Error) > 0 {
		return &mcpFailure{message: "the answer carries both result and error", class: apierr.ClassBadResponse}
	}
	if len(m.Error) > 0 {
		var e mcpWireError
		if json.Unmarshal(m.Error, &e) != nil || e.Code == nil {
			return &mcpFailure{message: "the answer's error is not a JSON-RPC error object", class: apierr.ClassBadResponse}
		}
	}
	return nil
}

// sameRPCID reports whether a raw JSON-RPC id is the number id.
func sameRPCID(raw json.RawMessage, id string) bool {
	return string(bytes.TrimSpace(raw)) == id
}

// mcpStatusFailure is a non-2xx answer.
func mcpStatusFailure(status int) *mcpFailure {
	class := apierr.ClassUnexpectedStatus
	switch {
	case status == http.StatusTooManyRequests:
		class = apierr.ClassRateLimited
	case status == http.StatusBadRequest:
		class = apierr.ClassBadRequest
	case status >= 400 && status <= 499:
		class = apierr.ClassRefused
	case status >= 500:
		class = apierr.ClassServer
	}
	return &mcpFailure{message: "HTTP " + strconv.Itoa(status), status: status, class: class}
}

// mcpTransportFailure names a failed exchange in the gateway's words:
// the exchange's timeout, the client leaving, or how the connection
// failed (never the error's text, which holds addresses).
func mcpTransportFailure(x *mcpExchange, err error) *mcpFailure {
	if x.parent.Err() != nil {
		return &mcpFailure{message: "the client closed the request", class: apierr.ClassClientCancel}
	}
	if x.ctx.Err() != nil {
		return &mcpFailure{message: "timeout after " + x.timeout.String(), class: apierr.ClassStall}
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "connection refused"):
		msg = "connection refused"
	case strings.Contains(msg, "no such host"):
		msg = "unknown host"
	case strings.Contains(msg, "tls:") || strings.Contains(msg, "x509:"):
		msg = "TLS handshake failed"
	case strings.Contains(msg, "EOF") || strings.Contains(msg, "reset by peer") || strings.Contains(msg, "broken pipe"):
		msg = "connection closed by the server"
	default:
		msg = "connection failed"
	}
	return &mcpFailure{message: msg, class: apierr.ClassConnect}
}

// mcpClose ends the session a handshake opened (best effort: a failure
// is logged, never surfaced), under its own short timeout so that an
// exchange that timed out still ends its session.
func mcpClose(x *mcpExchange) {
	if x.sessionID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), mcpDeleteTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, x.t.endpoint, nil)
	if err != nil {
		return
	}
	setMCPHeaders(x, req.Header)
	x.sent++
	resp, err := x.g.transport.RoundTrip(req)
	why := ""
	if err != nil {
		why = "connection failed"
		if ctx.Err() != nil {
			why = "timeout after " + mcpDeleteTimeout.String()
		}
	} else {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			why = "HTTP " + strconv.Itoa(resp.StatusCode)
		}
	}
	if why != "" {
		x.g.log.line("WARN", "mcp server "+strconv.Quote(x.t.name)+": ending the federation's session failed: "+why+x.tr.logTail)
	}
}

// rpcFailure is a backend's JSON-RPC error to a call the gateway needed
// a result of.
func rpcFailure(method string, rpcError json.RawMessage) *mcpFailure {
	var e mcpWireError
	_ = json.Unmarshal(rpcError, &e)
	code := "?"
	if e.Code != nil {
		code = strconv.FormatInt(*e.Code, 10)
	}
	return &mcpFailure{message: method + " was answered with JSON-RPC error " + code, class: apierr.ClassBadResponse, answered: true}
}

// observeMCP records a logical call's outcome in the server's health
// (passive): healthy when it answered in JSON-RPC. Nothing is recorded
// when the client left first (no fault of the server's).
func observeMCP(g *Gateway, x *mcpExchange, f *mcpFailure, started time.Time) {
	if x.parent.Err() != nil {
		return
	}
	if f == nil || f.answered {
		g.observeTarget(x.t, true, "", time.Since(started), "passive")
		return
	}
	g.observeTarget(x.t, false, f.message, time.Since(started), "passive")
}

// toolsPage is one tools/list result.
type toolsPage struct {
	Tools      []map[string]json.RawMessage `json:"tools"`
	NextCursor string                       `json:"nextCursor"`
}

// listServerTools is one server's tools, renamed for federation: every
// page of tools/list (up to maxToolPages, nextCursor followed) under
// timeout, one session for all of them when the handshake was needed.
// The listing is cached unless it failed or the backend said its tools
// changed meanwhile. It returns the tools, the failure, and the HTTP
// requests made.
func listServerTools(g *Gateway, parent context.Context, t *targetRuntime, tr *requestTrace, timeout time.Duration, gen int64) ([]federatedTool, *mcpFailure, int) {
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	x := newMCPExchange(g, t, tr, ctx, parent, timeout)
	started := time.Now()
	tools := []federatedTool{}
	seen := map[string]bool{}
	changed := false
	cursor := ""
	var fail *mcpFailure
	for page := 0; page < maxToolPages; page++ {
		params := json.RawMessage(`{}`)
		if cursor != "" {
			params = json.RawMessage(`{"cursor":` + string(jsonString(cursor)) + `}`)
		}
		a, f := mcpCall(x, "tools/list", params)
		if f == nil && a.rpcError != nil {
			f = rpcFailure("tools/list", a.rpcError)
		}
		if f != nil {
			fail = f
			break
		}
		changed = changed || a.listChanged
		var p toolsPage
		if json.Unmarshal(a.result, &p) != nil || p.Tools == nil {
			fail = &mcpFailure{message: "the tools/list result holds no tool list", class: apierr.ClassBadResponse}
			break
		}
		tools = appendServerTools(g, t, tools, seen, p.Tools)
		cursor = p.NextCursor
		if cursor == "" {
			break
		}
	}
	mcpClose(x)
	observeMCP(g, x, fail, started)
	if fail != nil {
		return nil, fail, x.sent
	}
	if cursor != "" {
		g.warnings.warnOnce("mcp-pages:"+t.name, "mcp server %q: its tools/list has more than %d pages; federation lists the first %d",
			t.name, maxToolPages, maxToolPages)
	}
	if changed {
		invalidateTools(&g.mcp, t.name)
	} else {
		storeTools(&g.mcp, t.name, gen, tools)
	}
	return tools, nil, x.sent
}

// appendServerTools appends a page's tools, renamed "<server>_<tool>":
// each keeps every member the backend sent (title, annotations,
// outputSchema, ...) but its name. A tool without a name, a duplicate,
// or one past maxToolsPerServer is left out.
func appendServerTools(g *Gateway, t *targetRuntime, tools []federatedTool, seen map[string]bool, page []map[string]json.RawMessage) []federatedTool {
	for i := 0; i < len(page); i++ {
		m := page[i]
		var name string
		if m == nil || json.Unmarshal(m["name"], &name) != nil || name == "" || seen[name] {
			continue
		}
		if len(tools) >= maxToolsPerServer {
			g.warnings.warnOnce("mcp-tools:"+t.name, "mcp server %q lists more than %d tools; federation keeps the first %d",
				t.name, maxToolsPerServer, maxToolsPerServer)
			return tools
		}
		seen[name] = true
		ft := federatedTool{name: t.name + "_" + name, server: t.name, tool: name, inputSchema: m["inputSchema"]}
		_ = json.Unmarshal(m["description"], &ft.description)
		m["name"] = jsonString(ft.name)
		raw, err := json.Marshal(m)
		if err != nil {
			continue
		}
		ft.raw = raw
		tools = append(tools, ft)
	}
	return tools
}

// jsonString is s as a JSON string.
func jsonString(s string) []byte {
	data, _ := json.Marshal(s)
	return data
}
