package yaegigate_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmgateway/llmgateway/integration/mockupstream"
)

// Translated providers through the plugin: an anthropic and a gemini
// provider backed by one mock upstream, driven by the official OpenAI Go
// SDK with its stream accumulator. The translators, the SSE codec and the
// error type are the core's vendored sub-packages (gateway/internal/
// translate, sse, apierr), interpreted like the root package.
const (
	translateAnthKey = "sk-ant-test"
	translateGemKey  = "gem-test"
	translateChunks  = 3
)

// translateUpstream is the mock with a gate on the next translated stream:
// it holds the second upstream text event back until the client has the
// first one in hand (see streamGate).
type translateUpstream struct {
	mock *mockupstream.Server
	srv  *httptest.Server

	mu   sync.Mutex
	gate *streamGate
}

func newTranslateUpstream(t *testing.T) *translateUpstream {
	t.Helper()
	u := &translateUpstream{mock: mockupstream.New(mockupstream.Options{
		Models:          []string{upstreamModel},
		AnthropicModels: []string{"claude-test"},
		GeminiModels:    []string{"gemini-test"},
		StrictModels:    true,
		Chunks:          translateChunks,
		AnthropicAPIKey: translateAnthKey,
		GeminiAPIKey:    translateGemKey,
	})}
	u.srv = httptest.NewServer(u)
	t.Cleanup(u.srv.Close)
	return u
}

func (u *translateUpstream) armGate(fallback time.Duration) *streamGate {
	g := newStreamGate(fallback)
	u.mu.Lock()
	u.gate = g
	u.mu.Unlock()
	return g
}

func (u *translateUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.mu.Lock()
	g := u.gate
	u.gate = nil
	u.mu.Unlock()
	if g == nil {
		u.mock.ServeHTTP(w, r)
		return
	}
	defer close(g.upstreamDone)
	u.mock.ServeHTTP(&textGatedWriter{ResponseWriter: w, gate: g}, r)
}

// textMarkers start the text of an upstream stream event: an Anthropic
// text_delta, a Gemini text part, an OpenAI content chunk. The mock
// writes one event per Write.
var textMarkers = [][]byte{[]byte(`"type":"text_delta"`), []byte(`"parts":[{"text":`), []byte(`"delta":{"content":"`)}

// textGatedWriter holds the second text event back until the client has
// read the first one (or the gate's fallback expires).
type textGatedWriter struct {
	http.ResponseWriter
	gate    *streamGate
	texts   int
	resumed bool
}

func (g *textGatedWriter) Write(p []byte) (int, error) {
	for _, m := range textMarkers {
		if !bytes.Contains(p, m) {
			continue
		}
		if g.texts >= 1 && !g.resumed {
			select {
			case <-g.gate.clientGotFirst:
			case <-time.After(g.gate.fallback):
				g.gate.timedOut = true
			}
			g.resumed = true
			close(g.gate.upstreamResumed)
		}
		g.texts++
		break
	}
	return g.ResponseWriter.Write(p)
}

func (g *textGatedWriter) Flush() {
	if f, ok := g.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (g *textGatedWriter) Unwrap() http.ResponseWriter { return g.ResponseWriter }

// translateConfig is the plugin configuration with the two translated
// providers (and the OpenAI one the readiness probe lists).
func translateConfig(upstreamURL string) map[string]interface{} {
	cfg := gatewayConfig(upstreamURL)
	providers := cfg["providers"].(map[string]interface{})
	providers["anth"] = map[string]interface{}{
		"type": "anthropic", "baseUrl": upstreamURL, "apiKey": translateAnthKey, "models": []interface{}{"claude-test"},
	}
	providers["gem"] = map[string]interface{}{
		"type": "gemini", "baseUrl": upstreamURL, "apiKey": translateGemKey, "models": []interface{}{"gemini-test"},
	}
	return cfg
}

type translateCase struct {
	name  string
	model string
	// usage returns prompt, completion, total for a prompt of n words
	// and an output of out tokens, as the mock reports them mapped to
	// OpenAI's usage.
	usage func(n, out int) [3]int64
}

func translateCases() []translateCase {
	return []translateCase{
		{"anthropic", "anth/claude-test", func(n, out int) [3]int64 {
			p := int64(n + mockupstream.AnthropicCacheCreationTokens + mockupstream.AnthropicCacheReadTokens)
			return [3]int64{p, int64(out), p + int64(out)}
		}},
		{"gemini", "gem/gemini-test", func(n, out int) [3]int64 {
			c := int64(out + mockupstream.GeminiThoughtsTokens)
			return [3]int64{int64(n), c, int64(n) + c}
		}},
	}
}

func usageOf(u openai.CompletionUsage) [3]int64 {
	return [3]int64{u.PromptTokens, u.CompletionTokens, u.TotalTokens}
}

// runTranslateScenarios drives the translated providers through a front
// end with the OpenAI SDK: plain chat, an accumulated stream whose first
// text chunk must reach the client while the upstream holds the second
// one back, and a streamed tool call.
func runTranslateScenarios(t *testing.T, front string, up *translateUpstream) {
	client := openai.NewClient(
		option.WithBaseURL(front+"/v1/"),
		option.WithAPIKey(userKey),
		option.WithMaxRetries(0),
		option.WithRequestTimeout(requestTimeout),
	)
	for _, tc := range translateCases() {
		tc := tc
		t.Run(tc.name, func(t *testing.T) {
			t.Run("chat", func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
				defer cancel()
				res, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
					Model:    tc.model,
					Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be terse."), openai.UserMessage("hello sdk")},
				})
				require.NoError(t, err)
				require.Len(t, res.Choices, 1)
				assert.Equal(t, chatReply(), res.Choices[0].Message.Content)
				assert.Equal(t, "stop", res.Choices[0].FinishReason)
				assert.Equal(t, tc.model, res.Model)
				assert.Equal(t, tc.usage(4, translateChunks), usageOf(res.Usage))
			})

			t.Run("stream incremental", func(t *testing.T) {
				out := readTranslatedStream(t, client, up, tc.model, streamGateFallback)
				require.Len(t, out.acc.Choices, 1)
				assert.Equal(t, chatReply(), out.acc.Choices[0].Message.Content)
				assert.Equal(t, streamPieces(), out.pieces, "one client chunk per upstream text piece")
				assert.Equal(t, "stop", out.acc.Choices[0].FinishReason)
				assert.Equal(t, tc.usage(2, translateChunks), usageOf(out.acc.Usage))
				assert.False(t, out.timedOut, "the upstream waited %s for the client to read the first text: the stream was buffered", streamGateFallback)
				assert.True(t, out.firstEarly, "the first text reached the client only after the upstream wrote the second: the stream was buffered")
			})

			t.Run("stream tool call", func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
				defer cancel()
				stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
					Model:    tc.model,
					Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What's the weather in Paris?")},
					Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
						Name: "get_weather",
						Parameters: openai.FunctionParameters{
							"type":       "object",
							"properties": map[string]interface{}{"city": map[string]interface{}{"type": "string"}},
						},
					})},
					StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
				})
				defer stream.Close()
				acc := openai.ChatCompletionAccumulator{}
				for stream.Next() {
					require.True(t, acc.AddChunk(stream.Current()))
				}
				require.NoError(t, stream.Err())
				require.Len(t, acc.Choices, 1)
				assert.Equal(t, "tool_calls", acc.Choices[0].FinishReason)
				require.Len(t, acc.Choices[0].Message.ToolCalls, 1)
				call := acc.Choices[0].Message.ToolCalls[0]
				assert.NotEmpty(t, call.ID)
				assert.Equal(t, "get_weather", call.Function.Name)
				assert.JSONEq(t, mockupstream.ToolArguments(), call.Function.Arguments)
				assert.Equal(t, tc.usage(5, mockupstream.ToolOutputTokens), usageOf(acc.Usage))
			})
		})
	}

	t.Run("provider keys upstream", func(t *testing.T) {
		for _, r := range up.mock.Requests() {
			for name, values := range r.Header {
				for _, v := range values {
					assert.NotContains(t, v, userKey, "%s %s header %s", r.Method, r.Path, name)
				}
			}
			switch r.Path {
			case "/v1/messages":
				assert.Equal(t, translateAnthKey, r.Header.Get("X-Api-Key"))
			case "/v1beta/models/gemini-test:generateContent", "/v1beta/models/gemini-test:streamGenerateContent":
				assert.Equal(t, translateGemKey, r.Header.Get("X-Goog-Api-Key"))
			}
		}
	})
}

// translatedStream is what the client saw of one gated translated stream.
type translatedStream struct {
	acc        openai.ChatCompletionAccumulator
	pieces     []string // content deltas, in order
	firstEarly bool     // the first text arrived while the upstream held the second back
	timedOut   bool     // the upstream gave up waiting for the client
}

// readTranslatedStream arms the upstream's gate and reads a whole
// streamed chat for model through the SDK's accumulator.
func readTranslatedStream(t *testing.T, client openai.Client, up *translateUpstream, model string, fallback time.Duration) translatedStream {
	t.Helper()
	gate := up.armGate(fallback)
	defer gate.clientReceivedFirst() // never leave the upstream waiting
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model:         model,
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("stream please")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	defer stream.Close()
	var out translatedStream
	sawFirst := false
	for stream.Next() {
		chunk := stream.Current()
		require.True(t, out.acc.AddChunk(chunk), "accumulator refused %s", chunk.RawJSON())
		assert.Equal(t, model, chunk.Model)
		if len(chunk.Choices) > 0 && chunk.Choices[0].Delta.Content != "" {
			if !sawFirst {
				sawFirst = true
				out.firstEarly = gate.clientReceivedFirst()
			}
			out.pieces = append(out.pieces, chunk.Choices[0].Delta.Content)
		}
	}
	require.NoError(t, stream.Err())
	gate.clientReceivedFirst()
	select {
	case <-gate.upstreamDone:
	case <-time.After(requestTimeout):
		t.Fatal("the upstream never finished the stream")
	}
	require.True(t, sawFirst, "no content chunk arrived")
	out.timedOut = gate.timedOut
	return out
}

// TestYaegiTranslateGateDetectsBuffering proves the translated-stream
// gate can fail: through a front end that buffers the whole response the
// first text must be reported late; through the plain handler, early.
func TestYaegiTranslateGateDetectsBuffering(t *testing.T) {
	p := loadInterpreted(t)
	up := newTranslateUpstream(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h, err := p.build(ctx, &nextHandler{}, traefikConfig(t, translateConfig(up.srv.URL)), "llmgateway-translate-gate")
	require.NoError(t, err, "New (interpreter output: %s)", p.output.String())
	buffering := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
	for _, tc := range translateCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Run("buffering front is caught", func(t *testing.T) {
				front := httptest.NewServer(buffering)
				defer front.Close()
				client := openai.NewClient(option.WithBaseURL(front.URL+"/v1/"), option.WithAPIKey(userKey), option.WithMaxRetries(0))
				out := readTranslatedStream(t, client, up, tc.model, 200*time.Millisecond)
				assert.Equal(t, streamPieces(), out.pieces)
				assert.True(t, out.timedOut, "the upstream should have waited in vain")
				assert.False(t, out.firstEarly, "a buffered stream must be detected")
			})
			t.Run("flushing front passes", func(t *testing.T) {
				front := httptest.NewServer(h)
				defer front.Close()
				client := openai.NewClient(option.WithBaseURL(front.URL+"/v1/"), option.WithAPIKey(userKey), option.WithMaxRetries(0))
				out := readTranslatedStream(t, client, up, tc.model, streamGateFallback)
				assert.Equal(t, streamPieces(), out.pieces)
				assert.False(t, out.timedOut)
				assert.True(t, out.firstEarly)
			})
		})
	}
}

// TestYaegiInterpreterTranslate runs the translated-provider scenarios
// through the plugin interpreted by Yaegi (part of the Yaegi gate).
func TestYaegiInterpreterTranslate(t *testing.T) {
	p := loadInterpreted(t)
	up := newTranslateUpstream(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h, err := p.build(ctx, &nextHandler{}, traefikConfig(t, translateConfig(up.srv.URL)), "llmgateway-translate")
	require.NoError(t, err, "New (interpreter output: %s)", p.output.String())
	front := httptest.NewServer(h)
	defer front.Close()
	runTranslateScenarios(t, front.URL, up)
	runMessagesScenarios(t, front.URL, up)
	runInboundScenarios(t, front.URL)
	if t.Failed() {
		t.Logf("interpreter output:\n%s", p.output.String())
	}
}

// TestRealTraefikTranslate runs the translated-provider scenarios through
// a real Traefik v3.6.12 process loading the plugin (LLMGW_REAL_TRAEFIK=1).
func TestRealTraefikTranslate(t *testing.T) {
	bin := traefikBinary(t)
	up := newTranslateUpstream(t)
	dummyHits := &nextHandler{}
	dummy := httptest.NewServer(dummyHits)
	defer dummy.Close()
	rt := startRealTraefik(t, bin, translateConfig(up.srv.URL), dummy.URL)
	runTranslateScenarios(t, rt.base, up)
	runMessagesScenarios(t, rt.base, up)
	runInboundScenarios(t, rt.base)
	assert.Zero(t, dummyHits.hits.Load(), "the gateway's routes must not reach the router's service")
}
