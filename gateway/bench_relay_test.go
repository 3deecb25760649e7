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

// relayUsageStream is the 500-event stream of BenchmarkRelaySSE500 as
// OpenAI sends it with stream_options.include_usage: "usage":null in
// every chunk, and the usage chunk.
func relayUsageStream() []byte {
	var in bytes.Buffer
	for i := 0; i < 500; i++ {
		in.WriteString("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"token" + strconv.Itoa(i) + " \"},\"finish_reason\":null}],\"usage\":null}\n\n")
	}
	in.WriteString("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":500,\"total_tokens\":509}}\n\n")
	in.WriteString("data: [DONE]\n\n")
	return in.Bytes()
}

// BenchmarkRelaySSE500Usage relays the include_usage stream to a client
// that asked for it (verbatim), and, Stripped, to one that did not (the
// gateway asked: the usage chunk and every "usage":null go).
func BenchmarkRelaySSE500Usage(b *testing.B) {
	for _, strip := range []bool{false, true} {
		name := "Verbatim"
		if strip {
			name = "Stripped"
		}
		b.Run(name, func(b *testing.B) {
			data := relayUsageStream()
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for i := 0; i < b.N; i++ {
				acct := &relayAccount{strip: strip}
				res := relayEventStream(&discardFlusher{}, bytes.NewReader(data), maxUpstreamResponseBytes, openAIFormat.streamEndMark, openAIFormat.isStreamEnd, nil, acct)
				if !res.sawEnd || !acct.usage.Reported {
					b.Fatal("no [DONE] or no usage")
				}
			}
		})
	}
}

// BenchmarkRelaySSE500UsageTrickled is BenchmarkRelaySSE500Usage with
// one event per Read.
func BenchmarkRelaySSE500UsageTrickled(b *testing.B) {
	for _, strip := range []bool{false, true} {
		name := "Verbatim"
		if strip {
			name = "Stripped"
		}
		b.Run(name, func(b *testing.B) {
			data := relayUsageStream()
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			w := httptest.NewRecorder()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				w.Body.Reset()
				body := trickle(data)
				b.StartTimer()
				acct := &relayAccount{strip: strip}
				res := relayEventStream(w, body, maxUpstreamResponseBytes, openAIFormat.streamEndMark, openAIFormat.isStreamEnd, nil, acct)
				if !res.sawEnd || !acct.usage.Reported {
					b.Fatal("no [DONE] or no usage")
				}
			}
		})
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
