package yaegigate_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
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

// TestRealTraefikStalledUploads: Traefik's writer cannot set a read
// deadline, so in the plugin form a stalled upload's body-admission slot
// is evicted by a timer after the stall timeout (5 s): with every slot
// held by stalled uploads a normal client gets 503, then — once they are
// evicted, while they still stall — is served; an evicted upload that
// resumes gets the 408.
func TestRealTraefikStalledUploads(t *testing.T) {
	bin := traefikBinary(t)
	up := newFixtureUpstream(t)
	dummy := httptest.NewServer(&nextHandler{})
	defer dummy.Close()
	const slots = 4
	cfg := gatewayConfig(up.URL())
	cfg["maxInFlightBodyRequests"] = slots
	rt := startRealTraefik(t, bin, cfg, dummy.URL)
	addr := strings.TrimPrefix(rt.base, "http://")
	head := "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + userKey +
		"\r\nContent-Type: application/json\r\nContent-Length: 2000\r\n\r\n{\"model\":"
	var conns []net.Conn
	closeAll := func() {
		for _, c := range conns {
			_ = c.Close()
		}
		conns = nil
	}
	defer closeAll()
	body := []byte(`{"model":"` + upstreamModel + `","messages":[{"role":"user","content":"hi"}]}`)
	chat := func() int {
		req, err := http.NewRequest(http.MethodPost, rt.base+"/v1/chat/completions", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+userKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	// Every slot held: 503. Wait for the first 503 (a 503 proves every
	// slot is held) until 4.5 s after the first upload was written: no
	// slot can be evicted before 5 s after the plugin got its upload,
	// which is later. Traefik may build the middleware again just after
	// it started serving (a later configuration event: a new instance,
	// with slots of its own, serves the next requests while the uploads
	// hold the old one's), and may pass uploads on late on a loaded
	// machine; either way no 503 comes, and the uploads are opened again,
	// up to 5 times.
	status := http.StatusOK
	var firstWritten time.Time
	for attempt := 1; attempt <= 5 && status == http.StatusOK; attempt++ {
		closeAll()
		for i := 0; i < slots; i++ {
			nc, err := net.Dial("tcp", addr)
			require.NoError(t, err)
			conns = append(conns, nc)
			_, err = nc.Write([]byte(head))
			require.NoError(t, err)
			if i == 0 {
				firstWritten = time.Now()
			}
		}
		status = chat()
		for status == http.StatusOK && time.Since(firstWritten) < 4500*time.Millisecond {
			time.Sleep(20 * time.Millisecond)
			status = chat()
		}
		if status == http.StatusOK {
			t.Logf("attempt %d: no 503 within 4.5 s of the uploads; opening them again", attempt)
		}
	}
	require.Equal(t, http.StatusServiceUnavailable, status, "a normal client while every slot is held by a stalled upload")
	// Every upload held its slot by now: each is evicted by 5 s from here.
	allHeld := time.Now()
	// Evicted after 5 s without progress: served, the uploads still open.
	deadline := time.Now().Add(15 * time.Second)
	for status != http.StatusOK {
		require.True(t, time.Now().Before(deadline), "a normal client was still refused (%d) 15 s after the uploads stalled", status)
		require.Equal(t, http.StatusServiceUnavailable, status)
		time.Sleep(100 * time.Millisecond)
		status = chat()
	}
	t.Logf("served %v after the uploads stalled", time.Since(firstWritten).Round(10*time.Millisecond))
	// Every upload took its slot before allHeld, so each was evicted by
	// 5 s after it; a second of margin.
	time.Sleep(time.Until(allHeld.Add(6 * time.Second)))
	late := conns[0]
	require.NoError(t, late.SetDeadline(time.Now().Add(10*time.Second)))
	rest := `"` + upstreamModel + `"`
	_, err := late.Write([]byte(rest + strings.Repeat(" ", 2000-len(`{"model":`)-len(rest)-1) + "}"))
	require.NoError(t, err)
	line, err := bufio.NewReader(late).ReadString('\n')
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(line, "HTTP/1.1 408"), "an evicted upload that resumed got %q, want a 408", line)
}
