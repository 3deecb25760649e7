package sse

import (
	"bytes"
	"io"
	"strings"
	"testing"
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
