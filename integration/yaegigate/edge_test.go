package yaegigate_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The edge stage in the plugin form (gateway/edge.go and cors.go as the
// plugin vendors them): a CORS preflight answered before authentication
// and without reaching the upstream, and an allowed origin's answer
// carrying the CORS and security headers, at each level of the gate —
// the interpreter (TestYaegiInterpreterEdge), Traefik's loader
// (TestTraefikLoaderEdge) and a real Traefik (TestRealTraefikEdge).

const edgeOrigin = "https://app.example.com"

func edgeScenario(t *testing.T, front routeFront) {
	ups := routeUpstreams(t, "pa")
	base := front(t, routeConfig(ups, map[string]interface{}{
		"cors": map[string]interface{}{"allowedOrigins": []interface{}{edgeOrigin}, "maxAge": "5m"},
	}))

	preflight, err := http.NewRequest(http.MethodOptions, base+"/v1/chat/completions", nil)
	require.NoError(t, err)
	preflight.Header.Set("Origin", edgeOrigin)
	preflight.Header.Set("Access-Control-Request-Method", "POST")
	preflight.Header.Set("Access-Control-Request-Headers", "authorization,content-type")
	resp, body := edgeDo(t, preflight)
	assert.Equal(t, http.StatusNoContent, resp.StatusCode, "preflight body: %s", body)
	assert.Equal(t, edgeOrigin, resp.Header.Get("Access-Control-Allow-Origin"))
	assert.Equal(t, "authorization,content-type", resp.Header.Get("Access-Control-Allow-Headers"))
	assert.Equal(t, "300", resp.Header.Get("Access-Control-Max-Age"))
	assert.Contains(t, resp.Header.Get("Access-Control-Allow-Methods"), "POST")
	assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
	assert.Equal(t, []int64{0}, totals(ups), "a preflight must not reach the upstream")

	for _, origin := range []string{edgeOrigin, "https://evil.example"} {
		chat, err := http.NewRequest(http.MethodPost, base+"/v1/chat/completions",
			strings.NewReader(`{"model":"`+routeModel+`","messages":[{"role":"user","content":"hi"}]}`))
		require.NoError(t, err)
		chat.Header.Set("Authorization", "Bearer "+userKey)
		chat.Header.Set("Content-Type", "application/json")
		chat.Header.Set("Origin", origin)
		resp, body = edgeDo(t, chat)
		require.Equal(t, http.StatusOK, resp.StatusCode, "body: %s", body)
		assert.Equal(t, []string{"nosniff"}, resp.Header.Values("X-Content-Type-Options"))
		assert.Contains(t, strings.Join(resp.Header.Values("Vary"), ","), "Origin")
		if origin == edgeOrigin {
			assert.Equal(t, []string{edgeOrigin}, resp.Header.Values("Access-Control-Allow-Origin"))
			assert.Contains(t, resp.Header.Get("Access-Control-Expose-Headers"), "X-Request-Id")
		} else {
			assert.Empty(t, resp.Header.Values("Access-Control-Allow-Origin"), "another origin's answer")
		}
	}
}

func edgeDo(t *testing.T, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(data)
}

// TestYaegiInterpreterEdge runs the edge scenario through the plugin
// interpreted by Yaegi.
func TestYaegiInterpreterEdge(t *testing.T) {
	p := loadInterpreted(t)
	edgeScenario(t, interpretedFront(p, "llmgateway-edge"))
	if t.Failed() {
		t.Logf("interpreter output:\n%s", p.output.String())
	}
}

// TestTraefikLoaderEdge runs it through a middleware built by Traefik's
// loader.
func TestTraefikLoaderEdge(t *testing.T) {
	edgeScenario(t, loaderFront)
}

// TestRealTraefikEdge runs it through a real Traefik v3.6.12 process
// loading the plugin (LLMGW_REAL_TRAEFIK=1).
func TestRealTraefikEdge(t *testing.T) {
	edgeScenario(t, realTraefikFront(traefikBinary(t)))
}
