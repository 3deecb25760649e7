package translate

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// A Responses client's view of a translated stream, shared by the stream
// tests and the fuzz targets: the events folded the way a client (the
// SDKs' stream accumulators, Codex) assembles the output items, with
// every protocol rule a strict client relies on checked on the way.

// responsesTestItem is one output item as a client assembles it: text
// for a message (output_text or refusal) or a reasoning summary,
// arguments or input for a tool call.
type responsesTestItem struct {
	kind, id, status, text, callID, name, namespace, args string
}

// responsesAccumulated is what a client ends up with.
type responsesAccumulated struct {
	id, model string
	items     []responsesTestItem
	open      int    // the open item's output_index, -1 for none
	part      string // the open item's part type ("" before its .added)
	terminal  string // the terminal event's type
	status    string // the terminal Response's status
	reason    string // its incomplete_details.reason
	errorCode string // its error.code
	errorMsg  string
	usage     *responsesOutUsage
	output    []json.RawMessage // the terminal Response's output
	trace     []string
}

// responsesTestEvent is any event's data, as a strict client reads it.
type responsesTestEvent struct {
	Type           string                 `json:"type"`
	SequenceNumber *int                   `json:"sequence_number"`
	Response       *responsesTestResponse `json:"response"`
	ItemID         string                 `json:"item_id"`
	OutputIndex    *int                   `json:"output_index"`
	ContentIndex   *int                   `json:"content_index"`
	SummaryIndex   *int                   `json:"summary_index"`
	Item           *responsesTestWireItem `json:"item"`
	Part           *responsesTestPart     `json:"part"`
	Delta          *string                `json:"delta"`
	Text           *string                `json:"text"`
	Refusal        *string                `json:"refusal"`
	Arguments      *string                `json:"arguments"`
	Input          *string                `json:"input"`
}

type responsesTestResponse struct {
	ID                string                  `json:"id"`
	Object            string                  `json:"object"`
	CreatedAt         int64                   `json:"created_at"`
	Status            string                  `json:"status"`
	Model             string                  `json:"model"`
	Output            []json.RawMessage       `json:"output"`
	Usage             *responsesOutUsage      `json:"usage"`
	Error             *responsesOutError      `json:"error"`
	IncompleteDetails *responsesOutIncomplete `json:"incomplete_details"`
}

type responsesTestWireItem struct {
	Type      string              `json:"type"`
	ID        string              `json:"id"`
	Status    string              `json:"status"`
	Role      string              `json:"role"`
	Content   []responsesTestPart `json:"content"`
	Summary   []responsesTestPart `json:"summary"`
	CallID    string              `json:"call_id"`
	Name      string              `json:"name"`
	Namespace string              `json:"namespace"`
	Arguments *string             `json:"arguments"`
	Input     *string             `json:"input"`
}

type responsesTestPart struct {
	Type    string  `json:"type"`
	Text    *string `json:"text"`
	Refusal *string `json:"refusal"`
}

// accumulateResponses parses client-facing Responses SSE ("event: NAME\n
// data: DATA\n\n") and folds it, failing on anything the protocol does
// not allow: data that is not JSON or whose type is not the event's
// name, a sequence_number other than the event's position, a first
// event other than response.created then response.in_progress, an
// item added out of order or while another is open, an event for an
// item that is not open, an empty delta, a .done whose text or item
// disagrees with the deltas, a terminal Response whose output is not
// the items done, and anything after the terminal event.
func accumulateResponses(t *testing.T, out []byte) responsesAccumulated {
	t.Helper()
	acc := responsesAccumulated{open: -1}
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
		if acc.terminal != "" {
			t.Fatalf("event %d after %s: %q", i, acc.terminal, events[i])
		}
		var ev responsesTestEvent
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("event %d: data is not JSON: %v: %s", i, err, data)
		}
		if ev.Type != name {
			t.Fatalf("event %d: data type %q under event %q", i, ev.Type, name)
		}
		if ev.SequenceNumber == nil || *ev.SequenceNumber != i {
			t.Fatalf("event %d: sequence_number %v", i, ev.SequenceNumber)
		}
		if i == 0 && name != "response.created" || i == 1 && name != "response.in_progress" {
			t.Fatalf("event %d is %s: the stream starts with response.created and response.in_progress", i, name)
		}
		acc.addEvent(t, i, name, &ev)
	}
	return acc
}

// addEvent folds event i in.
func (acc *responsesAccumulated) addEvent(t *testing.T, i int, name string, ev *responsesTestEvent) {
	t.Helper()
	switch name {
	case "response.created", "response.in_progress":
		r := ev.Response
		if r == nil || r.ID == "" || r.Object != "response" || r.Status != "in_progress" || r.Output == nil || len(r.Output) != 0 ||
			r.Usage != nil || r.CreatedAt == 0 || acc.id != "" && r.ID != acc.id {
			t.Fatalf("event %d: bad %s", i, name)
		}
		acc.id, acc.model = r.ID, r.Model
		if name == "response.created" {
			acc.trace = append(acc.trace, "created "+r.ID)
		}
	case "response.output_item.added":
		acc.addItem(t, i, ev)
	case "response.content_part.added", "response.reasoning_summary_part.added":
		acc.addPart(t, i, name, ev)
	case "response.output_text.delta", "response.refusal.delta", "response.reasoning_summary_text.delta",
		"response.function_call_arguments.delta", "response.custom_tool_call_input.delta":
		acc.addDelta(t, i, name, ev)
	case "response.output_text.done", "response.refusal.done", "response.reasoning_summary_text.done",
		"response.function_call_arguments.done", "response.custom_tool_call_input.done",
		"response.content_part.done", "response.reasoning_summary_part.done":
		acc.checkDone(t, i, name, ev)
	case "response.output_item.done":
		acc.doneItem(t, i, ev)
	case "response.completed", "response.incomplete", "response.failed":
		acc.end(t, i, name, ev)
	default:
		t.Fatalf("event %d: unknown event %q", i, name)
	}
}

// openItem is the open item, after checking that ev names it.
func (acc *responsesAccumulated) openItem(t *testing.T, i int, ev *responsesTestEvent) *responsesTestItem {
	t.Helper()
	if acc.open < 0 || ev.OutputIndex == nil || *ev.OutputIndex != acc.open || ev.ItemID != acc.items[acc.open].id {
		t.Fatalf("event %d: %s for an item that is not open (open %d)", i, ev.Type, acc.open)
	}
	return &acc.items[acc.open]
}

// addItem folds response.output_item.added in: the next index, nothing
// open, an in-progress item with nothing in it yet.
func (acc *responsesAccumulated) addItem(t *testing.T, i int, ev *responsesTestEvent) {
	t.Helper()
	it := ev.Item
	if ev.OutputIndex == nil || *ev.OutputIndex != len(acc.items) || acc.open >= 0 || it == nil || it.ID == "" {
		t.Fatalf("event %d: output_item.added out of sequence (items %d, open %d)", i, len(acc.items), acc.open)
	}
	item := responsesTestItem{kind: it.Type, id: it.ID, callID: it.CallID, name: it.Name, namespace: it.Namespace}
	switch it.Type {
	case "message":
		if it.Status != "in_progress" || it.Role != "assistant" || it.Content == nil || len(it.Content) != 0 {
			t.Fatalf("event %d: message item does not start empty and in progress", i)
		}
	case "reasoning":
		if it.Summary == nil || len(it.Summary) != 0 {
			t.Fatalf("event %d: reasoning item does not start with an empty summary", i)
		}
	case "function_call":
		if it.Status != "in_progress" || it.CallID == "" || it.Arguments == nil || *it.Arguments != "" {
			t.Fatalf("event %d: function_call item without call_id, or with arguments", i)
		}
	case "custom_tool_call":
		if it.Status != "in_progress" || it.CallID == "" || it.Name == "" || it.Input == nil || *it.Input != "" {
			t.Fatalf("event %d: custom_tool_call item without call_id or name, or with input", i)
		}
	default:
		t.Fatalf("event %d: item type %q", i, it.Type)
	}
	acc.open = len(acc.items)
	acc.part = ""
	acc.items = append(acc.items, item)
	line := "add " + strconv.Itoa(acc.open) + " " + it.Type
	if it.CallID != "" {
		line += " " + it.CallID + " " + it.Name
		if it.Namespace != "" {
			line += " ns=" + it.Namespace
		}
	}
	acc.trace = append(acc.trace, line)
}

// addPart folds a part's .added in: once, an empty part of the item's
// kind, index 0.
func (acc *responsesAccumulated) addPart(t *testing.T, i int, name string, ev *responsesTestEvent) {
	t.Helper()
	item := acc.openItem(t, i, ev)
	p := ev.Part
	if acc.part != "" || p == nil {
		t.Fatalf("event %d: a second part, or none", i)
	}
	switch {
	case item.kind == "message" && name == "response.content_part.added" && ev.ContentIndex != nil && *ev.ContentIndex == 0:
		if p.Type == "output_text" && p.Text != nil && *p.Text == "" || p.Type == "refusal" && p.Refusal != nil && *p.Refusal == "" {
			acc.part = p.Type
			return
		}
	case item.kind == "reasoning" && name == "response.reasoning_summary_part.added" && ev.SummaryIndex != nil && *ev.SummaryIndex == 0:
		if p.Type == "summary_text" && p.Text != nil && *p.Text == "" {
			acc.part = p.Type
			return
		}
	}
	t.Fatalf("event %d: %s does not fit a %s item", i, name, item.kind)
}

// responsesDeltaKinds maps each delta event to the item kind and part it
// belongs to.
var responsesDeltaKinds = map[string]string{
	"response.output_text.delta":             "message output_text",
	"response.refusal.delta":                 "message refusal",
	"response.reasoning_summary_text.delta":  "reasoning summary_text",
	"response.function_call_arguments.delta": "function_call ",
	"response.custom_tool_call_input.delta":  "custom_tool_call ",
}

// addDelta folds a delta in: inside the open item, of its kind, never
// empty.
func (acc *responsesAccumulated) addDelta(t *testing.T, i int, name string, ev *responsesTestEvent) {
	t.Helper()
	item := acc.openItem(t, i, ev)
	if responsesDeltaKinds[name] != item.kind+" "+acc.part || ev.Delta == nil || *ev.Delta == "" {
		t.Fatalf("event %d: %s empty or in a %s item (part %q)", i, name, item.kind, acc.part)
	}
	if item.kind == "function_call" || item.kind == "custom_tool_call" {
		item.args += *ev.Delta
	} else {
		item.text += *ev.Delta
	}
	acc.trace = append(acc.trace, strconv.Itoa(acc.open)+" "+name[len("response."):]+" "+*ev.Delta)
}

// checkDone checks a text's, arguments' or part's .done against what
// the deltas built.
func (acc *responsesAccumulated) checkDone(t *testing.T, i int, name string, ev *responsesTestEvent) {
	t.Helper()
	item := acc.openItem(t, i, ev)
	var got *string
	want := item.text
	switch name {
	case "response.output_text.done", "response.reasoning_summary_text.done":
		got = ev.Text
	case "response.refusal.done":
		got = ev.Refusal
	case "response.function_call_arguments.done":
		got, want = ev.Arguments, item.args
	case "response.custom_tool_call_input.done":
		got, want = ev.Input, item.args
	default:
		if p := ev.Part; p != nil && p.Type == acc.part {
			got = p.Text
			if p.Type == "refusal" {
				got = p.Refusal
			}
		}
	}
	if got == nil || *got != want {
		t.Fatalf("event %d: %s says %v, the deltas %q", i, name, got, want)
	}
}

// doneItem folds response.output_item.done in: the open item, whole,
// as the deltas built it.
func (acc *responsesAccumulated) doneItem(t *testing.T, i int, ev *responsesTestEvent) {
	t.Helper()
	it := ev.Item
	if it == nil || ev.OutputIndex == nil || *ev.OutputIndex != acc.open || acc.open < 0 || it.ID != acc.items[acc.open].id {
		t.Fatalf("event %d: output_item.done for an item that is not open", i)
	}
	item := &acc.items[acc.open]
	ok := it.Type == item.kind && it.CallID == item.callID && it.Name == item.name && it.Namespace == item.namespace
	switch it.Type {
	case "message":
		ok = ok && len(it.Content) == 1 && it.Content[0].Type == acc.part &&
			(acc.part == "output_text" && it.Content[0].Text != nil && *it.Content[0].Text == item.text ||
				acc.part == "refusal" && it.Content[0].Refusal != nil && *it.Content[0].Refusal == item.text)
	case "reasoning":
		ok = ok && len(it.Summary) == 1 && it.Summary[0].Text != nil && *it.Summary[0].Text == item.text
	case "function_call":
		ok = ok && it.Arguments != nil && *it.Arguments == item.args
	case "custom_tool_call":
		ok = ok && it.Input != nil && *it.Input == item.args
	}
	status := it.Status
	if it.Type == "reasoning" && status == "" {
		status = "completed"
	}
	if !ok || status != "completed" && status != "incomplete" {
		t.Fatalf("event %d: output_item.done %+v disagrees with the deltas %+v", i, it, *item)
	}
	item.status = status
	acc.trace = append(acc.trace, "done "+strconv.Itoa(acc.open)+" "+status)
	acc.open = -1
}

// end folds the terminal event in: nothing open, the Response's status
// fits the event, and its output is the items done.
func (acc *responsesAccumulated) end(t *testing.T, i int, name string, ev *responsesTestEvent) {
	t.Helper()
	r := ev.Response
	if r == nil || r.ID != acc.id || acc.open >= 0 && name != "response.failed" {
		t.Fatalf("event %d: %s with an item open, or of another response", i, name)
	}
	want := map[string]string{"response.completed": "completed", "response.incomplete": "incomplete", "response.failed": "failed"}[name]
	done := 0
	for j := 0; j < len(acc.items); j++ {
		if acc.items[j].status != "" {
			done++
		}
	}
	if r.Status != want || len(r.Output) != done || (name == "response.incomplete") != (r.IncompleteDetails != nil) ||
		(name == "response.failed") != (r.Error != nil) {
		t.Fatalf("event %d: %s with status %q, %d output items (%d done), incomplete_details %v, error %v",
			i, name, r.Status, len(r.Output), done, r.IncompleteDetails, r.Error)
	}
	for j := 0; j < len(r.Output); j++ {
		var it responsesTestWireItem
		if err := json.Unmarshal(r.Output[j], &it); err != nil || it.ID != acc.items[j].id {
			t.Fatalf("event %d: output %d is not item %s: %s", i, j, acc.items[j].id, r.Output[j])
		}
	}
	acc.terminal, acc.status, acc.usage, acc.output = name, r.Status, r.Usage, r.Output
	line := name[len("response."):]
	if r.IncompleteDetails != nil {
		acc.reason = r.IncompleteDetails.Reason
		line += " " + acc.reason
	}
	if r.Error != nil {
		acc.errorCode, acc.errorMsg = r.Error.Code, r.Error.Message
		line += " " + acc.errorCode
	}
	if r.Usage != nil {
		line += " in=" + strconv.FormatInt(r.Usage.InputTokens, 10) + " out=" + strconv.FormatInt(r.Usage.OutputTokens, 10) +
			" cached=" + strconv.FormatInt(r.Usage.InputTokensDetails.CachedTokens, 10)
	}
	acc.trace = append(acc.trace, line)
}
