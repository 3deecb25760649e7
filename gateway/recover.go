package gateway

import (
	"fmt"
	"net/http"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"text/template"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// Panic containment. A panic while the gateway handles a request ends
// that request, never the process — nor Traefik, which runs the core
// interpreted and dies of a panic no interpreted frame recovers in any
// goroutine. Three places recover:
//
//   - finish, the record stage of every route that builds a call (the
//     metered routes, native passthrough, the MCP/A2A proxy, POST /mcp):
//     deferred first, it runs after the route's other deferred releases
//     (the upstream body, the provider slot, the stream's timer), writes the
//     answer (containCallPanic), and then completes the record as for
//     any request — the reservation released, the statistics and the
//     record emitted with status 500 (or the stream's 200) and code
//     internal_error;
//   - ServeHTTP's guard (recoverRequest), for everything else the gateway
//     answers itself (listings, admin, metrics, the dispatch itself);
//   - recoverBackground (or its own recover calling
//     logBackgroundPanic), deferred first by every goroutine and timer
//     callback of the gateway's code a request starts: the stream
//     writer's keepalive timer, reservation renewals, model discovery,
//     the target probe sweep, the MCP listing fan-out,
//     the success-rate and event flush loops (the watchdog and
//     body-stall timers only cancel a context or give a slot back).
//
// Nothing written yet, the answer is a 500 in the route's own envelope
// (writePanicAnswer). Once the headers are out, a metered stream gets
// its format's mid-stream error event and ends cleanly; any other answer
// (a whole body, a relayed passthrough or proxy stream the gateway does
// not parse) ends where it stopped. The log line names the request, the
// panic value and a bounded stack — never a header value or a body.
//
// http.ErrAbortHandler is not a failure but the net/http convention for
// "abort this response" (httputil.ReverseProxy panics with it when a
// relayed body breaks after the headers, so the client sees a cut answer
// rather than a short complete one): it is not logged, the record is
// completed, and it is raised again (abortAnswer) for net/http — or
// Traefik's recovery, which passes it on once headers are out — to drop
// the connection without logging.

const (
	// panicStackBytes bounds the stack a panic's log line carries.
	panicStackBytes = 8 << 10
	// panicValueBytes bounds the panic value's text in the log line.
	panicValueBytes = 256
)

// panicProbe, when set (tests only), is called at chosen pipeline stages
// with the stage's name and the request's id, so a test can panic there:
// "trace" (startTrace: every gateway answer starts there), "count" (a
// call counted and, for a budgeted caller, reserved), "stream" (a
// metered stream's headers sent) and "keepalive" (the stream writer's
// timer goroutine, about to write a keepalive event).
var panicProbe func(stage, requestID string)

// errInternal is the answer of a request whose handling panicked.
func errInternal() *apiError {
	return apierr.New(http.StatusInternalServerError, "api_error", "internal_error",
		"the gateway failed while handling the request; the failure is logged under this request's id")
}

// containCallPanic handles v, the value finish recovered (nil: no
// panic), for c's request: it logs it, notes the record and writes what
// can still be written. It reports whether the answer must be aborted
// (http.ErrAbortHandler), which finish does once the record is emitted.
func containCallPanic(c *call, v interface{}) bool {
	if v == nil {
		return false
	}
	v = unwrapPanic(v)
	if isAbortHandler(v) {
		return true
	}
	logPanic(c.g.log, c.r, v, c.trace.logTail)
	e := errInternal()
	c.rec.errorCode, c.rec.errorMessage, c.rec.errorClass = e.Code, e.Message, ""
	if c.rec.firstByte.IsZero() {
		c.rec.statusCode = 0
		noteWrite(&c.rec, e.Status)
		writePanicAnswer(c.w, c.format, e)
		return false
	}
	if streamingAnswer(c) {
		_, _ = c.w.Write(c.format.streamError(nil, e))
		if f, ok := c.w.(http.Flusher); ok {
			f.Flush()
		}
	}
	return false
}

// streamingAnswer reports whether c's answer is a metered route's stream
// already started: the only answer a mid-stream error event can end.
func streamingAnswer(c *call) bool {
	if routesByPath[c.route.path] != c.route || c.format.streamError == nil {
		return false
	}
	ct := c.w.Header().Get("Content-Type")
	return strings.HasPrefix(ct, "text/event-stream") ||
		c.format.streamContentType != "" && strings.HasPrefix(ct, c.format.streamContentType)
}

// recoverRequest is ServeHTTP's guard, deferred before the dispatch: a
// panic no call's finish contained (a route without a call, or the
// dispatch itself) is logged and answered with a 500 in the path's
// envelope, unless an answer was already under way (its Content-Type
// set: every such route sets it just before writing).
func recoverRequest(g *Gateway, w http.ResponseWriter, r *http.Request) {
	v := recover()
	if v == nil {
		return
	}
	v = unwrapPanic(v)
	if isAbortHandler(v) {
		abortAnswer()
		return
	}
	logPanic(g.log, r, v, answerIDs(w, r))
	if w.Header().Get("Content-Type") == "" {
		writePanicAnswer(w, pathFormat(r.URL.Path), errInternal())
	}
}

// recoverBackground is deferred first by every goroutine and timer
// callback the gateway starts: a panic there is logged (task names the
// work, ids the request that started it, "" when none) and ends only
// that work.
func recoverBackground(log *logger, task, ids string) {
	if v := recover(); v != nil {
		logBackgroundPanic(log, task, ids, v)
	}
}

// logBackgroundPanic logs v, recovered in background work (for the
// goroutines that recover themselves to undo some state first).
func logBackgroundPanic(log *logger, task, ids string, v interface{}) {
	if log == nil {
		return
	}
	log.line("ERROR", "panic in background task "+task+": "+panicText(unwrapPanic(v))+ids+" stack="+panicStack())
}

// abortAnswer raises http.ErrAbortHandler again. It panics from
// compiled code (template.Must panics with the error it is given, as it
// is): a panic raised by interpreted code reaches the host wrapped in a
// reflect.Value under Yaegi, which net/http and Traefik's recovery would
// take for a crash (logged, with a stack) instead of the abort.
func abortAnswer() {
	template.Must(nil, http.ErrAbortHandler)
}

// writePanicAnswer writes e as the whole answer in f's envelope (POST
// /mcp: a JSON-RPC internal error), after dropping the headers a half-
// built answer may have set (a relayed Content-Encoding must not
// describe the error body). The connection is closed after it: the
// request body may be half read.
func writePanicAnswer(w http.ResponseWriter, f *wireFormat, e *apiError) {
	h := w.Header()
	for name := range h {
		if !keptOnPanic[name] && !strings.HasPrefix(name, "Access-Control-") {
			delete(h, name)
		}
	}
	h.Set("Connection", "close")
	if f == jsonrpcFormat {
		writeErrorBody(w, e, []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":`+string(jsonString(e.Message))+`}}`))
		return
	}
	f.writeError(w, e)
}

// keptOnPanic are the headers a panic's answer keeps: the request's ids
// and the edge headers (edge.go), which describe the answer whatever it
// is. The CORS headers (Access-Control-*) are kept too.
var keptOnPanic = map[string]bool{
	"X-Request-Id": true, "Traceparent": true, "Vary": true, "X-Content-Type-Options": true,
	"Strict-Transport-Security": true, "Content-Security-Policy": true, "X-Frame-Options": true,
}

// pathFormat is the envelope a panic's answer takes on path p when no
// call knows its route: the metered route's format, JSON-RPC for POST
// /mcp, Ollama's for its listing routes, else the OpenAI envelope (the
// admin API's, the model listings', /metrics', the 404's).
func pathFormat(p string) *wireFormat {
	if rt := routesByPath[p]; rt != nil {
		return rt.format
	}
	switch p {
	case "/mcp":
		return jsonrpcFormat
	case "/", "/api/tags", "/api/show", "/api/version", "/api/ps":
		return ollamaFormat
	}
	return defaultFormat
}

// answerIDs is the log tail naming the request of an answer: the ids
// startTrace set on it, or new ones (set on the answer too) when the
// panic came before.
func answerIDs(w http.ResponseWriter, r *http.Request) string {
	h := w.Header()
	id, tp := h.Get("X-Request-Id"), h.Get("Traceparent")
	if id == "" || len(tp) < 35 {
		return startTrace(w, r).logTail
	}
	return " request_id=" + id + " trace_id=" + tp[3:35]
}

// logPanic writes a request's panic: method and path (never a header
// value or a body), the value, the request's ids and the stack.
func logPanic(log *logger, r *http.Request, v interface{}, ids string) {
	path := r.URL.Path
	if len(path) > 256 {
		path = path[:256]
	}
	log.line("ERROR", "panic serving "+logValue(r.Method)+" "+logValue(path)+": "+panicText(v)+ids+" stack="+panicStack())
}

// unwrapPanic is a recovered value as it was panicked: under Yaegi a
// panic raised by interpreted code arrives wrapped in a reflect.Value.
func unwrapPanic(v interface{}) interface{} {
	if rv, ok := v.(reflect.Value); ok && rv.IsValid() && rv.CanInterface() {
		return rv.Interface()
	}
	return v
}

// isAbortHandler reports whether v is http.ErrAbortHandler.
func isAbortHandler(v interface{}) bool {
	err, ok := v.(error)
	return ok && err == http.ErrAbortHandler
}

// panicText is a panic value for the log: its text, at most
// panicValueBytes, quoted.
func panicText(v interface{}) string {
	s := fmt.Sprint(v)
	if len(s) > panicValueBytes {
		s = s[:panicValueBytes] + "…"
	}
	return strconv.Quote(s)
}

// panicStack is the current goroutine's stack, at most panicStackBytes
// (cut at a line end), quoted into one log line. Called while the panic
// unwinds, it shows the frames that panicked; under the interpreter it
// shows the interpreter's frames.
func panicStack() string {
	buf := make([]byte, panicStackBytes)
	n := runtime.Stack(buf, false)
	s := string(buf[:n])
	if n == len(buf) {
		if i := strings.LastIndexByte(s, '\n'); i > 0 {
			s = s[:i]
		}
		s += "\n…"
	}
	return strconv.Quote(s)
}
