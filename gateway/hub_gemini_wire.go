package gateway

import (
	"encoding/json"
)

// Gemini wire shapes (requests out, responses in) and the OpenAI shapes
// the Gemini translators emit. Translation logic lives beside them.

type gemBlob struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

type gemFileData struct {
	MimeType string `json:"mimeType"`
	FileURI  string `json:"fileUri"`
}

type gemFuncCallOut struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type gemFuncRespBody struct {
	Output json.RawMessage `json:"output"`
}

type gemFuncRespOut struct {
	Name     string          `json:"name"`
	Response gemFuncRespBody `json:"response"`
}

type gemPartOut struct {
	Text             string          `json:"text,omitempty"`
	InlineData       *gemBlob        `json:"inlineData,omitempty"`
	FileData         *gemFileData    `json:"fileData,omitempty"`
	FunctionCall     *gemFuncCallOut `json:"functionCall,omitempty"`
	FunctionResponse *gemFuncRespOut `json:"functionResponse,omitempty"`
	ThoughtSignature string          `json:"thoughtSignature,omitempty"`
}

type gemContentOut struct {
	Role  string       `json:"role,omitempty"`
	Parts []gemPartOut `json:"parts"`
}

type gemFuncDecl struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description,omitempty"`
	Parameters           json.RawMessage `json:"parameters,omitempty"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`
}

type gemToolOut struct {
	FunctionDeclarations []gemFuncDecl `json:"functionDeclarations"`
}

type gemFuncCallingConfig struct {
	Mode                 string   `json:"mode"`
	AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
}

type gemToolConfig struct {
	FunctionCallingConfig gemFuncCallingConfig `json:"functionCallingConfig"`
}

type gemThinkingConfig struct {
	ThinkingBudget json.RawMessage `json:"thinkingBudget"`
}

type gemGenConfig struct {
	StopSequences      []string           `json:"stopSequences,omitempty"`
	ResponseMimeType   string             `json:"responseMimeType,omitempty"`
	ResponseSchema     json.RawMessage    `json:"responseSchema,omitempty"`
	ResponseJSONSchema json.RawMessage    `json:"responseJsonSchema,omitempty"`
	CandidateCount     int64              `json:"candidateCount,omitempty"`
	MaxOutputTokens    int64              `json:"maxOutputTokens,omitempty"`
	Temperature        json.RawMessage    `json:"temperature,omitempty"`
	TopP               json.RawMessage    `json:"topP,omitempty"`
	Seed               json.RawMessage    `json:"seed,omitempty"`
	PresencePenalty    json.RawMessage    `json:"presencePenalty,omitempty"`
	FrequencyPenalty   json.RawMessage    `json:"frequencyPenalty,omitempty"`
	ThinkingConfig     *gemThinkingConfig `json:"thinkingConfig,omitempty"`
}

type gemChatReqOut struct {
	SystemInstruction *gemContentOut  `json:"systemInstruction,omitempty"`
	Contents          []gemContentOut `json:"contents"`
	Tools             []gemToolOut    `json:"tools,omitempty"`
	ToolConfig        *gemToolConfig  `json:"toolConfig,omitempty"`
	GenerationConfig  *gemGenConfig   `json:"generationConfig,omitempty"`
}

// ---------------------------------------------------------------------
// Chat request

type gemFuncCallIn struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
	ID   string          `json:"id"`
}

type gemPartIn struct {
	Text         *string        `json:"text"`
	Thought      bool           `json:"thought"`
	FunctionCall *gemFuncCallIn `json:"functionCall"`
	// ThoughtSignature must be sent back with the function call it came
	// with (Gemini 3 refuses the next turn otherwise).
	ThoughtSignature string `json:"thoughtSignature"`
}

type gemContentIn struct {
	Role  string      `json:"role"`
	Parts []gemPartIn `json:"parts"`
}

type gemCandidateIn struct {
	Content      *gemContentIn `json:"content"`
	FinishReason string        `json:"finishReason"`
	Index        int64         `json:"index"`
}

type gemPromptFeedbackIn struct {
	BlockReason string `json:"blockReason"`
}

type gemUsageIn struct {
	PromptTokenCount        int64 `json:"promptTokenCount"`
	CandidatesTokenCount    int64 `json:"candidatesTokenCount"`
	ThoughtsTokenCount      int64 `json:"thoughtsTokenCount"`
	CachedContentTokenCount int64 `json:"cachedContentTokenCount"`
	ToolUsePromptTokenCount int64 `json:"toolUsePromptTokenCount"`
	TotalTokenCount         int64 `json:"totalTokenCount"`
}

type gemRespIn struct {
	Candidates     []gemCandidateIn     `json:"candidates"`
	PromptFeedback *gemPromptFeedbackIn `json:"promptFeedback"`
	UsageMetadata  *gemUsageIn          `json:"usageMetadata"`
	ResponseID     string               `json:"responseId"`
	Error          json.RawMessage      `json:"error"`
}
