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
}

var errStreamTooLarge = errors.New("upstream stream exceeded the response size limit")

// relaySSE copies an SSE body to w event by event, flushing after every
// complete event (the blank line that ends it), so each token reaches the
// client as soon as the upstream produced it. w must be the writer the
// host handed the gateway: its Flush is what pushes bytes to the client.
func relaySSE(w http.ResponseWriter, body io.Reader, limit int64) sseRelayResult {
	var res sseRelayResult
	flusher, _ := w.(http.Flusher)
	br := bufio.NewReaderSize(body, 32<<10)
	pending := false // bytes of an unfinished event were written
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			res.bytes += int64(len(line))
			if res.bytes > limit {
				res.err, res.tooLarge = errStreamTooLarge, true
				return res
			}
			if _, werr := w.Write(line); werr != nil {
				res.err = werr
				return res
			}
			if isBlankLine(line) {
				if pending {
					res.events++
					pending = false
				}
				if flusher != nil {
					flusher.Flush()
				}
			} else {
				pending = true
				if isDoneLine(line) {
					res.sawDone = true
				}
			}
		}
		if err == nil || err == bufio.ErrBufferFull {
			continue
		}
		if pending && flusher != nil {
			flusher.Flush()
		}
		if err != io.EOF {
			res.err = err
		}
		return res
	}
}

// isDoneLine recognises OpenAI's stream terminator, "data: [DONE]".
func isDoneLine(line []byte) bool {
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
	_, _ = w.Write([]byte("\n"))
	_, _ = w.Write(append(append([]byte("data: "), data...), '\n', '\n'))
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}
