package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"

	"github.com/llmgateway/llmgateway/gateway/internal/sse"
)

// wireUsage holds every provider's usage field names; one decode reads
// whichever the body has.
type wireUsage struct {
	// OpenAI
	PromptTokens        *int64 `json:"prompt_tokens"`
	CompletionTokens    int64  `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	// Anthropic
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheCreationInputTokens int64  `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64  `json:"cache_read_input_tokens"`
	// Gemini (usageMetadata)
	PromptTokenCount        *int64 `json:"promptTokenCount"`
	CandidatesTokenCount    int64  `json:"candidatesTokenCount"`
	ThoughtsTokenCount      int64  `json:"thoughtsTokenCount"`
	CachedContentTokenCount int64  `json:"cachedContentTokenCount"`
}

// usageEnvelope is where usage sits in a response or stream event of
// each provider type.
type usageEnvelope struct {
	Usage         *wireUsage `json:"usage"`
	UsageMetadata *wireUsage `json:"usageMetadata"`
	Message       *struct {
		Usage *wireUsage `json:"usage"`
	} `json:"message"` // Anthropic message_start
}

// usageFromJSON reads the usage a provider reported in one JSON document
// (a whole response or one stream event) and merges it into u. Anthropic
// streams split usage over message_start and message_delta; a later
// field overrides an earlier one.
func usageFromJSON(data []byte, u *usage) {
	if !bytes.Contains(data, []byte(`sage`)) { // "usage" or "usageMetadata"
		return
	}
	var env usageEnvelope
	if json.Unmarshal(data, &env) != nil {
		return
	}
	wu := env.Usage
	if wu == nil {
		wu = env.UsageMetadata
	}
	if wu == nil && env.Message != nil {
		wu = env.Message.Usage
	}
	if wu == nil {
		return
	}
	switch {
	case wu.PromptTokens != nil:
		u.promptTokens = *wu.PromptTokens
		u.completionTokens = wu.CompletionTokens
		if wu.PromptTokensDetails != nil {
			u.cacheReadTokens = wu.PromptTokensDetails.CachedTokens
		}
		u.reported = true
	case wu.PromptTokenCount != nil:
		u.promptTokens = *wu.PromptTokenCount
		u.completionTokens = wu.CandidatesTokenCount + wu.ThoughtsTokenCount
		u.cacheReadTokens = wu.CachedContentTokenCount
		u.reported = true
	case wu.InputTokens != nil || wu.OutputTokens != nil:
		if wu.InputTokens != nil {
			u.cacheCreationTokens = wu.CacheCreationInputTokens
			u.cacheReadTokens = wu.CacheReadInputTokens
			u.promptTokens = *wu.InputTokens + wu.CacheCreationInputTokens + wu.CacheReadInputTokens
		}
		if wu.OutputTokens != nil {
			u.completionTokens = *wu.OutputTokens
		}
		u.reported = true
	}
}

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
	u           usage
	finished    bool
	onFinish    func(u usage, streamed bool)
}

func newUsageSniffer(rc io.ReadCloser, contentType string, onFinish func(u usage, streamed bool)) *usageSniffer {
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
			usageFromJSON(ev.Data, &s.u)
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
		usageFromJSON(s.buf, &s.u)
	}
	s.buf = nil
	s.onFinish(s.u, s.eventStream)
}
