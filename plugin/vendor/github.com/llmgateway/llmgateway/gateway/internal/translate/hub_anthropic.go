package translate

import (
	"encoding/json"
	"strconv"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// Hub (OpenAI chat completions) request → Anthropic Messages request.
// This file has the entry point and the request-level parameters;
// hub_anthropic_messages.go converts the conversation and
// hub_anthropic_tools.go the tools; hub_anthropic_wire.go holds the
// Anthropic shapes. Answers come back through hub_anthropic_response.go
// (whole) and hub_anthropic_stream.go (streamed).
//
// Choices this translator makes:
//   - system/developer messages, wherever they appear, are hoisted in
//     order into the string "system", one text part per segment, joined
//     with a blank line;
//   - after conversion, neighbouring turns of the same role are merged,
//     and in every user turn the tool_result blocks come first;
//   - empty or whitespace-only text is dropped (Anthropic rejects such
//     text blocks), and so is a message left with no blocks at all;
//   - reasoning_effort becomes thinking.budget_tokens (see
//     anthropicThinkingBudgets);
//   - dropped without a word, because they do not change what the model
//     generates: name, stream_options (the pipeline reads it), store,
//     metadata (OpenAI's stored-completion tags), service_tier,
//     prompt_cache_key, prediction, verbosity, image detail, tool
//     "strict", and any field OpenAI itself does not define;
//   - refused with a 400 naming the parameter, because Anthropic cannot
//     do what they ask: n > 1, non-empty logit_bias, logprobs,
//     top_logprobs, non-zero presence/frequency penalties, seed,
//     response_format other than text, audio output (audio, modalities),
//     input_audio parts, file parts by file_id, web_search_options,
//     allowed_tools tool_choice, and the legacy functions/function_call
//     fields and "function" role (use tools).

// anthropicDefaultMaxTokens is the max_tokens sent when the client set
// neither max_completion_tokens nor max_tokens: Anthropic requires one.
const anthropicDefaultMaxTokens = 4096

// anthropicMinThinkingBudget is Anthropic's smallest thinking budget.
const anthropicMinThinkingBudget = 1024

// anthropicThinkingBudgets maps reasoning_effort to a thinking budget in
// tokens; 0 means thinking stays off.
var anthropicThinkingBudgets = map[string]int64{
	"none":    0,
	"minimal": 0,
	"low":     1024,
	"medium":  4096,
	"high":    16384,
	"xhigh":   32768,
	"max":     32768,
}

// AnthropicChatRequest translates an OpenAI chat completions request
// body into an Anthropic Messages request for upstreamModel; the bool
// reports whether the client asked for a stream. Anything malformed, or
// meaningful but inexpressible on Anthropic, is a 400 naming the field.
func AnthropicChatRequest(body []byte, upstreamModel string) ([]byte, bool, *apierr.Error) {
	fields, fe := decodeRequestObject(body)
	if fe != nil {
		return nil, false, fe
	}
	return AnthropicChatRequestFields(fields, upstreamModel)
}

// AnthropicChatRequestFields is AnthropicChatRequest for a body already
// decoded into its top-level members (json.Unmarshal into a
// map[string]json.RawMessage, as the pipeline's admission reads it),
// which it only reads: the body is not decoded a second time.
func AnthropicChatRequestFields(fields map[string]json.RawMessage, upstreamModel string) ([]byte, bool, *apierr.Error) {
	return anthropicChatRequest(fields, upstreamModel, false)
}

// anthropicChatRequest is AnthropicChatRequestFields; general keeps the
// conversation off the fast path (the tests compare the two).
func anthropicChatRequest(fields map[string]json.RawMessage, upstreamModel string, general bool) ([]byte, bool, *apierr.Error) {
	b := &anthropicRequestBuilder{fields: fields, general: general}
	b.req.Model = upstreamModel
	if e := b.rejectUnsupported(); e != nil {
		return nil, false, e
	}
	if e := b.messages(); e != nil {
		return nil, false, e
	}
	if e := b.sampling(); e != nil {
		return nil, false, e
	}
	if e := b.tools(); e != nil {
		return nil, false, e
	}
	data := encodeJSON(&b.req)
	if data != nil && b.fast != nil {
		data = spliceFastConversation(data, *b.fast)
	}
	if data == nil {
		return nil, false, errInvalidRequest("request could not be translated for an anthropic-type provider")
	}
	return data, b.req.Stream, nil
}

// anthropicRequestBuilder holds one translation in progress: the
// client's top-level fields, the request being built and the system
// text collected so far.
type anthropicRequestBuilder struct {
	fields map[string]json.RawMessage
	req    anthropicWireRequest
	system []string
	// fast is the conversation read on the fast path
	// (hub_anthropic_fast.go), spliced into the encoded request; general
	// (tests only) keeps every request on the general path.
	fast    *anthropicFastConversation
	general bool
}

// anthropicUnsupported is the 400 for a meaningful parameter Anthropic
// cannot express.
func anthropicUnsupported(param, detail string) *apierr.Error {
	msg := "parameter \"" + param + "\""
	if detail != "" {
		msg += " (" + detail + ")"
	}
	return apierr.BadRequest("unsupported_parameter", msg+" is not supported by anthropic-type providers")
}

// field returns a top-level field that is present and not null.
func (b *anthropicRequestBuilder) field(name string) (json.RawMessage, bool) {
	raw, ok := b.fields[name]
	if !ok || isJSONNull(raw) {
		return nil, false
	}
	return raw, true
}

// anthropicInteger reads an integer count (n, max_tokens) within ±1e15;
// larger values are refused rather than sent on.
func anthropicInteger(raw json.RawMessage, path string) (int64, *apierr.Error) {
	n, e := readInteger(raw, path)
	if e != nil || n > 1e15 || n < -1e15 {
		return 0, errInvalidField(path, "an integer")
	}
	return n, nil
}

// rejectUnsupported refuses the OpenAI parameters Anthropic has no
// equivalent for, when they are set to anything but their no-op value.
// The checks run in a fixed order, so the first such parameter is the
// one reported.
func (b *anthropicRequestBuilder) rejectUnsupported() *apierr.Error {
	if e := b.rejectChoiceCount(); e != nil {
		return e
	}
	if e := b.rejectLogprobs(); e != nil {
		return e
	}
	if e := b.rejectOutputFormat(); e != nil {
		return e
	}
	return b.rejectPresent()
}

// rejectChoiceCount refuses n > 1: Anthropic generates one choice.
func (b *anthropicRequestBuilder) rejectChoiceCount() *apierr.Error {
	raw, ok := b.field("n")
	if !ok {
		return nil
	}
	n, e := anthropicInteger(raw, "n")
	if e != nil {
		return e
	}
	if n > 1 {
		return anthropicUnsupported("n", "value "+strconv.FormatInt(n, 10)+"; only one choice can be generated")
	}
	if n < 1 {
		return errInvalidField("n", "at least 1")
	}
	return nil
}

// rejectLogprobs refuses token-level controls and output: a non-empty
// logit_bias, logprobs, and non-zero top_logprobs or penalties.
func (b *anthropicRequestBuilder) rejectLogprobs() *apierr.Error {
	if raw, ok := b.field("logit_bias"); ok {
		m, e := readObject(raw, "logit_bias")
		if e != nil {
			return e
		}
		if len(m) > 0 {
			return anthropicUnsupported("logit_bias", "")
		}
	}
	if raw, ok := b.field("logprobs"); ok {
		v, e := readBool(raw, "logprobs")
		if e != nil {
			return e
		}
		if v {
			return anthropicUnsupported("logprobs", "")
		}
	}
	numeric := []string{"top_logprobs", "presence_penalty", "frequency_penalty"}
	for i := 0; i < len(numeric); i++ {
		if raw, ok := b.field(numeric[i]); ok {
			v, e := readFloat(raw, numeric[i])
			if e != nil {
				return e
			}
			if v != 0 {
				return anthropicUnsupported(numeric[i], "non-zero value")
			}
		}
	}
	return nil
}

// rejectOutputFormat refuses a response_format other than text and
// output modalities other than text.
func (b *anthropicRequestBuilder) rejectOutputFormat() *apierr.Error {
	if raw, ok := b.field("response_format"); ok {
		m, e := readObject(raw, "response_format")
		if e != nil {
			return e
		}
		kind, e := readString(m["type"], "response_format.type")
		if e != nil {
			return e
		}
		if kind != "text" {
			return anthropicUnsupported("response_format", "type \""+kind+"\"")
		}
	}
	raw, ok := b.field("modalities")
	if !ok {
		return nil
	}
	list, e := readArray(raw, "modalities")
	if e != nil {
		return e
	}
	for i := 0; i < len(list); i++ {
		s, e := readString(list[i], "modalities["+strconv.Itoa(i)+"]")
		if e != nil {
			return e
		}
		if s != "text" {
			return anthropicUnsupported("modalities", "output modality \""+s+"\"")
		}
	}
	return nil
}

// rejectPresent refuses the parameters Anthropic has nothing for,
// whatever their value.
func (b *anthropicRequestBuilder) rejectPresent() *apierr.Error {
	refused := []string{"seed", "audio", "web_search_options", "functions", "function_call"}
	for i := 0; i < len(refused); i++ {
		if _, ok := b.field(refused[i]); ok {
			detail := ""
			if refused[i] == "functions" || refused[i] == "function_call" {
				detail = "deprecated; use tools and tool_choice"
			}
			return anthropicUnsupported(refused[i], detail)
		}
	}
	return nil
}

// sampling maps max tokens, temperature, top_p, stop, user, stream and
// reasoning_effort.
func (b *anthropicRequestBuilder) sampling() *apierr.Error {
	b.req.MaxTokens = anthropicDefaultMaxTokens
	explicitMax := false
	names := []string{"max_completion_tokens", "max_tokens"}
	for i := 0; i < len(names); i++ {
		if raw, ok := b.field(names[i]); ok {
			n, e := anthropicInteger(raw, names[i])
			if e != nil {
				return e
			}
			if n < 1 {
				return errInvalidField(names[i], "at least 1")
			}
			b.req.MaxTokens = n
			explicitMax = true
			break
		}
	}
	if raw, ok := b.field("temperature"); ok {
		t, e := readFloat(raw, "temperature")
		if e != nil {
			return e
		}
		if t < 0 {
			t = 0
		}
		if t > 1 {
			t = 1
		}
		b.req.Temperature = &t
	}
	if raw, ok := b.field("top_p"); ok {
		p, e := readFloat(raw, "top_p")
		if e != nil {
			return e
		}
		b.req.TopP = &p
	}
	if raw, ok := b.field("stop"); ok {
		stop, e := readStopSequences(raw, true)
		if e != nil {
			return e
		}
		b.req.StopSequences = stop
	}
	user := ""
	userFields := []string{"user", "safety_identifier"}
	for i := 0; i < len(userFields) && user == ""; i++ {
		if raw, ok := b.field(userFields[i]); ok {
			s, e := readString(raw, userFields[i])
			if e != nil {
				return e
			}
			user = s
		}
	}
	if user != "" {
		b.req.Metadata = &anthropicWireMetadata{UserID: user}
	}
	if raw, ok := b.field("stream"); ok {
		v, e := readBool(raw, "stream")
		if e != nil {
			return e
		}
		b.req.Stream = v
	}
	return b.reasoning(explicitMax)
}

// reasoning maps reasoning_effort to an extended-thinking budget, which
// Anthropic counts inside max_tokens and wants below it. Without an
// explicit cap, the cap grows by the budget so the answer keeps the
// default room.
func (b *anthropicRequestBuilder) reasoning(explicitMax bool) *apierr.Error {
	raw, ok := b.field("reasoning_effort")
	if !ok {
		return nil
	}
	effort, e := readString(raw, "reasoning_effort")
	if e != nil {
		return e
	}
	budget, known := anthropicThinkingBudgets[effort]
	if !known {
		return errInvalidField("reasoning_effort", "one of none, minimal, low, medium, high, xhigh")
	}
	if budget == 0 {
		return nil
	}
	if !explicitMax {
		b.req.MaxTokens += budget
	} else if budget >= b.req.MaxTokens {
		budget = b.req.MaxTokens - 1
	}
	if budget < anthropicMinThinkingBudget {
		return anthropicUnsupported("reasoning_effort", "needs max_completion_tokens above "+
			strconv.Itoa(anthropicMinThinkingBudget))
	}
	b.req.Thinking = &anthropicWireThinking{Type: "enabled", BudgetTokens: budget}
	return nil
}
