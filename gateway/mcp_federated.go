package gateway

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// The federated MCP endpoint, POST /mcp: one JSON-RPC 2.0 endpoint over
// every MCP server the caller's groups reach. It is not a proxy: the
// gateway decodes the message, answers initialize, ping and
// server/discover itself, and serves tools/list and tools/call with its
// own calls to the servers (mcp_client.go) within the one client
// request. No session is created (no Mcp-Session-Id): each request
// stands alone, in the session dialects (2024-11-05 to 2025-11-25, after
// an initialize) and in the stateless one (2026-07-28: server/discover,
// the version in each request's _meta or MCP-Protocol-Version header).
//
// The stages: any method but POST is a 405 (before authentication) →
// authenticate (401) → an Upgrade is a 501 → the body (4 MiB, 413) → the
// envelope (-32700 parse error, -32600 invalid request or a batch; HTTP
// 400) → the limiter, once (429) → the method. A JSON-RPC error after
// the limiter (-32601, -32602, ...) still counts as a request.
//
// tools/list fans out to the caller's reachable servers (legacy HTTP+SSE
// ones excluded) concurrently, each under its own federatedListTimeout,
// with every tool renamed "<server>_<tool>" and filtered by the groups'
// mcpTools; a failing server is skipped, and when every one fails the
// answer is -32603 "no MCP server reachable". tools/call resolves the
// server by the longest "<server>_" prefix of the name, strips it and
// forwards the call under federatedCallTimeout; the result — or the
// server's own JSON-RPC error — goes back under the caller's id.

const (
	// mcpStatelessProtocol is the stateless dialect (SEP-2575): no
	// initialize, server/discover, the version in every request.
	mcpStatelessProtocol     = "2026-07-28"
	federatedListTimeout     = 20 * time.Second
	federatedCallTimeout     = 120 * time.Second
	maxFederatedRequestBytes = 4 << 20
	mcpMetaVersion           = "io.modelcontextprotocol/protocolVersion"
	mcpMetaPrefix            = "io.modelcontextprotocol/"
)

// JSON-RPC error codes (and MCP's own).
const (
	rpcParseError         = -32700
	rpcInvalidRequest     = -32600
	rpcMethodNotFound     = -32601
	rpcInvalidParams      = -32602
	rpcInternalError      = -32603
	rpcHeaderMismatch     = -32020
	rpcMissingCapability  = -32021
	rpcUnsupportedVersion = -32022
)

// mcpSupportedVersions are the protocol revisions the endpoint speaks,
// newest first (server/discover's supportedVersions); initialize echoes
// the caller's when it is one of those after the first.
var mcpSupportedVersions = []string{mcpStatelessProtocol, "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// jsonrpcFormat is the JSON-RPC inbound format: the gateway's own HTTP
// refusals (401, 413, 429, ...) in the OpenAI envelope; JSON-RPC errors
// are written by the endpoint itself.
var jsonrpcFormat = &wireFormat{name: "jsonrpc", writeError: writeOpenAIError}

// federatedMCPRoute is the endpoint's accounting row.
var federatedMCPRoute = &route{path: "/mcp", method: http.MethodPost, format: jsonrpcFormat, name: "mcp-federated",
	maxBodyBytes: maxFederatedRequestBytes}

// rpcCall is the decoded client message and its dialect.
type rpcCall struct {
	id     json.RawMessage // nil: a notification
	method string
	params json.RawMessage
	// version is the caller's protocol version (its _meta's, else its
	// MCP-Protocol-Version header; "" unknown); stateless: 2026-07-28
	// or later.
	version   string
	stateless bool
}

// rpcEnvelope is a client message as sent.
type rpcEnvelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// serveFederatedMCP is POST /mcp.
func (g *Gateway) serveFederatedMCP(w http.ResponseWriter, r *http.Request, tr *requestTrace) {
	c := newCall(g, w, r, federatedMCPRoute, tr)
	defer finish(c)
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		reject(c, errMethodNotAllowed(r.Method, "/mcp", http.MethodPost))
		return
	}
	if !identify(c) {
		return
	}
	if r.Header.Get("Upgrade") != "" {
		reject(c, apierr.New(http.StatusNotImplemented, "invalid_request_error", "upgrade_not_supported",
			"protocol upgrades are not supported on the federated MCP endpoint"))
		return
	}
	body, e := readFederatedBody(c)
	if e != nil {
		reject(c, e)
		return
	}
	c.req = &jsonRequest{} // the body is read: a refusal keeps the connection
	m, code, msg := decodeRPC(body)
	if code != 0 {
		writeRPCError(c, nil, code, msg, nil, apierr.ClassNone)
		return
	}
	if e := count(c, 0, 0, nil); e != nil {
		reject(c, e)
		return
	}
	dispatchRPC(c, m)
}

// readFederatedBody reads the body under a body-admission slot.
func readFederatedBody(c *call) ([]byte, *apiError) {
	slot := takeBodySlot(c.g.admission)
	if slot == nil {
		return nil, errBodyCapacity()
	}
	defer releaseSlot(slot)
	return readRequestBody(c.w, c.r, maxFederatedRequestBytes, slot)
}

// decodeRPC reads one JSON-RPC 2.0 message: a parse error for anything
// but JSON; an invalid request for a batch (removed from MCP in
// 2025-06-18), anything but an object, a jsonrpc other than "2.0", no
// method, an id that is not a string, number or null, or params that are
// not structured.
func decodeRPC(body []byte) (*rpcCall, int64, string) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || !json.Valid(body) {
		return nil, rpcParseError, "parse error: the body is not JSON"
	}
	if body[0] == '[' {
		return nil, rpcInvalidRequest, "JSON-RPC batches are not supported (MCP removed them in 2025-06-18): send one message per request"
	}
	var env rpcEnvelope
	if body[0] != '{' || json.Unmarshal(body, &env) != nil {
		return nil, rpcInvalidRequest, "invalid request: the body is not a JSON-RPC request object"
	}
	if env.JSONRPC != "2.0" {
		return nil, rpcInvalidRequest, "invalid request: jsonrpc must be \"2.0\""
	}
	if env.Method == "" {
		return nil, rpcInvalidRequest, "invalid request: no method"
	}
	if len(env.ID) > 0 && !validRPCID(env.ID) {
		return nil, rpcInvalidRequest, "invalid request: the id must be a string, a number or null"
	}
	if p := bytes.TrimSpace(env.Params); len(p) > 0 && p[0] != '{' && p[0] != '[' && string(p) != "null" {
		return nil, rpcInvalidRequest, "invalid request: params must be an object or an array"
	}
	return &rpcCall{id: env.ID, method: env.Method, params: env.Params}, 0, ""
}

// validRPCID reports whether a raw id is a string, a number or null.
func validRPCID(id json.RawMessage) bool {
	b := id[0]
	return b == '"' || b == 'n' || b == '-' || b >= '0' && b <= '9'
}

// dispatchRPC answers the message: a notification with 202 and no body,
// a request by its method.
func dispatchRPC(c *call, m *rpcCall) {
	if m.id == nil || strings.HasPrefix(m.method, "notifications/") {
		noteWrite(&c.rec, http.StatusAccepted)
		c.w.Header().Set("Content-Length", "0")
		c.w.WriteHeader(http.StatusAccepted)
		return
	}
	if code, msg, data := checkDialect(c.r, m); code != 0 {
		writeRPCError(c, m, code, msg, data, apierr.ClassNone)
		return
	}
	switch m.method {
	case "initialize":
		writeRPCResult(c, m, initializeResult(m.params))
	case "ping":
		writeRPCResult(c, m, []byte(`{}`))
	case "server/discover":
		writeRPCResult(c, m, discoverResult())
	case "tools/list":
		serveToolsList(c, m)
	case "tools/call":
		serveToolsCall(c, m)
	default:
		writeRPCError(c, m, rpcMethodNotFound, "method not found: "+m.method, nil, apierr.ClassNone)
	}
}

// checkDialect reads the caller's protocol version and checks its
// headers as the version asks: an MCP-Protocol-Version header of an
// unknown session-dialect revision is an invalid request (HTTP 400); a
// stateless version other than 2026-07-28 is -32022 with the supported
// versions (the SDK client retries with one of them); in the stateless
// dialect an Mcp-Method (or, for tools/call, Mcp-Name) header that
// disagrees with the body is -32020. Missing ones are tolerated.
func checkDialect(r *http.Request, m *rpcCall) (int64, string, json.RawMessage) {
	header := r.Header.Get("Mcp-Protocol-Version")
	m.version = metaVersion(m.params)
	if m.version == "" {
		m.version = header
	}
	m.stateless = m.version >= mcpStatelessProtocol
	if header != "" && header < mcpStatelessProtocol && !knownMCPVersion(header) {
		return rpcInvalidRequest, "unsupported MCP-Protocol-Version " + strconv.Quote(header) +
			" (supported: " + strings.Join(mcpSupportedVersions, ", ") + ")", nil
	}
	if m.stateless && !knownMCPVersion(m.version) {
		data, _ := json.Marshal(map[string]interface{}{"supported": mcpSupportedVersions, "requested": m.version})
		return rpcUnsupportedVersion, "unsupported protocol version", data
	}
	if !m.stateless {
		return 0, "", nil
	}
	if h := r.Header.Get("Mcp-Method"); h != "" && h != m.method {
		return rpcHeaderMismatch, "header mismatch: Mcp-Method does not match the body's method", nil
	}
	if h := r.Header.Get("Mcp-Name"); h != "" && m.method == "tools/call" && h != toolCallName(m.params) {
		return rpcHeaderMismatch, "header mismatch: Mcp-Name does not match the body's tool name", nil
	}
	return 0, "", nil
}

// metaVersion is params._meta's protocol version ("" none).
func metaVersion(params json.RawMessage) string {
	if !bytes.Contains(params, []byte(mcpMetaVersion)) {
		return ""
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	var v string
	if json.Unmarshal(params, &p) != nil || json.Unmarshal(p.Meta[mcpMetaVersion], &v) != nil {
		return ""
	}
	return v
}

// knownMCPVersion reports whether v is a revision the endpoint speaks.
func knownMCPVersion(v string) bool {
	for i := 0; i < len(mcpSupportedVersions); i++ {
		if mcpSupportedVersions[i] == v {
			return true
		}
	}
	return false
}

// toolCallName is a tools/call's params.name ("" none).
func toolCallName(params json.RawMessage) string {
	var p struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(params, &p)
	return p.Name
}

// mcpServerInfo is the gateway's Implementation.
func mcpServerInfo() string {
	return `{"name":"llmgateway","version":` + string(jsonString(Version)) + `}`
}

// initializeResult answers initialize: the caller's protocolVersion when
// it is a session-dialect revision the gateway knows, else the
// gateway's own; tools only, whose list never changes by notification.
func initializeResult(params json.RawMessage) []byte {
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(params, &p)
	v := mcpGatewayProtocol
	if p.ProtocolVersion != mcpStatelessProtocol && knownMCPVersion(p.ProtocolVersion) {
		v = p.ProtocolVersion
	}
	return []byte(`{"protocolVersion":"` + v + `","capabilities":{"tools":{"listChanged":false}},"serverInfo":` + mcpServerInfo() + `}`)
}

// discoverResult answers server/discover (SEP-2575): the supported
// versions, the capabilities and the server's identity in _meta.
func discoverResult() []byte {
	versions, _ := json.Marshal(mcpSupportedVersions)
	return []byte(`{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":` + mcpServerInfo() +
		`},"ttlMs":0,"cacheScope":"public","supportedVersions":` + string(versions) +
		`,"capabilities":{"tools":{"listChanged":false}}}`)
}

// serveToolsList answers tools/list: the federation's tools, no cursor.
// In the stateless dialect the result is marked complete and, being the
// caller's own view, private to it.
func serveToolsList(c *call, m *rpcCall) {
	started := time.Now()
	l := listFederatedTools(c.g, c.r.Context(), c.user, c.trace)
	noteBackendTime(c, l.sent, started)
	if l.allFailed {
		data, _ := json.Marshal(map[string]interface{}{"failures": l.failures})
		writeRPCError(c, m, rpcInternalError, "no MCP server reachable", data, l.class)
		return
	}
	out := make([]byte, 0, 256)
	out = append(out, '{')
	if m.stateless {
		out = append(out, `"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":`...)
		out = append(out, mcpServerInfo()...)
		out = append(out, `},"ttlMs":0,"cacheScope":"private",`...)
	}
	out = append(out, `"tools":[`...)
	for i := 0; i < len(l.tools); i++ {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, l.tools[i].raw...)
	}
	out = append(out, "]}"...)
	writeRPCResult(c, m, out)
}

// serveToolsCall answers tools/call.
func serveToolsCall(c *call, m *rpcCall) {
	var p struct {
		Name *string `json:"name"`
	}
	if json.Unmarshal(m.params, &p) != nil || p.Name == nil || *p.Name == "" {
		writeRPCError(c, m, rpcInvalidParams, "tools/call needs params with the tool's name", nil, apierr.ClassNone)
		return
	}
	name := *p.Name
	started := time.Now()
	o := federatedCall(c.g, c.r.Context(), c.user, name, m.params, c.trace)
	noteBackendTime(c, o.sent, started)
	switch {
	case o.unresolved:
		writeRPCError(c, m, rpcInvalidParams, "unknown tool "+strconv.Quote(name)+": no MCP server your key reaches serves it", nil, apierr.ClassNone)
	case o.failure != nil:
		writeRPCError(c, m, rpcInternalError, "mcp server "+strconv.Quote(o.server.name)+" failed: "+o.failure.message, nil, o.failure.class)
	case o.rpcError != nil:
		writeBackendRPCError(c, m, o.server, o.rpcError)
	default:
		writeRPCResult(c, m, markComplete(o.result, m.stateless))
	}
}

// noteBackendTime adds the backend requests and their time to the record.
func noteBackendTime(c *call, sent int, started time.Time) {
	if sent > 0 {
		c.rec.attempts += sent
		c.rec.upstream += time.Since(started)
	}
}

// markComplete marks a relayed result complete for a stateless caller
// (unless it says what it is itself).
func markComplete(result json.RawMessage, stateless bool) []byte {
	if !stateless || bytes.Contains(result, []byte(`"resultType"`)) {
		return result
	}
	t := bytes.TrimSpace(result)
	if len(bytes.TrimSpace(t[1:len(t)-1])) == 0 {
		return []byte(`{"resultType":"complete"}`)
	}
	return append([]byte(`{"resultType":"complete",`), t[1:]...)
}

// writeRPCResult writes a JSON-RPC result under the caller's id.
func writeRPCResult(c *call, m *rpcCall, result []byte) {
	body := make([]byte, 0, 40+len(m.id)+len(result))
	body = append(body, `{"jsonrpc":"2.0","id":`...)
	body = append(body, m.id...)
	body = append(body, `,"result":`...)
	body = append(body, result...)
	body = append(body, '}')
	noteWrite(&c.rec, http.StatusOK)
	writeJSONResponse(c.w, http.StatusOK, body)
}

// writeRPCError writes a JSON-RPC error under the caller's id (null
// when the message could not be read) and notes it in the record; class
// is the backend failure behind it (ClassNone: the gateway's own).
func writeRPCError(c *call, m *rpcCall, code int64, message string, data json.RawMessage, class apierr.Class) {
	e := make([]byte, 0, 64+len(message)+len(data))
	e = append(e, `{"code":`...)
	e = strconv.AppendInt(e, code, 10)
	e = append(e, `,"message":`...)
	e = append(e, jsonString(message)...)
	if len(data) > 0 {
		e = append(e, `,"data":`...)
		e = append(e, data...)
	}
	e = append(e, '}')
	status := rpcErrorStatus(code, m != nil && m.stateless)
	noteWrite(&c.rec, status)
	noteError(&c.rec, &apiError{Status: status, Code: rpcErrorName(code), Message: message, Class: class})
	writeRPCErrorBody(c, m, status, e)
}

// writeBackendRPCError relays a server's JSON-RPC error as it sent it,
// under the caller's id.
func writeBackendRPCError(c *call, m *rpcCall, t *targetRuntime, rpcError json.RawMessage) {
	var e mcpWireError
	_ = json.Unmarshal(rpcError, &e)
	code := int64(rpcInternalError)
	if e.Code != nil {
		code = *e.Code
	}
	status := rpcErrorStatus(code, m.stateless)
	noteWrite(&c.rec, status)
	noteError(&c.rec, &apiError{Status: status, Code: "mcp_server_error",
		Message: "mcp server " + strconv.Quote(t.name) + " answered with JSON-RPC error " + strconv.FormatInt(code, 10)})
	writeRPCErrorBody(c, m, status, rpcError)
}

func writeRPCErrorBody(c *call, m *rpcCall, status int, errObj []byte) {
	id := []byte("null")
	if m != nil && len(m.id) > 0 {
		id = m.id
	}
	body := make([]byte, 0, 40+len(id)+len(errObj))
	body = append(body, `{"jsonrpc":"2.0","id":`...)
	body = append(body, id...)
	body = append(body, `,"error":`...)
	body = append(body, errObj...)
	body = append(body, '}')
	writeJSONResponse(c.w, status, body)
}

// rpcErrorStatus is the HTTP status of a JSON-RPC error: 400 for a
// message that could not be read; in the stateless dialect the statuses
// SEP-2575 gives (-32601 404; -32602, -32020, -32021, -32022 400); 200
// otherwise (the error is the answer).
func rpcErrorStatus(code int64, stateless bool) int {
	switch code {
	case rpcParseError, rpcInvalidRequest, rpcUnsupportedVersion, rpcHeaderMismatch:
		return http.StatusBadRequest
	}
	if !stateless {
		return http.StatusOK
	}
	switch code {
	case rpcMethodNotFound:
		return http.StatusNotFound
	case rpcInvalidParams, rpcMissingCapability:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// rpcErrorName is a JSON-RPC code's name in the request record.
func rpcErrorName(code int64) string {
	switch code {
	case rpcParseError:
		return "parse_error"
	case rpcInvalidRequest:
		return "invalid_request"
	case rpcMethodNotFound:
		return "method_not_found"
	case rpcInvalidParams:
		return "invalid_params"
	case rpcHeaderMismatch:
		return "header_mismatch"
	case rpcUnsupportedVersion:
		return "unsupported_protocol_version"
	}
	return "internal_error"
}
