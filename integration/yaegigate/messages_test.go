package yaegigate_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmgateway/llmgateway/integration/mockupstream"
)

// The Anthropic Messages route through the plugin: a streamed
// /v1/messages from an anthropic-type provider (relayed, the model
// rewritten) and from gemini- and openai-type providers (translated),
// each of whose first text delta must reach the client while the
// upstream still holds the second back — the plugin form streams it
// incrementally, interpreted and in a real Traefik.

// messagesEvent is one event of an Anthropic stream.
type messagesEvent struct {
	name string
	data map[string]interface{}
}

func runMessagesScenarios(t *testing.T, front string, up *translateUpstream) {
	client := anthropic.NewClient(option.WithoutEnvironmentDefaults(), option.WithBaseURL(front+"/"),
		option.WithAPIKey(userKey), option.WithMaxRetries(0), option.WithRequestTimeout(requestTimeout))
	for _, model := range []string{"anth/claude-test", "gem/gemini-test", upstreamModel} {
		model := model
		params := anthropic.MessageNewParams{
			Model:     anthropic.Model(model),
			MaxTokens: 64,
			Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello sdk"))},
		}
		t.Run("messages sdk "+model, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
			defer cancel()
			msg, err := client.Messages.New(ctx, params)
			require.NoError(t, err)
			require.Len(t, msg.Content, 1)
			assert.Equal(t, chatReply(), msg.Content[0].Text)
			assert.Equal(t, anthropic.StopReasonEndTurn, msg.StopReason)
			assert.Equal(t, model, string(msg.Model))
			assert.Positive(t, msg.Usage.OutputTokens)

			stream := client.Messages.NewStreaming(ctx, params)
			defer stream.Close()
			var acc anthropic.Message
			for stream.Next() {
				require.NoError(t, acc.Accumulate(stream.Current()))
			}
			require.NoError(t, stream.Err())
			require.Len(t, acc.Content, 1)
			assert.Equal(t, mockupstream.ReplyText(translateChunks), acc.Content[0].Text)
			assert.Equal(t, anthropic.StopReasonEndTurn, acc.StopReason)
			assert.Positive(t, acc.Usage.InputTokens)
		})
		t.Run("messages stream "+model, func(t *testing.T) {
			gate := up.armGate(streamGateFallback)
			defer gate.clientReceivedFirst()
			body, _ := json.Marshal(map[string]interface{}{
				"model": model, "max_tokens": 64, "stream": true,
				"messages": []interface{}{map[string]interface{}{"role": "user", "content": "stream please"}},
			})
			req, err := http.NewRequest(http.MethodPost, front+"/v1/messages?beta=true", bytes.NewReader(body))
			require.NoError(t, err)
			req.Header.Set("x-api-key", userKey)
			req.Header.Set("anthropic-version", "2023-06-01")
			req.Header.Set("Content-Type", "application/json")
			client := &http.Client{Timeout: requestTimeout}
			resp, err := client.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			var events []messagesEvent
			var pieces []string
			firstEarly := false
			rd := bufio.NewReader(resp.Body)
			name := ""
			for {
				line, err := rd.ReadString('\n')
				if err != nil {
					break
				}
				line = strings.TrimRight(line, "\r\n")
				switch {
				case strings.HasPrefix(line, "event: "):
					name = strings.TrimPrefix(line, "event: ")
				case strings.HasPrefix(line, "data: "):
					var data map[string]interface{}
					require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &data), "event %s: %s", name, line)
					events = append(events, messagesEvent{name: name, data: data})
					if delta, ok := data["delta"].(map[string]interface{}); ok && delta["type"] == "text_delta" {
						if len(pieces) == 0 {
							firstEarly = gate.clientReceivedFirst()
						}
						pieces = append(pieces, delta["text"].(string))
					}
				}
			}
			gate.clientReceivedFirst()
			select {
			case <-gate.upstreamDone:
			case <-time.After(requestTimeout):
				t.Fatal("the upstream never finished the stream")
			}
			require.NotEmpty(t, events)
			assert.Equal(t, "message_start", events[0].name)
			msg, _ := events[0].data["message"].(map[string]interface{})
			assert.Equal(t, model, msg["model"], "message_start names the client's model")
			assert.Equal(t, "message_stop", events[len(events)-1].name)
			for _, ev := range events {
				assert.Equal(t, ev.name, ev.data["type"], "event name and data type")
				assert.NotEqual(t, "error", ev.name, "%v", ev.data)
			}
			assert.Equal(t, streamPieces(), pieces, "one text delta per upstream text piece")
			assert.False(t, gate.timedOut, "the upstream waited %s for the client to read the first text: the stream was buffered", streamGateFallback)
			assert.True(t, firstEarly, "the first text reached the client only after the upstream wrote the second: the stream was buffered")
		})
	}
}
