package translate

import "encoding/json"

// Gemini (v1beta) wire shapes: the request bodies the Gemini translator
// writes and the response bodies it reads. The translation itself is in
// hub_gemini_*.go; the OpenAI side is hub_wire.go.

// ---------------------------------------------------------------------
// generateContent request

// geminiWireRequest is a generateContent / streamGenerateContent body;
// the model is in the URL.
type geminiWireRequest struct {
	SystemInstruction *geminiWireContent          `json:"systemInstruction,omitempty"`
	Contents          []geminiWireContent         `json:"contents"`
	Tools             []geminiWireTool            `json:"tools,omitempty"`
	ToolConfig        *geminiWireToolConfig       `json:"toolConfig,omitempty"`
	GenerationConfig  *geminiWireGenerationConfig `json:"generationConfig,omitempty"`
}

// geminiWireContent is one turn ("user" or "model"), the system
// instruction (no role), or an embedding request's text.
type geminiWireContent struct {
	Role  string           `json:"role,omitempty"`
	Parts []geminiWirePart `json:"parts"`
}

// geminiWirePart is any request part; exactly one of the content fields
// is set.
type geminiWirePart struct {
	Text             string                      `json:"text,omitempty"`
	InlineData       *geminiWireBlob             `json:"inlineData,omitempty"`
	FileData         *geminiWireFileData         `json:"fileData,omitempty"`
	FunctionCall     *geminiWireFunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse *geminiWireFunctionResponse `json:"functionResponse,omitempty"`
	// ThoughtSignature goes back with the function call it came with.
	ThoughtSignature string `json:"thoughtSignature,omitempty"`
}

// geminiWireBlob is inline base64 data.
type geminiWireBlob struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

// geminiWireFileData is media Gemini fetches by URI.
type geminiWireFileData struct {
	MimeType string `json:"mimeType"`
	FileURI  string `json:"fileUri"`
}

// geminiWireFunctionCall is a function call: in a request's history, or
// in a response, where Gemini may also give it an id.
type geminiWireFunctionCall struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
	ID   string          `json:"id,omitempty"`
}

// geminiWireFunctionResponse is a tool's result, matched to its call by
// the function name.
type geminiWireFunctionResponse struct {
	Name     string                   `json:"name"`
	Response geminiWireFunctionOutput `json:"response"`
}

// geminiWireFunctionOutput holds the tool result under "output", the key
// Gemini documents for function output.
type geminiWireFunctionOutput struct {
	Output json.RawMessage `json:"output"`
}

type geminiWireTool struct {
	FunctionDeclarations []geminiWireFunctionDeclaration `json:"functionDeclarations"`
}

// geminiWireFunctionDeclaration declares a function; at most one of
// Parameters (Gemini's schema subset) and ParametersJSONSchema (any JSON
// Schema) is set.
type geminiWireFunctionDeclaration struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description,omitempty"`
	Parameters           json.RawMessage `json:"parameters,omitempty"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`
}

type geminiWireToolConfig struct {
	FunctionCallingConfig geminiWireFunctionCallingConfig `json:"functionCallingConfig"`
}

// geminiWireFunctionCallingConfig: Mode is AUTO, NONE or ANY;
// AllowedFunctionNames narrows ANY.
type geminiWireFunctionCallingConfig struct {
	Mode                 string   `json:"mode"`
	AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
}

// geminiWireGenerationConfig holds the sampling parameters. Numbers the
// client sent are kept as their exact text.
type geminiWireGenerationConfig struct {
	StopSequences      []string                  `json:"stopSequences,omitempty"`
	ResponseMimeType   string                    `json:"responseMimeType,omitempty"`
	ResponseSchema     json.RawMessage           `json:"responseSchema,omitempty"`
	ResponseJSONSchema json.RawMessage           `json:"responseJsonSchema,omitempty"`
	CandidateCount     int64                     `json:"candidateCount,omitempty"`
	MaxOutputTokens    int64                     `json:"maxOutputTokens,omitempty"`
	Temperature        json.RawMessage           `json:"temperature,omitempty"`
	TopP               json.RawMessage           `json:"topP,omitempty"`
	Seed               json.RawMessage           `json:"seed,omitempty"`
	PresencePenalty    json.RawMessage           `json:"presencePenalty,omitempty"`
	FrequencyPenalty   json.RawMessage           `json:"frequencyPenalty,omitempty"`
	ThinkingConfig     *geminiWireThinkingConfig `json:"thinkingConfig,omitempty"`
}

type geminiWireThinkingConfig struct {
	ThinkingBudget json.RawMessage `json:"thinkingBudget"`
}

// ---------------------------------------------------------------------
// generateContent response (also each streamed event)

type geminiWireResponse struct {
	Candidates     []geminiWireCandidate     `json:"candidates"`
	PromptFeedback *geminiWirePromptFeedback `json:"promptFeedback"`
	UsageMetadata  *geminiWireUsage          `json:"usageMetadata"`
	ResponseID     string                    `json:"responseId"`
	Error          json.RawMessage           `json:"error"`
}

type geminiWireCandidate struct {
	Content      *geminiWireResponseContent `json:"content"`
	FinishReason string                     `json:"finishReason"`
	Index        int64                      `json:"index"`
}

type geminiWireResponseContent struct {
	Role  string                   `json:"role"`
	Parts []geminiWireResponsePart `json:"parts"`
}

// geminiWireResponsePart is a response part; parts of other kinds
// (inline images, executable code) decode to an empty part.
type geminiWireResponsePart struct {
	Text         *string                 `json:"text"`
	Thought      bool                    `json:"thought"`
	FunctionCall *geminiWireFunctionCall `json:"functionCall"`
	// ThoughtSignature must be sent back with the function call it came
	// with (Gemini 3 refuses the next turn otherwise).
	ThoughtSignature string `json:"thoughtSignature"`
}

// geminiWirePromptFeedback says why a prompt was blocked before any
// candidate was generated.
type geminiWirePromptFeedback struct {
	BlockReason string `json:"blockReason"`
}

// geminiWireUsage is usageMetadata. promptTokenCount already includes
// cachedContentTokenCount.
type geminiWireUsage struct {
	PromptTokenCount        int64 `json:"promptTokenCount"`
	CandidatesTokenCount    int64 `json:"candidatesTokenCount"`
	ThoughtsTokenCount      int64 `json:"thoughtsTokenCount"`
	CachedContentTokenCount int64 `json:"cachedContentTokenCount"`
	ToolUsePromptTokenCount int64 `json:"toolUsePromptTokenCount"`
	TotalTokenCount         int64 `json:"totalTokenCount"`
}

// geminiWireError is the "error" object of a Gemini error body.
type geminiWireError struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
}

// ---------------------------------------------------------------------
// embedContent / batchEmbedContents

// geminiWireEmbedRequest is an embedContent body, also one entry of a
// batchEmbedContents body; Model is "models/<id>".
type geminiWireEmbedRequest struct {
	Model                string            `json:"model"`
	Content              geminiWireContent `json:"content"`
	OutputDimensionality int64             `json:"outputDimensionality,omitempty"`
}

type geminiWireBatchEmbedRequest struct {
	Requests []geminiWireEmbedRequest `json:"requests"`
}

// geminiWireEmbedResponse is an embedContent (Embedding) or
// batchEmbedContents (Embeddings) response.
type geminiWireEmbedResponse struct {
	Embedding  *geminiWireEmbedding  `json:"embedding"`
	Embeddings []geminiWireEmbedding `json:"embeddings"`
	Error      json.RawMessage       `json:"error"`
}

// geminiWireEmbedding is one vector, each value kept as its exact text.
type geminiWireEmbedding struct {
	Values []json.Number `json:"values"`
}

// ---------------------------------------------------------------------
// Imagen predict

type geminiWireImageRequest struct {
	Instances  []geminiWireImageInstance `json:"instances"`
	Parameters geminiWireImageParameters `json:"parameters"`
}

type geminiWireImageInstance struct {
	Prompt string `json:"prompt"`
}

type geminiWireImageParameters struct {
	SampleCount int64  `json:"sampleCount"`
	AspectRatio string `json:"aspectRatio"`
}

type geminiWirePredictResponse struct {
	Predictions []geminiWirePrediction `json:"predictions"`
	Error       json.RawMessage        `json:"error"`
}

// geminiWirePrediction is one generated image; a filtered one has no
// bytes and a raiFilteredReason.
type geminiWirePrediction struct {
	BytesBase64Encoded *string `json:"bytesBase64Encoded"`
	RaiFilteredReason  string  `json:"raiFilteredReason"`
}
