package translate

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// The conversation half of the Ollama → hub request translation
// (ollama_hub_request.go has the entry points):
//
//   - system, user, assistant and tool messages keep their role and
//     their content string (null or absent: ""); an empty system message
//     and an assistant message with neither content nor tool calls are
//     dropped;
//   - images (raw base64, as Ollama takes them; a data: URL is also
//     accepted as it is) → image_url parts with a data: URL, after the
//     text part, on user messages only: another role with images is a
//     400. The media type is sniffed from the first bytes (PNG, JPEG,
//     GIF, WebP), image/png when none matches;
//   - an assistant's tool_calls → hub tool calls: the arguments object
//     as a JSON string, numbers digit for digit (a string is kept as it
//     is, null or absent is "{}"); the call's id when it has one, else a
//     synthesized "call_<name>_<n>" (n counts the ids synthesized in the
//     request, from 0);
//   - a tool result → a hub tool message whose tool_call_id is its
//     tool_call_id when the client sent one, else the call it answers
//     by tool_name: the first not yet answered call of that name in the
//     latest assistant turn with tool calls (so parallel calls of one
//     tool are answered in order), else the most recent call of that
//     name, else a synthesized id. A result with no tool_name answers
//     the first unanswered call of the latest turn whatever its name;
//   - an assistant's thinking is dropped: the hub request has no place
//     for it.

// ollamaKnownCall is a tool call of the conversation, for the tool
// results that answer it by name.
type ollamaKnownCall struct {
	id, name string
	answered bool
}

// ollamaConversation is the state of one conversion.
type ollamaConversation struct {
	hub         *ollamaHubRequest
	calls       []ollamaKnownCall // every tool call so far
	turn        int               // calls[turn:] are the latest assistant turn's
	synthesized int               // ids synthesized so far
}

// ollamaInMessages converts the messages of a chat request.
func ollamaInMessages(raw json.RawMessage, hub *ollamaHubRequest) *apierr.Error {
	if isJSONNull(raw) {
		return errInvalidRequest(`"messages" is required`)
	}
	if raw[0] != '[' {
		return errInvalidField("messages", "an array")
	}
	var msgs []ollamaInMessage
	if err := json.Unmarshal(raw, &msgs); err != nil {
		return ollamaInListError(raw, "messages")
	}
	if len(msgs) == 0 {
		return errInvalidRequest(`"messages" must not be empty`)
	}
	conv := ollamaConversation{hub: hub}
	for i := 0; i < len(msgs); i++ {
		if e := ollamaInOneMessage(&conv, &msgs[i], ollamaIndexPath("messages", i)); e != nil {
			return e
		}
	}
	if len(hub.Messages) == 0 {
		return errInvalidRequest(`"messages" must hold at least one message with content`)
	}
	return nil
}

// ollamaInOneMessage converts one message.
func ollamaInOneMessage(conv *ollamaConversation, m *ollamaInMessage, path string) *apierr.Error {
	if isJSONNull(m.Role) {
		return errInvalidRequest(`"` + path + `.role" is required`)
	}
	role, _ := readString(m.Role, path+".role")
	content := ""
	if !isJSONNull(m.Content) {
		s, e := readString(m.Content, path+".content")
		if e != nil {
			return e
		}
		content = s
	}
	images, e := ollamaInImages(m.Images, path+".images")
	if e != nil {
		return e
	}
	if len(images) > 0 && role != "user" {
		return apierr.New(http.StatusBadRequest, "invalid_request_error", "unsupported_parameter",
			`"`+path+`.images": images are supported on user messages only`)
	}
	switch role {
	case "system":
		if content != "" {
			conv.hub.Messages = append(conv.hub.Messages, hubRequestMessage{Role: "system", Content: quoteJSON(content)})
		}
	case "user":
		conv.hub.Messages = append(conv.hub.Messages, hubRequestMessage{Role: "user", Content: ollamaInUserContent(content, images)})
	case "assistant":
		return ollamaInAssistant(conv, m, content, path)
	case "tool":
		return ollamaInToolResult(conv, m, content, path)
	default:
		return errInvalidField(path+".role", `"system", "user", "assistant" or "tool"`)
	}
	return nil
}

// ollamaInAssistant converts an assistant message and its tool calls.
func ollamaInAssistant(conv *ollamaConversation, m *ollamaInMessage, content, path string) *apierr.Error {
	var calls []hubToolCall
	if !isJSONNull(m.ToolCalls) {
		if m.ToolCalls[0] != '[' {
			return errInvalidField(path+".tool_calls", "an array")
		}
		var in []ollamaInToolCall
		if err := json.Unmarshal(m.ToolCalls, &in); err != nil {
			return ollamaInToolCallsError(m.ToolCalls, path+".tool_calls")
		}
		if len(in) > 0 {
			conv.turn = len(conv.calls)
		}
		for j := 0; j < len(in); j++ {
			call, e := ollamaInToolCallOf(conv, &in[j], ollamaIndexPath(path+".tool_calls", j))
			if e != nil {
				return e
			}
			calls = append(calls, call)
		}
	}
	if content == "" && len(calls) == 0 {
		return nil
	}
	text := jsonNull
	if content != "" {
		text = quoteJSON(content)
	}
	conv.hub.Messages = append(conv.hub.Messages, hubRequestMessage{Role: "assistant", Content: text, ToolCalls: calls})
	return nil
}

// ollamaInToolCallOf converts one tool call and records it for the
// results that answer it.
func ollamaInToolCallOf(conv *ollamaConversation, c *ollamaInToolCall, path string) (hubToolCall, *apierr.Error) {
	name := c.Function.Name
	if name == "" {
		return hubToolCall{}, errInvalidField(path+".function.name", "a non-empty string")
	}
	args := "{}"
	raw := c.Function.Arguments
	if !isJSONNull(raw) {
		switch raw[0] {
		case '{':
			args = compactArguments(raw)
		case '"':
			args = jsonStringValue(raw)
		default:
			return hubToolCall{}, errInvalidField(path+".function.arguments", "an object")
		}
	}
	id := c.ID
	if id == "" {
		id = ollamaSynthesizedID(conv, name)
	}
	conv.calls = append(conv.calls, ollamaKnownCall{id: id, name: name})
	return hubToolCall{ID: id, Type: "function", Function: hubFunction{Name: name, Arguments: args}}, nil
}

// ollamaInToolResult converts a tool result into a hub tool message.
func ollamaInToolResult(conv *ollamaConversation, m *ollamaInMessage, content, path string) *apierr.Error {
	id := ""
	if !isJSONNull(m.ToolCallID) {
		s, e := readString(m.ToolCallID, path+".tool_call_id")
		if e != nil {
			return e
		}
		id = s
	}
	name := ""
	if !isJSONNull(m.ToolName) {
		s, e := readString(m.ToolName, path+".tool_name")
		if e != nil {
			return e
		}
		name = s
	}
	if id == "" {
		id = ollamaAnsweredCall(conv, name)
	} else {
		ollamaMarkAnswered(conv, id)
	}
	conv.hub.Messages = append(conv.hub.Messages, hubRequestMessage{Role: "tool", Content: quoteJSON(content), ToolCallID: id})
	return nil
}

// ollamaAnsweredCall is the id of the call a result named name answers
// (see the file comment), marked answered.
func ollamaAnsweredCall(conv *ollamaConversation, name string) string {
	for k := conv.turn; k < len(conv.calls); k++ {
		c := &conv.calls[k]
		if !c.answered && (name == "" || c.name == name) {
			c.answered = true
			return c.id
		}
	}
	if name != "" {
		for k := len(conv.calls) - 1; k >= 0; k-- {
			if conv.calls[k].name == name {
				return conv.calls[k].id
			}
		}
	} else {
		name = "tool"
	}
	return ollamaSynthesizedID(conv, name)
}

// ollamaMarkAnswered marks the latest turn's call with id answered.
func ollamaMarkAnswered(conv *ollamaConversation, id string) {
	for k := conv.turn; k < len(conv.calls); k++ {
		if conv.calls[k].id == id {
			conv.calls[k].answered = true
			return
		}
	}
}

// ollamaSynthesizedID is the next synthesized tool call id for name.
func ollamaSynthesizedID(conv *ollamaConversation, name string) string {
	id := "call_" + name + "_" + strconv.Itoa(conv.synthesized)
	conv.synthesized++
	return id
}

// ollamaInPrompt converts a generate request's system, prompt and
// images into a system and a user message.
func ollamaInPrompt(fields map[string]json.RawMessage, hub *ollamaHubRequest) *apierr.Error {
	system := ""
	if raw := fields["system"]; !isJSONNull(raw) {
		s, e := readString(raw, "system")
		if e != nil {
			return e
		}
		system = s
	}
	prompt := ""
	if raw := fields["prompt"]; !isJSONNull(raw) {
		s, e := readString(raw, "prompt")
		if e != nil {
			return e
		}
		prompt = s
	}
	images, e := ollamaInImages(fields["images"], "images")
	if e != nil {
		return e
	}
	if prompt == "" && len(images) == 0 {
		return errInvalidRequest(`"prompt" is required`)
	}
	if system != "" {
		hub.Messages = append(hub.Messages, hubRequestMessage{Role: "system", Content: quoteJSON(system)})
	}
	hub.Messages = append(hub.Messages, hubRequestMessage{Role: "user", Content: ollamaInUserContent(prompt, images)})
	return nil
}

// ollamaInImages reads an images array as data: URLs.
func ollamaInImages(raw json.RawMessage, path string) ([]string, *apierr.Error) {
	if isJSONNull(raw) {
		return nil, nil
	}
	var list []string
	if raw[0] != '[' || json.Unmarshal(raw, &list) != nil {
		return nil, errInvalidField(path, "an array of base64 strings")
	}
	urls := make([]string, 0, len(list))
	for i := 0; i < len(list); i++ {
		img := list[i]
		if img == "" {
			return nil, errInvalidField(ollamaIndexPath(path, i), "a non-empty base64 string")
		}
		if _, _, ok := parseDataURL(img); ok {
			urls = append(urls, img)
			continue
		}
		urls = append(urls, "data:"+ollamaImageMediaType(img)+";base64,"+img)
	}
	return urls, nil
}

// The first bytes of the image formats Ollama clients send.
var (
	ollamaMagicPNG  = []byte("\x89PNG\r\n\x1a\n")
	ollamaMagicJPEG = []byte{0xFF, 0xD8, 0xFF}
	ollamaMagicGIF  = []byte("GIF8")
	ollamaMagicRIFF = []byte("RIFF")
	ollamaMagicWEBP = []byte("WEBP")
)

// ollamaImageMediaType sniffs an image's media type from the first
// bytes of its base64 data; image/png when no known format matches.
func ollamaImageMediaType(b64 string) string {
	prefix := b64
	if len(prefix) > 16 {
		prefix = prefix[:16]
	}
	// A prefix decodes up to its first bad character: enough to sniff.
	head, _ := base64.StdEncoding.DecodeString(prefix)
	switch {
	case bytes.HasPrefix(head, ollamaMagicPNG):
		return "image/png"
	case bytes.HasPrefix(head, ollamaMagicJPEG):
		return "image/jpeg"
	case bytes.HasPrefix(head, ollamaMagicGIF):
		return "image/gif"
	case bytes.HasPrefix(head, ollamaMagicRIFF) && len(head) >= 12 && bytes.Equal(head[8:12], ollamaMagicWEBP):
		return "image/webp"
	}
	return "image/png"
}

// ollamaInUserContent is a user message's content: the text as a
// string, or (with images) a text part (when there is text) and one
// image_url part per image.
func ollamaInUserContent(text string, images []string) json.RawMessage {
	if len(images) == 0 {
		return quoteJSON(text)
	}
	parts := make([]hubRequestPart, 0, len(images)+1)
	if text != "" {
		parts = append(parts, anthropicInTextPart(text))
	}
	for i := 0; i < len(images); i++ {
		parts = append(parts, anthropicInImagePart(images[i]))
	}
	return json.RawMessage(encodeJSON(parts))
}

// ollamaIndexPath is path[i].
func ollamaIndexPath(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

// ollamaInListError names the first element of an array that is not an
// object (what makes a decode into a slice of all-raw structs fail).
func ollamaInListError(raw json.RawMessage, path string) *apierr.Error {
	items, ok := parseJSONArray(raw)
	if !ok {
		return errInvalidField(path, "an array")
	}
	for i := 0; i < len(items); i++ {
		if !isJSONNull(items[i]) && items[i][0] != '{' {
			return errInvalidField(ollamaIndexPath(path, i), "an object")
		}
	}
	return errInvalidField(path, "an array of objects")
}

// ollamaInToolCallsError finds the tool call, and its field, that did
// not decode.
func ollamaInToolCallsError(raw json.RawMessage, path string) *apierr.Error {
	return anthropicInListError(raw, path, ollamaInDecodeToolCall)
}

// ollamaInDecodeToolCall decodes one tool call, for
// ollamaInToolCallsError.
func ollamaInDecodeToolCall(raw json.RawMessage) error {
	var c ollamaInToolCall
	return json.Unmarshal(raw, &c)
}
