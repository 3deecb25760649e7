package gateway

import (
	"io"
	"net/http"

	"github.com/llmgateway/llmgateway/gateway/internal/sse"
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

// relaySSE copies an event stream to w verbatim, one complete event at a
// time, flushing after each, so every token reaches the client as soon
// as the upstream produced it. An event is held back until its blank
// line; one cut short by the end of the stream is dropped, so an error
// event appended afterwards is always parseable on its own. w must be
// the writer the host handed the gateway: its Flush is what pushes bytes
// to the client. isEnd recognises the terminator; onEvent, when not nil,
// sees every event with a field before it is written.
func relaySSE(w http.ResponseWriter, body io.Reader, limit int64, isEnd func(sse.Event) bool, onEvent func(sse.Event)) sseRelayResult {
	var res sseRelayResult
	flusher, _ := w.(http.Flusher)
	rd := sse.NewReader(body, limit)
	rd.Verbatim = true
	for {
		ev, err := rd.Next()
		if err != nil {
			res.bytes, res.partial = rd.BytesRead(), rd.Partial()
			if err != io.EOF {
				res.err, res.tooLarge = err, err == sse.ErrTooLarge
			}
			return res
		}
		if ev.HasField {
			res.events++
			if isEnd(ev) {
				res.sawEnd = true
			}
			if onEvent != nil {
				onEvent(ev)
			}
		}
		if _, werr := w.Write(ev.Raw); werr != nil {
			res.bytes, res.err = rd.BytesRead(), werr
			return res
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
}
