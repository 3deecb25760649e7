package integration_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmgateway/llmgateway/integration/a2aproc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A2A agents behind the per-target proxy (/a2a/{name}/...) of the gateway
// binary: the official JS SDK's agent and client (A2A v1.0 JSON-RPC:
// SendMessage, SendStreamingMessage), and a fake agent speaking the v0.3
// wire format (message/send, message/stream) for the byte-level checks.

const a2aKey = "sk-a2a-alice"

func a2aGatewayConfig(agents map[string]interface{}) map[string]interface{} {
	return map[string]interface{}{
		"providers": map[string]interface{}{"p": map[string]interface{}{"type": "openai", "baseUrl": "http://127.0.0.1:9"}},
		"agents":    agents,
		"groups":    map[string]interface{}{"all": map[string]interface{}{}},
		"users": map[string]interface{}{"inline": []interface{}{
			map[string]interface{}{"name": "alice", "group": "all", "apiKey": a2aKey},
		}},
	}
}

// clientLine is one line of client.mjs's output.
type clientLine struct {
	Card  []string        `json:"card"`
	Send  json.RawMessage `json:"send"`
	Event *struct {
		Kind  string          `json:"kind"`
		Value json.RawMessage `json:"value"`
	} `json:"event"`
	Done bool `json:"done"`
}

func TestA2AJSSDKThroughProxy(t *testing.T) {
	env := a2aproc.Require(t)
	bin := buildGatewayBinary(t)
	agent := env.StartAgent(t)
	gw := startGateway(t, bin, a2aGatewayConfig(map[string]interface{}{"jsagent": map[string]interface{}{"url": agent.URL}}))

	run := env.RunClient(t, gw.URL+"/a2a/jsagent", a2aKey, agent.URL+"/release")
	require.Equal(t, 0, run.ExitCode, "client.mjs failed (timed out: %v)\nstdout:\n%s\nstderr:\n%s\nagent:\n%s", run.TimedOut, run.Stdout, run.Stderr, agent.Logs())

	var lines []clientLine
	for _, l := range strings.Split(strings.TrimSpace(run.Stdout), "\n") {
		var cl clientLine
		require.NoError(t, json.Unmarshal([]byte(l), &cl), "line %q", l)
		lines = append(lines, cl)
	}
	require.NotEmpty(t, lines)
	// The card read through the gateway names the gateway.
	require.Equal(t, []string{gw.URL + "/a2a/jsagent/a2a/jsonrpc"}, lines[0].Card, "the card's interface URL is rewritten to the gateway")
	require.Greater(t, len(lines), 2)
	assert.Contains(t, string(lines[1].Send), `"value":"echo: hello"`, "SendMessage through the gateway")

	var kinds, texts []string
	for _, l := range lines[2:] {
		if l.Event == nil {
			continue
		}
		kinds = append(kinds, l.Event.Kind)
		if l.Event.Kind == "artifactUpdate" {
			var v struct {
				Artifact struct {
					Parts []struct {
						Content struct {
							Value string `json:"value"`
						} `json:"content"`
					} `json:"parts"`
				} `json:"artifact"`
			}
			require.NoError(t, json.Unmarshal(l.Event.Value, &v))
			require.NotEmpty(t, v.Artifact.Parts)
			texts = append(texts, v.Artifact.Parts[0].Content.Value)
		}
	}
	assert.Equal(t, []string{"task", "statusUpdate", "artifactUpdate", "artifactUpdate", "statusUpdate"}, kinds)
	// The agent held artifact 2 back until the client, having artifact 1,
	// asked for /release: the events arrived one by one.
	assert.Equal(t, []string{"first", "second, released by trigger"}, texts)
	assert.True(t, lines[len(lines)-1].Done)

	resp, err := http.Get(agent.URL + "/stats")
	require.NoError(t, err)
	defer resp.Body.Close()
	var stats struct{ RPC, Credentials, Traced int }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&stats))
	assert.Equal(t, 2, stats.RPC, "both calls reached the agent")
	assert.Zero(t, stats.Credentials, "the gateway key reached the agent")
	assert.Equal(t, stats.RPC, stats.Traced, "every call came through the gateway (traceparent)")
}

// fakeA2AAgent speaks A2A v0.3 JSON-RPC: its card, message/send, and a
// message/stream whose second event waits for release.
type fakeA2AAgent struct {
	srv      *httptest.Server
	release  chan struct{}
	timedOut chan struct{}
}

func newFakeA2AAgent(t *testing.T) *fakeA2AAgent {
	a := &fakeA2AAgent{release: make(chan struct{}), timedOut: make(chan struct{}, 1)}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/.well-known/agent-card.json":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"protocolVersion":"0.3.0","name":"Fake","url":"`+a.srv.URL+`/rpc","preferredTransport":"JSONRPC",`+
				`"additionalInterfaces":[{"transport":"JSONRPC","url":"`+a.srv.URL+`/rpc"}],"capabilities":{"streaming":true},"skills":[]}`)
		case r.Method == http.MethodPost && r.URL.Path == "/rpc":
			var req struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			_ = json.NewDecoder(r.Body).Decode(&req)
			if req.Method == "message/send" {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":{"kind":"task","id":"task-1","contextId":"ctx-1","status":{"state":"completed"},`+
					`"artifacts":[{"artifactId":"a1","parts":[{"kind":"text","text":"Yes, 80%."}]}]}}`)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			events := []string{
				`{"kind":"status-update","taskId":"task-2","contextId":"ctx-1","status":{"state":"working"},"final":false}`,
				`{"kind":"artifact-update","taskId":"task-2","contextId":"ctx-1","artifact":{"artifactId":"a2","parts":[{"kind":"text","text":"streamed"}]},"lastChunk":true}`,
				`{"kind":"status-update","taskId":"task-2","contextId":"ctx-1","status":{"state":"completed"},"final":true}`,
			}
			for i, ev := range events {
				_, _ = io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"id\":"+string(req.ID)+",\"result\":"+ev+"}\n\n")
				w.(http.Flusher).Flush()
				if i == 0 {
					select {
					case <-a.release:
					case <-time.After(10 * time.Second):
						a.timedOut <- struct{}{}
					}
				}
			}
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(a.srv.Close)
	return a
}

func TestA2AFakeAgentWire(t *testing.T) {
	bin := buildGatewayBinary(t)
	agent := newFakeA2AAgent(t)
	gw := startGateway(t, bin, a2aGatewayConfig(map[string]interface{}{"fake": map[string]interface{}{"url": agent.srv.URL}}))
	hc := gatewayHTTPClient(a2aKey)

	t.Run("agent_card", func(t *testing.T) {
		resp, err := hc.Get(gw.URL + "/a2a/fake/.well-known/agent-card.json")
		require.NoError(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
		want := `{"protocolVersion":"0.3.0","name":"Fake","url":"` + gw.URL + `/a2a/fake/rpc","preferredTransport":"JSONRPC",` +
			`"additionalInterfaces":[{"transport":"JSONRPC","url":"` + gw.URL + `/a2a/fake/rpc"}],"capabilities":{"streaming":true},"skills":[]}`
		assert.Equal(t, want, string(body))
	})

	t.Run("message_send", func(t *testing.T) {
		resp, err := hc.Post(gw.URL+"/a2a/fake/rpc", "application/json", strings.NewReader(
			`{"jsonrpc":"2.0","id":"r1","method":"message/send","params":{"message":{"kind":"message","messageId":"m-1","role":"user","parts":[{"kind":"text","text":"Rain?"}]}}}`))
		require.NoError(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
		assert.Contains(t, string(body), `"id":"r1","result":{"kind":"task"`)
	})

	t.Run("message_stream_incremental", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, gw.URL+"/a2a/fake/rpc", strings.NewReader(
			`{"jsonrpc":"2.0","id":"r2","method":"message/stream","params":{"message":{"kind":"message","messageId":"m-2","role":"user","parts":[{"kind":"text","text":"go"}]}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
		resp, err := hc.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
		rd := bufio.NewReader(resp.Body)
		var got []string
		for {
			line, err := rd.ReadString('\n')
			if strings.HasPrefix(line, "data: ") {
				got = append(got, line)
				if len(got) == 1 {
					close(agent.release) // the agent writes event 2 only now
				}
			}
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
		}
		require.Len(t, got, 3)
		assert.Contains(t, got[0], `"state":"working"`)
		assert.Contains(t, got[1], `"text":"streamed"`)
		assert.Contains(t, got[2], `"final":true`)
		select {
		case <-agent.timedOut:
			t.Fatal("event 1 reached the client only after the agent gave up waiting: the stream was buffered")
		default:
		}
	})
}
