package translate

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// The conversation half of the hub → Anthropic request translation:
// messages, content parts and tool calls/results become Anthropic turns
// and blocks. hub_anthropic.go lists the choices it makes.

// messages converts the conversation: system text is hoisted, the rest
// becomes alternating user/assistant turns.
func (b *anthropicRequestBuilder) messages() *apierr.Error {
	if b.fastConversation() {
		return nil
	}
	raw, ok := b.field("messages")
	if !ok {
		return errInvalidRequest("\"messages\" is required")
	}
	list, e := readArray(raw, "messages")
	if e != nil {
		return e
	}
	if len(list) == 0 {
		return errInvalidRequest("\"messages\" must not be empty")
	}
	for i := 0; i < len(list); i++ {
		if e := b.message(list[i], "messages["+strconv.Itoa(i)+"]"); e != nil {
			return e
		}
	}
	if len(b.req.Messages) == 0 {
		return errInvalidRequest("\"messages\" must contain at least one non-empty user or assistant message")
	}
	for i := 0; i < len(b.req.Messages); i++ {
		if b.req.Messages[i].Role == "user" {
			b.req.Messages[i].Content = anthropicToolResultsFirst(b.req.Messages[i].Content)
		}
	}
	b.req.System = strings.Join(b.system, "\n\n")
	return nil
}

// message converts one message by its role.
func (b *anthropicRequestBuilder) message(raw json.RawMessage, path string) *apierr.Error {
	m, e := readObject(raw, path)
	if e != nil {
		return e
	}
	role, e := readString(m["role"], path+".role")
	if e != nil {
		return e
	}
	content := m["content"]
	switch role {
	case "system", "developer":
		blocks, e := b.content(content, path+".content", role)
		if e != nil {
			return e
		}
		for i := 0; i < len(blocks); i++ {
			b.system = append(b.system, blocks[i].Text)
		}
		return nil
	case "user":
		blocks, e := b.content(content, path+".content", role)
		if e != nil {
			return e
		}
		b.appendTurn("user", blocks)
		return nil
	case "assistant":
		return b.assistant(m, path)
	case "tool":
		return b.toolResult(m, path)
	case "function":
		return anthropicUnsupported(path+".role", "role \"function\" is deprecated; use tool messages")
	}
	return errInvalidField(path+".role", "one of system, developer, user, assistant or tool")
}

// appendTurn adds blocks as a turn, merging into the previous turn when
// it has the same role.
func (b *anthropicRequestBuilder) appendTurn(role string, blocks []anthropicWireBlock) {
	if len(blocks) == 0 {
		return
	}
	n := len(b.req.Messages)
	if n > 0 && b.req.Messages[n-1].Role == role {
		b.req.Messages[n-1].Content = append(b.req.Messages[n-1].Content, blocks...)
		return
	}
	b.req.Messages = append(b.req.Messages, anthropicWireMessage{Role: role, Content: blocks})
}

// anthropicToolResultsFirst moves a user turn's tool_result blocks ahead
// of its other blocks, keeping both groups in order.
func anthropicToolResultsFirst(blocks []anthropicWireBlock) []anthropicWireBlock {
	out := make([]anthropicWireBlock, 0, len(blocks))
	for i := 0; i < len(blocks); i++ {
		if blocks[i].Type == "tool_result" {
			out = append(out, blocks[i])
		}
	}
	for i := 0; i < len(blocks); i++ {
		if blocks[i].Type != "tool_result" {
			out = append(out, blocks[i])
		}
	}
	return out
}

// assistant converts an assistant message: its text (or, alone, its
// refusal), then its tool calls as tool_use blocks.
func (b *anthropicRequestBuilder) assistant(m map[string]json.RawMessage, path string) *apierr.Error {
	if !isJSONNull(m["function_call"]) {
		return anthropicUnsupported(path+".function_call", "deprecated; use tool_calls")
	}
	blocks, e := b.content(m["content"], path+".content", "assistant")
	if e != nil {
		return e
	}
	if raw := m["refusal"]; !isJSONNull(raw) {
		refusal, e := readString(raw, path+".refusal")
		if e != nil {
			return e
		}
		if anthropicHasText(refusal) && len(blocks) == 0 {
			blocks = append(blocks, anthropicWireBlock{Type: "text", Text: refusal})
		}
	}
	if raw := m["tool_calls"]; !isJSONNull(raw) {
		calls, e := readArray(raw, path+".tool_calls")
		if e != nil {
			return e
		}
		for i := 0; i < len(calls); i++ {
			block, e := b.toolUse(calls[i], path+".tool_calls["+strconv.Itoa(i)+"]")
			if e != nil {
				return e
			}
			blocks = append(blocks, block)
		}
	}
	b.appendTurn("assistant", blocks)
	return nil
}

// toolUse converts one tool call into a tool_use block.
func (b *anthropicRequestBuilder) toolUse(raw json.RawMessage, path string) (anthropicWireBlock, *apierr.Error) {
	call, e := readObject(raw, path)
	if e != nil {
		return anthropicWireBlock{}, e
	}
	if t := call["type"]; !isJSONNull(t) {
		kind, e := readString(t, path+".type")
		if e != nil {
			return anthropicWireBlock{}, e
		}
		if kind != "function" {
			return anthropicWireBlock{}, anthropicUnsupported(path+".type", "tool call type \""+kind+"\"")
		}
	}
	id, e := readString(call["id"], path+".id")
	if e != nil || id == "" {
		return anthropicWireBlock{}, errInvalidField(path+".id", "a non-empty string")
	}
	fn, e := readObject(call["function"], path+".function")
	if e != nil {
		return anthropicWireBlock{}, e
	}
	name, e := readString(fn["name"], path+".function.name")
	if e != nil || name == "" {
		return anthropicWireBlock{}, errInvalidField(path+".function.name", "a non-empty string")
	}
	input := json.RawMessage("{}")
	args := fn["arguments"]
	switch {
	case isJSONNull(args):
	case args[0] == '{':
		// Some clients send the arguments as an object, not a string.
		input = args
	default:
		text, e := readString(args, path+".function.arguments")
		if e != nil {
			return anthropicWireBlock{}, e
		}
		input = anthropicToolInput(text)
	}
	return anthropicWireBlock{Type: "tool_use", ID: id, Name: name, Input: input}, nil
}

// anthropicToolInput turns an OpenAI arguments string into a tool_use
// input: the client's own bytes when they are a JSON object (so a large
// integer is never rounded), else {}.
func anthropicToolInput(args string) json.RawMessage {
	trimmed := bytes.TrimSpace([]byte(args))
	if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed) {
		return json.RawMessage("{}")
	}
	return json.RawMessage(trimmed)
}

// toolResult turns a role "tool" message into a user-turn tool_result.
func (b *anthropicRequestBuilder) toolResult(m map[string]json.RawMessage, path string) *apierr.Error {
	id, e := readString(m["tool_call_id"], path+".tool_call_id")
	if e != nil || id == "" {
		return errInvalidField(path+".tool_call_id", "a non-empty string")
	}
	block := anthropicWireBlock{Type: "tool_result", ToolUseID: id}
	raw := m["content"]
	if !isJSONNull(raw) && raw[0] == '"' {
		text, e := readString(raw, path+".content")
		if e != nil {
			return e
		}
		if text != "" {
			block.Content = raw
		}
	} else if !isJSONNull(raw) {
		parts, e := b.content(raw, path+".content", "tool")
		if e != nil {
			return e
		}
		if len(parts) > 0 {
			encoded := encodeJSON(parts)
			if encoded == nil {
				return errInvalidField(path+".content", "a string or an array of content parts")
			}
			block.Content = encoded
		}
	}
	b.appendTurn("user", []anthropicWireBlock{block})
	return nil
}

// content converts a message's content (a string or an array of parts)
// into blocks, allowing the part types role may carry. Empty text is
// dropped.
func (b *anthropicRequestBuilder) content(raw json.RawMessage, path, role string) ([]anthropicWireBlock, *apierr.Error) {
	if isJSONNull(raw) {
		if role == "user" || role == "system" || role == "developer" {
			return nil, errInvalidField(path, "a string or an array of content parts")
		}
		return nil, nil
	}
	if raw[0] == '"' {
		text, e := readString(raw, path)
		if e != nil {
			return nil, e
		}
		if !anthropicHasText(text) {
			return nil, nil
		}
		return []anthropicWireBlock{{Type: "text", Text: text}}, nil
	}
	parts, e := readArray(raw, path)
	if e != nil {
		return nil, errInvalidField(path, "a string or an array of content parts")
	}
	var blocks []anthropicWireBlock
	for i := 0; i < len(parts); i++ {
		block, keep, e := b.part(parts[i], path+"["+strconv.Itoa(i)+"]", role)
		if e != nil {
			return nil, e
		}
		if keep {
			blocks = append(blocks, block)
		}
	}
	return blocks, nil
}

// part converts one content part; the bool is false for empty text,
// which makes no block.
func (b *anthropicRequestBuilder) part(raw json.RawMessage, path, role string) (anthropicWireBlock, bool, *apierr.Error) {
	m, kind, e := readContentPart(raw, path)
	if e != nil {
		return anthropicWireBlock{}, false, e
	}
	switch kind {
	case "text":
		text, e := readString(m["text"], path+".text")
		if e != nil {
			return anthropicWireBlock{}, false, e
		}
		return anthropicWireBlock{Type: "text", Text: text}, anthropicHasText(text), nil
	case "refusal":
		if role != "assistant" {
			return anthropicWireBlock{}, false, anthropicPartNotAllowed(path, role, kind)
		}
		text, e := readString(m["refusal"], path+".refusal")
		if e != nil {
			return anthropicWireBlock{}, false, e
		}
		return anthropicWireBlock{Type: "text", Text: text}, anthropicHasText(text), nil
	case "image_url":
		if role != "user" && role != "tool" {
			return anthropicWireBlock{}, false, anthropicPartNotAllowed(path, role, kind)
		}
		source, e := b.imageSource(m["image_url"], path+".image_url")
		if e != nil {
			return anthropicWireBlock{}, false, e
		}
		return anthropicWireBlock{Type: "image", Source: source}, true, nil
	case "file":
		if role != "user" {
			return anthropicWireBlock{}, false, anthropicPartNotAllowed(path, role, kind)
		}
		source, e := b.fileSource(m["file"], path+".file")
		if e != nil {
			return anthropicWireBlock{}, false, e
		}
		return anthropicWireBlock{Type: "document", Source: source}, true, nil
	case "input_audio":
		return anthropicWireBlock{}, false, anthropicUnsupported("input_audio", "audio input in "+path)
	}
	return anthropicWireBlock{}, false, anthropicUnsupported(path+".type", "content part type \""+kind+"\"")
}

// anthropicHasText reports whether text is worth a block: Anthropic
// rejects text blocks that are empty or only whitespace.
func anthropicHasText(text string) bool {
	return strings.TrimSpace(text) != ""
}

// anthropicPartNotAllowed is the 400 for a part type the role cannot
// carry.
func anthropicPartNotAllowed(path, role, kind string) *apierr.Error {
	return errInvalidField(path+".type", "a part type allowed in "+role+" messages (got \""+kind+"\")")
}

// imageSource maps an image_url ({"url":...} or a bare string) to a
// base64 source for data: URLs or a url source for http(s).
func (b *anthropicRequestBuilder) imageSource(raw json.RawMessage, path string) (*anthropicWireSource, *apierr.Error) {
	var url string
	if len(raw) > 0 && raw[0] == '"' {
		s, e := readString(raw, path)
		if e != nil {
			return nil, e
		}
		url = s
	} else {
		m, e := readObject(raw, path)
		if e != nil {
			return nil, e
		}
		s, e := readString(m["url"], path+".url")
		if e != nil {
			return nil, e
		}
		url = s
	}
	lower := strings.ToLower(url)
	if strings.HasPrefix(lower, "https://") || strings.HasPrefix(lower, "http://") {
		return &anthropicWireSource{Type: "url", URL: url}, nil
	}
	if mediaType, data, ok := parseDataURL(url); ok {
		return &anthropicWireSource{Type: "base64", MediaType: mediaType, Data: data}, nil
	}
	return nil, errInvalidField(path+".url", "an http(s) URL or a data:<media type>;base64,<data> URL")
}

// fileSource maps a file part carrying inline file_data to a document
// source; uploaded files (file_id) do not exist on Anthropic.
func (b *anthropicRequestBuilder) fileSource(raw json.RawMessage, path string) (*anthropicWireSource, *apierr.Error) {
	m, e := readObject(raw, path)
	if e != nil {
		return nil, e
	}
	if isJSONNull(m["file_data"]) {
		if !isJSONNull(m["file_id"]) {
			return nil, anthropicUnsupported(path+".file_id", "uploaded files")
		}
		return nil, errInvalidField(path+".file_data", "a data URL or base64 string")
	}
	data, e := readString(m["file_data"], path+".file_data")
	if e != nil {
		return nil, e
	}
	if mediaType, payload, ok := parseDataURL(data); ok {
		return &anthropicWireSource{Type: "base64", MediaType: mediaType, Data: payload}, nil
	}
	if hasDataScheme(data) || data == "" {
		return nil, errInvalidField(path+".file_data", "a data URL or base64 string")
	}
	return &anthropicWireSource{Type: "base64", MediaType: "application/pdf", Data: data}, nil
}
