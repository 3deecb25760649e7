package gateway

import (
	"bufio"
	"bytes"
	"io"
)

// This file is the contract between the unified routes and the provider
// translators. A translator is a set of pure functions over bytes:
//
//	request:  OpenAI-shaped client JSON → the provider's JSON
//	response: the provider's JSON → OpenAI-shaped client JSON (+ usage)
//	stream:   the provider's SSE events → OpenAI chat.completion.chunk
//	          events, one upstream event at a time, never buffering the
//	          whole stream
//
// The pipeline (route_unified.go) owns HTTP, retry, the watchdog, size
// caps and error writing; translators own only the shapes.

// usage is what one upstream exchange consumed, as the provider reported
// it (or, when it reported nothing, as estimated by the pipeline).
type usage struct {
	promptTokens     int64 // includes cache creation and cache read tokens
	completionTokens int64
	// cacheCreationTokens and cacheReadTokens are informational: they are
	// already part of promptTokens.
	cacheCreationTokens int64
	cacheReadTokens     int64
	reported            bool // the provider sent usage
	estimated           bool // the pipeline estimated it (ceil(bytes/4))
}

// translateContext carries what a response translator needs beyond the
// provider's bytes.
type translateContext struct {
	requestedModel string // the client's exact model string, echoed in "model"
	upstreamModel  string // the provider's own model id
	created        int64  // unix seconds for "created" (injected for goldens)
	includeUsage   bool   // the client set stream_options.include_usage
	// idFallback is used as the response id when the provider sends none.
	idFallback string
}

// streamPayload is one event a stream translator emits, before any
// framing: the event's name (for wire formats with named events; "" for
// OpenAI chunks) and its JSON data. The client's inbound format frames it
// (wireFormat.frame), so translators compose: a backend's translator
// emits hub payloads whatever the client speaks.
type streamPayload struct {
	name string
	data []byte
}

// streamTranslator turns one provider event stream into hub payloads
// (OpenAI chat.completion.chunk JSON). The pipeline calls event for each
// complete upstream SSE event in order, frames and writes whatever it
// appended and flushes, then calls finish at a clean end of the upstream
// stream. The stream's terminator (OpenAI's [DONE]) is the inbound
// format's to write, never the translator's.
type streamTranslator interface {
	// event consumes one upstream event, appending zero or more payloads
	// to out. An error ends the stream: the pipeline writes it as the
	// format's mid-stream error.
	event(ev sseEvent, out []streamPayload) ([]streamPayload, *apiError)
	// finish is called once the upstream stream ended without a read
	// error. It appends the trailing payloads, or returns an error when
	// the upstream stream was incomplete (e.g. Anthropic's message_stop
	// never came).
	finish(out []streamPayload) ([]streamPayload, *apiError)
	// usage reports the usage seen so far.
	usage() usage
}

// sseEvent is one parsed server-sent event.
type sseEvent struct {
	name string // the "event:" field; "" when absent
	data []byte // the "data:" lines joined with "\n"
	// raw is the event's bytes as received, including the blank line.
	raw []byte
}

// sseReader parses a text/event-stream body into events. It never holds
// more than one event in memory, and fails (errStreamTooLarge) once the
// stream passes its byte limit.
type sseReader struct {
	br    *bufio.Reader
	limit int64
	read  int64
	// partial is set when the stream ended inside an event; that event
	// is not returned.
	partial bool
}

func newSSEReader(r io.Reader, limit int64) *sseReader {
	return &sseReader{br: bufio.NewReaderSize(r, 32<<10), limit: limit}
}

// next returns the next event that carries at least one field. It
// returns io.EOF at a clean end of the stream, errStreamTooLarge past the
// limit, or the underlying read error. Comment lines (":...") are kept in
// raw but ignored otherwise.
func (s *sseReader) next() (sseEvent, error) {
	var ev sseEvent
	var raw []byte
	hasField := false
	for {
		line, err := s.br.ReadSlice('\n')
		if len(line) > 0 {
			s.read += int64(len(line))
			if s.read > s.limit {
				s.partial = len(raw) > 0
				return sseEvent{}, errStreamTooLarge
			}
			raw = append(raw, line...)
			if err == bufio.ErrBufferFull {
				continue
			}
			if err == nil {
				if isBlankLine(line) {
					if hasField {
						ev.raw = raw
						return ev, nil
					}
					raw = raw[:0]
					continue
				}
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			// A final event without its blank line is incomplete.
			s.partial = len(bytes.TrimSpace(raw)) > 0
			return sseEvent{}, err
		}
		if s.field(&ev, raw) {
			hasField = true
		}
	}
}

// field applies the last line in raw to ev, reporting whether it was a
// field line (not a comment).
func (s *sseReader) field(ev *sseEvent, raw []byte) bool {
	start := bytes.LastIndexByte(raw[:len(raw)-1], '\n') + 1
	line := raw[start:]
	line = bytes.TrimRight(line, "\r\n")
	if len(line) == 0 || line[0] == ':' {
		return false
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(name) {
	case "event":
		ev.name = string(value)
	case "data":
		if ev.data != nil {
			ev.data = append(ev.data, '\n')
		} else {
			ev.data = make([]byte, 0, len(value))
		}
		ev.data = append(ev.data, value...)
	}
	return true
}

// appendSSEData appends one JSON payload framed as an unnamed SSE event.
func appendSSEData(dst, payload []byte) []byte {
	dst = append(dst, "data: "...)
	dst = append(dst, payload...)
	return append(dst, '\n', '\n')
}

// sseDone is OpenAI's stream terminator.
var sseDone = []byte("data: [DONE]\n\n")
