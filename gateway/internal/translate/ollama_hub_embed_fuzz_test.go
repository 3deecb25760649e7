package translate

import (
	"encoding/json"
	"testing"
)

// FuzzHubFromOllamaEmbed: an /api/embed (or legacy /api/embeddings)
// body is a 400 with a code and no output, or a hub embeddings request
// with the client's model, float encoding, and its input (a string or a
// non-empty list of strings) exactly as sent.
func FuzzHubFromOllamaEmbed(f *testing.F) {
	seeds := []string{
		`{"model":"all-minilm","input":"Why is the sky blue?"}`,
		`{"model":"m","input":["a","b"],"truncate":false,"dimensions":384,"options":{"num_ctx":512},"keep_alive":"5m"}`,
		`{"model":"m","prompt":"hello","options":{"temperature":0},"keep_alive":-1}`,
		`{"model":"m","input":[]}`, `{"model":"m","input":[1,2]}`, `{"model":"m","input":"x","dimensions":1e2}`,
		`{"model":"m","prompt":null}`, `{"model":7,"input":"x"}`, `[]`,
	}
	for i := 0; i < len(seeds); i++ {
		f.Add([]byte(seeds[i]), i%3 == 2)
	}
	f.Fuzz(func(t *testing.T, body []byte, legacy bool) {
		out, model, e := HubFromOllamaEmbed(body, legacy)
		if e != nil {
			if out != nil || model != "" || e.Status != 400 || e.Code == "" || e.Message == "" {
				t.Fatalf("error %+v with output %q", e, out)
			}
			return
		}
		var hub struct {
			Model          string          `json:"model"`
			Input          json.RawMessage `json:"input"`
			Dimensions     *int64          `json:"dimensions"`
			EncodingFormat string          `json:"encoding_format"`
		}
		if err := json.Unmarshal(out, &hub); err != nil || hub.Model != model || model == "" || hub.EncodingFormat != "float" {
			t.Fatalf("bad hub request (%v): %s from %q", err, out, body)
		}
		var in map[string]json.RawMessage
		if json.Unmarshal(body, &in) != nil {
			t.Fatalf("accepted a body that is not an object: %q", body)
		}
		key := "input"
		if legacy {
			key = "prompt"
		}
		var s string
		var list []string
		if json.Unmarshal(hub.Input, &s) != nil && (json.Unmarshal(hub.Input, &list) != nil || len(list) == 0) {
			t.Fatalf("input %s is neither a string nor a non-empty list of strings", hub.Input)
		}
		if normalRaw(hub.Input) != normalRaw(in[key]) {
			t.Fatalf("input %s is not the client's %s", hub.Input, in[key])
		}
		if hub.Dimensions != nil && (legacy || *hub.Dimensions < 1) {
			t.Fatalf("dimensions %d (legacy %v)", *hub.Dimensions, legacy)
		}
	})
}

// normalRaw is a JSON value re-encoded, so that equal values compare
// equal whatever their spelling.
func normalRaw(raw json.RawMessage) string {
	var v interface{}
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	data, _ := json.Marshal(v)
	return string(data)
}

// FuzzOllamaFromHubEmbeddings: a hub embeddings answer is an error (a
// 4xx/5xx with a message and no output), or Ollama's answer: every
// vector, in the hub's index order, as an array of numbers
// (/api/embed), or the first one (legacy /api/embeddings); the model
// the client named; prompt_eval_count the usage's prompt tokens, which
// are reported only when counted (more than 0).
func FuzzOllamaFromHubEmbeddings(f *testing.F) {
	seeds := []string{
		`{"object":"list","data":[{"index":0,"embedding":[0.1,-2e-3]}],"usage":{"prompt_tokens":8,"total_tokens":8}}`,
		`{"data":[{"index":1,"embedding":[1]},{"index":0,"embedding":[2.5E+1]}]}`,
		`{"data":[{"index":0,"embedding":"AACAPwAAAEA="}]}`,
		`{"data":[{"index":0,"embedding":[null]}]}`,
		`{"data":[]}`, `{"error":{"message":"x","type":"invalid_request_error"}}`, `{}`, `[]`, ``,
	}
	for i := 0; i < len(seeds); i++ {
		f.Add([]byte(seeds[i]), i%2 == 1)
	}
	f.Fuzz(func(t *testing.T, hub []byte, legacy bool) {
		out, u, e := OllamaFromHubEmbeddings(hub, legacy, ollamaTestModel, ollamaTestTimes)
		if e != nil {
			if out != nil || e.Status < 400 || e.Status > 599 || e.Message == "" {
				t.Fatalf("error %+v with output %q", e, out)
			}
			return
		}
		var list struct {
			Data []json.RawMessage `json:"data"`
		}
		if json.Unmarshal(hub, &list) != nil {
			t.Fatalf("accepted an answer that is not an embeddings list: %q", hub)
		}
		var o struct {
			Model           *string         `json:"model"`
			Embeddings      [][]json.Number `json:"embeddings"`
			Embedding       []json.Number   `json:"embedding"`
			PromptEvalCount *int64          `json:"prompt_eval_count"`
		}
		if err := json.Unmarshal(out, &o); err != nil {
			t.Fatalf("answer is not numbers (%v): %s", err, out)
		}
		if legacy {
			if o.Embedding == nil || o.Embeddings != nil {
				t.Fatalf("legacy answer without one embedding: %s", out)
			}
			return
		}
		if o.Model == nil || *o.Model != ollamaTestModel || len(o.Embeddings) != len(list.Data) {
			t.Fatalf("answer has model %v and %d vectors for %d: %s", o.Model, len(o.Embeddings), len(list.Data), out)
		}
		if o.PromptEvalCount == nil || *o.PromptEvalCount != u.PromptTokens || u.Reported != (u.PromptTokens > 0) {
			t.Fatalf("prompt_eval_count %v for usage %+v: %s", o.PromptEvalCount, u, out)
		}
	})
}
