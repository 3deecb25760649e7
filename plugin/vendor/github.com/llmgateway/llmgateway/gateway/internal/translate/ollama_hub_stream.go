package translate

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
	"github.com/llmgateway/llmgateway/gateway/internal/sse"
)

// Hub stream (chat.completion.chunk payloads) → Ollama NDJSON lines, for
// an Ollama client served by a hub backend (NewOllamaOutStream). The hub
// chunks are an OpenAI upstream's own SSE events, or the payloads of the
// backend's translator (inner). Each payload is one line's JSON object
// (Name ""); the pipeline writes it followed by "\n".
//
//   - A hub chunk that adds text, reasoning (sent only when the client
//     asked to think) or completes tool calls becomes one done:false
//     line: {"model","created_at","message":{"role":"assistant",
//     "content","thinking"?,"tool_calls"?},"done":false}, or for
//     /api/generate {"model","created_at","response","thinking"?,
//     "done":false}. A chunk that adds nothing (the role chunk, empty
//     content) sends no line. Text is passed on as the JSON string the
//     hub sent, never decoded and re-encoded.
//   - Tool calls are sent whole, as Ollama sends them: a call's
//     fragments are gathered (by id, else by index, else the latest
//     call) until its arguments are a complete JSON object, and calls
//     go out in the order they began. At the finish_reason every call
//     not sent yet goes out ({} for arguments that never became an
//     object); a fragment for a call already sent is ignored, and a call
//     that never got a name is dropped. Generate lines carry no tool
//     calls (a generate request offers no tools).
//   - The final line, done:true, waits for the usage chunk (choices: []),
//     [DONE] or the end of the stream, and carries done_reason (see
//     ollamaDoneReason), the usage's counts (0 when the upstream sent
//     none) and the durations: total from the translator's creation to
//     the final line, prompt_eval until the first line, eval the rest,
//     load 0. created_at is the clock's time of each line.
//   - A hub error chunk ({"error":...}) ends the stream with the
//     provider's error, an inner translator's error with that error; the
//     pipeline then writes {"error":"…"} as the last line. An OpenAI
//     upstream that ends with neither [DONE] nor a finish_reason, or an
//     inner translator that reports its stream cut short, is a 502
//     upstream_stream_truncated of class ClassTruncated.

// ollamaOutCall is one tool call of the answer while it is gathered.
type ollamaOutCall struct {
	id, name string
	hubIndex int    // the hub's tool_calls index, -1 when none came
	args     []byte // the arguments text so far (decoded)
}

// ollamaOutStream translates one hub stream into Ollama lines; it is
// created per request and never shared.
type ollamaOutStream struct {
	inner    StreamTranslator // nil: the upstream events are hub chunks
	in       OllamaInbound
	now      func() time.Time
	start    time.Time // the translator's creation
	first    time.Time // the first line's time; zero until then
	head     []byte    // `{"model":<model>,"created_at":"`
	calls    []ollamaOutCall
	sent     int // calls[:sent] are done with: sent, or dropped
	emitted  int // the calls sent
	finish   string
	finished bool // a finish_reason came
	closed   bool // the final line went out
	usage    Usage
	hub      []Payload
}

var _ StreamTranslator = (*ollamaOutStream)(nil)

// NewOllamaOutStream returns a StreamTranslator that emits the Ollama
// NDJSON lines (one payload per line, Name "", Data one compact JSON
// object without its newline) of a chat or generate answer (in) for a
// hub stream. inner is the backend's own translator (e.g.
// NewGeminiStream, NewAnthropicStream), whose hub payloads it consumes;
// inner == nil means the upstream events are hub chunks (an OpenAI SSE
// stream: data: {chunk} … data: [DONE]). now is the clock (time.Now
// when nil); the durations count from this call.
func NewOllamaOutStream(inner StreamTranslator, in OllamaInbound, now func() time.Time) StreamTranslator {
	if now == nil {
		now = time.Now
	}
	head := append([]byte(`{"model":`), quoteJSON(in.Model)...)
	head = append(head, `,"created_at":"`...)
	return &ollamaOutStream{inner: inner, in: in, now: now, start: now(), head: head}
}

// Event translates one upstream event: a hub chunk, or an event for the
// inner translator, whose payloads are then translated.
func (s *ollamaOutStream) Event(ev sse.Event, out []Payload) ([]Payload, *apierr.Error) {
	if s.inner == nil {
		return ollamaOutChunk(s, ev.Data, out)
	}
	hub, e := s.inner.Event(ev, s.hub[:0])
	s.hub = hub
	return ollamaOutPayloads(s, hub, e, out)
}

// Finish ends the stream. Over an inner translator, its trailing
// payloads are translated first and its error returned; then (and for
// an OpenAI stream that sent a finish_reason but no [DONE]) the final
// line is sent.
func (s *ollamaOutStream) Finish(out []Payload) ([]Payload, *apierr.Error) {
	if s.inner != nil {
		hub, ie := s.inner.Finish(s.hub[:0])
		s.hub = hub
		var e *apierr.Error
		out, e = ollamaOutPayloads(s, hub, ie, out)
		if e != nil || s.closed {
			return out, e
		}
		return ollamaOutClose(s, out), nil
	}
	if s.closed {
		return out, nil
	}
	if !s.finished {
		return out, ollamaTruncated(nil)
	}
	return ollamaOutClose(s, out), nil
}

// Usage is the usage the upstream reported: the hub usage chunk's, else
// the inner translator's.
func (s *ollamaOutStream) Usage() Usage {
	if s.usage.Reported || s.inner == nil {
		return s.usage
	}
	return s.inner.Usage()
}

// ollamaTruncated is the 502 for a stream cut short; from is the inner
// translator's own error for it, when there is one.
func ollamaTruncated(from *apierr.Error) *apierr.Error {
	e := errHubStreamTruncated()
	if from != nil {
		e.Message = from.Message
		e.Cause = from.Cause
	}
	return e
}

// ollamaOutPayloads translates the hub payloads of the inner
// translator, then returns its error (ie), unless the final line already
// went out.
func ollamaOutPayloads(s *ollamaOutStream, hub []Payload, ie *apierr.Error, out []Payload) ([]Payload, *apierr.Error) {
	for i := 0; i < len(hub); i++ {
		var e *apierr.Error
		out, e = ollamaOutChunk(s, hub[i].Data, out)
		if e != nil {
			return out, e
		}
	}
	if ie == nil || s.closed {
		return out, nil
	}
	if ie.Code == "upstream_stream_truncated" && ie.Class == apierr.ClassNone {
		return out, ollamaTruncated(ie)
	}
	return out, ie
}

// ollamaOutChunk translates one hub chunk (or [DONE]).
func ollamaOutChunk(s *ollamaOutStream, data []byte, out []Payload) ([]Payload, *apierr.Error) {
	if s.closed {
		return out, nil
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return out, nil
	}
	if data[0] != '{' {
		if string(data) == "[DONE]" {
			return ollamaOutClose(s, out), nil
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
	if c.Usage != nil {
		_, s.usage = anthropicUsageFromHub(c.Usage)
	}
	if s.finished {
		if len(c.Choices) == 0 && c.Usage != nil {
			return ollamaOutClose(s, out), nil
		}
		return out, nil
	}
	for i := 0; i < len(c.Choices); i++ {
		choice := &c.Choices[i]
		if choice.Index != 0 {
			continue
		}
		out = ollamaOutDelta(s, &choice.Delta, choice.FinishReason != "", out)
		if choice.FinishReason != "" {
			s.finished = true
			s.finish = choice.FinishReason
		}
	}
	return out, nil
}

// ollamaOutDelta sends one delta's text, reasoning and completed tool
// calls as a line (none when it adds nothing); flush sends every tool
// call not sent yet.
func ollamaOutDelta(s *ollamaOutStream, d *hubReadMessage, flush bool, out []Payload) []Payload {
	content := ollamaOutDeltaText(d.Content)
	if content == nil {
		content = ollamaOutDeltaText(d.Refusal)
	}
	var thinking json.RawMessage
	if s.in.Think {
		thinking = ollamaOutDeltaText(d.ReasoningContent)
		if thinking == nil {
			thinking = ollamaOutDeltaText(d.Reasoning)
		}
	}
	for i := 0; i < len(d.ToolCalls); i++ {
		ollamaOutToolFragment(s, &d.ToolCalls[i])
	}
	var calls []ollamaOutToolCall
	if !s.in.Generate {
		calls = ollamaOutReadyCalls(s, flush)
	}
	if content == nil && thinking == nil && len(calls) == 0 {
		return out
	}
	if content == nil {
		content = json.RawMessage(`""`)
	}
	at := s.now()
	if s.first.IsZero() {
		s.first = at
	}
	if len(calls) > 0 {
		line := ollamaOutLine{Model: s.in.Model, CreatedAt: ollamaTimestamp(at),
			Message: &ollamaOutMessage{Role: "assistant", Content: content, Thinking: thinking, ToolCalls: calls}}
		return append(out, Payload{Data: encodeJSON(&line)})
	}
	return append(out, ollamaOutTextLine(s, at, content, thinking))
}

// ollamaOutDeltaText is a delta field's text as a JSON string: the
// string the hub sent, or the text parts of an array content joined;
// nil when there is no text.
func ollamaOutDeltaText(raw json.RawMessage) json.RawMessage {
	if len(raw) > 2 && raw[0] == '"' {
		return raw
	}
	if len(raw) > 2 && raw[0] == '[' {
		if text := anthropicOutContentText(raw); text != "" {
			return quoteJSON(text)
		}
	}
	return nil
}

// ollamaOutTextLine is a done:false line of text and reasoning (JSON
// strings; thinking may be nil), built from bytes: byte for byte what
// encoding the ollamaOutLine gives (TestOllamaOutTextLineMatchesStruct),
// without the cost of filling and encoding one per line.
func ollamaOutTextLine(s *ollamaOutStream, at time.Time, content, thinking json.RawMessage) Payload {
	ts := ollamaTimestamp(at)
	data := make([]byte, 0, len(s.head)+len(ts)+len(content)+len(thinking)+80)
	data = append(data, s.head...)
	data = append(data, ts...)
	if s.in.Generate {
		data = append(data, `","response":`...)
		data = append(data, content...)
	} else {
		data = append(data, `","message":{"role":"assistant","content":`...)
		data = append(data, content...)
	}
	if thinking != nil {
		data = append(data, `,"thinking":`...)
		data = append(data, thinking...)
	}
	if !s.in.Generate {
		data = append(data, '}')
	}
	data = append(data, `,"done":false}`...)
	return Payload{Data: data}
}

// ollamaOutToolFragment adds one tool call fragment to its call, or
// starts a new call.
func ollamaOutToolFragment(s *ollamaOutStream, f *hubReadToolCall) {
	args := f.Function.Arguments
	var text []byte
	if len(args) > 0 && args[0] == '"' {
		text = []byte(jsonStringValue(args))
	} else if len(args) > 0 && args[0] == '{' {
		text = []byte(compactArguments(args))
	}
	k := ollamaOutFindCall(s, f)
	if k < 0 {
		index := -1
		if f.Index != nil {
			index = *f.Index
		}
		s.calls = append(s.calls, ollamaOutCall{id: f.ID, name: f.Function.Name, hubIndex: index, args: text})
		return
	}
	if k < s.sent {
		return
	}
	c := &s.calls[k]
	if c.name == "" {
		c.name = f.Function.Name
	}
	c.args = append(c.args, text...)
}

// ollamaOutFindCall is the call a fragment belongs to, -1 for a new
// call: the one with its id; without an id, the latest with its index,
// or without an index the latest call.
func ollamaOutFindCall(s *ollamaOutStream, f *hubReadToolCall) int {
	for k := len(s.calls) - 1; k >= 0; k-- {
		c := &s.calls[k]
		if f.ID != "" {
			if c.id == f.ID {
				return k
			}
			continue
		}
		if f.Index == nil || c.hubIndex == *f.Index {
			return k
		}
	}
	return -1
}

// ollamaOutReadyCalls takes the calls that can go out, in order: each
// whose arguments are a complete JSON object, or with flush all of them;
// a call that never got a name is dropped.
func ollamaOutReadyCalls(s *ollamaOutStream, flush bool) []ollamaOutToolCall {
	var ready []ollamaOutToolCall
	for s.sent < len(s.calls) {
		c := &s.calls[s.sent]
		args := bytes.TrimSpace(c.args)
		// Only an object can be complete: the check runs when one may
		// just have closed.
		complete := len(args) > 1 && args[0] == '{' && args[len(args)-1] == '}' && json.Valid(args)
		if !complete && !flush {
			break
		}
		if c.name != "" {
			ready = append(ready, ollamaOutToolCall{ID: c.id, Function: ollamaOutFunction{Index: s.emitted, Name: c.name,
				Arguments: anthropicToolInput(string(args))}})
			s.emitted++
		}
		c.args = nil
		s.sent++
	}
	return ready
}

// ollamaOutClose ends the answer: the tool calls not sent yet, then the
// final line.
func ollamaOutClose(s *ollamaOutStream, out []Payload) []Payload {
	out = ollamaOutDelta(s, &hubReadMessage{}, true, out)
	end := s.now()
	line := ollamaFinalLine(s.in, OllamaTimes{Start: s.start, FirstToken: s.first, End: end}, s.finish, s.Usage())
	s.closed = true
	return append(out, Payload{Data: encodeJSON(&line)})
}
