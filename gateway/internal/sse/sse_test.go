package sse

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestReaderEvents(t *testing.T) {
	in := ": comment\n\nevent: message_start\ndata: {\"a\":1}\n\n" +
		"data: line1\r\ndata: line2\r\n\r\n" +
		"data:\ndata: x\n\n" +
		"event: ping\n\n" +
		"data: tail"
	s := NewReader(strings.NewReader(in), 1<<20)
	want := []Event{
		{Name: "message_start", Data: []byte(`{"a":1}`)},
		{Data: []byte("line1\nline2")},
		{Data: []byte("\nx")},
		{Name: "ping"},
	}
	for i := 0; i < len(want); i++ {
		ev, err := s.Next()
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if ev.Name != want[i].Name || string(ev.Data) != string(want[i].Data) {
			t.Fatalf("event %d = %q %q, want %q %q", i, ev.Name, ev.Data, want[i].Name, want[i].Data)
		}
	}
	if _, err := s.Next(); err != io.EOF || !s.Partial() {
		t.Fatalf("tail: err %v partial %v, want EOF and partial", err, s.Partial())
	}
}

func TestReaderLimit(t *testing.T) {
	s := NewReader(strings.NewReader("data: 0123456789\n\ndata: 0123456789\n\n"), 25)
	if _, err := s.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Next(); err != ErrTooLarge {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
}

func TestReaderCleanEnd(t *testing.T) {
	s := NewReader(strings.NewReader("data: a\n\n\n"), 100)
	if ev, err := s.Next(); err != nil || string(ev.Data) != "a" {
		t.Fatalf("got %q %v", ev.Data, err)
	}
	if _, err := s.Next(); err != io.EOF || s.Partial() {
		t.Fatalf("err %v partial %v", err, s.Partial())
	}
}

func TestReaderVerbatim(t *testing.T) {
	in := ": keepalive\n\ndata: a\n\n\ndata: cut"
	s := NewReader(strings.NewReader(in), 100)
	s.Verbatim = true
	var raw []byte
	fields := 0
	for {
		ev, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		raw = append(raw, ev.Raw...)
		if ev.HasField {
			fields++
		}
	}
	if want := ": keepalive\n\ndata: a\n\n\n"; string(raw) != want || fields != 1 {
		t.Fatalf("relayed %q with %d field events, want %q and 1", raw, fields, want)
	}
	if !s.Partial() || s.BytesRead() != int64(len(in)) {
		t.Fatalf("partial %v, %d bytes read; want true, %d", s.Partial(), s.BytesRead(), len(in))
	}
}

// TestParserPieces feeds lines in pieces, as the passthrough sniffer
// sees them, and takes each event at its blank line.
func TestParserPieces(t *testing.T) {
	var p Parser
	if p.Feed([]byte("event: de"), false) || p.Feed([]byte("lta\n"), true) {
		t.Fatal("a field line ended the event")
	}
	if p.Feed([]byte("data: {\"x\""), false) || p.Pending() != len("event: delta\ndata: {\"x\"") {
		t.Fatalf("pending %d", p.Pending())
	}
	if p.Feed([]byte(":1}\r\n"), true) {
		t.Fatal("the data line ended the event")
	}
	if !p.Feed([]byte("\r\n"), true) {
		t.Fatal("the blank line did not end the event")
	}
	ev := p.Take()
	if ev.Name != "delta" || string(ev.Data) != `{"x":1}` || !ev.HasField || string(ev.Raw) != "event: delta\ndata: {\"x\":1}\r\n\r\n" {
		t.Fatalf("got %+v", ev)
	}
	if p.Pending() != 0 {
		t.Fatalf("pending %d after Take", p.Pending())
	}
}

func TestAppendData(t *testing.T) {
	if got := string(AppendData([]byte("x"), []byte(`{"a":1}`))); got != "xdata: {\"a\":1}\n\n" {
		t.Fatalf("got %q", got)
	}
}

// FuzzReader: the reader never panics, never returns more than its
// limit, and every event it returns is a verbatim slice of the input in
// order, carrying at least one field.
func FuzzReader(f *testing.F) {
	f.Add([]byte("event: a\ndata: {}\n\n"), 64)
	f.Add([]byte("data: x\r\ndata: y\r\n\r\n: c\n\ndata"), 8)
	f.Add([]byte("\n\n\n:only comments\n\n"), 1000)
	f.Fuzz(func(t *testing.T, in []byte, limit int) {
		if limit < 0 {
			limit = -limit
		}
		s := NewReader(bytes.NewReader(in), int64(limit))
		rest := in
		total := 0
		for {
			ev, err := s.Next()
			if err != nil {
				if err != io.EOF && err != ErrTooLarge {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			total += len(ev.Raw)
			if total > limit {
				t.Fatalf("returned %d bytes past the %d limit", total, limit)
			}
			i := bytes.Index(rest, ev.Raw)
			if i < 0 {
				t.Fatalf("event %q is not in the remaining input", ev.Raw)
			}
			rest = rest[i+len(ev.Raw):]
			if !bytes.HasSuffix(ev.Raw, []byte("\n")) {
				t.Fatalf("event %q returned without its blank line", ev.Raw)
			}
		}
	})
}

// chunkReader hands out its input step bytes per Read, as a network
// body cut at arbitrary points does.
type chunkReader struct {
	data []byte
	step int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := c.step
	if n > len(c.data) {
		n = len(c.data)
	}
	if n > len(p) {
		n = len(p)
	}
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// parseWithParser splits in into events the way a consumer feeding the
// Parser line by line does: the reference the Reader must agree with.
func parseWithParser(in []byte) ([]Event, []byte) {
	var p Parser
	var evs []Event
	for len(in) > 0 {
		i := bytes.IndexByte(in, '\n')
		if i < 0 {
			p.Feed(in, false)
			break
		}
		if p.Feed(in[:i+1], true) {
			ev := p.Take()
			ev.Data = append([]byte(nil), ev.Data...)
			ev.Raw = append([]byte(nil), ev.Raw...)
			evs = append(evs, ev)
		}
		in = in[i+1:]
	}
	return evs, p.raw
}

// FuzzReaderMatchesParser: whatever the Read sizes, a verbatim Reader
// returns the events the line-fed Parser assembles, byte for byte, and
// reports the same unfinished tail.
func FuzzReaderMatchesParser(f *testing.F) {
	f.Add([]byte("event: a\ndata: {}\n\n"), uint8(1))
	f.Add([]byte("data: x\r\ndata: y\r\n\r\n: c\n\ndata"), uint8(3))
	f.Add([]byte("\n\n\r\n:only comments\n\ndata:\n\ndata: a\r\n\ndata: b\n\r\n"), uint8(2))
	f.Add([]byte("data: one\n\ndata: two\n\ndata: [DONE]\n\n"), uint8(0))
	f.Add([]byte("event: x\ndata:\n\nevent: y\r\ndata: z\n\nevent: e\n\n"), uint8(0))
	f.Add([]byte("event:\ndata: x\n\nevent:  y\ndata:  z\n\nevent: a\ndata: b\ndata: c\n\ndata:  q\n\ndata\n\n"), uint8(0))
	f.Add([]byte("a\n\nab\n\ndata\n\n"), uint8(0))
	f.Fuzz(func(t *testing.T, in []byte, step uint8) {
		want, tail := parseWithParser(in)
		var r io.Reader = bytes.NewReader(in)
		if step > 0 {
			r = &chunkReader{data: in, step: int(step)}
		}
		s := NewReader(r, int64(len(in)))
		s.Verbatim = true
		for i := 0; ; i++ {
			ev, err := s.Next()
			if err != nil {
				if err != io.EOF || i != len(want) {
					t.Fatalf("ended with %v after %d events, want EOF after %d", err, i, len(want))
				}
				break
			}
			if i >= len(want) {
				t.Fatalf("extra event %q", ev.Raw)
			}
			w := want[i]
			if ev.Name != w.Name || !bytes.Equal(ev.Data, w.Data) || !bytes.Equal(ev.Raw, w.Raw) || ev.HasField != w.HasField {
				t.Fatalf("event %d = %q %q %q %v, want %q %q %q %v", i, ev.Name, ev.Data, ev.Raw, ev.HasField, w.Name, w.Data, w.Raw, w.HasField)
			}
		}
		if s.Partial() != (len(tail) > 0) || s.BytesRead() != int64(len(in)) {
			t.Fatalf("partial %v, %d bytes read; want %v, %d", s.Partial(), s.BytesRead(), len(tail) > 0, len(in))
		}
	})
}

// TestReaderLargeEvent reads an event many times the buffer's size,
// delivered in small pieces.
func TestReaderLargeEvent(t *testing.T) {
	big := "data: " + strings.Repeat("x", 300<<10) + "\n\n"
	in := []byte(big + "data: after\n\n")
	s := NewReader(&chunkReader{data: in, step: 1000}, int64(len(in)))
	ev, err := s.Next()
	if err != nil || string(ev.Raw) != big || len(ev.Data) != 300<<10 {
		t.Fatalf("big event: %d bytes, err %v", len(ev.Raw), err)
	}
	if ev, err = s.Next(); err != nil || string(ev.Data) != "after" {
		t.Fatalf("next event %q, err %v", ev.Data, err)
	}
	if _, err = s.Next(); err != io.EOF || s.Partial() {
		t.Fatalf("end: %v partial %v", err, s.Partial())
	}
}

// A held-open stream that delivers one small event per Read keeps the
// Reader's small first buffer; a body with more to give on every Read
// (a fast stream, a replay) doubles it up to readerReadSize. Every event
// comes out whole either way.
func TestReaderBufferSize(t *testing.T) {
	event := "data: {\"choices\":[{\"delta\":{\"content\":\"" + strings.Repeat("x", 150) + "\"}}]}\n\n"
	stream := strings.Repeat(event, 2000)
	cases := []struct {
		name    string
		body    io.Reader
		wantBuf int
	}{
		{"slow", &chunkReader{data: []byte(stream), step: len(event)}, readerStartSize},
		{"fast", strings.NewReader(stream), readerReadSize},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := NewReader(tc.body, 1<<30)
			n := 0
			for {
				ev, err := s.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if string(ev.Raw) != event {
					t.Fatalf("event %d: %q", n, ev.Raw)
				}
				n++
			}
			if n != 2000 || len(s.buf) != tc.wantBuf {
				t.Fatalf("%d events, buffer %d bytes; want 2000, %d", n, len(s.buf), tc.wantBuf)
			}
		})
	}
}

// splitReader returns one of its pieces per Read.
type splitReader struct{ pieces []string }

func (r *splitReader) Read(b []byte) (int, error) {
	if len(r.pieces) == 0 {
		return 0, io.EOF
	}
	n := copy(b, r.pieces[0])
	if r.pieces[0] = r.pieces[0][n:]; r.pieces[0] == "" {
		r.pieces = r.pieces[1:]
	}
	return n, nil
}

// Buffered says whether Next has an event without reading: true inside
// a read's run of events, false after its last one, also when only
// comments (which a non-verbatim Next skips) or the start of an
// unfinished event follow.
func TestReaderBuffered(t *testing.T) {
	for _, verbatim := range []bool{false, true} {
		s := NewReader(&splitReader{pieces: []string{
			"data: a\n\ndata: b\n\n: ping\n\n",
			"data: c\n\ndata: d",
			"\n\n",
		}}, 1<<20)
		s.Verbatim = verbatim
		want := []struct {
			data     string
			buffered bool
		}{{"a", true}, {"b", verbatim}, {"c", false}, {"d", false}}
		if verbatim {
			want = []struct {
				data     string
				buffered bool
			}{{"a", true}, {"b", true}, {"", false}, {"c", false}, {"d", false}}
		}
		if s.Buffered() {
			t.Fatalf("verbatim %v: buffered before the first read", verbatim)
		}
		for i := 0; i < len(want); i++ {
			ev, err := s.Next()
			if err != nil || string(ev.Data) != want[i].data {
				t.Fatalf("verbatim %v, event %d: %q %v, want %q", verbatim, i, ev.Data, err, want[i].data)
			}
			if got := s.Buffered(); got != want[i].buffered {
				t.Fatalf("verbatim %v, after event %d (%q): Buffered %v, want %v", verbatim, i, ev.Data, got, want[i].buffered)
			}
		}
		if _, err := s.Next(); err != io.EOF {
			t.Fatalf("verbatim %v: end %v", verbatim, err)
		}
	}
}

// Ended is true once the last event of a body whose end came with it
// was handed out; not while events are left, not before the end was
// read, not when an unfinished event precedes the end.
func TestReaderEnded(t *testing.T) {
	s := NewReader(iotest.DataErrReader(strings.NewReader("data: a\n\ndata: b\n\n")), 1<<20)
	if ev, err := s.Next(); err != nil || string(ev.Data) != "a" || s.Ended() {
		t.Fatalf("first event %q %v, Ended %v", ev.Data, err, s.Ended())
	}
	if ev, err := s.Next(); err != nil || string(ev.Data) != "b" || !s.Ended() {
		t.Fatalf("last event %q %v, Ended %v", ev.Data, err, s.Ended())
	}
	if _, err := s.Next(); err != io.EOF || s.Partial() {
		t.Fatalf("end %v partial %v", err, s.Partial())
	}
	s = NewReader(strings.NewReader("data: a\n\n"), 1<<20) // the end comes with a read of its own
	if _, err := s.Next(); err != nil || s.Ended() {
		t.Fatalf("Ended %v before the end was read (%v)", s.Ended(), err)
	}
	s = NewReader(iotest.DataErrReader(strings.NewReader("data: a\n\ndata: b")), 1<<20)
	if _, err := s.Next(); err != nil || s.Ended() {
		t.Fatalf("Ended %v with an unfinished event left (%v)", s.Ended(), err)
	}
}
