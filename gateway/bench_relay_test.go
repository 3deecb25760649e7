package gateway

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
)

// BenchmarkRelaySSE500 relays a 500-event OpenAI stream verbatim, the
// way relayEvents passes an openai-type provider's stream to the client
// (terminator check and usage sniffing included): the baseline for
// internal/translate's BenchmarkTranslateStream500, which pushes the
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
		res := relayEventStream(w, bytes.NewReader(data), maxUpstreamResponseBytes, openAIFormat.streamEndMark, openAIFormat.isStreamEnd, nil, &relayAccount{})
		if !res.sawEnd || res.events != 501 {
			b.Fatal("no [DONE]")
		}
	}
}

// BenchmarkRelaySSE500Trickled is BenchmarkRelaySSE500 with the
// upstream delivering one event per Read, as a model generating tokens
// does: the relay's per-Read work counts for every event.
func BenchmarkRelaySSE500Trickled(b *testing.B) {
	var in bytes.Buffer
	for i := 0; i < 500; i++ {
		in.WriteString("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"token" + strconv.Itoa(i) + " \"},\"finish_reason\":null}]}\n\n")
	}
	in.WriteString("data: [DONE]\n\n")
	data := in.Bytes()
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	w := httptest.NewRecorder()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		w.Body.Reset()
		body := trickle(data)
		b.StartTimer()
		res := relayEventStream(w, body, maxUpstreamResponseBytes, openAIFormat.streamEndMark, openAIFormat.isStreamEnd, nil, &relayAccount{})
		if !res.sawEnd || res.events != 501 {
			b.Fatal("no [DONE]")
		}
	}
}

// trickle is a body that returns one event of data per Read, as an
// upstream's body does while a model generates; it and the recorder are
// standard library, compiled even under Yaegi, as the host's are.
func trickle(data []byte) io.Reader {
	var parts []io.Reader
	for len(data) > 0 {
		n := bytes.Index(data, []byte("\n\n")) + 2
		if n < 2 {
			n = len(data)
		}
		parts = append(parts, bytes.NewReader(data[:n]))
		data = data[n:]
	}
	return io.MultiReader(parts...)
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
