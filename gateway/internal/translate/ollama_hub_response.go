package translate

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// Hub chat.completion → one Ollama answer object
// (OllamaFromHubResponse), and what the stream translator
// (ollama_hub_stream.go) shares with it: done reasons, metrics and tool
// calls.
//
//   - a chat answer: message {role "assistant", content (a refusal when
//     there is no content; "" when neither), thinking (the hub's
//     reasoning_content or reasoning, only when the client asked to
//     think), tool_calls [{id, function {index, name, arguments}}]} with
//     the arguments an object ({} when the hub's are empty or not an
//     object), numbers digit for digit, a call without a name left out;
//     a generate answer: response and thinking at the top level, and no
//     tool calls;
//   - done true; done_reason: length → "length", anything else (stop,
//     tool_calls, content_filter, none) → "stop", as Ollama reports;
//   - prompt_eval_count and eval_count are the hub usage's prompt and
//     completion tokens (0 when it sent none);
//   - durations are nanoseconds from the pipeline's clock (OllamaTimes):
//     total End−Start, prompt_eval FirstToken−Start, eval
//     End−FirstToken, load 0 (the gateway loads no model);
//   - created_at is End in UTC, RFC 3339 with nanoseconds;
//   - only choice 0 is read: an Ollama request asks for one.

// OllamaTimes are the instants of one exchange, measured by the
// pipeline: the request's start, the first byte of the answer, its end.
// A FirstToken outside [Start, End] (or zero) is read as End.
type OllamaTimes struct {
	Start, FirstToken, End time.Time
}

// The done reasons Ollama reports.
const (
	ollamaDoneStop   = "stop"
	ollamaDoneLength = "length"
)

// OllamaFromHubResponse translates a whole hub answer (an OpenAI
// chat.completion) into the one Ollama object of a request without
// stream (a chat or a generate answer, per in), and reports its usage
// (Reported when the hub sent usage). A body that is not a
// chat.completion is a 502 of class ClassBadResponse; an error body is
// the provider's error.
func OllamaFromHubResponse(hub []byte, in OllamaInbound, t OllamaTimes) ([]byte, Usage, *apierr.Error) {
	trimmed := bytes.TrimSpace(hub)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, Usage{}, hubBadResponse("answer (not a JSON object)", nil)
	}
	var body hubReadBody
	if err := json.Unmarshal(trimmed, &body); err != nil && !isTypeMismatch(err) {
		return nil, Usage{}, hubBadResponse("answer", err)
	}
	if !isJSONNull(body.Error) {
		return nil, Usage{}, hubUpstreamError(body.Error, trimmed)
	}
	if body.Choices == nil || body.Object != "" && body.Object != "chat.completion" {
		return nil, Usage{}, hubBadResponse("answer (not a chat.completion)", nil)
	}
	var u Usage
	if body.Usage != nil {
		_, u = anthropicUsageFromHub(body.Usage)
	}
	line := ollamaFinalLine(in, t, "", u)
	text := ""
	thinking := ""
	var calls []ollamaOutToolCall
	if len(body.Choices) > 0 {
		choice := &body.Choices[0]
		line.DoneReason = ollamaDoneReason(choice.FinishReason)
		m := &choice.Message
		text = anthropicOutContentText(m.Content)
		if text == "" {
			text = jsonStringValue(m.Refusal)
		}
		if in.Think {
			thinking = jsonStringValue(m.ReasoningContent)
			if thinking == "" {
				thinking = jsonStringValue(m.Reasoning)
			}
		}
		calls = ollamaOutToolCalls(m.ToolCalls)
	}
	var reasoning json.RawMessage
	if thinking != "" {
		reasoning = quoteJSON(thinking)
	}
	if in.Generate {
		line.Response = quoteJSON(text)
		line.Thinking = reasoning
	} else {
		line.Message = &ollamaOutMessage{Role: "assistant", Content: quoteJSON(text), Thinking: reasoning, ToolCalls: calls}
	}
	data := encodeJSON(&line)
	if data == nil {
		return nil, Usage{}, hubBadResponse("answer", nil)
	}
	return data, u, nil
}

// ollamaOutToolCalls converts a hub message's whole tool calls,
// leaving out any without a name.
func ollamaOutToolCalls(calls []hubReadToolCall) []ollamaOutToolCall {
	if len(calls) == 0 {
		return nil
	}
	out := make([]ollamaOutToolCall, 0, len(calls))
	for i := 0; i < len(calls); i++ {
		c := &calls[i]
		if c.Function.Name == "" {
			continue
		}
		out = append(out, ollamaOutToolCall{ID: c.ID, Function: ollamaOutFunction{Index: len(out), Name: c.Function.Name,
			Arguments: anthropicToolInputFrom(c.Function.Arguments)}})
	}
	return out
}

// ollamaDoneReason maps a hub finish_reason to Ollama's done_reason.
func ollamaDoneReason(finish string) string {
	if finish == "length" {
		return ollamaDoneLength
	}
	return ollamaDoneStop
}

// ollamaFinalLine is the final line (or whole answer) of an exchange
// with the times t and usage u, its content still empty: a chat line's
// message, or a generate line's response.
func ollamaFinalLine(in OllamaInbound, t OllamaTimes, finish string, u Usage) ollamaOutLine {
	total, first := ollamaSpan(t)
	eval := total - first
	var load int64
	prompt, completion := u.PromptTokens, u.CompletionTokens
	line := ollamaOutLine{Model: in.Model, CreatedAt: ollamaTimestamp(t.End), Done: true, DoneReason: ollamaDoneReason(finish),
		TotalDuration: &total, LoadDuration: &load, PromptEvalCount: &prompt, PromptEvalDuration: &first,
		EvalCount: &completion, EvalDuration: &eval}
	if in.Generate {
		line.Response = json.RawMessage(`""`)
	} else {
		line.Message = &ollamaOutMessage{Role: "assistant", Content: json.RawMessage(`""`)}
	}
	return line
}

// ollamaSpan is the exchange's total duration and the part of it before
// the first token, in nanoseconds, never negative.
func ollamaSpan(t OllamaTimes) (int64, int64) {
	total := int64(t.End.Sub(t.Start))
	if total < 0 {
		return 0, 0
	}
	first := t.End
	if !t.FirstToken.IsZero() && !t.FirstToken.Before(t.Start) && !t.FirstToken.After(t.End) {
		first = t.FirstToken
	}
	return total, int64(first.Sub(t.Start))
}

// ollamaTimestamp is created_at for the instant t.
func ollamaTimestamp(t time.Time) string {
	return t.UTC().Format(time.RFC3339Nano)
}
