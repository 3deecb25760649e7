package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
)

// sseRelayResult says how a relayed event stream ended.
type sseRelayResult struct {
	bytes    int64
	events   int
	sawDone  bool  // an OpenAI "data: [DONE]" terminator arrived
	err      error // read failure or size cap; nil for a clean end
	tooLarge bool
	partial  bool // the stream ended inside an event, which was dropped
}

var errStreamTooLarge = errors.New("upstream stream exceeded the response size limit")

// relaySSE copies an SSE body to w one complete event at a time and
// flushes after each, so every token reaches the client as soon as the
// upstream produced it. An event is held back until its terminating blank
// line; an event cut short by the end of the stream is dropped, so an
// error event appended afterwards is always parseable on its own. w must
// be the writer the host handed the gateway: its Flush is what pushes
// bytes to the client.
//
// onEvent, when not nil, sees every complete event before it is written.
func relaySSE(w http.ResponseWriter, body io.Reader, limit int64, onEvent func([]byte)) sseRelayResult {
	var res sseRelayResult
	flusher, _ := w.(http.Flusher)
	br := bufio.NewReaderSize(body, 32<<10)
	var event []byte
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			res.bytes += int64(len(line))
			if res.bytes > limit {
				res.err, res.tooLarge, res.partial = errStreamTooLarge, true, len(event) > 0
				return res
			}
			event = append(event, line...)
			if err == nil && isBlankLine(line) {
				if len(event) > len(line) {
					res.events++
				}
				if isDoneEvent(event) {
					res.sawDone = true
				}
				if onEvent != nil {
					onEvent(event)
				}
				if _, werr := w.Write(event); werr != nil {
					res.err = werr
					return res
				}
				if flusher != nil {
					flusher.Flush()
				}
				event = event[:0]
			}
		}
		if err == nil || err == bufio.ErrBufferFull {
			continue
		}
		res.partial = len(event) > 0
		if err != io.EOF {
			res.err = err
		}
		return res
	}
}

// isDoneEvent recognises OpenAI's stream terminator, "data: [DONE]".
func isDoneEvent(event []byte) bool {
	line := event
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	if !bytes.HasPrefix(line, []byte("data:")) {
		return false
	}
	return bytes.Equal(bytes.TrimSpace(line[5:]), []byte("[DONE]"))
}

func isBlankLine(line []byte) bool {
	return len(line) == 1 || (len(line) == 2 && line[0] == '\r')
}

// writeSSEError appends an OpenAI-style error event to a stream whose
// headers are already sent: the only way left to tell the client the
// stream did not end cleanly.
func writeSSEError(w http.ResponseWriter, e *apiError) {
	detail := openAIErrorBody{Error: openAIErrorDetail{Message: e.message, Type: e.kind, Code: e.code}}
	data, _ := json.Marshal(detail)
	_, _ = w.Write(append(append([]byte("data: "), data...), '\n', '\n'))
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}
