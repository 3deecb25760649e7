package gateway

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
)

// requestTrace is one request's identity: its request id and its place
// in a W3C trace (https://www.w3.org/TR/trace-context/). It is built
// once, when the gateway takes the request (startTrace), and read by
// every log line, the request record and every upstream call.
type requestTrace struct {
	// requestID is the client's X-Request-ID when valid (validRequestID),
	// else a new one (32 hex digits).
	requestID string
	// traceID is the client's trace id when its traceparent is valid,
	// else a new one (32 lowercase hex digits).
	traceID string
	// spanID is the gateway's own span in the trace (16 hex digits): the
	// response's traceparent names it, and the span of upstream attempt n
	// is derived from it (attemptTraceparent).
	spanID string
	// flags is the trace-flags the gateway propagates: "01" when the
	// client's traceparent was sampled, else "00" (a trace the gateway
	// starts is not sampled: the gateway records no spans).
	flags string
	// state is the client's tracestate, verbatim (multiple headers joined
	// with ","), kept only with a valid traceparent and when it is at most
	// maxTracestateBytes without control characters; "" otherwise.
	state string
	// logTail is " request_id=… trace_id=…", appended to every log line
	// about the request.
	logTail string
}

const (
	// maxRequestIDBytes bounds an accepted X-Request-ID.
	maxRequestIDBytes = 128
	// maxTracestateBytes bounds a kept tracestate (the W3C spec's
	// recommended minimum a vendor should propagate is 512 bytes).
	maxTracestateBytes = 512
	// requestIDChars are the bytes an accepted X-Request-ID consists of:
	// none needs quoting in a log line or escaping in a header.
	requestIDChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:=+/-"
	// hexDigits are a traceparent's digits: lowercase hex only.
	hexDigits   = "0123456789abcdef"
	zeroTraceID = "00000000000000000000000000000000"
	zeroSpanID  = "0000000000000000"
	// headerControlChars are the bytes a header value may not carry
	// (net/http refuses to send them): every control character but tab.
	headerControlChars = "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x0a\x0b\x0c\x0d\x0e\x0f" +
		"\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f\x7f"
	// spanStep spreads attempt numbers over the span space: an odd
	// multiplier, so n ↦ n×spanStep is a bijection and every attempt's
	// span differs from the gateway's and from every other attempt's.
	spanStep uint64 = 0x9e3779b97f4a7c15
)

// startTrace builds the request's ids from its headers and sets them on
// the response before anything is written: X-Request-ID, and a
// traceparent naming the gateway's span. Every answer the gateway
// writes itself passes through it; a request handed to next does not.
//
// One 24-byte crypto/rand read gives the gateway's span id (8 bytes)
// and, when the client sent none valid, the trace id (16 bytes), whose
// hex is also a new request id. A client's traceparent is taken only
// when valid (validTraceparent); its tracestate only with it. Written
// for the interpreter: few standard-library calls, headers set straight
// into the map under their canonical names.
func startTrace(w http.ResponseWriter, r *http.Request) *requestTrace {
	var b [24]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	t := &requestTrace{requestID: h[:32], traceID: h[:32], spanID: h[32:], flags: "00"}
	if t.spanID == zeroSpanID {
		t.spanID = "0000000000000001"
	}
	if id := r.Header.Get("X-Request-Id"); id != "" && validRequestID(id) {
		t.requestID = id
	}
	if tp := r.Header.Get("Traceparent"); tp != "" && validTraceparent(tp) {
		joinClientTrace(t, r, tp)
	} else if t.traceID == zeroTraceID {
		t.traceID = "00000000000000000000000000000001"
	}
	t.logTail = " request_id=" + t.requestID + " trace_id=" + t.traceID
	out := w.Header()
	out["X-Request-Id"] = []string{t.requestID}
	out["Traceparent"] = []string{"00-" + t.traceID + "-" + t.spanID + "-" + t.flags}
	if panicProbe != nil {
		panicProbe("trace", t.requestID)
	}
	return t
}

// joinClientTrace puts t in the client's trace (a valid traceparent tp):
// its trace id, its sampled flag and its tracestate. Its own function:
// under Yaegi a call pays for the callee's whole body, and most requests
// carry no trace context.
func joinClientTrace(t *requestTrace, r *http.Request, tp string) {
	t.traceID = tp[3:35]
	if sampledDigit[tp[54]] {
		t.flags = "01"
	}
	if vs := r.Header["Tracestate"]; len(vs) > 0 {
		t.state = keptTracestate(vs)
	}
}

// sampledDigit marks the trace-flags' last hex digits whose low bit, the
// sampled flag, is set.
var sampledDigit = [256]bool{'1': true, '3': true, '5': true, '7': true, '9': true, 'b': true, 'd': true, 'f': true}

// TraceResponse gives a response the gateway's request id and trace
// context, by the rules of the gateway's own routes: X-Request-ID (the
// client's when it is 1–128 characters of [A-Za-z0-9._:=+/-], else a new
// one) and traceparent (the gateway's span, in the client's trace when
// its traceparent is valid, else in a new one), set on w's headers. Call
// it before writing. It returns the request id. The binary's probes use
// it; a host's own routes may too.
func TraceResponse(w http.ResponseWriter, r *http.Request) string {
	return startTrace(w, r).requestID
}

// validRequestID reports whether a client's X-Request-ID is kept: 1–128
// bytes of requestIDChars. Anything else is replaced, never trimmed or
// repaired. (One strings.Trim: under Yaegi a standard-library call is far
// cheaper than a loop of ours over the bytes.)
func validRequestID(id string) bool {
	return len(id) <= maxRequestIDBytes && strings.Trim(id, requestIDChars) == ""
}

// validTraceparent checks a traceparent as W3C Trace Context level 1
// says: "00-<32 hex trace-id>-<16 hex parent-id>-<2 hex flags>", lowercase
// hex only, neither id all zeros; version ff is invalid, version 00 is
// exactly 55 characters, and a later version is read by its first 55
// characters when whatever follows them starts with "-".
func validTraceparent(tp string) bool {
	if len(tp) < 55 || tp[2] != '-' || tp[35] != '-' || tp[52] != '-' || tp[:2] == "ff" {
		return false
	}
	if len(tp) > 55 && (tp[:2] == "00" || tp[55] != '-') {
		return false
	}
	// The four fields joined, then one Trim: all lowercase hex.
	if strings.Trim(tp[:2]+tp[3:35]+tp[36:52]+tp[53:55], hexDigits) != "" {
		return false
	}
	return tp[3:35] != zeroTraceID && tp[36:52] != zeroSpanID
}

// keptTracestate is the tracestate propagated with a valid traceparent:
// the client's header values joined with "," (the spec's combination of
// several headers), kept verbatim when at most maxTracestateBytes and
// free of control characters, else "" (dropped whole, never cut).
func keptTracestate(vs []string) string {
	s := vs[0]
	if len(vs) > 1 {
		s = strings.Join(vs, ",")
	}
	if len(s) > maxTracestateBytes || strings.ContainsAny(s, headerControlChars) {
		return ""
	}
	return s
}

// attemptTraceparent is the traceparent of upstream attempt n (1, 2, …)
// of the request: the request's trace id and flags, and a span id of its
// own.
func attemptTraceparent(t *requestTrace, n int) string {
	span, _ := strconv.ParseUint(t.spanID, 16, 64)
	s := span ^ uint64(n)*spanStep
	if s == 0 {
		s = spanStep
	}
	hexSpan := strconv.FormatUint(s, 16)
	return "00-" + t.traceID + "-" + zeroSpanID[:16-len(hexSpan)] + hexSpan + "-" + t.flags
}

// setUpstreamTrace sets attempt n's trace context on an outbound
// request's headers: traceparent, and tracestate when the client sent
// one (else any tracestate the headers carry is removed).
func setUpstreamTrace(h http.Header, t *requestTrace, n int) {
	h.Set("Traceparent", attemptTraceparent(t, n))
	if t.state != "" {
		h.Set("Tracestate", t.state)
	} else if len(h["Tracestate"]) > 0 {
		delete(h, "Tracestate")
	}
}
