package gateway

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

func TestSSEReaderEvents(t *testing.T) {
	in := ": comment\n\nevent: message_start\ndata: {\"a\":1}\n\n" +
		"data: line1\r\ndata: line2\r\n\r\n" +
		"data:\ndata: x\n\n" +
		"event: ping\n\n" +
		"data: tail"
	s := newSSEReader(strings.NewReader(in), 1<<20)
	want := []sseEvent{
		{name: "message_start", data: []byte(`{"a":1}`)},
		{data: []byte("line1\nline2")},
		{data: []byte("\nx")},
		{name: "ping"},
	}
	for i := 0; i < len(want); i++ {
		ev, err := s.next()
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if ev.name != want[i].name || string(ev.data) != string(want[i].data) {
			t.Fatalf("event %d = %q %q, want %q %q", i, ev.name, ev.data, want[i].name, want[i].data)
		}
	}
	if _, err := s.next(); err != io.EOF || !s.partial {
		t.Fatalf("tail: err %v partial %v, want EOF and partial", err, s.partial)
	}
}

func TestSSEReaderLimit(t *testing.T) {
	s := newSSEReader(strings.NewReader("data: 0123456789\n\ndata: 0123456789\n\n"), 25)
	if _, err := s.next(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.next(); err != errStreamTooLarge {
		t.Fatalf("err = %v, want errStreamTooLarge", err)
	}
}

func TestSSEReaderCleanEnd(t *testing.T) {
	s := newSSEReader(strings.NewReader("data: a\n\n\n"), 100)
	if ev, err := s.next(); err != nil || string(ev.data) != "a" {
		t.Fatalf("got %q %v", ev.data, err)
	}
	if _, err := s.next(); err != io.EOF || s.partial {
		t.Fatalf("err %v partial %v", err, s.partial)
	}
}

// FuzzSSEReader: the reader never panics, never returns more than its
// limit, and every event it returns is a verbatim slice of the input in
// order, carrying at least one field.
func FuzzSSEReader(f *testing.F) {
	f.Add([]byte("event: a\ndata: {}\n\n"), 64)
	f.Add([]byte("data: x\r\ndata: y\r\n\r\n: c\n\ndata"), 8)
	f.Add([]byte("\n\n\n:only comments\n\n"), 1000)
	f.Fuzz(func(t *testing.T, in []byte, limit int) {
		if limit < 0 {
			limit = -limit
		}
		s := newSSEReader(bytes.NewReader(in), int64(limit))
		rest := in
		total := 0
		for {
			ev, err := s.next()
			if err != nil {
				if err != io.EOF && err != errStreamTooLarge {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			total += len(ev.raw)
			if total > limit {
				t.Fatalf("returned %d bytes past the %d limit", total, limit)
			}
			i := bytes.Index(rest, ev.raw)
			if i < 0 {
				t.Fatalf("event %q is not in the remaining input", ev.raw)
			}
			rest = rest[i+len(ev.raw):]
			if !bytes.HasSuffix(ev.raw, []byte("\n")) {
				t.Fatalf("event %q returned without its blank line", ev.raw)
			}
		}
	})
}
