package gateway

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/llmgateway/llmgateway/gateway/internal/translate"
)

// jsonRoutes are the route table's rows whose body is a JSON object:
// FuzzInboundRequest picks one per input.
func jsonRoutes() []*route {
	var out []*route
	for i := 0; i < len(routeTable); i++ {
		if routeTable[i].body == bodyJSON {
			out = append(out, routeTable[i])
		}
	}
	return out
}

var inboundSeeds = []string{
	`{"model":"m1","messages":[{"role":"user","content":"hi"}],"max_tokens":64,"stream":true}`,
	`{"model":"m1","messages":[{"role":"user","content":"hi"}],"max_completion_tokens":32,"max_tokens":64}`,
	`{"model":"claude","max_tokens":1024,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"stream":true}`,
	`{"model":"claude","max_tokens":1e3,"messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"gpt","input":"hi","max_output_tokens":128,"stream":true}`,
	`{"model":"gpt","input":[{"role":"user","content":[{"type":"input_text","text":"hi"}]}],"max_output_tokens":2.0e2}`,
	`{"model":"llama","messages":[{"role":"user","content":"hi"}],"options":{"num_predict":100}}`,
	`{"model":"llama","prompt":"hi","stream":false,"options":{"num_predict":-1}}`,
	`{"model":"llama","prompt":"hi","Stream":false}`,
	`{"model":"e","input":["a","b"]}`,
	`{"model":"e","prompt":"hi"}`,
	`{"model":"tts","input":"hi","voice":"alloy"}`,
	`{"model":"dall-e","prompt":"a cat","n":1}`,
	`{"model":"m","max_tokens":5,"max_tokens":7}`,
	`{"model":"m","max_tokens":"7"}`,
	`{"model":"m","Model":"n"}`,
	`{"model":""}`,
	`[]`,
	``,
}

// FuzzInboundRequest drives every JSON route's request reader (chat,
// embeddings, images, speech, messages, count_tokens, responses and the
// Ollama routes). A refusal is parseJSONRequest's own 400; an accepted
// body is read as parseJSONRequest reads it (the model and its span, the
// bytes kept), with the route's stream rule; and the output cap the
// reservation uses is never below the cap the route's translator hands
// the backend (a client could otherwise generate more than it reserved).
func FuzzInboundRequest(f *testing.F) {
	routes := jsonRoutes()
	for i := 0; i < len(inboundSeeds); i++ {
		for j := 0; j < len(routes); j++ {
			f.Add([]byte(inboundSeeds[i]), uint8(j))
		}
	}
	f.Fuzz(func(t *testing.T, body []byte, which uint8) {
		rt := routes[int(which)%len(routes)]
		req, e := rt.format.readRequest(body)
		base, be := parseJSONRequest(body)
		if e != nil {
			if be == nil || e.Status != 400 || e.Code != be.Code || e.Message != be.Message {
				t.Fatalf("%s refused with %+v, parseJSONRequest with %+v: %q", rt.path, e, be, body)
			}
			return
		}
		if be != nil {
			t.Fatalf("%s accepted what parseJSONRequest refuses (%s): %q", rt.path, be.Code, body)
		}
		if req.model != base.model || req.modelStart != base.modelStart || req.modelEnd != base.modelEnd || !bytes.Equal(req.raw, body) {
			t.Fatalf("%s read model %q at %d..%d, parseJSONRequest %q at %d..%d", rt.path, req.model, req.modelStart, req.modelEnd,
				base.model, base.modelStart, base.modelEnd)
		}
		if want := inboundStream(rt, body); req.stream != want {
			t.Fatalf("%s read stream %v, want %v: %q", rt.path, req.stream, want, body)
		}
		if req.maxOutputTokens < 0 {
			t.Fatalf("%s read a negative output cap %d", rt.path, req.maxOutputTokens)
		}
		sent, ok := translated(rt, body)
		if !ok {
			return
		}
		if sent.cap < 0 || sent.stream != req.stream {
			t.Fatalf("%s reads stream %v, its translator %v (hub agrees: %v): %q", rt.path, req.stream, sent.stream, sent.cap >= 0, body)
		}
		if !rt.priced || rt.noOutput {
			return
		}
		if sent.cap > 0 && req.maxOutputTokens < sent.cap {
			t.Fatalf("%s reserves an output cap of %d but the backend is sent %d: %q", rt.path, req.maxOutputTokens, sent.cap, body)
		}
		if sent.cap == 0 && req.maxOutputTokens > 0 {
			t.Fatalf("%s reserves an output cap of %d but the backend is sent none: %q", rt.path, req.maxOutputTokens, body)
		}
	})
}

// inboundStream is the stream flag a route's format reads, keys matched
// exactly: Ollama's "stream" is true unless false; every other format
// streams on a top-level literal true.
func inboundStream(rt *route, body []byte) bool {
	var top map[string]json.RawMessage
	_ = json.Unmarshal(body, &top)
	if rt.format == ollamaFormat {
		return string(top["stream"]) != "false"
	}
	return string(top["stream"]) == "true"
}

// sentRequest is what the route's translator sends on: the output cap
// (0: none) and whether it streams.
type sentRequest struct {
	cap    int64
	stream bool
}

// translated is what the route's translator sends on, false when it
// refuses the body (then nothing is sent) or the route translates
// nothing. The chat route's hub body is the client's own: its cap is what
// a translating backend (Gemini here) reads from it.
func translated(rt *route, body []byte) (sentRequest, bool) {
	var hub []byte
	var stream bool
	switch rt.op {
	case opChat:
		out, _, e := translate.GeminiChatRequest(body)
		if e != nil {
			return sentRequest{}, false
		}
		var g struct {
			GenerationConfig struct {
				MaxOutputTokens int64 `json:"maxOutputTokens"`
			} `json:"generationConfig"`
		}
		if json.Unmarshal(out, &g) != nil {
			return sentRequest{}, false
		}
		return sentRequest{cap: g.GenerationConfig.MaxOutputTokens, stream: inboundStream(rt, body)}, true
	case opMessages:
		out, in, e := translate.HubFromAnthropicRequest(body)
		if e != nil {
			return sentRequest{}, false
		}
		hub, stream = out, in.Stream
	case opResponses:
		out, in, e := translate.HubFromResponsesRequest(body)
		if e != nil {
			return sentRequest{}, false
		}
		hub, stream = out, in.Stream
	case opOllamaChat:
		out, in, e := translate.HubFromOllamaChat(body)
		if e != nil {
			return sentRequest{}, false
		}
		hub, stream = out, in.Stream
	case opOllamaGenerate:
		out, in, e := translate.HubFromOllamaGenerate(body)
		if e != nil {
			return sentRequest{}, false
		}
		hub, stream = out, in.Stream
	default:
		return sentRequest{}, false
	}
	var h struct {
		MaxTokens           int64 `json:"max_tokens"`
		MaxCompletionTokens int64 `json:"max_completion_tokens"`
		Stream              bool  `json:"stream"`
	}
	if json.Unmarshal(hub, &h) != nil {
		return sentRequest{}, false
	}
	if h.Stream != stream {
		return sentRequest{cap: -1}, true
	}
	sent := sentRequest{cap: h.MaxTokens, stream: stream}
	if h.MaxCompletionTokens > 0 {
		sent.cap = h.MaxCompletionTokens
	}
	return sent, true
}

// FuzzForOpenAI is the hub → OpenAI chat direction: the body an
// openai-type upstream is sent (forOpenAI, then withStreamUsage for a
// stream whose client did not ask for usage). It is one JSON object
// with the backend's model as its only "model", a reasoning model's
// max_tokens renamed to max_completion_tokens (keeping the cap that
// wins), stream_options.include_usage set when asked, and every other
// member as the client sent it.
func FuzzForOpenAI(f *testing.F) {
	seeds := []string{
		`{"model":"m1","messages":[{"role":"user","content":"hi"}],"max_tokens":64}`,
		`{"max_tokens":64,"model":"m1","stream":true}`,
		`{"model":"m1","max_tokens":64,"max_completion_tokens":32,"stream":true,"stream_options":{"x":1}}`,
		`{"model":"m1","stream":true,"stream_options":null,"n":12345678901234567890}`,
		`{"model":"m1","stream":true,"stream_options":{"include_usage":false}} `,
		`{"model":"caf\u00e9","max_tokens":1}`,
		`{"model":"m1","max_tokens":5,"max_tokens":7}`,
	}
	models := []string{"o3", "openai/gpt-5-mini", "gpt-4o", "o1-preview"}
	for i := 0; i < len(seeds); i++ {
		f.Add([]byte(seeds[i]), models[i%len(models)], i%2 == 0)
	}
	f.Fuzz(func(t *testing.T, body []byte, model string, usage bool) {
		req, e := parseJSONRequest(body)
		if e != nil || model == "" || !utf8.ValidString(model) {
			return
		}
		out := req.forOpenAI(model)
		keys, values, ok := topLevelMembers(out)
		if !ok || !json.Valid(out) {
			t.Fatalf("forOpenAI(%q) is not one JSON object: %q from %q", model, out, body)
		}
		renamed := req.hasMaxTokens && isReasoningModel(model)
		if !renamed && !bytes.Equal(out, req.withModel(model)) {
			t.Fatalf("forOpenAI(%q) changed more than the model: %q from %q", model, out, body)
		}
		checkOpenAIMembers(t, body, keys, values, model, renamed)
		if !usage {
			return
		}
		streamed := withStreamUsage(req, out)
		skeys, svalues, ok := topLevelMembers(streamed)
		if !ok || !json.Valid(streamed) {
			t.Fatalf("withStreamUsage is not one JSON object: %q from %q", streamed, out)
		}
		found := 0
		for i := 0; i < len(skeys); i++ {
			if skeys[i] != "stream_options" {
				continue
			}
			found++
			var opts struct {
				IncludeUsage bool `json:"include_usage"`
			}
			if json.Unmarshal(svalues[i], &opts) != nil || !opts.IncludeUsage {
				t.Fatalf("stream_options is %s: %q", svalues[i], streamed)
			}
		}
		if found != 1 {
			t.Fatalf("withStreamUsage left %d stream_options: %q", found, streamed)
		}
		if compactMembers(keys, values, "stream_options") != compactMembers(skeys, svalues, "stream_options") {
			t.Fatalf("withStreamUsage changed other members:\n in %q\nout %q", out, streamed)
		}
	})
}

// checkOpenAIMembers checks the members of the body sent upstream
// against the client's: the model, the cap's key, the rest unchanged.
func checkOpenAIMembers(t *testing.T, body []byte, keys []string, values []json.RawMessage, model string, renamed bool) {
	t.Helper()
	inKeys, inValues, _ := topLevelMembers(body)
	models := 0
	for i := 0; i < len(keys); i++ {
		if keys[i] != "model" {
			continue
		}
		models++
		var m string
		if json.Unmarshal(values[i], &m) != nil || m != model {
			t.Fatalf("model is %s, want %q", values[i], model)
		}
	}
	if models != 1 {
		t.Fatalf("%d model members in %q", models, body)
	}
	if !renamed {
		return
	}
	wantCap := lastMember(inKeys, inValues, "max_completion_tokens")
	if wantCap == "" {
		wantCap = lastMember(inKeys, inValues, "max_tokens")
	}
	if lastMember(keys, values, "max_tokens") != "" || lastMember(keys, values, "max_completion_tokens") != wantCap {
		t.Fatalf("reasoning model %q: cap members of %q, want only max_completion_tokens %s", model, body, wantCap)
	}
	skip := "model,max_tokens,max_completion_tokens"
	if compactMembers(inKeys, inValues, skip) != compactMembers(keys, values, skip) {
		t.Fatalf("reasoning model %q: other members changed from %q", model, body)
	}
}

// lastMember is the normalised value of key's last occurrence ("" when
// absent).
func lastMember(keys []string, values []json.RawMessage, key string) string {
	out := ""
	for i := 0; i < len(keys); i++ {
		if keys[i] == key {
			out = normalJSON(values[i])
		}
	}
	return out
}

// compactMembers lists the members (normalised, sorted by key, the last
// of duplicates) other than those named in skip (comma-separated).
func compactMembers(keys []string, values []json.RawMessage, skip string) string {
	last := map[string]string{}
	for i := 0; i < len(keys); i++ {
		if strings.Contains(","+skip+",", ","+keys[i]+",") {
			continue
		}
		last[keys[i]] = normalJSON(values[i])
	}
	data, _ := json.Marshal(last)
	return string(data)
}

// normalJSON is a JSON value in one canonical spelling (numbers kept as
// written): equal for values that mean the same.
func normalJSON(raw []byte) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v interface{}
	if dec.Decode(&v) != nil {
		return string(raw)
	}
	data, _ := json.Marshal(v)
	return string(data)
}
