package gateway

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
)

// The one server-sent-events codec: a line parser (sseParser) that every
// SSE consumer feeds — the pull reader over an upstream body (sseReader)
// and the passthrough usage sniffer, which sees bytes as they flow —
// plus the framing helpers and the verbatim relay.

var errStreamTooLarge = errors.New("upstream stream exceeded the response size limit")

// sseEvent is one parsed server-sent event.
type sseEvent struct {
	name string // the "event:" field; "" when absent
	data []byte // the "data:" lines joined with "\n"
	// raw is the event's bytes as received, including the blank line.
	raw []byte
	// hasField is false for a chunk of only comments or blank lines
	// (returned by a verbatim reader only).
	hasField bool
}

// sseParser assembles events from lines fed to it in order, a line
// possibly in pieces.
type sseParser struct {
	ev        sseEvent
	lineStart int // where the line in progress starts in ev.raw
}

// feed appends a piece of a line; complete says the piece ends its line
// (it carries the '\n'). It reports whether that line was the blank line
// that ends an event; the event is then taken with take.
func (p *sseParser) feed(piece []byte, complete bool) bool {
	p.ev.raw = append(p.ev.raw, piece...)
	if !complete {
		return false
	}
	line := p.ev.raw[p.lineStart:]
	p.lineStart = len(p.ev.raw)
	if isBlankLine(line) {
		return true
	}
	p.field(bytes.TrimRight(line, "\r\n"))
	return false
}

// field applies one field line (without its line ending) to the event.
func (p *sseParser) field(line []byte) {
	if len(line) == 0 || line[0] == ':' {
		return
	}
	p.ev.hasField = true
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(name) {
	case "event":
		p.ev.name = string(value)
	case "data":
		if p.ev.data != nil {
			p.ev.data = append(p.ev.data, '\n')
		} else {
			p.ev.data = make([]byte, 0, len(value))
		}
		p.ev.data = append(p.ev.data, value...)
	}
}

// take returns the event assembled so far and starts the next one.
func (p *sseParser) take() sseEvent {
	ev := p.ev
	p.ev = sseEvent{}
	p.lineStart = 0
	return ev
}

// pending is how many bytes of an unfinished event the parser holds.
func (p *sseParser) pending() int { return len(p.ev.raw) }

// sseReader parses a text/event-stream body into events. It never holds
// more than one event in memory, and fails (errStreamTooLarge) once the
// stream passes its byte limit.
type sseReader struct {
	br    *bufio.Reader
	limit int64
	read  int64
	// verbatim makes next return every chunk of the stream that ends
	// with a blank line, comment-only and empty ones included, so the
	// events' raw bytes concatenate to exactly what was read (relaying).
	// Otherwise only events with at least one field are returned.
	verbatim bool
	// partial is set when the stream ended inside an event; that event
	// is not returned.
	partial bool
	p       sseParser
}

func newSSEReader(r io.Reader, limit int64) *sseReader {
	return &sseReader{br: bufio.NewReaderSize(r, 32<<10), limit: limit}
}

// next returns the next event. It returns io.EOF at a clean end of the
// stream, errStreamTooLarge past the limit, or the underlying read error.
func (s *sseReader) next() (sseEvent, error) {
	for {
		line, err := s.br.ReadSlice('\n')
		if len(line) > 0 {
			s.read += int64(len(line))
			if s.read > s.limit {
				s.partial = s.p.pending() > 0
				return sseEvent{}, errStreamTooLarge
			}
			if s.p.feed(line, err == nil) {
				ev := s.p.take()
				if ev.hasField || s.verbatim {
					return ev, nil
				}
			}
		}
		if err == nil || err == bufio.ErrBufferFull {
			continue
		}
		// A final event without its blank line is incomplete.
		if s.verbatim {
			s.partial = s.p.pending() > 0
		} else {
			s.partial = len(bytes.TrimSpace(s.p.ev.raw)) > 0
		}
		return sseEvent{}, err
	}
}

func isBlankLine(line []byte) bool {
	return len(line) == 1 || (len(line) == 2 && line[0] == '\r')
}

// appendSSEData appends one JSON payload framed as an unnamed SSE event.
func appendSSEData(dst, payload []byte) []byte {
	dst = append(dst, "data: "...)
	dst = append(dst, payload...)
	return append(dst, '\n', '\n')
}

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
func relaySSE(w http.ResponseWriter, body io.Reader, limit int64, isEnd func(sseEvent) bool, onEvent func(sseEvent)) sseRelayResult {
	var res sseRelayResult
	flusher, _ := w.(http.Flusher)
	rd := newSSEReader(body, limit)
	rd.verbatim = true
	for {
		ev, err := rd.next()
		if err != nil {
			res.bytes, res.partial = rd.read, rd.partial
			if err != io.EOF {
				res.err, res.tooLarge = err, err == errStreamTooLarge
			}
			return res
		}
		if ev.hasField {
			res.events++
			if isEnd(ev) {
				res.sawEnd = true
			}
			if onEvent != nil {
				onEvent(ev)
			}
		}
		if _, werr := w.Write(ev.raw); werr != nil {
			res.bytes, res.err = rd.read, werr
			return res
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
}
