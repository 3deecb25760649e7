package translate

import "encoding/json"

// The hub shape: the OpenAI wire structs every backend translator
// (hub_anthropic*.go, hub_gemini*.go) writes, so a client-side format
// reads one shape whatever the backend. Field order and tags fix the
// bytes on the wire (the golden files under testdata/ hold them). Under
// Yaegi a DTO must be a plain struct of exported fields: no embedding, no
// MarshalJSON on a nested type; a field that is null on one backend and
// absent on another is a json.RawMessage with omitempty.

// hubChatCompletion is a whole chat.completion response.
type hubChatCompletion struct {
	ID      string      `json:"id"`
	Object  string      `json:"object"` // "chat.completion"
	Created int64       `json:"created"`
	Model   string      `json:"model"`
	Choices []hubChoice `json:"choices"`
	Usage   *hubUsage   `json:"usage,omitempty"`
}

// hubChoice is one choice of a chat.completion.
type hubChoice struct {
	Index        int          `json:"index"`
	Message      hubMessage   `json:"message"`
	Logprobs     *hubLogprobs `json:"logprobs"`
	FinishReason string       `json:"finish_reason"`
}

// hubLogprobs is never sent (a choice's logprobs is always null): no
// translated backend returns log probabilities, and the translators
// refuse requests for them.
type hubLogprobs struct{}

// hubMessage is the assistant message of a choice. Content is null when
// the answer is tool calls only.
type hubMessage struct {
	Role    string  `json:"role"`
	Content *string `json:"content"`
	// Refusal is absent, or jsonNull when the backend's translation
	// states that no refusal came (Gemini's does).
	Refusal   json.RawMessage `json:"refusal,omitempty"`
	ToolCalls []hubToolCall   `json:"tool_calls,omitempty"`
}

// hubToolCall is a whole tool call (in a message, Index nil) or, in a
// stream, one fragment of it: Index always; ID, Type and the function's
// Name only in the first fragment, then Arguments pieces.
type hubToolCall struct {
	Index    *int        `json:"index,omitempty"`
	ID       string      `json:"id,omitempty"`
	Type     string      `json:"type,omitempty"` // "function"
	Function hubFunction `json:"function"`
}

// hubFunction is a tool call's function: Arguments is a JSON object
// encoded as a string (or a piece of it, in a stream fragment).
type hubFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// hubUsage is a completion's token usage. PromptTokens includes the
// cached tokens; CompletionTokensDetails is sent by the backends that
// report reasoning tokens (Gemini).
type hubUsage struct {
	PromptTokens            int64                       `json:"prompt_tokens"`
	CompletionTokens        int64                       `json:"completion_tokens"`
	TotalTokens             int64                       `json:"total_tokens"`
	PromptTokensDetails     hubPromptTokensDetails      `json:"prompt_tokens_details"`
	CompletionTokensDetails *hubCompletionTokensDetails `json:"completion_tokens_details,omitempty"`
}

type hubPromptTokensDetails struct {
	CachedTokens int64 `json:"cached_tokens"`
}

type hubCompletionTokensDetails struct {
	ReasoningTokens int64 `json:"reasoning_tokens"`
}

// newHubUsage is the hub usage for the gateway's usage u (whose
// promptTokens already include the cache counts).
func newHubUsage(u Usage) *hubUsage {
	return &hubUsage{
		PromptTokens:        u.PromptTokens,
		CompletionTokens:    u.CompletionTokens,
		TotalTokens:         u.PromptTokens + u.CompletionTokens,
		PromptTokensDetails: hubPromptTokensDetails{CachedTokens: u.CacheReadTokens},
	}
}

// hubChunk is one chat.completion.chunk of a stream.
type hubChunk struct {
	ID      string           `json:"id"`
	Object  string           `json:"object"` // "chat.completion.chunk"
	Created int64            `json:"created"`
	Model   string           `json:"model"`
	Choices []hubChunkChoice `json:"choices"`
	Usage   *hubUsage        `json:"usage,omitempty"`
}

// hubChunkChoice is a chunk's choice: FinishReason stays null until the
// choice's last chunk.
type hubChunkChoice struct {
	Index        int      `json:"index"`
	Delta        hubDelta `json:"delta"`
	FinishReason *string  `json:"finish_reason"`
}

// hubDelta is what one chunk adds to the message: the role in the first
// chunk, then content pieces or tool call fragments.
type hubDelta struct {
	Role      string        `json:"role,omitempty"`
	Content   *string       `json:"content,omitempty"`
	ToolCalls []hubToolCall `json:"tool_calls,omitempty"`
}

// hubDeltaPayload is the stream payload of a chunk carrying delta for
// choice 0 of the stream id; finish is nil except in the finish chunk.
func hubDeltaPayload(tc Context, id string, delta hubDelta, finish *string) Payload {
	c := hubChunk{ID: id, Object: "chat.completion.chunk", Created: tc.Created, Model: tc.RequestedModel,
		Choices: []hubChunkChoice{{Index: 0, Delta: delta, FinishReason: finish}}}
	return Payload{Data: encodeJSON(&c)}
}

// hubUsagePayload is the stream payload of the usage chunk that
// stream_options.include_usage asks for: no choices, only the usage.
func hubUsagePayload(tc Context, id string, u *hubUsage) Payload {
	c := hubChunk{ID: id, Object: "chat.completion.chunk", Created: tc.Created, Model: tc.RequestedModel,
		Choices: []hubChunkChoice{}, Usage: u}
	return Payload{Data: encodeJSON(&c)}
}

// hubEmbeddingList is an embeddings response. Usage holds an encoded
// hubEmbeddingUsage; it stays raw so that a rewrite of the vectors
// (GeminiEmbedBase64) passes on whatever usage it read.
type hubEmbeddingList struct {
	Object string          `json:"object"` // "list"
	Data   []hubEmbedding  `json:"data"`
	Model  string          `json:"model"`
	Usage  json.RawMessage `json:"usage"`
}

// hubEmbedding is one vector of an embeddings response: Embedding is a
// JSON array of numbers, or for encoding_format "base64" a string of
// little-endian float32s in base64.
type hubEmbedding struct {
	Object    string          `json:"object"` // "embedding"
	Index     int             `json:"index"`
	Embedding json.RawMessage `json:"embedding"`
}

type hubEmbeddingUsage struct {
	PromptTokens int64 `json:"prompt_tokens"`
	TotalTokens  int64 `json:"total_tokens"`
}

// hubImageList is an images/generations response.
type hubImageList struct {
	Created int64      `json:"created"`
	Data    []hubImage `json:"data"`
}

type hubImage struct {
	B64JSON string `json:"b64_json"`
}
