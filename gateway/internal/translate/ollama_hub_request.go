package translate

import (
	"encoding/json"
	"net/http"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// Ollama /api/chat and /api/generate requests → hub (OpenAI chat)
// request, for an Ollama client served by any hub backend. This file has
// the entry points and the request-level parameters;
// ollama_hub_messages.go converts the conversation. The answers go back
// through ollama_hub_response.go (whole) and ollama_hub_stream.go
// (NDJSON lines); the shapes are in ollama_hub_wire.go.
//
// Choices this translator makes:
//   - model is kept as sent; "stream" defaults to true (Ollama's
//     default) and is always written to the hub request, true or false
//     (the pipeline adds stream_options itself);
//   - format: "json" → response_format json_object; a JSON schema
//     object → json_schema {name "response", the schema verbatim,
//     strict false}; "" or null → none;
//   - think: true → reasoning_effort "medium"; "low", "medium", "high"
//     → that effort; false or null → none. Reasoning reaches the client
//     (message.thinking, or thinking on a generate line) only when think
//     asked for it;
//   - options: temperature, top_p, frequency_penalty and
//     presence_penalty are forwarded digit for digit; stop (a string or
//     an array of strings, empty ones left out) → stop; seed → seed;
//     num_predict → max_tokens when it is positive (-1, -2, 0 or absent:
//     no cap). Accepted and ignored, as every other option is: top_k,
//     min_p, typical_p, tfs_z, repeat_penalty, repeat_last_n, num_ctx,
//     num_keep, num_batch, num_gpu, main_gpu, num_thread, low_vram,
//     use_mmap, use_mlock, numa, vocab_only, penalize_newline, mirostat,
//     mirostat_tau, mirostat_eta (they tune a local runner the hub
//     backends do not have). An option set to null is absent;
//   - top-level keys accepted and ignored: keep_alive, truncate, shift,
//     logprobs, top_logprobs, and for /api/generate raw, template and
//     context (the gateway is stateless and applies no prompt template:
//     the prompt is sent as a user message, the system as a system
//     message, and no "context" is returned);
//   - tools (already OpenAI's function shape) are passed on verbatim;
//   - refused with a 400 naming the field: a body that is not a JSON
//     object, a missing or empty model, messages missing, not an array
//     or empty, a role other than system, user, assistant and tool, a
//     value of the wrong type; a non-empty "suffix" (fill-in-the-middle)
//     is a 400 unsupported_parameter: no hub backend has it.

// OllamaInbound is what the pipeline needs to know about an Ollama chat
// or generate request to write its answer.
type OllamaInbound struct {
	Stream   bool   // Ollama's "stream", which defaults to true when absent
	Generate bool   // the request was /api/generate (lines carry "response", not "message")
	Think    bool   // "think" asked for reasoning: it is sent as "thinking"
	Model    string // the client's model string, echoed in every answer
}

// ollamaDefaultEffort is the reasoning effort of "think": true.
const ollamaDefaultEffort = "medium"

// HubFromOllamaChat translates an Ollama /api/chat request body into a
// hub (OpenAI chat) request body, and reports what the answer needs. A
// body that is not a valid chat request is a 400 naming the field.
func HubFromOllamaChat(body []byte) ([]byte, OllamaInbound, *apierr.Error) {
	var in OllamaInbound
	fields, e := decodeRequestObject(body)
	if e != nil {
		return nil, in, e
	}
	var hub ollamaHubRequest
	if e := ollamaInParams(fields, &hub, &in); e != nil {
		return nil, in, e
	}
	if e := ollamaInMessages(fields["messages"], &hub); e != nil {
		return nil, in, e
	}
	if e := ollamaInTools(fields["tools"], &hub); e != nil {
		return nil, in, e
	}
	return ollamaInEncode(&hub, in)
}

// HubFromOllamaGenerate translates an Ollama /api/generate request body
// into a hub chat request: system → a system message, prompt and images
// → one user message. A body that is not a valid generate request, or
// a non-empty suffix, is a 400.
func HubFromOllamaGenerate(body []byte) ([]byte, OllamaInbound, *apierr.Error) {
	in := OllamaInbound{Generate: true}
	fields, e := decodeRequestObject(body)
	if e != nil {
		return nil, in, e
	}
	var hub ollamaHubRequest
	if e := ollamaInParams(fields, &hub, &in); e != nil {
		return nil, in, e
	}
	if raw := fields["suffix"]; !isJSONNull(raw) {
		suffix, e := readString(raw, "suffix")
		if e != nil {
			return nil, in, e
		}
		if suffix != "" {
			return nil, in, apierr.New(http.StatusBadRequest, "invalid_request_error", "unsupported_parameter",
				`"suffix" is not supported: fill-in-the-middle cannot be sent to this model's provider`)
		}
	}
	if e := ollamaInPrompt(fields, &hub); e != nil {
		return nil, in, e
	}
	return ollamaInEncode(&hub, in)
}

// ollamaInEncode encodes the hub request.
func ollamaInEncode(hub *ollamaHubRequest, in OllamaInbound) ([]byte, OllamaInbound, *apierr.Error) {
	data := encodeJSON(hub)
	if data == nil {
		return nil, in, errInvalidRequest("request could not be translated for the model's provider")
	}
	return data, in, nil
}

// ollamaInParams maps what chat and generate share: model, stream,
// format, think and options.
func ollamaInParams(fields map[string]json.RawMessage, hub *ollamaHubRequest, in *OllamaInbound) *apierr.Error {
	model, e := ollamaInModel(fields["model"])
	if e != nil {
		return e
	}
	hub.Model = model
	in.Model = model
	in.Stream = true
	if raw := fields["stream"]; !isJSONNull(raw) {
		stream, e := readBool(raw, "stream")
		if e != nil {
			return e
		}
		in.Stream = stream
	}
	hub.Stream = in.Stream
	if e := ollamaInFormat(fields["format"], hub); e != nil {
		return e
	}
	if e := ollamaInThink(fields["think"], hub, in); e != nil {
		return e
	}
	return ollamaInOptions(fields["options"], hub)
}

// ollamaInModel reads the required model string.
func ollamaInModel(raw json.RawMessage) (string, *apierr.Error) {
	if isJSONNull(raw) {
		return "", errInvalidRequest(`"model" is required`)
	}
	model, e := readString(raw, "model")
	if e != nil || model == "" {
		return "", errInvalidField("model", "a non-empty string")
	}
	return model, nil
}

// ollamaInFormat maps format to response_format.
func ollamaInFormat(raw json.RawMessage, hub *ollamaHubRequest) *apierr.Error {
	if isJSONNull(raw) || string(raw) == `""` {
		return nil
	}
	switch raw[0] {
	case '"':
		if string(raw) == `"json"` {
			hub.ResponseFormat = &ollamaHubResponseFormat{Type: "json_object"}
			return nil
		}
	case '{':
		if _, ok := parseJSONObject(raw); ok {
			schema := &ollamaHubJSONSchema{Name: "response", Schema: raw, Strict: false}
			hub.ResponseFormat = &ollamaHubResponseFormat{Type: "json_schema", JSONSchema: schema}
			return nil
		}
	}
	return errInvalidField("format", `"json" or a JSON schema object`)
}

// ollamaInThink maps think to reasoning_effort.
func ollamaInThink(raw json.RawMessage, hub *ollamaHubRequest, in *OllamaInbound) *apierr.Error {
	switch string(raw) {
	case "", "null", "false":
		return nil
	case "true":
		hub.ReasoningEffort = ollamaDefaultEffort
	case `"low"`, `"medium"`, `"high"`:
		hub.ReasoningEffort = string(raw[1 : len(raw)-1])
	default:
		return errInvalidField("think", `a boolean or one of "low", "medium", "high"`)
	}
	in.Think = true
	return nil
}

// ollamaInOptions maps the options the hub has a field for (see the file
// comment); the others are ignored.
func ollamaInOptions(raw json.RawMessage, hub *ollamaHubRequest) *apierr.Error {
	if isJSONNull(raw) {
		return nil
	}
	opts, e := readObject(raw, "options")
	if e != nil {
		return e
	}
	if hub.Temperature, e = ollamaInNumber(opts, "temperature"); e != nil {
		return e
	}
	if hub.TopP, e = ollamaInNumber(opts, "top_p"); e != nil {
		return e
	}
	if hub.FrequencyPenalty, e = ollamaInNumber(opts, "frequency_penalty"); e != nil {
		return e
	}
	if hub.PresencePenalty, e = ollamaInNumber(opts, "presence_penalty"); e != nil {
		return e
	}
	if v := opts["seed"]; !isJSONNull(v) {
		seed, e := readInteger(v, "options.seed")
		if e != nil {
			return e
		}
		hub.Seed = &seed
	}
	if v := opts["num_predict"]; !isJSONNull(v) {
		n, e := readInteger(v, "options.num_predict")
		if e != nil {
			return e
		}
		if n > 0 {
			hub.MaxTokens = n
		}
	}
	if v := opts["stop"]; !isJSONNull(v) {
		stop, e := ollamaInStop(v)
		if e != nil {
			return e
		}
		hub.Stop = stop
	}
	return nil
}

// ollamaInNumber is the exact text of a numeric option, nil when it is
// absent or null.
func ollamaInNumber(opts map[string]json.RawMessage, name string) (json.RawMessage, *apierr.Error) {
	v := opts[name]
	if isJSONNull(v) {
		return nil, nil
	}
	return readNumberText(v, "options."+name)
}

// ollamaInStop reads options.stop, a string or an array of strings,
// leaving out empty strings.
func ollamaInStop(raw json.RawMessage) ([]string, *apierr.Error) {
	if raw[0] == '"' {
		s, e := readString(raw, "options.stop")
		if e != nil || s == "" {
			return nil, e
		}
		return []string{s}, nil
	}
	var list []string
	if raw[0] != '[' || json.Unmarshal(raw, &list) != nil {
		return nil, errInvalidField("options.stop", "a string or an array of strings")
	}
	var stop []string
	for i := 0; i < len(list); i++ {
		if list[i] != "" {
			stop = append(stop, list[i])
		}
	}
	return stop, nil
}

// ollamaInTools passes the tools on: an array of objects (an empty one
// is left out).
func ollamaInTools(raw json.RawMessage, hub *ollamaHubRequest) *apierr.Error {
	if isJSONNull(raw) {
		return nil
	}
	tools, ok := parseJSONArray(raw)
	if !ok {
		return errInvalidField("tools", "an array")
	}
	for i := 0; i < len(tools); i++ {
		if _, ok := parseJSONObject(tools[i]); !ok {
			return errInvalidField(ollamaIndexPath("tools", i), "an object")
		}
	}
	if len(tools) > 0 {
		hub.Tools = raw
	}
	return nil
}
