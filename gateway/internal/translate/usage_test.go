package translate

import (
	"bytes"
	"testing"
)

func TestUsageFromJSON(t *testing.T) {
	cases := []struct {
		name, doc                     string
		prompt, completion, cacheRead int64
		reported                      bool
	}{
		{"openai", `{"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":4}}}`, 10, 5, 4, true},
		{"openai null", `{"usage":null}`, 0, 0, 0, false},
		{"anthropic", `{"usage":{"input_tokens":10,"output_tokens":3,"cache_creation_input_tokens":100,"cache_read_input_tokens":1000}}`, 1110, 3, 1000, true},
		{"anthropic message_start", `{"type":"message_start","message":{"usage":{"input_tokens":7,"output_tokens":1}}}`, 7, 1, 0, true},
		{"gemini", `{"usageMetadata":{"promptTokenCount":12,"candidatesTokenCount":4,"thoughtsTokenCount":6,"cachedContentTokenCount":2}}`, 12, 10, 2, true},
		{"none", `{"choices":[]}`, 0, 0, 0, false},
		{"not json", `usage`, 0, 0, 0, false},
	}
	for _, tc := range cases {
		var u Usage
		UsageFromJSON([]byte(tc.doc), &u)
		if u.PromptTokens != tc.prompt || u.CompletionTokens != tc.completion || u.CacheReadTokens != tc.cacheRead || u.Reported != tc.reported {
			t.Errorf("%s: got %+v", tc.name, u)
		}
	}
	// Anthropic's stream splits usage: message_delta's output count
	// overrides message_start's, its absent input count keeps the start's.
	var u Usage
	UsageFromJSON([]byte(`{"type":"message_start","message":{"usage":{"input_tokens":7,"cache_read_input_tokens":3,"output_tokens":1}}}`), &u)
	UsageFromJSON([]byte(`{"type":"message_delta","usage":{"output_tokens":42}}`), &u)
	if u.PromptTokens != 10 || u.CompletionTokens != 42 {
		t.Fatalf("anthropic stream fold: %+v", u)
	}
}

// usageGatedByKey is UsageFromJSON as it was before MayHoldUsage: the
// decoder behind a bytes.Contains gate for "sage".
func usageGatedByKey(data []byte, u *Usage) {
	if bytes.Contains(data, usageKeyTail) {
		usageFromJSON(data, u)
	}
}

// FuzzMayHoldUsage: whenever the gated decoder finds usage in a
// document, MayHoldUsage said it may be there — on the document, and on
// the raw bytes of an SSE event carrying it over two data lines.
func FuzzMayHoldUsage(f *testing.F) {
	f.Add([]byte(`{"usage":{"prompt_tokens":1,"completion_tokens":2}}`), uint8(9))
	f.Add([]byte(`{"usage":null,"x":{"usage" : {"prompt_tokens":1}}}`), uint8(3))
	f.Add([]byte(`{"usageMetadata" :{"promptTokenCount":3}}`), uint8(17))
	f.Add([]byte("{\"message\":{\"usage\"\n:\t{\"input_tokens\":4}}}"), uint8(0))
	f.Add([]byte(`{"Usage":{"prompt_tokens":1},"text":"usage\":{"}`), uint8(11))
	f.Fuzz(func(t *testing.T, data []byte, cut uint8) {
		// The gateway reads usage only under keys whose "sage" is lower
		// case — usage, Usage, usageMetadata, every spelling providers
		// use — while encoding/json, the reference here, folds case
		// everywhere: a document that spells "sage" otherwise anywhere
		// ("UsAge") is outside the property (its usage is never read,
		// and the stream's is estimated, as for any unknown key).
		if bytes.Count(bytes.ToLower(data), usageKeyTail) != bytes.Count(data, usageKeyTail) {
			return
		}
		var u Usage
		usageGatedByKey(data, &u)
		if u != (Usage{}) && !MayHoldUsage(data) {
			t.Fatalf("usage %+v in %q, which MayHoldUsage rules out", u, data)
		}
		if bytes.IndexByte(data, '\n') >= 0 || len(data) == 0 {
			return
		}
		// The same document cut over two data lines: the event's data
		// joins them with a "\n".
		i := int(cut) % len(data)
		joined := []byte(string(data[:i]) + "\n" + string(data[i:]))
		raw := []byte("data: " + string(data[:i]) + "\ndata: " + string(data[i:]) + "\n\n")
		u = Usage{}
		usageGatedByKey(joined, &u)
		if u != (Usage{}) && !MayHoldUsage(raw) {
			t.Fatalf("usage %+v in the event %q, which MayHoldUsage rules out", u, raw)
		}
	})
}
