package translate

import (
	"encoding/json"
	"strconv"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// OpenAI messages → Gemini systemInstruction and contents. The parts of
// each message are converted in hub_gemini_parts.go.

// geminiMessages converts messages[] into systemInstruction and
// contents.
func geminiMessages(raw json.RawMessage) (*geminiWireContent, []geminiWireContent, *apierr.Error) {
	msgs, ok := parseJSONArray(raw)
	if !ok || len(msgs) == 0 {
		return nil, nil, errInvalidRequest(`"messages" must be a non-empty array`)
	}
	c := &geminiConversation{callNames: map[string]string{}}
	for i := 0; i < len(msgs); i++ {
		where := "messages[" + strconv.Itoa(i) + "]"
		m, ok := parseJSONObject(msgs[i])
		if !ok {
			return nil, nil, errInvalidField(where, "an object")
		}
		if e := c.message(m, where); e != nil {
			return nil, nil, e
		}
	}
	if len(c.contents) == 0 {
		return nil, nil, errInvalidRequest(`"messages" must contain at least one user or assistant message with content`)
	}
	return c.system, c.contents, nil
}

// geminiConversation is a conversion in progress: the system
// instruction, the turns so far, and the function name of every tool
// call id seen so far (a functionResponse names its function, an OpenAI
// tool message only the call id).
type geminiConversation struct {
	system    *geminiWireContent
	contents  []geminiWireContent
	callNames map[string]string
}

// message converts one message by its role.
func (c *geminiConversation) message(m map[string]json.RawMessage, where string) *apierr.Error {
	role, e := readString(m["role"], where+".role")
	if e != nil {
		return e
	}
	switch role {
	case "system", "developer":
		return c.systemMessage(m, where)
	case "user":
		return c.userMessage(m, where)
	case "assistant":
		return c.assistantMessage(m, where)
	case "tool":
		return c.toolMessage(m, where)
	case "function":
		return geminiUnsupported(`"` + where + `.role" "function" is deprecated and not supported for Gemini models; use "tool"`)
	}
	return errInvalidRequest(`"` + where + `.role" "` + role + `" is not a valid role`)
}

// add appends parts as a turn of role, merged into the previous turn
// when that has the same role; no parts, no turn.
func (c *geminiConversation) add(role string, parts []geminiWirePart) {
	if len(parts) == 0 {
		return
	}
	n := len(c.contents)
	if n > 0 && c.contents[n-1].Role == role {
		c.contents[n-1].Parts = append(c.contents[n-1].Parts, parts...)
		return
	}
	c.contents = append(c.contents, geminiWireContent{Role: role, Parts: parts})
}

// systemMessage hoists a system or developer message's text into the
// system instruction, wherever the message stands.
func (c *geminiConversation) systemMessage(m map[string]json.RawMessage, where string) *apierr.Error {
	if isJSONNull(m["content"]) {
		return errInvalidRequest(`"` + where + `.content" is required`)
	}
	parts, e := geminiContentParts(m["content"], where, "system")
	if e != nil {
		return e
	}
	if len(parts) > 0 {
		if c.system == nil {
			c.system = &geminiWireContent{}
		}
		c.system.Parts = append(c.system.Parts, parts...)
	}
	return nil
}

// userMessage converts a user message into a "user" turn.
func (c *geminiConversation) userMessage(m map[string]json.RawMessage, where string) *apierr.Error {
	if isJSONNull(m["content"]) {
		return errInvalidRequest(`"` + where + `.content" is required`)
	}
	parts, e := geminiContentParts(m["content"], where, "user")
	if e != nil {
		return e
	}
	c.add("user", parts)
	return nil
}

// assistantMessage converts an assistant message into a "model" turn:
// its text, then its tool calls as functionCall parts.
func (c *geminiConversation) assistantMessage(m map[string]json.RawMessage, where string) *apierr.Error {
	parts, e := geminiContentParts(m["content"], where, "assistant")
	if e != nil {
		return e
	}
	calls, e := geminiFunctionCallParts(m["tool_calls"], where, c.callNames)
	if e != nil {
		return e
	}
	if !isJSONNull(m["function_call"]) {
		return geminiUnsupported(`"` + where + `.function_call" is deprecated and not supported for Gemini models; use "tool_calls"`)
	}
	c.add("model", append(parts, calls...))
	return nil
}

// toolMessage converts a tool message into a functionResponse part of a
// "user" turn, named after the latest earlier tool call with its id.
func (c *geminiConversation) toolMessage(m map[string]json.RawMessage, where string) *apierr.Error {
	id, e := readString(m["tool_call_id"], where+".tool_call_id")
	if e != nil {
		return e
	}
	name, found := c.callNames[id]
	if !found {
		return errInvalidRequest(`"` + where + `.tool_call_id" "` + id + `" does not match a tool call of an earlier assistant message`)
	}
	output, e := geminiToolOutput(m["content"], where)
	if e != nil {
		return e
	}
	response := &geminiWireFunctionResponse{Name: name, Response: geminiWireFunctionOutput{Output: output}}
	c.add("user", []geminiWirePart{{FunctionResponse: response}})
	return nil
}
