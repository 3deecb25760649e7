package translate

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
	"github.com/llmgateway/llmgateway/gateway/internal/sse"
)

// Gemini streamGenerateContent?alt=sse events → hub
// chat.completion.chunk payloads. Each event is a whole
// generateContent response holding the next parts of the candidates;
// only candidate 0 is streamed (n > 1 with stream is refused). See
// hub_gemini.go for the chunks it sends.

// geminiStream translates one Gemini event stream; it is created per
// request and never shared.
type geminiStream struct {
	tc       Context
	id       string // the chunks' id, fixed by the first event
	callBase string // the per-response part of generated tool call ids
	started  bool   // the role chunk went out
	finished bool   // the finish chunk went out
	sawCall  bool
	calls    int // tool calls sent so far
	u        Usage
	usageOut *hubUsage // nil until a usageMetadata arrives
	text     textChunker
}

var _ StreamTranslator = (*geminiStream)(nil)

// NewGeminiStream returns the translator for one Gemini stream.
func NewGeminiStream(tc Context) StreamTranslator {
	return &geminiStream{tc: tc}
}

// Event translates one upstream event. After the finish chunk, events
// only update the usage (Gemini may send a usage-only final event).
func (s *geminiStream) Event(ev sse.Event, out []Payload) ([]Payload, *apierr.Error) {
	data := bytes.TrimSpace(ev.Data)
	if len(data) == 0 || string(data) == "[DONE]" {
		return out, nil
	}
	if data[0] != '{' {
		return out, geminiBadResponse(nil)
	}
	var r geminiWireResponse
	if err := json.Unmarshal(data, &r); err != nil {
		return out, geminiBadResponse(err)
	}
	if !isJSONNull(r.Error) {
		return out, geminiStreamError(r.Error, data)
	}
	if !s.started {
		out = s.start(out, r.ResponseID)
	}
	if r.UsageMetadata != nil {
		s.u, s.usageOut = geminiUsage(r.UsageMetadata)
	}
	if s.finished {
		return out, nil
	}
	if len(r.Candidates) == 0 && r.PromptFeedback != nil && r.PromptFeedback.BlockReason != "" {
		s.finished = true
		return append(out, s.chunk(hubDelta{}, "content_filter")), nil
	}
	for i := 0; i < len(r.Candidates); i++ {
		if r.Candidates[i].Index == 0 {
			return s.candidate(out, &r.Candidates[i]), nil
		}
	}
	return out, nil
}

// start fixes the stream's ids from the first event and appends the
// role chunk.
func (s *geminiStream) start(out []Payload, responseID string) []Payload {
	s.started = true
	s.id = geminiResponseID(responseID, s.tc.IDFallback)
	s.callBase = geminiCallIDBase(responseID, s.tc.IDFallback)
	empty := ""
	return append(out, s.chunk(hubDelta{Role: "assistant", Content: &empty}, ""))
}

// candidate appends candidate 0's new parts: one content chunk per run
// of text parts, one tool call chunk per (whole) functionCall, in their
// order; thought parts are dropped. Then the finish chunk, when the
// candidate has a finishReason.
func (s *geminiStream) candidate(out []Payload, cand *geminiWireCandidate) []Payload {
	text := ""
	if cand.Content != nil {
		for j := 0; j < len(cand.Content.Parts); j++ {
			p := &cand.Content.Parts[j]
			if p.Thought {
				continue
			}
			if p.FunctionCall != nil {
				out = s.textChunk(out, text)
				text = ""
				out = s.toolCallChunk(out, p)
				continue
			}
			if p.Text != nil {
				text += *p.Text
			}
		}
	}
	out = s.textChunk(out, text)
	if cand.FinishReason != "" {
		s.finished = true
		out = append(out, s.chunk(hubDelta{}, geminiFinishReason(cand.FinishReason, s.sawCall)))
	}
	return out
}

// textChunk appends a content chunk for non-empty text.
func (s *geminiStream) textChunk(out []Payload, text string) []Payload {
	if text == "" {
		return out
	}
	return append(out, textPayload(&s.text, s.tc, s.id, text))
}

// toolCallChunk appends the chunk carrying a whole tool call: Gemini
// sends each functionCall complete, so there is no arguments fragment.
func (s *geminiStream) toolCallChunk(out []Payload, p *geminiWireResponsePart) []Payload {
	index := s.calls
	call := geminiToolCall(p, s.callBase, s.calls, &index)
	s.calls++
	s.sawCall = true
	return append(out, s.chunk(hubDelta{ToolCalls: []hubToolCall{call}}, ""))
}

// chunk is the payload of a chunk carrying delta; finish is "" except
// in the finish chunk.
func (s *geminiStream) chunk(delta hubDelta, finish string) Payload {
	if finish == "" {
		return hubDeltaPayload(s.tc, s.id, delta, nil)
	}
	return hubDeltaPayload(s.tc, s.id, delta, &finish)
}

// Finish reports a stream that ended before any finishReason, and
// appends the usage chunk when the client asked for it (zero counts when
// Gemini sent no usageMetadata).
func (s *geminiStream) Finish(out []Payload) ([]Payload, *apierr.Error) {
	if !s.finished {
		return out, apierr.New(http.StatusBadGateway, "server_error", "upstream_stream_truncated",
			"the gemini stream ended before a finish reason")
	}
	if s.tc.IncludeUsage {
		hu := s.usageOut
		if hu == nil {
			_, hu = geminiUsage(&geminiWireUsage{})
		}
		out = append(out, hubUsagePayload(s.tc, s.id, hu))
	}
	return out, nil
}

// Usage is the usage of the latest usageMetadata.
func (s *geminiStream) Usage() Usage {
	return s.u
}
