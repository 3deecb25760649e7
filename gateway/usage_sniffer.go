package gateway

import (
	"bytes"
	"io"
	"strings"

	"github.com/llmgateway/llmgateway/gateway/internal/jsonscan"
	"github.com/llmgateway/llmgateway/gateway/internal/sse"
	"github.com/llmgateway/llmgateway/gateway/internal/translate"
)

// maxSniffedJSONBytes bounds how much of a non-streaming passthrough
// response is kept to read its usage; a larger one falls back to the
// estimate.
const maxSniffedJSONBytes = 8 << 20

// usageSniffer reads usage from a passthrough response as it flows to
// the client, without delaying or altering a byte: in an event stream
// each Read's complete events are looked into only when a compiled
// bytes.Contains finds usageMark among them (under Yaegi a loop of ours
// over every line would cost more than the relay), and only the events
// holding it are parsed; a JSON body is kept (up to a bound) and parsed
// at its end. finish runs once, at EOF or Close.
type usageSniffer struct {
	rc          io.ReadCloser
	eventStream bool
	pend        []byte // the unfinished event, copied (event streams)
	buf         []byte // the JSON body so far
	over        bool
	u           translate.Usage
	// text is the bytes of text the event stream carried
	// (runTextBytes), for the estimate of a stream without usage.
	text     int64
	finished bool
	onFinish func(u translate.Usage, streamed bool, text int64)
}

func newUsageSniffer(rc io.ReadCloser, contentType string, onFinish func(u translate.Usage, streamed bool, text int64)) *usageSniffer {
	ct := strings.ToLower(contentType)
	return &usageSniffer{rc: rc, eventStream: strings.HasPrefix(ct, "text/event-stream"), onFinish: onFinish,
		over: !strings.Contains(ct, "json") && !strings.HasPrefix(ct, "text/event-stream")}
}

func (s *usageSniffer) Read(b []byte) (int, error) {
	n, err := s.rc.Read(b)
	if n > 0 && !s.over {
		s.feed(b[:n])
	}
	if err == io.EOF {
		s.finish()
	}
	return n, err
}

func (s *usageSniffer) Close() error {
	s.finish()
	return s.rc.Close()
}

func (s *usageSniffer) feed(p []byte) {
	if !s.eventStream {
		if len(s.buf)+len(p) > maxSniffedJSONBytes {
			s.over = true
			s.buf = nil
			return
		}
		s.buf = append(s.buf, p...)
		return
	}
	from := len(s.pend)
	if from > 0 {
		s.pend = append(s.pend, p...)
		p = s.pend
	}
	n := sse.LastEventEnd(p, from)
	if n > 0 {
		s.text += runTextBytes(p[:n])
		if bytes.Contains(p[:n], usageMark) {
			sniffEventsUsage(p[:n], &s.u)
		}
	}
	switch {
	case len(p)-n > maxSniffedJSONBytes:
		s.pend = s.pend[:0] // an absurd event: skip it
	case n == 0 && from > 0:
		// still the same unfinished event, all in pend
	default:
		// p is the caller's buffer, or pend itself: copy handles the overlap.
		s.pend = append(s.pend[:0], p[n:]...)
	}
}

// sniffEventsUsage merges into u the usage of each event of run (whole
// events, as sse.LastEventEnd cuts them) that holds usageMark.
func sniffEventsUsage(run []byte, u *translate.Usage) {
	for len(run) > 0 {
		n := sse.EventLen(run)
		raw := run[:n]
		run = run[n:]
		if bytes.Contains(raw, usageMark) {
			translate.UsageFromJSON(sse.ParseEvent(raw).Data, u)
		}
	}
}

// runTextBytes is the bytes of the text strings in run (whole events):
// each value of a key in sniffedTextKeys — OpenAI's delta content and
// tool-call arguments, Anthropic's text, partial_json and thinking
// deltas, Gemini's part text — counted as sent, escapes included. One
// bytes.Index per key and run, and two calls per string found.
func runTextBytes(run []byte) int64 {
	var n int64
	keys := sniffedTextKeys
	for i := 0; i < len(keys); i++ {
		key := keys[i]
		rest := run
		for {
			k := bytes.Index(rest, key) + len(key)
			if k < len(key) {
				break
			}
			end := jsonscan.EndOfString(rest, k-1)
			n += int64(end - k)
			rest = rest[end:]
		}
	}
	return n
}

var sniffedTextKeys = [][]byte{contentKey, []byte(`"text":"`), otherTextKeys[0], []byte(`"partial_json":"`), []byte(`"thinking":"`), otherTextKeys[1]}

func (s *usageSniffer) finish() {
	if s.finished {
		return
	}
	s.finished = true
	if !s.eventStream && !s.over {
		translate.UsageFromJSON(s.buf, &s.u)
	}
	s.buf = nil
	s.onFinish(s.u, s.eventStream, s.text)
}
