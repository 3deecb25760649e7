package integration_test

import (
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmgateway/llmgateway/integration/claudeproc"
	"github.com/llmgateway/llmgateway/integration/codexproc"
	"github.com/llmgateway/llmgateway/integration/mockupstream"
)

// Session affinity with the real agents: the session headers Claude Code
// and Codex CLI send, and a whole tool turn of each through the binary
// reaching one provider of two under round-robin.

// TestAffinityCLISessionHeaders pins what the real clients send, straight
// to the mock: Claude Code 2.1.328 sends X-Claude-Code-Session-Id, and
// Codex CLI 0.169.0 sends "session-id" (on the wire lower case with a
// hyphen, not session_id; also thread-id with the same value), each the
// same on every request of one run and new for the next run.
func TestAffinityCLISessionHeaders(t *testing.T) {
	t.Run("claude_code", func(t *testing.T) {
		bin := claudeproc.Require(t)
		dir := claudeWorkDir(t)
		mock := mockupstream.New(mockupstream.Options{Chunks: claudeChunks, ToolTurn: claudeToolTurn(dir), RecordLimit: 100})
		up := httptest.NewServer(mock)
		t.Cleanup(up.Close)
		var ids []string
		for run := 0; run < 2; run++ {
			mock.Reset()
			res := claudeproc.Run(t, bin, claudeproc.Options{BaseURL: up.URL, APIKey: claudeUpstreamKey, Prompt: claudeToolPrompt, Dir: dir, Args: []string{"--allowedTools", "Read"}})
			require.Equal(t, 0, res.ExitCode, "%s", res)
			reqs := mock.Requests()
			require.Len(t, reqs, 2, "a tool turn: %s", res)
			id := reqs[0].Header.Get("X-Claude-Code-Session-Id")
			require.NotEmpty(t, id, "headers %v", reqs[0].Header)
			assert.Equal(t, id, reqs[1].Header.Get("X-Claude-Code-Session-Id"), "stable within run %d", run)
			for _, r := range reqs {
				assert.Empty(t, r.Header.Get("X-Session-Id"))
				assert.Empty(t, r.Header.Get("Session-Id"))
			}
			ids = append(ids, id)
		}
		assert.NotEqual(t, ids[0], ids[1], "a new session id per run")
	})
	t.Run("codex", func(t *testing.T) {
		bin := codexproc.Require(t)
		mock := mockupstream.New(mockupstream.Options{Models: []string{codexproc.DefaultModel}, Chunks: codexChunks, ToolTurn: codexToolTurn(), RecordLimit: 100})
		up := httptest.NewServer(mock)
		t.Cleanup(up.Close)
		var ids []string
		for run := 0; run < 2; run++ {
			mock.Reset()
			res := codexproc.Run(t, bin, codexproc.Options{BaseURL: up.URL + "/v1", APIKey: codexUpstreamKey, Prompt: codexToolPrompt})
			require.Equal(t, 0, res.ExitCode, "%s", res)
			reqs := mock.Requests()
			require.Len(t, reqs, 2, "a tool turn: %s", res)
			// net/http canonicalises what it parsed: "session-id" on the
			// wire is Session-Id here; "session_id" would be Session_id.
			id := reqs[0].Header.Get("Session-Id")
			require.NotEmpty(t, id, "headers %v", reqs[0].Header)
			assert.Empty(t, reqs[0].Header["Session_id"], "no underscore form")
			assert.Equal(t, id, reqs[0].Header.Get("Thread-Id"))
			assert.Equal(t, id, reqs[1].Header.Get("Session-Id"), "stable within run %d", run)
			assert.Empty(t, reqs[0].Header.Get("X-Session-Id"))
			ids = append(ids, id)
		}
		assert.NotEqual(t, ids[0], ids[1], "a new session id per run")
	})
}

// rtAgentPair is two providers of one type behind a gateway with
// round-robin, failover and sessionAffinity (on or off).
type rtAgentPair struct {
	ps   rtProviders
	base string
}

// TestAffinityClaudeCode: Claude Code's tool turn (two model calls)
// through the binary, with two anthropic-type providers serving the
// model it asks for: with affinity every call of the run reaches one
// provider; without it round-robin splits them (the control).
func TestAffinityClaudeCode(t *testing.T) {
	bin := claudeproc.Require(t)
	toolDir := claudeWorkDir(t)

	start := func(t *testing.T, affinity, alias bool) rtAgentPair {
		t.Helper()
		upstreamModel := claudeDefaultModel
		if alias {
			upstreamModel = "claude-test"
		}
		opts := mockupstream.Options{
			AnthropicModels: []string{upstreamModel},
			StrictModels:    true,
			Chunks:          claudeChunks,
			AnthropicAPIKey: claudeUpstreamKey,
			ToolTurn:        claudeToolTurn(toolDir),
		}
		ps := rtProviders{rtNewProvider(t, "a1", opts), rtNewProvider(t, "a2", opts)}
		providers := map[string]interface{}{}
		for _, p := range ps {
			providers[p.name] = map[string]interface{}{"type": "anthropic", "baseUrl": p.url, "apiKey": claudeUpstreamKey, "models": []string{upstreamModel}}
		}
		cfg := rtConfig(nil, rtAffinityExtra(affinity, ""))
		cfg["providers"] = providers
		if alias {
			cfg["modelAliases"] = map[string]interface{}{claudeDefaultModel: []string{"a1/claude-test", "a2/claude-test"}}
		}
		return rtAgentPair{ps: ps, base: rtStart(t, cfg).URL}
	}
	run := func(t *testing.T, env rtAgentPair) map[string]int64 {
		t.Helper()
		before := env.ps.counts()
		res := claudeproc.Run(t, bin, claudeproc.Options{
			BaseURL: env.base, APIKey: rtUserKey, Prompt: claudeToolPrompt, Dir: toolDir,
			Args: []string{"--allowedTools", "Read"},
		})
		require.Equal(t, 0, res.ExitCode, "%s", res)
		require.Equal(t, claudeToolFinal+"\n", res.Stdout, "%s", res)
		after := env.ps.counts()
		delta := map[string]int64{}
		for n := range after {
			delta[n] = after[n] - before[n]
		}
		require.Equal(t, int64(2), delta["a1"]+delta["a2"], "the call and the answer to its result: %v", delta)
		return delta
	}

	for _, alias := range []bool{false, true} {
		name := "shared_bare_id"
		if alias {
			name = "alias_list"
		}
		t.Run(name, func(t *testing.T) {
			t.Run("affinity", func(t *testing.T) {
				env := start(t, true, alias)
				for i := 0; i < 2; i++ {
					delta := run(t, env)
					assert.Contains(t, []map[string]int64{{"a1": 2, "a2": 0}, {"a1": 0, "a2": 2}}, delta, "run %d: one provider has every call", i)
				}
			})
			t.Run("control_without_affinity", func(t *testing.T) {
				env := start(t, false, alias)
				assert.Equal(t, map[string]int64{"a1": 1, "a2": 1}, run(t, env), "round-robin splits the run")
			})
		})
	}
}

// TestAffinityCodex: the same for Codex CLI's tool turn through
// /v1/responses, with two openai-type providers.
func TestAffinityCodex(t *testing.T) {
	bin := codexproc.Require(t)
	start := func(t *testing.T, affinity bool) rtAgentPair {
		t.Helper()
		opts := mockupstream.Options{
			Models:       []string{codexproc.DefaultModel},
			StrictModels: true,
			Chunks:       codexChunks,
			OpenAIAPIKey: codexUpstreamKey,
			ToolTurn:     codexToolTurn(),
		}
		ps := rtProviders{rtNewProvider(t, "o1", opts), rtNewProvider(t, "o2", opts)}
		providers := map[string]interface{}{}
		for _, p := range ps {
			providers[p.name] = map[string]interface{}{"type": "openai", "baseUrl": p.url, "apiKey": codexUpstreamKey, "models": []string{codexproc.DefaultModel}}
		}
		cfg := rtConfig(nil, rtAffinityExtra(affinity, ""))
		cfg["providers"] = providers
		return rtAgentPair{ps: ps, base: rtStart(t, cfg).URL}
	}
	run := func(t *testing.T, env rtAgentPair) map[string]int64 {
		t.Helper()
		before := env.ps.counts()
		res := codexproc.Run(t, bin, codexproc.Options{BaseURL: env.base + "/v1", APIKey: rtUserKey, Prompt: codexToolPrompt})
		require.Equal(t, 0, res.ExitCode, "%s", res)
		require.Equal(t, codexToolFinal+"\n", res.Stdout, "%s", res)
		after := env.ps.counts()
		delta := map[string]int64{}
		for n := range after {
			delta[n] = after[n] - before[n]
		}
		require.Equal(t, int64(2), delta["o1"]+delta["o2"], "the call and the answer to its output: %v", delta)
		return delta
	}
	t.Run("affinity", func(t *testing.T) {
		env := start(t, true)
		for i := 0; i < 2; i++ {
			assert.Contains(t, []map[string]int64{{"o1": 2, "o2": 0}, {"o1": 0, "o2": 2}}, run(t, env), "run %d: one provider has every call", i)
		}
	})
	t.Run("control_without_affinity", func(t *testing.T) {
		env := start(t, false)
		assert.Equal(t, map[string]int64{"o1": 1, "o2": 1}, run(t, env), "round-robin splits the run")
	})
}
