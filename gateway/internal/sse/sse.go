package sse

import (
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

// The two ways a blank line can follow a line's end. They are declared
// before their users: Yaegi initialises package variables in source
// order.
var (
	lf2    = []byte("\n\n")
	lfcrlf = []byte("\n\r\n")
)

// Reader parses a text/event-stream body into events. It reads the body
// in large pieces into one buffer and finds the events' ends there with
// bytes.Index and bytes.LastIndex (compiled standard library even under
// Yaegi, where a loop of our own costs per byte or per line): a whole
// Read's worth of events comes out of one Events call, and Next splits
// it without a loop over lines for the common one-line "data:" event. It
// holds at most the events of one Read and the unfinished one, and fails
// (ErrTooLarge) once the stream passes its byte limit.
type Reader struct {
	r     io.Reader
	buf   []byte // buf[start:end] is read but not yet returned
	start int
	end   int
	run   []byte // what Events returned that Next has not handed out
	// lfOnly says run holds no '\r'.
	lfOnly bool
	limit  int64
	// read counts the bytes read from r; consumed those returned by
	// Events.
	read     int64
	consumed int64
	err      error // the read error that ended r, once it came
	scanned  int   // how much of buf[start:end] holds no event end
	// Verbatim makes Next return every chunk of the stream that ends
	// with a blank line, comment-only and empty ones included, so the
	// events' raw bytes concatenate to exactly what was read (relaying).
	// Otherwise only events with at least one field are returned.
	Verbatim bool
	partial  bool
	joined   []byte // the data lines joined, for an event with two
}

// readerStartSize is the Reader's first buffer. A held-open stream
// between two events needs no more, and thousands of open streams each
// keep theirs, so it is small. A Read that fills the buffer's free space
// (the body had more to give) doubles it, up to readerReadSize, so a fast
// stream soon reads in large pieces; an event larger than the buffer
// grows it beyond that.
const (
	readerStartSize = 1 << 10
	readerReadSize  = 32 << 10
)

// NewReader returns a Reader of r that fails once more than limit bytes
// were read.
func NewReader(r io.Reader, limit int64) *Reader {
	return &Reader{r: r, limit: limit}
}

// Events returns the next run of complete events, verbatim: every byte
// read so far up to the last event end (the last blank line), at least
// one event, reading from the body only when no complete event is
// buffered — so a run is at most what one Read added. EventLen splits a
// run into its events. The run stays valid until the next call to
// Events or Next. Comment-only and empty chunks are part of a run
// whatever Verbatim says. Events returns io.EOF at a clean end of the
// stream, ErrTooLarge when the next event would end past the limit, or
// the underlying read error.
func (s *Reader) Events() ([]byte, error) {
	if len(s.run) > 0 {
		run := s.run
		s.run = nil
		return run, nil
	}
	// The state lives in locals until the return: under Yaegi a field
	// access costs as much as a compiled call.
	buf := s.buf
	start := s.start
	end := s.end
	scanned := s.scanned
	room := s.limit - s.consumed
	for {
		p := buf[start:end]
		q := p
		if int64(len(q)) > room {
			q = q[:room]
		}
		n := 0
		if len(q) > scanned {
			n = lastEventEnd(q, scanned)
		}
		if n > 0 {
			s.buf = buf
			s.start = start + n
			s.end = end
			s.scanned = 0
			s.consumed += int64(n)
			return p[:n:n], nil
		}
		if len(q) < len(p) {
			s.partial = len(q) > 0
			s.err = ErrTooLarge
			return nil, ErrTooLarge
		}
		// An event end found later lies in bytes not read yet: whether a
		// '\n' ends a blank line depends only on the bytes before it.
		scanned = len(p)
		if s.err != nil {
			s.buf = buf
			s.start = start
			s.end = end
			s.scanned = scanned
			// A final event without its blank line is incomplete.
			if s.Verbatim {
				s.partial = len(p) > 0
			} else {
				s.partial = len(bytes.TrimSpace(p)) > 0
			}
			return nil, s.err
		}
		// Read once into the free end of the buffer, first moving the
		// unfinished event to the front, or growing the buffer when that
		// event fills most of it.
		if buf == nil {
			buf = make([]byte, readerStartSize)
		}
		if start == end {
			start = 0
			end = 0
		}
		if len(buf)-end < len(buf)/4 {
			if start > 0 {
				end = copy(buf, buf[start:end])
				start = 0
			}
			if len(buf)-end < len(buf)/4 {
				grown := make([]byte, 2*len(buf))
				copy(grown, buf[:end])
				buf = grown
			}
		}
		free := len(buf) - end
		m, err := s.r.Read(buf[end:])
		if m > 0 {
			end += m
			s.read += int64(m)
		}
		if err != nil {
			s.err = err
		}
		if m == free && len(buf) < readerReadSize {
			grown := make([]byte, 2*len(buf))
			end = copy(grown, buf[start:end])
			start = 0
			buf = grown
		}
	}
}

// Next returns the next event. It returns io.EOF at a clean end of the
// stream, ErrTooLarge past the limit, or the underlying read error.
func (s *Reader) Next() (Event, error) {
	for {
		run := s.run
		if len(run) == 0 {
			r, err := s.Events()
			if err != nil {
				return Event{}, err
			}
			run = r
			s.lfOnly = bytes.IndexByte(run, '\r') < 0
		}
		if s.lfOnly && run[0] != '\n' {
			// Without a '\r' the event ends at the first "\n\n". The
			// common events, a "data:" line after an "event:" line or not,
			// are read here with no loop and no further call.
			i := bytes.Index(run, lf2)
			raw := run[: i+2 : i+2]
			s.run = run[i+2:]
			j := bytes.IndexByte(raw, '\n')
			if j == i && i > 4 && raw[4] == ':' && raw[0] == 'd' && raw[1] == 'a' && raw[2] == 't' && raw[3] == 'a' {
				v := raw[5:i]
				if len(v) > 0 && v[0] == ' ' {
					v = v[1:]
				}
				return Event{Data: v, Raw: raw, HasField: true}, nil
			}
			if j > 5 && j+6 < i && raw[5] == ':' && raw[0] == 'e' && raw[1] == 'v' && raw[2] == 'e' && raw[3] == 'n' && raw[4] == 't' &&
				raw[j+5] == ':' && raw[j+1] == 'd' && raw[j+2] == 'a' && raw[j+3] == 't' && raw[j+4] == 'a' &&
				bytes.IndexByte(raw[j+1:i], '\n') < 0 {
				name := raw[6:j]
				if len(name) > 0 && name[0] == ' ' {
					name = name[1:]
				}
				v := raw[j+6 : i]
				if len(v) > 0 && v[0] == ' ' {
					v = v[1:]
				}
				return Event{Name: string(name), Data: v, Raw: raw, HasField: true}, nil
			}
			ev := parseEvent(raw, &s.joined)
			if ev.HasField || s.Verbatim {
				return ev, nil
			}
			continue
		}
		n := EventLen(run)
		raw := run[:n:n]
		s.run = run[n:]
		ev := parseEvent(raw, &s.joined)
		if ev.HasField || s.Verbatim {
			return ev, nil
		}
	}
}

// Buffered reports whether the next Next (or Events) returns an event
// without reading the body: the run that one read completed is not all
// handed out yet. A relay that writes events as Next returns them
// flushes when it is false, once per read, never holding an event back
// for bytes that have not arrived.
func (s *Reader) Buffered() bool {
	run := s.run
	for len(run) > 0 {
		// Only a comment-only or empty chunk starts with one of these; a
		// non-verbatim Next skips those.
		if c := run[0]; s.Verbatim || c != ':' && c != '\n' && c != '\r' {
			return true
		}
		n := EventLen(run)
		var joined []byte
		if parseEvent(run[:n], &joined).HasField {
			return true
		}
		run = run[n:]
	}
	return false
}

// Ended reports whether the body's clean end was read already, with no
// event and no byte of one left before it: the next Next returns io.EOF
// (not Partial) without reading. A relay that writes what a read
// brought can then write the stream's end with it.
func (s *Reader) Ended() bool {
	return s.err == io.EOF && s.start == s.end && !s.Buffered()
}

// BytesRead is how many bytes of the stream the Reader has read.
func (s *Reader) BytesRead() int64 { return s.read }

// Partial reports whether the stream ended (or passed the limit) inside
// an event; that event was not returned.
func (s *Reader) Partial() bool { return s.partial }

// ParseEvent reads the fields of one event's raw bytes (through its
// blank line, as EventLen cuts them). Its Data points into raw, except
// for an event of several data lines, whose joined data is allocated.
func ParseEvent(raw []byte) Event {
	var joined []byte
	return parseEvent(raw, &joined)
}

// parseEvent is ParseEvent joining several data lines in *joined.
func parseEvent(raw []byte, joined *[]byte) Event {
	// The common events, without a loop over lines: one "data:" line,
	// after an "event:" line or not, then the blank line (LF only).
	n := len(raw)
	if n > 7 && raw[n-1] == '\n' && raw[n-2] == '\n' {
		rest := raw
		name := ""
		if raw[5] == ':' && string(raw[:5]) == "event" {
			if i := bytes.IndexByte(raw, '\n'); i < n-2 && raw[i-1] != '\r' {
				v := raw[6:i]
				if len(v) > 0 && v[0] == ' ' {
					v = v[1:]
				}
				name = string(v)
				rest = raw[i+1:]
			}
		}
		if m := len(rest); m > 7 && rest[4] == ':' && string(rest[:4]) == "data" && bytes.IndexByte(rest[:m-2], '\n') < 0 {
			v := rest[5 : m-2]
			if v[0] == ' ' {
				v = v[1:]
			}
			if k := len(v); k > 0 && v[k-1] == '\r' {
				v = v[:k-1]
			}
			return Event{Name: name, Data: v[:len(v):len(v)], Raw: raw, HasField: true}
		}
	}
	ev := Event{Raw: raw}
	dataLines := 0
	rest := raw
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			break
		}
		line := trimLineEnd(rest[:i+1])
		rest = rest[i+1:]
		if len(line) == 0 || line[0] == ':' {
			continue
		}
		ev.HasField = true
		name, value := line, []byte(nil)
		if j := bytes.IndexByte(line, ':'); j >= 0 {
			name, value = line[:j], line[j+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(name) {
		case "event":
			ev.Name = string(value)
		case "data":
			dataLines++
			switch dataLines {
			case 1:
				ev.Data = value[:len(value):len(value)]
			case 2:
				*joined = append((*joined)[:0], ev.Data...)
				fallthrough
			default:
				*joined = append(append(*joined, '\n'), value...)
				ev.Data = *joined
			}
		}
	}
	return ev
}

// EventLen is the length of the first event in p, through the blank
// line that ends it, or 0 when p holds no complete event. A blank line
// is a "\n" or "\r\n" at the start of p or after a "\n"; a lone "\r"
// ends no line.
func EventLen(p []byte) int {
	if len(p) == 0 {
		return 0
	}
	if p[0] == '\n' {
		return 1
	}
	if p[0] == '\r' && len(p) > 1 && p[1] == '\n' {
		return 2
	}
	i := bytes.Index(p, lf2)
	if i < 0 {
		if j := bytes.Index(p, lfcrlf); j >= 0 {
			return j + 3
		}
		return 0
	}
	// A "\n\r\n" before the "\n\n" ends the event sooner; it needs a '\r'
	// there, which an LF-only stream never has.
	if bytes.IndexByte(p[:i], '\r') >= 0 {
		if j := bytes.Index(p[:i+1], lfcrlf); j >= 0 {
			return j + 3
		}
	}
	return i + 2
}

// LastEventEnd is the offset just past the last event end (blank line)
// in p, or 0 when p holds no complete event: p[:LastEventEnd(p, 0)] is
// whole events, the rest an unfinished one. from says how much of p is
// already known to hold no event end: whether a '\n' ends a blank line
// depends only on the bytes before it, so after appending to an
// unfinished event only the new bytes need a look.
func LastEventEnd(p []byte, from int) int {
	return lastEventEnd(p, from)
}

// lastEventEnd is the offset just past the last event end in p, or 0
// when p holds no complete event; from says how much of p is already
// known to hold none (a previous call's). It walks back from the end a
// line at a time with bytes.LastIndexByte: a Read mostly ends with an
// event, so one step finds it.
func lastEventEnd(p []byte, from int) int {
	end := len(p)
	for end > from {
		j := bytes.LastIndexByte(p[from:end], '\n')
		if j < 0 {
			return 0
		}
		j += from
		// The '\n' at j ends a blank line: "\n" or "\r\n" at a line start.
		if j == 0 || p[j-1] == '\n' || p[j-1] == '\r' && (j == 1 || p[j-2] == '\n') {
			return j + 1
		}
		end = j
	}
	return 0
}

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
