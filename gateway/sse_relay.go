package gateway

import (
	"bytes"
	"io"
	"net/http"

	"github.com/llmgateway/llmgateway/gateway/internal/sse"
	"github.com/llmgateway/llmgateway/gateway/internal/translate"
)

// The verbatim relay of an upstream event stream, built on the one SSE
// codec (internal/sse), which the passthrough usage sniffer and the
// translated streams read with too.

// sseRelayResult says how a relayed event stream ended.
type sseRelayResult struct {
	bytes    int64
	events   int   // events with at least one field
	sawEnd   bool  // the stream's terminator arrived (isEnd)
	err      error // read or write failure, or the size cap; nil for a clean end
	tooLarge bool
	partial  bool // the stream ended inside an event, which was dropped
}

// usageMark is in every event that can carry usage ("usage",
// "usageMetadata"): translate.UsageFromJSON's own gate.
var usageMark = []byte("sage")

// relaySSE copies an event stream to w verbatim, one complete event at a
// time, flushing after each, so every token reaches the client as soon
// as the upstream produced it. An event is held back until its blank
// line; one cut short by the end of the stream is dropped, so an error
// event appended afterwards is always parseable on its own. w must be
// the writer the host handed the gateway: its Flush is what pushes bytes
// to the client. isEnd recognises the terminator; onEvent, when not nil,
// sees every event with a field before it is written.
func relaySSE(w http.ResponseWriter, body io.Reader, limit int64, isEnd func(sse.Event) bool, onEvent func(sse.Event)) sseRelayResult {
	return relayEventStream(w, body, limit, nil, isEnd, onEvent, nil)
}

// relayEventStream is relaySSE made cheap for the interpreter, which
// runs the core inside Traefik at 10–100× the cost of compiled code for
// every loop turn, call and struct of ours, but runs the standard
// library compiled. So it takes what one upstream Read delivered as a
// single run of complete events (sse.Reader.Events), cuts it into events
// with bytes.Index, and looks inside an event only when a compiled
// bytes.Contains says it may matter: isEnd sees only the events holding
// endMark (every event when endMark is nil), and an event holding
// usageMark has its usage merged into *usage (when usage is not nil).
// Every event is still written and flushed on its own, as it was read.
func relayEventStream(w http.ResponseWriter, body io.Reader, limit int64, endMark []byte, isEnd func(sse.Event) bool, onEvent func(sse.Event), usage *translate.Usage) sseRelayResult {
	var res sseRelayResult
	flusher, _ := w.(http.Flusher)
	rd := sse.NewReader(body, limit)
	rd.Verbatim = true
	for {
		run, err := rd.Events()
		if err != nil {
			res.bytes = rd.BytesRead()
			res.partial = rd.Partial()
			if err != io.EOF {
				res.err = err
				res.tooLarge = err == sse.ErrTooLarge
			}
			return res
		}
		// Without a '\r' in the run, every event ends at the first "\n\n"
		// (or is a lone blank line). A mark absent from the run is absent
		// from each of its events.
		lfOnly := bytes.IndexByte(run, '\r') < 0
		mayEnd := isEnd != nil && (endMark == nil || bytes.Contains(run, endMark))
		mayUsage := usage != nil && bytes.Contains(run, usageMark)
		for len(run) > 0 {
			n := 0
			if lfOnly && run[0] != '\n' {
				n = bytes.Index(run, lf2) + 2
			} else {
				n = sse.EventLen(run)
			}
			raw := run[:n:n]
			run = run[n:]
			// An event has a field unless all its lines are comments or it
			// is a lone blank line; only those start with ':', '\n' or '\r'
			// (a field line starting with '\r' is possible, and checked).
			field := true
			if c := raw[0]; c == ':' || c == '\n' || c == '\r' {
				field = sse.ParseEvent(raw).HasField
			}
			if field {
				res.events++
				if onEvent != nil || mayEnd && (endMark == nil || bytes.Contains(raw, endMark)) ||
					mayUsage && bytes.Contains(raw, usageMark) && translate.MayHoldUsage(raw) {
					ev := sse.ParseEvent(raw)
					if mayEnd && isEnd(ev) {
						res.sawEnd = true
					}
					if mayUsage {
						translate.UsageFromJSON(ev.Data, usage)
					}
					if onEvent != nil {
						onEvent(ev)
					}
				}
			}
			if _, werr := w.Write(raw); werr != nil {
				res.bytes = rd.BytesRead()
				res.err = werr
				return res
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
	}
}

// lf2 ends an event: a line's "\n", then the blank line.
var lf2 = []byte("\n\n")
