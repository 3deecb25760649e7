package translate

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// The conversation half of the Anthropic → hub request translation
// (anthropic_hub_request.go has the entry point):
//
//   - system, a string or text blocks → one leading system message, the
//     texts joined with a blank line;
//   - a user turn: each tool_result becomes a tool message, in order,
//     ahead of one user message holding the rest of the turn. Text →
//     text parts (a lone text block → a string content), base64 image →
//     image_url with a data: URL, url image → image_url with the URL,
//     base64 PDF document → a file part (filename "document.pdf"),
//     plain-text document → a text part;
//   - a tool_result's content is a string; text blocks are joined with
//     "\n", "Error: " goes first when is_error is set, and its images and
//     documents (a tool message carries text only) open the user message
//     that follows;
//   - an assistant turn: text → content (the blocks concatenated, as the
//     answer was generated), tool_use → tool_calls with the input object
//     as arguments, numbers digit for digit;
//   - thinking and redacted_thinking → dropped: the hub has no place for
//     them, and their signatures mean nothing to another provider;
//   - a turn left with nothing to send is dropped;
//   - refused with a 400: an unknown block type (server tool blocks
//     included), a block its role cannot carry (tool_use from the user;
//     images, documents or tool_result from the assistant), an image
//     source other than base64 and url, a document other than a base64
//     PDF or plain text.

// anthropicInSystem adds the system prompt as the leading system
// message.
func anthropicInSystem(raw json.RawMessage, hub *hubRequest) *apierr.Error {
	return anthropicInSystemAt(raw, "system", hub)
}

// anthropicInSystemAt adds a system text (a string or text blocks, the
// field at path) as a hub system message where the conversation is: the
// top-level prompt, or a system turn inside "messages" (Claude Code
// sends its environment block so, under the per-turn-control beta), which
// OpenAI-compatible servers accept anywhere.
func anthropicInSystemAt(raw json.RawMessage, path string, hub *hubRequest) *apierr.Error {
	if isJSONNull(raw) {
		return nil
	}
	text := ""
	switch raw[0] {
	case '"':
		s, e := readString(raw, path)
		if e != nil {
			return e
		}
		text = s
	case '[':
		blocks, e := anthropicInBlocks(raw, path)
		if e != nil {
			return e
		}
		texts := make([]string, 0, len(blocks))
		for i := 0; i < len(blocks); i++ {
			if blocks[i].Type != "text" {
				return errInvalidField(path+"["+strconv.Itoa(i)+"].type", `"text"`)
			}
			if blocks[i].Text != "" {
				texts = append(texts, blocks[i].Text)
			}
		}
		text = strings.Join(texts, "\n\n")
	default:
		return errInvalidField(path, "a string or an array of text blocks")
	}
	if text != "" {
		hub.Messages = append(hub.Messages, hubRequestMessage{Role: "system", Content: quoteJSON(text)})
	}
	return nil
}

// anthropicInMessages converts the conversation.
func anthropicInMessages(raw json.RawMessage, hub *hubRequest) *apierr.Error {
	if isJSONNull(raw) {
		return errInvalidRequest(`"messages" is required`)
	}
	if raw[0] != '[' {
		return errInvalidField("messages", "an array")
	}
	var msgs []anthropicInMessage
	if err := json.Unmarshal(raw, &msgs); err != nil {
		return anthropicInListError(raw, "messages", anthropicInDecodeMessage)
	}
	if len(msgs) == 0 {
		return errInvalidRequest(`"messages" must not be empty`)
	}
	first := len(hub.Messages)
	for i := 0; i < len(msgs); i++ {
		path := "messages[" + strconv.Itoa(i) + "]"
		var e *apierr.Error
		switch anthropicInRole(msgs[i].Role) {
		case "user":
			e = anthropicInUserTurn(msgs[i].Content, path, hub)
		case "assistant":
			e = anthropicInAssistantTurn(msgs[i].Content, path, hub)
		case "system":
			e = anthropicInSystemAt(msgs[i].Content, path+".content", hub)
		default:
			e = errInvalidField(path+".role", `"user", "assistant" or "system"`)
		}
		if e != nil {
			return e
		}
	}
	if len(hub.Messages) == first {
		return errInvalidRequest(`"messages" must hold at least one message with content`)
	}
	return nil
}

// anthropicInDecodeMessage decodes one message, for
// anthropicInListError.
func anthropicInDecodeMessage(raw json.RawMessage) error {
	var m anthropicInMessage
	return json.Unmarshal(raw, &m)
}

// anthropicInRole is a message's role, "" when it is not a string.
func anthropicInRole(raw json.RawMessage) string {
	switch string(raw) {
	case `"user"`:
		return "user"
	case `"assistant"`:
		return "assistant"
	}
	var role string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &role) != nil {
		return ""
	}
	return role
}

// anthropicInContent reads a turn's content: a string (the bool is
// true) or an array of blocks.
func anthropicInContent(raw json.RawMessage, path string) (string, []anthropicInBlock, bool, *apierr.Error) {
	if isJSONNull(raw) {
		return "", nil, false, errInvalidRequest(`"` + path + `" is required`)
	}
	if raw[0] == '"' {
		s, e := readString(raw, path)
		return s, nil, true, e
	}
	if raw[0] != '[' {
		return "", nil, false, errInvalidField(path, "a string or an array of content blocks")
	}
	blocks, e := anthropicInBlocks(raw, path)
	return "", blocks, false, e
}

// anthropicInBlocks decodes an array of content blocks.
func anthropicInBlocks(raw json.RawMessage, path string) ([]anthropicInBlock, *apierr.Error) {
	var blocks []anthropicInBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, anthropicInListError(raw, path, anthropicInDecodeBlock)
	}
	return blocks, nil
}

// anthropicInDecodeBlock decodes one block, for anthropicInListError.
func anthropicInDecodeBlock(raw json.RawMessage) error {
	var b anthropicInBlock
	return json.Unmarshal(raw, &b)
}

// anthropicInUserTurn converts a user turn: its tool results as tool
// messages, then a user message with the rest.
func anthropicInUserTurn(raw json.RawMessage, path string, hub *hubRequest) *apierr.Error {
	text, blocks, isText, e := anthropicInContent(raw, path+".content")
	if e != nil {
		return e
	}
	if isText {
		hub.Messages = append(hub.Messages, hubRequestMessage{Role: "user", Content: quoteJSON(text)})
		return nil
	}
	var moved, parts []hubRequestPart
	for j := 0; j < len(blocks); j++ {
		b := &blocks[j]
		switch b.Type {
		case "text":
			parts = append(parts, anthropicInTextPart(b.Text))
		case "image", "document":
			part, e := anthropicInMedia(b, path+".content["+strconv.Itoa(j)+"]")
			if e != nil {
				return e
			}
			parts = append(parts, part)
		case "tool_result":
			msg, media, e := anthropicInToolResult(b, path+".content["+strconv.Itoa(j)+"]")
			if e != nil {
				return e
			}
			hub.Messages = append(hub.Messages, msg)
			moved = append(moved, media...)
		case "thinking", "redacted_thinking":
		default:
			return anthropicInBadBlock(path+".content["+strconv.Itoa(j)+"]", b.Type, "user messages")
		}
	}
	parts = append(moved, parts...)
	if len(parts) == 0 {
		return nil
	}
	hub.Messages = append(hub.Messages, hubRequestMessage{Role: "user", Content: anthropicInPartsContent(parts)})
	return nil
}

// anthropicInAssistantTurn converts an assistant turn: its text as
// content, its tool_use blocks as tool calls.
func anthropicInAssistantTurn(raw json.RawMessage, path string, hub *hubRequest) *apierr.Error {
	text, blocks, isText, e := anthropicInContent(raw, path+".content")
	if e != nil {
		return e
	}
	if isText {
		if text != "" {
			hub.Messages = append(hub.Messages, hubRequestMessage{Role: "assistant", Content: quoteJSON(text)})
		}
		return nil
	}
	var sb strings.Builder
	var calls []hubToolCall
	for j := 0; j < len(blocks); j++ {
		b := &blocks[j]
		switch b.Type {
		case "text":
			sb.WriteString(b.Text)
		case "tool_use":
			call, e := anthropicInToolUse(b, path+".content["+strconv.Itoa(j)+"]")
			if e != nil {
				return e
			}
			calls = append(calls, call)
		case "thinking", "redacted_thinking":
		default:
			return anthropicInBadBlock(path+".content["+strconv.Itoa(j)+"]", b.Type, "assistant messages")
		}
	}
	content := jsonNull
	if sb.Len() > 0 {
		content = quoteJSON(sb.String())
	} else if len(calls) == 0 {
		return nil
	}
	hub.Messages = append(hub.Messages, hubRequestMessage{Role: "assistant", Content: content, ToolCalls: calls})
	return nil
}

// anthropicInBadBlock is the 400 for a block where (a role's messages,
// a tool result) cannot carry, or of a type the hub cannot express.
func anthropicInBadBlock(path, kind, where string) *apierr.Error {
	switch kind {
	case "":
		return errInvalidField(path+".type", "a non-empty string")
	case "text", "image", "document", "tool_use", "tool_result":
		return errInvalidField(path+".type", "a block type allowed in "+where+" (got \""+kind+"\")")
	}
	return anthropicInUnsupported(path+".type", "content block type \""+kind+"\"")
}

// anthropicInToolUse converts a tool_use block into a tool call.
func anthropicInToolUse(b *anthropicInBlock, path string) (hubToolCall, *apierr.Error) {
	if b.ID == "" {
		return hubToolCall{}, errInvalidField(path+".id", "a non-empty string")
	}
	if b.Name == "" {
		return hubToolCall{}, errInvalidField(path+".name", "a non-empty string")
	}
	args := "{}"
	if !isJSONNull(b.Input) {
		if b.Input[0] != '{' {
			return hubToolCall{}, errInvalidField(path+".input", "an object")
		}
		args = compactArguments(b.Input)
	}
	return hubToolCall{ID: b.ID, Type: "function", Function: hubFunction{Name: b.Name, Arguments: args}}, nil
}

// anthropicInToolResult converts a tool_result block into a tool
// message, and returns the images and documents it held, which a tool
// message cannot carry.
func anthropicInToolResult(b *anthropicInBlock, path string) (hubRequestMessage, []hubRequestPart, *apierr.Error) {
	if b.ToolUseID == "" {
		return hubRequestMessage{}, nil, errInvalidField(path+".tool_use_id", "a non-empty string")
	}
	text := ""
	var media []hubRequestPart
	raw := b.Content
	if !isJSONNull(raw) {
		switch raw[0] {
		case '"':
			s, e := readString(raw, path+".content")
			if e != nil {
				return hubRequestMessage{}, nil, e
			}
			text = s
		case '[':
			blocks, e := anthropicInBlocks(raw, path+".content")
			if e != nil {
				return hubRequestMessage{}, nil, e
			}
			texts := make([]string, 0, len(blocks))
			for k := 0; k < len(blocks); k++ {
				switch blocks[k].Type {
				case "text":
					texts = append(texts, blocks[k].Text)
				case "image", "document":
					part, e := anthropicInMedia(&blocks[k], path+".content["+strconv.Itoa(k)+"]")
					if e != nil {
						return hubRequestMessage{}, nil, e
					}
					media = append(media, part)
				default:
					return hubRequestMessage{}, nil, anthropicInBadBlock(path+".content["+strconv.Itoa(k)+"]", blocks[k].Type, "tool_result content")
				}
			}
			text = strings.Join(texts, "\n")
		default:
			return hubRequestMessage{}, nil, errInvalidField(path+".content", "a string or an array of content blocks")
		}
	}
	if b.IsError {
		text = "Error: " + text
	}
	return hubRequestMessage{Role: "tool", Content: quoteJSON(text), ToolCallID: b.ToolUseID}, media, nil
}

// anthropicInMedia converts an image or document block into a part.
func anthropicInMedia(b *anthropicInBlock, path string) (hubRequestPart, *apierr.Error) {
	src := b.Source
	if src == nil {
		return hubRequestPart{}, errInvalidField(path+".source", "an object")
	}
	if b.Type == "image" {
		switch src.Type {
		case "base64":
			if src.MediaType == "" || src.Data == "" {
				return hubRequestPart{}, errInvalidField(path+".source", "a base64 source with media_type and data")
			}
			return anthropicInImagePart("data:" + src.MediaType + ";base64," + src.Data), nil
		case "url":
			if src.URL == "" {
				return hubRequestPart{}, errInvalidField(path+".source.url", "a non-empty string")
			}
			return anthropicInImagePart(src.URL), nil
		}
		return hubRequestPart{}, anthropicInUnsupported(path+".source.type", "image source type \""+src.Type+"\"")
	}
	switch src.Type {
	case "base64":
		if src.MediaType != "application/pdf" {
			return hubRequestPart{}, anthropicInUnsupported(path+".source.media_type", "document media type \""+src.MediaType+"\"")
		}
		if src.Data == "" {
			return hubRequestPart{}, errInvalidField(path+".source.data", "a non-empty string")
		}
		file := &hubRequestFile{Filename: "document.pdf", FileData: "data:application/pdf;base64," + src.Data}
		return hubRequestPart{Type: "file", File: file}, nil
	case "text":
		return anthropicInTextPart(src.Data), nil
	}
	return hubRequestPart{}, anthropicInUnsupported(path+".source.type", "document source type \""+src.Type+"\"")
}

// anthropicInTextPart is a text part. A function, so every part points
// at its own string.
func anthropicInTextPart(text string) hubRequestPart {
	return hubRequestPart{Type: "text", Text: &text}
}

// anthropicInImagePart is an image_url part for url.
func anthropicInImagePart(url string) hubRequestPart {
	return hubRequestPart{Type: "image_url", ImageURL: &hubRequestImage{URL: url}}
}

// anthropicInPartsContent encodes a user message's parts as its content:
// a lone text part as a plain string.
func anthropicInPartsContent(parts []hubRequestPart) json.RawMessage {
	if len(parts) == 1 && parts[0].Type == "text" {
		return quoteJSON(*parts[0].Text)
	}
	return json.RawMessage(encodeJSON(parts))
}
