package integration_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmgateway/llmgateway/integration/mockupstream"
)

// The official Ollama Go client (github.com/ollama/ollama/api) against
// the gateway binary's Ollama API, served from an openai-, an anthropic-
// and a gemini-type provider on one mock. Open WebUI's Ollama connection
// and the Ollama libraries talk to it like this.
const (
	olUserKey   = "sk-grace-ollama-client-key"
	olOpenAIKey = "sk-oa-ollama-upstream"
	olAnthKey   = "sk-ant-ollama-upstream"
	olGemKey    = "gem-ollama-upstream"
	olChunks    = 4
	olDims      = 8 // the mock's default embedding length
)

// bearer adds the gateway key to every request of the Ollama client,
// which has no API-key option of its own.
type bearer struct {
	key  string
	next http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.next.RoundTrip(r)
}

func newOllamaClient(t *testing.T, base, key string) *api.Client {
	t.Helper()
	u, err := url.Parse(base)
	require.NoError(t, err)
	transport := http.DefaultTransport
	if key != "" {
		transport = bearer{key: key, next: http.DefaultTransport}
	}
	return api.NewClient(u, &http.Client{Transport: transport, Timeout: 20 * time.Second})
}

// ollamaKind is one provider type behind the gateway's Ollama API.
type ollamaKind struct {
	name    string
	model   string // the chat model, as the client names it
	embed   string // an embedding model; "" when the type has none
	context int    // the chat model's context window (modelMeta)
	usage   func(promptWords, output int) wantUsage
}

func ollamaKinds() []ollamaKind {
	return []ollamaKind{
		{name: "openai", model: "oa/gpt-5-mini", embed: "oa/text-embedding-3-small", context: 111111, usage: openaiUsageFor},
		{name: "anthropic", model: "anth/claude-test", context: 222222, usage: anthropicUsageFor},
		{name: "gemini", model: "gem/gemini-test", embed: "gem/text-embedding-test", context: 333333, usage: geminiUsageFor},
	}
}

// assertGatewayDuration checks a duration the gateway measured: in
// nanoseconds, so a real round trip through it is at least 10 µs.
func assertGatewayDuration(t *testing.T, d time.Duration, what string) {
	t.Helper()
	assert.GreaterOrEqual(t, d, 10*time.Microsecond, "%s in nanoseconds", what)
	assert.Less(t, d, time.Minute, what)
}

// olChatMessages is the conversation of the chat tests: 7 prompt words.
func olChatMessages() []api.Message {
	return []api.Message{{Role: "system", Content: "Be terse."}, {Role: "user", Content: "say hi to the mock"}}
}

func TestOllamaClientThroughBinary(t *testing.T) {
	bin := buildGatewayBinary(t)
	mock := mockupstream.New(mockupstream.Options{
		Models:          []string{"gpt-5-mini", "text-embedding-3-small"},
		AnthropicModels: []string{"claude-test"},
		GeminiModels:    []string{"gemini-test", "text-embedding-test"},
		StrictModels:    true,
		Chunks:          olChunks,
		OpenAIAPIKey:    olOpenAIKey,
		AnthropicAPIKey: olAnthKey,
		GeminiAPIKey:    olGemKey,
		RecordLimit:     1000,
	})
	up := httptest.NewServer(mock)
	t.Cleanup(up.Close)
	provider := func(typ, key string, models ...string) map[string]interface{} {
		return map[string]interface{}{"type": typ, "baseUrl": up.URL, "apiKey": key, "models": models}
	}
	meta := map[string]interface{}{}
	for _, k := range ollamaKinds() {
		meta[k.model] = map[string]interface{}{"contextTokens": k.context}
	}
	gw := startGateway(t, bin, map[string]interface{}{
		"providers": map[string]interface{}{
			"oa":   provider("openai", olOpenAIKey, "gpt-5-mini", "text-embedding-3-small"),
			"anth": provider("anthropic", olAnthKey, "claude-test"),
			"gem":  provider("gemini", olGemKey, "gemini-test", "text-embedding-test"),
		},
		"modelMeta": meta,
		"groups":    map[string]interface{}{"default": map[string]interface{}{"providers": []string{}}},
		"users": map[string]interface{}{"inline": []map[string]interface{}{
			{"name": "grace", "group": "default", "apiKey": olUserKey},
		}},
	})
	client := newOllamaClient(t, gw.URL, olUserKey)

	for _, k := range ollamaKinds() {
		t.Run(k.name, func(t *testing.T) {
			want := k.usage(7, olChunks)

			t.Run("chat_stream", func(t *testing.T) {
				var lines []api.ChatResponse
				// Stream unset: Ollama's default is a stream.
				err := client.Chat(sdkContext(t), &api.ChatRequest{Model: k.model, Messages: olChatMessages()}, func(r api.ChatResponse) error {
					lines = append(lines, r)
					return nil
				})
				require.NoError(t, err)
				require.GreaterOrEqual(t, len(lines), 3, "content lines, then the final line: %+v", lines)
				var text strings.Builder
				for i, l := range lines {
					assert.Equal(t, k.model, l.Model, "line %d model", i)
					assert.Equal(t, "assistant", l.Message.Role, "line %d role", i)
					assert.Equal(t, i == len(lines)-1, l.Done, "line %d done", i)
					text.WriteString(l.Message.Content)
				}
				assert.Equal(t, mockupstream.ReplyText(olChunks), text.String())
				final := lines[len(lines)-1]
				assert.Equal(t, "stop", final.DoneReason)
				assert.Equal(t, int(want.prompt), final.PromptEvalCount, "prompt_eval_count")
				assert.Equal(t, int(want.completion), final.EvalCount, "eval_count")
				assertGatewayDuration(t, final.TotalDuration, "total_duration")
				assert.False(t, final.CreatedAt.IsZero(), "created_at")
			})

			t.Run("chat", func(t *testing.T) {
				stream := false
				var lines []api.ChatResponse
				err := client.Chat(sdkContext(t), &api.ChatRequest{Model: k.model, Messages: olChatMessages(), Stream: &stream}, func(r api.ChatResponse) error {
					lines = append(lines, r)
					return nil
				})
				require.NoError(t, err)
				require.Len(t, lines, 1, "one object when stream is false")
				r := lines[0]
				assert.True(t, r.Done)
				assert.Equal(t, "stop", r.DoneReason)
				assert.Equal(t, mockupstream.ReplyText(olChunks), r.Message.Content)
				assert.Equal(t, int(want.prompt), r.PromptEvalCount, "prompt_eval_count")
				assert.Equal(t, int(want.completion), r.EvalCount, "eval_count")
				assertGatewayDuration(t, r.TotalDuration, "total_duration")
			})

			t.Run("chat_length", func(t *testing.T) {
				if k.name == "openai" {
					t.Skip("the mock's chat route ignores the output cap, so an openai-type provider never stops on length here")
				}
				stream := false
				var r api.ChatResponse
				err := client.Chat(sdkContext(t), &api.ChatRequest{Model: k.model, Messages: olChatMessages(), Stream: &stream,
					Options: map[string]any{"num_predict": 2}}, func(got api.ChatResponse) error {
					r = got
					return nil
				})
				require.NoError(t, err)
				assert.Equal(t, "length", r.DoneReason)
				assert.Equal(t, mockupstream.ReplyText(2), r.Message.Content)
			})

			t.Run("generate", func(t *testing.T) {
				var lines []api.GenerateResponse
				err := client.Generate(sdkContext(t), &api.GenerateRequest{Model: k.model, System: "Be terse.", Prompt: "say hi to the mock"}, func(r api.GenerateResponse) error {
					lines = append(lines, r)
					return nil
				})
				require.NoError(t, err)
				require.GreaterOrEqual(t, len(lines), 3, "a stream by default: %+v", lines)
				var text strings.Builder
				for i, l := range lines {
					assert.Equal(t, i == len(lines)-1, l.Done, "line %d done", i)
					text.WriteString(l.Response)
				}
				assert.Equal(t, mockupstream.ReplyText(olChunks), text.String())
				final := lines[len(lines)-1]
				assert.Equal(t, "stop", final.DoneReason)
				assert.Equal(t, int(want.prompt), final.PromptEvalCount, "prompt_eval_count")
				assert.Equal(t, int(want.completion), final.EvalCount, "eval_count")
				assertGatewayDuration(t, final.TotalDuration, "total_duration")
			})

			t.Run("show", func(t *testing.T) {
				show, err := client.Show(sdkContext(t), &api.ShowRequest{Model: k.model})
				require.NoError(t, err)
				var lengths []string
				for key, v := range show.ModelInfo {
					if strings.HasSuffix(key, ".context_length") {
						lengths = append(lengths, key)
						assert.EqualValues(t, k.context, v, "model_info[%q]: modelMeta's contextTokens", key)
					}
				}
				require.Len(t, lengths, 1, "one <arch>.context_length in model_info: %v", show.ModelInfo)
				if arch, ok := show.ModelInfo["general.architecture"].(string); ok {
					assert.Equal(t, arch+".context_length", lengths[0], "the key follows general.architecture")
				}
				var caps []string
				for _, c := range show.Capabilities {
					caps = append(caps, string(c))
				}
				assert.Contains(t, caps, "completion")
			})

			if k.embed == "" {
				return
			}
			t.Run("embed", func(t *testing.T) {
				resp, err := client.Embed(sdkContext(t), &api.EmbedRequest{Model: k.embed, Input: []string{"one two", "three"}})
				require.NoError(t, err)
				require.Len(t, resp.Embeddings, 2)
				assert.InDeltaSlice(t, mockupstream.Vector("one two", olDims), resp.Embeddings[0], 1e-6)
				assert.InDeltaSlice(t, mockupstream.Vector("three", olDims), resp.Embeddings[1], 1e-6)
				if k.name == "openai" {
					assert.Equal(t, 3, resp.PromptEvalCount, "prompt_eval_count from usage")
				}
			})

			t.Run("embeddings_legacy", func(t *testing.T) {
				resp, err := client.Embeddings(sdkContext(t), &api.EmbeddingRequest{Model: k.embed, Prompt: "one two"})
				require.NoError(t, err)
				want := mockupstream.Vector("one two", olDims)
				require.Len(t, resp.Embedding, len(want))
				for i := range want {
					assert.InDelta(t, float64(want[i]), resp.Embedding[i], 1e-6, "component %d", i)
				}
			})
		})
	}

	t.Run("tags", func(t *testing.T) {
		list, err := client.List(sdkContext(t))
		require.NoError(t, err)
		var tags []string
		for _, m := range list.Models {
			assert.Equal(t, m.Name, m.Model, "name and model")
			tags = append(tags, strings.TrimSuffix(m.Name, ":latest"))
		}
		sort.Strings(tags)
		assert.Equal(t, gatewayModelIDs(t, gw.URL, olUserKey), tags, "/api/tags lists the caller's models, as /v1/models does")
		for _, k := range ollamaKinds() {
			assert.Contains(t, tags, k.model)
		}
	})

	t.Run("version_ps_heartbeat", func(t *testing.T) {
		v, err := client.Version(sdkContext(t))
		require.NoError(t, err)
		assert.NotEmpty(t, v)
		ps, err := client.ListRunning(sdkContext(t))
		require.NoError(t, err)
		assert.Empty(t, ps.Models, "nothing is loaded")
		require.NoError(t, client.Heartbeat(sdkContext(t)), "HEAD /")

		req, err := http.NewRequestWithContext(sdkContext(t), http.MethodGet, gw.URL+"/", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+olUserKey)
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, 200, resp.StatusCode)
		assert.Equal(t, "Ollama is running", strings.TrimSpace(string(body)))
	})

	t.Run("unknown_model", func(t *testing.T) {
		err := client.Chat(sdkContext(t), &api.ChatRequest{Model: "oa/no-such-model", Messages: olChatMessages()}, func(api.ChatResponse) error { return nil })
		var status api.StatusError
		require.True(t, errors.As(err, &status), "want a StatusError, got %v", err)
		assert.Equal(t, 404, status.StatusCode)
		assert.Contains(t, status.ErrorMessage, "oa/no-such-model", "the {\"error\": ...} envelope")
	})

	t.Run("no_key", func(t *testing.T) {
		_, err := newOllamaClient(t, gw.URL, "").List(sdkContext(t))
		var auth api.AuthorizationError
		require.True(t, errors.As(err, &auth), "want an AuthorizationError, got %v", err)
		assert.Equal(t, 401, auth.StatusCode)
	})

	t.Run("upstream", func(t *testing.T) {
		// Every model call reached its provider in its own dialect, with
		// the provider's key and never the client's.
		paths := map[string]int{}
		for _, r := range mock.Requests() {
			paths[r.Path]++
			for name, values := range r.Header {
				for _, v := range values {
					assert.NotContains(t, v, olUserKey, "client key upstream in %s", name)
				}
			}
		}
		for _, p := range []string{"/v1/chat/completions", "/v1/messages", "/v1/embeddings"} {
			assert.Positive(t, paths[p], "%s: paths %v", p, paths)
		}
	})
}

// gatewayModelIDs returns the ids GET /v1/models lists for key, sorted.
func gatewayModelIDs(t *testing.T, base, key string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/models", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&list))
	var ids []string
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	sort.Strings(ids)
	return ids
}
