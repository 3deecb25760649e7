package gateway

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// Gemini generateContent responses and streams → OpenAI chat shapes.

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
func geminiUsage(u *geminiWireUsage) (usage, *hubUsage) {
	prompt := u.PromptTokenCount + u.ToolUsePromptTokenCount
	completion := u.CandidatesTokenCount + u.ThoughtsTokenCount
	gu := usage{
		promptTokens:     prompt,
		completionTokens: completion,
		cacheReadTokens:  u.CachedContentTokenCount,
		reported:         true,
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

func geminiResponseID(responseID, idFallback string) string {
	if responseID != "" {
		return "chatcmpl-" + responseID
	}
	return idFallback
}

// geminiChatResponse translates a generateContent response into an
// OpenAI chat.completion.
func geminiChatResponse(body []byte, tc translateContext) ([]byte, usage, *apiError) {
	var r geminiWireResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, usage{}, geminiBadResponse(err)
	}
	if !isJSONNull(r.Error) {
		return nil, usage{}, geminiUpstreamError(r.Error, body)
	}
	out := hubChatCompletion{
		ID:      geminiResponseID(r.ResponseID, tc.idFallback),
		Object:  "chat.completion",
		Created: tc.created,
		Model:   tc.requestedModel,
		Choices: []hubChoice{},
	}
	base := geminiCallIDBase(r.ResponseID, tc.idFallback)
	callN := 0
	for i := 0; i < len(r.Candidates); i++ {
		cand := &r.Candidates[i]
		var sb strings.Builder
		var calls []hubToolCall
		if cand.Content != nil {
			for j := 0; j < len(cand.Content.Parts); j++ {
				p := &cand.Content.Parts[j]
				if p.Thought {
					continue
				}
				if p.FunctionCall != nil {
					calls = append(calls, geminiToolCall(p, base, callN, nil))
					callN++
					continue
				}
				if p.Text != nil {
					sb.WriteString(*p.Text)
				}
			}
		}
		text := sb.String()
		msg := hubMessage{Role: "assistant", Refusal: jsonNull, ToolCalls: calls}
		if text != "" || len(calls) == 0 {
			msg.Content = &text
		}
		out.Choices = append(out.Choices, hubChoice{
			Index:        i,
			Message:      msg,
			FinishReason: geminiFinishReason(cand.FinishReason, len(calls) > 0),
		})
	}
	if len(r.Candidates) == 0 {
		if r.PromptFeedback == nil || r.PromptFeedback.BlockReason == "" {
			return nil, usage{}, geminiBadResponse(nil)
		}
		empty := ""
		out.Choices = append(out.Choices, hubChoice{
			Message:      hubMessage{Role: "assistant", Content: &empty, Refusal: jsonNull},
			FinishReason: "content_filter",
		})
	}
	var u usage
	if r.UsageMetadata != nil {
		u, out.Usage = geminiUsage(r.UsageMetadata)
	}
	return encodeJSON(out), u, nil
}

// ---------------------------------------------------------------------
// Streaming

type geminiStream struct {
	tc       translateContext
	id       string
	callBase string
	started  bool
	finished bool
	sawCall  bool
	calls    int
	u        usage
	usageOut *hubUsage // nil until a usageMetadata arrives
}

// newGeminiStream translates :streamGenerateContent?alt=sse events.
func newGeminiStream(tc translateContext) streamTranslator {
	return &geminiStream{tc: tc}
}

// chunk is the payload of a chunk carrying delta; finish is "" except
// in the finish chunk.
func (s *geminiStream) chunk(delta hubDelta, finish string) streamPayload {
	if finish == "" {
		return hubDeltaPayload(s.tc, s.id, delta, nil)
	}
	return hubDeltaPayload(s.tc, s.id, delta, &finish)
}

// textChunk appends a content delta for non-empty text.
func (s *geminiStream) textChunk(out []streamPayload, text string) []streamPayload {
	if text == "" {
		return out
	}
	return append(out, s.chunk(hubDelta{Content: &text}, ""))
}

func (s *geminiStream) event(ev sseEvent, out []streamPayload) ([]streamPayload, *apiError) {
	data := bytes.TrimSpace(ev.data)
	if len(data) == 0 || string(data) == "[DONE]" {
		return out, nil
	}
	if data[0] != '{' {
		return out, geminiBadResponse(nil)
	}
	var r geminiWireResponse
	if err := json.Unmarshal(data, &r); err != nil {
		return out, geminiBadResponse(err)
	}
	if !isJSONNull(r.Error) {
		return out, geminiUpstreamError(r.Error, data)
	}
	if !s.started {
		s.started = true
		s.id = geminiResponseID(r.ResponseID, s.tc.idFallback)
		s.callBase = geminiCallIDBase(r.ResponseID, s.tc.idFallback)
		empty := ""
		out = append(out, s.chunk(hubDelta{Role: "assistant", Content: &empty}, ""))
	}
	if r.UsageMetadata != nil {
		s.u, s.usageOut = geminiUsage(r.UsageMetadata)
	}
	if s.finished {
		return out, nil
	}
	if len(r.Candidates) == 0 && r.PromptFeedback != nil && r.PromptFeedback.BlockReason != "" {
		s.finished = true
		return append(out, s.chunk(hubDelta{}, "content_filter")), nil
	}
	for i := 0; i < len(r.Candidates); i++ {
		cand := &r.Candidates[i]
		if cand.Index != 0 {
			continue
		}
		text := ""
		if cand.Content != nil {
			for j := 0; j < len(cand.Content.Parts); j++ {
				p := &cand.Content.Parts[j]
				if p.Thought {
					continue
				}
				if p.FunctionCall != nil {
					out = s.textChunk(out, text)
					text = ""
					index := s.calls
					d := geminiToolCall(p, s.callBase, s.calls, &index)
					s.calls++
					s.sawCall = true
					out = append(out, s.chunk(hubDelta{ToolCalls: []hubToolCall{d}}, ""))
					continue
				}
				if p.Text != nil {
					text += *p.Text
				}
			}
		}
		out = s.textChunk(out, text)
		if cand.FinishReason != "" {
			s.finished = true
			out = append(out, s.chunk(hubDelta{}, geminiFinishReason(cand.FinishReason, s.sawCall)))
		}
		break
	}
	return out, nil
}

func (s *geminiStream) finish(out []streamPayload) ([]streamPayload, *apiError) {
	if !s.finished {
		return out, newError(http.StatusBadGateway, "server_error", "upstream_stream_truncated",
			"the gemini stream ended before a finish reason")
	}
	if s.tc.includeUsage {
		hu := s.usageOut
		if hu == nil {
			_, hu = geminiUsage(&geminiWireUsage{})
		}
		out = append(out, hubUsagePayload(s.tc, s.id, hu))
	}
	return out, nil
}

func (s *geminiStream) usage() usage {
	return s.u
}

// ---------------------------------------------------------------------
// Embeddings
