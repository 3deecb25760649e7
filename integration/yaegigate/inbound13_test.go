package yaegigate_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	ollama "github.com/ollama/ollama/api"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmgateway/llmgateway/integration/mockupstream"
)

// The Responses and Ollama APIs through the plugin (interpreted, and in
// a real Traefik): openai-go's Responses.New and NewStreaming, and an
// Ollama chat streamed as NDJSON, on all three provider types.
func runInboundScenarios(t *testing.T, front string) {
	client := openai.NewClient(option.WithBaseURL(front+"/v1/"), option.WithAPIKey(userKey),
		option.WithMaxRetries(0), option.WithRequestTimeout(requestTimeout))
	for _, model := range []string{"anth/claude-test", "gem/gemini-test", upstreamModel} {
		model := model
		t.Run("responses "+model, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
			defer cancel()
			params := responses.ResponseNewParams{
				Model: model,
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hello sdk")},
			}
			resp, err := client.Responses.New(ctx, params)
			require.NoError(t, err)
			assert.Equal(t, chatReply(), resp.OutputText())
			assert.Equal(t, responses.ResponseStatusCompleted, resp.Status)
			assert.Positive(t, resp.Usage.OutputTokens)

			stream := client.Responses.NewStreaming(ctx, params)
			defer stream.Close()
			text, completed := "", false
			for stream.Next() {
				ev := stream.Current()
				switch ev.Type {
				case "response.output_text.delta":
					text += ev.Delta
				case "response.completed":
					completed = true
					assert.NotEmpty(t, ev.Response.ID)
				}
			}
			require.NoError(t, stream.Err())
			assert.True(t, completed, "no response.completed")
			assert.Equal(t, mockupstream.ReplyText(translateChunks), text)
		})
		t.Run("ollama chat "+model, func(t *testing.T) {
			body, _ := json.Marshal(map[string]interface{}{"model": model, "messages": []interface{}{map[string]interface{}{"role": "user", "content": "stream please"}}})
			req, err := http.NewRequest(http.MethodPost, front+"/api/chat", bytes.NewReader(body))
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+userKey)
			resp, err := (&http.Client{Timeout: requestTimeout}).Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Equal(t, "application/x-ndjson", resp.Header.Get("Content-Type"))
			sc := bufio.NewScanner(resp.Body)
			var text strings.Builder
			lines, done := 0, false
			for sc.Scan() {
				var line struct {
					Message struct {
						Content string `json:"content"`
					} `json:"message"`
					Done  bool   `json:"done"`
					Error string `json:"error"`
				}
				require.NoError(t, json.Unmarshal(sc.Bytes(), &line), "line %q", sc.Text())
				require.Empty(t, line.Error)
				require.False(t, done, "a line after done")
				text.WriteString(line.Message.Content)
				done = line.Done
				lines++
			}
			assert.True(t, done, "the stream's last line says done")
			assert.Equal(t, chatReply(), text.String())
			assert.Greater(t, lines, 2)
		})
		t.Run("ollama client "+model, func(t *testing.T) {
			u, err := url.Parse(front)
			require.NoError(t, err)
			oc := ollama.NewClient(u, &http.Client{Timeout: requestTimeout, Transport: ollamaBearer{}})
			ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
			defer cancel()
			msgs := []ollama.Message{{Role: "user", Content: "hello ollama"}}
			for _, stream := range []bool{true, false} {
				stream := stream
				var text strings.Builder
				var last ollama.ChatResponse
				require.NoError(t, oc.Chat(ctx, &ollama.ChatRequest{Model: model, Messages: msgs, Stream: &stream}, func(r ollama.ChatResponse) error {
					text.WriteString(r.Message.Content)
					last = r
					return nil
				}))
				assert.Equal(t, chatReply(), text.String(), "stream %v", stream)
				assert.True(t, last.Done, "stream %v", stream)
				assert.Equal(t, "stop", last.DoneReason, "stream %v", stream)
				assert.Positive(t, last.EvalCount, "stream %v", stream)
			}
			var gen strings.Builder
			require.NoError(t, oc.Generate(ctx, &ollama.GenerateRequest{Model: model, Prompt: "hello"}, func(r ollama.GenerateResponse) error {
				gen.WriteString(r.Response)
				return nil
			}))
			assert.Equal(t, chatReply(), gen.String())
			tags, err := oc.List(ctx)
			require.NoError(t, err)
			var names []string
			for _, m := range tags.Models {
				names = append(names, m.Name)
			}
			assert.Contains(t, names, model)
			show, err := oc.Show(ctx, &ollama.ShowRequest{Model: model})
			require.NoError(t, err)
			assert.NotEmpty(t, show.Capabilities)
			if model == upstreamModel {
				emb, err := oc.Embed(ctx, &ollama.EmbedRequest{Model: model, Input: "embed me"})
				require.NoError(t, err)
				require.Len(t, emb.Embeddings, 1)
				assert.NotEmpty(t, emb.Embeddings[0])
			}
		})
	}
}

// ollamaBearer adds the gateway key to the Ollama client's requests (it
// has no key option of its own).
type ollamaBearer struct{}

func (ollamaBearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+userKey)
	return http.DefaultTransport.RoundTrip(r)
}
