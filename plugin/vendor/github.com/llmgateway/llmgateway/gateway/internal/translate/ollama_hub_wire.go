package translate

import "encoding/json"

// Wire shapes of the Ollama client direction (ollama_hub*.go): an Ollama
// API client (/api/chat, /api/generate, /api/embed, /api/embeddings)
// served by a hub backend. The Ollama messages as the client sends them
// (read), the hub requests written from them, and the Ollama answer
// lines and embeddings written to the client. The hub answers are read
// with the shapes of anthropic_hub_wire.go (hubReadBody and its parts)
// and hub_wire.go (hubEmbedding).

// ---------------------------------------------------------------------
// Ollama requests, as a client sends them

// ollamaInMessage is one message of /api/chat. Every field stays raw so
// that a value of the wrong type is reported by its name; the top-level
// fields are read from the body's exact keys (decodeRequestObject).
type ollamaInMessage struct {
	Role       json.RawMessage `json:"role"`
	Content    json.RawMessage `json:"content"`
	Images     json.RawMessage `json:"images"`
	ToolCalls  json.RawMessage `json:"tool_calls"`
	ToolName   json.RawMessage `json:"tool_name"`
	ToolCallID json.RawMessage `json:"tool_call_id"`
}

// ollamaInToolCall is a whole tool call of an assistant message; the
// function's index (newer clients send one) is not needed.
type ollamaInToolCall struct {
	ID       string               `json:"id"`
	Function ollamaInFunctionCall `json:"function"`
}

// ollamaInFunctionCall is a tool call's function. Arguments is a JSON
// object (Ollama's shape); a JSON string holding one is also accepted.
type ollamaInFunctionCall struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// ---------------------------------------------------------------------
// Hub requests, as written from them

// ollamaHubRequest is the chat completions request an Ollama chat or
// generate request becomes. Stream is always written: the hub's default
// (false) is not Ollama's (true). Tools is the client's array, verbatim.
type ollamaHubRequest struct {
	Model            string                   `json:"model"`
	Messages         []hubRequestMessage      `json:"messages"`
	Stream           bool                     `json:"stream"`
	MaxTokens        int64                    `json:"max_tokens,omitempty"`
	Temperature      json.RawMessage          `json:"temperature,omitempty"`
	TopP             json.RawMessage          `json:"top_p,omitempty"`
	Stop             []string                 `json:"stop,omitempty"`
	Seed             *int64                   `json:"seed,omitempty"`
	FrequencyPenalty json.RawMessage          `json:"frequency_penalty,omitempty"`
	PresencePenalty  json.RawMessage          `json:"presence_penalty,omitempty"`
	ResponseFormat   *ollamaHubResponseFormat `json:"response_format,omitempty"`
	ReasoningEffort  string                   `json:"reasoning_effort,omitempty"`
	Tools            json.RawMessage          `json:"tools,omitempty"`
}

// ollamaHubResponseFormat is response_format: json_object, or
// json_schema with JSONSchema set.
type ollamaHubResponseFormat struct {
	Type       string               `json:"type"`
	JSONSchema *ollamaHubJSONSchema `json:"json_schema,omitempty"`
}

type ollamaHubJSONSchema struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Strict bool            `json:"strict"`
}

// ollamaHubEmbedRequest is the embeddings request /api/embed and
// /api/embeddings become. Input is a JSON string or an array of them.
type ollamaHubEmbedRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	Dimensions     int64           `json:"dimensions,omitempty"`
	EncodingFormat string          `json:"encoding_format"` // "float"
}

// ---------------------------------------------------------------------
// Hub embeddings, as read back

// ollamaHubEmbeddingList is a hub embeddings response, or an error body.
type ollamaHubEmbeddingList struct {
	Data  []hubEmbedding       `json:"data"`
	Usage *ollamaHubEmbedUsage `json:"usage"`
	Error json.RawMessage      `json:"error"`
}

type ollamaHubEmbedUsage struct {
	PromptTokens int64 `json:"prompt_tokens"`
	TotalTokens  int64 `json:"total_tokens"`
}

// ---------------------------------------------------------------------
// Ollama answers, as written to the client

// ollamaOutLine is one line of an Ollama answer: a stream line, or the
// final line (Done, DoneReason and the metrics set), which is also the
// whole answer of a request without stream. A chat line carries
// Message; a generate line carries Response (a JSON string) and
// Thinking at the top level. The metrics are pointers so that the final
// line always has all six and the others none.
type ollamaOutLine struct {
	Model              string            `json:"model"`
	CreatedAt          string            `json:"created_at"`
	Message            *ollamaOutMessage `json:"message,omitempty"`
	Response           json.RawMessage   `json:"response,omitempty"`
	Thinking           json.RawMessage   `json:"thinking,omitempty"`
	Done               bool              `json:"done"`
	DoneReason         string            `json:"done_reason,omitempty"`
	TotalDuration      *int64            `json:"total_duration,omitempty"`
	LoadDuration       *int64            `json:"load_duration,omitempty"`
	PromptEvalCount    *int64            `json:"prompt_eval_count,omitempty"`
	PromptEvalDuration *int64            `json:"prompt_eval_duration,omitempty"`
	EvalCount          *int64            `json:"eval_count,omitempty"`
	EvalDuration       *int64            `json:"eval_duration,omitempty"`
}

// ollamaOutMessage is a chat line's message. Content and Thinking are
// JSON strings (Content always present, "" when there is none).
type ollamaOutMessage struct {
	Role      string              `json:"role"` // "assistant"
	Content   json.RawMessage     `json:"content"`
	Thinking  json.RawMessage     `json:"thinking,omitempty"`
	ToolCalls []ollamaOutToolCall `json:"tool_calls,omitempty"`
}

// ollamaOutToolCall is a whole tool call: its arguments an object.
type ollamaOutToolCall struct {
	ID       string            `json:"id,omitempty"`
	Function ollamaOutFunction `json:"function"`
}

type ollamaOutFunction struct {
	Index     int             `json:"index"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// ollamaOutEmbed is the /api/embed answer; each embedding is a JSON
// array of numbers, as the upstream wrote them.
type ollamaOutEmbed struct {
	Model           string            `json:"model"`
	Embeddings      []json.RawMessage `json:"embeddings"`
	TotalDuration   int64             `json:"total_duration"`
	LoadDuration    int64             `json:"load_duration"`
	PromptEvalCount int64             `json:"prompt_eval_count"`
}

// ollamaOutLegacyEmbedding is the /api/embeddings answer.
type ollamaOutLegacyEmbedding struct {
	Embedding json.RawMessage `json:"embedding"`
}
