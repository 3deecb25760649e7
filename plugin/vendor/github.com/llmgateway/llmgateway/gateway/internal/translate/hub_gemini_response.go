package translate

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// Gemini generateContent response → hub chat.completion
// (GeminiChatResponse), and what the stream translator
// (hub_gemini_stream.go) shares with it: finish reasons, usage and tool
// call ids.

// GeminiChatResponse translates a generateContent response into a hub
// chat.completion, one choice per candidate.
func GeminiChatResponse(body []byte, tc Context) ([]byte, Usage, *apierr.Error) {
	var r geminiWireResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, Usage{}, geminiBadResponse(err)
	}
	if !isJSONNull(r.Error) {
		return nil, Usage{}, geminiUpstreamError(r.Error, body)
	}
	out := hubChatCompletion{
		ID:      geminiResponseID(r.ResponseID, tc.IDFallback),
		Object:  "chat.completion",
		Created: tc.Created,
		Model:   tc.RequestedModel,
		Choices: []hubChoice{},
	}
	base := geminiCallIDBase(r.ResponseID, tc.IDFallback)
	calls := 0
	for i := 0; i < len(r.Candidates); i++ {
		choice, n := geminiChoice(&r.Candidates[i], i, base, calls)
		out.Choices = append(out.Choices, choice)
		calls = n
	}
	if len(r.Candidates) == 0 {
		if r.PromptFeedback == nil || r.PromptFeedback.BlockReason == "" {
			return nil, Usage{}, geminiBadResponse(nil)
		}
		empty := ""
		out.Choices = append(out.Choices, hubChoice{
			Message:      hubMessage{Role: "assistant", Content: &empty, Refusal: jsonNull},
			FinishReason: "content_filter",
		})
	}
	var u Usage
	if r.UsageMetadata != nil {
		u, out.Usage = geminiUsage(r.UsageMetadata)
	}
	return encodeJSON(out), u, nil
}

// geminiChoice converts one candidate: its text parts joined, its
// functionCall parts as tool calls numbered from calls, thought parts
// dropped. It also returns the number of tool calls so far.
func geminiChoice(cand *geminiWireCandidate, index int, base string, calls int) (hubChoice, int) {
	var sb strings.Builder
	var toolCalls []hubToolCall
	if cand.Content != nil {
		for j := 0; j < len(cand.Content.Parts); j++ {
			p := &cand.Content.Parts[j]
			if p.Thought {
				continue
			}
			if p.FunctionCall != nil {
				toolCalls = append(toolCalls, geminiToolCall(p, base, calls, nil))
				calls++
				continue
			}
			if p.Text != nil {
				sb.WriteString(*p.Text)
			}
		}
	}
	text := sb.String()
	msg := hubMessage{Role: "assistant", Refusal: jsonNull, ToolCalls: toolCalls}
	if text != "" || len(toolCalls) == 0 {
		msg.Content = &text
	}
	choice := hubChoice{Index: index, Message: msg, FinishReason: geminiFinishReason(cand.FinishReason, len(toolCalls) > 0)}
	return choice, calls
}

// geminiFinishReason maps a Gemini finishReason to OpenAI's.
func geminiFinishReason(reason string, toolCalls bool) string {
	switch reason {
	case "MAX_TOKENS":
		return "length"
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY":
		return "content_filter"
	}
	if toolCalls {
		return "tool_calls"
	}
	return "stop"
}

// geminiUsage is the gateway's usage and the hub usage for Gemini's
// usageMetadata.
func geminiUsage(u *geminiWireUsage) (Usage, *hubUsage) {
	prompt := u.PromptTokenCount + u.ToolUsePromptTokenCount
	completion := u.CandidatesTokenCount + u.ThoughtsTokenCount
	gu := Usage{
		PromptTokens:     prompt,
		CompletionTokens: completion,
		CacheReadTokens:  u.CachedContentTokenCount,
		Reported:         true,
	}
	hu := newHubUsage(gu)
	hu.CompletionTokensDetails = &hubCompletionTokensDetails{ReasoningTokens: u.ThoughtsTokenCount}
	return gu, hu
}

// geminiToolCall is the hub tool call for the n-th functionCall part of a
// response (index is set in a stream fragment, nil in a message).
func geminiToolCall(p *geminiWireResponsePart, base string, n int, index *int) hubToolCall {
	return hubToolCall{
		Index:    index,
		ID:       geminiCallID(p.FunctionCall, base, n, p.ThoughtSignature),
		Type:     "function",
		Function: hubFunction{Name: p.FunctionCall.Name, Arguments: compactArguments(p.FunctionCall.Args)},
	}
}

// geminiCallIDBase is the per-response part of generated tool call ids.
func geminiCallIDBase(responseID, idFallback string) string {
	if responseID != "" {
		return responseID
	}
	return strings.TrimPrefix(idFallback, "chatcmpl-")
}

// geminiCallID is a tool call's id: Gemini's own when it sent one, else
// "call_<base>_<n>", with the call's thought signature appended.
func geminiCallID(call *geminiWireFunctionCall, base string, n int, signature string) string {
	id := call.ID
	if id == "" && base == "" {
		id = "call_" + strconv.Itoa(n)
	} else if id == "" {
		id = "call_" + base + "_" + strconv.Itoa(n)
	}
	return geminiIDWithSignature(id, signature)
}

// geminiSignatureMark separates a tool call id from the thought signature
// it carries. The OpenAI shape has no place for Gemini's signature, but
// clients echo tool call ids back verbatim, so the signature rides in the
// id (base64url, so the id stays within [A-Za-z0-9_-]) and is restored on
// the function call part of the next request.
const geminiSignatureMark = "_tsig_"

// geminiIDWithSignature appends signature to id, base64url-encoded.
func geminiIDWithSignature(id, signature string) string {
	if signature == "" {
		return id
	}
	enc := strings.NewReplacer("+", "-", "/", "_", "=", "").Replace(signature)
	return id + geminiSignatureMark + enc
}

// geminiSignatureFromID recovers the thought signature carried by a tool
// call id ("" when it carries none).
func geminiSignatureFromID(id string) string {
	i := strings.LastIndex(id, geminiSignatureMark)
	if i < 0 {
		return ""
	}
	enc := id[i+len(geminiSignatureMark):]
	sig := strings.NewReplacer("-", "+", "_", "/").Replace(enc)
	for len(sig)%4 != 0 {
		sig += "="
	}
	return sig
}

// geminiResponseID is the chat.completion id: "chatcmpl-" + Gemini's
// responseId, or the pipeline's fallback id.
func geminiResponseID(responseID, idFallback string) string {
	if responseID != "" {
		return "chatcmpl-" + responseID
	}
	return idFallback
}
