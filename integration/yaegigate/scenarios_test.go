package yaegigate_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgateway/llmgateway/integration/mockupstream"
	"github.com/llmgateway/llmgateway/integration/traefikproc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// pluginModule is the plugin's module name in Traefik's static
// configuration: the repository root's module. The manifest's import
// (the package Traefik evaluates) is pluginModule + "/plugin".
const pluginModule = traefikproc.PluginModule

// requestTimeout bounds every request a scenario sends.
const requestTimeout = 30 * time.Second

// testDir is the package folder: go test starts the test binary there
// (captured at init, before any test changes directory).
var testDir, testDirErr = os.Getwd()

// repoRoot returns the repository root (two levels above this package).
func repoRoot(t *testing.T) string {
	t.Helper()
	require.NoError(t, testDirErr)
	return filepath.Clean(filepath.Join(testDir, "..", ".."))
}

// pluginDir is the repository root, which is the plugin's layout: the
// manifest at the top and plugin/ with its vendored core.
func pluginDir(t *testing.T) string {
	t.Helper()
	dir := repoRoot(t)
	_, err := os.Stat(filepath.Join(dir, ".traefik.yml"))
	require.NoError(t, err, "plugin manifest")
	_, err = os.Stat(filepath.Join(dir, "plugin", "vendor", "github.com", "llmgateway", "llmgateway", "gateway"))
	require.NoError(t, err, "plugin/vendor must hold the core: run 'make vendor'")
	return dir
}

// installPlugin lays the plugin source out as
// <gopath>/src/<pluginModule>/ (Yaegi's GOPATH, Traefik's plugins-local):
// traefikproc.PluginFiles of the repository.
func installPlugin(t *testing.T, gopath string) {
	t.Helper()
	require.NoError(t, traefikproc.InstallPlugin(pluginDir(t), gopath))
}

// manifest is the part of .traefik.yml the gate reads.
type manifest struct {
	DisplayName string                 `yaml:"displayName"`
	Type        string                 `yaml:"type"`
	Import      string                 `yaml:"import"`
	BasePkg     string                 `yaml:"basePkg"`
	Summary     string                 `yaml:"summary"`
	TestData    map[string]interface{} `yaml:"testData"`
}

func readManifest(t *testing.T) manifest {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(pluginDir(t), ".traefik.yml"))
	require.NoError(t, err)
	var m manifest
	require.NoError(t, yaml.Unmarshal(data, &m))
	require.Equal(t, "middleware", m.Type)
	require.True(t, strings.HasPrefix(m.Import, pluginModule), "import %q must start with the module name", m.Import)
	require.NotEmpty(t, m.DisplayName)
	require.NotEmpty(t, m.Summary)
	require.NotEmpty(t, m.TestData)
	return m
}

// traefikShape converts a decoded YAML/JSON value into the shape Traefik's
// paerser delivers a plugin's dynamic configuration in: every scalar a
// string (floats with 6 decimals), lists as []interface{}, maps as
// map[string]interface{}, and an empty map or list as "".
// TestTraefikShapeMatchesPaerser checks it against Traefik's own decoder.
func traefikShape(v interface{}) interface{} {
	switch x := v.(type) {
	case map[string]interface{}:
		if len(x) == 0 {
			return ""
		}
		out := make(map[string]interface{}, len(x))
		for k, e := range x {
			out[k] = traefikShape(e)
		}
		return out
	case []interface{}:
		if len(x) == 0 {
			return ""
		}
		out := make([]interface{}, len(x))
		for i, e := range x {
			out[i] = traefikShape(e)
		}
		return out
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'f', 6, 64)
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return strconv.FormatInt(i, 10)
		}
		f, _ := x.Float64()
		return strconv.FormatFloat(f, 'f', 6, 64)
	case nil:
		return ""
	default:
		panic("traefikShape: unexpected type")
	}
}

// gatewayConfig is the plugin configuration (as plain JSON-like data)
// pointing at the fixture upstream.
func gatewayConfig(upstreamURL string) map[string]interface{} {
	return map[string]interface{}{
		"providers": map[string]interface{}{
			"mock": map[string]interface{}{
				"type":    "openai",
				"baseUrl": upstreamURL,
				"models":  []interface{}{upstreamModel},
			},
		},
		"groups": map[string]interface{}{
			"default": map[string]interface{}{"providers": []interface{}{}},
		},
		"users": map[string]interface{}{
			"inline": []interface{}{
				map[string]interface{}{"name": "alice", "group": "default", "apiKey": userKey, "admin": true},
			},
		},
		"admin": map[string]interface{}{"enabled": true, "stats": map[string]interface{}{"userModel": true, "latency": true}},
		// The "mcp proxy" scenario's server (mcp_scenario_test.go).
		"mcpServers": map[string]interface{}{fakeMCPServerName: map[string]interface{}{"url": sharedFakeMCP().URL()}},
	}
}

// adminRoutes is one valid request of every admin JSON route.
var adminRoutes = []string{
	"overview", "usage", "catalog", "consumers", "config", "events?limit=5",
	"usage/history?scope=total&metric=req&window=day",
	"usage/series?scope=total&scope=user:alice&metric=req&window=hour&span=3",
	"usage/models?metric=req&window=day&detail=1",
	"usage/totals?kind=user&window=day",
	"usage/totals?kind=usermodel&user=alice&window=day",
	"performance?kind=provider&window=day",
	"performance?kind=model&window=hour",
}

// nextHandler is the handler wrapped by the middleware; scenarios assert
// the gateway answered its own routes without reaching it.
type nextHandler struct{ hits atomic.Int64 }

func (n *nextHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n.hits.Add(1)
	w.Header().Set("X-Next", "reached")
	http.Error(w, "next handler reached", http.StatusTeapot)
}

// scenarioClient sends requests to a gateway front end.
type scenarioClient struct {
	base string
	http *http.Client
}

func newScenarioClient(base string) *scenarioClient {
	return &scenarioClient{base: strings.TrimSuffix(base, "/"), http: &http.Client{Timeout: requestTimeout}}
}

func (c *scenarioClient) do(t *testing.T, method, path string, body interface{}, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	require.NoError(t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, data
}

func bearer(key string) map[string]string { return map[string]string{"Authorization": "Bearer " + key} }

// runGatewayScenarios runs the requests every level of the gate sends
// through a front end (an httptest server around the interpreted handler,
// or a real Traefik): model list, auth refusal, chat, embeddings, and an
// SSE stream whose first event must reach the client before the upstream
// writes its second one.
func runGatewayScenarios(t *testing.T, front string, up *fixtureUpstream, next *nextHandler) {
	c := newScenarioClient(front)

	t.Run("models", func(t *testing.T) {
		resp, body := c.do(t, http.MethodGet, "/v1/models", nil, bearer(userKey))
		require.Equal(t, http.StatusOK, resp.StatusCode, "body: %s", body)
		assert.Contains(t, resp.Header.Get("Content-Type"), "application/json")
		var list struct {
			Object string `json:"object"`
			Data   []struct {
				ID      string `json:"id"`
				Object  string `json:"object"`
				OwnedBy string `json:"owned_by"`
			} `json:"data"`
		}
		require.NoError(t, json.Unmarshal(body, &list), "body: %s", body)
		assert.Equal(t, "list", list.Object)
		ids := make([]string, 0, len(list.Data))
		for _, m := range list.Data {
			assert.Equal(t, "model", m.Object, "model %q", m.ID)
			assert.NotEmpty(t, m.OwnedBy, "model %q owned_by", m.ID)
			ids = append(ids, m.ID)
		}
		sort.Strings(ids)
		assert.Contains(t, ids, upstreamModel, "ids: %v", ids)
	})

	t.Run("models via x-api-key", func(t *testing.T) {
		resp, body := c.do(t, http.MethodGet, "/v1/models", nil, map[string]string{"x-api-key": userKey})
		require.Equal(t, http.StatusOK, resp.StatusCode, "body: %s", body)
		assert.Contains(t, string(body), `"`+upstreamModel+`"`)
	})

	t.Run("no key is refused", func(t *testing.T) {
		resp, body := c.do(t, http.MethodGet, "/v1/models", nil, nil)
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "body: %s", body)
		resp, body = c.do(t, http.MethodGet, "/v1/models", nil, bearer("sk-wrong"))
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "body: %s", body)
	})

	t.Run("chat", func(t *testing.T) {
		req := map[string]interface{}{
			"model":    upstreamModel,
			"messages": []interface{}{map[string]interface{}{"role": "user", "content": "hello gate"}},
		}
		resp, body := c.do(t, http.MethodPost, "/v1/chat/completions", req, bearer(userKey))
		require.Equal(t, http.StatusOK, resp.StatusCode, "body: %s", body)
		assert.Contains(t, resp.Header.Get("Content-Type"), "application/json")
		var out struct {
			Object  string `json:"object"`
			Choices []struct {
				Message struct {
					Role    string `json:"role"`
					Content string `json:"content"`
				} `json:"message"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal(body, &out), "body: %s", body)
		assert.Equal(t, "chat.completion", out.Object)
		require.Len(t, out.Choices, 1, "body: %s", body)
		assert.Equal(t, "assistant", out.Choices[0].Message.Role)
		assert.Equal(t, chatReply(), out.Choices[0].Message.Content)
		assert.Equal(t, "stop", out.Choices[0].FinishReason)

		got, ok := up.lastRequest("/v1/chat/completions")
		require.True(t, ok, "the upstream saw no chat request")
		assert.Equal(t, http.MethodPost, got.Method)
		assert.Equal(t, upstreamModel, got.Body["model"])
		assert.NotEqual(t, "Bearer "+userKey, got.Auth, "the user's key must not be forwarded upstream")
	})

	t.Run("embeddings", func(t *testing.T) {
		req := map[string]interface{}{"model": upstreamModel, "input": "embed me"}
		resp, body := c.do(t, http.MethodPost, "/v1/embeddings", req, bearer(userKey))
		require.Equal(t, http.StatusOK, resp.StatusCode, "body: %s", body)
		var out struct {
			Object string `json:"object"`
			Data   []struct {
				Embedding []float64 `json:"embedding"`
			} `json:"data"`
		}
		require.NoError(t, json.Unmarshal(body, &out), "body: %s", body)
		assert.Equal(t, "list", out.Object)
		require.Len(t, out.Data, 1)
		want := mockupstream.Vector("embed me", 8)
		require.Len(t, out.Data[0].Embedding, len(want))
		for i, v := range want {
			assert.InDelta(t, float64(v), out.Data[0].Embedding[i], 1e-6, "component %d", i)
		}
		got, ok := up.lastRequest("/v1/embeddings")
		require.True(t, ok, "the upstream saw no embeddings request")
		assert.Equal(t, "embed me", got.Body["input"])
	})

	t.Run("stream is incremental", func(t *testing.T) {
		runStreamScenario(t, c, up)
	})

	t.Run("mcp proxy", func(t *testing.T) {
		runMCPProxyScenario(t, c)
	})

	t.Run("admin", func(t *testing.T) {
		resp, body := c.do(t, http.MethodGet, "/admin", nil, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, "body: %s", body)
		assert.Contains(t, string(body), "/admin/assets/")
		for _, route := range adminRoutes {
			resp, body := c.do(t, http.MethodGet, "/admin/api/"+route, nil, bearer(userKey))
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", route, body)
			assert.Equal(t, "no-store", resp.Header.Get("Cache-Control"), route)
			assert.True(t, json.Valid(body), "%s: %s", route, body)
		}
		// The chat above is counted and readable (admin reads never are).
		_, body = c.do(t, http.MethodGet, "/admin/api/usage/models?metric=req&window=day", nil, bearer(userKey))
		assert.Contains(t, string(body), `"id":"mock/`+upstreamModel+`"`)
		resp, body = c.do(t, http.MethodGet, "/admin/api/usage", nil, nil)
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "%s", body)
	})

	if next != nil {
		assert.Zero(t, next.hits.Load(), "the gateway's own routes must not reach the next handler")
	}
}

// streamOutcome is what a client saw of one gated streaming chat.
type streamOutcome struct {
	contents     []string // content deltas, in order
	firstEarly   bool     // event 1 arrived while the upstream held event 2 back
	timedOut     bool     // the upstream gave up waiting for the client
	sawDone      bool     // data: [DONE] arrived
	finishReason string
}

// runStreamScenario sends a streaming chat and asserts that event 1
// reached the client while the upstream was still holding event 2 back.
func runStreamScenario(t *testing.T, c *scenarioClient, up *fixtureUpstream) {
	out := readGatedStream(t, c, up, streamGateFallback)
	assert.Equal(t, streamPieces(), out.contents, "streamed pieces")
	assert.Equal(t, "stop", out.finishReason)
	assert.True(t, out.sawDone, "no data: [DONE]")
	assert.False(t, out.timedOut, "the upstream waited %s for the client to read event 1: the stream was buffered", streamGateFallback)
	assert.True(t, out.firstEarly, "event 1 reached the client only after the upstream wrote event 2: the stream was buffered")
	if out.firstEarly && !out.timedOut {
		t.Logf("incremental: event 1 reached the client before the upstream wrote event 2")
	}
}

// readGatedStream arms the upstream's gate, sends a streaming chat through
// c and reads the whole SSE response.
func readGatedStream(t *testing.T, c *scenarioClient, up *fixtureUpstream, fallback time.Duration) streamOutcome {
	t.Helper()
	gate := up.armGate(fallback)
	defer gate.clientReceivedFirst() // never leave the upstream waiting
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	payload, err := json.Marshal(map[string]interface{}{
		"model":    upstreamModel,
		"stream":   true,
		"messages": []interface{}{map[string]interface{}{"role": "user", "content": "stream please"}},
	})
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/v1/chat/completions", bytes.NewReader(payload))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+userKey)
	resp, err := c.http.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("stream status %d, body: %s", resp.StatusCode, body)
	}
	assert.Contains(t, resp.Header.Get("Content-Type"), "text/event-stream")

	var out streamOutcome
	sawFirst := false
	rd := bufio.NewReader(resp.Body)
	for {
		line, err := rd.ReadString('\n')
		if strings.HasPrefix(line, "data:") {
			data := strings.TrimSpace(strings.TrimPrefix(line, "data:"))
			if data == "[DONE]" {
				out.sawDone = true
				continue
			}
			var chunk struct {
				Object  string `json:"object"`
				Choices []struct {
					Delta struct {
						Content string `json:"content"`
					} `json:"delta"`
					FinishReason *string `json:"finish_reason"`
				} `json:"choices"`
			}
			require.NoError(t, json.Unmarshal([]byte(data), &chunk), "event: %s", data)
			assert.Equal(t, "chat.completion.chunk", chunk.Object)
			if len(chunk.Choices) == 0 {
				continue
			}
			if chunk.Choices[0].Delta.Content != "" {
				if !sawFirst {
					sawFirst = true
					out.firstEarly = gate.clientReceivedFirst()
				}
				out.contents = append(out.contents, chunk.Choices[0].Delta.Content)
			}
			if chunk.Choices[0].FinishReason != nil {
				out.finishReason = *chunk.Choices[0].FinishReason
			}
		}
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
	}
	gate.clientReceivedFirst()
	select {
	case <-gate.upstreamDone:
	case <-time.After(requestTimeout):
		t.Fatal("the upstream never finished the stream")
	}
	require.True(t, sawFirst, "no content event arrived")
	out.timedOut = gate.timedOut
	return out
}
