package gateway

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
)

// Anthropic Messages response → OpenAI chat completion, whole
// (anthropicChatResponse) or as a stream of chunks (newAnthropicStream),
// per wire-formats §5.3–§5.6. Thinking and redacted_thinking blocks are
// dropped in both: OpenAI's chat format has no standard field for them,
// and completion_tokens already counts them. Block types this
// translator does not know (server tools, citations) are ignored.

// anthropicWireResponse is a Messages API response, also the "message"
// of a message_start event.
type anthropicWireResponse struct {
	ID         string                 `json:"id"`
	Type       string                 `json:"type"`
	Content    []anthropicWireContent `json:"content"`
	StopReason *string                `json:"stop_reason"`
	Usage      *anthropicWireUsage    `json:"usage"`
	Error      *anthropicWireError    `json:"error"`
}

// anthropicWireContent is a response content block.
type anthropicWireContent struct {
	Type  string          `json:"type"`
	Text  string          `json:"text"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// anthropicWireUsage keeps absent counts apart from zero ones: a
// message_delta carries only the counts that changed.
type anthropicWireUsage struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
}

type anthropicWireError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// anthropicWireEvent is any streaming event's data; the type decides
// which fields are set.
type anthropicWireEvent struct {
	Type         string                 `json:"type"`
	Message      *anthropicWireResponse `json:"message"`
	Index        int                    `json:"index"`
	ContentBlock *anthropicWireContent  `json:"content_block"`
	Delta        *anthropicWireDelta    `json:"delta"`
	Usage        *anthropicWireUsage    `json:"usage"`
	Error        *anthropicWireError    `json:"error"`
}

type anthropicWireDelta struct {
	Type        string  `json:"type"`
	Text        string  `json:"text"`
	PartialJSON string  `json:"partial_json"`
	StopReason  *string `json:"stop_reason"`
}

// anthropicFinishReason maps a stop_reason to a finish_reason; unknown
// or missing reasons read as a normal stop.
func anthropicFinishReason(stopReason *string) string {
	if stopReason == nil {
		return "stop"
	}
	switch *stopReason {
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "tool_use":
		return "tool_calls"
	case "refusal":
		return "content_filter"
	}
	return "stop"
}

func anthropicBadResponse(what string, cause error) *apiError {
	e := newError(http.StatusBadGateway, "server_error", "upstream_bad_response",
		"anthropic-type provider sent a malformed "+what)
	e.cause = cause
	return e
}

// add folds reported counts into u; absent counts leave u unchanged.
func (w *anthropicWireUsage) addTo(u *usage) {
	if w == nil {
		return
	}
	u.reported = true
	if w.InputTokens != nil {
		u.promptTokens = *w.InputTokens
	}
	if w.CacheCreationInputTokens != nil {
		u.cacheCreationTokens = *w.CacheCreationInputTokens
	}
	if w.CacheReadInputTokens != nil {
		u.cacheReadTokens = *w.CacheReadInputTokens
	}
	if w.OutputTokens != nil {
		u.completionTokens = *w.OutputTokens
	}
}

// anthropicUsageTotals turns the raw fold (promptTokens holding
// input_tokens only) into the gateway's usage, where promptTokens
// includes the cache counts.
func anthropicUsageTotals(raw usage) usage {
	raw.promptTokens += raw.cacheCreationTokens + raw.cacheReadTokens
	return raw
}

// anthropicChatResponse translates a non-streaming Messages response
// into an OpenAI chat.completion and reports its usage.
func anthropicChatResponse(body []byte, tc translateContext) ([]byte, usage, *apiError) {
	var msg anthropicWireResponse
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, usage{}, anthropicBadResponse("response (not a JSON object)", nil)
	}
	if err := json.Unmarshal(trimmed, &msg); err != nil {
		return nil, usage{}, anthropicBadResponse("response", err)
	}
	if msg.Type == "error" || msg.Error != nil {
		e := anthropicStreamError(msg.Error)
		e.upstream = embedUpstreamBody(trimmed)
		return nil, usage{}, e
	}
	if msg.Type != "message" && (msg.Type != "" || msg.Content == nil) {
		return nil, usage{}, anthropicBadResponse("response (not a message)", nil)
	}
	var text strings.Builder
	hasText := false
	var calls []hubToolCall
	for i := 0; i < len(msg.Content); i++ {
		block := msg.Content[i]
		switch block.Type {
		case "text":
			text.WriteString(block.Text)
			hasText = true
		case "tool_use":
			calls = append(calls, hubToolCall{ID: block.ID, Type: "function",
				Function: hubFunction{Name: block.Name, Arguments: compactArguments(block.Input)}})
		}
	}
	message := hubMessage{Role: "assistant", ToolCalls: calls}
	if hasText || len(calls) == 0 {
		s := text.String()
		message.Content = &s
	}
	id := msg.ID
	if id == "" {
		id = tc.idFallback
	}
	out := hubChatCompletion{
		ID:      id,
		Object:  "chat.completion",
		Created: tc.created,
		Model:   tc.requestedModel,
		Choices: []hubChoice{{Index: 0, Message: message, FinishReason: anthropicFinishReason(msg.StopReason)}},
	}
	var u usage
	msg.Usage.addTo(&u)
	u = anthropicUsageTotals(u)
	if u.reported {
		out.Usage = newHubUsage(u)
	}
	data := encodeJSON(&out)
	if data == nil {
		return nil, usage{}, anthropicBadResponse("response", nil)
	}
	return data, u, nil
}

// anthropicStreamError is the error an Anthropic "error" payload
// becomes: a 502 naming Anthropic's error type and message.
func anthropicStreamError(detail *anthropicWireError) *apiError {
	msg := "anthropic-type provider reported an error"
	if detail != nil && detail.Type != "" {
		msg += ": " + detail.Type
		if detail.Message != "" {
			msg += ": " + detail.Message
		}
	}
	return newError(http.StatusBadGateway, "server_error", "upstream_error", msg)
}

// anthropicToolResultText flattens a tool_result's content (a string or
// an array of blocks, whose text blocks are joined with newlines) into
// the plain string an OpenAI tool message needs, prefixed "Error: "
// when isError.
func anthropicToolResultText(raw json.RawMessage, isError bool) string {
	text := ""
	if !isJSONNull(raw) && raw[0] == '"' {
		_ = json.Unmarshal(raw, &text)
	} else if !isJSONNull(raw) {
		var blocks []anthropicWireContent
		if json.Unmarshal(raw, &blocks) == nil {
			var parts []string
			for i := 0; i < len(blocks); i++ {
				if blocks[i].Type == "text" {
					parts = append(parts, blocks[i].Text)
				}
			}
			text = strings.Join(parts, "\n")
		}
	}
	if isError {
		return "Error: " + text
	}
	return text
}

// anthropicStream translates one Anthropic event stream; it is created
// per request and never shared.
type anthropicStream struct {
	tc         translateContext
	id         string
	started    bool        // the role chunk went out
	toolIndex  map[int]int // Anthropic block index → tool_calls index
	nextTool   int
	finishSent bool
	stopped    bool // message_stop arrived; the stream is complete
	raw        usage
}

var _ streamTranslator = (*anthropicStream)(nil)

// newAnthropicStream returns the translator for one Anthropic stream.
func newAnthropicStream(tc translateContext) streamTranslator {
	return &anthropicStream{tc: tc, id: tc.idFallback, toolIndex: map[int]int{}}
}

// anthropicEventType names an event by its "event:" field, or by the
// data's "type" when the field is missing.
func anthropicEventType(ev sseEvent) string {
	if ev.name != "" {
		return ev.name
	}
	var head struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(ev.data, &head)
	return head.Type
}

func (s *anthropicStream) event(ev sseEvent, out []streamPayload) ([]streamPayload, *apiError) {
	if s.stopped {
		return out, nil
	}
	kind := anthropicEventType(ev)
	switch kind {
	case "message_start", "content_block_start", "content_block_delta", "message_delta", "error":
	case "message_stop":
		return s.stop(out), nil
	default: // ping, content_block_stop and unknown events
		return out, nil
	}
	var data anthropicWireEvent
	if err := json.Unmarshal(ev.data, &data); err != nil {
		return out, anthropicBadResponse(kind+" event", err)
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
	e.upstream = embedUpstreamBody(ev.data)
	return out, e
}

// start appends the role chunk to out unless that already went out.
func (s *anthropicStream) start(out []streamPayload) []streamPayload {
	if s.started {
		return out
	}
	s.started = true
	empty := ""
	return append(out, s.chunk(hubDelta{Role: "assistant", Content: &empty}, nil))
}

func (s *anthropicStream) blockDelta(out []streamPayload, data *anthropicWireEvent) ([]streamPayload, *apiError) {
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

func (s *anthropicStream) finishChunk(out []streamPayload, reason string) []streamPayload {
	s.finishSent = true
	return append(s.start(out), s.chunk(hubDelta{}, &reason))
}

// stop ends the stream: the finish chunk if message_delta never sent
// one, then the usage chunk when the client asked for it.
func (s *anthropicStream) stop(out []streamPayload) []streamPayload {
	if !s.finishSent {
		out = s.finishChunk(out, "stop")
	}
	if s.tc.includeUsage {
		out = append(out, hubUsagePayload(s.tc, s.id, newHubUsage(s.usage())))
	}
	s.stopped = true
	return out
}

// chunk is the payload of a chunk carrying delta.
func (s *anthropicStream) chunk(delta hubDelta, finish *string) streamPayload {
	return hubDeltaPayload(s.tc, s.id, delta, finish)
}

func (s *anthropicStream) finish(out []streamPayload) ([]streamPayload, *apiError) {
	if s.stopped {
		return out, nil
	}
	return out, newError(http.StatusBadGateway, "server_error", "upstream_stream_truncated",
		"stream from anthropic-type provider ended before message_stop")
}

func (s *anthropicStream) usage() usage {
	return anthropicUsageTotals(s.raw)
}
