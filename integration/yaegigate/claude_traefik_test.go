package yaegigate_test

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmgateway/llmgateway/integration/claudeproc"
	"github.com/llmgateway/llmgateway/integration/mockupstream"
)

// TestRealTraefikClaudeCode runs Claude Code 2.1.328 against a real
// Traefik v3.6.12 serving the plugin, whose aliases send the model
// Claude Code asks for to an anthropic-type provider (relayed) and, with
// --model, to an openai-type one (translated): the printed text is the
// streamed one, the upstream saw only streaming requests, and a tool
// turn (a Read of a file in Claude Code's working directory) round-trips.
func TestRealTraefikClaudeCode(t *testing.T) {
	bin := traefikBinary(t)
	claude := claudeproc.Require(t)
	const (
		chunks   = 3
		antKey   = "sk-ant-cc-traefik"
		noteText = "the launch code is 4711-zulu"
		prompt   = "please read the note in note.txt"
		final    = "The note says: the launch code is 4711-zulu."
	)
	dir := filepath.Join(t.TempDir(), "work")
	require.NoError(t, os.Mkdir(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "note.txt"), []byte(noteText+"\n"), 0o644))
	input, _ := json.Marshal(map[string]string{"file_path": filepath.Join(dir, "note.txt")})
	mock := mockupstream.New(mockupstream.Options{
		Models:          []string{upstreamModel},
		AnthropicModels: []string{"claude-test"},
		StrictModels:    true,
		Chunks:          chunks,
		AnthropicAPIKey: antKey,
		ToolTurn:        &mockupstream.ToolTurn{Trigger: prompt, Name: "Read", Input: string(input), Expect: noteText, FinalText: final},
		RecordLimit:     100,
	})
	up := httptest.NewServer(mock)
	defer up.Close()
	cfg := gatewayConfig(up.URL)
	cfg["providers"].(map[string]interface{})["anth"] = map[string]interface{}{
		"type": "anthropic", "baseUrl": up.URL, "apiKey": antKey, "models": []interface{}{"claude-test"},
	}
	cfg["modelAliases"] = map[string]interface{}{"claude-opus-5-5": "anth/claude-test", "cc-openai": "mock/" + upstreamModel}
	dummy := httptest.NewServer(&nextHandler{})
	defer dummy.Close()
	rt := startRealTraefik(t, bin, cfg, dummy.URL)

	for _, tc := range []struct {
		name, path string
		args       []string
	}{
		{"anthropic", "/v1/messages", nil},
		{"openai", "/v1/chat/completions", []string{"--model", "cc-openai"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assertStreamingOnly := func(t *testing.T, want int) {
				t.Helper()
				reqs := mock.Requests()
				require.Len(t, reqs, want, "upstream requests")
				for i, r := range reqs {
					assert.Equal(t, tc.path, r.Path, "request %d", i)
					var body struct {
						Stream bool `json:"stream"`
					}
					require.NoError(t, json.Unmarshal(r.Body, &body), "request %d", i)
					assert.True(t, body.Stream, "request %d streams (Claude Code falls back to non-streaming when a stream is unusable)", i)
				}
			}
			t.Run("text", func(t *testing.T) {
				mock.Reset()
				res := claudeproc.Run(t, claude, claudeproc.Options{BaseURL: rt.base, APIKey: userKey, Prompt: "say hi", Args: tc.args})
				require.Equal(t, 0, res.ExitCode, "%s", res)
				assert.Equal(t, mockupstream.ReplyText(chunks)+"\n", res.Stdout, "%s", res)
				assertStreamingOnly(t, 1)
			})
			t.Run("tool turn", func(t *testing.T) {
				mock.Reset()
				res := claudeproc.Run(t, claude, claudeproc.Options{BaseURL: rt.base, APIKey: userKey, Prompt: prompt, Dir: dir,
					Args: append([]string{"--allowedTools", "Read"}, tc.args...)})
				require.Equal(t, 0, res.ExitCode, "%s", res)
				assert.Equal(t, final+"\n", res.Stdout, "%s", res)
				assertStreamingOnly(t, 2)
				reqs := mock.Requests()
				assert.True(t, strings.Contains(string(reqs[1].Body), noteText), "the follow-up carries the tool result: %.500s", reqs[1].Body)
			})
		})
	}
}
