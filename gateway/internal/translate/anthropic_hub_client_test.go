package translate

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// An Anthropic client's view of a translated stream, shared by the
// stream tests and the fuzz targets: the events folded the way the
// Anthropic SDK accumulates a message, with every protocol rule a strict
// client relies on checked on the way.

// anthropicOutTestBlock is one content block as a client assembles it.
type anthropicOutTestBlock struct {
	kind, text, id, name, input string
}

// anthropicOutAccumulated is what a client ends up with.
type anthropicOutAccumulated struct {
	id, model    string
	startInput   int64
	blocks       []anthropicOutTestBlock
	open         int // the open block's index, -1 for none
	stopReason   string
	usage        anthropicOutUsage
	stopped      bool
	errorType    string
	errorMessage string
	trace        []string
}

// anthropicOutTestEvent is any event's data, as a strict client reads
// it.
type anthropicOutTestEvent struct {
	Type    string `json:"type"`
	Index   *int   `json:"index"`
	Message *struct {
		ID           string             `json:"id"`
		Type         string             `json:"type"`
		Role         string             `json:"role"`
		Model        string             `json:"model"`
		Content      []json.RawMessage  `json:"content"`
		StopReason   json.RawMessage    `json:"stop_reason"`
		StopSequence json.RawMessage    `json:"stop_sequence"`
		Usage        *anthropicOutUsage `json:"usage"`
	} `json:"message"`
	ContentBlock *struct {
		Type      string          `json:"type"`
		Text      *string         `json:"text"`
		Thinking  *string         `json:"thinking"`
		Signature *string         `json:"signature"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
	} `json:"content_block"`
	Delta *struct {
		Type         string          `json:"type"`
		Text         *string         `json:"text"`
		Thinking     *string         `json:"thinking"`
		PartialJSON  *string         `json:"partial_json"`
		StopReason   string          `json:"stop_reason"`
		StopSequence json.RawMessage `json:"stop_sequence"`
	} `json:"delta"`
	Usage *anthropicOutUsage `json:"usage"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// accumulateAnthropicOut parses client-facing Anthropic SSE and folds it
// the way the Anthropic SDK's Message.Accumulate does, failing on
// anything the protocol does not allow: a first event other than
// message_start then ping, a block index out of sequence, two blocks
// open at once, a delta outside its block or of another block's kind, an
// empty delta, a message_delta with a block open, anything after
// message_stop or an error, data that is not JSON or whose type is not
// the event's name.
func accumulateAnthropicOut(t *testing.T, out []byte) anthropicOutAccumulated {
	t.Helper()
	acc := anthropicOutAccumulated{open: -1}
	if len(out) == 0 {
		return acc
	}
	if !bytes.HasSuffix(out, []byte("\n\n")) {
		t.Fatalf("output does not end with a blank line: %q", out)
	}
	events := strings.Split(strings.TrimSuffix(string(out), "\n\n"), "\n\n")
	for i := 0; i < len(events); i++ {
		lines := strings.Split(events[i], "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "event: ") || !strings.HasPrefix(lines[1], "data: ") {
			t.Fatalf("event %d is not an event line and a data line: %q", i, events[i])
		}
		name, data := lines[0][len("event: "):], lines[1][len("data: "):]
		if acc.stopped || acc.errorType != "" {
			t.Fatalf("event %d after the end of the stream: %q", i, events[i])
		}
		var ev anthropicOutTestEvent
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("event %d: data is not JSON: %v: %s", i, err, data)
		}
		if ev.Type != name {
			t.Fatalf("event %d: data type %q under event %q", i, ev.Type, name)
		}
		if name != "error" && (i == 0) != (name == "message_start") || i == 1 && name != "ping" && name != "error" {
			t.Fatalf("event %d is %s: the stream starts with message_start and ping", i, name)
		}
		acc.addEvent(t, i, name, &ev)
	}
	return acc
}

// addEvent folds event i in.
func (acc *anthropicOutAccumulated) addEvent(t *testing.T, i int, name string, ev *anthropicOutTestEvent) {
	t.Helper()
	switch name {
	case "message_start":
		m := ev.Message
		if m == nil || m.ID == "" || m.Type != "message" || m.Role != "assistant" || m.Content == nil || len(m.Content) != 0 ||
			string(m.StopReason) != "null" || string(m.StopSequence) != "null" || m.Usage == nil || m.Usage.OutputTokens > 1 {
			t.Fatalf("event %d: bad message_start", i)
		}
		acc.id, acc.model, acc.startInput = m.ID, m.Model, m.Usage.InputTokens
		acc.trace = append(acc.trace, "start "+m.ID+" in="+strconv.FormatInt(m.Usage.InputTokens, 10))
	case "ping":
		acc.trace = append(acc.trace, "ping")
	case "content_block_start":
		acc.startBlock(t, i, ev)
	case "content_block_delta":
		acc.addDelta(t, i, ev)
	case "content_block_stop":
		if ev.Index == nil || *ev.Index != acc.open {
			t.Fatalf("event %d: content_block_stop of a block that is not open (open %d)", i, acc.open)
		}
		acc.trace = append(acc.trace, "close "+strconv.Itoa(acc.open))
		acc.open = -1
	case "message_delta":
		if acc.open >= 0 || acc.stopReason != "" || ev.Delta == nil || ev.Delta.StopReason == "" ||
			string(ev.Delta.StopSequence) != "null" || ev.Usage == nil {
			t.Fatalf("event %d: message_delta with a block open, repeated, or without stop_reason, stop_sequence or usage", i)
		}
		acc.stopReason, acc.usage = ev.Delta.StopReason, *ev.Usage
		acc.trace = append(acc.trace, "delta "+acc.stopReason+" in="+strconv.FormatInt(acc.usage.InputTokens, 10)+
			" out="+strconv.FormatInt(acc.usage.OutputTokens, 10)+" cache="+strconv.FormatInt(acc.usage.CacheReadInputTokens, 10))
	case "message_stop":
		if acc.stopReason == "" {
			t.Fatalf("event %d: message_stop before message_delta", i)
		}
		acc.stopped = true
		acc.trace = append(acc.trace, "stop")
	case "error":
		if ev.Error == nil || ev.Error.Type == "" || ev.Error.Message == "" {
			t.Fatalf("event %d: error event without type and message", i)
		}
		acc.errorType, acc.errorMessage = ev.Error.Type, ev.Error.Message
		acc.trace = append(acc.trace, "error "+acc.errorType)
	default:
		t.Fatalf("event %d: unknown event %q", i, name)
	}
}

// startBlock folds a content_block_start in: the next index, no block
// open, an empty text, thinking or tool_use block.
func (acc *anthropicOutAccumulated) startBlock(t *testing.T, i int, ev *anthropicOutTestEvent) {
	t.Helper()
	b := ev.ContentBlock
	if ev.Index == nil || *ev.Index != len(acc.blocks) || acc.open >= 0 || b == nil || acc.stopReason != "" {
		t.Fatalf("event %d: content_block_start out of sequence (blocks %d, open %d)", i, len(acc.blocks), acc.open)
	}
	switch b.Type {
	case "text":
		if b.Text == nil || *b.Text != "" {
			t.Fatalf("event %d: text block does not start empty", i)
		}
	case "thinking":
		if b.Thinking == nil || *b.Thinking != "" || b.Signature == nil {
			t.Fatalf("event %d: thinking block does not start empty with a signature", i)
		}
	case "tool_use":
		if b.ID == "" || string(b.Input) != "{}" {
			t.Fatalf("event %d: tool_use block without id or with input %s", i, b.Input)
		}
	default:
		t.Fatalf("event %d: block type %q", i, b.Type)
	}
	acc.open = *ev.Index
	acc.blocks = append(acc.blocks, anthropicOutTestBlock{kind: b.Type, id: b.ID, name: b.Name})
	line := "open " + strconv.Itoa(acc.open) + " " + b.Type
	if b.Type == "tool_use" {
		line += " " + b.ID + " " + b.Name
	}
	acc.trace = append(acc.trace, line)
}

// addDelta folds a content_block_delta in: inside the open block, of
// its kind, never empty.
func (acc *anthropicOutAccumulated) addDelta(t *testing.T, i int, ev *anthropicOutTestEvent) {
	t.Helper()
	d := ev.Delta
	if ev.Index == nil || *ev.Index != acc.open || d == nil {
		t.Fatalf("event %d: delta outside the open block %d", i, acc.open)
	}
	b := &acc.blocks[acc.open]
	var piece *string
	mark := ""
	switch d.Type {
	case "text_delta":
		piece, mark = d.Text, "text"
	case "thinking_delta":
		piece, mark = d.Thinking, "thinking"
	case "input_json_delta":
		piece, mark = d.PartialJSON, "tool_use"
	}
	if piece == nil || *piece == "" || mark != b.kind {
		t.Fatalf("event %d: %s delta empty or in a %s block", i, d.Type, b.kind)
	}
	if b.kind == "tool_use" {
		b.input += *piece
	} else {
		b.text += *piece
	}
	acc.trace = append(acc.trace, strconv.Itoa(acc.open)+" "+d.Type+" "+*piece)
}
