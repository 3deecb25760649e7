package translate

import (
	"encoding/json"
	"testing"
)

// FuzzAnthropicCountTokens: a count_tokens body is a 400 with a code, or
// the estimate ceil(len(body)/4) (at least 1) of a JSON object with a
// model string and a messages array; a body the Messages translation
// accepts is always counted.
func FuzzAnthropicCountTokens(f *testing.F) {
	seeds := []string{
		`{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","messages":[],"system":"s","tools":[{"name":"t","input_schema":{}}]}`,
		`{"model":"m","messages":{}}`, `{"model":"","messages":[]}`, `{"messages":[]}`, `{"model":"m"}`, `[]`, ``,
	}
	for i := 0; i < len(seeds); i++ {
		f.Add([]byte(seeds[i]))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		n, e := AnthropicCountTokens(body)
		if e != nil {
			if n != 0 || e.Status != 400 || e.Code == "" || e.Message == "" {
				t.Fatalf("error %+v with count %d", e, n)
			}
			if _, _, he := HubFromAnthropicRequest(body); he == nil {
				t.Fatalf("count_tokens refuses (%s) a body the Messages translation accepts: %q", e.Message, body)
			}
			return
		}
		if n != int64((len(body)+3)/4) || n < 1 {
			t.Fatalf("count %d for %d bytes", n, len(body))
		}
		var top struct {
			Model    string            `json:"model"`
			Messages []json.RawMessage `json:"messages"`
		}
		if json.Unmarshal(body, &top) != nil || top.Model == "" || top.Messages == nil {
			t.Fatalf("counted a body without a model and messages: %q", body)
		}
	})
}
