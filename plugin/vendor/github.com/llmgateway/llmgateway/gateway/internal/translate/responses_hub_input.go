package translate

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// The input half of the Responses → hub request translation
// (responses_hub_request.go has the entry point):
//
//   - input as a string → one user message;
//   - a message item (type "message", or no type with a role): roles
//     user, assistant, system and developer are kept (developer stays
//     "developer", which the OpenAI chat API takes and the other
//     backends' translators hoist with the system messages); content is
//     a string or a list of parts: input_text and output_text → text,
//     refusal → its text, input_image → image_url (the URL or data: URL,
//     detail kept), input_file with file_data → a file part. A lone text
//     part becomes a string content. An assistant message's texts are
//     concatenated, as they were generated; images and files are for
//     user messages only;
//   - function_call → an assistant tool call (call_id as its id, the
//     arguments string as sent); consecutive calls, and calls right
//     after an assistant message, join that assistant message;
//     custom_tool_call → a tool call of the custom tool's function, its
//     input as the one argument {"input": "<text>"}; a call with a
//     namespace is named as its namespace's function is offered
//     (responsesFlatName);
//   - function_call_output and custom_tool_call_output → a tool message
//     with the output string (a list of parts: the texts joined with
//     "\n"); the images and files of a list (a tool message carries text
//     only) follow in one user message after the run of tool messages;
//   - reasoning items are dropped: the hub has no place for them, and
//     their encrypted content means nothing to another provider; every
//     item's id and status are ignored;
//   - refused with a 400: an unknown item or part type (item_reference
//     included: the gateway keeps no items), an image or file by
//     file_id or file_url, and a value of the wrong type.

// responsesInState is a Responses request's translation in progress:
// the hub request, what the pipeline is told, the names the namespace
// functions are offered under (namespace "\x00" function → hub name),
// the hub names of the tools offered (→ the path of their definition),
// and the media of tool outputs waiting for the tool messages to end.
type responsesInState struct {
	hub       *responsesHubRequest
	in        *ResponsesInbound
	qualified map[string]string
	names     map[string]string
	media     []responsesHubPart
}

// responsesInInput converts input.
func responsesInInput(raw json.RawMessage, st *responsesInState) *apierr.Error {
	if isJSONNull(raw) {
		return errInvalidRequest(`"input" is required (this gateway keeps no conversation state)`)
	}
	first := len(st.hub.Messages)
	switch raw[0] {
	case '"':
		text, e := readString(raw, "input")
		if e != nil {
			return e
		}
		st.hub.Messages = append(st.hub.Messages, hubRequestMessage{Role: "user", Content: quoteJSON(text)})
	case '[':
		items, e := readArray(raw, "input")
		if e != nil {
			return e
		}
		for i := 0; i < len(items); i++ {
			if e := responsesInItemAt(items[i], "input["+strconv.Itoa(i)+"]", st); e != nil {
				return e
			}
		}
		responsesInFlushMedia(st)
	default:
		return errInvalidField("input", "a string or an array of input items")
	}
	if len(st.hub.Messages) == first {
		return errInvalidRequest(`"input" must hold at least one message, tool call or tool output`)
	}
	return nil
}

// responsesInItemAt converts one input item.
func responsesInItemAt(raw json.RawMessage, path string, st *responsesInState) *apierr.Error {
	if len(raw) == 0 || raw[0] != '{' {
		return errInvalidField(path, "an object")
	}
	var item responsesInItem
	if err := json.Unmarshal(raw, &item); err != nil {
		return anthropicInTypeError(path, err)
	}
	kind := item.Type
	if kind == "" && item.Role != "" {
		kind = "message"
	}
	if kind != "function_call_output" && kind != "custom_tool_call_output" {
		responsesInFlushMedia(st)
	}
	switch kind {
	case "message":
		return responsesInMessage(&item, path, st)
	case "function_call":
		return responsesInCall(&item, path, false, st)
	case "custom_tool_call":
		return responsesInCall(&item, path, true, st)
	case "function_call_output", "custom_tool_call_output":
		return responsesInCallOutput(&item, path, st)
	case "reasoning":
		return nil
	case "":
		return errInvalidField(path+".type", "a non-empty string")
	}
	return anthropicInUnsupported(path+".type", "input item type \""+kind+"\"")
}

// responsesInMessage converts a message item.
func responsesInMessage(item *responsesInItem, path string, st *responsesInState) *apierr.Error {
	role := item.Role
	switch role {
	case "user", "assistant", "system", "developer":
	default:
		return errInvalidField(path+".role", `"user", "assistant", "system" or "developer"`)
	}
	raw := item.Content
	if isJSONNull(raw) {
		return errInvalidRequest(`"` + path + `.content" is required`)
	}
	if raw[0] == '"' {
		text, e := readString(raw, path+".content")
		if e != nil {
			return e
		}
		if role != "assistant" || text != "" {
			st.hub.Messages = append(st.hub.Messages, hubRequestMessage{Role: role, Content: quoteJSON(text)})
		}
		return nil
	}
	if raw[0] != '[' {
		return errInvalidField(path+".content", "a string or an array of content parts")
	}
	var parts []responsesInPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return anthropicInListError(raw, path+".content", responsesInDecodePart)
	}
	if role == "assistant" {
		return responsesInAssistantText(parts, path, st)
	}
	hubParts := make([]responsesHubPart, 0, len(parts))
	for j := 0; j < len(parts); j++ {
		part, e := responsesInContentPart(&parts[j], path+".content["+strconv.Itoa(j)+"]", role == "user")
		if e != nil {
			return e
		}
		hubParts = append(hubParts, part)
	}
	if len(hubParts) > 0 {
		st.hub.Messages = append(st.hub.Messages, hubRequestMessage{Role: role, Content: responsesInPartsContent(hubParts)})
	}
	return nil
}

// responsesInDecodePart decodes one part, for anthropicInListError.
func responsesInDecodePart(raw json.RawMessage) error {
	var p responsesInPart
	return json.Unmarshal(raw, &p)
}

// responsesInAssistantText adds an assistant message's parts as one
// string content; a message with no text is dropped.
func responsesInAssistantText(parts []responsesInPart, path string, st *responsesInState) *apierr.Error {
	var sb strings.Builder
	for j := 0; j < len(parts); j++ {
		p := &parts[j]
		switch p.Type {
		case "output_text", "input_text":
			sb.WriteString(p.Text)
		case "refusal":
			sb.WriteString(p.Refusal)
		default:
			return responsesInBadPart(path+".content["+strconv.Itoa(j)+"].type", p.Type, "assistant")
		}
	}
	if sb.Len() > 0 {
		st.hub.Messages = append(st.hub.Messages, hubRequestMessage{Role: "assistant", Content: quoteJSON(sb.String())})
	}
	return nil
}

// responsesInContentPart converts one part of a user, system or
// developer message (media only when media is set: a user message) or
// of a tool output (media always).
func responsesInContentPart(p *responsesInPart, path string, media bool) (responsesHubPart, *apierr.Error) {
	switch p.Type {
	case "input_text", "output_text":
		return responsesInTextPart(p.Text), nil
	case "refusal":
		return responsesInTextPart(p.Refusal), nil
	case "input_image", "input_file":
		if !media {
			return responsesHubPart{}, responsesInBadPart(path+".type", p.Type, "system or developer")
		}
		return responsesInMediaPart(p, path)
	}
	return responsesHubPart{}, responsesInBadPart(path+".type", p.Type, "")
}

// responsesInBadPart is the 400 for a part of type kind where (a role's
// messages, "" for anywhere) cannot carry.
func responsesInBadPart(path, kind, where string) *apierr.Error {
	switch {
	case kind == "":
		return errInvalidField(path, "a non-empty string")
	case where != "" && (kind == "input_image" || kind == "input_file"):
		return errInvalidField(path, "a text part in "+where+" messages (got \""+kind+"\")")
	}
	return anthropicInUnsupported(path, "content part type \""+kind+"\"")
}

// responsesInMediaPart converts an input_image or input_file part.
func responsesInMediaPart(p *responsesInPart, path string) (responsesHubPart, *apierr.Error) {
	if p.Type == "input_image" {
		if p.ImageURL == "" {
			if p.FileID != "" {
				return responsesHubPart{}, anthropicInUnsupported(path+".file_id", "an image by file id")
			}
			return responsesHubPart{}, errInvalidField(path+".image_url", "a non-empty string")
		}
		return responsesHubPart{Type: "image_url", ImageURL: &responsesHubImage{URL: p.ImageURL, Detail: p.Detail}}, nil
	}
	if p.FileData == "" {
		switch {
		case p.FileID != "":
			return responsesHubPart{}, anthropicInUnsupported(path+".file_id", "a file by file id")
		case p.FileURL != "":
			return responsesHubPart{}, anthropicInUnsupported(path+".file_url", "a file by URL")
		}
		return responsesHubPart{}, errInvalidField(path+".file_data", "a non-empty string")
	}
	name := p.Filename
	if name == "" {
		name = "file"
	}
	return responsesHubPart{Type: "file", File: &hubRequestFile{Filename: name, FileData: p.FileData}}, nil
}

// responsesInTextPart is a text part. A function, so every part points
// at its own string.
func responsesInTextPart(text string) responsesHubPart {
	return responsesHubPart{Type: "text", Text: &text}
}

// responsesInPartsContent encodes parts as a message's content: a lone
// text part as a plain string.
func responsesInPartsContent(parts []responsesHubPart) json.RawMessage {
	if len(parts) == 1 && parts[0].Type == "text" {
		return quoteJSON(*parts[0].Text)
	}
	return json.RawMessage(encodeJSON(parts))
}

// responsesInCustomArguments is a custom tool's function arguments.
type responsesInCustomArguments struct {
	Input string `json:"input"`
}

// responsesInCall converts a function_call or custom_tool_call item
// into a tool call of the assistant message it joins.
func responsesInCall(item *responsesInItem, path string, custom bool, st *responsesInState) *apierr.Error {
	if item.CallID == "" {
		return errInvalidField(path+".call_id", "a non-empty string")
	}
	if item.Name == "" {
		return errInvalidField(path+".name", "a non-empty string")
	}
	args := "{}"
	if custom {
		input := ""
		if !isJSONNull(item.Input) {
			s, e := readString(item.Input, path+".input")
			if e != nil {
				return e
			}
			input = s
		}
		args = string(encodeJSON(&responsesInCustomArguments{Input: input}))
	} else if raw := item.Arguments; !isJSONNull(raw) {
		switch raw[0] {
		case '"':
			if s := jsonStringValue(raw); s != "" {
				args = s
			}
		case '{':
			args = compactArguments(raw)
		default:
			return errInvalidField(path+".arguments", "a string")
		}
	}
	call := hubToolCall{ID: item.CallID, Type: "function",
		Function: hubFunction{Name: responsesInCallName(item.Namespace, item.Name, st), Arguments: args}}
	msgs := st.hub.Messages
	if n := len(msgs); n > 0 && msgs[n-1].Role == "assistant" {
		msgs[n-1].ToolCalls = append(msgs[n-1].ToolCalls, call)
		return nil
	}
	st.hub.Messages = append(msgs, hubRequestMessage{Role: "assistant", Content: jsonNull, ToolCalls: []hubToolCall{call}})
	return nil
}

// responsesInCallName is the hub name of a called tool: its own name,
// or for a namespace's function the name it is offered under (the
// flattened name, also when this request no longer offers it).
func responsesInCallName(namespace, name string, st *responsesInState) string {
	if namespace == "" {
		return name
	}
	if flat, ok := st.qualified[namespace+"\x00"+name]; ok {
		return flat
	}
	return responsesFlatName(namespace, name)
}

// responsesInCallOutput converts a function_call_output or
// custom_tool_call_output item into a tool message.
func responsesInCallOutput(item *responsesInItem, path string, st *responsesInState) *apierr.Error {
	if item.CallID == "" {
		return errInvalidField(path+".call_id", "a non-empty string")
	}
	text := ""
	raw := item.Output
	if !isJSONNull(raw) {
		switch raw[0] {
		case '"':
			s, e := readString(raw, path+".output")
			if e != nil {
				return e
			}
			text = s
		case '[':
			var parts []responsesInPart
			if err := json.Unmarshal(raw, &parts); err != nil {
				return anthropicInListError(raw, path+".output", responsesInDecodePart)
			}
			texts := make([]string, 0, len(parts))
			for j := 0; j < len(parts); j++ {
				part, e := responsesInContentPart(&parts[j], path+".output["+strconv.Itoa(j)+"]", true)
				if e != nil {
					return e
				}
				if part.Type == "text" {
					texts = append(texts, *part.Text)
				} else {
					st.media = append(st.media, part)
				}
			}
			text = strings.Join(texts, "\n")
		default:
			return errInvalidField(path+".output", "a string or an array of content parts")
		}
	}
	st.hub.Messages = append(st.hub.Messages, hubRequestMessage{Role: "tool", Content: quoteJSON(text), ToolCallID: item.CallID})
	return nil
}

// responsesInFlushMedia sends the media of the tool outputs so far as a
// user message, after the tool messages.
func responsesInFlushMedia(st *responsesInState) {
	if len(st.media) == 0 {
		return
	}
	st.hub.Messages = append(st.hub.Messages, hubRequestMessage{Role: "user", Content: json.RawMessage(encodeJSON(st.media))})
	st.media = nil
}
