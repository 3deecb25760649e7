package translate

import "encoding/json"

// Wire shapes of the Responses client direction (responses_hub*.go): an
// OpenAI Responses API client (Codex CLI, the SDKs' responses calls)
// served by a hub backend. The request's parts as the client sends them
// (read), the hub request written from them, and the Response object and
// stream events written back. The hub answer is read with the shapes of
// anthropic_hub_wire.go (hubReadBody), which every client translator
// shares.

// ---------------------------------------------------------------------
// Responses request, as a client sends it. The top level is read one
// exact key at a time (decodeRequestObject); these are its parts.

// responsesInItem is one input item; the type decides which fields are
// set. A message has Role and Content (a string or a list of parts);
// function_call and custom_tool_call have CallID, Name, Namespace and
// Arguments or Input; the outputs have CallID and Output (a string or a
// list of parts). Unlisted fields (id, status, encrypted_content, ...)
// are dropped by the decode.
type responsesInItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Namespace string          `json:"namespace"`
	Arguments json.RawMessage `json:"arguments"`
	Input     json.RawMessage `json:"input"`
	Output    json.RawMessage `json:"output"`
}

// responsesInPart is one content part of a message or of a tool output:
// input_text, output_text (Text), refusal (Refusal), input_image
// (ImageURL or FileID, Detail), input_file (FileData and Filename, or
// FileID or FileURL).
type responsesInPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Refusal  string `json:"refusal"`
	ImageURL string `json:"image_url"`
	Detail   string `json:"detail"`
	FileID   string `json:"file_id"`
	FileData string `json:"file_data"`
	FileURL  string `json:"file_url"`
	Filename string `json:"filename"`
}

// responsesInToolType is a tool definition's type alone: a built-in
// tool is dropped by its type without reading the rest, whatever shape
// its other fields have.
type responsesInToolType struct {
	Type json.RawMessage `json:"type"`
}

// responsesInTool is a function, custom or namespace tool. Tools is a
// namespace's functions (kept raw: a struct that holds a slice of itself
// is not a shape every interpreter takes).
type responsesInTool struct {
	Type        string                   `json:"type"`
	Name        string                   `json:"name"`
	Description string                   `json:"description"`
	Parameters  json.RawMessage          `json:"parameters"`
	Strict      *bool                    `json:"strict"`
	Format      *responsesInCustomFormat `json:"format"`
	Tools       json.RawMessage          `json:"tools"`
}

// responsesInCustomFormat is a custom tool's input format: "text", or a
// "grammar" with its syntax ("lark" or "regex") and definition.
type responsesInCustomFormat struct {
	Type       string `json:"type"`
	Syntax     string `json:"syntax"`
	Definition string `json:"definition"`
}

// responsesInChoice is an object tool_choice: a function or custom
// tool by name (and namespace), allowed_tools (Mode and Tools), or a
// built-in tool by type.
type responsesInChoice struct {
	Type      string                   `json:"type"`
	Name      string                   `json:"name"`
	Namespace string                   `json:"namespace"`
	Mode      string                   `json:"mode"`
	Tools     []responsesInAllowedTool `json:"tools"`
}

// responsesInAllowedTool is one tool of an allowed_tools tool_choice.
type responsesInAllowedTool struct {
	Type      string `json:"type"`
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

// responsesInReasoning is the reasoning config; GenerateSummary is the
// older name of Summary.
type responsesInReasoning struct {
	Effort          json.RawMessage `json:"effort"`
	Summary         json.RawMessage `json:"summary"`
	GenerateSummary json.RawMessage `json:"generate_summary"`
}

// responsesInText is the text config: its format (verbosity is dropped).
type responsesInText struct {
	Format json.RawMessage `json:"format"`
}

// responsesInTextFormat is text.format: "text", "json_object", or
// "json_schema" with its name, schema, description and strict flag.
type responsesInTextFormat struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Strict      *bool           `json:"strict"`
}

// ---------------------------------------------------------------------
// Hub (OpenAI chat) request, as written from it. The messages are the
// hub's (hubRequestMessage); the top level and the tools carry what a
// Responses request adds to a Messages one: reasoning_effort,
// response_format, a tool's "strict", an image's detail.

type responsesHubRequest struct {
	Model             string              `json:"model"`
	Messages          []hubRequestMessage `json:"messages"`
	MaxTokens         int64               `json:"max_tokens,omitempty"`
	Temperature       json.RawMessage     `json:"temperature,omitempty"`
	TopP              json.RawMessage     `json:"top_p,omitempty"`
	Stream            bool                `json:"stream,omitempty"`
	Tools             []responsesHubTool  `json:"tools,omitempty"`
	ToolChoice        json.RawMessage     `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool               `json:"parallel_tool_calls,omitempty"`
	ReasoningEffort   string              `json:"reasoning_effort,omitempty"`
	ResponseFormat    json.RawMessage     `json:"response_format,omitempty"`
	User              string              `json:"user,omitempty"`
}

type responsesHubTool struct {
	Type     string               `json:"type"` // "function"
	Function responsesHubFunction `json:"function"`
}

type responsesHubFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict,omitempty"`
}

// responsesHubPart is a user (or system) message's content part: text,
// image_url or file.
type responsesHubPart struct {
	Type     string             `json:"type"`
	Text     *string            `json:"text,omitempty"`
	ImageURL *responsesHubImage `json:"image_url,omitempty"`
	File     *hubRequestFile    `json:"file,omitempty"`
}

type responsesHubImage struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

// responsesHubJSONSchema is response_format.json_schema.
type responsesHubJSONSchema struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

type responsesHubResponseFormat struct {
	Type       string                  `json:"type"`
	JSONSchema *responsesHubJSONSchema `json:"json_schema,omitempty"`
}

// responsesHubAllowedTools is tool_choice {"type":"allowed_tools"}.
type responsesHubAllowedTools struct {
	Type         string                   `json:"type"` // "allowed_tools"
	AllowedTools responsesHubAllowedGroup `json:"allowed_tools"`
}

type responsesHubAllowedGroup struct {
	Mode  string                  `json:"mode"`
	Tools []hubRequestNamedChoice `json:"tools"`
}

// responsesHubCustomParameters is the parameters of a custom tool
// offered as a function: one required string, "input".
const responsesHubCustomParameters = `{"type":"object","properties":{"input":{"type":"string",` +
	`"description":"The tool's raw input text, exactly as the tool expects it (not JSON-encoded further)."}},` +
	`"required":["input"],"additionalProperties":false}`

// ---------------------------------------------------------------------
// Response object and stream events, as written to the client

// responsesOutResponse is a Response: the whole answer, and the
// "response" of the stream's lifecycle events. Output holds encoded
// items (responsesOutItem).
type responsesOutResponse struct {
	ID                string                  `json:"id"`
	Object            string                  `json:"object"` // "response"
	CreatedAt         int64                   `json:"created_at"`
	Status            string                  `json:"status"`
	Error             *responsesOutError      `json:"error"`
	IncompleteDetails *responsesOutIncomplete `json:"incomplete_details"`
	Model             string                  `json:"model"`
	Output            []json.RawMessage       `json:"output"`
	Usage             *responsesOutUsage      `json:"usage"`
}

type responsesOutError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type responsesOutIncomplete struct {
	Reason string `json:"reason"`
}

// responsesOutItem is an output item: message (Role, Content), reasoning
// (Summary), function_call (CallID, Name, Namespace, Arguments) or
// custom_tool_call (CallID, Name, Namespace, Input). Content and Summary
// hold encoded lists of responsesOutPart; Arguments and Input encoded
// strings.
type responsesOutItem struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Status    string          `json:"status,omitempty"`
	Role      string          `json:"role,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	Summary   json.RawMessage `json:"summary,omitempty"`
	CallID    string          `json:"call_id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Namespace string          `json:"namespace,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
}

// responsesOutPart is a message's content part (output_text with Text
// and Annotations, or refusal with Refusal) or a reasoning item's
// summary_text (Text). The text fields hold encoded strings.
type responsesOutPart struct {
	Type        string          `json:"type"`
	Text        json.RawMessage `json:"text,omitempty"`
	Refusal     json.RawMessage `json:"refusal,omitempty"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
}

type responsesOutUsage struct {
	InputTokens         int64                     `json:"input_tokens"`
	InputTokensDetails  responsesOutInputDetails  `json:"input_tokens_details"`
	OutputTokens        int64                     `json:"output_tokens"`
	OutputTokensDetails responsesOutOutputDetails `json:"output_tokens_details"`
	TotalTokens         int64                     `json:"total_tokens"`
}

type responsesOutInputDetails struct {
	CachedTokens int64 `json:"cached_tokens"`
}

type responsesOutOutputDetails struct {
	ReasoningTokens int64 `json:"reasoning_tokens"`
}

// responsesOutEvent is any stream event but the deltas (which are built
// from bytes, responsesDeltaPayload): the type and sequence number, then
// the fields the type carries. The text fields hold encoded strings.
type responsesOutEvent struct {
	Type           string                `json:"type"`
	SequenceNumber int                   `json:"sequence_number"`
	Response       *responsesOutResponse `json:"response,omitempty"`
	ItemID         string                `json:"item_id,omitempty"`
	OutputIndex    *int                  `json:"output_index,omitempty"`
	ContentIndex   *int                  `json:"content_index,omitempty"`
	SummaryIndex   *int                  `json:"summary_index,omitempty"`
	Item           json.RawMessage       `json:"item,omitempty"`
	Part           *responsesOutPart     `json:"part,omitempty"`
	Delta          json.RawMessage       `json:"delta,omitempty"`
	Text           json.RawMessage       `json:"text,omitempty"`
	Refusal        json.RawMessage       `json:"refusal,omitempty"`
	Arguments      json.RawMessage       `json:"arguments,omitempty"`
	Input          json.RawMessage       `json:"input,omitempty"`
	Logprobs       json.RawMessage       `json:"logprobs,omitempty"`
}

// responsesReadReasoningTokens is the reasoning token count of a hub
// usage object, which hubReadUsage leaves out.
type responsesReadReasoningTokens struct {
	Usage *responsesReadUsageDetails `json:"usage"`
}

type responsesReadUsageDetails struct {
	CompletionTokensDetails *hubCompletionTokensDetails `json:"completion_tokens_details"`
}
