package integration_test

import (
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmgateway/llmgateway/integration/gwproc"
	"github.com/llmgateway/llmgateway/integration/mockupstream"
)

// Helpers of the translation SDK tests: the environment, upstream checks
// and the stream accumulator.

type translateEnv struct {
	gw     *gwproc.Process
	mock   *mockupstream.Server
	client openai.Client
}

func startTranslateEnv(t *testing.T) *translateEnv {
	t.Helper()
	bin := buildGatewayBinary(t)
	env := &translateEnv{mock: mockupstream.New(mockupstream.Options{
		Models:          []string{"gpt-5-mini"},
		AnthropicModels: []string{"claude-test"},
		GeminiModels:    []string{"gemini-test", "gemini-3-test", "text-embedding-test", "imagen-test"},
		StrictModels:    true,
		Chunks:          trChunks,
		AnthropicAPIKey: trAnthKey,
		GeminiAPIKey:    trGemKey,
		RecordLimit:     1000,
	})}
	up := httptest.NewServer(env.mock)
	t.Cleanup(up.Close)

	provider := func(typ, base, key string, models ...string) map[string]interface{} {
		return map[string]interface{}{"type": typ, "baseUrl": base, "apiKey": key, "models": models}
	}
	knob := func(name, value string) string { return up.URL + mockupstream.PathKnobPrefix + name + "/" + value }
	cfg := map[string]interface{}{
		"providers": map[string]interface{}{
			"oa":   provider("openai", up.URL, trOpenAIKey, "gpt-5-mini"),
			"anth": provider("anthropic", up.URL, trAnthKey, "claude-test"),
			"gem":  provider("gemini", up.URL, trGemKey, "gemini-test", "gemini-3-test", "text-embedding-test", "imagen-test"),
			// Same mock, failure knobs in the base URL.
			"anthfail":  provider("anthropic", knob("error-after", "4"), trAnthKey, "claude-test"),
			"gemfail":   provider("gemini", knob("error-after", "1"), trGemKey, "gemini-test"),
			"anth429":   provider("anthropic", knob("status", "429"), trAnthKey, "claude-test"),
			"gem429":    provider("gemini", knob("status", "429"), trGemKey, "gemini-test"),
			"anthstall": provider("anthropic", knob("stall-after", "5"), trAnthKey, "claude-test"),
			"gemstall":  provider("gemini", knob("stall-after", "2"), trGemKey, "gemini-test"),
			// Streams that end early without error or terminator (5
			// Anthropic events: no message_stop; 2 Gemini chunks: no
			// finishReason).
			"anthcut": provider("anthropic", knob("truncate-after", "5"), trAnthKey, "claude-test"),
			"gemcut":  provider("gemini", knob("truncate-after", "2"), trGemKey, "gemini-test"),
			// A provider key the upstream refuses.
			"anthbadkey": provider("anthropic", up.URL, "sk-ant-wrong", "claude-test"),
			"gembadkey":  provider("gemini", up.URL, "gem-wrong", "gemini-test"),
			// Model lists discovered from the mock's own listings.
			"anthdisc": map[string]interface{}{"type": "anthropic", "baseUrl": up.URL, "apiKey": trAnthKey, "discovery": true},
			"gemdisc":  map[string]interface{}{"type": "gemini", "baseUrl": up.URL, "apiKey": trGemKey, "discovery": true},
			// Gemini framing its SSE lines with \r\n.
			"gemcrlf": provider("gemini", knob("sse-crlf", "1"), trGemKey, "gemini-test"),
		},
		"groups": map[string]interface{}{"default": map[string]interface{}{"providers": []string{}}},
		"users": map[string]interface{}{"inline": []map[string]interface{}{
			{"name": "carol", "group": "default", "apiKey": trUserKey},
		}},
	}
	env.gw = startGateway(t, bin, cfg)
	env.client = openai.NewClient(
		option.WithBaseURL(env.gw.URL+"/v1/"),
		option.WithAPIKey(trUserKey),
		option.WithMaxRetries(0),
	)
	return env
}

// wantUsage is the OpenAI usage a translated reply must report.
type wantUsage struct {
	prompt, completion, total, cached, reasoning int64
}

// anthropicUsageFor: prompt_tokens = input_tokens + cache creation + cache
// read; cached_tokens = cache read.
func anthropicUsageFor(promptWords, output int) wantUsage {
	p := int64(promptWords + mockupstream.AnthropicCacheCreationTokens + mockupstream.AnthropicCacheReadTokens)
	return wantUsage{prompt: p, completion: int64(output), total: p + int64(output), cached: mockupstream.AnthropicCacheReadTokens}
}

// geminiUsageFor: prompt_tokens = promptTokenCount; completion_tokens =
// candidatesTokenCount + thoughtsTokenCount; reasoning_tokens = thoughts.
func geminiUsageFor(promptWords, output int) wantUsage {
	c := int64(output + mockupstream.GeminiThoughtsTokens)
	return wantUsage{prompt: int64(promptWords), completion: c, total: int64(promptWords) + c, reasoning: mockupstream.GeminiThoughtsTokens}
}

func assertUsage(t *testing.T, want wantUsage, got openai.CompletionUsage) {
	t.Helper()
	assert.Equal(t, want.prompt, got.PromptTokens, "prompt_tokens")
	assert.Equal(t, want.completion, got.CompletionTokens, "completion_tokens")
	assert.Equal(t, want.total, got.TotalTokens, "total_tokens")
	assert.Equal(t, want.cached, got.PromptTokensDetails.CachedTokens, "prompt_tokens_details.cached_tokens")
	assert.Equal(t, want.reasoning, got.CompletionTokensDetails.ReasoningTokens, "completion_tokens_details.reasoning_tokens")
}

// upstreamKind says which wire format a test talks to upstream.
type upstreamKind struct {
	name  string // subtest name
	model string // client model id
	usage func(promptWords, output int) wantUsage
	// check asserts the recorded upstream request of a chat call.
	check func(t *testing.T, rec mockupstream.Recorded, stream bool) map[string]interface{}
}

func translateKinds() []upstreamKind {
	return []upstreamKind{
		{name: "anthropic", model: trAnthModel, usage: anthropicUsageFor, check: checkAnthropicUpstream},
		{name: "gemini", model: trGemModel, usage: geminiUsageFor, check: checkGeminiUpstream},
	}
}

// lastChatTo returns the most recent recorded chat request of a kind.
func lastChatTo(t *testing.T, m *mockupstream.Server, kind string) mockupstream.Recorded {
	t.Helper()
	reqs := m.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		r := reqs[i]
		if kind == "anthropic" && r.Path == "/v1/messages" {
			return r
		}
		if kind == "gemini" && strings.HasPrefix(r.Path, "/v1beta/models/gemini-test:") {
			return r
		}
	}
	t.Fatalf("the upstream never received a %s chat request (%d recorded)", kind, len(reqs))
	return mockupstream.Recorded{}
}

func decodeBody(t *testing.T, rec mockupstream.Recorded) map[string]interface{} {
	t.Helper()
	var body map[string]interface{}
	require.NoError(t, json.Unmarshal(rec.Body, &body), "upstream body: %s", rec.Body)
	return body
}

// checkAnthropicUpstream: the Messages API path, the provider key in
// x-api-key, anthropic-version, no client credential, and a translated
// body (model without the provider prefix, max_tokens, no OpenAI-only
// fields, no system role in messages).
func checkAnthropicUpstream(t *testing.T, rec mockupstream.Recorded, stream bool) map[string]interface{} {
	t.Helper()
	assert.Equal(t, "POST", rec.Method)
	assert.Equal(t, "/v1/messages", rec.Path)
	assert.Equal(t, trAnthKey, rec.Header.Get("X-Api-Key"), "provider key in x-api-key")
	assert.NotEmpty(t, rec.Header.Get("Anthropic-Version"), "anthropic-version header")
	assert.Empty(t, rec.Header.Get("Authorization"), "no Authorization header to Anthropic")
	body := decodeBody(t, rec)
	assert.Equal(t, "claude-test", body["model"])
	maxTokens, ok := body["max_tokens"].(float64)
	assert.True(t, ok && maxTokens >= trChunks, "max_tokens set (got %v)", body["max_tokens"])
	if stream {
		assert.Equal(t, true, body["stream"], "stream: true upstream")
	} else {
		assert.NotEqual(t, true, body["stream"], "no stream upstream")
	}
	for _, k := range []string{"stream_options", "n", "max_completion_tokens"} {
		assert.NotContains(t, body, k)
	}
	msgs, _ := body["messages"].([]interface{})
	require.NotEmpty(t, msgs)
	for i, m := range msgs {
		role := m.(map[string]interface{})["role"]
		assert.Contains(t, []interface{}{"user", "assistant"}, role, "messages[%d].role", i)
	}
	return body
}

// checkGeminiUpstream: the generateContent / streamGenerateContent?alt=sse
// path, the provider key in x-goog-api-key (never in the URL), no client
// credential, and a GenerateContentRequest body.
func checkGeminiUpstream(t *testing.T, rec mockupstream.Recorded, stream bool) map[string]interface{} {
	t.Helper()
	assert.Equal(t, "POST", rec.Method)
	if stream {
		assert.Equal(t, "/v1beta/models/gemini-test:streamGenerateContent", rec.Path)
		q, _ := url.ParseQuery(rec.RawQuery)
		assert.Equal(t, "sse", q.Get("alt"), "alt=sse")
	} else {
		assert.Equal(t, "/v1beta/models/gemini-test:generateContent", rec.Path)
	}
	assert.NotContains(t, rec.RawQuery, trGemKey, "the key must travel in the header, not the URL")
	assert.Equal(t, trGemKey, rec.Header.Get("X-Goog-Api-Key"), "provider key in x-goog-api-key")
	assert.Empty(t, rec.Header.Get("Authorization"), "no Authorization header to Gemini")
	body := decodeBody(t, rec)
	assert.Contains(t, body, "contents")
	for _, k := range []string{"model", "messages", "stream", "stream_options"} {
		assert.NotContains(t, body, k)
	}
	return body
}

// weatherTool is the one tool the tool-call tests declare.
func weatherTool() openai.ChatCompletionToolUnionParam {
	return openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
		Name:        "get_weather",
		Description: openai.String("Current weather for a city"),
		Parameters: openai.FunctionParameters{
			"type":       "object",
			"properties": map[string]interface{}{"city": map[string]interface{}{"type": "string"}},
			"required":   []string{"city"},
		},
	})
}

// accumulate drains a stream into an accumulator, checking every chunk.
func accumulate(t *testing.T, stream interface {
	Next() bool
	Current() openai.ChatCompletionChunk
	Err() error
}, model string) (openai.ChatCompletionAccumulator, int, string, []openai.FinishedChatCompletionToolCall) {
	t.Helper()
	acc := openai.ChatCompletionAccumulator{}
	chunks := 0
	finished := ""
	var tools []openai.FinishedChatCompletionToolCall
	for stream.Next() {
		chunk := stream.Current()
		require.True(t, acc.AddChunk(chunk), "accumulator rejected chunk %d: %s", chunks, chunk.RawJSON())
		assert.Equal(t, model, chunk.Model, "chunk %d model", chunks)
		assert.Equal(t, "chat.completion.chunk", string(chunk.Object), "chunk %d object", chunks)
		chunks++
		if c, ok := acc.JustFinishedContent(); ok {
			finished = c
		}
		if tc, ok := acc.JustFinishedToolCall(); ok {
			tools = append(tools, tc)
		}
	}
	return acc, chunks, finished, tools
}

func lastGeminiEmbed(t *testing.T, m *mockupstream.Server) mockupstream.Recorded {
	t.Helper()
	reqs := m.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if strings.HasPrefix(reqs[i].Path, "/v1beta/models/text-embedding-test:") {
			return reqs[i]
		}
	}
	t.Fatal("the upstream never received a Gemini embeddings request")
	return mockupstream.Recorded{}
}

func assertVector(t *testing.T, want []float32, got []float64) {
	t.Helper()
	require.Len(t, got, len(want))
	for j := range want {
		assert.InDelta(t, float64(want[j]), got[j], 1e-6, "component %d", j)
	}
}

func mustJSON(t *testing.T, v interface{}) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}
