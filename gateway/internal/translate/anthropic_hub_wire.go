package translate

import "encoding/json"

// Wire shapes of the Anthropic client direction (anthropic_hub*.go): an
// Anthropic Messages client served by a hub backend. The Messages request
// as the client sends it (read), the hub request written from it, the hub
// answer read back (whole or chunk by chunk), and the Anthropic message
// and stream events written to the client. The other direction's shapes
// (hub client, Anthropic upstream) are in hub_anthropic_wire.go.

// ---------------------------------------------------------------------
// Messages request, as an Anthropic client sends it

// anthropicInRequest is the top level of a Messages request, each field
// raw so that a value of the wrong type is reported by its name. It is
// filled from the body's exact keys (anthropicInDecode), not decoded.
type anthropicInRequest struct {
	Model         json.RawMessage // model
	MaxTokens     json.RawMessage // max_tokens
	System        json.RawMessage // system
	Messages      json.RawMessage // messages
	Tools         json.RawMessage // tools
	ToolChoice    json.RawMessage // tool_choice
	StopSequences json.RawMessage // stop_sequences
	Temperature   json.RawMessage // temperature
	TopP          json.RawMessage // top_p
	Metadata      json.RawMessage // metadata
	Thinking      json.RawMessage // thinking
	Stream        json.RawMessage // stream
}

// anthropicInMessage is one turn: Content is a string or an array of
// blocks.
type anthropicInMessage struct {
	Role    json.RawMessage `json:"role"`
	Content json.RawMessage `json:"content"`
}

// anthropicInBlock is any content block; the type decides which fields
// are set. Content is a tool_result's (a string or an array of blocks).
// Unlisted fields (cache_control, citations, signature, ...) are
// dropped by the decode.
type anthropicInBlock struct {
	Type      string             `json:"type"`
	Text      string             `json:"text"`
	Source    *anthropicInSource `json:"source"`
	ID        string             `json:"id"`
	Name      string             `json:"name"`
	Input     json.RawMessage    `json:"input"`
	ToolUseID string             `json:"tool_use_id"`
	Content   json.RawMessage    `json:"content"`
	IsError   bool               `json:"is_error"`
}

// anthropicInSource is an image's or a document's source: base64 data,
// a URL, or (documents) plain text in Data.
type anthropicInSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
	URL       string `json:"url"`
}

// anthropicInTool is a tool definition: a custom tool (Type "" or
// "custom") or a server tool (any other Type).
type anthropicInTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type anthropicInToolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use"`
}

type anthropicInMetadata struct {
	UserID json.RawMessage `json:"user_id"`
}

type anthropicInThinking struct {
	Type string `json:"type"`
}

// ---------------------------------------------------------------------
// Hub (OpenAI chat) request, as written from it

// hubRequest is the chat completions request the hub backends take.
type hubRequest struct {
	Model             string              `json:"model"`
	Messages          []hubRequestMessage `json:"messages"`
	MaxTokens         int64               `json:"max_tokens,omitempty"`
	Temperature       json.RawMessage     `json:"temperature,omitempty"`
	TopP              json.RawMessage     `json:"top_p,omitempty"`
	Stop              []string            `json:"stop,omitempty"`
	Stream            bool                `json:"stream,omitempty"`
	Tools             []hubRequestTool    `json:"tools,omitempty"`
	ToolChoice        json.RawMessage     `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool               `json:"parallel_tool_calls,omitempty"`
	User              string              `json:"user,omitempty"`
}

// hubRequestMessage is one message. Content holds encoded JSON: a
// string, an array of hubRequestPart, or null (an assistant turn of tool
// calls only).
type hubRequestMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []hubToolCall   `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

// hubRequestPart is a content part: text, image_url or file.
type hubRequestPart struct {
	Type     string           `json:"type"`
	Text     *string          `json:"text,omitempty"`
	ImageURL *hubRequestImage `json:"image_url,omitempty"`
	File     *hubRequestFile  `json:"file,omitempty"`
}

type hubRequestImage struct {
	URL string `json:"url"`
}

type hubRequestFile struct {
	Filename string `json:"filename"`
	FileData string `json:"file_data"` // a data: URL
}

type hubRequestTool struct {
	Type     string             `json:"type"` // "function"
	Function hubRequestFunction `json:"function"`
}

type hubRequestFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// hubRequestNamedChoice is tool_choice naming one function.
type hubRequestNamedChoice struct {
	Type     string          `json:"type"` // "function"
	Function hubRequestNamed `json:"function"`
}

type hubRequestNamed struct {
	Name string `json:"name"`
}

// ---------------------------------------------------------------------
// Hub answers, as read back: a chat.completion or one chunk of a stream

// hubReadBody is a chat.completion, a chat.completion.chunk, or an
// error body; Message is set in a completion, Delta in a chunk. The
// text fields stay raw: a stream passes a JSON string on to the client
// without decoding and re-encoding it.
type hubReadBody struct {
	ID      string          `json:"id"`
	Object  string          `json:"object"`
	Choices []hubReadChoice `json:"choices"` // nil when absent or null
	Usage   *hubReadUsage   `json:"usage"`
	Error   json.RawMessage `json:"error"`
}

type hubReadChoice struct {
	Index        int            `json:"index"`
	Message      hubReadMessage `json:"message"`
	Delta        hubReadMessage `json:"delta"`
	FinishReason string         `json:"finish_reason"` // "" while null
}

// hubReadMessage is a message or a delta. Content is a string, null, or
// (from some providers) an array of parts; reasoning comes as
// reasoning_content or reasoning, depending on the provider.
type hubReadMessage struct {
	Content          json.RawMessage   `json:"content"`
	ReasoningContent json.RawMessage   `json:"reasoning_content"`
	Reasoning        json.RawMessage   `json:"reasoning"`
	Refusal          json.RawMessage   `json:"refusal"`
	ToolCalls        []hubReadToolCall `json:"tool_calls"`
}

// hubReadToolCall is a whole tool call or, in a stream, a fragment of
// one. Arguments is a JSON string (a piece of it in a fragment), or an
// object from providers that send one.
type hubReadToolCall struct {
	Index    *int            `json:"index"`
	ID       string          `json:"id"`
	Function hubReadFunction `json:"function"`
}

type hubReadFunction struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

type hubReadUsage struct {
	PromptTokens        int64                 `json:"prompt_tokens"`
	CompletionTokens    int64                 `json:"completion_tokens"`
	PromptTokensDetails *hubReadPromptDetails `json:"prompt_tokens_details"`
}

type hubReadPromptDetails struct {
	CachedTokens int64 `json:"cached_tokens"`
}

// hubReadError is the error object of a hub error body. Code is a
// string or a number, depending on the provider.
type hubReadError struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
	Status  string          `json:"status"`
}

// hubReadPart is one part of an array content.
type hubReadPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// ---------------------------------------------------------------------
// Anthropic message and stream events, as written to the client

// anthropicOutMessage is a Messages response, also the "message" of
// message_start (with no content and a null stop_reason).
type anthropicOutMessage struct {
	ID           string              `json:"id"`
	Type         string              `json:"type"` // "message"
	Role         string              `json:"role"` // "assistant"
	Model        string              `json:"model"`
	Content      []anthropicOutBlock `json:"content"`
	StopReason   *string             `json:"stop_reason"`
	StopSequence *string             `json:"stop_sequence"` // always null
	Usage        anthropicOutUsage   `json:"usage"`
}

// anthropicOutBlock is a content block: text (Text), thinking
// (Thinking, Signature) or tool_use (ID, Name, Input). In a
// content_block_start the text and input are empty.
type anthropicOutBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text,omitempty"`
	Thinking  *string         `json:"thinking,omitempty"`
	Signature *string         `json:"signature,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
}

// anthropicOutUsage is a message's usage; InputTokens excludes the cache
// reads.
type anthropicOutUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
}

type anthropicOutMessageStart struct {
	Type    string              `json:"type"` // "message_start"
	Message anthropicOutMessage `json:"message"`
}

type anthropicOutBlockStart struct {
	Type         string            `json:"type"` // "content_block_start"
	Index        int               `json:"index"`
	ContentBlock anthropicOutBlock `json:"content_block"`
}

type anthropicOutMessageDelta struct {
	Type  string            `json:"type"` // "message_delta"
	Delta anthropicOutStop  `json:"delta"`
	Usage anthropicOutUsage `json:"usage"`
}

type anthropicOutStop struct {
	StopReason   string  `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"` // always null
}
