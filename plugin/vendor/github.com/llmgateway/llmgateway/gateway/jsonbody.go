package gateway

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
	"github.com/llmgateway/llmgateway/gateway/internal/jsonscan"
)

// jsonRequest is a client's JSON request body, kept as the exact bytes
// it arrived as, plus the location of its top-level "model" value so the
// model can be rewritten without touching any other byte (an unknown
// field or a 20-digit integer reaches the upstream exactly as sent).
type jsonRequest struct {
	raw        []byte
	model      string
	modelStart int // byte span of the model value (including quotes)
	modelEnd   int
	// stream is true when the top-level "stream" is the literal true.
	stream bool
	// includeUsage is stream_options.include_usage; hasStreamOptions
	// notes a top-level "stream_options" key, whatever its value, and
	// streamOptionsStart/End is the byte span of that value (located by
	// parseJSONRequestExact only; -1 otherwise).
	includeUsage bool
	// hubUsage: a hub request made from another inbound API's (viaHub),
	// whose conversion always wants the stream's usage chunk from the
	// backend's translator, whatever the client asked for.
	hubUsage           bool
	hasStreamOptions   bool
	streamOptionsStart int
	streamOptionsEnd   int
	// hasMaxTokens notes a top-level "max_tokens"; maxTokensKey is the
	// byte span of that key (with its quotes), or -1 when not located
	// (the fast path leaves it to forOpenAI, the one reader);
	// hasMaxCompletionTokens notes the newer field.
	hasMaxTokens           bool
	maxTokensKeyStart      int
	maxTokensKeyEnd        int
	hasMaxCompletionTokens bool
	// maxOutputTokens is the client's output-token cap
	// (max_completion_tokens, else max_tokens); 0 when it set none.
	// maxTokens is max_tokens' own cap (the Anthropic shape has no
	// other).
	maxOutputTokens int64
	maxTokens       int64
	// fields are raw's top-level members (as a decode into a map would
	// read them; nil when the reader did not collect them), for a
	// translating backend not to decode raw again; dropped with raw, or
	// once the call stage is over.
	fields map[string]json.RawMessage
}

// parseTokenCap reads a token-count value: a positive JSON integer —
// also one written with a fraction or an exponent (1e3, 2.0e2), as the
// translators read it — or 0 for anything else (null, a string, a
// fraction, a negative number, more than 1e15).
func parseTokenCap(value []byte) int64 {
	n, err := strconv.ParseInt(string(value), 10, 64)
	if err == nil {
		if n < 0 {
			return 0
		}
		return n
	}
	if len(value) == 0 || value[0] < '0' || value[0] > '9' {
		return 0
	}
	f, err := strconv.ParseFloat(string(value), 64)
	if err != nil || f > 1e15 || f != math.Trunc(f) {
		return 0
	}
	return int64(f)
}

// parseJSONRequest reads a JSON request body. Compiled, that is
// parseJSONRequestExact: one validating pass (json.Valid) and a hop over
// the top level, about half the cost of a decode, which scans the body
// twice (measured by BenchmarkParseJSONRequest). Under Yaegi the hop is
// our own loop and a decode is compiled standard library end to end, so
// the decode is cheaper there: parseJSONRequestDecoded.
func parseJSONRequest(body []byte) (*jsonRequest, *apiError) {
	if !jsonscan.Interpreted {
		return parseJSONRequestExact(body)
	}
	return parseJSONRequestDecoded(body)
}

// parseJSONRequestDecoded is parseJSONRequest under Yaegi: the clean case
// — one literal "model" key in the whole body and no \u00XX escape
// anywhere, so no escaped or case-variant spelling of it can hide — is
// read by json.Unmarshal into a map of raw top-level values (compiled
// standard library end to end, whatever the body's size); anything else
// goes to parseJSONRequestExact, which gives the same answer for the
// clean case and the precise error otherwise.
func parseJSONRequestDecoded(body []byte) (*jsonRequest, *apiError) {
	if bytes.Count(body, quotedModelKey) != 1 || bytes.Contains(body, latinEscape) {
		return parseJSONRequestExact(body)
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return parseJSONRequestExact(body)
	}
	for k := range top {
		if k != "model" && len(k) == 5 && strings.EqualFold(k, "model") {
			return parseJSONRequestExact(body)
		}
	}
	raw := top["model"]
	if len(raw) < 3 || raw[0] != '"' {
		return parseJSONRequestExact(body) // absent, empty, or not a string
	}
	var model string
	if json.Unmarshal(raw, &model) != nil || model == "" {
		return parseJSONRequestExact(body)
	}
	// The single literal "model" is the top-level key (the map holds it
	// and no other spelling can exist); its value follows the colon.
	start := jsonscan.SkipSpace(body, bytes.Index(body, quotedModelKey)+len(quotedModelKey))
	start = jsonscan.SkipSpace(body, start+1)
	if start+len(raw) > len(body) || !bytes.Equal(body[start:start+len(raw)], raw) {
		return parseJSONRequestExact(body)
	}
	req := &jsonRequest{raw: body, model: model, modelStart: start, modelEnd: start + len(raw), maxTokensKeyStart: -1, streamOptionsStart: -1, fields: top}
	req.stream = string(top["stream"]) == "true"
	if opts, ok := top["stream_options"]; ok {
		req.hasStreamOptions = true
		req.includeUsage = includeUsage(opts)
	}
	if v, ok := top["max_completion_tokens"]; ok {
		req.hasMaxCompletionTokens = true
		req.maxOutputTokens = parseTokenCap(v)
	}
	if v, ok := top["max_tokens"]; ok {
		req.hasMaxTokens = true
		req.maxTokens = parseTokenCap(v)
		if req.maxOutputTokens == 0 {
			req.maxOutputTokens = req.maxTokens
		}
	}
	return req, nil
}

// includeUsage reads stream_options.include_usage.
func includeUsage(opts []byte) bool {
	var o struct {
		IncludeUsage bool `json:"include_usage"`
	}
	_ = json.Unmarshal(opts, &o)
	return o.IncludeUsage
}

var (
	quotedModelKey = []byte(`"model"`)
	// latinEscape starts a \u escape of an ASCII or Latin-1 character:
	// the only way to spell a "model" key that bytes.Count cannot see.
	latinEscape = []byte(`\u00`)
)

// parseJSONRequestExact validates that body is one JSON object and locates
// its top-level "model" string. A duplicate "model" key, or a case
// variant such as "Model", is refused: the gateway would authorize one
// value while an upstream (Go's encoding/json matches keys
// case-insensitively and keeps the last) might read another.
//
// Validation is json.Valid (one pass in compiled code); locating the
// top-level keys then hops between structural characters with
// bytes.IndexAny, so even under Yaegi the interpreted loop runs per
// string or bracket, not per byte. Its fields are the top-level values
// as sub-slices of body (capped, so an append cannot write into body),
// the last of duplicate keys winning, as in a map decode.
func parseJSONRequestExact(body []byte) (*jsonRequest, *apiError) {
	if !json.Valid(body) {
		return nil, apierr.BadRequest("invalid_json", "request body is not valid JSON")
	}
	i := jsonscan.SkipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return nil, apierr.BadRequest("invalid_json", "request body must be a JSON object")
	}
	req := &jsonRequest{raw: body, modelStart: -1, maxTokensKeyStart: -1, streamOptionsStart: -1, fields: map[string]json.RawMessage{}}
	var completionCap int64
	i = jsonscan.SkipSpace(body, i+1)
	for i < len(body) && body[i] != '}' {
		keyEnd := jsonscan.EndOfString(body, i)
		key := jsonscan.DecodeKey(body[i : keyEnd+1])
		valueStart := jsonscan.SkipSpace(body, jsonscan.SkipSpace(body, keyEnd+1)+1) // past ':'
		valueEnd := jsonscan.EndOfValue(body, valueStart)
		req.fields[key] = body[valueStart:valueEnd:valueEnd]
		switch key {
		case "stream":
			req.stream = string(body[valueStart:valueEnd]) == "true"
		case "stream_options":
			var opts struct {
				IncludeUsage bool `json:"include_usage"`
			}
			_ = json.Unmarshal(body[valueStart:valueEnd], &opts)
			req.includeUsage = opts.IncludeUsage
			req.hasStreamOptions = true
			req.streamOptionsStart = valueStart
			req.streamOptionsEnd = valueEnd
		case "max_tokens":
			// The last of duplicate keys counts, as in a map decode.
			req.hasMaxTokens = true
			req.maxTokensKeyStart, req.maxTokensKeyEnd = i, keyEnd+1
			req.maxTokens = parseTokenCap(body[valueStart:valueEnd])
		case "max_completion_tokens":
			req.hasMaxCompletionTokens = true
			completionCap = parseTokenCap(body[valueStart:valueEnd])
		default:
			if strings.EqualFold(key, "model") {
				if e := req.setModel(key, valueStart, valueEnd); e != nil {
					return nil, e
				}
			}
		}
		i = jsonscan.SkipSpace(body, valueEnd)
		if i < len(body) && body[i] == ',' {
			i = jsonscan.SkipSpace(body, i+1)
		}
	}
	if req.modelStart < 0 || req.model == "" {
		return nil, apierr.BadRequest("missing_model", `request body needs a non-empty "model" field`)
	}
	// The newer field wins over max_tokens (forOpenAI drops the legacy
	// one when both are present).
	req.maxOutputTokens = completionCap
	if req.maxOutputTokens == 0 {
		req.maxOutputTokens = req.maxTokens
	}
	return req, nil
}

func (j *jsonRequest) setModel(key string, start, end int) *apiError {
	if key != "model" {
		return apierr.BadRequest("invalid_request", `request body has a "`+key+`" field; the model field is spelled "model"`)
	}
	if j.modelStart >= 0 {
		return apierr.BadRequest("invalid_request", `request body has more than one "model" field`)
	}
	var model string
	if err := json.Unmarshal(j.raw[start:end], &model); err != nil {
		return apierr.BadRequest("invalid_model", `"model" must be a string`)
	}
	j.model, j.modelStart, j.modelEnd = model, start, end
	return nil
}

// withModel returns the body with the model value replaced by model,
// every other byte unchanged. When the model is unchanged the original
// slice is returned.
func (j *jsonRequest) withModel(model string) []byte {
	if model == j.model {
		return j.raw
	}
	quoted, _ := json.Marshal(model)
	out := make([]byte, 0, len(j.raw)-(j.modelEnd-j.modelStart)+len(quoted))
	out = append(out, j.raw[:j.modelStart]...)
	out = append(out, quoted...)
	out = append(out, j.raw[j.modelEnd:]...)
	return out
}

// forOpenAI returns the body for an openai-type upstream: the model
// rewritten and, for a reasoning model (o1/o3/o4/gpt-5 families), the
// "max_tokens" key renamed to "max_completion_tokens" (the only field
// those models accept). Every other byte is unchanged.
func (j *jsonRequest) forOpenAI(model string) []byte {
	if !j.hasMaxTokens || !isReasoningModel(model) {
		return j.withModel(model)
	}
	return renameMaxTokens(j, model)
}

// renameMaxTokens is forOpenAI for a reasoning model given max_tokens.
func renameMaxTokens(j *jsonRequest, model string) []byte {
	if j.maxTokensKeyStart < 0 {
		exact, e := parseJSONRequestExact(j.raw)
		if e != nil || exact.maxTokensKeyStart < 0 {
			return j.withModel(model)
		}
		j.maxTokensKeyStart, j.maxTokensKeyEnd = exact.maxTokensKeyStart, exact.maxTokensKeyEnd
	}
	if j.hasMaxCompletionTokens {
		// Both present: the newer field wins; drop the legacy one.
		var m map[string]json.RawMessage
		if err := json.Unmarshal(j.withModel(model), &m); err != nil {
			return j.withModel(model)
		}
		delete(m, "max_tokens")
		out, err := json.Marshal(m)
		if err != nil {
			return j.withModel(model)
		}
		return out
	}
	quoted, _ := json.Marshal(model)
	key := []byte(`"max_completion_tokens"`)
	out := make([]byte, 0, len(j.raw)+len(quoted)+len(key))
	if j.maxTokensKeyStart < j.modelStart {
		out = append(out, j.raw[:j.maxTokensKeyStart]...)
		out = append(out, key...)
		out = append(out, j.raw[j.maxTokensKeyEnd:j.modelStart]...)
		out = append(out, quoted...)
		return append(out, j.raw[j.modelEnd:]...)
	}
	out = append(out, j.raw[:j.modelStart]...)
	out = append(out, quoted...)
	out = append(out, j.raw[j.modelEnd:j.maxTokensKeyStart]...)
	out = append(out, key...)
	return append(out, j.raw[j.maxTokensKeyEnd:]...)
}

// streamUsageOption is what a streaming request without stream_options
// gets, before its object's closing brace.
var streamUsageOption = []byte(`,"stream_options":{"include_usage":true}`)

// withStreamUsage returns body, j's body as prepared for an openai-type
// upstream (forOpenAI), asking for usage in its stream
// (stream_options.include_usage: true). Without a stream_options key the
// member is inserted before the final '}' and every other byte is kept;
// an existing stream_options is re-encoded with include_usage set
// (setIncludeUsage).
func withStreamUsage(j *jsonRequest, body []byte) []byte {
	if j.hasStreamOptions {
		return setIncludeUsage(body)
	}
	end := bytes.LastIndexByte(body, '}')
	if end < 0 {
		return body
	}
	out := make([]byte, 0, len(body)+len(streamUsageOption))
	out = append(out, body[:end]...)
	out = append(out, streamUsageOption...)
	return append(out, body[end:]...)
}

// setIncludeUsage is withStreamUsage for a body with a stream_options
// key: only that value is rewritten, re-encoded as an object (its keys
// sorted) with include_usage true; a value that is not an object becomes
// {"include_usage":true}.
func setIncludeUsage(body []byte) []byte {
	exact, e := parseJSONRequestExact(body)
	if e != nil || exact.streamOptionsStart < 0 {
		return body
	}
	var opts map[string]json.RawMessage
	if json.Unmarshal(body[exact.streamOptionsStart:exact.streamOptionsEnd], &opts) != nil || opts == nil {
		opts = map[string]json.RawMessage{}
	}
	opts["include_usage"] = json.RawMessage("true")
	enc, err := json.Marshal(opts)
	if err != nil {
		return body
	}
	out := make([]byte, 0, len(body)+len(enc))
	out = append(out, body[:exact.streamOptionsStart]...)
	out = append(out, enc...)
	return append(out, body[exact.streamOptionsEnd:]...)
}

// isReasoningModel names OpenAI's reasoning families, which take
// max_completion_tokens instead of max_tokens. A vendor prefix
// ("openai/o3") is ignored.
func isReasoningModel(model string) bool {
	if i := strings.LastIndexByte(model, '/'); i >= 0 {
		model = model[i+1:]
	}
	model = strings.ToLower(model)
	families := []string{"o1", "o3", "o4", "gpt-5"}
	for i := 0; i < len(families); i++ {
		f := families[i]
		if model == f || strings.HasPrefix(model, f+"-") || strings.HasPrefix(model, f+".") {
			return true
		}
	}
	return false
}
