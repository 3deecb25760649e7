package yaegigate_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

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
	}
}
