package gateway

import (
	"bytes"
	"net/http"
	"strconv"
	"testing"
)

// BenchmarkRelaySSE500 relays a 500-event OpenAI stream verbatim, the
// way an openai-type provider's stream reaches the client: the baseline
// for internal/translate's BenchmarkTranslateStream500, which pushes the
// same number of events through a translator.
func BenchmarkRelaySSE500(b *testing.B) {
	var in bytes.Buffer
	for i := 0; i < 500; i++ {
		in.WriteString("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"token" + strconv.Itoa(i) + " \"},\"finish_reason\":null}]}\n\n")
	}
	in.WriteString("data: [DONE]\n\n")
	data := in.Bytes()
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for i := 0; i < b.N; i++ {
		w := &discardFlusher{}
		res := relaySSE(w, bytes.NewReader(data), maxUpstreamResponseBytes, openAIFormat.isStreamEnd, nil)
		if !res.sawEnd {
			b.Fatal("no [DONE]")
		}
	}
}

// discardFlusher is a ResponseWriter that drops what it is given.
type discardFlusher struct{ h http.Header }

func (d *discardFlusher) Header() http.Header {
	if d.h == nil {
		d.h = http.Header{}
	}
	return d.h
}
func (d *discardFlusher) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardFlusher) WriteHeader(int)             {}
func (d *discardFlusher) Flush()                      {}
