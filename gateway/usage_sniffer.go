package gateway

import (
	"bytes"
	"io"
	"strings"

	"github.com/llmgateway/llmgateway/gateway/internal/sse"
	"github.com/llmgateway/llmgateway/gateway/internal/translate"
)

// maxSniffedJSONBytes bounds how much of a non-streaming passthrough
// response is kept to read its usage; a larger one falls back to the
// estimate.
const maxSniffedJSONBytes = 8 << 20

// usageSniffer reads usage from a passthrough response as it flows to
// the client, without delaying or altering a byte: an event stream is fed
// to the SSE parser and each event's data inspected as it completes; a
// JSON body is kept (up to a bound) and parsed at its end. finish runs
// once, at EOF or Close.
type usageSniffer struct {
	rc          io.ReadCloser
	eventStream bool
	events      sse.Parser // the event in progress (event streams)
	buf         []byte     // the JSON body so far
	over        bool
	u           translate.Usage
	finished    bool
	onFinish    func(u translate.Usage, streamed bool)
}

func newUsageSniffer(rc io.ReadCloser, contentType string, onFinish func(u translate.Usage, streamed bool)) *usageSniffer {
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
			s.over, s.buf = true, nil
			return
		}
		s.buf = append(s.buf, p...)
		return
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if s.events.Pending()+len(p) > maxSniffedJSONBytes {
				s.events.Take() // an absurd event: skip it
				return
			}
			s.events.Feed(p, false)
			return
		}
		if s.events.Feed(p[:i+1], true) {
			ev := s.events.Take()
			translate.UsageFromJSON(ev.Data, &s.u)
		}
		p = p[i+1:]
	}
}

func (s *usageSniffer) finish() {
	if s.finished {
		return
	}
	s.finished = true
	if !s.eventStream && !s.over {
		translate.UsageFromJSON(s.buf, &s.u)
	}
	s.buf = nil
	s.onFinish(s.u, s.eventStream)
}
