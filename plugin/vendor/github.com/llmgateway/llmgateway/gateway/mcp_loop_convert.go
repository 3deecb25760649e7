package gateway

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/llmgateway/llmgateway/gateway/internal/translate"
)

// The tool loop's JSON: federated tools as hub (OpenAI chat) tools, the
// hub request of each turn, the tool calls of a hub answer, MCP
// CallToolResults as tool messages, and the final hub answer as a hub
// stream for a streaming client. Every turn of the loop speaks the hub
// shape, whatever the client's inbound API and the provider's type: the
// client's request is converted once (its hubConversion) and the final
// answer converted back.

const (
	// maxLoopTools caps the tools offered to the model (OpenAI's own
	// cap); the rest are left out, with a warning.
	maxLoopTools = 128
	// maxLoopToolName is the longest tool name every provider type
	// accepts (OpenAI's 64).
	maxLoopToolName = 64
	// maxLoopToolCalls caps the tool calls run per turn; a model asking
	// for more gets an error result for each of the rest.
	maxLoopToolCalls = 16
	// maxToolResultBytes caps one tool result's text fed back to the
	// model (cut at a character boundary, the cut said).
	maxToolResultBytes = 64 << 10
)

var (
	quotedToolsKey     = []byte(`"tools"`)
	quotedFunctionsKey = []byte(`"functions"`)
)

// clientSentTools reports whether a request body declares tools of its
// own: a non-empty top-level "tools" (every chat-shaped API) or
// "functions" (OpenAI's legacy field).
func clientSentTools(raw []byte) bool {
	if !bytes.Contains(raw, quotedToolsKey) && !bytes.Contains(raw, quotedFunctionsKey) {
		return false
	}
	var top struct {
		Tools     []json.RawMessage `json:"tools"`
		Functions []json.RawMessage `json:"functions"`
	}
	if json.Unmarshal(raw, &top) != nil {
		return true // not ours to judge: the request passes untouched
	}
	return len(top.Tools) > 0 || len(top.Functions) > 0
}

// hubTool is one tool of a hub request.
type hubTool struct {
	Type     string          `json:"type"` // "function"
	Function hubToolFunction `json:"function"`
}

type hubToolFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// emptyToolSchema is the parameters of a tool without an input schema.
var emptyToolSchema = json.RawMessage(`{"type":"object","properties":{}}`)

// offeredTools are the federated tools as hub tools, under names every
// provider type accepts (offeredToolName), and the federated tool each
// offered name stands for. A tool whose name cannot be offered, or past
// maxLoopTools, is left out; dropped counts them.
func offeredTools(tools []federatedTool) ([]hubTool, map[string]*federatedTool, int) {
	out := make([]hubTool, 0, len(tools))
	byName := make(map[string]*federatedTool, len(tools))
	dropped := 0
	for i := 0; i < len(tools); i++ {
		t := &tools[i]
		name := offeredToolName(t.name)
		if name == "" || byName[name] != nil || len(out) == maxLoopTools {
			dropped++
			continue
		}
		schema := t.inputSchema
		if len(bytes.TrimSpace(schema)) == 0 || bytes.TrimSpace(schema)[0] != '{' || !json.Valid(schema) {
			schema = emptyToolSchema
		}
		byName[name] = t
		out = append(out, hubTool{Type: "function", Function: hubToolFunction{Name: name, Description: t.description, Parameters: schema}})
	}
	return out, byName, dropped
}

// offeredToolName is a federated tool name as the providers accept one
// (^[A-Za-z0-9_-]{1,64}$): every other character becomes '_'; a name
// longer than 64 bytes cannot be offered ("").
func offeredToolName(name string) string {
	if name == "" || len(name) > maxLoopToolName {
		return ""
	}
	b := []byte(name)
	for i := 0; i < len(b); i++ {
		ch := b[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '_' || ch == '-') {
			b[i] = '_'
		}
	}
	return string(b)
}

// loopHubRequest is the first turn's hub request: base (the client's
// chat request, or its conversion to one) with the offered tools, never
// streaming (stream_options, which a non-streaming request may not
// carry, removed).
func loopHubRequest(base []byte, tools []hubTool) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(base, &top); err != nil {
		return nil, err
	}
	enc, err := json.Marshal(tools)
	if err != nil {
		return nil, err
	}
	top["tools"] = enc
	top["stream"] = json.RawMessage("false")
	delete(top, "stream_options")
	return json.Marshal(top)
}

// hubCall is one tool call of a hub answer.
type hubCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// hubAnswer is what the loop reads of a whole hub answer: the first
// choice's message (kept raw for the next turn) and its tool calls.
type hubAnswer struct {
	Choices []struct {
		Message json.RawMessage `json:"message"`
	} `json:"choices"`
}

type hubAnswerMessage struct {
	Content   json.RawMessage `json:"content"`
	ToolCalls []hubCall       `json:"tool_calls"`
}

// answerToolCalls reads a hub answer's first choice: its content (raw)
// and tool calls. ok is false when the body is no chat completion.
func answerToolCalls(answer []byte) (json.RawMessage, []hubCall, bool) {
	var a hubAnswer
	if json.Unmarshal(answer, &a) != nil || len(a.Choices) == 0 {
		return nil, nil, false
	}
	var m hubAnswerMessage
	if json.Unmarshal(a.Choices[0].Message, &m) != nil {
		return nil, nil, false
	}
	return m.Content, m.ToolCalls, true
}

// hubAssistantTurn is the assistant message the next turn carries: the
// answer's content and its tool calls (ids made up where the provider
// sent none).
type hubAssistantTurn struct {
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	ToolCalls []hubCall       `json:"tool_calls"`
}

// hubToolTurn is one tool result message.
type hubToolTurn struct {
	Role       string `json:"role"` // "tool"
	ToolCallID string `json:"tool_call_id"`
	Content    string `json:"content"`
}

// appendTurn is the hub request body with the assistant's message and
// the tool results appended to its messages.
func appendTurn(body []byte, content json.RawMessage, calls []hubCall, results []hubToolTurn) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, err
	}
	var msgs []json.RawMessage
	if err := json.Unmarshal(top["messages"], &msgs); err != nil {
		return nil, err
	}
	if len(content) == 0 {
		content = json.RawMessage("null")
	}
	turn, err := json.Marshal(hubAssistantTurn{Role: "assistant", Content: content, ToolCalls: calls})
	if err != nil {
		return nil, err
	}
	msgs = append(msgs, turn)
	for i := 0; i < len(results); i++ {
		r, err := json.Marshal(results[i])
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, r)
	}
	enc, err := json.Marshal(msgs)
	if err != nil {
		return nil, err
	}
	top["messages"] = enc
	return json.Marshal(top)
}

// callToolResult is what the loop reads of an MCP CallToolResult.
type callToolResult struct {
	Content []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		MimeType string `json:"mimeType"`
		URI      string `json:"uri"`
		Resource *struct {
			URI      string `json:"uri"`
			MimeType string `json:"mimeType"`
			Text     string `json:"text"`
		} `json:"resource"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
}

// toolResultText is a CallToolResult as the text of a tool message:
// its text items (and embedded text resources) one per line, other
// items named in brackets, structuredContent when there is no content;
// and whether the tool reported an error (isError). A result that is
// not a CallToolResult is an error of its own.
func toolResultText(res json.RawMessage) (string, bool) {
	var r callToolResult
	if json.Unmarshal(res, &r) != nil {
		return "the tool's result is not an MCP CallToolResult", true
	}
	var b []byte
	for i := 0; i < len(r.Content); i++ {
		it := &r.Content[i]
		if len(b) > 0 {
			b = append(b, '\n')
		}
		switch {
		case it.Type == "text":
			b = append(b, it.Text...)
		case it.Type == "resource" && it.Resource != nil && it.Resource.Text != "":
			b = append(b, it.Resource.Text...)
		case it.Type == "resource" && it.Resource != nil:
			b = append(b, "[resource "+it.Resource.URI+"]"...)
		case it.Type == "resource_link":
			b = append(b, "[resource "+it.URI+"]"...)
		default:
			b = append(b, "["+it.Type+" "+it.MimeType+"]"...)
		}
	}
	if len(b) == 0 && len(r.StructuredContent) > 0 && string(r.StructuredContent) != "null" {
		b = append(b, r.StructuredContent...)
	}
	return capToolText(string(b)), r.IsError
}

// capToolText cuts a tool result's text to maxToolResultBytes.
func capToolText(s string) string {
	if len(s) <= maxToolResultBytes {
		return s
	}
	cut := maxToolResultBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "\n[cut by the gateway at " + strconv.Itoa(maxToolResultBytes) + " bytes]"
}

// loopUsage is the hub usage object of usage u.
type loopUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

func newLoopUsage(u translate.Usage) *loopUsage {
	out := &loopUsage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.PromptTokens + u.CompletionTokens}
	out.PromptTokensDetails.CachedTokens = u.CacheReadTokens
	return out
}

// addUsage is the sum of two turns' usage (reported only when both
// were; estimated when either was).
func addUsage(a, b translate.Usage) translate.Usage {
	return translate.Usage{
		PromptTokens:        a.PromptTokens + b.PromptTokens,
		CompletionTokens:    a.CompletionTokens + b.CompletionTokens,
		CacheCreationTokens: a.CacheCreationTokens + b.CacheCreationTokens,
		CacheReadTokens:     a.CacheReadTokens + b.CacheReadTokens,
		Reported:            a.Reported && b.Reported,
		Estimated:           a.Estimated || b.Estimated,
	}
}

// withLoopUsage is a hub answer with its usage replaced by u (the sum
// over the loop's turns).
func withLoopUsage(answer []byte, u translate.Usage) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(answer, &top); err != nil {
		return nil, err
	}
	enc, err := json.Marshal(newLoopUsage(u))
	if err != nil {
		return nil, err
	}
	top["usage"] = enc
	return json.Marshal(top)
}

// hubStreamChunk is one chat.completion.chunk of the stream made from a
// final answer.
type hubStreamChunk struct {
	ID      string                 `json:"id"`
	Object  string                 `json:"object"`
	Created int64                  `json:"created"`
	Model   string                 `json:"model"`
	Choices []hubStreamChunkChoice `json:"choices"`
	Usage   *loopUsage             `json:"usage,omitempty"`
}

type hubStreamChunkChoice struct {
	Index        int             `json:"index"`
	Delta        json.RawMessage `json:"delta"`
	FinishReason *string         `json:"finish_reason"`
}

// hubStreamToolCall is a whole tool call as one stream fragment.
type hubStreamToolCall struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// hubStreamOf is a whole hub answer as the hub event stream a streaming
// upstream would have sent: a role chunk (with whatever else the message
// carries, such as reasoning), a content chunk, a chunk of the tool
// calls, the finish chunk, the usage chunk (u) and [DONE].
func hubStreamOf(answer []byte, u translate.Usage) ([]byte, error) {
	var a struct {
		ID      string `json:"id"`
		Created int64  `json:"created"`
		Model   string `json:"model"`
		Choices []struct {
			Message      map[string]json.RawMessage `json:"message"`
			FinishReason string                     `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(answer, &a); err != nil {
		return nil, err
	}
	if len(a.Choices) == 0 {
		return nil, errNoChoice
	}
	msg := a.Choices[0].Message
	finish := a.Choices[0].FinishReason
	if finish == "" {
		finish = "stop"
	}
	base := hubStreamChunk{ID: a.ID, Object: "chat.completion.chunk", Created: a.Created, Model: a.Model}
	var out []byte
	content, calls := msg["content"], msg["tool_calls"]
	delete(msg, "content")
	delete(msg, "tool_calls")
	delete(msg, "refusal")
	msg["role"] = json.RawMessage(`"assistant"`)
	first, _ := json.Marshal(msg)
	out = appendChunk(out, base, first, nil, nil)
	if len(content) > 0 && string(content) != "null" && string(content) != `""` {
		d, _ := json.Marshal(map[string]json.RawMessage{"content": content})
		out = appendChunk(out, base, d, nil, nil)
	}
	var whole []hubCall
	if len(calls) > 0 && string(calls) != "null" {
		if err := json.Unmarshal(calls, &whole); err != nil {
			return nil, err
		}
	}
	if len(whole) > 0 {
		frags := make([]hubStreamToolCall, len(whole))
		for i := 0; i < len(whole); i++ {
			frags[i].Index = i
			frags[i].ID = whole[i].ID
			frags[i].Type = "function"
			frags[i].Function.Name = whole[i].Function.Name
			frags[i].Function.Arguments = whole[i].Function.Arguments
		}
		d, _ := json.Marshal(map[string]interface{}{"tool_calls": frags})
		out = appendChunk(out, base, d, nil, nil)
	}
	out = appendChunk(out, base, json.RawMessage("{}"), &finish, nil)
	out = appendChunk(out, base, nil, nil, newLoopUsage(u))
	return append(out, sseDone...), nil
}

// appendChunk appends one chunk event: base with the delta of choice 0
// (no choice when delta is nil) and usage.
func appendChunk(out []byte, base hubStreamChunk, delta json.RawMessage, finish *string, usage *loopUsage) []byte {
	base.Choices = []hubStreamChunkChoice{}
	if delta != nil {
		base.Choices = []hubStreamChunkChoice{{Index: 0, Delta: delta, FinishReason: finish}}
	}
	base.Usage = usage
	data, _ := json.Marshal(base)
	out = append(out, "data: "...)
	out = append(out, data...)
	return append(out, "\n\n"...)
}
