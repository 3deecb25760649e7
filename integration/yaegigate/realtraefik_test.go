package yaegigate_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// realTraefikEnv enables the real-Traefik level (make integration sets it).
const realTraefikEnv = "LLMGW_REAL_TRAEFIK"

// traefikVersion is the Traefik release scripts/build-traefik.sh builds.
const traefikVersion = "v3.6.12"

// traefikReadyTimeout bounds Traefik's start-up (plugin load included).
const traefikReadyTimeout = 90 * time.Second

// traefikBinary returns the cached Traefik binary, or skips/fails.
func traefikBinary(t *testing.T) string {
	t.Helper()
	if os.Getenv(realTraefikEnv) != "1" {
		t.Skipf("real Traefik level skipped: set %s=1 (make integration does, after building Traefik with scripts/build-traefik.sh)", realTraefikEnv)
	}
	if p := os.Getenv("LLMGW_TRAEFIK_BIN"); p != "" {
		return p
	}
	cache := os.Getenv("LLMGW_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		require.NoError(t, err)
		cache = filepath.Join(home, ".cache", "llmgateway")
	}
	bin := filepath.Join(cache, "traefik-"+traefikVersion)
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s=1 but no Traefik binary at %s: run scripts/build-traefik.sh (make traefik-binary)", realTraefikEnv, bin)
	}
	return bin
}

// freeLoopbackPort returns a port that was free on 127.0.0.1 a moment ago.
func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// realTraefik is a Traefik process serving the plugin.
type realTraefik struct {
	base string // http://127.0.0.1:PORT
	logs *syncBuffer
}

// startRealTraefik lays out a work dir (static config, plugins-local, a
// file-provider directory), starts Traefik there and waits until the
// router answers through the plugin. Traefik is killed at test end.
func startRealTraefik(t *testing.T, bin string, pluginConfig map[string]interface{}, dummyService string) *realTraefik {
	t.Helper()
	work := t.TempDir()
	installPlugin(t, filepath.Join(work, "plugins-local"))
	dynDir := filepath.Join(work, "dynamic")
	require.NoError(t, os.MkdirAll(dynDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dynDir, "llmgateway.yml"), dynamicConfigYAML(t, pluginConfig, dummyService), 0o644))

	port := freeLoopbackPort(t)
	static := map[string]interface{}{
		"global": map[string]interface{}{"checkNewVersion": false, "sendAnonymousUsage": false},
		"log":    map[string]interface{}{"level": "INFO"},
		"entryPoints": map[string]interface{}{
			"web": map[string]interface{}{"address": fmt.Sprintf("127.0.0.1:%d", port)},
		},
		"providers": map[string]interface{}{
			"file": map[string]interface{}{"directory": dynDir, "watch": false},
		},
		"experimental": map[string]interface{}{
			"localPlugins": map[string]interface{}{
				pluginAlias: map[string]interface{}{"moduleName": pluginModule},
			},
		},
	}
	staticYAML, err := yaml.Marshal(static)
	require.NoError(t, err)
	staticPath := filepath.Join(work, "traefik.yml")
	require.NoError(t, os.WriteFile(staticPath, staticYAML, 0o644))

	logs := &syncBuffer{}
	cmd := exec.Command(bin, "--configFile="+staticPath)
	cmd.Dir = work
	cmd.Stdout = logs
	cmd.Stderr = logs
	cmd.Env = append(os.Environ(), "HOME="+work)
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("traefik output:\n%s", logs.String())
		}
	})

	rt := &realTraefik{base: fmt.Sprintf("http://127.0.0.1:%d", port), logs: logs}
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(traefikReadyTimeout)
	start := time.Now()
	lastStatus := "no answer"
	for {
		select {
		case err := <-exited:
			t.Fatalf("traefik exited during start-up (%v); output:\n%s", err, logs.String())
		default:
		}
		req, _ := http.NewRequest(http.MethodGet, rt.base+"/v1/models", nil)
		req.Header.Set("Authorization", "Bearer "+userKey)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			lastStatus = resp.Status
			if resp.StatusCode == http.StatusOK {
				break
			}
		} else {
			lastStatus = err.Error()
		}
		if time.Now().After(deadline) {
			t.Fatalf("traefik not ready within %s (last: %s); output:\n%s", traefikReadyTimeout, lastStatus, logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("traefik %s ready on %s after %s", traefikVersion, rt.base, time.Since(start).Round(time.Millisecond))
	return rt
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
