package mockupstream

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// The OpenAI Responses API: POST /v1/responses, plain or streaming
// ("stream": true), in the OpenAI error envelope. A reply has the usual
// text as one message output item, or a tool call as a function_call item
// (after a message item with ToolTurnPreamble for a scripted ToolTurn
// call). The tool call comes from ToolTurn, from X-Mock-Tool-Call: 1, from
// tool_choice "required" or {"type":"function"}, or from a last user
// message that mentions the weather while tools are declared (as on the
// Anthropic and Gemini routes); its arguments are ToolTurn.Input or
// ToolArguments. max_output_tokens cuts the reply to that many chunks and
// makes it "incomplete" (incomplete_details.reason "max_output_tokens").
//
// A stream is the full event sequence Codex CLI needs: response.created,
// response.in_progress, then per output item response.output_item.added,
// response.content_part.added, response.output_text.delta (a chunk
// each), response.output_text.done, response.content_part.done (for a
// function_call: response.function_call_arguments.delta and .done),
// response.output_item.done, and last response.completed (or
// response.incomplete) with usage. Every event is "event: <type>" plus
// "data: <json>" with a sequence_number; no [DONE]. X-Mock-Error-After
// replaces an event with response.failed.

// ResponsesFailedMessage is error.message of the response.failed event
// that X-Mock-Error-After sends.
const ResponsesFailedMessage = "mock: injected mid-stream error"

// responsesReply is a Responses answer: its output items and usage.
type responsesReply struct {
	id, model string
	created   string
	items     []responsesOutput
	status    string // completed or incomplete
	input     int
	output    int
}

// responsesOutput is one output item: a message (chunks) or a function
// call (args pieces).
type responsesOutput struct {
	id       string
	chunks   []string // message text, in delta-sized pieces
	callID   string   // function_call only
	name     string
	args     []string
	complete bool // the item's own status: completed, else incomplete
}

func (o responsesOutput) isCall() bool { return o.callID != "" }

func (o responsesOutput) status() string {
	if o.complete {
		return "completed"
	}
	return "incomplete"
}

// partJSON is the output_text part with text.
func partJSON(text string) string {
	return `{"type":"output_text","text":` + string(jsonString(text)) + `,"annotations":[],"logprobs":[]}`
}

// itemJSON is the item as output_item.done and the response carry it;
// with empty, as output_item.added does (no content, no arguments, in
// progress).
func (o responsesOutput) itemJSON(empty bool) string {
	status := o.status()
	if empty {
		status = "in_progress"
	}
	if o.isCall() {
		args := ""
		if !empty {
			args = strings.Join(o.args, "")
		}
		return `{"type":"function_call","id":` + string(jsonString(o.id)) + `,"call_id":` + string(jsonString(o.callID)) +
			`,"name":` + string(jsonString(o.name)) + `,"arguments":` + string(jsonString(args)) + `,"status":"` + status + `"}`
	}
	content := "[]"
	if !empty {
		content = "[" + partJSON(strings.Join(o.chunks, "")) + "]"
	}
	return `{"type":"message","id":` + string(jsonString(o.id)) + `,"status":"` + status + `","role":"assistant","content":` + content + `}`
}

// responseJSON is the response object with status and, unless
// inProgress, its output and usage.
func (r responsesReply) responseJSON(status string, inProgress bool) string {
	var b strings.Builder
	b.WriteString(`{"id":` + string(jsonString(r.id)) + `,"object":"response","created_at":` + r.created)
	b.WriteString(`,"status":"` + status + `","error":null,"incomplete_details":`)
	if status == "incomplete" && !inProgress {
		b.WriteString(`{"reason":"max_output_tokens"}`)
	} else {
		b.WriteString("null")
	}
	b.WriteString(`,"model":` + string(jsonString(r.model)) + `,"output":[`)
	if !inProgress {
		for i, it := range r.items {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(it.itemJSON(false))
		}
	}
	b.WriteString(`],"parallel_tool_calls":true,"previous_response_id":null,"store":false,"tools":[],"usage":`)
	if inProgress {
		b.WriteString("null")
	} else {
		b.WriteString(r.usageJSON())
	}
	b.WriteString(`,"metadata":{}}`)
	return b.String()
}

func (r responsesReply) usageJSON() string {
	return `{"input_tokens":` + strconv.Itoa(r.input) + `,"input_tokens_details":{"cached_tokens":0},"output_tokens":` +
		strconv.Itoa(r.output) + `,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":` + strconv.Itoa(r.input+r.output) + `}`
}

func (s *Server) serveResponses(w http.ResponseWriter, r *http.Request, body []byte, seq string) {
	req, msg, param := parseResponsesRequest(body)
	if msg != "" {
		writeResponsesError(w, http.StatusBadRequest, msg, param)
		return
	}
	if s.opts.StrictModels && !s.knownModel(req.model) {
		writeError(w, http.StatusNotFound, "The model '"+req.model+"' does not exist", "model_not_found")
		return
	}
	p, bad := s.params(r)
	if bad != "" {
		writeError(w, http.StatusBadRequest, bad, "")
		return
	}
	reply, ok := s.responsesReply(req, p, seq)
	if !ok {
		writeError(w, http.StatusInternalServerError, "mock: Options.ToolTurn.Input is not a JSON object", "")
		return
	}
	if !req.stream {
		writeJSON(w, http.StatusOK, []byte(reply.responseJSON(reply.status, false)))
		return
	}
	rc := startSSE(w)
	events := reply.events()
	failAt := p.errorAfter
	if failAt < 0 {
		failAt = 0
	}
	failed := responsesEvent("response.failed", failAt, `"response":`+strings.Replace(reply.responseJSON("failed", true),
		`"error":null`, `"error":{"code":"server_error","message":`+string(jsonString(ResponsesFailedMessage))+`}`, 1))
	playEvents(w, r, rc, p, events, failed)
}

// responsesReply decides the answer to req: the scripted turn first, then
// a tool call, else the usual text cut to max_output_tokens. It reports
// false when the scripted call's Input is unusable.
func (s *Server) responsesReply(req responsesRequest, p streamParams, seq string) (responsesReply, bool) {
	reply := responsesReply{id: "resp_mock_" + seq, model: req.model, created: s.created, status: "completed", input: req.promptWords}
	message := responsesOutput{id: "msg_mock_" + seq, complete: true}
	call := responsesOutput{id: "fc_mock_" + seq, callID: "call_mock_" + seq, complete: true}

	choice := map[string]string{"required": "any", "function": "tool", "none": "none"}[req.toolChoice]
	tool, isTool := toolCallFor(req.tools, choice, req.choiceName, req.lastUser(), p.toolCall)
	text := buildReply(p.chunks, req.maxTokens, nil)
	switch step, answer := s.opts.ToolTurn.decide(req.turn, req.tools); step {
	case turnCall:
		if s.turnInput == "" {
			return reply, false
		}
		message.chunks = []string{ToolTurnPreamble}
		call.name, call.args = s.opts.ToolTurn.Name, splitPieces(s.turnInput, 3)
		reply.items = []responsesOutput{message, call}
		reply.output = ToolOutputTokens
		return reply, true
	case turnAnswer:
		isTool = false
		text = textReply{chunks: textChunks(answer), reason: "end"}
	}
	if isTool {
		call.name, call.args = tool, ToolArgumentPieces()[1:]
		reply.items = []responsesOutput{call}
		reply.output = ToolOutputTokens
		return reply, true
	}
	message.chunks = text.chunks
	if text.reason == "max_tokens" {
		reply.status, message.complete = "incomplete", false
	}
	reply.items = []responsesOutput{message}
	reply.output = len(text.chunks)
	return reply, true
}

// events is the stream of reply, in order, without the terminal event's
// [DONE] (the API sends none).
func (r responsesReply) events() [][]byte {
	var events [][]byte
	add := func(typ, fields string) {
		events = append(events, responsesEvent(typ, len(events), fields))
	}
	add("response.created", `"response":`+r.responseJSON("in_progress", true))
	add("response.in_progress", `"response":`+r.responseJSON("in_progress", true))
	for i, it := range r.items {
		index := `"output_index":` + strconv.Itoa(i)
		itemRef := `"item_id":` + string(jsonString(it.id)) + `,` + index
		add("response.output_item.added", index+`,"item":`+it.itemJSON(true))
		if it.isCall() {
			for _, a := range it.args {
				add("response.function_call_arguments.delta", itemRef+`,"delta":`+string(jsonString(a)))
			}
			add("response.function_call_arguments.done", itemRef+`,"name":`+string(jsonString(it.name))+
				`,"arguments":`+string(jsonString(strings.Join(it.args, ""))))
		} else {
			part := itemRef + `,"content_index":0`
			text := strings.Join(it.chunks, "")
			add("response.content_part.added", part+`,"part":`+partJSON(""))
			for _, c := range it.chunks {
				add("response.output_text.delta", part+`,"delta":`+string(jsonString(c))+`,"logprobs":[]`)
			}
			add("response.output_text.done", part+`,"text":`+string(jsonString(text))+`,"logprobs":[]`)
			add("response.content_part.done", part+`,"part":`+partJSON(text))
		}
		add("response.output_item.done", index+`,"item":`+it.itemJSON(false))
	}
	add("response."+r.status, `"response":`+r.responseJSON(r.status, false))
	return events
}

// responsesEvent frames one stream event: "event: typ" and its data with
// type and sequence_number first, then fields.
func responsesEvent(typ string, seq int, fields string) []byte {
	return []byte("event: " + typ + "\ndata: {\"type\":\"" + typ + "\",\"sequence_number\":" + strconv.Itoa(seq) + "," + fields + "}\n\n")
}

// writeResponsesError answers a 400 in the OpenAI envelope with param
// set, as the Responses API reports request errors.
func writeResponsesError(w http.ResponseWriter, status int, msg, param string) {
	typ, _ := errorType(status)
	e := errorBody{Error: errorDetail{Message: msg, Type: typ}}
	if param != "" {
		e.Error.Param = &param
	}
	b, _ := json.Marshal(e)
	writeJSON(w, status, b)
}
