package gateway

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// Gemini generateContent responses and streams → OpenAI chat shapes.

// gemFinishReason maps a Gemini finishReason to OpenAI's.
func gemFinishReason(reason string, toolCalls bool) string {
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

func gemUsage(u *gemUsageIn) (usage, gemOAUsageOut) {
	prompt := u.PromptTokenCount + u.ToolUsePromptTokenCount
	completion := u.CandidatesTokenCount + u.ThoughtsTokenCount
	out := gemOAUsageOut{
		PromptTokens:            prompt,
		CompletionTokens:        completion,
		TotalTokens:             prompt + completion,
		PromptTokensDetails:     gemOAPromptDetails{CachedTokens: u.CachedContentTokenCount},
		CompletionTokensDetails: gemOACompletionDetails{ReasoningTokens: u.ThoughtsTokenCount},
	}
	return usage{
		promptTokens:     prompt,
		completionTokens: completion,
		cacheReadTokens:  u.CachedContentTokenCount,
		reported:         true,
	}, out
}

// gemCallIDBase is the per-response part of generated tool call ids.
func gemCallIDBase(responseID, idFallback string) string {
	if responseID != "" {
		return responseID
	}
	return strings.TrimPrefix(idFallback, "chatcmpl-")
}

func gemCallID(call *gemFuncCallIn, base string, n int, signature string) string {
	id := call.ID
	if id == "" && base == "" {
		id = "call_" + strconv.Itoa(n)
	} else if id == "" {
		id = "call_" + base + "_" + strconv.Itoa(n)
	}
	return gemIDWithSignature(id, signature)
}

// gemSignatureMark separates a tool call id from the thought signature
// it carries. The OpenAI shape has no place for Gemini's signature, but
// clients echo tool call ids back verbatim, so the signature rides in the
// id (base64url, so the id stays within [A-Za-z0-9_-]) and is restored on
// the function call part of the next request.
const gemSignatureMark = "_tsig_"

func gemIDWithSignature(id, signature string) string {
	if signature == "" {
		return id
	}
	enc := strings.NewReplacer("+", "-", "/", "_", "=", "").Replace(signature)
	return id + gemSignatureMark + enc
}

// gemSignatureFromID recovers the thought signature carried by a tool
// call id ("" when it carries none).
func gemSignatureFromID(id string) string {
	i := strings.LastIndex(id, gemSignatureMark)
	if i < 0 {
		return ""
	}
	enc := id[i+len(gemSignatureMark):]
	sig := strings.NewReplacer("-", "+", "_", "/").Replace(enc)
	for len(sig)%4 != 0 {
		sig += "="
	}
	return sig
}

func gemResponseID(responseID, idFallback string) string {
	if responseID != "" {
		return "chatcmpl-" + responseID
	}
	return idFallback
}

// geminiChatResponse translates a generateContent response into an
// OpenAI chat.completion.
func geminiChatResponse(body []byte, tc translateContext) ([]byte, usage, *apiError) {
	var r gemRespIn
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, usage{}, gemBadUpstream(err)
	}
	if !isJSONNull(r.Error) {
		return nil, usage{}, gemUpstreamError(r.Error, body)
	}
	out := gemOACompletionOut{
		ID:      gemResponseID(r.ResponseID, tc.idFallback),
		Object:  "chat.completion",
		Created: tc.created,
		Model:   tc.requestedModel,
		Choices: []gemOAChoiceOut{},
	}
	base := gemCallIDBase(r.ResponseID, tc.idFallback)
	callN := 0
	for i := 0; i < len(r.Candidates); i++ {
		cand := &r.Candidates[i]
		var sb strings.Builder
		var calls []gemOAToolCallOut
		if cand.Content != nil {
			for j := 0; j < len(cand.Content.Parts); j++ {
				p := &cand.Content.Parts[j]
				if p.Thought {
					continue
				}
				if p.FunctionCall != nil {
					calls = append(calls, gemOAToolCallOut{
						ID:       gemCallID(p.FunctionCall, base, callN, p.ThoughtSignature),
						Type:     "function",
						Function: gemOAFunctionOut{Name: p.FunctionCall.Name, Arguments: compactArguments(p.FunctionCall.Args)},
					})
					callN++
					continue
				}
				if p.Text != nil {
					sb.WriteString(*p.Text)
				}
			}
		}
		text := sb.String()
		msg := gemOAMessageOut{Role: "assistant", ToolCalls: calls}
		if text != "" || len(calls) == 0 {
			msg.Content = &text
		}
		out.Choices = append(out.Choices, gemOAChoiceOut{
			Index:        i,
			Message:      msg,
			FinishReason: gemFinishReason(cand.FinishReason, len(calls) > 0),
		})
	}
	if len(r.Candidates) == 0 {
		if r.PromptFeedback == nil || r.PromptFeedback.BlockReason == "" {
			return nil, usage{}, gemBadUpstream(nil)
		}
		empty := ""
		out.Choices = append(out.Choices, gemOAChoiceOut{
			Message:      gemOAMessageOut{Role: "assistant", Content: &empty},
			FinishReason: "content_filter",
		})
	}
	var u usage
	if r.UsageMetadata != nil {
		ru, uo := gemUsage(r.UsageMetadata)
		u = ru
		out.Usage = &uo
	}
	return encodeJSON(out), u, nil
}

// ---------------------------------------------------------------------
// Streaming

type geminiStream struct {
	tc        translateContext
	id        string
	callBase  string
	started   bool
	finished  bool
	sawCall   bool
	calls     int
	u         usage
	usageOut  gemOAUsageOut
	haveUsage bool
}

// newGeminiStream translates :streamGenerateContent?alt=sse events.
func newGeminiStream(tc translateContext) streamTranslator {
	return &geminiStream{tc: tc}
}

func (s *geminiStream) chunk(delta gemOADelta, finish string) streamPayload {
	c := gemOAChunk{
		ID:      s.id,
		Object:  "chat.completion.chunk",
		Created: s.tc.created,
		Model:   s.tc.requestedModel,
		Choices: []gemOAChunkChoice{{Index: 0, Delta: delta}},
	}
	if finish != "" {
		c.Choices[0].FinishReason = &finish
	}
	return streamPayload{data: encodeJSON(c)}
}

// textChunk appends a content delta for non-empty text.
func (s *geminiStream) textChunk(out []streamPayload, text string) []streamPayload {
	if text == "" {
		return out
	}
	return append(out, s.chunk(gemOADelta{Content: &text}, ""))
}

func (s *geminiStream) event(ev sseEvent, out []streamPayload) ([]streamPayload, *apiError) {
	data := bytes.TrimSpace(ev.data)
	if len(data) == 0 || string(data) == "[DONE]" {
		return out, nil
	}
	if data[0] != '{' {
		return out, gemBadUpstream(nil)
	}
	var r gemRespIn
	if err := json.Unmarshal(data, &r); err != nil {
		return out, gemBadUpstream(err)
	}
	if !isJSONNull(r.Error) {
		return out, gemUpstreamError(r.Error, data)
	}
	if !s.started {
		s.started = true
		s.id = gemResponseID(r.ResponseID, s.tc.idFallback)
		s.callBase = gemCallIDBase(r.ResponseID, s.tc.idFallback)
		empty := ""
		out = append(out, s.chunk(gemOADelta{Role: "assistant", Content: &empty}, ""))
	}
	if r.UsageMetadata != nil {
		ru, uo := gemUsage(r.UsageMetadata)
		s.u = ru
		s.usageOut = uo
		s.haveUsage = true
	}
	if s.finished {
		return out, nil
	}
	if len(r.Candidates) == 0 && r.PromptFeedback != nil && r.PromptFeedback.BlockReason != "" {
		s.finished = true
		return append(out, s.chunk(gemOADelta{}, "content_filter")), nil
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
					d := gemOAToolCallDelta{
						Index:    s.calls,
						ID:       gemCallID(p.FunctionCall, s.callBase, s.calls, p.ThoughtSignature),
						Type:     "function",
						Function: gemOAFunctionOut{Name: p.FunctionCall.Name, Arguments: compactArguments(p.FunctionCall.Args)},
					}
					s.calls++
					s.sawCall = true
					out = append(out, s.chunk(gemOADelta{ToolCalls: []gemOAToolCallDelta{d}}, ""))
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
			out = append(out, s.chunk(gemOADelta{}, gemFinishReason(cand.FinishReason, s.sawCall)))
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
		uo := s.usageOut
		c := gemOAChunk{
			ID:      s.id,
			Object:  "chat.completion.chunk",
			Created: s.tc.created,
			Model:   s.tc.requestedModel,
			Choices: []gemOAChunkChoice{},
			Usage:   &uo,
		}
		out = append(out, streamPayload{data: encodeJSON(c)})
	}
	return out, nil
}

func (s *geminiStream) usage() usage {
	return s.u
}

// ---------------------------------------------------------------------
// Embeddings
