package integration_test

import (
	"encoding/json"
	"net/http"
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

// What Claude Code 2.1.328 sends, run headless with the settings of
// claudeproc: one POST /v1/messages?beta=true a model call, streaming,
// for this model unless --model says otherwise.
const (
	claudeDefaultModel = "claude-opus-5-5"
	claudeChunks       = 3
	claudeUpstreamKey  = "sk-ant-claude-upstream"
	claudeOpenAIKey    = "sk-oa-claude-upstream"
	claudeUserKey      = "sk-erin-claude-code-client-key"
	// The scripted tool turn: Claude Code is asked to read note.txt in
	// its working directory; the mock answers a Read call, then the final
	// text once the tool result carries the note.
	claudeNoteFile   = "note.txt"
	claudeNoteText   = "the launch code is 4711-zulu"
	claudeToolPrompt = "please read the note in note.txt"
	claudeToolFinal  = "The note says: the launch code is 4711-zulu."
)

// claudeToolTurn is the mock's script for a Read of note.txt in dir.
func claudeToolTurn(dir string) *mockupstream.ToolTurn {
	input, _ := json.Marshal(map[string]string{"file_path": filepath.Join(dir, claudeNoteFile)})
	return &mockupstream.ToolTurn{
		Trigger:   claudeToolPrompt,
		Name:      "Read",
		Input:     string(input),
		Expect:    claudeNoteText,
		FinalText: claudeToolFinal,
	}
}

// claudeWorkDir makes a working directory holding note.txt.
func claudeWorkDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "work")
	require.NoError(t, os.Mkdir(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, claudeNoteFile), []byte(claudeNoteText+"\n"), 0o644))
	return dir
}

// anthropicBody is the part of a Messages request the tests read.
type anthropicBody struct {
	Model  string `json:"model"`
	Stream bool   `json:"stream"`
	Tools  []struct {
		Name string `json:"name"`
	} `json:"tools"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

// anthropicBlocks is a message content as blocks (a string content is
// one text block).
type anthropicBlocks []struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
}

func parseAnthropicBody(t *testing.T, raw []byte) anthropicBody {
	t.Helper()
	var b anthropicBody
	require.NoError(t, json.Unmarshal(raw, &b), "messages body: %.300s", raw)
	return b
}

func blocksOf(t *testing.T, content json.RawMessage) anthropicBlocks {
	t.Helper()
	var s string
	if json.Unmarshal(content, &s) == nil {
		return anthropicBlocks{{Type: "text", Text: s}}
	}
	var blocks anthropicBlocks
	require.NoError(t, json.Unmarshal(content, &blocks), "content %.300s", content)
	return blocks
}

// toolNames lists the tools a Messages body declares.
func (b anthropicBody) toolNames() []string {
	var out []string
	for _, tool := range b.Tools {
		out = append(out, tool.Name)
	}
	return out
}

// assertAnthropicToolRoundTrip checks that a Messages body ends with the
// assistant's Read call of note.txt and the user's tool_result for it
// carrying the note.
func assertAnthropicToolRoundTrip(t *testing.T, raw []byte, dir string) {
	t.Helper()
	body := parseAnthropicBody(t, raw)
	var msgs []json.RawMessage
	var roles []string
	for _, m := range body.Messages {
		if m.Role == "system" {
			continue
		}
		msgs = append(msgs, m.Content)
		roles = append(roles, m.Role)
	}
	require.GreaterOrEqual(t, len(msgs), 3, "roles %v", roles)
	n := len(msgs)
	require.Equal(t, []string{"assistant", "user"}, roles[n-2:], "roles %v", roles)
	var useID string
	for _, b := range blocksOf(t, msgs[n-2]) {
		if b.Type == "tool_use" {
			assert.Equal(t, "Read", b.Name)
			assert.JSONEq(t, `{"file_path":`+string(mustJSON(t, filepath.Join(dir, claudeNoteFile)))+`}`, string(b.Input))
			useID = b.ID
		}
	}
	require.NotEmpty(t, useID, "no tool_use in the assistant message: %s", msgs[n-2])
	var result string
	for _, b := range blocksOf(t, msgs[n-1]) {
		if b.Type == "tool_result" && b.ToolUseID == useID {
			result = string(b.Content)
		}
	}
	assert.Contains(t, result, claudeNoteText, "tool_result for %s: %s", useID, msgs[n-1])
}

// TestClaudeCodeAgainstMock runs Claude Code straight against the mock
// upstream: it proves the harness (the binary, its environment, the
// mock's Anthropic dialect and its scripted tool turn) without the
// gateway.
func TestClaudeCodeAgainstMock(t *testing.T) {
	bin := claudeproc.Require(t)
	toolDir := claudeWorkDir(t)
	mock := mockupstream.New(mockupstream.Options{
		Chunks:          claudeChunks,
		AnthropicAPIKey: claudeUpstreamKey,
		ToolTurn:        claudeToolTurn(toolDir),
		RecordLimit:     100,
	})
	up := httptest.NewServer(mock)
	t.Cleanup(up.Close)

	t.Run("text", func(t *testing.T) {
		mock.Reset()
		res := claudeproc.Run(t, bin, claudeproc.Options{BaseURL: up.URL, APIKey: claudeUpstreamKey, Prompt: "say hi"})
		require.Equal(t, 0, res.ExitCode, "%s", res)
		assert.Equal(t, mockupstream.ReplyText(claudeChunks)+"\n", res.Stdout, "%s", res)

		reqs := mock.Requests()
		// One request: the streamed reply was usable, so Claude Code did
		// not fall back to a second, non-streaming one.
		require.Len(t, reqs, 1, "%s", res)
		r := reqs[0]
		assert.Equal(t, "POST", r.Method)
		assert.Equal(t, "/v1/messages", r.Path)
		assert.Equal(t, "beta=true", r.RawQuery)
		assert.Equal(t, claudeUpstreamKey, r.Header.Get("X-Api-Key"))
		assert.NotEmpty(t, r.Header.Get("Anthropic-Version"))
		assert.Contains(t, r.Header.Get("Anthropic-Beta"), "claude-code-20250219")
		assert.Contains(t, r.Header.Get("Anthropic-Beta"), mockupstream.SystemMessagesBeta)
		assert.NotEmpty(t, r.Header.Get("X-Claude-Code-Session-Id"))
		body := parseAnthropicBody(t, r.Body)
		assert.True(t, body.Stream, "stream")
		assert.Equal(t, claudeDefaultModel, body.Model)
		assert.Contains(t, body.toolNames(), "Read")
		assert.Contains(t, string(r.Body), `"role":"system"`, "Claude Code sends its environment as a system message")
		assert.Contains(t, string(r.Body), `"text":"say hi"`)
	})

	t.Run("tool_turn", func(t *testing.T) {
		mock.Reset()
		res := claudeproc.Run(t, bin, claudeproc.Options{
			BaseURL: up.URL, APIKey: claudeUpstreamKey, Prompt: claudeToolPrompt, Dir: toolDir,
			Args: []string{"--allowedTools", "Read"},
		})
		require.Equal(t, 0, res.ExitCode, "%s", res)
		assert.Equal(t, claudeToolFinal+"\n", res.Stdout, "%s", res)

		reqs := mock.Requests()
		require.Len(t, reqs, 2, "the call and the answer to its result: %s", res)
		for i, r := range reqs {
			assert.Equal(t, "/v1/messages", r.Path, "request %d", i)
			assert.True(t, parseAnthropicBody(t, r.Body).Stream, "request %d streams", i)
		}
		assertAnthropicToolRoundTrip(t, reqs[1].Body, toolDir)
	})

	t.Run("refused_system_messages_fall_back", func(t *testing.T) {
		// Without the per-turn-control beta the mock refuses Claude
		// Code's system messages with a 400, as the API does; Claude Code
		// then asks again without them. This is what a gateway that drops
		// anthropic-beta causes, and why the tests above demand exactly
		// one request.
		strip := httptest.NewServer(stripBeta(mock))
		t.Cleanup(strip.Close)
		mock.Reset()
		res := claudeproc.Run(t, bin, claudeproc.Options{BaseURL: strip.URL, APIKey: claudeUpstreamKey, Prompt: "say hi"})
		require.Equal(t, 0, res.ExitCode, "%s", res)
		assert.Equal(t, mockupstream.ReplyText(claudeChunks)+"\n", res.Stdout)
		reqs := mock.Requests()
		require.Len(t, reqs, 2, "%s", res)
		assert.Contains(t, string(reqs[0].Body), `"role":"system"`)
		assert.NotContains(t, string(reqs[1].Body), `"role":"system"`)
	})
}

// stripBeta removes SystemMessagesBeta from the anthropic-beta header
// before next sees the request.
func stripBeta(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var kept []string
		for _, v := range r.Header.Values("Anthropic-Beta") {
			for _, b := range strings.Split(v, ",") {
				if b = strings.TrimSpace(b); b != "" && b != mockupstream.SystemMessagesBeta {
					kept = append(kept, b)
				}
			}
		}
		r.Header.Set("Anthropic-Beta", strings.Join(kept, ","))
		next.ServeHTTP(w, r)
	})
}

// claudeGatewayKind is one provider type behind the gateway's /v1/messages
// for Claude Code.
type claudeGatewayKind struct {
	name  string // the provider type, and the subtest's name
	model string // the provider's model, claudeDefaultModel's alias target
	path  string // the upstream path of a model call
	// checkCall asserts one upstream model call: credentials, model,
	// streaming.
	checkCall func(t *testing.T, r mockupstream.Recorded)
	// checkToolRoundTrip asserts the upstream call that carries the tool
	// result of the Read of note.txt in dir.
	checkToolRoundTrip func(t *testing.T, r mockupstream.Recorded, dir string)
}

func claudeGatewayKinds() []claudeGatewayKind {
	return []claudeGatewayKind{
		{
			name: "anthropic", model: "claude-test", path: "/v1/messages",
			checkCall: func(t *testing.T, r mockupstream.Recorded) {
				t.Helper()
				assert.Equal(t, claudeUpstreamKey, r.Header.Get("X-Api-Key"), "provider key in x-api-key")
				assert.NotEmpty(t, r.Header.Get("Anthropic-Version"))
				// Forwarded: without it the upstream refuses the system
				// messages and Claude Code falls back.
				assert.Contains(t, r.Header.Get("Anthropic-Beta"), mockupstream.SystemMessagesBeta, "anthropic-beta forwarded")
				body := parseAnthropicBody(t, r.Body)
				assert.Equal(t, "claude-test", body.Model, "model rewritten to the provider's")
				assert.True(t, body.Stream, "stream")
			},
			checkToolRoundTrip: func(t *testing.T, r mockupstream.Recorded, dir string) {
				t.Helper()
				assertAnthropicToolRoundTrip(t, r.Body, dir)
			},
		},
		{
			name: "openai", model: "gpt-5-mini", path: "/v1/chat/completions",
			checkCall: func(t *testing.T, r mockupstream.Recorded) {
				t.Helper()
				assert.Equal(t, "Bearer "+claudeOpenAIKey, r.Header.Get("Authorization"))
				var body struct {
					Model    string `json:"model"`
					Stream   bool   `json:"stream"`
					Messages []struct {
						Role string `json:"role"`
					} `json:"messages"`
					Tools []struct {
						Function struct {
							Name string `json:"name"`
						} `json:"function"`
					} `json:"tools"`
				}
				require.NoError(t, json.Unmarshal(r.Body, &body), "%.300s", r.Body)
				assert.Equal(t, "gpt-5-mini", body.Model)
				assert.True(t, body.Stream, "stream")
				var tools []string
				for _, tool := range body.Tools {
					tools = append(tools, tool.Function.Name)
				}
				assert.Contains(t, tools, "Read", "Claude Code's tools translated")
			},
			checkToolRoundTrip: assertChatToolRoundTrip,
		},
	}
}

// assertChatToolRoundTrip checks that a chat request ends with the
// assistant's Read call of note.txt and the tool message answering it
// with the note.
func assertChatToolRoundTrip(t *testing.T, r mockupstream.Recorded, dir string) {
	t.Helper()
	var body struct {
		Messages []struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			ToolCallID string          `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &body), "%.300s", r.Body)
	callID := ""
	result := ""
	for _, m := range body.Messages {
		switch m.Role {
		case "assistant":
			for _, c := range m.ToolCalls {
				if c.Function.Name == "Read" {
					callID = c.ID
					assert.JSONEq(t, `{"file_path":`+string(mustJSON(t, filepath.Join(dir, claudeNoteFile)))+`}`, c.Function.Arguments)
				}
			}
		case "tool":
			if m.ToolCallID == callID && callID != "" {
				result = string(m.Content)
			}
		}
	}
	require.NotEmpty(t, callID, "no Read tool call in the history: %.2000s", r.Body)
	assert.Contains(t, result, claudeNoteText, "the tool message for %s", callID)
}

// TestClaudeCodeThroughGateway runs Claude Code against the gateway
// binary, whose modelAliases map the model Claude Code asks for by
// default to an anthropic-type provider (passthrough) and to an
// openai-type provider (translated). A recorder between the two shows
// what Claude Code sent and got.
func TestClaudeCodeThroughGateway(t *testing.T) {
	bin := claudeproc.Require(t)
	gwBin := buildGatewayBinary(t)
	toolDir := claudeWorkDir(t)

	for _, k := range claudeGatewayKinds() {
		t.Run(k.name, func(t *testing.T) {
			mock := mockupstream.New(mockupstream.Options{
				Models:          []string{"gpt-5-mini"},
				AnthropicModels: []string{"claude-test"},
				StrictModels:    true,
				Chunks:          claudeChunks,
				AnthropicAPIKey: claudeUpstreamKey,
				ToolTurn:        claudeToolTurn(toolDir),
				RecordLimit:     100,
			})
			up := httptest.NewServer(mock)
			t.Cleanup(up.Close)
			key := claudeUpstreamKey
			if k.name == "openai" {
				key = claudeOpenAIKey
			}
			gw := startGateway(t, gwBin, map[string]interface{}{
				"providers": map[string]interface{}{
					"up": map[string]interface{}{"type": k.name, "baseUrl": up.URL, "apiKey": key, "models": []string{k.model}},
				},
				"modelAliases": map[string]string{claudeDefaultModel: "up/" + k.model},
				"groups":       map[string]interface{}{"default": map[string]interface{}{"providers": []string{}}},
				"users": map[string]interface{}{"inline": []map[string]interface{}{
					{"name": "erin", "group": "default", "apiKey": claudeUserKey},
				}},
			})

			// run is one Claude Code run through a fresh recorder.
			run := func(t *testing.T, prompt, dir string, args ...string) (claudeproc.Result, []claudeproc.Exchange, []mockupstream.Recorded) {
				t.Helper()
				mock.Reset()
				rec := claudeproc.NewRecorder(t, gw.URL)
				res := claudeproc.Run(t, bin, claudeproc.Options{BaseURL: rec.URL, APIKey: claudeUserKey, Prompt: prompt, Dir: dir, Args: args})
				return res, rec.Exchanges(), mock.Requests()
			}

			t.Run("text", func(t *testing.T) {
				res, _, _ := run(t, "say hi", "")
				require.Equal(t, 0, res.ExitCode, "%s", res)
				assert.Equal(t, mockupstream.ReplyText(claudeChunks)+"\n", res.Stdout, "%s", res)
			})

			t.Run("only_streaming", func(t *testing.T) {
				res, sent, upstream := run(t, "say hi", "")
				require.Equal(t, 0, res.ExitCode, "%s", res)
				// One streamed request, answered 200: no retry, no
				// non-streaming fallback.
				require.Len(t, sent, 1, "requests Claude Code sent: %+v", sent)
				assert.Equal(t, "POST", sent[0].Method)
				assert.Equal(t, "/v1/messages", sent[0].Path)
				assert.Equal(t, "beta=true", sent[0].RawQuery)
				assert.Equal(t, 200, sent[0].Status)
				assert.True(t, sent[0].Stream(), "Claude Code streams")
				require.Len(t, upstream, 1, "upstream requests")
				assert.Equal(t, k.path, upstream[0].Path)
				k.checkCall(t, upstream[0])
				for name, values := range upstream[0].Header {
					for _, v := range values {
						assert.NotContains(t, v, claudeUserKey, "client key upstream in %s", name)
					}
				}
			})

			t.Run("tool_turn", func(t *testing.T) {
				res, sent, upstream := run(t, claudeToolPrompt, toolDir, "--allowedTools", "Read")
				require.Equal(t, 0, res.ExitCode, "%s", res)
				assert.Equal(t, claudeToolFinal+"\n", res.Stdout, "%s", res)
				require.Len(t, sent, 2, "the call and the answer to its result")
				for i, e := range sent {
					assert.Equal(t, 200, e.Status, "request %d", i)
					assert.True(t, e.Stream(), "request %d streams", i)
				}
				assertAnthropicToolRoundTrip(t, sent[1].Body, toolDir)
				require.Len(t, upstream, 2, "upstream requests")
				for _, r := range upstream {
					assert.Equal(t, k.path, r.Path)
					k.checkCall(t, r)
				}
				k.checkToolRoundTrip(t, upstream[1], toolDir)
			})
		})
	}
}
