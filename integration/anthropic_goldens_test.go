package integration_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAnthropicGoldensReadBySDK feeds every golden Anthropic stream the
// gateway's translators produce (gateway/internal/translate/testdata/
// anthropic_out: OpenAI and Gemini upstream streams translated for an
// Anthropic client) to the official Anthropic Go SDK's stream decoder
// and Message.Accumulate: a stream that ended cleanly accumulates into
// a complete message, an error one ends with the error the SDK reports.
func TestAnthropicGoldensReadBySDK(t *testing.T) {
	goldens, err := filepath.Glob("../gateway/internal/translate/testdata/anthropic_out/*.golden")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(goldens), 14, "goldens found: %v", goldens)
	for _, path := range goldens {
		path := path
		name := strings.TrimSuffix(filepath.Base(path), ".golden")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = w.Write(data)
			}))
			defer srv.Close()
			client := anthropic.NewClient(option.WithoutEnvironmentDefaults(), option.WithBaseURL(srv.URL+"/"),
				option.WithAPIKey("k"), option.WithMaxRetries(0))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			stream := client.Messages.NewStreaming(ctx, anthropic.MessageNewParams{
				Model: "m", MaxTokens: 10, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("x"))},
			})
			defer stream.Close()
			var acc anthropic.Message
			events := 0
			for stream.Next() {
				require.NoError(t, acc.Accumulate(stream.Current()), "event %d: %s", events, stream.Current().RawJSON())
				events++
			}
			failed := strings.Contains(name, "error") || strings.Contains(name, "truncated")
			if failed {
				require.Error(t, stream.Err(), "the SDK must report the stream's error event")
				t.Logf("%s: %d events, then %v", name, events, stream.Err())
				return
			}
			require.NoError(t, stream.Err())
			assert.NotEmpty(t, acc.ID)
			assert.NotEmpty(t, acc.Content, "content blocks")
			assert.NotEmpty(t, string(acc.StopReason), "stop reason")
			assert.Positive(t, acc.Usage.InputTokens+acc.Usage.CacheReadInputTokens, "input tokens")
			assert.Positive(t, acc.Usage.OutputTokens, "output tokens")
			for i, b := range acc.Content {
				switch b.Type {
				case "tool_use":
					assert.NotEmpty(t, b.ID, "block %d", i)
					assert.NotEmpty(t, b.Name, "block %d", i)
					assert.NotEmpty(t, string(b.Input), "block %d: accumulated input", i)
				case "text":
					assert.NotEmpty(t, b.Text, "block %d", i)
				case "thinking":
					assert.NotEmpty(t, b.Thinking, "block %d", i)
				default:
					t.Errorf("block %d has type %q", i, b.Type)
				}
			}
			if strings.Contains(name, "tools") {
				assert.Equal(t, anthropic.StopReasonToolUse, acc.StopReason)
			}
			if strings.Contains(name, "length") {
				assert.Equal(t, anthropic.StopReasonMaxTokens, acc.StopReason)
			}
		})
	}
}
