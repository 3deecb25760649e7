package translate

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"unicode/utf8"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
	"github.com/llmgateway/llmgateway/gateway/internal/jsonscan"
	"github.com/llmgateway/llmgateway/gateway/internal/sse"
)

// Anthropic Messages event stream → hub chat.completion.chunk payloads:
// the role chunk first; a content chunk per text_delta; for a tool_use
// block a first fragment (id, name) then one per input_json_delta; the
// finish chunk at the first message_delta (or at message_stop when none
// came); at message_stop the usage chunk when the client asked for it.
// An error event ends the stream with a 502; an end before message_stop
// is a 502 upstream_stream_truncated.

// anthropicStream translates one Anthropic event stream; it is created
// per request and never shared.
type anthropicStream struct {
	tc         Context
	id         string
	started    bool        // the role chunk went out
	toolIndex  map[int]int // Anthropic block index → tool_calls index
	nextTool   int
	finishSent bool
	stopped    bool // message_stop arrived; the stream is complete
	raw        Usage
	text       textChunker
	// exact (compiled): message_start and message_delta are read by
	// readAnthropicEventExact instead of decoded, text deltas and block
	// starts told by a scan instead of a regular expression (Yaegi).
	exact bool
}

var _ StreamTranslator = (*anthropicStream)(nil)

// NewAnthropicStream returns the translator for one Anthropic stream.
func NewAnthropicStream(tc Context) StreamTranslator {
	return &anthropicStream{tc: tc, id: tc.IDFallback, toolIndex: map[int]int{}, exact: !jsonscan.Interpreted}
}

// anthropicEventType names an event by its "event:" field, or by the
// data's "type" when the field is missing.
func anthropicEventType(ev sse.Event) string {
	if ev.Name != "" {
		return ev.Name
	}
	var head struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(ev.Data, &head)
	return head.Type
}

// Event translates one upstream event. Events after message_stop are
// ignored, and so are ping, content_block_stop and unknown events.
func (s *anthropicStream) Event(ev sse.Event, out []Payload) ([]Payload, *apierr.Error) {
	if s.stopped {
		return out, nil
	}
	kind := ev.Name
	if kind == "" {
		kind = anthropicEventType(ev)
	}
	switch kind {
	case "message_start", "content_block_start", "content_block_delta", "message_delta", "error":
	case "message_stop":
		return s.stop(out), nil
	default: // ping, content_block_stop and unknown events
		return out, nil
	}
	// The text deltas, nearly every event of a stream, in the exact
	// shape Anthropic sends them, are read without a decode: what a
	// decode and quoteWith would make of them.
	// A text or thinking block's start, once a block, says nothing the
	// chunks carry: in its exact shape it is passed over undecoded.
	if kind == "content_block_start" && (s.exact && plainBlockStartScan(ev.Data) || !s.exact && plainBlockStartShape.Match(ev.Data)) {
		return out, nil
	}
	if kind == "content_block_delta" {
		var quoted []byte
		var ok bool
		if s.exact {
			quoted, ok = plainTextDeltaScan(ev.Data)
		} else {
			quoted, ok = plainTextDeltaMatch(ev.Data)
		}
		if ok {
			if len(quoted) == 2 {
				return out, nil // an empty text
			}
			if !s.started {
				out = s.start(out)
			}
			return append(out, quotedTextPayload(&s.text, s.tc, s.id, quoted)), nil
		}
	}
	var data anthropicWireEvent
	if !s.exact || !readAnthropicEventExact(kind, ev.Data, &data) {
		data = anthropicWireEvent{} // what a refused exact read left
		if err := json.Unmarshal(ev.Data, &data); err != nil {
			return out, anthropicBadResponse(kind+" event", err)
		}
	}
	switch kind {
	case "message_start":
		if data.Message == nil {
			return out, anthropicBadResponse("message_start event", nil)
		}
		if data.Message.ID != "" {
			s.id = data.Message.ID
		}
		data.Message.Usage.addTo(&s.raw)
		return s.start(out), nil
	case "content_block_start":
		if data.ContentBlock == nil || data.ContentBlock.Type != "tool_use" {
			return out, nil
		}
		k := s.nextTool
		s.nextTool++
		s.toolIndex[data.Index] = k
		call := hubToolCall{Index: &k, ID: data.ContentBlock.ID, Type: "function",
			Function: hubFunction{Name: data.ContentBlock.Name}}
		return append(s.start(out), s.chunk(hubDelta{ToolCalls: []hubToolCall{call}}, nil)), nil
	case "content_block_delta":
		// A text delta, nearly every event of a stream, takes no further
		// call than the chunk's.
		if d := data.Delta; d != nil && d.Type == "text_delta" {
			if d.Text == "" {
				return out, nil
			}
			if !s.started {
				out = s.start(out)
			}
			return append(out, textPayload(&s.text, s.tc, s.id, d.Text)), nil
		}
		return s.blockDelta(out, &data)
	case "message_delta":
		data.Usage.addTo(&s.raw)
		if s.finishSent {
			return out, nil
		}
		var stopReason *string
		if data.Delta != nil {
			stopReason = data.Delta.StopReason
		}
		return s.finishChunk(out, anthropicFinishReason(stopReason)), nil
	}
	e := anthropicStreamError(data.Error)
	e.Upstream = apierr.EmbedUpstream(ev.Data)
	return out, e
}

// start appends the role chunk to out unless that already went out.
func (s *anthropicStream) start(out []Payload) []Payload {
	if s.started {
		return out
	}
	s.started = true
	return append(out, rolePayload(&s.text, s.tc, s.id))
}

// blockDelta translates a content_block_delta: text and the arguments
// of a tool_use block; thinking, signature and citation deltas are
// dropped.
func (s *anthropicStream) blockDelta(out []Payload, data *anthropicWireEvent) ([]Payload, *apierr.Error) {
	if data.Delta == nil {
		return out, anthropicBadResponse("content_block_delta event", nil)
	}
	switch data.Delta.Type {
	case "text_delta":
		if data.Delta.Text == "" {
			return out, nil
		}
		text := data.Delta.Text
		return append(s.start(out), s.chunk(hubDelta{Content: &text}, nil)), nil
	case "input_json_delta":
		k, ok := s.toolIndex[data.Index]
		if !ok || data.Delta.PartialJSON == "" {
			return out, nil
		}
		call := hubToolCall{Index: &k, Function: hubFunction{Arguments: data.Delta.PartialJSON}}
		return append(s.start(out), s.chunk(hubDelta{ToolCalls: []hubToolCall{call}}, nil)), nil
	}
	return out, nil // thinking_delta, signature_delta, citations_delta
}

// finishChunk appends the chunk carrying finish_reason reason.
func (s *anthropicStream) finishChunk(out []Payload, reason string) []Payload {
	s.finishSent = true
	return append(s.start(out), finishPayload(&s.text, s.tc, s.id, reason))
}

// stop ends the stream: the finish chunk if message_delta never sent
// one, then the usage chunk when the client asked for it.
func (s *anthropicStream) stop(out []Payload) []Payload {
	if !s.finishSent {
		out = s.finishChunk(out, "stop")
	}
	if s.tc.IncludeUsage {
		out = append(out, hubUsagePayload(s.tc, s.id, newHubUsage(s.Usage())))
	}
	s.stopped = true
	return out
}

// chunk is the payload of a chunk carrying delta.
func (s *anthropicStream) chunk(delta hubDelta, finish *string) Payload {
	return hubDeltaPayload(s.tc, s.id, delta, finish)
}

// Finish reports a stream that ended before message_stop.
func (s *anthropicStream) Finish(out []Payload) ([]Payload, *apierr.Error) {
	if s.stopped {
		return out, nil
	}
	return out, apierr.New(http.StatusBadGateway, "server_error", "upstream_stream_truncated",
		"stream from anthropic-type provider ended before message_stop")
}

// Usage is the usage folded from message_start and message_delta.
func (s *anthropicStream) Usage() Usage {
	return anthropicUsageTotals(s.raw)
}

// The exact bytes of a text delta as Anthropic sends it, before and
// after the block index.
var (
	textDeltaHead = []byte(`{"type":"content_block_delta","index":`)
	textDeltaMid  = []byte(`,"delta":{"type":"text_delta","text":"`)
)

// A text delta's data is its text, as the JSON string (quotes included)
// quoteWith would encode it, when the data is exactly a text delta —
// {"type":"content_block_delta","index":N,"delta":{"type":"text_delta",
// "text":"…"}} — and its text needs no escape in either direction (no
// quote, backslash, control byte, invalid UTF-8 or line/paragraph
// separator): then the decoded text is its bytes and encoding it gives
// them back. Anything else is false, for the decode to read. Under
// Yaegi, where each statement of ours costs about as much as a call into
// the standard library, one compiled regular expression checks the shape
// and the text's bytes (plainTextDeltaMatch); compiled, a scan of our
// own is several times cheaper (plainTextDeltaScan). The exact start of
// a text or thinking block, which the decode would read as a block that
// is not a tool_use and pass over, is told the same two ways
// (plainBlockStartShape, plainBlockStartScan). anthropicStream.exact
// picks; each pair is compared on every input of
// FuzzAnthropicStreamPlainEvents.

// plainTextDeltaMatch is a text delta's text by plainTextDeltaShape.
func plainTextDeltaMatch(data []byte) ([]byte, bool) {
	if !plainTextDeltaShape.Match(data) || !utf8.Valid(data) {
		return nil, false
	}
	start := len(textDeltaHead) + bytes.IndexByte(data[len(textDeltaHead):], ',') + len(textDeltaMid) - 1
	return data[start : len(data)-2 : len(data)-2], true
}

// plainTextDeltaScan is a text delta's text by comparing the shape's
// bytes and scanning the text's.
func plainTextDeltaScan(data []byte) ([]byte, bool) {
	if !bytes.HasPrefix(data, textDeltaHead) || !bytes.HasSuffix(data, textDeltaTail) {
		return nil, false
	}
	n := blockIndexLen(data[len(textDeltaHead):])
	mid := len(textDeltaHead) + n
	if n == 0 || !bytes.HasPrefix(data[mid:], textDeltaMid) || len(data)-mid < len(textDeltaMid)+len(textDeltaTail) {
		return nil, false
	}
	quoted := data[mid+len(textDeltaMid)-1 : len(data)-2 : len(data)-2]
	text := quoted[1 : len(quoted)-1]
	for i := 0; i < len(text); i++ {
		if c := text[i]; c < 0x20 || c == '"' || c == '\\' {
			return nil, false
		}
	}
	if bytes.IndexByte(text, 0xe2) >= 0 && (bytes.Contains(text, lineSeparator) || bytes.Contains(text, paragraphSeparator)) {
		return nil, false
	}
	if !utf8.Valid(text) {
		return nil, false
	}
	return quoted, true
}

// plainBlockStartScan is plainBlockStartShape by comparing bytes.
func plainBlockStartScan(data []byte) bool {
	if !bytes.HasPrefix(data, blockStartHead) {
		return false
	}
	n := blockIndexLen(data[len(blockStartHead):])
	if n == 0 {
		return false
	}
	rest := data[len(blockStartHead)+n:]
	return bytes.Equal(rest, textBlockStartTail) || bytes.Equal(rest, thinkingBlockStartTail)
}

// blockIndexLen is the length of the block index data starts with, as
// the shapes take it (0, or up to nine digits without a leading zero:
// what an int holds), 0 when there is none.
func blockIndexLen(data []byte) int {
	n := 0
	for n < len(data) && n < 10 && '0' <= data[n] && data[n] <= '9' {
		n++
	}
	if n > 9 || n > 1 && data[0] == '0' {
		return 0
	}
	return n
}

// The exact bytes of the shapes around the block index, and the two
// separators encoding/json escapes besides the control bytes.
var (
	textDeltaTail          = []byte(`"}}`)
	blockStartHead         = []byte(`{"type":"content_block_start","index":`)
	textBlockStartTail     = []byte(`,"content_block":{"type":"text","text":""}}`)
	thinkingBlockStartTail = []byte(`,"content_block":{"type":"thinking","thinking":"","signature":""}}`)
	lineSeparator          = []byte("\u2028")
	paragraphSeparator     = []byte("\u2029")
)

// plainTextDeltaShape is a text delta's exact bytes (textDeltaHead, a
// block index an int holds, textDeltaMid, a text of no quote, backslash,
// control byte or line/paragraph separator — encoding/json escapes those
// two besides jsonSpecial — then the closing quote and braces).
var plainTextDeltaShape = regexp.MustCompile(`^\{"type":"content_block_delta","index":(?:0|[1-9][0-9]{0,8}),"delta":\{"type":"text_delta","text":"[^"\\\x00-\x1f\x{2028}\x{2029}]*"\}\}$`)

// plainBlockStartShape is the exact start of a text or thinking block
// as Anthropic sends it (blockStartHead, a block index, then
// textBlockStartTail or thinkingBlockStartTail).
var plainBlockStartShape = regexp.MustCompile(`^\{"type":"content_block_start","index":(?:0|[1-9][0-9]{0,8}),"content_block":\{"type":"(?:text","text":""|thinking","thinking":"","signature":"")\}\}$`)
