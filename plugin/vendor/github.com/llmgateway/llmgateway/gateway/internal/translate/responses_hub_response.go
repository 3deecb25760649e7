package translate

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// Hub chat.completion → Response object (ResponsesFromHubResponse), and
// what the stream translator (responses_hub_stream.go) shares with it:
// ids, items, statuses and usage.
//
//   - output items in this order: reasoning (the message's
//     reasoning_content or reasoning, as one summary_text, only when the
//     request asked for reasoning), message (content as an output_text
//     part, then the refusal as a refusal part), then one item per tool
//     call: a function_call (the arguments string as sent, "{}" when
//     empty), or for a custom tool a custom_tool_call whose input is the
//     function's "input" argument (responsesCustomInput); a namespace's
//     function comes back under its own name plus "namespace". call_id
//     is the hub's tool call id (so a Gemini call id, which carries its
//     thought signature, comes back unchanged), generated when missing;
//   - ids: the response "resp_" + the hub id without "chatcmpl-"; each
//     item its kind's prefix (msg_, rs_, fc_, ctc_), the response id's
//     rest and the item's output index;
//   - status "completed", or "incomplete" with incomplete_details.reason
//     max_output_tokens (finish_reason length) or content_filter; the
//     last item of an incomplete response is "incomplete" too;
//   - usage: input_tokens = prompt_tokens (cached included, as in
//     chat), cached_tokens, output_tokens = completion_tokens,
//     reasoning_tokens, total; null when the hub sent none;
//   - only choice 0 is read: a Responses request asks for one.

// ResponsesFromHubResponse translates a whole hub answer (an OpenAI
// chat.completion) into a Response object for the request described by
// in, and reports its usage (Reported when the hub sent usage). A body
// that is not a chat.completion is a 502 of class ClassBadResponse; an
// error body is the provider's error.
func ResponsesFromHubResponse(hub []byte, ctx Context, in ResponsesInbound) ([]byte, Usage, *apierr.Error) {
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
	id := responsesID(body.ID, ctx.IDFallback)
	finish := ""
	var items []responsesOutItem
	if len(body.Choices) > 0 {
		choice := &body.Choices[0]
		finish = choice.FinishReason
		items = responsesOutItems(&choice.Message, strings.TrimPrefix(id, "resp_"), in)
	}
	resp := responsesNewResponse(id, ctx, "completed")
	if reason := responsesIncompleteReason(finish); reason != "" {
		resp.Status = "incomplete"
		resp.IncompleteDetails = &responsesOutIncomplete{Reason: reason}
		if n := len(items); n > 0 {
			items[n-1].Status = "incomplete"
		}
	}
	for i := 0; i < len(items); i++ {
		resp.Output = append(resp.Output, json.RawMessage(encodeJSON(&items[i])))
	}
	var u Usage
	if body.Usage != nil {
		_, u = anthropicUsageFromHub(body.Usage)
		resp.Usage = responsesUsage(u, responsesReasoningTokens(trimmed))
	}
	data := encodeJSON(resp)
	if data == nil {
		return nil, Usage{}, hubBadResponse("answer", nil)
	}
	return data, u, nil
}

// responsesOutItems is the output of a hub message.
func responsesOutItems(m *hubReadMessage, base string, in ResponsesInbound) []responsesOutItem {
	items := make([]responsesOutItem, 0, 2+len(m.ToolCalls))
	if in.Reasoning {
		reasoning := jsonStringValue(m.ReasoningContent)
		if reasoning == "" {
			reasoning = jsonStringValue(m.Reasoning)
		}
		if reasoning != "" {
			items = append(items, responsesReasoningItem(responsesItemID("rs_", base, len(items)), quoteJSON(reasoning), ""))
		}
	}
	text := anthropicOutContentText(m.Content)
	refusal := jsonStringValue(m.Refusal)
	if text != "" || refusal != "" {
		var parts []responsesOutPart
		if text != "" {
			parts = append(parts, responsesTextPart(quoteJSON(text)))
		}
		if refusal != "" {
			parts = append(parts, responsesRefusalPart(quoteJSON(refusal)))
		}
		items = append(items, responsesMessageItem(responsesItemID("msg_", base, len(items)), "completed", parts))
	}
	for i := 0; i < len(m.ToolCalls); i++ {
		call := &m.ToolCalls[i]
		callID := call.ID
		if callID == "" {
			callID = responsesCallID(base, i)
		}
		args := responsesArgumentsJSON(call.Function.Arguments)
		items = append(items, responsesToolItem(call.Function.Name, callID, base, len(items), args, "completed", in))
	}
	return items
}

// responsesNewResponse is a Response with no output and no usage yet.
func responsesNewResponse(id string, ctx Context, status string) *responsesOutResponse {
	return &responsesOutResponse{ID: id, Object: "response", CreatedAt: ctx.Created, Status: status,
		Model: ctx.RequestedModel, Output: []json.RawMessage{}}
}

// responsesID is the Response id for a hub answer: "resp_" and the hub
// id without its "chatcmpl-" prefix (fallback when the hub sent none);
// an id that already starts with "resp_" is kept.
func responsesID(hubID, fallback string) string {
	id := hubID
	if id == "" {
		id = fallback
	}
	if strings.HasPrefix(id, "resp_") {
		return id
	}
	id = strings.TrimPrefix(id, "chatcmpl-")
	if id == "" {
		id = "gateway"
	}
	return "resp_" + id
}

// responsesItemID is the id of the output item at index: its kind's
// prefix, the response id's base and the index.
func responsesItemID(prefix, base string, index int) string {
	return prefix + base + "_" + strconv.Itoa(index)
}

// responsesCallID is the call_id of the n-th tool call when the hub
// sent none.
func responsesCallID(base string, n int) string {
	return "call_" + base + "_" + strconv.Itoa(n)
}

// responsesIncompleteReason is incomplete_details.reason for a hub
// finish_reason, "" for a complete answer.
func responsesIncompleteReason(finish string) string {
	switch finish {
	case "length":
		return "max_output_tokens"
	case "content_filter":
		return "content_filter"
	}
	return ""
}

// responsesTextPart is an output_text part (text an encoded string).
func responsesTextPart(text json.RawMessage) responsesOutPart {
	return responsesOutPart{Type: "output_text", Text: text, Annotations: json.RawMessage("[]")}
}

// responsesRefusalPart is a refusal part (refusal an encoded string).
func responsesRefusalPart(refusal json.RawMessage) responsesOutPart {
	return responsesOutPart{Type: "refusal", Refusal: refusal}
}

// responsesMessageItem is an assistant message item.
func responsesMessageItem(id, status string, parts []responsesOutPart) responsesOutItem {
	content := json.RawMessage("[]")
	if len(parts) > 0 {
		content = json.RawMessage(encodeJSON(parts))
	}
	return responsesOutItem{Type: "message", ID: id, Status: status, Role: "assistant", Content: content}
}

// responsesReasoningItem is a reasoning item whose summary is text (an
// encoded string; nil for an empty summary).
func responsesReasoningItem(id string, text json.RawMessage, status string) responsesOutItem {
	summary := json.RawMessage("[]")
	if text != nil {
		summary = json.RawMessage(encodeJSON([]responsesOutPart{{Type: "summary_text", Text: text}}))
	}
	return responsesOutItem{Type: "reasoning", ID: id, Status: status, Summary: summary}
}

// responsesToolItem is the output item at index for a call of hub
// function hubName with args (an encoded string holding the JSON
// arguments): a function_call, or a custom_tool_call for a custom tool,
// under the tool's own name and namespace.
func responsesToolItem(hubName, callID, base string, index int, args json.RawMessage, status string, in ResponsesInbound) responsesOutItem {
	name, namespace := responsesToolName(hubName, in)
	if in.Custom[hubName] {
		input := quoteJSON(responsesCustomInput(jsonStringValue(args)))
		return responsesOutItem{Type: "custom_tool_call", ID: responsesItemID("ctc_", base, index), Status: status,
			CallID: callID, Name: name, Namespace: namespace, Input: input}
	}
	return responsesOutItem{Type: "function_call", ID: responsesItemID("fc_", base, index), Status: status,
		CallID: callID, Name: name, Namespace: namespace, Arguments: args}
}

// responsesToolName is the client's name and namespace of hub function
// hubName: a namespace's function's own name, else hubName itself.
func responsesToolName(hubName string, in ResponsesInbound) (string, string) {
	if namespace, ok := in.Namespaces[hubName]; ok {
		return in.Functions[hubName], namespace
	}
	return hubName, ""
}

// responsesArgumentsJSON is a tool call's arguments as an encoded
// string: the string the hub sent, or the compact text of an object
// (from providers that send one); "{}" when there are none.
func responsesArgumentsJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) > 0 && raw[0] == '{' {
		return quoteJSON(compactArguments(raw))
	}
	if len(raw) > 2 && raw[0] == '"' {
		return raw
	}
	return json.RawMessage(`"{}"`)
}

// responsesCustomInput is a custom tool's input from its function's
// arguments: the "input" string; else, for an object holding one string
// under another name, that string; for any other object ""; and for
// arguments that are no JSON object at all (a model that wrote the raw
// text), the arguments themselves.
func responsesCustomInput(args string) string {
	var fields map[string]json.RawMessage
	if json.Unmarshal([]byte(args), &fields) != nil || fields == nil {
		return args
	}
	if raw, ok := fields["input"]; ok {
		return jsonStringValue(raw)
	}
	if len(fields) == 1 {
		for _, raw := range fields {
			return jsonStringValue(raw)
		}
	}
	return ""
}

// responsesUsage is the Response usage for the gateway's usage u and
// the reasoning tokens.
func responsesUsage(u Usage, reasoningTokens int64) *responsesOutUsage {
	return &responsesOutUsage{InputTokens: u.PromptTokens, InputTokensDetails: responsesOutInputDetails{CachedTokens: u.CacheReadTokens},
		OutputTokens: u.CompletionTokens, OutputTokensDetails: responsesOutOutputDetails{ReasoningTokens: reasoningTokens},
		TotalTokens: u.PromptTokens + u.CompletionTokens}
}

// responsesReasoningTokens reads usage.completion_tokens_details
// .reasoning_tokens from a hub body (0 when absent).
func responsesReasoningTokens(body []byte) int64 {
	var r responsesReadReasoningTokens
	if json.Unmarshal(body, &r) != nil || r.Usage == nil || r.Usage.CompletionTokensDetails == nil {
		return 0
	}
	return r.Usage.CompletionTokensDetails.ReasoningTokens
}
