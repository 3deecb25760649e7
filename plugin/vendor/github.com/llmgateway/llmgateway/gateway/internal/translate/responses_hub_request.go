package translate

import (
	"encoding/json"
	"strings"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// OpenAI Responses request → hub (OpenAI chat) request, for a Responses
// client (Codex CLI, the SDKs' responses calls) served by any provider
// type's chat backend. This file has the entry point and the
// request-level parameters; responses_hub_input.go converts the input
// items and responses_hub_tools.go the tools and tool_choice. The
// answers go back through responses_hub_response.go (whole) and
// responses_hub_stream.go (streamed); the shapes are in
// responses_hub_wire.go.
//
// Choices this translator makes:
//   - model and stream are kept as sent; max_output_tokens → max_tokens
//     (the pipeline renames it for reasoning models and adds
//     stream_options itself); temperature and top_p are forwarded only
//     when present, digit for digit; user is kept;
//   - instructions → a leading system message;
//   - reasoning.effort → reasoning_effort, as sent; reasoning.summary
//     (or generate_summary) asks for the answer's reasoning back as a
//     reasoning item (ResponsesInbound.Reasoning, with an effort other
//     than "none"); reasoning.context and the rest are dropped;
//   - text.format json_schema (name, schema, description, strict) and
//     json_object → response_format; "text" → nothing;
//     text.verbosity is dropped;
//   - dropped without a word: metadata, store, include,
//     prompt_cache_key, client_metadata, service_tier, truncation,
//     stream_options, background, safety_identifier, max_tool_calls,
//     top_logprobs and any other unknown top-level key;
//   - refused with a 400: previous_response_id and conversation (the
//     gateway is stateless: it keeps no responses, so the client must
//     send the whole conversation, as Codex does with store: false),
//     prompt (a stored prompt template), a body that is not a JSON
//     object, a missing or non-string model, a missing input, a value of
//     the wrong type (named by its path), an unknown input item or part
//     type, and a request that leaves no message to send;
//   - top-level keys are matched exactly, as the gateway reads the body
//     (decodeRequestObject: "Model" or "INPUT" is an unknown key);
//     previous_response_id, conversation and prompt count only when
//     set to something other than null or "".

// ResponsesInbound is what the pipeline (and the translators of the
// answer) need to know about a Responses request.
type ResponsesInbound struct {
	Stream bool   // the client asked for a stream
	Model  string // the request's model, as sent
	// DroppedTools are the types of the built-in tools dropped
	// (web_search, file_search, code_interpreter, computer_use*, mcp,
	// image_generation, local_shell, tool_search, …), each once, in the
	// order first seen: no chat backend can run them. The pipeline
	// reports them in X-Llmgw-Dropped-Tools and warns once per type.
	DroppedTools []string
	// Namespaces maps the name of each function flattened out of a
	// namespace tool to the namespace ("multi_agent_v1__spawn_agent" →
	// "multi_agent_v1"), and Functions to the function's own name in it
	// ("spawn_agent"): a call comes back as that name plus "namespace".
	Namespaces map[string]string
	Functions  map[string]string
	// Custom holds the (hub) names of the custom tools: a call of one
	// comes back as a custom_tool_call whose input is the function's
	// "input" argument.
	Custom map[string]bool
	// Reasoning is true when the request asked for reasoning
	// (reasoning.summary, or an effort other than "none"): the answer's
	// reasoning is then sent as a reasoning item with a summary.
	Reasoning bool
}

// HubFromResponsesRequest translates a Responses request body into a
// hub (OpenAI chat) request body, and reports what the pipeline and the
// answer's translators need to know about it. A body that is not a
// valid Responses request, or asks for what a stateless gateway cannot
// do, is a 400 naming the field.
func HubFromResponsesRequest(body []byte) ([]byte, ResponsesInbound, *apierr.Error) {
	var in ResponsesInbound
	fields, e := decodeRequestObject(body)
	if e != nil {
		return nil, in, e
	}
	if e := responsesInStateful(fields); e != nil {
		return nil, in, e
	}
	var hub responsesHubRequest
	if e := responsesInParams(fields, &hub, &in); e != nil {
		return nil, in, e
	}
	st := &responsesInState{hub: &hub, in: &in, qualified: map[string]string{}, names: map[string]string{}}
	in.Namespaces = map[string]string{}
	in.Functions = map[string]string{}
	in.Custom = map[string]bool{}
	// The tools first: the input's calls use the names they are
	// offered under.
	if e := responsesInTools(fields["tools"], st); e != nil {
		return nil, in, e
	}
	if e := responsesInToolChoice(fields["tool_choice"], fields["parallel_tool_calls"], st); e != nil {
		return nil, in, e
	}
	if e := responsesInInstructions(fields["instructions"], &hub); e != nil {
		return nil, in, e
	}
	if e := responsesInInput(fields["input"], st); e != nil {
		return nil, in, e
	}
	// Empty maps are left out (nil), as they are for a request that
	// failed. (One nil per assignment: Yaegi cannot assign an untyped nil
	// in a tuple.)
	if len(in.Namespaces) == 0 {
		in.Namespaces = nil
		in.Functions = nil
	}
	if len(in.Custom) == 0 {
		in.Custom = nil
	}
	data := encodeJSON(&hub)
	if data == nil {
		return nil, in, errInvalidRequest("request could not be translated for the model's provider")
	}
	return data, in, nil
}

// responsesInStateful refuses the fields that need state the gateway
// does not keep: a stored response, conversation or prompt.
func responsesInStateful(fields map[string]json.RawMessage) *apierr.Error {
	const resend = "this gateway is stateless and keeps no responses or conversations: " +
		`send the whole conversation in "input" (as Codex does with "store": false)`
	if isJSONTruthy(fields["previous_response_id"]) {
		return apierr.BadRequest("previous_response_id_unsupported", `"previous_response_id" is not supported: `+resend)
	}
	if isJSONTruthy(fields["conversation"]) {
		return apierr.BadRequest("conversation_unsupported", `"conversation" is not supported: `+resend)
	}
	if isJSONTruthy(fields["prompt"]) {
		return apierr.BadRequest("prompt_unsupported", `"prompt" (a stored prompt template) is not supported: `+
			`this gateway keeps no prompts; send the instructions and input themselves`)
	}
	return nil
}

// responsesInParams maps the request-level parameters: model, stream,
// max_output_tokens, sampling, user, reasoning and text.format.
func responsesInParams(fields map[string]json.RawMessage, hub *responsesHubRequest, in *ResponsesInbound) *apierr.Error {
	model, e := anthropicInModel(fields["model"])
	if e != nil {
		return e
	}
	hub.Model, in.Model = model, model
	if raw := fields["stream"]; !isJSONNull(raw) {
		stream, e := readBool(raw, "stream")
		if e != nil {
			return e
		}
		hub.Stream, in.Stream = stream, stream
	}
	if raw := fields["max_output_tokens"]; !isJSONNull(raw) {
		n, e := readInteger(raw, "max_output_tokens")
		if e != nil {
			return e
		}
		if n < 1 {
			return errInvalidField("max_output_tokens", "at least 1")
		}
		hub.MaxTokens = n
	}
	if raw := fields["temperature"]; !isJSONNull(raw) {
		t, e := readNumberText(raw, "temperature")
		if e != nil {
			return e
		}
		hub.Temperature = t
	}
	if raw := fields["top_p"]; !isJSONNull(raw) {
		p, e := readNumberText(raw, "top_p")
		if e != nil {
			return e
		}
		hub.TopP = p
	}
	if raw := fields["user"]; !isJSONNull(raw) {
		user, e := readString(raw, "user")
		if e != nil {
			return e
		}
		hub.User = user
	}
	if e := responsesInReasoningConfig(fields["reasoning"], hub, in); e != nil {
		return e
	}
	return responsesInTextConfig(fields["text"], hub)
}

// responsesInReasoningConfig reads reasoning: effort → reasoning_effort,
// and whether the answer's reasoning is wanted back.
func responsesInReasoningConfig(raw json.RawMessage, hub *responsesHubRequest, in *ResponsesInbound) *apierr.Error {
	if isJSONNull(raw) {
		return nil
	}
	var r responsesInReasoning
	if raw[0] != '{' || json.Unmarshal(raw, &r) != nil {
		return errInvalidField("reasoning", "an object")
	}
	if !isJSONNull(r.Effort) {
		effort, e := readString(r.Effort, "reasoning.effort")
		if e != nil {
			return e
		}
		hub.ReasoningEffort = effort
		in.Reasoning = effort != "" && effort != "none"
	}
	summary := r.Summary
	path := "reasoning.summary"
	if isJSONNull(summary) {
		summary, path = r.GenerateSummary, "reasoning.generate_summary"
	}
	if !isJSONNull(summary) {
		s, e := readString(summary, path)
		if e != nil {
			return e
		}
		in.Reasoning = in.Reasoning || s != "" && s != "none"
	}
	return nil
}

// responsesInTextConfig reads text.format into response_format.
func responsesInTextConfig(raw json.RawMessage, hub *responsesHubRequest) *apierr.Error {
	if isJSONNull(raw) {
		return nil
	}
	var text responsesInText
	if raw[0] != '{' || json.Unmarshal(raw, &text) != nil {
		return errInvalidField("text", "an object")
	}
	if isJSONNull(text.Format) {
		return nil
	}
	var f responsesInTextFormat
	if text.Format[0] != '{' {
		return errInvalidField("text.format", "an object")
	}
	if err := json.Unmarshal(text.Format, &f); err != nil {
		return anthropicInTypeError("text.format", err)
	}
	switch f.Type {
	case "text":
		return nil
	case "json_object":
		hub.ResponseFormat = json.RawMessage(`{"type":"json_object"}`)
		return nil
	case "json_schema":
		if f.Name == "" {
			return errInvalidField("text.format.name", "a non-empty string")
		}
		if isJSONNull(f.Schema) || f.Schema[0] != '{' {
			return errInvalidField("text.format.schema", "an object")
		}
		format := responsesHubResponseFormat{Type: "json_schema", JSONSchema: &responsesHubJSONSchema{
			Name: f.Name, Description: f.Description, Schema: f.Schema, Strict: f.Strict}}
		hub.ResponseFormat = json.RawMessage(encodeJSON(&format))
		return nil
	}
	return errInvalidField("text.format.type", `one of "text", "json_object" or "json_schema"`)
}

// responsesInInstructions adds instructions as the leading system
// message.
func responsesInInstructions(raw json.RawMessage, hub *responsesHubRequest) *apierr.Error {
	if isJSONNull(raw) {
		return nil
	}
	text, e := readString(raw, "instructions")
	if e != nil {
		return e
	}
	if strings.TrimSpace(text) != "" {
		hub.Messages = append(hub.Messages, hubRequestMessage{Role: "system", Content: quoteJSON(text)})
	}
	return nil
}
