package yaegigate_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmgateway/llmgateway/integration/traefikproc"
)

// realTraefikEnv enables the real-Traefik level (make integration sets it).
const realTraefikEnv = "LLMGW_REAL_TRAEFIK"

// traefikBinary returns the cached Traefik binary, or skips/fails.
func traefikBinary(t *testing.T) string {
	t.Helper()
	if os.Getenv(realTraefikEnv) != "1" {
		t.Skipf("real Traefik level skipped: set %s=1 (make integration does, after building Traefik with scripts/build-traefik.sh)", realTraefikEnv)
	}
	bin, err := traefikproc.Binary()
	if err != nil {
		t.Fatalf("%s=1 but %v", realTraefikEnv, err)
	}
	return bin
}

// realTraefik is a Traefik process serving the plugin.
type realTraefik struct {
	base string // http://127.0.0.1:PORT
}

// startRealTraefik starts Traefik (traefikproc: static config, plugins-local,
// a file-provider directory) and waits until the router answers through
// the plugin. Traefik is stopped at test end.
func startRealTraefik(t *testing.T, bin string, pluginConfig map[string]interface{}, dummyService string) *realTraefik {
	t.Helper()
	start := time.Now()
	p, err := traefikproc.Start(traefikproc.Config{
		Binary:      bin,
		WorkDir:     t.TempDir(),
		PluginDir:   pluginDir(t),
		DynamicYAML: dynamicConfigYAML(t, pluginConfig, dummyService),
		ReadyPath:   "/v1/models",
		ReadyHeader: http.Header{"Authorization": {"Bearer " + userKey}},
	})
	require.NoError(t, err, "traefik start-up")
	t.Cleanup(func() {
		_ = p.Stop()
		if t.Failed() {
			t.Logf("traefik output:\n%s", p.Logs())
		}
	})
	t.Logf("traefik %s ready on %s after %s", traefikproc.Version, p.URL, time.Since(start).Round(time.Millisecond))
	return &realTraefik{base: p.URL}
}

// TestRealTraefik runs the gateway scenarios and the official OpenAI Go
// SDK through a real Traefik v3.6.12 process loading the plugin.
func TestRealTraefik(t *testing.T) {
	bin := traefikBinary(t)
	up := newFixtureUpstream(t)
	dummyHits := &nextHandler{}
	dummy := httptest.NewServer(dummyHits)
	defer dummy.Close()

	rt := startRealTraefik(t, bin, gatewayConfig(up.URL()), dummy.URL)

	runGatewayScenarios(t, rt.base, up, dummyHits)

	t.Run("openai sdk", func(t *testing.T) {
		client := openai.NewClient(
			option.WithBaseURL(rt.base+"/v1/"),
			option.WithAPIKey(userKey),
			option.WithMaxRetries(0),
			option.WithRequestTimeout(requestTimeout),
		)
		ctx, cancel := context.WithTimeout(context.Background(), 2*requestTimeout)
		defer cancel()

		t.Run("models", func(t *testing.T) {
			page, err := client.Models.List(ctx)
			require.NoError(t, err)
			var ids []string
			for _, m := range page.Data {
				ids = append(ids, m.ID)
			}
			assert.Contains(t, ids, upstreamModel)
		})

		params := openai.ChatCompletionNewParams{
			Model:    upstreamModel,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello sdk")},
		}

		t.Run("chat", func(t *testing.T) {
			res, err := client.Chat.Completions.New(ctx, params)
			require.NoError(t, err)
			require.Len(t, res.Choices, 1)
			assert.Equal(t, chatReply(), res.Choices[0].Message.Content)
			assert.Equal(t, "stop", res.Choices[0].FinishReason)
		})

		t.Run("chat stream", func(t *testing.T) {
			stream := client.Chat.Completions.NewStreaming(ctx, params)
			defer stream.Close()
			acc := openai.ChatCompletionAccumulator{}
			chunks := 0
			for stream.Next() {
				chunk := stream.Current()
				require.True(t, acc.AddChunk(chunk), "accumulator refused chunk %d", chunks)
				chunks++
			}
			require.NoError(t, stream.Err())
			assert.GreaterOrEqual(t, chunks, upstreamChunks)
			require.Len(t, acc.Choices, 1)
			assert.Equal(t, chatReply(), acc.Choices[0].Message.Content)
			assert.Equal(t, "stop", acc.Choices[0].FinishReason)
		})

		t.Run("wrong key", func(t *testing.T) {
			bad := openai.NewClient(option.WithBaseURL(rt.base+"/v1/"), option.WithAPIKey("sk-wrong"), option.WithMaxRetries(0))
			_, err := bad.Models.List(ctx)
			var apiErr *openai.Error
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, http.StatusUnauthorized, apiErr.StatusCode)
		})
	})
	assert.Zero(t, dummyHits.hits.Load(), "the gateway's routes must not reach the router's service")
}
