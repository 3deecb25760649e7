package translate

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
	"github.com/llmgateway/llmgateway/gateway/internal/sse"
)

// Hub stream (chat.completion.chunk payloads) → Anthropic Messages event
// stream, for an Anthropic client served by a hub backend
// (NewAnthropicOutStream). The hub chunks are an OpenAI upstream's own
// SSE events, or the payloads of the backend's translator (inner).
//
//   - The first hub chunk sends message_start (content [], stop_reason
//     null, usage.input_tokens = the gateway's estimate, output_tokens 0)
//     and one ping.
//   - The answer is a sequence of blocks, in the order their first delta
//     came: text (delta.content, and delta.refusal), thinking
//     (delta.reasoning_content or delta.reasoning, only when the client
//     enabled thinking; dropped otherwise), and one tool_use block per
//     tool call (a fragment with a new id, or a new index without one).
//     Blocks are opened and closed in that order, indexes from 0, never
//     two open at once, and a delta is sent only inside its own block and
//     never empty.
//   - A block stays open while it may grow: a text or thinking block
//     until another block starts, a tool_use block until its arguments
//     are a complete JSON value. Whatever arrives for a later block in
//     the meantime (a parallel tool call whose fragments interleave with
//     the open one's) is buffered and sent when that block opens, as one
//     delta; a late argument piece is thus always in its own block.
//   - At finish_reason every block is sent and closed. message_delta
//     (stop_reason, and usage: prompt − cached input, completion output,
//     the cache reads) waits for the usage chunk (choices: []), [DONE] or
//     the end of the stream; without usage it carries the input estimate
//     and ceil(streamed text bytes / 4) output tokens, counting the text,
//     reasoning and arguments as escaped on the wire (as the gateway's
//     relay counts them). message_stop follows, and nothing after it.
//   - A hub error chunk ({"error":...}) ends the stream with the
//     provider's error (status from its code or type, see
//     hubErrorStatus), an inner translator's error with that error. An
//     OpenAI upstream that ends with neither [DONE] nor a finish_reason
//     is a 502 upstream_stream_truncated.
//   - Text is passed on as the JSON string the hub sent, never decoded
//     and re-encoded: the deltas are built from bytes.

// The kinds of block a segment of the answer becomes.
const (
	anthropicSegText     = 1
	anthropicSegThinking = 2
	anthropicSegTool     = 3
)

// The delta payloads between the block index and the text, one per
// kind of block.
const (
	anthropicTextDeltaHead     = `,"delta":{"type":"text_delta","text":"`
	anthropicThinkingDeltaHead = `,"delta":{"type":"thinking_delta","thinking":"`
	anthropicJSONDeltaHead     = `,"delta":{"type":"input_json_delta","partial_json":"`
)

// anthropicOutSegment is one block of the answer. Its position in the
// stream's segments is its block index.
type anthropicOutSegment struct {
	kind     int
	id, name string // tool_use
	hubIndex int    // tool_use: the hub's tool_calls index, -1 when none came
	// data is the block's text or arguments as the contents of a JSON
	// string (escaped); from sent on it is not sent yet. A tool_use
	// block keeps all of its arguments, to tell when they are complete.
	data []byte
	sent int
	// checked is len(data) when the arguments were last found
	// incomplete.
	checked int
}

// anthropicOutStream translates one hub stream into Anthropic events;
// it is created per request and never shared.
type anthropicOutStream struct {
	inner    StreamTranslator // nil: the upstream events are hub chunks
	ctx      Context
	thinking bool  // send reasoning as thinking blocks
	estimate int64 // the gateway's prompt-token estimate
	id       string
	started  bool // message_start went out
	segs     []anthropicOutSegment
	head     int  // the first segment not yet closed
	headOpen bool // its content_block_start went out
	tools    int  // tool_use segments so far
	finish   string
	finished bool // a finish_reason came: every block is closed
	refusal  bool
	closed   bool  // message_stop went out
	usage    Usage // from the hub usage chunk
	outBytes int64 // escaped text, reasoning and arguments bytes seen
	hub      []Payload
}

var _ StreamTranslator = (*anthropicOutStream)(nil)

// NewAnthropicOutStream returns a StreamTranslator that emits the
// Anthropic Messages event stream (Payload.Name is the event name,
// Payload.Data its JSON) for a hub stream. inner is the backend's own
// translator (e.g. NewGeminiStream), whose hub payloads it consumes;
// inner == nil means the upstream events are hub chunks (an OpenAI SSE
// stream: data: {chunk} … data: [DONE]). inputEstimate is the gateway's
// prompt-token estimate, sent in message_start's usage.input_tokens and
// in message_delta's when the upstream reports no usage.
func NewAnthropicOutStream(inner StreamTranslator, ctx Context, in AnthropicInbound, inputEstimate int64) StreamTranslator {
	if inputEstimate < 0 {
		inputEstimate = 0
	}
	return &anthropicOutStream{inner: inner, ctx: ctx, thinking: in.Thinking, estimate: inputEstimate}
}

// Event translates one upstream event: a hub chunk, or an event for the
// inner translator, whose payloads are then translated.
func (s *anthropicOutStream) Event(ev sse.Event, out []Payload) ([]Payload, *apierr.Error) {
	if s.inner == nil {
		return anthropicOutChunk(s, ev.Data, out)
	}
	hub, e := s.inner.Event(ev, s.hub[:0])
	s.hub = hub
	return anthropicOutPayloads(s, hub, e, out)
}

// Finish ends the stream. Over an inner translator, its trailing
// payloads are translated first and its error returned; then (and for
// an OpenAI stream that sent a finish_reason but no [DONE]) the held
// message_delta and message_stop are sent.
func (s *anthropicOutStream) Finish(out []Payload) ([]Payload, *apierr.Error) {
	if s.inner != nil {
		hub, ie := s.inner.Finish(s.hub[:0])
		s.hub = hub
		var e *apierr.Error
		out, e = anthropicOutPayloads(s, hub, ie, out)
		if e != nil || s.closed {
			return out, e
		}
		return anthropicOutClose(s, out), nil
	}
	if s.closed {
		return out, nil
	}
	if !s.finished {
		e := errHubStreamTruncated()
		return out, e
	}
	return anthropicOutClose(s, out), nil
}

// Usage is the usage the upstream reported: the hub usage chunk's, else
// the inner translator's.
func (s *anthropicOutStream) Usage() Usage {
	if s.usage.Reported || s.inner == nil {
		return s.usage
	}
	return s.inner.Usage()
}

// anthropicOutPayloads translates the hub payloads of the inner
// translator, then returns its error (ie), unless message_stop already
// went out.
func anthropicOutPayloads(s *anthropicOutStream, hub []Payload, ie *apierr.Error, out []Payload) ([]Payload, *apierr.Error) {
	for i := 0; i < len(hub); i++ {
		var e *apierr.Error
		out, e = anthropicOutChunk(s, hub[i].Data, out)
		if e != nil {
			return out, e
		}
	}
	if ie != nil && !s.closed {
		return out, ie
	}
	return out, nil
}

// anthropicOutChunk translates one hub chunk (or [DONE]).
func anthropicOutChunk(s *anthropicOutStream, data []byte, out []Payload) ([]Payload, *apierr.Error) {
	if s.closed {
		return out, nil
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return out, nil
	}
	if data[0] != '{' {
		if string(data) == "[DONE]" {
			return anthropicOutClose(s, out), nil
		}
		return out, hubBadResponse("stream event (not a JSON object)", nil)
	}
	var c hubReadBody
	if err := json.Unmarshal(data, &c); err != nil && !isTypeMismatch(err) {
		return out, hubBadResponse("stream event", err)
	}
	if len(c.Error) > 0 && c.Error[0] != 'n' {
		return out, hubUpstreamError(c.Error, data)
	}
	if !s.started {
		out = anthropicOutStart(s, c.ID, out)
	}
	if c.Usage != nil {
		_, u := anthropicUsageFromHub(c.Usage)
		s.usage = u
	}
	if s.finished {
		if len(c.Choices) == 0 && c.Usage != nil {
			return anthropicOutClose(s, out), nil
		}
		return out, nil
	}
	for i := 0; i < len(c.Choices); i++ {
		choice := &c.Choices[i]
		if choice.Index != 0 {
			continue
		}
		out = anthropicOutDelta(s, &choice.Delta, out)
		if choice.FinishReason != "" {
			s.finished = true
			s.finish = choice.FinishReason
			out = anthropicOutFlush(s, out)
		}
	}
	return out, nil
}

// anthropicOutDelta adds one delta's reasoning, text and tool call
// fragments to their blocks.
func anthropicOutDelta(s *anthropicOutStream, d *hubReadMessage, out []Payload) []Payload {
	reasoning := d.ReasoningContent
	if len(reasoning) <= 2 || reasoning[0] != '"' {
		reasoning = d.Reasoning
	}
	if len(reasoning) > 2 && reasoning[0] == '"' {
		s.outBytes += int64(len(reasoning) - 2)
		if s.thinking {
			out = anthropicOutAppend(s, anthropicSegThinking, reasoning[1:len(reasoning)-1], out)
		}
	}
	content := d.Content
	if len(content) > 2 && content[0] == '"' {
		s.outBytes += int64(len(content) - 2)
		out = anthropicOutAppend(s, anthropicSegText, content[1:len(content)-1], out)
	} else if len(content) > 2 && content[0] == '[' {
		out = anthropicOutContentParts(s, content, out)
	}
	if refusal := d.Refusal; len(refusal) > 2 && refusal[0] == '"' {
		s.refusal = true
		s.outBytes += int64(len(refusal) - 2)
		out = anthropicOutAppend(s, anthropicSegText, refusal[1:len(refusal)-1], out)
	}
	for i := 0; i < len(d.ToolCalls); i++ {
		out = anthropicOutToolFragment(s, &d.ToolCalls[i], out)
	}
	if s.head < len(s.segs)-1 || !s.headOpen && s.head < len(s.segs) {
		out = anthropicOutAdvance(s, out)
	}
	return out
}

// anthropicOutContentParts adds the text parts of an array content
// (sent by some providers instead of a string).
func anthropicOutContentParts(s *anthropicOutStream, raw json.RawMessage, out []Payload) []Payload {
	var parts []hubReadPart
	if json.Unmarshal(raw, &parts) != nil {
		return out
	}
	for i := 0; i < len(parts); i++ {
		if parts[i].Type == "text" && parts[i].Text != "" {
			q := quoteJSON(parts[i].Text)
			s.outBytes += int64(len(q) - 2)
			out = anthropicOutAppend(s, anthropicSegText, q[1:len(q)-1], out)
		}
	}
	return out
}

// anthropicOutAppend adds text (JSON string contents) of a text or
// thinking block: sent at once when the last block is of that kind and
// open, buffered when it is of that kind and waits, else the start of a
// new block.
func anthropicOutAppend(s *anthropicOutStream, kind int, text []byte, out []Payload) []Payload {
	n := len(s.segs)
	if n > s.head && s.segs[n-1].kind == kind {
		if n-1 == s.head && s.headOpen {
			return append(out, anthropicOutDeltaPayload(s.head, kind, text))
		}
		s.segs[n-1].data = append(s.segs[n-1].data, text...)
		return out
	}
	s.segs = append(s.segs, anthropicOutSegment{kind: kind, hubIndex: -1, data: append([]byte(nil), text...)})
	return out
}

// anthropicOutToolFragment adds one tool call fragment: a new tool_use
// block, or arguments for an existing one, sent at once when it is open.
func anthropicOutToolFragment(s *anthropicOutStream, call *hubReadToolCall, out []Payload) []Payload {
	args := anthropicOutArguments(call.Function.Arguments)
	s.outBytes += int64(len(args))
	k := anthropicOutFindTool(s, call)
	if k < 0 {
		id := call.ID
		if id == "" {
			id = anthropicToolID(s.id, s.tools)
		}
		index := -1
		if call.Index != nil {
			index = *call.Index
		}
		s.tools++
		s.segs = append(s.segs, anthropicOutSegment{kind: anthropicSegTool, id: id, name: call.Function.Name,
			hubIndex: index, data: append([]byte(nil), args...)})
		return out
	}
	seg := &s.segs[k]
	if seg.name == "" && (k > s.head || !s.headOpen) {
		seg.name = call.Function.Name
	}
	if len(args) == 0 {
		return out
	}
	seg.data = append(seg.data, args...)
	if k == s.head && s.headOpen {
		seg.sent = len(seg.data)
		return append(out, anthropicOutDeltaPayload(k, anthropicSegTool, args))
	}
	return out
}

// anthropicOutFindTool is the segment a fragment belongs to, -1 for a
// new tool call: the one with its id; without an id, the latest with its
// index, or without an index the latest tool call.
func anthropicOutFindTool(s *anthropicOutStream, call *hubReadToolCall) int {
	for k := len(s.segs) - 1; k >= 0; k-- {
		seg := &s.segs[k]
		if seg.kind != anthropicSegTool {
			continue
		}
		if call.ID != "" {
			if seg.id == call.ID {
				return k
			}
			continue
		}
		if call.Index == nil || seg.hubIndex == *call.Index {
			return k
		}
	}
	return -1
}

// anthropicOutArguments is a fragment's arguments as JSON string
// contents: the string's own, or for an object (sent whole by some
// providers) its compact text; nil when there are none.
func anthropicOutArguments(raw json.RawMessage) []byte {
	if len(raw) > 2 && raw[0] == '"' {
		return raw[1 : len(raw)-1]
	}
	if len(raw) > 0 && raw[0] == '{' {
		q := quoteJSON(compactArguments(raw))
		return q[1 : len(q)-1]
	}
	return nil
}

// anthropicOutAdvance opens the first block not yet closed and closes
// it when it is complete and another follows, as long as it can.
func anthropicOutAdvance(s *anthropicOutStream, out []Payload) []Payload {
	for s.head < len(s.segs) {
		if !s.headOpen {
			out = anthropicOutOpen(s, out)
		}
		if s.head == len(s.segs)-1 || !anthropicOutComplete(&s.segs[s.head]) {
			return out
		}
		out = append(out, anthropicOutStopPayload(s.head))
		s.head++
		s.headOpen = false
	}
	return out
}

// anthropicOutFlush opens and closes every block not yet closed.
func anthropicOutFlush(s *anthropicOutStream, out []Payload) []Payload {
	for s.head < len(s.segs) {
		if !s.headOpen {
			out = anthropicOutOpen(s, out)
		}
		out = append(out, anthropicOutStopPayload(s.head))
		s.head++
		s.headOpen = false
	}
	return out
}

// anthropicOutComplete reports whether a block followed by another can
// close: a text or thinking block always (later text starts a block of
// its own), a tool_use block once its arguments are a complete JSON
// value. Arguments found incomplete are checked again only when they
// grew.
func anthropicOutComplete(seg *anthropicOutSegment) bool {
	if seg.kind != anthropicSegTool {
		return true
	}
	if len(seg.data) == seg.checked {
		return false
	}
	quoted := make([]byte, 0, len(seg.data)+2)
	quoted = append(quoted, '"')
	quoted = append(quoted, seg.data...)
	quoted = append(quoted, '"')
	var args string
	if json.Unmarshal(quoted, &args) == nil && json.Valid([]byte(args)) {
		return true
	}
	seg.checked = len(seg.data)
	return false
}

// anthropicOutOpen sends the first open block's content_block_start and
// what was buffered for it.
func anthropicOutOpen(s *anthropicOutStream, out []Payload) []Payload {
	seg := &s.segs[s.head]
	s.headOpen = true
	out = append(out, anthropicOutStartPayload(s.head, seg))
	if len(seg.data) > seg.sent {
		out = append(out, anthropicOutDeltaPayload(s.head, seg.kind, seg.data[seg.sent:]))
		seg.sent = len(seg.data)
	}
	if seg.kind != anthropicSegTool {
		seg.data = nil
		seg.sent = 0
	}
	return out
}

// anthropicOutStart sends message_start and ping, and fixes the
// message id from the first hub chunk.
func anthropicOutStart(s *anthropicOutStream, hubID string, out []Payload) []Payload {
	s.started = true
	s.id = anthropicMessageID(hubID, s.ctx.IDFallback)
	start := anthropicOutMessageStart{Type: "message_start", Message: anthropicOutMessage{ID: s.id, Type: "message",
		Role: "assistant", Model: s.ctx.RequestedModel, Content: []anthropicOutBlock{},
		Usage: anthropicOutUsage{InputTokens: s.estimate}}}
	return append(out, Payload{Name: "message_start", Data: encodeJSON(&start)},
		Payload{Name: "ping", Data: []byte(`{"type":"ping"}`)})
}

// anthropicOutClose ends the message: every block closed, message_delta
// with the stop reason and usage, message_stop.
func anthropicOutClose(s *anthropicOutStream, out []Payload) []Payload {
	if !s.started {
		out = anthropicOutStart(s, "", out)
	}
	out = anthropicOutFlush(s, out)
	toolUse := s.tools > 0
	delta := anthropicOutMessageDelta{Type: "message_delta",
		Delta: anthropicOutStop{StopReason: anthropicStopReason(s.finish, toolUse, s.refusal)},
		Usage: anthropicOutFinalUsage(s)}
	s.closed = true
	return append(out, Payload{Name: "message_delta", Data: encodeJSON(&delta)},
		Payload{Name: "message_stop", Data: []byte(`{"type":"message_stop"}`)})
}

// anthropicOutFinalUsage is message_delta's usage: the reported one, or
// the estimates.
func anthropicOutFinalUsage(s *anthropicOutStream) anthropicOutUsage {
	u := s.Usage()
	if !u.Reported {
		return anthropicOutUsage{InputTokens: s.estimate, OutputTokens: (s.outBytes + 3) / 4}
	}
	input := u.PromptTokens - u.CacheReadTokens - u.CacheCreationTokens
	if input < 0 {
		input = 0
	}
	return anthropicOutUsage{InputTokens: input, OutputTokens: u.CompletionTokens,
		CacheCreationInputTokens: u.CacheCreationTokens, CacheReadInputTokens: u.CacheReadTokens}
}

// anthropicOutStartPayload is a block's content_block_start.
func anthropicOutStartPayload(index int, seg *anthropicOutSegment) Payload {
	empty := ""
	block := anthropicOutBlock{Type: "text", Text: &empty}
	switch seg.kind {
	case anthropicSegThinking:
		block = anthropicOutBlock{Type: "thinking", Thinking: &empty, Signature: &empty}
	case anthropicSegTool:
		block = anthropicOutBlock{Type: "tool_use", ID: seg.id, Name: seg.name, Input: json.RawMessage("{}")}
	}
	start := anthropicOutBlockStart{Type: "content_block_start", Index: index, ContentBlock: block}
	return Payload{Name: "content_block_start", Data: encodeJSON(&start)}
}

// anthropicOutDeltaPayload is the content_block_delta adding text (JSON
// string contents) to block index of kind.
func anthropicOutDeltaPayload(index int, kind int, text []byte) Payload {
	head := anthropicTextDeltaHead
	switch kind {
	case anthropicSegThinking:
		head = anthropicThinkingDeltaHead
	case anthropicSegTool:
		head = anthropicJSONDeltaHead
	}
	data := make([]byte, 0, len(text)+len(head)+48)
	data = append(data, `{"type":"content_block_delta","index":`...)
	data = strconv.AppendInt(data, int64(index), 10)
	data = append(data, head...)
	data = append(data, text...)
	data = append(data, `"}}`...)
	return Payload{Name: "content_block_delta", Data: data}
}

// anthropicOutStopPayload is block index's content_block_stop.
func anthropicOutStopPayload(index int) Payload {
	data := make([]byte, 0, 48)
	data = append(data, `{"type":"content_block_stop","index":`...)
	data = strconv.AppendInt(data, int64(index), 10)
	data = append(data, '}')
	return Payload{Name: "content_block_stop", Data: data}
}
