package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
)

// The benchmarks put the gateway's hot path (auth, body admission, model
// resolution, upstream call, relay) and a bare httputil.ReverseProxy in
// front of the same loopback upstream, so the difference between the two
// is the gateway's own cost. Both handlers are called directly with an
// httptest.ResponseRecorder: no client-side server is in the loop.

const (
	benchUserKey     = "sk-bench-user"
	benchProviderKey = "sk-bench-provider"
)

// benchChatBody is a ~1 KB chat request.
var benchChatBody = func() []byte {
	filler := strings.Repeat("lorem ipsum dolor sit amet ", 34)
	return []byte(`{"model":"bench-model","messages":[{"role":"system","content":"Be terse."},{"role":"user","content":"` + filler + `"}],"temperature":0.2}`)
}()

var benchStreamBody = bytes.Replace(benchChatBody, []byte(`"model":"bench-model",`), []byte(`"model":"bench-model","stream":true,`), 1)

const benchCompletion = `{"id":"chatcmpl-bench","object":"chat.completion","created":1735689600,"model":"bench-model","choices":[{"index":0,"message":{"role":"assistant","content":"Hello from the bench upstream.","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":180,"completion_tokens":6,"total_tokens":186}}`

// benchEvents is a 7-event chat stream: role, 4 content chunks, finish, [DONE].
var benchEvents = func() [][]byte {
	head := `data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1735689600,"model":"bench-model","choices":[{"index":0,"delta":`
	tail := `,"logprobs":null,"finish_reason":%s}]}` + "\n\n"
	deltas := []string{`{"role":"assistant","content":""}`, `{"content":"Hello"}`, `{"content":" from"}`, `{"content":" the"}`, `{"content":" bench."}`}
	var out [][]byte
	for _, d := range deltas {
		out = append(out, []byte(head+d+strings.Replace(tail, "%s", "null", 1)))
	}
	out = append(out, []byte(head+`{}`+strings.Replace(tail, "%s", `"stop"`, 1)))
	out = append(out, []byte("data: [DONE]\n\n"))
	return out
}()

// benchEventsUsage is benchEvents as OpenAI sends them with
// stream_options.include_usage: "usage":null in every chunk, and a
// usage-only chunk before [DONE].
var benchEventsUsage = func() [][]byte {
	var out [][]byte
	for _, e := range benchEvents[:len(benchEvents)-1] {
		out = append(out, append(append([]byte(nil), e[:len(e)-3]...), `,"usage":null}`+"\n\n"...))
	}
	out = append(out, []byte(`data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1735689600,"model":"bench-model","choices":[],"usage":{"prompt_tokens":180,"completion_tokens":6,"total_tokens":186}}`+"\n\n"))
	return append(out, benchEvents[len(benchEvents)-1])
}()

var benchStreamUsageBody = bytes.Replace(benchStreamBody, []byte(`"stream":true,`), []byte(`"stream":true,"stream_options":{"include_usage":true},`), 1)

// benchAnthropicEvents is the same reply as an Anthropic Messages stream,
// as Anthropic sends it (12 events).
var benchAnthropicEvents = func() [][]byte {
	ev := func(name, data string) []byte { return []byte("event: " + name + "\ndata: " + data + "\n\n") }
	out := [][]byte{
		ev("message_start", `{"type":"message_start","message":{"id":"msg_bench","type":"message","role":"assistant","model":"bench-claude","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":180,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}`),
		ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
		ev("ping", `{"type": "ping"}`),
	}
	for _, t := range []string{"Hello", " from", " the", " bench."} {
		out = append(out, ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"`+t+`"}}`))
	}
	return append(out,
		ev("content_block_stop", `{"type":"content_block_stop","index":0}`),
		ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":6}}`),
		ev("message_stop", `{"type":"message_stop"}`))
}()

// benchAnthropicStreamBody is benchStreamBody for the model the bench
// gateway's anthropic-type provider serves.
var benchAnthropicStreamBody = bytes.Replace(benchStreamBody, []byte(`"model":"bench-model"`), []byte(`"model":"bench-claude"`), 1)

// newBenchUpstream answers chat completions, streamed (flushing after each
// event) or not, after draining the request body.
func newBenchUpstream(b *testing.B) *httptest.Server {
	b.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/v1/messages" && r.Header.Get("X-Api-Key") == benchProviderKey && bytes.Contains(body, []byte(`"stream":true`)) {
			writeBenchEvents(w, benchAnthropicEvents)
			return
		}
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer "+benchProviderKey {
			w.WriteHeader(http.StatusTeapot)
			return
		}
		if !bytes.Contains(body, []byte(`"stream":true`)) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, benchCompletion)
			return
		}
		events := benchEvents
		if bytes.Contains(body, []byte(`"include_usage":true`)) {
			events = benchEventsUsage
		}
		writeBenchEvents(w, events)
	}))
	b.Cleanup(func() { srv.Close() })
	return srv
}

// writeBenchEvents answers with an event stream, flushing after each event.
func writeBenchEvents(w http.ResponseWriter, events [][]byte) {
	w.Header().Set("Content-Type", "text/event-stream")
	flusher, _ := w.(http.Flusher)
	for _, e := range events {
		_, _ = w.Write(e)
		if flusher != nil {
			flusher.Flush()
		}
	}
}

func newBenchGateway(b *testing.B, upstreamURL string) *Gateway {
	b.Helper()
	return newBenchGatewayFrom(b, `{
  "providers": {
    "bench": {"type": "openai", "baseUrl": "`+upstreamURL+`", "apiKey": "`+benchProviderKey+`", "models": ["bench-model"]},
    "bench-anthropic": {"type": "anthropic", "baseUrl": "`+upstreamURL+`", "apiKey": "`+benchProviderKey+`", "models": ["bench-claude"]}
  },
  "groups": {"all": {}},
  "users": {"inline": [{"name": "bench", "group": "all", "apiKey": "`+benchUserKey+`"}]}
}`)
}

// newBenchGatewayFrom builds a gateway from a JSON config, logging
// nowhere.
func newBenchGatewayFrom(b *testing.B, configJSON string) *Gateway {
	b.Helper()
	cfg, err := DecodeConfigJSON([]byte(configJSON))
	if err != nil {
		b.Fatal(err)
	}
	g, err := New(nil, cfg, Options{Name: "bench", LogOutput: io.Discard})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = g.Close() })
	return g
}

// newBenchReverseProxy is the baseline: a bare ReverseProxy that sets the
// upstream URL and credential, with a per-host idle pool sized for load.
func newBenchReverseProxy(b *testing.B, upstreamURL string) http.Handler {
	b.Helper()
	target, err := url.Parse(upstreamURL)
	if err != nil {
		b.Fatal(err)
	}
	transport := &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256}
	b.Cleanup(func() { transport.CloseIdleConnections() })
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Header.Set("Authorization", "Bearer "+benchProviderKey)
		},
		Transport: transport,
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).EnableFullDuplex()
		rp.ServeHTTP(w, r)
	})
}

// runBench sends body through h b.N times and checks every answer.
func runBench(b *testing.B, h http.Handler, body []byte, wantSuffix string) {
	b.Helper()
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+benchUserKey)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || !bytes.HasSuffix(rec.Body.Bytes(), []byte(wantSuffix)) {
			b.Fatalf("iteration %d: status %d, body %q", i, rec.Code, rec.Body.String())
		}
	}
}

// BenchmarkChatNonStreaming measures one 1 KB non-streaming chat request.
func BenchmarkChatNonStreaming(b *testing.B) {
	upstream := newBenchUpstream(b)
	b.Run("gateway", func(b *testing.B) {
		runBench(b, benchHandler(newBenchGateway(b, upstream.URL)), benchChatBody, `"total_tokens":186}}`)
	})
	b.Run("reverseproxy", func(b *testing.B) {
		runBench(b, newBenchReverseProxy(b, upstream.URL), benchChatBody, `"total_tokens":186}}`)
	})
}

// BenchmarkChatStreaming measures one streamed chat request (7 SSE
// events) to an upstream that, like OpenAI, adds usage when asked for it:
// "gateway" is a client that did not ask (the gateway asks, and takes it
// out of the client's stream), "gateway-usage" one that did;
// "gateway-translated" is the same client and reply through an
// anthropic-type provider (the request translated to Messages, the
// upstream's 12 Anthropic events to 7 chunks).
func BenchmarkChatStreaming(b *testing.B) {
	upstream := newBenchUpstream(b)
	b.Run("gateway", func(b *testing.B) {
		runBench(b, benchHandler(newBenchGateway(b, upstream.URL)), benchStreamBody, "data: [DONE]\n\n")
	})
	// The client asked for usage: relayed verbatim, usage chunk included.
	b.Run("gateway-usage", func(b *testing.B) {
		runBench(b, benchHandler(newBenchGateway(b, upstream.URL)), benchStreamUsageBody, "data: [DONE]\n\n")
	})
	b.Run("gateway-translated", func(b *testing.B) {
		runBench(b, benchHandler(newBenchGateway(b, upstream.URL)), benchAnthropicStreamBody, "data: [DONE]\n\n")
	})
	b.Run("reverseproxy", func(b *testing.B) {
		runBench(b, newBenchReverseProxy(b, upstream.URL), benchStreamBody, "data: [DONE]\n\n")
	})
}

// benchHandler hands the gateway to runBench as a HandlerFunc: under
// Yaegi (make bench-yaegi) an interpreted *Gateway cannot be stored in
// the compiled http.Handler parameter.
func benchHandler(g *Gateway) http.Handler { return http.HandlerFunc(g.ServeHTTP) }

// benchConversationBody is a long conversation (~110 KB, 200 messages of
// content parts with escaped quotes), the size of an agent's request.
var benchConversationBody = func() []byte {
	var b bytes.Buffer
	b.WriteString(`{"model":"bench-model","stream":true,"max_tokens":1000,"messages":[`)
	for i := 0; i < 200; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"role":"user","content":[{"type":"text","text":"` + strings.Repeat(`lorem ipsum \"dolor\" sit amet `, 16) + `"}]}`)
	}
	b.WriteString(`],"temperature":0.2}`)
	return b.Bytes()
}()

// BenchmarkParseJSONRequest is the admission read of a request body by
// each reader: exact (json.Valid and a hop over the top level, what the
// compiled gateway runs), decoded (a decode into a map of top-level
// values, what the plugin runs under Yaegi) and json.Valid alone (the
// floor: any reader must validate).
func BenchmarkParseJSONRequest(b *testing.B) {
	readers := []struct {
		name string
		read func([]byte) (*jsonRequest, *apiError)
	}{{"exact", parseJSONRequestExact}, {"decoded", parseJSONRequestDecoded}}
	for _, body := range []struct {
		name string
		data []byte
	}{{"1KB", benchStreamBody}, {"110KB", benchConversationBody}} {
		for _, r := range readers {
			read := r.read
			data := body.data
			b.Run(body.name+"/"+r.name, func(b *testing.B) {
				b.SetBytes(int64(len(data)))
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					if _, e := read(data); e != nil {
						b.Fatal(e.Error())
					}
				}
			})
		}
		data := body.data
		b.Run(body.name+"/json.Valid", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for i := 0; i < b.N; i++ {
				if !json.Valid(data) {
					b.Fatal("invalid")
				}
			}
		})
	}
}
