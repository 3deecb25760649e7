package translate

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strconv"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// Anthropic Messages request → hub (OpenAI chat) request, for an
// Anthropic client served by an OpenAI- or Gemini-type backend. This file
// has the entry point, the request-level parameters and the tools;
// anthropic_hub_messages.go converts the conversation. The answers go
// back through anthropic_hub_response.go (whole) and
// anthropic_hub_stream.go (streamed); the shapes are in
// anthropic_hub_wire.go.
//
// Choices this translator makes:
//   - model and stream are kept as sent; max_tokens stays "max_tokens"
//     (the pipeline renames it for reasoning models and adds
//     stream_options itself);
//   - temperature and top_p are forwarded only when present, digit for
//     digit; stop_sequences → stop (empty strings left out);
//     metadata.user_id → user, a string kept as it is (Claude Code's is
//     a JSON object encoded as a string);
//   - tools → function tools, input_schema passed on verbatim as
//     parameters ($schema and unknown keys included; {"type":"object",
//     "properties":{}} when absent); server tools (a "type" other than
//     "custom") are dropped, and when no tool is left so are
//     tool_choice and parallel_tool_calls; tool_choice auto/any/tool/none
//     → "auto"/"required"/the named function/"none";
//     disable_parallel_tool_use → parallel_tool_calls false;
//   - dropped without a word: top_k, thinking (reported in
//     AnthropicInbound), cache_control wherever it sits, tool-level keys
//     other than name/description/input_schema (defer_loading, ...),
//     context_management, output_config, service_tier, container,
//     mcp_servers and any other unknown top-level key;
//   - refused with a 400 naming the field: a body that is not a JSON
//     object, a missing or non-string model, messages missing, not an
//     array or empty, a role other than user and assistant, a value of
//     the wrong type, a tool_choice naming no custom tool, and a block
//     the hub cannot express (see anthropic_hub_messages.go);
//   - top-level keys are matched exactly (anthropicInDecode).

// AnthropicInbound is what the pipeline needs to know about an Anthropic
// Messages request.
type AnthropicInbound struct {
	Stream bool // the client asked for a stream
	// Thinking is true when the client enabled thinking
	// ({"type":"enabled"} or {"type":"adaptive"}): the answer's reasoning
	// is then sent as thinking blocks.
	Thinking bool
	// ThinkingDropped is true when a thinking config other than
	// {"type":"disabled"} was present: the hub request has no equivalent
	// and it was dropped (the pipeline warns once).
	ThinkingDropped bool
	MaxTokens       int64 // the client's max_tokens (0 if absent)
}

// anthropicInDefaultSchema is the parameters of a tool without an
// input_schema.
const anthropicInDefaultSchema = `{"type":"object","properties":{}}`

// HubFromAnthropicRequest translates an Anthropic Messages request body
// to a hub (OpenAI chat) request body, and reports what the pipeline
// needs to know about it. A body that is not a valid Messages request, or
// holds a block the hub cannot express, is a 400 naming the field.
func HubFromAnthropicRequest(body []byte) ([]byte, AnthropicInbound, *apierr.Error) {
	var in AnthropicInbound
	var req anthropicInRequest
	if e := anthropicInDecode(body, &req); e != nil {
		return nil, in, e
	}
	var hub hubRequest
	if e := anthropicInParams(&req, &hub, &in); e != nil {
		return nil, in, e
	}
	if e := anthropicInSystem(req.System, &hub); e != nil {
		return nil, in, e
	}
	if e := anthropicInMessages(req.Messages, &hub); e != nil {
		return nil, in, e
	}
	if e := anthropicInTools(&req, &hub); e != nil {
		return nil, in, e
	}
	data := encodeJSON(&hub)
	if data == nil {
		return nil, in, errInvalidRequest("request could not be translated for the model's provider")
	}
	return data, in, nil
}

// AnthropicCountTokens estimates the input tokens of a count_tokens
// request for a backend that cannot count them: ceil(request body bytes
// / 4), the estimate the gateway reserves and accounts prompts with, so
// the answer agrees with what a request of that body is charged before
// its usage is known (and is at least 1 for any valid body). A body that
// is not a JSON object with a model string and a messages array is a 400.
func AnthropicCountTokens(body []byte) (int64, *apierr.Error) {
	var req anthropicInRequest
	if e := anthropicInDecode(body, &req); e != nil {
		return 0, e
	}
	if _, e := anthropicInModel(req.Model); e != nil {
		return 0, e
	}
	if isJSONNull(req.Messages) {
		return 0, errInvalidRequest(`"messages" is required`)
	}
	if req.Messages[0] != '[' {
		return 0, errInvalidField("messages", "an array")
	}
	return int64((len(body) + 3) / 4), nil
}

// anthropicInDecode reads the top level of a request body; anything but
// a JSON object is a 400 invalid_json. The keys are matched exactly, as
// the gateway reads the body (a struct decode would also take "Model"
// or "MAX_TOKENS", and a body with both spellings would translate a
// value other than the one the gateway reserved for).
func anthropicInDecode(body []byte, req *anthropicInRequest) *apierr.Error {
	fields, e := decodeRequestObject(body)
	if e != nil {
		return e
	}
	req.Model = fields["model"]
	req.MaxTokens = fields["max_tokens"]
	req.System = fields["system"]
	req.Messages = fields["messages"]
	req.Tools = fields["tools"]
	req.ToolChoice = fields["tool_choice"]
	req.StopSequences = fields["stop_sequences"]
	req.Temperature = fields["temperature"]
	req.TopP = fields["top_p"]
	req.Metadata = fields["metadata"]
	req.Thinking = fields["thinking"]
	req.Stream = fields["stream"]
	return nil
}

// anthropicInModel reads the required model string.
func anthropicInModel(raw json.RawMessage) (string, *apierr.Error) {
	if isJSONNull(raw) {
		return "", errInvalidRequest(`"model" is required`)
	}
	model, e := readString(raw, "model")
	if e != nil || model == "" {
		return "", errInvalidField("model", "a non-empty string")
	}
	return model, nil
}

// anthropicInParams maps the request-level parameters: model,
// max_tokens, stream, sampling, stop sequences, metadata and thinking.
func anthropicInParams(req *anthropicInRequest, hub *hubRequest, in *AnthropicInbound) *apierr.Error {
	model, e := anthropicInModel(req.Model)
	if e != nil {
		return e
	}
	hub.Model = model
	if !isJSONNull(req.MaxTokens) {
		n, e := readInteger(req.MaxTokens, "max_tokens")
		if e != nil {
			return e
		}
		if n < 1 {
			return errInvalidField("max_tokens", "at least 1")
		}
		hub.MaxTokens = n
		in.MaxTokens = n
	}
	if !isJSONNull(req.Stream) {
		stream, e := readBool(req.Stream, "stream")
		if e != nil {
			return e
		}
		hub.Stream = stream
		in.Stream = stream
	}
	if !isJSONNull(req.Temperature) {
		t, e := readNumberText(req.Temperature, "temperature")
		if e != nil {
			return e
		}
		hub.Temperature = t
	}
	if !isJSONNull(req.TopP) {
		p, e := readNumberText(req.TopP, "top_p")
		if e != nil {
			return e
		}
		hub.TopP = p
	}
	if !isJSONNull(req.StopSequences) {
		stop, e := anthropicInStop(req.StopSequences)
		if e != nil {
			return e
		}
		hub.Stop = stop
	}
	if !isJSONNull(req.Metadata) {
		user, e := anthropicInUser(req.Metadata)
		if e != nil {
			return e
		}
		hub.User = user
	}
	if !isJSONNull(req.Thinking) {
		return anthropicInThinkingConfig(req.Thinking, in)
	}
	return nil
}

// anthropicInStop reads stop_sequences, an array of strings, leaving out
// empty ones.
func anthropicInStop(raw json.RawMessage) ([]string, *apierr.Error) {
	var list []string
	if raw[0] != '[' || json.Unmarshal(raw, &list) != nil {
		return nil, errInvalidField("stop_sequences", "an array of strings")
	}
	var stop []string
	for i := 0; i < len(list); i++ {
		if list[i] != "" {
			stop = append(stop, list[i])
		}
	}
	return stop, nil
}

// anthropicInUser reads metadata.user_id (a string or null).
func anthropicInUser(raw json.RawMessage) (string, *apierr.Error) {
	var meta anthropicInMetadata
	if raw[0] != '{' || json.Unmarshal(raw, &meta) != nil {
		return "", errInvalidField("metadata", "an object")
	}
	if isJSONNull(meta.UserID) {
		return "", nil
	}
	return readString(meta.UserID, "metadata.user_id")
}

// anthropicInThinkingConfig reads the thinking config: enabled and
// adaptive turn thinking on (reasoning reaches the client as thinking
// blocks); every config but disabled is reported as dropped.
func anthropicInThinkingConfig(raw json.RawMessage, in *AnthropicInbound) *apierr.Error {
	var thinking anthropicInThinking
	if raw[0] != '{' {
		return errInvalidField("thinking", "an object")
	}
	if err := json.Unmarshal(raw, &thinking); err != nil {
		return anthropicInTypeError("thinking", err)
	}
	switch thinking.Type {
	case "disabled":
		return nil
	case "enabled", "adaptive":
		in.Thinking = true
	}
	in.ThinkingDropped = true
	return nil
}

// anthropicInTools maps the custom tools, tool_choice and
// disable_parallel_tool_use.
func anthropicInTools(req *anthropicInRequest, hub *hubRequest) *apierr.Error {
	if !isJSONNull(req.Tools) {
		if req.Tools[0] != '[' {
			return errInvalidField("tools", "an array")
		}
		var tools []anthropicInTool
		if err := json.Unmarshal(req.Tools, &tools); err != nil {
			return anthropicInListError(req.Tools, "tools", anthropicInDecodeTool)
		}
		for i := 0; i < len(tools); i++ {
			tool, keep, e := anthropicInFunctionTool(&tools[i], "tools["+strconv.Itoa(i)+"]")
			if e != nil {
				return e
			}
			if keep {
				hub.Tools = append(hub.Tools, tool)
			}
		}
	}
	if isJSONNull(req.ToolChoice) {
		return nil
	}
	var choice anthropicInToolChoice
	if req.ToolChoice[0] != '{' {
		return errInvalidField("tool_choice", "an object")
	}
	if err := json.Unmarshal(req.ToolChoice, &choice); err != nil {
		return anthropicInTypeError("tool_choice", err)
	}
	mapped, e := anthropicInToolChoiceValue(&choice, hub.Tools)
	if e != nil || len(hub.Tools) == 0 {
		return e
	}
	hub.ToolChoice = mapped
	if choice.DisableParallelToolUse && choice.Type != "none" {
		parallel := false
		hub.ParallelToolCalls = &parallel
	}
	return nil
}

// anthropicInDecodeTool decodes one tool, for anthropicInListError.
func anthropicInDecodeTool(raw json.RawMessage) error {
	var tool anthropicInTool
	return json.Unmarshal(raw, &tool)
}

// anthropicInFunctionTool converts one tool definition; the bool is false for a
// server tool, which the hub backends cannot run.
func anthropicInFunctionTool(t *anthropicInTool, path string) (hubRequestTool, bool, *apierr.Error) {
	if t.Type != "" && t.Type != "custom" {
		return hubRequestTool{}, false, nil
	}
	if t.Name == "" {
		return hubRequestTool{}, false, errInvalidField(path+".name", "a non-empty string")
	}
	schema := t.InputSchema
	if isJSONNull(schema) {
		schema = json.RawMessage(anthropicInDefaultSchema)
	} else if schema[0] != '{' {
		return hubRequestTool{}, false, errInvalidField(path+".input_schema", "an object")
	}
	fn := hubRequestFunction{Name: t.Name, Description: t.Description, Parameters: schema}
	return hubRequestTool{Type: "function", Function: fn}, true, nil
}

// anthropicInToolChoiceValue is the hub tool_choice for choice. A named
// tool must be one of the custom tools.
func anthropicInToolChoiceValue(choice *anthropicInToolChoice, tools []hubRequestTool) (json.RawMessage, *apierr.Error) {
	switch choice.Type {
	case "auto":
		return json.RawMessage(`"auto"`), nil
	case "any":
		return json.RawMessage(`"required"`), nil
	case "none":
		return json.RawMessage(`"none"`), nil
	case "tool":
		found := false
		for i := 0; i < len(tools) && !found; i++ {
			found = tools[i].Function.Name == choice.Name
		}
		if !found {
			return nil, errInvalidField("tool_choice.name", "the name of a custom tool in \"tools\"")
		}
		named := hubRequestNamedChoice{Type: "function", Function: hubRequestNamed{Name: choice.Name}}
		return json.RawMessage(encodeJSON(&named)), nil
	}
	return nil, errInvalidField("tool_choice.type", `one of "auto", "any", "tool" or "none"`)
}

// anthropicInUnsupported is the 400 for a block or source the hub
// request cannot express.
func anthropicInUnsupported(path, what string) *apierr.Error {
	return apierr.New(http.StatusBadRequest, "invalid_request_error", "unsupported_parameter",
		`"`+path+`": `+what+" cannot be sent to this model's provider")
}

// anthropicInListError finds why an array did not decode into a slice of
// structs: the first element that decode refuses, named by its index and
// field. It runs only after the whole decode failed.
func anthropicInListError(raw json.RawMessage, path string, decode func(json.RawMessage) error) *apierr.Error {
	items, ok := parseJSONArray(raw)
	if !ok {
		return errInvalidField(path, "an array")
	}
	for i := 0; i < len(items); i++ {
		if err := decode(items[i]); err != nil {
			return anthropicInTypeError(path+"["+strconv.Itoa(i)+"]", err)
		}
	}
	return errInvalidField(path, "an array of objects")
}

// anthropicInTypeError is the 400 for a decode error under path: the
// field and the type it must have, from a *json.UnmarshalTypeError.
func anthropicInTypeError(path string, err error) *apierr.Error {
	te, ok := err.(*json.UnmarshalTypeError)
	if !ok || te.Type == nil {
		return errInvalidField(path, "valid JSON of the documented shape")
	}
	if te.Field != "" {
		path += "." + te.Field
	}
	want := "a value of type " + te.Type.String()
	switch te.Type.Kind() {
	case reflect.String:
		want = "a string"
	case reflect.Bool:
		want = "a boolean"
	case reflect.Struct, reflect.Pointer, reflect.Map:
		want = "an object"
	case reflect.Slice, reflect.Array:
		want = "an array"
	case reflect.Int, reflect.Int64:
		want = "an integer"
	}
	return errInvalidField(path, want)
}
