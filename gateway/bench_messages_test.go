package gateway

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// BenchmarkMessagesStreaming puts a translated /v1/messages stream (an
// Anthropic client, an openai-type backend: the request translated to
// the hub, the hub stream to Anthropic events) next to the same
// conversation on /v1/chat/completions, against the same upstream
// stream of 7 events. It reports the time to the client's first byte
// (ttfb-ns) and the cost per upstream event (ns/event).
func BenchmarkMessagesStreaming(b *testing.B) {
	upstream := newBenchUpstream(b)
	messages := []byte(`{"model":"bench-model","max_tokens":256,"stream":true,"system":"Be terse.","messages":[{"role":"user","content":"` +
		strings.Repeat("lorem ipsum dolor sit amet ", 34) + `"}],"temperature":0.2}`)
	b.Run("messages", func(b *testing.B) {
		runStreamBench(b, benchHandler(newBenchGateway(b, upstream.URL)), "/v1/messages", messages, "event: message_stop\n")
	})
	b.Run("chat", func(b *testing.B) {
		runStreamBench(b, benchHandler(newBenchGateway(b, upstream.URL)), "/v1/chat/completions", benchStreamBody, "data: [DONE]\n\n")
	})
}

// firstByteRecorder notes when the first body byte was written.
type firstByteRecorder struct {
	*httptest.ResponseRecorder
	first time.Time
}

func (f *firstByteRecorder) Write(p []byte) (int, error) {
	if f.first.IsZero() {
		f.first = time.Now()
	}
	return f.ResponseRecorder.Write(p)
}

func (f *firstByteRecorder) Flush() { f.ResponseRecorder.Flush() }

// runStreamBench sends body to path through h b.N times, checks every
// answer, and reports the mean time to the first body byte and the time
// per upstream event.
func runStreamBench(b *testing.B, h http.Handler, path string, body []byte, wantMark string) {
	b.Helper()
	b.ReportAllocs()
	var ttfb time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+benchUserKey)
		req.Header.Set("Content-Type", "application/json")
		rec := &firstByteRecorder{ResponseRecorder: httptest.NewRecorder()}
		start := time.Now()
		h.ServeHTTP(rec, req)
		ttfb += rec.first.Sub(start)
		if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte(wantMark)) {
			b.Fatalf("iteration %d: status %d, body %q", i, rec.Code, rec.Body.String())
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(ttfb.Nanoseconds())/float64(b.N), "ttfb-ns")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(benchEvents)), "ns/event")
}
