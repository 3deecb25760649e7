package mockupstream

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ToolTurn scripts a two-step tool conversation on the Anthropic Messages
// route, the OpenAI chat route, the Responses route and Gemini's
// generateContent (Options.ToolTurn). The mock decides from each request
// alone, keeping no state between requests, so the same script works
// whether a client talks to the mock directly or through a gateway that
// translates one dialect into another:
//
//  1. The call. A request whose last message is a user message that
//     contains Trigger in its text (any user message when Trigger is
//     empty) and carries no tool result is answered with the text
//     ToolTurnPreamble and one call of tool Name with Input: an
//     Anthropic tool_use block (streamed as input_json_delta fragments,
//     stop_reason "tool_use"), an OpenAI tool_calls entry (streamed as
//     argument fragments, finish_reason "tool_calls"), a Responses
//     function_call output item after a message item (streamed as
//     function_call_arguments deltas) or a Gemini functionCall part after
//     a text part. A request that declares no tool Name gets the text
//     ToolTurnUndeclared(Name) instead.
//  2. The answer. A request whose last message carries the result of a
//     call of Name made in the message before it (an Anthropic
//     tool_result block whose tool_use_id names a tool_use of Name; an
//     OpenAI role "tool" message whose tool_call_id names a tool_calls
//     entry of Name; a Responses function_call_output whose call_id names
//     a function_call of Name; a Gemini functionResponse of Name after a
//     content with a functionCall of Name) is answered with the text
//     FinalText when the result's text contains Expect, and with
//     ToolTurnMismatch(Name, Expect, result) when it does not. A Gemini
//     result's text is the string values of its response object, one a
//     line.
//
// Messages with role "system" or "developer" are skipped when the mock
// looks for the last message. Any other request gets the usual reply.
type ToolTurn struct {
	// Trigger is the text the last user message must contain to start
	// the turn. Empty: every user message without a tool result does.
	Trigger string
	// Name is the tool the mock calls, e.g. "Read".
	Name string
	// Input is the call's arguments, a JSON object. Empty means {}. It
	// is sent compacted; an invalid value makes the call a 500.
	Input string
	// Expect is what the tool result must contain for the mock to answer
	// FinalText. Empty: any result does.
	Expect string
	// FinalText is the answer to the tool result. Empty means
	// DefaultToolTurnFinalText.
	FinalText string
}

// ToolTurnPreamble is the text the mock sends before its scripted tool
// call.
const ToolTurnPreamble = "Let me use the tool."

// DefaultToolTurnFinalText is the answer to the tool result when
// ToolTurn.FinalText is empty.
const DefaultToolTurnFinalText = "The tool result arrived."

// ToolTurnUndeclared is the reply text when a request that starts the
// turn declares no tool named name.
func ToolTurnUndeclared(name string) string {
	return "mock: tool turn: the request declares no tool " + strconv.Quote(name)
}

// ToolTurnMismatch is the reply text when the result of the scripted call
// lacks what the turn expects.
func ToolTurnMismatch(name, expect, result string) string {
	return "mock: tool turn: the " + name + " result does not contain " + strconv.Quote(expect) + "; it was " + strconv.Quote(result)
}

// turnStep is what a request asks of the scripted turn.
type turnStep int

const (
	turnNone   turnStep = iota // not part of the turn: the usual reply
	turnCall                   // answer with the tool call
	turnAnswer                 // answer with text (reply)
)

// turnMessage is one conversation message of either dialect, reduced to
// what the scripted turn looks at.
type turnMessage struct {
	role    string            // "user" or "assistant"
	text    string            // its text blocks or parts, concatenated
	calls   map[string]string // assistant: tool call id -> tool name
	results []turnResult      // user: the tool results it carries
}

type turnResult struct {
	id, text string
}

// decide maps a conversation and its declared tools to a step of t and,
// for turnAnswer, the reply text.
func (t *ToolTurn) decide(msgs []turnMessage, tools []string) (turnStep, string) {
	if t == nil || len(msgs) == 0 {
		return turnNone, ""
	}
	last := msgs[len(msgs)-1]
	if last.role != "user" {
		return turnNone, ""
	}
	if len(last.results) > 0 {
		if len(msgs) < 2 {
			return turnNone, ""
		}
		prev := msgs[len(msgs)-2]
		for _, r := range last.results {
			if prev.calls[r.id] != t.Name {
				continue
			}
			if !strings.Contains(r.text, t.Expect) {
				return turnAnswer, ToolTurnMismatch(t.Name, t.Expect, r.text)
			}
			if t.FinalText == "" {
				return turnAnswer, DefaultToolTurnFinalText
			}
			return turnAnswer, t.FinalText
		}
		return turnNone, ""
	}
	if !strings.Contains(last.text, t.Trigger) {
		return turnNone, ""
	}
	if !contains(tools, t.Name) {
		return turnAnswer, ToolTurnUndeclared(t.Name)
	}
	return turnCall, ""
}

// compactToolInput returns ToolTurn.Input as compact JSON, or "" when it
// is not a JSON object.
func compactToolInput(input string) string {
	if strings.TrimSpace(input) == "" {
		return "{}"
	}
	var b bytes.Buffer
	if json.Compact(&b, []byte(input)) != nil || !isJSONObject(b.Bytes()) {
		return ""
	}
	return b.String()
}

// splitPieces cuts s into at most n pieces of about equal length at rune
// boundaries; "" gives no pieces.
func splitPieces(s string, n int) []string {
	var out []string
	size := (len(s) + n - 1) / n
	for len(s) > 0 {
		cut := size
		if cut >= len(s) {
			cut = len(s)
		}
		for cut < len(s) && !utf8.RuneStart(s[cut]) {
			cut++
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	return out
}

// textChunks cuts a scripted reply into one chunk a word (each but the
// first with its leading space), as the mock's token count goes.
func textChunks(text string) []string {
	var out []string
	start := 0
	for i := 1; i < len(text); i++ {
		if text[i] == ' ' && text[i-1] != ' ' {
			out = append(out, text[start:i])
			start = i
		}
	}
	if start < len(text) {
		out = append(out, text[start:])
	}
	return out
}

// anthropicTurnMessages reduces a Messages request body to the turn's
// view. Bodies it cannot read give no messages.
func anthropicTurnMessages(body []byte) []turnMessage {
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &req) != nil {
		return nil
	}
	var out []turnMessage
	for _, m := range req.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			continue
		}
		tm := turnMessage{role: m.Role, calls: map[string]string{}}
		var str string
		var blocks []anthropicBlock
		switch {
		case json.Unmarshal(m.Content, &str) == nil:
			tm.text = str
		case json.Unmarshal(m.Content, &blocks) == nil:
			var text strings.Builder
			for _, b := range blocks {
				switch b.Type {
				case "text":
					if b.Text != nil {
						text.WriteString(*b.Text)
						text.WriteByte('\n')
					}
				case "tool_use":
					tm.calls[b.ID] = b.Name
				case "tool_result":
					tm.results = append(tm.results, turnResult{id: b.ToolUseID, text: contentText(b.Content)})
				}
			}
			tm.text = text.String()
		}
		out = append(out, tm)
	}
	return out
}

// contentText concatenates the text of a content value: a string, or
// blocks or parts with "text".
func contentText(raw json.RawMessage) string {
	var str string
	if json.Unmarshal(raw, &str) == nil {
		return str
	}
	var parts []struct {
		Text *string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var texts []string
	for _, p := range parts {
		if p.Text != nil {
			texts = append(texts, *p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// chatTurnMessages reduces a chat completions request to the turn's
// view: consecutive role "tool" messages, and a user message right after
// them, become one user message carrying their results, as the one
// Anthropic user message with tool_result and text blocks they stand for.
func chatTurnMessages(req chatRequest) []turnMessage {
	var out []turnMessage
	for _, m := range req.Messages {
		switch m.Role {
		case "user":
			if n := len(out); n > 0 && out[n-1].role == "user" && len(out[n-1].results) > 0 {
				out[n-1].text += contentText(m.Content)
				continue
			}
			out = append(out, turnMessage{role: "user", text: contentText(m.Content)})
		case "assistant":
			tm := turnMessage{role: "assistant", text: contentText(m.Content), calls: map[string]string{}}
			for _, c := range m.ToolCalls {
				tm.calls[c.ID] = c.Function.Name
			}
			out = append(out, tm)
		case "tool":
			r := turnResult{id: m.ToolCallID, text: contentText(m.Content)}
			if n := len(out); n > 0 && out[n-1].role == "user" && len(out[n-1].results) > 0 {
				out[n-1].results = append(out[n-1].results, r)
				continue
			}
			out = append(out, turnMessage{role: "user", results: []turnResult{r}})
		}
	}
	return out
}

// chatToolNames lists the function names a chat request declares.
func chatToolNames(req chatRequest) []string {
	var out []string
	for _, t := range req.Tools {
		if t.Function.Name != "" {
			out = append(out, t.Function.Name)
		}
	}
	return out
}

// geminiTurnMessages reduces a GenerateContentRequest to the turn's view.
// Contents with role "user", "function" or none are user messages, "model"
// ones assistant messages. Gemini's calls and responses need not carry
// ids, so both are matched by function name. Bodies it cannot read give
// no messages.
func geminiTurnMessages(body []byte) []turnMessage {
	var req struct {
		Contents []struct {
			Role  string `json:"role"`
			Parts []struct {
				Text         *string `json:"text"`
				FunctionCall *struct {
					Name string `json:"name"`
				} `json:"functionCall"`
				FunctionResponse *struct {
					Name     string          `json:"name"`
					Response json.RawMessage `json:"response"`
				} `json:"functionResponse"`
			} `json:"parts"`
		} `json:"contents"`
	}
	if json.Unmarshal(body, &req) != nil {
		return nil
	}
	var out []turnMessage
	for _, c := range req.Contents {
		tm := turnMessage{role: "user", calls: map[string]string{}}
		if c.Role == "model" {
			tm.role = "assistant"
		}
		var text strings.Builder
		for _, p := range c.Parts {
			switch {
			case p.Text != nil:
				text.WriteString(*p.Text)
				text.WriteByte('\n')
			case p.FunctionCall != nil:
				tm.calls[p.FunctionCall.Name] = p.FunctionCall.Name
			case p.FunctionResponse != nil:
				tm.results = append(tm.results, turnResult{id: p.FunctionResponse.Name, text: jsonStrings(p.FunctionResponse.Response)})
			}
		}
		tm.text = text.String()
		out = append(out, tm)
	}
	return out
}

// jsonStrings returns the string values inside a JSON value, depth first
// in key order, one a line.
func jsonStrings(raw json.RawMessage) string {
	var v interface{}
	if json.Unmarshal(raw, &v) != nil {
		return ""
	}
	var lines []string
	var walk func(interface{})
	walk = func(v interface{}) {
		switch x := v.(type) {
		case string:
			lines = append(lines, x)
		case []interface{}:
			for _, e := range x {
				walk(e)
			}
		case map[string]interface{}:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(x[k])
			}
		}
	}
	walk(v)
	return strings.Join(lines, "\n")
}
