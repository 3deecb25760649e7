package sse

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// ErrTooLarge is the Reader's error once a stream passes its byte limit.
var ErrTooLarge = errors.New("upstream stream exceeded the response size limit")

// Event is one parsed server-sent event. Its Data and Raw share the
// buffers of the Parser (or Reader) that produced it and stay valid only
// until the next Feed (or Next): a caller that keeps them copies them.
type Event struct {
	Name string // the "event:" field; "" when absent
	Data []byte // the "data:" lines joined with "\n"
	// Raw is the event's bytes as received, including the blank line.
	Raw []byte
	// HasField is false for a chunk of only comments or blank lines
	// (returned by a verbatim reader only).
	HasField bool
}

// Parser assembles events from lines fed to it in order, a line possibly
// in pieces. The zero value is ready to use. It reuses its buffers from
// one event to the next, so a stream costs no allocation per event once
// they have grown to the largest event's size.
type Parser struct {
	ev        Event
	raw       []byte // the event in progress, as received
	lineStart int    // where the line in progress starts in raw
	joined    []byte // the data lines joined, once an event has two
	dataLines int
}

// Feed appends a piece of a line; complete says the piece ends its line
// (it carries the '\n'). It reports whether that line was the blank line
// that ends an event; the event is then taken with Take.
func (p *Parser) Feed(piece []byte, complete bool) bool {
	p.raw = append(p.raw, piece...)
	if !complete {
		return false
	}
	line := p.raw[p.lineStart:]
	p.lineStart = len(p.raw)
	if isBlankLine(line) {
		return true
	}
	p.field(trimLineEnd(line))
	return false
}

// trimLineEnd drops a line's "\n" or "\r\n" (bytes.TrimRight would
// build its cutset on every line).
func trimLineEnd(line []byte) []byte {
	n := len(line)
	if n > 0 && line[n-1] == '\n' {
		n--
	}
	if n > 0 && line[n-1] == '\r' {
		n--
	}
	return line[:n]
}

// field applies one field line (without its line ending) to the event.
// A single data line's value is a slice of raw (bytes already appended
// to raw never move within its current array, and a grown raw leaves the
// old array intact); from the second line on they are joined in joined.
func (p *Parser) field(line []byte) {
	if len(line) == 0 || line[0] == ':' {
		return
	}
	p.ev.HasField = true
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(name) {
	case "event":
		p.ev.Name = string(value)
	case "data":
		p.dataLines++
		switch p.dataLines {
		case 1:
			p.ev.Data = value[:len(value):len(value)]
		case 2:
			p.joined = append(p.joined[:0], p.ev.Data...)
			fallthrough
		default:
			p.joined = append(append(p.joined, '\n'), value...)
			p.ev.Data = p.joined
		}
	}
}

// Take returns the event assembled so far and starts the next one, which
// reuses the buffers the returned event points into.
func (p *Parser) Take() Event {
	ev := p.ev
	ev.Raw = p.raw
	p.ev = Event{}
	p.raw = p.raw[:0]
	p.lineStart = 0
	p.dataLines = 0
	return ev
}

// Pending is how many bytes of an unfinished event the parser holds.
func (p *Parser) Pending() int { return len(p.raw) }

// Reader parses a text/event-stream body into events. It never holds
// more than one event in memory, and fails (ErrTooLarge) once the stream
// passes its byte limit.
type Reader struct {
	br    *bufio.Reader
	limit int64
	read  int64
	// Verbatim makes Next return every chunk of the stream that ends
	// with a blank line, comment-only and empty ones included, so the
	// events' raw bytes concatenate to exactly what was read (relaying).
	// Otherwise only events with at least one field are returned.
	Verbatim bool
	partial  bool
	p        Parser
}

// NewReader returns a Reader of r that fails once more than limit bytes
// were read.
func NewReader(r io.Reader, limit int64) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 32<<10), limit: limit}
}

// Next returns the next event. It returns io.EOF at a clean end of the
// stream, ErrTooLarge past the limit, or the underlying read error.
func (s *Reader) Next() (Event, error) {
	for {
		line, err := s.br.ReadSlice('\n')
		if len(line) > 0 {
			s.read += int64(len(line))
			if s.read > s.limit {
				s.partial = s.p.Pending() > 0
				return Event{}, ErrTooLarge
			}
			if s.p.Feed(line, err == nil) {
				ev := s.p.Take()
				if ev.HasField || s.Verbatim {
					return ev, nil
				}
			}
		}
		if err == nil || err == bufio.ErrBufferFull {
			continue
		}
		// A final event without its blank line is incomplete.
		if s.Verbatim {
			s.partial = s.p.Pending() > 0
		} else {
			s.partial = len(bytes.TrimSpace(s.p.raw)) > 0
		}
		return Event{}, err
	}
}

// BytesRead is how many bytes of the stream Next has consumed.
func (s *Reader) BytesRead() int64 { return s.read }

// Partial reports whether the stream ended (or passed the limit) inside
// an event; that event was not returned.
func (s *Reader) Partial() bool { return s.partial }

// isBlankLine reports whether line (with its line ending) is empty.
func isBlankLine(line []byte) bool {
	return len(line) == 1 || (len(line) == 2 && line[0] == '\r')
}

// AppendData appends one payload framed as an unnamed event:
// "data: <payload>\n\n". The payload must be one line, as compact JSON
// is.
func AppendData(dst, payload []byte) []byte {
	dst = append(dst, "data: "...)
	dst = append(dst, payload...)
	return append(dst, '\n', '\n')
}
