package translate

import (
	"bytes"
	"encoding/json"
)

// wireUsage holds every provider's usage field names; one decode reads
// whichever the body has.
type wireUsage struct {
	// OpenAI
	PromptTokens        *int64 `json:"prompt_tokens"`
	CompletionTokens    int64  `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	// Anthropic
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheCreationInputTokens int64  `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64  `json:"cache_read_input_tokens"`
	// Gemini (usageMetadata)
	PromptTokenCount        *int64 `json:"promptTokenCount"`
	CandidatesTokenCount    int64  `json:"candidatesTokenCount"`
	ThoughtsTokenCount      int64  `json:"thoughtsTokenCount"`
	CachedContentTokenCount int64  `json:"cachedContentTokenCount"`
}

// usageEnvelope is where usage sits in a response or stream event of
// each provider type.
type usageEnvelope struct {
	Usage         *wireUsage `json:"usage"`
	UsageMetadata *wireUsage `json:"usageMetadata"`
	Message       *struct {
		Usage *wireUsage `json:"usage"`
	} `json:"message"` // Anthropic message_start
	Response *struct {
		Usage *wireUsage `json:"usage"`
	} `json:"response"` // an OpenAI Responses stream's response.completed
}

// UsageFromJSON reads the usage a provider reported in one JSON document
// (a whole response or one stream event) and merges it into u. Anthropic
// streams split usage over message_start and message_delta; a later
// field overrides an earlier one. The pipeline reads the usage of the
// answers it relays untranslated (openai-type providers, passthrough)
// with it.
func UsageFromJSON(data []byte, u *Usage) {
	if MayHoldUsage(data) {
		usageFromJSON(data, u)
	}
}

// usageFromJSON is UsageFromJSON without the gate.
func usageFromJSON(data []byte, u *Usage) {
	var env usageEnvelope
	if json.Unmarshal(data, &env) != nil {
		return
	}
	wu := env.Usage
	if wu == nil {
		wu = env.UsageMetadata
	}
	if wu == nil && env.Message != nil {
		wu = env.Message.Usage
	}
	if wu == nil && env.Response != nil {
		wu = env.Response.Usage
	}
	if wu == nil {
		return
	}
	switch {
	case wu.PromptTokens != nil:
		u.PromptTokens = *wu.PromptTokens
		u.CompletionTokens = wu.CompletionTokens
		if wu.PromptTokensDetails != nil {
			u.CacheReadTokens = wu.PromptTokensDetails.CachedTokens
		}
		u.Reported = true
	case wu.PromptTokenCount != nil:
		u.PromptTokens = *wu.PromptTokenCount
		u.CompletionTokens = wu.CandidatesTokenCount + wu.ThoughtsTokenCount
		u.CacheReadTokens = wu.CachedContentTokenCount
		u.Reported = true
	case wu.InputTokens != nil || wu.OutputTokens != nil:
		if wu.InputTokens != nil {
			u.CacheCreationTokens = wu.CacheCreationInputTokens
			u.CacheReadTokens = wu.CacheReadInputTokens
			u.PromptTokens = *wu.InputTokens + wu.CacheCreationInputTokens + wu.CacheReadInputTokens
		}
		if wu.OutputTokens != nil {
			u.CompletionTokens = *wu.OutputTokens
		}
		u.Reported = true
	}
}

// usageKeyTail ends every key a usage object can sit under: "usage",
// "usageMetadata", and their variants with another case in the letters
// before it ("Usage"). A key that spells "sage" in another case ("UsAge")
// is not read as usage, though the decoder would match it: no provider
// sends one, and such a stream's usage is estimated like any other
// stream's without usage.
var usageKeyTail = []byte("sage")

// MayHoldUsage reports whether data may hold a usage object: it finds no
// key ending in "sage" (or "sage" and more letters) whose value starts
// with '{', it is false, and UsageFromJSON would find nothing — as for
// the chunks of an OpenAI stream with include_usage, each of which says
// "usage":null. It works on an SSE event's raw bytes too: a line break
// between a key and its value makes it answer true. Its only loops run
// per occurrence of "sage" and over a key's letters.
func MayHoldUsage(data []byte) bool {
	for {
		i := bytes.Index(data, usageKeyTail)
		if i < 0 {
			return false
		}
		data = data[i+len(usageKeyTail):]
		j := 0
		for j < len(data) && (data[j] >= 'a' && data[j] <= 'z' || data[j] >= 'A' && data[j] <= 'Z') {
			j++
		}
		if j == len(data) || data[j] != '"' {
			continue
		}
		j++
		colon := false
		for j < len(data) {
			c := data[j]
			if c == ' ' || c == '\t' {
				j++
				continue
			}
			if c == '\n' || c == '\r' {
				return true
			}
			if c == ':' && !colon {
				colon = true
				j++
				continue
			}
			if c == '{' && colon {
				return true
			}
			break
		}
		data = data[j:]
	}
}
