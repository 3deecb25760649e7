package integration_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmgateway/llmgateway/integration/gwproc"
	"github.com/llmgateway/llmgateway/integration/mockupstream"
)

const (
	sdkUserKey     = "sk-alice-client-key"
	sdkUpstreamKey = "sk-upstream-provider-key"
	sdkChunks      = 4
	sdkStallAfter  = 3
)

// sdkEnv is the gateway binary running in front of two mock upstreams:
// "mock" (normal) and "slowmock" (stalls every stream after
// sdkStallAfter events until the client goes away).
type sdkEnv struct {
	gw     *gwproc.Process
	mock   *mockupstream.Server
	slow   *mockupstream.Server
	client openai.Client
}

// buildGatewayBinary compiles cmd/llmgateway into a temp dir.
func buildGatewayBinary(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin, err := gwproc.Build(ctx, t.TempDir())
	require.NoError(t, err)
	return bin
}

// startGateway runs the built binary with cfg (the config block as a
// generic value) and stops it when the test ends, printing its output if
// the test failed.
func startGateway(t *testing.T, bin string, cfg map[string]interface{}) *gwproc.Process {
	t.Helper()
	raw, err := json.Marshal(cfg)
	require.NoError(t, err)
	gw, err := gwproc.StartGateway(bin, t.TempDir(), raw)
	require.NoError(t, err)
	t.Cleanup(func() {
		if err := gw.Stop(); err != nil {
			t.Errorf("stopping gateway: %v", err)
		}
		if t.Failed() {
			t.Logf("gateway output:\n%s", gw.Logs())
		}
	})
	return gw
}

func startSDKEnv(t *testing.T) *sdkEnv {
	t.Helper()
	bin := buildGatewayBinary(t)

	env := &sdkEnv{
		mock: mockupstream.New(mockupstream.Options{Models: []string{"gpt-5-mini", "text-embedding-3-small"}, Chunks: sdkChunks}),
		slow: mockupstream.New(mockupstream.Options{Models: []string{"stall-model"}, Chunks: sdkChunks}),
	}
	up := httptest.NewServer(env.mock)
	t.Cleanup(up.Close)
	slowUp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Set(mockupstream.HeaderStallAfter, fmt.Sprint(sdkStallAfter))
		env.slow.ServeHTTP(w, r)
	}))
	t.Cleanup(slowUp.Close)

	cfg := map[string]interface{}{
		"providers": map[string]interface{}{
			"mock":     map[string]interface{}{"type": "openai", "baseUrl": up.URL, "apiKey": sdkUpstreamKey, "models": []string{"gpt-5-mini", "text-embedding-3-small"}},
			"slowmock": map[string]interface{}{"type": "openai", "baseUrl": slowUp.URL, "apiKey": sdkUpstreamKey, "models": []string{"stall-model"}},
		},
		"groups": map[string]interface{}{"default": map[string]interface{}{"providers": []string{}}},
		"users": map[string]interface{}{"inline": []map[string]interface{}{
			{"name": "alice", "group": "default", "apiKey": sdkUserKey},
		}},
	}
	gw := startGateway(t, bin, cfg)
	env.gw = gw
	env.client = openai.NewClient(
		option.WithBaseURL(gw.URL+"/v1/"),
		option.WithAPIKey(sdkUserKey),
		option.WithMaxRetries(0),
	)
	return env
}

// lastTo returns the most recent request the mock recorded for method and path.
func lastTo(t *testing.T, m *mockupstream.Server, method, path string) mockupstream.Recorded {
	t.Helper()
	reqs := m.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if reqs[i].Method == method && reqs[i].Path == path {
			return reqs[i]
		}
	}
	t.Fatalf("upstream never received %s %s (recorded %d requests)", method, path, len(reqs))
	return mockupstream.Recorded{}
}

func countTo(m *mockupstream.Server, method, path string) int {
	n := 0
	for _, r := range m.Requests() {
		if r.Method == method && r.Path == path {
			n++
		}
	}
	return n
}

func sdkContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestSDKOpenAIThroughBinary(t *testing.T) {
	env := startSDKEnv(t)

	t.Run("models_list", func(t *testing.T) {
		page, err := env.client.Models.List(sdkContext(t))
		require.NoError(t, err)
		var ids []string
		for _, m := range page.Data {
			ids = append(ids, m.ID)
			assert.Equal(t, "model", string(m.Object), "object of %s", m.ID)
		}
		sort.Strings(ids)
		// Bare ids plus every provider/model form.
		want := []string{
			"gpt-5-mini", "mock/gpt-5-mini", "mock/text-embedding-3-small",
			"slowmock/stall-model", "stall-model", "text-embedding-3-small",
		}
		assert.Equal(t, want, ids)
	})

	t.Run("chat_completion", func(t *testing.T) {
		resp, err := env.client.Chat.Completions.New(sdkContext(t), openai.ChatCompletionNewParams{
			Model:    "gpt-5-mini",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("say hi to the mock")},
		})
		require.NoError(t, err)
		require.Len(t, resp.Choices, 1)
		assert.Equal(t, mockupstream.ReplyText(sdkChunks), resp.Choices[0].Message.Content)
		assert.Equal(t, "stop", string(resp.Choices[0].FinishReason))
		assert.Equal(t, "gpt-5-mini", resp.Model)
		assert.Equal(t, int64(5), resp.Usage.PromptTokens)
		assert.Equal(t, int64(sdkChunks), resp.Usage.CompletionTokens)
		assert.Equal(t, int64(5+sdkChunks), resp.Usage.TotalTokens)

		got := lastTo(t, env.mock, "POST", "/v1/chat/completions")
		assert.Equal(t, "Bearer "+sdkUpstreamKey, got.Header.Get("Authorization"))
		var body struct {
			Model string `json:"model"`
		}
		require.NoError(t, json.Unmarshal(got.Body, &body))
		assert.Equal(t, "gpt-5-mini", body.Model)
	})

	t.Run("chat_stream_accumulated", func(t *testing.T) {
		stream := env.client.Chat.Completions.NewStreaming(sdkContext(t), openai.ChatCompletionNewParams{
			Model:         "gpt-5-mini",
			Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("stream to me")},
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
		})
		defer stream.Close()
		acc := openai.ChatCompletionAccumulator{}
		chunks := 0
		var finished string
		for stream.Next() {
			chunk := stream.Current()
			require.True(t, acc.AddChunk(chunk), "accumulator rejected chunk %d: %s", chunks, chunk.RawJSON())
			chunks++
			if content, ok := acc.JustFinishedContent(); ok {
				finished = content
			}
		}
		require.NoError(t, stream.Err())
		// role + content chunks + finish + usage; [DONE] is not a chunk.
		assert.Equal(t, 1+sdkChunks+1+1, chunks)
		require.Len(t, acc.Choices, 1)
		assert.Equal(t, mockupstream.ReplyText(sdkChunks), acc.Choices[0].Message.Content)
		assert.Equal(t, mockupstream.ReplyText(sdkChunks), finished)
		assert.Equal(t, "stop", string(acc.Choices[0].FinishReason))
		assert.Equal(t, int64(3), acc.Usage.PromptTokens)
		assert.Equal(t, int64(sdkChunks), acc.Usage.CompletionTokens)
		assert.Equal(t, int64(3+sdkChunks), acc.Usage.TotalTokens)

		got := lastTo(t, env.mock, "POST", "/v1/chat/completions")
		assert.Contains(t, string(got.Body), `"stream":true`)
		assert.Equal(t, "Bearer "+sdkUpstreamKey, got.Header.Get("Authorization"))
	})

	t.Run("chat_stream_without_usage_option", func(t *testing.T) {
		// The SDK's default: no stream_options. The gateway asks the
		// upstream for usage (to account the stream) and the client still
		// gets the stream it asked for: no usage chunk, no "usage" member.
		stream := env.client.Chat.Completions.NewStreaming(sdkContext(t), openai.ChatCompletionNewParams{
			Model:    "gpt-5-mini",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("stream to me")},
		})
		defer stream.Close()
		acc := openai.ChatCompletionAccumulator{}
		chunks := 0
		for stream.Next() {
			chunk := stream.Current()
			require.True(t, acc.AddChunk(chunk))
			assert.NotContains(t, chunk.RawJSON(), `"usage"`, "chunk %d", chunks)
			chunks++
		}
		require.NoError(t, stream.Err())
		assert.Equal(t, 1+sdkChunks+1, chunks, "role + content chunks + finish, no usage chunk")
		assert.Equal(t, mockupstream.ReplyText(sdkChunks), acc.Choices[0].Message.Content)
		assert.Equal(t, int64(0), acc.Usage.TotalTokens)

		got := lastTo(t, env.mock, "POST", "/v1/chat/completions")
		assert.True(t, bytes.HasSuffix(got.Body, []byte(`,"stream_options":{"include_usage":true}}`)), "upstream body %s", got.Body)
	})

	t.Run("chat_stream_relayed_before_upstream_ends", func(t *testing.T) {
		// slowmock sends sdkStallAfter events and then holds the stream
		// open. The client can only see them if the gateway flushes each
		// event as it arrives; a buffering relay would leave Next blocked
		// until the context deadline.
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		stream := env.client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
			Model:    "stall-model",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hold on")},
		})
		defer stream.Close()
		acc := openai.ChatCompletionAccumulator{}
		for i := 0; i < sdkStallAfter; i++ {
			require.True(t, stream.Next(), "event %d never arrived: %v", i, stream.Err())
			require.True(t, acc.AddChunk(stream.Current()))
		}
		require.NoError(t, ctx.Err(), "events arrived only after the deadline")
		assert.Equal(t, mockupstream.ReplyText(sdkStallAfter-1), acc.Choices[0].Message.Content)
		cancel()
		assert.False(t, stream.Next(), "a stalled stream delivered another event")
	})

	t.Run("embeddings", func(t *testing.T) {
		resp, err := env.client.Embeddings.New(sdkContext(t), openai.EmbeddingNewParams{
			Model:          "text-embedding-3-small",
			Input:          openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"alpha beta", "gamma"}},
			EncodingFormat: openai.EmbeddingNewParamsEncodingFormatFloat,
		})
		require.NoError(t, err)
		require.Len(t, resp.Data, 2)
		for i, in := range []string{"alpha beta", "gamma"} {
			want := mockupstream.Vector(in, 8)
			require.Len(t, resp.Data[i].Embedding, len(want))
			assert.Equal(t, int64(i), resp.Data[i].Index)
			for j := range want {
				assert.InDelta(t, float64(want[j]), resp.Data[i].Embedding[j], 1e-6, "data[%d][%d]", i, j)
			}
		}
		assert.Equal(t, int64(3), resp.Usage.PromptTokens)
		assert.Equal(t, int64(3), resp.Usage.TotalTokens)
		got := lastTo(t, env.mock, "POST", "/v1/embeddings")
		assert.Equal(t, "Bearer "+sdkUpstreamKey, got.Header.Get("Authorization"))
	})

	t.Run("wrong_key_401", func(t *testing.T) {
		before := countTo(env.mock, "POST", "/v1/chat/completions")
		bad := openai.NewClient(option.WithBaseURL(env.gw.URL+"/v1/"), option.WithAPIKey("sk-wrong"), option.WithMaxRetries(0))
		_, err := bad.Chat.Completions.New(sdkContext(t), openai.ChatCompletionNewParams{
			Model:    "gpt-5-mini",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
		})
		var apiErr *openai.Error
		require.True(t, errors.As(err, &apiErr), "want *openai.Error, got %T %v", err, err)
		assert.Equal(t, http.StatusUnauthorized, apiErr.StatusCode)
		assert.NotEmpty(t, apiErr.Message)
		assert.Equal(t, before, countTo(env.mock, "POST", "/v1/chat/completions"), "an unauthenticated request reached the upstream")

		_, err = bad.Models.List(sdkContext(t))
		require.True(t, errors.As(err, &apiErr), "models: want *openai.Error, got %T %v", err, err)
		assert.Equal(t, http.StatusUnauthorized, apiErr.StatusCode)
	})

	t.Run("x_api_key_auth", func(t *testing.T) {
		req, err := http.NewRequest("GET", env.gw.URL+"/v1/models", nil)
		require.NoError(t, err)
		req.Header.Set("x-api-key", sdkUserKey)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode)
	})

	t.Run("raw_body_byte_exact", func(t *testing.T) {
		// Unknown fields, a 20-digit integer and odd spacing must reach the
		// upstream untouched; only "model" may change.
		const tail = `, "messages": [ {"role":"user","content":"exact bytes"} ],` +
			"\n  \"x_vendor_extension\": {\"keep\": [1, 2.50, null], \"big\": 12345678901234567890},\n" +
			`  "seed": 98765432109876543210 }`
		cases := []struct {
			name, sent, upstream string
		}{
			{"bare_model", `{"model":"gpt-5-mini"` + tail, `{"model":"gpt-5-mini"` + tail},
			{"prefixed_model", `{"model":"mock/gpt-5-mini"` + tail, `{"model":"gpt-5-mini"` + tail},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				req, err := http.NewRequest("POST", env.gw.URL+"/v1/chat/completions", strings.NewReader(tc.sent))
				require.NoError(t, err)
				req.Header.Set("Authorization", "Bearer "+sdkUserKey)
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				require.Equal(t, http.StatusOK, resp.StatusCode, "body: %s", body)
				assert.Contains(t, string(body), mockupstream.ReplyText(sdkChunks))

				got := lastTo(t, env.mock, "POST", "/v1/chat/completions")
				if !bytes.Equal([]byte(tc.upstream), got.Body) {
					t.Errorf("upstream body not byte-exact\n got %q\nwant %q", got.Body, tc.upstream)
				}
			})
		}
	})

	t.Run("client_key_never_upstream", func(t *testing.T) {
		reqs := append(env.mock.Requests(), env.slow.Requests()...)
		require.NotEmpty(t, reqs)
		for _, r := range reqs {
			for name, values := range r.Header {
				for _, v := range values {
					assert.NotContains(t, v, sdkUserKey, "%s %s header %s", r.Method, r.Path, name)
				}
			}
			assert.NotContains(t, string(r.Body), sdkUserKey, "%s %s body", r.Method, r.Path)
		}
	})
}

// TestSDKStreamTokenBudgetThroughBinary: streams from the SDK, which does
// not ask for usage by default, are accounted: a tokensPerDay budget runs
// out after the number of streams the upstream's reported usage allows.
// heldBack reports whether err is a budget refusal that only the holds
// of requests in flight cause (it names a non-zero amount reserved).
func heldBack(err error) bool {
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusTooManyRequests {
		return false
	}
	return strings.Contains(apiErr.Message, "reserved by requests in flight") &&
		!strings.Contains(apiErr.Message, " 0 reserved by requests in flight")
}

func TestSDKStreamTokenBudgetThroughBinary(t *testing.T) {
	bin := buildGatewayBinary(t)
	mock := mockupstream.New(mockupstream.Options{Models: []string{"gpt-5-mini"}, Chunks: sdkChunks})
	up := httptest.NewServer(mock)
	t.Cleanup(up.Close)
	// "stream to me": 3 prompt tokens and sdkChunks completion tokens a
	// stream. Each stream reserves ceil(body bytes / 4) + its
	// max_completion_tokens while it runs: the SDK's body is measured
	// first, and the budget fits three reservations after two streams'
	// usage, not a fourth after three.
	perStream := 3 + sdkChunks
	const maxOut = 16
	params := openai.ChatCompletionNewParams{
		Model:               "gpt-5-mini",
		Messages:            []openai.ChatCompletionMessageParamUnion{openai.UserMessage("stream to me")},
		MaxCompletionTokens: openai.Int(maxOut),
	}
	bodyBytes := make(chan int, 1)
	recorder := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodyBytes <- len(b)
		http.Error(w, `{"error":{"message":"measured"}}`, http.StatusTeapot)
	}))
	t.Cleanup(recorder.Close)
	measure := openai.NewClient(option.WithBaseURL(recorder.URL+"/v1/"), option.WithAPIKey(sdkUserKey), option.WithMaxRetries(0))
	ms := measure.Chat.Completions.NewStreaming(sdkContext(t), params)
	for ms.Next() {
	}
	_ = ms.Close()
	reserved := (<-bodyBytes+3)/4 + maxOut
	gw := startGateway(t, bin, map[string]interface{}{
		"providers": map[string]interface{}{
			"mock": map[string]interface{}{"type": "openai", "baseUrl": up.URL, "apiKey": sdkUpstreamKey, "models": []string{"gpt-5-mini"}},
		},
		"groups": map[string]interface{}{"free": map[string]interface{}{"limits": map[string]interface{}{"tokensPerDay": 3*perStream + reserved - 1}}},
		"users":  map[string]interface{}{"inline": []map[string]interface{}{{"name": "alice", "group": "free", "apiKey": sdkUserKey}}},
	})
	client := openai.NewClient(option.WithBaseURL(gw.URL+"/v1/"), option.WithAPIKey(sdkUserKey), option.WithMaxRetries(0))
	streamOnce := func() (int, error) {
		stream := client.Chat.Completions.NewStreaming(sdkContext(t), params)
		defer stream.Close()
		chunks := 0
		for stream.Next() {
			chunks++
		}
		return chunks, stream.Err()
	}
	for i := 0; i < 3; i++ {
		// The previous stream's reservation is settled just after its
		// last event reached the client: a request that races the
		// settlement is refused with the hold still counted ("N reserved
		// by requests in flight", Retry-After 1 s), and retried here, as
		// a client would, within a deadline.
		deadline := time.Now().Add(10 * time.Second)
		chunks, err := streamOnce()
		for heldBack(err) && time.Now().Before(deadline) {
			t.Logf("stream %d raced the previous settlement, retrying: %v", i, err)
			time.Sleep(20 * time.Millisecond)
			chunks, err = streamOnce()
		}
		require.NoError(t, err, "stream %d", i)
		assert.Equal(t, 1+sdkChunks+1, chunks, "stream %d: no usage chunk", i)
	}
	_, err := streamOnce()
	var apiErr *openai.Error
	require.True(t, errors.As(err, &apiErr), "4th stream: %v", err)
	assert.Equal(t, http.StatusTooManyRequests, apiErr.StatusCode)
	assert.Contains(t, apiErr.Message, "tokensPerDay")
	assert.Equal(t, 3, countTo(mock, "POST", "/v1/chat/completions"))
}
