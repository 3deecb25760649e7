package gateway

import (
	"bytes"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llmgateway/llmgateway/gateway/internal/sse"
	"github.com/llmgateway/llmgateway/gateway/internal/translate"
)

// FuzzRelayGatedMatchesUngated: the relay relayEvents runs, which asks
// isStreamEnd only about events holding "[DONE]" and reads usage only
// from events that may hold it, writes, flushes and reports exactly what
// the relay asking about every event does.
func FuzzRelayGatedMatchesUngated(f *testing.F) {
	seeds := []string{
		"data: a\n\ndata: b\n\ndata: [DONE]\n\n",
		"data: a\r\n\r\n: keepalive\n\ndata:[DONE]\n\n",
		"data: {\"x\":\"[DONE]\"}\n\ndata:  [DONE] \n\n",
		"data: {\"usage\":null}\n\ndata: {\"usage\":{\"prompt_tokens\":3,\n" +
			"data: \"completion_tokens\":4}}\n\ndata: [DONE]\n\ndata: tail",
		"\n\n\r\n:only\n\nevent: x\ndata: [DONE]\n\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var uAll translate.Usage
		gatedAcct := &relayAccount{}
		all := &flushRecorder{ResponseRecorder: httptest.NewRecorder()}
		resAll := relaySSE(all, bytes.NewReader(data), 1<<20, openAIFormat.isStreamEnd, func(ev sse.Event) {
			translate.UsageFromJSON(ev.Data, &uAll)
		})
		gated := &flushRecorder{ResponseRecorder: httptest.NewRecorder()}
		resGated := relayEventStream(gated, bytes.NewReader(data), 1<<20, openAIFormat.streamEndMark, openAIFormat.isStreamEnd, nil, gatedAcct)
		uGated := gatedAcct.usage
		if resAll != resGated || uAll != uGated || !bytes.Equal(all.Body.Bytes(), gated.Body.Bytes()) {
			t.Fatalf("in %q:\n every event: %+v %+v %q\n gated:       %+v %+v %q", data, resAll, uAll, all.Body.Bytes(), resGated, uGated, gated.Body.Bytes())
		}
		if len(all.flushedAt) != len(gated.flushedAt) {
			t.Fatalf("flushes at %v and %v", all.flushedAt, gated.flushedAt)
		}
		for i := 0; i < len(all.flushedAt); i++ {
			if all.flushedAt[i] != gated.flushedAt[i] {
				t.Fatalf("flushes at %v and %v", all.flushedAt, gated.flushedAt)
			}
		}
	})
}

// A relayed Messages stream gets the client's model in its
// message_start, which is longer than the upstream's: the events before
// it and after it in the same read keep their bytes and order, and the
// read is still flushed once.
func TestRelayStartModelInARun(t *testing.T) {
	in := ": hello\n\n" +
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"up-1\",\"content\":[]}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	want := strings.Replace(in, `"model":"up-1"`, `"model":"a-much-longer-client-model"`, 1)
	for _, trickled := range []bool{false, true} {
		var body io.Reader = strings.NewReader(in)
		if trickled {
			body = trickle([]byte(in))
		}
		w := &flushRecorder{ResponseRecorder: httptest.NewRecorder()}
		acct := &relayAccount{startModel: []byte(`"a-much-longer-client-model"`)}
		res := relayEventStream(w, body, 1<<20, anthropicFormat.streamEndMark, anthropicFormat.isStreamEnd, nil, acct)
		if got := w.Body.String(); got != want || res.err != nil || res.events != 3 || !res.sawEnd || acct.content != 2 {
			t.Fatalf("trickled %v: client got\n%q\nwant\n%q\n(result %+v, text %d)", trickled, got, want, res, acct.content)
		}
		wantFlushes := 1
		if trickled {
			wantFlushes = 4
		}
		if flushDispatches() && len(w.flushedAt) != wantFlushes {
			t.Fatalf("trickled %v: flushes at %v, want %d", trickled, w.flushedAt, wantFlushes)
		}
	}
}

// eventTextLen counts the text an upstream event carries, in bytes as
// sent (escapes included), for the estimate of a stream without usage.
func TestEventTextLen(t *testing.T) {
	cases := []struct {
		name, data string
		want       int
	}{
		{"anthropic text delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" bench."}}`, 7},
		{"anthropic text delta, escaped quote", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"say \"hi\""}}`, 10},
		{"anthropic empty text delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":""}}`, 0},
		{"anthropic tool input delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\":1"}}`, 8},
		{"anthropic thinking delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}`, 3},
		{"anthropic message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}`, 0},
		{"openai content chunk", `{"id":"c","choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}`, 5},
		{"openai tool arguments", `{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"x\""}}]}}]}`, 6},
		{"gemini text part", `{"candidates":[{"content":{"parts":[{"text":"Hi there"}],"role":"model"}}]}`, 8},
		{"no text", `{"type":"ping"}`, 0},
	}
	for _, tc := range cases {
		if got := eventTextLen([]byte(tc.data)); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// BenchmarkEventTextLen: the per-event text count of a translated
// stream's events (most are Anthropic text deltas) and of a relayed
// OpenAI chunk.
func BenchmarkEventTextLen(b *testing.B) {
	for _, tc := range []struct{ name, data string }{
		{"anthropic-text", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" bench."}}`},
		{"anthropic-thinking", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}`},
		{"openai-content", `{"id":"chatcmpl-bench","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" bench."},"finish_reason":null}]}`},
	} {
		data := []byte(tc.data)
		b.Run(tc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if eventTextLen(data) == 0 {
					b.Fatal("no text")
				}
			}
		})
	}
}
