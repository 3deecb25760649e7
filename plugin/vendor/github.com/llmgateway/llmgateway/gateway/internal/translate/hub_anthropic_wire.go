package translate

import "encoding/json"

// Anthropic Messages API wire shapes: the request body the Anthropic
// translator writes, and the response and stream event bodies it reads.
// The translation itself is in hub_anthropic_*.go; the OpenAI side is
// hub_wire.go.

// ---------------------------------------------------------------------
// Messages request

// anthropicWireRequest is the Messages API request body.
type anthropicWireRequest struct {
	Model         string                   `json:"model"`
	MaxTokens     int64                    `json:"max_tokens"`
	System        string                   `json:"system,omitempty"`
	Messages      []anthropicWireMessage   `json:"messages"`
	Tools         []anthropicWireTool      `json:"tools,omitempty"`
	ToolChoice    *anthropicWireToolChoice `json:"tool_choice,omitempty"`
	StopSequences []string                 `json:"stop_sequences,omitempty"`
	Temperature   *float64                 `json:"temperature,omitempty"`
	TopP          *float64                 `json:"top_p,omitempty"`
	Metadata      *anthropicWireMetadata   `json:"metadata,omitempty"`
	Thinking      *anthropicWireThinking   `json:"thinking,omitempty"`
	Stream        bool                     `json:"stream,omitempty"`
}

type anthropicWireMessage struct {
	Role    string               `json:"role"`
	Content []anthropicWireBlock `json:"content"`
}

// anthropicWireBlock is any request content block; the type decides
// which fields are set.
type anthropicWireBlock struct {
	Type      string               `json:"type"`
	Text      string               `json:"text,omitempty"`
	Source    *anthropicWireSource `json:"source,omitempty"`
	ID        string               `json:"id,omitempty"`
	Name      string               `json:"name,omitempty"`
	Input     json.RawMessage      `json:"input,omitempty"`
	ToolUseID string               `json:"tool_use_id,omitempty"`
	Content   json.RawMessage      `json:"content,omitempty"`
}

type anthropicWireSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

type anthropicWireTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type anthropicWireToolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use,omitempty"`
}

type anthropicWireMetadata struct {
	UserID string `json:"user_id"`
}

type anthropicWireThinking struct {
	Type         string `json:"type"`
	BudgetTokens int64  `json:"budget_tokens"`
}

// ---------------------------------------------------------------------
// Messages response and stream events

// anthropicWireResponse is a Messages API response, also the "message"
// of a message_start event.
type anthropicWireResponse struct {
	ID         string                 `json:"id"`
	Type       string                 `json:"type"`
	Content    []anthropicWireContent `json:"content"`
	StopReason *string                `json:"stop_reason"`
	Usage      *anthropicWireUsage    `json:"usage"`
	Error      *anthropicWireError    `json:"error"`
}

// anthropicWireContent is a response content block.
type anthropicWireContent struct {
	Type  string          `json:"type"`
	Text  string          `json:"text"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// anthropicWireUsage keeps absent counts apart from zero ones: a
// message_delta carries only the counts that changed.
type anthropicWireUsage struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
}

type anthropicWireError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// anthropicWireEvent is any streaming event's data; the type decides
// which fields are set.
type anthropicWireEvent struct {
	Type         string                 `json:"type"`
	Message      *anthropicWireResponse `json:"message"`
	Index        int                    `json:"index"`
	ContentBlock *anthropicWireContent  `json:"content_block"`
	Delta        *anthropicWireDelta    `json:"delta"`
	Usage        *anthropicWireUsage    `json:"usage"`
	Error        *anthropicWireError    `json:"error"`
}

type anthropicWireDelta struct {
	Type        string  `json:"type"`
	Text        string  `json:"text"`
	PartialJSON string  `json:"partial_json"`
	StopReason  *string `json:"stop_reason"`
}
