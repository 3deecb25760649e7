package translate

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
	"github.com/llmgateway/llmgateway/gateway/internal/sse"
)

// Hub stream (chat.completion.chunk payloads) → Responses event stream,
// for a Responses client served by a hub backend (NewResponsesOutStream).
// The hub chunks are an OpenAI upstream's own SSE events, or the
// payloads of the backend's translator (inner). The events themselves
// are built in responses_hub_events.go.
//
//   - Every payload is named by its event type and carries "type" and
//     "sequence_number", counting from 0.
//   - The first hub chunk sends response.created and
//     response.in_progress (status in_progress, no output, usage null).
//   - The answer is a sequence of output items, in the order their first
//     delta came: reasoning (delta.reasoning_content or
//     delta.reasoning, only when the request asked for reasoning), a
//     message with an output_text part (delta.content) or a refusal
//     part (delta.refusal), and one function_call or custom_tool_call
//     per tool call (a fragment with a new id, or a new index without
//     one). Items are opened (response.output_item.added, then the
//     part's .added) and closed (the text's or arguments' .done, the
//     part's .done, response.output_item.done with the whole item) in
//     that order, output_index from 0, never two open at once.
//   - An item stays open while it may grow, as in
//     anthropic_hub_stream.go: text until another item starts, a tool
//     call until its arguments are a complete JSON value; what arrives
//     for a later item meanwhile is buffered and sent, as one delta,
//     when that item opens. A function call's arguments are streamed as
//     they come (response.function_call_arguments.delta); a custom tool
//     call's input exists only once its arguments are complete, so it
//     is sent whole at the close, as one
//     response.custom_tool_call_input.delta before its .done.
//   - At finish_reason every item is sent and closed. The last event,
//     response.completed (or response.incomplete with
//     incomplete_details.reason for a length or content_filter stop),
//     carries the whole Response with its usage; it waits for the usage
//     chunk (choices: []), [DONE] or the end of the stream. Nothing
//     follows it.
//   - A failure (a hub error chunk, an inner translator's error, an
//     unreadable chunk, or an OpenAI upstream that ends with neither
//     [DONE] nor a finish_reason: a 502 upstream_stream_truncated) sends
//     response.failed, whose response carries the error's code and
//     message and the items closed so far, and returns the error: the
//     pipeline must write nothing more for this format. A failure the
//     translator cannot see (a read error, a stall, the size cap) is
//     sent through ResponsesStreamFailed.
//   - Text is passed on as the JSON string the hub sent, never decoded
//     and re-encoded: deltas and items are built from those bytes.

// The kinds of output item a segment of the answer becomes.
const (
	responsesSegText      = 1
	responsesSegRefusal   = 2
	responsesSegReasoning = 3
	responsesSegTool      = 4
)

// responsesOutSegment is one output item of the answer. Its position in
// the stream's segments is its output_index.
type responsesOutSegment struct {
	kind         int
	callID, name string // tool: the call id and the hub's function name
	hubIndex     int    // tool: the hub's tool_calls index, -1 when none came
	custom       bool   // tool: a custom tool's call (fixed when it opens)
	itemID       string // fixed when it opens
	quotedID     []byte // itemID as a JSON string
	// data is the whole text or arguments as the contents of a JSON
	// string (escaped); data[:sent] went out as deltas.
	data []byte
	sent int
	// checked is len(data) when the arguments were last found
	// incomplete.
	checked int
	item    json.RawMessage // the whole item, once closed
}

// responsesReasoningTokensKey marks the usage chunks worth a second
// decode for their reasoning tokens (some providers send usage in every
// chunk).
var responsesReasoningTokensKey = []byte(`"reasoning_tokens"`)

// responsesOutStream translates one hub stream into Responses events;
// it is created per request and never shared.
type responsesOutStream struct {
	inner    StreamTranslator // nil: the upstream events are hub chunks
	ctx      Context
	in       ResponsesInbound
	id, base string // the response id, and its part after "resp_"
	seq      int    // the next sequence_number
	started  bool   // response.created went out
	segs     []responsesOutSegment
	head     int  // the first segment not yet closed
	headOpen bool // its output_item.added went out
	tools    int  // tool call segments so far
	finish   string
	finished bool // a finish_reason came: every item is closed
	closed   bool // the terminal event went out
	usage    Usage
	reasoned int64 // reasoning tokens of the hub usage chunk
	hub      []Payload
}

var _ StreamTranslator = (*responsesOutStream)(nil)

// NewResponsesOutStream returns a StreamTranslator that emits the
// Responses event stream (Payload.Name is the event type, Payload.Data
// its JSON) for a hub stream answering the request described by in.
// inner is the backend's own translator (e.g. NewGeminiStream,
// NewAnthropicStream), whose hub payloads it consumes; inner == nil
// means the upstream events are hub chunks (an OpenAI SSE stream:
// data: {chunk} … data: [DONE]). Every error it returns comes after a
// response.failed payload in out, so the pipeline writes nothing more
// for it; see ResponsesStreamFailed for the failures it does not see.
func NewResponsesOutStream(inner StreamTranslator, ctx Context, in ResponsesInbound) StreamTranslator {
	return &responsesOutStream{inner: inner, ctx: ctx, in: in}
}

// ResponsesStreamFailed appends the response.failed event for e to out,
// for a failure that st (a translator from NewResponsesOutStream) did
// not see: an upstream read error, a stall, the size cap. It appends
// nothing when st already ended its stream (completed, incomplete or
// failed) or is not such a translator.
func ResponsesStreamFailed(st StreamTranslator, e *apierr.Error, out []Payload) []Payload {
	s, ok := st.(*responsesOutStream)
	if !ok || e == nil {
		return out
	}
	return responsesOutFailed(s, e, out)
}

// Event translates one upstream event: a hub chunk, or an event for the
// inner translator, whose payloads are then translated.
func (s *responsesOutStream) Event(ev sse.Event, out []Payload) ([]Payload, *apierr.Error) {
	if s.inner == nil {
		return responsesOutChunk(s, ev.Data, out)
	}
	hub, e := s.inner.Event(ev, s.hub[:0])
	s.hub = hub
	return responsesOutPayloads(s, hub, e, out)
}

// Finish ends the stream. Over an inner translator, its trailing
// payloads are translated first and its error sent; then (and for an
// OpenAI stream that sent a finish_reason but no [DONE]) the held
// terminal event is sent.
func (s *responsesOutStream) Finish(out []Payload) ([]Payload, *apierr.Error) {
	if s.inner != nil {
		hub, ie := s.inner.Finish(s.hub[:0])
		s.hub = hub
		var e *apierr.Error
		out, e = responsesOutPayloads(s, hub, ie, out)
		if e != nil || s.closed {
			return out, e
		}
		return responsesOutClose(s, out), nil
	}
	if s.closed {
		return out, nil
	}
	if !s.finished {
		e := errHubStreamTruncated()
		return responsesOutFailed(s, e, out), e
	}
	return responsesOutClose(s, out), nil
}

// Usage is the usage the upstream reported: the hub usage chunk's, else
// the inner translator's.
func (s *responsesOutStream) Usage() Usage {
	if s.usage.Reported || s.inner == nil {
		return s.usage
	}
	return s.inner.Usage()
}

// responsesOutPayloads translates the hub payloads of the inner
// translator, then sends its error (ie), unless the stream already
// ended.
func responsesOutPayloads(s *responsesOutStream, hub []Payload, ie *apierr.Error, out []Payload) ([]Payload, *apierr.Error) {
	for i := 0; i < len(hub); i++ {
		var e *apierr.Error
		out, e = responsesOutChunk(s, hub[i].Data, out)
		if e != nil {
			return out, e
		}
	}
	if ie != nil && !s.closed {
		return responsesOutFailed(s, ie, out), ie
	}
	return out, nil
}

// responsesOutChunk translates one hub chunk (or [DONE]).
func responsesOutChunk(s *responsesOutStream, data []byte, out []Payload) ([]Payload, *apierr.Error) {
	if s.closed {
		return out, nil
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return out, nil
	}
	if data[0] != '{' {
		if string(data) == "[DONE]" {
			return responsesOutClose(s, out), nil
		}
		e := hubBadResponse("stream event (not a JSON object)", nil)
		return responsesOutFailed(s, e, out), e
	}
	var c hubReadBody
	if err := json.Unmarshal(data, &c); err != nil && !isTypeMismatch(err) {
		e := hubBadResponse("stream event", err)
		return responsesOutFailed(s, e, out), e
	}
	if len(c.Error) > 0 && c.Error[0] != 'n' {
		e := hubUpstreamError(c.Error, data)
		return responsesOutFailed(s, e, out), e
	}
	if !s.started {
		out = responsesOutStart(s, c.ID, out)
	}
	if c.Usage != nil {
		_, s.usage = anthropicUsageFromHub(c.Usage)
		s.reasoned = 0
		if bytes.Contains(data, responsesReasoningTokensKey) {
			s.reasoned = responsesReasoningTokens(data)
		}
	}
	if s.finished {
		if len(c.Choices) == 0 && c.Usage != nil {
			return responsesOutClose(s, out), nil
		}
		return out, nil
	}
	for i := 0; i < len(c.Choices); i++ {
		choice := &c.Choices[i]
		if choice.Index != 0 {
			continue
		}
		out = responsesOutDelta(s, &choice.Delta, out)
		if choice.FinishReason != "" {
			s.finished = true
			s.finish = choice.FinishReason
			out = responsesOutFlush(s, out)
		}
	}
	return out, nil
}

// responsesOutDelta adds one delta's reasoning, text, refusal and tool
// call fragments to their items.
func responsesOutDelta(s *responsesOutStream, d *hubReadMessage, out []Payload) []Payload {
	if s.in.Reasoning {
		reasoning := d.ReasoningContent
		if len(reasoning) <= 2 || reasoning[0] != '"' {
			reasoning = d.Reasoning
		}
		if len(reasoning) > 2 && reasoning[0] == '"' {
			out = responsesOutAppend(s, responsesSegReasoning, reasoning[1:len(reasoning)-1], out)
		}
	}
	content := d.Content
	if len(content) > 2 && content[0] == '"' {
		out = responsesOutAppend(s, responsesSegText, content[1:len(content)-1], out)
	} else if len(content) > 2 && content[0] == '[' {
		var parts []hubReadPart
		if json.Unmarshal(content, &parts) == nil {
			for i := 0; i < len(parts); i++ {
				if parts[i].Type == "text" && parts[i].Text != "" {
					q := quoteJSON(parts[i].Text)
					out = responsesOutAppend(s, responsesSegText, q[1:len(q)-1], out)
				}
			}
		}
	}
	if refusal := d.Refusal; len(refusal) > 2 && refusal[0] == '"' {
		out = responsesOutAppend(s, responsesSegRefusal, refusal[1:len(refusal)-1], out)
	}
	for i := 0; i < len(d.ToolCalls); i++ {
		out = responsesOutToolFragment(s, &d.ToolCalls[i], out)
	}
	if s.head < len(s.segs)-1 || !s.headOpen && s.head < len(s.segs) {
		out = responsesOutAdvance(s, out)
	}
	return out
}

// responsesOutAppend adds text (JSON string contents) to a text,
// refusal or reasoning item: sent at once when the last item is of that
// kind and open, buffered when it is of that kind and waits, else the
// start of a new item.
func responsesOutAppend(s *responsesOutStream, kind int, text []byte, out []Payload) []Payload {
	n := len(s.segs)
	if n > s.head && s.segs[n-1].kind == kind {
		seg := &s.segs[n-1]
		seg.data = append(seg.data, text...)
		if n-1 == s.head && s.headOpen {
			seg.sent = len(seg.data)
			return append(out, responsesDeltaPayload(s, n-1, text))
		}
		return out
	}
	s.segs = append(s.segs, responsesOutSegment{kind: kind, hubIndex: -1, data: append([]byte(nil), text...)})
	return out
}

// responsesOutToolFragment adds one tool call fragment: a new tool call
// item, or arguments for an existing one, sent at once when it is open
// (a function call's).
func responsesOutToolFragment(s *responsesOutStream, call *hubReadToolCall, out []Payload) []Payload {
	args := anthropicOutArguments(call.Function.Arguments)
	k := responsesOutFindTool(s, call)
	if k < 0 {
		callID := call.ID
		if callID == "" {
			callID = responsesCallID(s.base, s.tools)
		}
		index := -1
		if call.Index != nil {
			index = *call.Index
		}
		s.tools++
		s.segs = append(s.segs, responsesOutSegment{kind: responsesSegTool, callID: callID, name: call.Function.Name,
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
	if k == s.head && s.headOpen && !seg.custom {
		seg.sent = len(seg.data)
		return append(out, responsesDeltaPayload(s, k, args))
	}
	return out
}

// responsesOutFindTool is the segment a fragment belongs to, -1 for a
// new tool call: the one with its id; without an id, the latest with
// its index, or without an index the latest tool call.
func responsesOutFindTool(s *responsesOutStream, call *hubReadToolCall) int {
	for k := len(s.segs) - 1; k >= 0; k-- {
		seg := &s.segs[k]
		if seg.kind != responsesSegTool {
			continue
		}
		if call.ID != "" {
			if seg.callID == call.ID {
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

// responsesOutAdvance opens the first item not yet closed and closes it
// when it is complete and another follows, as long as it can.
func responsesOutAdvance(s *responsesOutStream, out []Payload) []Payload {
	for s.head < len(s.segs) {
		if !s.headOpen {
			out = responsesOutOpen(s, out)
		}
		if s.head == len(s.segs)-1 || !responsesOutComplete(&s.segs[s.head]) {
			return out
		}
		out = responsesOutCloseItem(s, out)
	}
	return out
}

// responsesOutFlush opens and closes every item not yet closed.
func responsesOutFlush(s *responsesOutStream, out []Payload) []Payload {
	for s.head < len(s.segs) {
		if !s.headOpen {
			out = responsesOutOpen(s, out)
		}
		out = responsesOutCloseItem(s, out)
	}
	return out
}

// responsesOutComplete reports whether an item followed by another can
// close: text always (later text starts an item of its own), a tool
// call once its arguments are a complete JSON value. Arguments found
// incomplete are checked again only when they grew.
func responsesOutComplete(seg *responsesOutSegment) bool {
	if seg.kind != responsesSegTool {
		return true
	}
	if len(seg.data) == seg.checked {
		return false
	}
	var args string
	if json.Unmarshal(responsesQuoted(seg.data), &args) == nil && json.Valid([]byte(args)) {
		return true
	}
	seg.checked = len(seg.data)
	return false
}

// responsesQuoted is JSON string contents as a JSON string.
func responsesQuoted(contents []byte) json.RawMessage {
	quoted := make([]byte, 0, len(contents)+2)
	quoted = append(quoted, '"')
	quoted = append(quoted, contents...)
	return append(quoted, '"')
}

// responsesOutStart sends response.created and response.in_progress,
// and fixes the response id from the first hub chunk.
func responsesOutStart(s *responsesOutStream, hubID string, out []Payload) []Payload {
	s.started = true
	s.id = responsesID(hubID, s.ctx.IDFallback)
	s.base = strings.TrimPrefix(s.id, "resp_")
	out = append(out, responsesEventPayload(s, &responsesOutEvent{Type: "response.created",
		Response: responsesNewResponse(s.id, s.ctx, "in_progress")}))
	return append(out, responsesEventPayload(s, &responsesOutEvent{Type: "response.in_progress",
		Response: responsesNewResponse(s.id, s.ctx, "in_progress")}))
}

// responsesOutClose ends the stream: every item closed, then
// response.completed, or response.incomplete after a length or
// content_filter stop.
func responsesOutClose(s *responsesOutStream, out []Payload) []Payload {
	if !s.started {
		out = responsesOutStart(s, "", out)
	}
	out = responsesOutFlush(s, out)
	resp := responsesOutFinal(s, "completed")
	kind := "response.completed"
	if reason := responsesIncompleteReason(s.finish); reason != "" {
		resp.Status = "incomplete"
		resp.IncompleteDetails = &responsesOutIncomplete{Reason: reason}
		kind = "response.incomplete"
	}
	s.closed = true
	return append(out, responsesEventPayload(s, &responsesOutEvent{Type: kind, Response: resp}))
}

// responsesOutFailed ends the stream with response.failed for e: the
// items closed so far, the error's code and message. Nothing once the
// stream has ended.
func responsesOutFailed(s *responsesOutStream, e *apierr.Error, out []Payload) []Payload {
	if s.closed {
		return out
	}
	if !s.started {
		out = responsesOutStart(s, "", out)
	}
	resp := responsesOutFinal(s, "failed")
	code := e.Code
	if code == "" {
		code = "server_error"
	}
	resp.Error = &responsesOutError{Code: code, Message: e.Message}
	s.closed = true
	return append(out, responsesEventPayload(s, &responsesOutEvent{Type: "response.failed", Response: resp}))
}

// responsesOutFinal is the Response of a terminal event: the closed
// items, and the usage when the upstream reported it.
func responsesOutFinal(s *responsesOutStream, status string) *responsesOutResponse {
	resp := responsesNewResponse(s.id, s.ctx, status)
	for i := 0; i < len(s.segs); i++ {
		if s.segs[i].item != nil {
			resp.Output = append(resp.Output, s.segs[i].item)
		}
	}
	if u := s.Usage(); u.Reported {
		resp.Usage = responsesUsage(u, s.reasoned)
	}
	return resp
}
