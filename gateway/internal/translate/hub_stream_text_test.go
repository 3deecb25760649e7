package translate

import (
	"bytes"
	"testing"
)

// TestTextChunkMatchesHubChunk: the hand-built content chunk is byte for
// byte the encoded hub chunk, whatever the text, id and model hold.
func TestTextChunkMatchesHubChunk(t *testing.T) {
	texts := []string{"", "token ", `quote " backslash \ slash /`, "<b>&amp;</b>", "é日本\u2028\u2029", "\x00\x01\t\n\r", "bad \xff utf-8", "emoji 😀"}
	ids := []string{"msg_1", "id \"odd\" <x>", "ünï"}
	var tk textChunker
	for _, id := range ids {
		for _, model := range []string{"alias", "m<&>\"x\""} {
			tc := Context{RequestedModel: model, Created: 1700000000}
			for _, text := range texts {
				text := text
				want := hubDeltaPayload(tc, id, hubDelta{Content: &text}, nil)
				got := textPayload(&tk, tc, id, text)
				if !bytes.Equal(got.Data, want.Data) || got.Name != want.Name {
					t.Fatalf("id %q model %q text %q:\n got %s\nwant %s", id, model, text, got.Data, want.Data)
				}
				// The text as a finish reason, for the finish chunk.
				want = hubDeltaPayload(tc, id, hubDelta{}, &text)
				if got := finishPayload(&tk, tc, id, text); !bytes.Equal(got.Data, want.Data) || got.Name != want.Name {
					t.Fatalf("id %q model %q reason %q:\n got %s\nwant %s", id, model, text, got.Data, want.Data)
				}
			}
			empty := ""
			want := hubDeltaPayload(tc, id, hubDelta{Role: "assistant", Content: &empty}, nil)
			if got := rolePayload(&tk, tc, id); !bytes.Equal(got.Data, want.Data) || got.Name != want.Name {
				t.Fatalf("id %q model %q role chunk:\n got %s\nwant %s", id, model, got.Data, want.Data)
			}
			tk.prefix = nil // the model is fixed per stream; start over for the next
		}
	}
}

// FuzzTextChunk: the same for any text.
func FuzzTextChunk(f *testing.F) {
	f.Add("token", "msg_1")
	f.Add("\u2028<>&\xff", "x\"y")
	f.Fuzz(func(t *testing.T, text, id string) {
		var tk textChunker
		tc := Context{RequestedModel: "m", Created: -5}
		want := hubDeltaPayload(tc, id, hubDelta{Content: &text}, nil)
		if got := textPayload(&tk, tc, id, text); !bytes.Equal(got.Data, want.Data) {
			t.Fatalf("got %s\nwant %s", got.Data, want.Data)
		}
	})
}
