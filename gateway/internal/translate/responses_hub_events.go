package translate

import (
	"encoding/json"
	"strconv"
)

// The events of the Responses stream translator (responses_hub_stream.go):
// how an output item opens and closes, and the payloads. Each item's
// events, by kind (output_index is the item's position, content_index
// and summary_index always 0: an item has one part):
//
//	message, output_text   output_item.added, content_part.added,
//	                       output_text.delta…, output_text.done,
//	                       content_part.done, output_item.done
//	message, refusal       the same with refusal.delta… and refusal.done
//	reasoning              output_item.added,
//	                       reasoning_summary_part.added,
//	                       reasoning_summary_text.delta…,
//	                       reasoning_summary_text.done,
//	                       reasoning_summary_part.done, output_item.done
//	function_call          output_item.added (arguments ""),
//	                       function_call_arguments.delta…,
//	                       function_call_arguments.done, output_item.done
//	custom_tool_call       output_item.added (input ""),
//	                       custom_tool_call_input.delta (once, whole),
//	                       custom_tool_call_input.done, output_item.done
//
// (each name prefixed with "response."). output_item.done carries the
// whole item, status "completed" ("incomplete" for the last item of an
// incomplete response), and the terminal event's Response holds those
// items.

// responsesEventPayload numbers ev and encodes it as the payload named
// by its type.
func responsesEventPayload(s *responsesOutStream, ev *responsesOutEvent) Payload {
	ev.SequenceNumber = s.seq
	s.seq++
	return Payload{Name: ev.Type, Data: encodeJSON(ev)}
}

// responsesOutOpen sends the first open item's output_item.added and
// its part's .added, then what was buffered for it.
func responsesOutOpen(s *responsesOutStream, out []Payload) []Payload {
	index := s.head
	seg := &s.segs[index]
	s.headOpen = true
	var item responsesOutItem
	switch seg.kind {
	case responsesSegText, responsesSegRefusal:
		item = responsesMessageItem(responsesItemID("msg_", s.base, index), "in_progress", nil)
	case responsesSegReasoning:
		item = responsesReasoningItem(responsesItemID("rs_", s.base, index), nil, "")
	default:
		seg.custom = s.in.Custom[seg.name]
		item = responsesToolItem(seg.name, seg.callID, s.base, index, json.RawMessage(`""`), "in_progress", s.in)
	}
	seg.itemID = item.ID
	seg.quotedID = quoteJSON(item.ID)
	out = append(out, responsesEventPayload(s, &responsesOutEvent{Type: "response.output_item.added",
		OutputIndex: &index, Item: json.RawMessage(encodeJSON(&item))}))
	empty := json.RawMessage(`""`)
	zero := 0
	switch seg.kind {
	case responsesSegText:
		part := responsesTextPart(empty)
		out = append(out, responsesEventPayload(s, &responsesOutEvent{Type: "response.content_part.added",
			ItemID: seg.itemID, OutputIndex: &index, ContentIndex: &zero, Part: &part}))
	case responsesSegRefusal:
		part := responsesRefusalPart(empty)
		out = append(out, responsesEventPayload(s, &responsesOutEvent{Type: "response.content_part.added",
			ItemID: seg.itemID, OutputIndex: &index, ContentIndex: &zero, Part: &part}))
	case responsesSegReasoning:
		part := responsesOutPart{Type: "summary_text", Text: empty}
		out = append(out, responsesEventPayload(s, &responsesOutEvent{Type: "response.reasoning_summary_part.added",
			ItemID: seg.itemID, OutputIndex: &index, SummaryIndex: &zero, Part: &part}))
	}
	if len(seg.data) > seg.sent && !seg.custom {
		out = append(out, responsesDeltaPayload(s, index, seg.data[seg.sent:]))
		seg.sent = len(seg.data)
	}
	return out
}

// responsesOutCloseItem sends the first open item's closing events,
// the whole item last, and moves on to the next.
func responsesOutCloseItem(s *responsesOutStream, out []Payload) []Payload {
	index := s.head
	seg := &s.segs[index]
	status := "completed"
	if index == len(s.segs)-1 && responsesIncompleteReason(s.finish) != "" {
		status = "incomplete"
	}
	text := responsesQuoted(seg.data)
	zero := 0
	var item responsesOutItem
	switch seg.kind {
	case responsesSegText, responsesSegRefusal:
		part := responsesTextPart(text)
		done := &responsesOutEvent{Type: "response.output_text.done", ItemID: seg.itemID, OutputIndex: &index,
			ContentIndex: &zero, Text: text, Logprobs: json.RawMessage("[]")}
		if seg.kind == responsesSegRefusal {
			part = responsesRefusalPart(text)
			done = &responsesOutEvent{Type: "response.refusal.done", ItemID: seg.itemID, OutputIndex: &index,
				ContentIndex: &zero, Refusal: text}
		}
		out = append(out, responsesEventPayload(s, done), responsesEventPayload(s, &responsesOutEvent{
			Type: "response.content_part.done", ItemID: seg.itemID, OutputIndex: &index, ContentIndex: &zero, Part: &part}))
		item = responsesMessageItem(seg.itemID, status, []responsesOutPart{part})
	case responsesSegReasoning:
		part := responsesOutPart{Type: "summary_text", Text: text}
		out = append(out, responsesEventPayload(s, &responsesOutEvent{Type: "response.reasoning_summary_text.done",
			ItemID: seg.itemID, OutputIndex: &index, SummaryIndex: &zero, Text: text}),
			responsesEventPayload(s, &responsesOutEvent{Type: "response.reasoning_summary_part.done",
				ItemID: seg.itemID, OutputIndex: &index, SummaryIndex: &zero, Part: &part}))
		item = responsesReasoningItem(seg.itemID, text, "")
		if status != "completed" {
			item.Status = status
		}
	default:
		out, text = responsesOutCloseCall(s, index, text, out)
		item = responsesToolItem(seg.name, seg.callID, s.base, index, text, status, s.in)
	}
	seg.item = json.RawMessage(encodeJSON(&item))
	seg.data = nil
	out = append(out, responsesEventPayload(s, &responsesOutEvent{Type: "response.output_item.done",
		OutputIndex: &index, Item: seg.item}))
	s.head++
	s.headOpen = false
	return out
}

// responsesOutCloseCall sends a tool call's last delta and its .done
// event: a custom tool's input, whole, or the function's arguments
// ("{}" when none came). It returns the arguments as an encoded string.
func responsesOutCloseCall(s *responsesOutStream, index int, args json.RawMessage, out []Payload) ([]Payload, json.RawMessage) {
	seg := &s.segs[index]
	if seg.custom {
		input := quoteJSON(responsesCustomInput(jsonStringValue(args)))
		if len(input) > 2 {
			out = append(out, responsesEventPayload(s, &responsesOutEvent{Type: "response.custom_tool_call_input.delta",
				ItemID: seg.itemID, OutputIndex: &index, Delta: input}))
		}
		return append(out, responsesEventPayload(s, &responsesOutEvent{Type: "response.custom_tool_call_input.done",
			ItemID: seg.itemID, OutputIndex: &index, Input: input})), args
	}
	if len(seg.data) == 0 {
		args = json.RawMessage(`"{}"`)
		out = append(out, responsesDeltaPayload(s, index, []byte("{}")))
	}
	return append(out, responsesEventPayload(s, &responsesOutEvent{Type: "response.function_call_arguments.done",
		ItemID: seg.itemID, OutputIndex: &index, Arguments: args})), args
}

// responsesDeltaPayload is the delta event adding text (JSON string
// contents) to the open item at index, built from bytes: the text is
// passed on as the hub sent it.
func responsesDeltaPayload(s *responsesOutStream, index int, text []byte) Payload {
	seg := &s.segs[index]
	kind, extra, tail := "response.output_text.delta", `,"content_index":0`, `","logprobs":[]}`
	switch seg.kind {
	case responsesSegRefusal:
		kind, tail = "response.refusal.delta", `"}`
	case responsesSegReasoning:
		kind, extra, tail = "response.reasoning_summary_text.delta", `,"summary_index":0`, `"}`
	case responsesSegTool:
		kind, extra, tail = "response.function_call_arguments.delta", "", `"}`
	}
	data := make([]byte, 0, len(text)+len(kind)+len(seg.quotedID)+96)
	data = append(data, `{"type":"`...)
	data = append(data, kind...)
	data = append(data, `","sequence_number":`...)
	data = strconv.AppendInt(data, int64(s.seq), 10)
	data = append(data, `,"item_id":`...)
	data = append(data, seg.quotedID...)
	data = append(data, `,"output_index":`...)
	data = strconv.AppendInt(data, int64(index), 10)
	data = append(data, extra...)
	data = append(data, `,"delta":"`...)
	data = append(data, text...)
	data = append(data, tail...)
	s.seq++
	return Payload{Name: kind, Data: data}
}
