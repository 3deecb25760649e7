package gateway

import (
	"bytes"
	"net/http/httptest"
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
