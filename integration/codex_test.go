package integration_test

import (
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmgateway/llmgateway/integration/claudeproc"
	"github.com/llmgateway/llmgateway/integration/codexproc"
	"github.com/llmgateway/llmgateway/integration/mockupstream"
)

// What Codex CLI 0.169.0 sends, run by codexproc: one POST
// /v1/responses a model call, streaming, for codexproc.DefaultModel.
const (
	codexChunks      = 3
	codexUpstreamKey = "sk-oa-codex-upstream"
	codexAnthKey     = "sk-ant-codex-upstream"
	codexUserKey     = "sk-dana-codex-client-key"
	// The scripted tool turn: asked to run the check, the mock answers an
	// exec_command call of `echo codex-tool-ok`; Codex runs it in a shell
	// and sends the output back; the mock then answers the final text.
	codexToolPrompt = "please run the check"
	codexToolArgs   = `{"cmd":"echo codex-tool-ok"}`
	codexToolOutput = "codex-tool-ok"
	codexToolFinal  = "The check printed codex-tool-ok."
)

func codexToolTurn() *mockupstream.ToolTurn {
	return &mockupstream.ToolTurn{
		Trigger:   codexToolPrompt,
		Name:      "exec_command",
		Input:     codexToolArgs,
		Expect:    codexToolOutput,
		FinalText: codexToolFinal,
	}
}

// responsesBody is the part of a Responses request the tests read.
type responsesBody struct {
	Model        string          `json:"model"`
	Stream       bool            `json:"stream"`
	Store        *bool           `json:"store"`
	Instructions *string         `json:"instructions"`
	Input        []responsesItem `json:"input"`
	Tools        []struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tools"`
}

// responsesItem is one input item.
type responsesItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

func parseResponsesBody(t *testing.T, raw []byte) responsesBody {
	t.Helper()
	var b responsesBody
	require.NoError(t, json.Unmarshal(raw, &b), "responses body: %.300s", raw)
	return b
}

// toolNames lists the function tools a Responses body declares.
func (b responsesBody) toolNames() []string {
	var out []string
	for _, tool := range b.Tools {
		if tool.Type == "function" {
			out = append(out, tool.Name)
		}
	}
	return out
}

// assertCodexToolRoundTrip checks that a Responses body ends with the
// exec_command call and its output carrying codexToolOutput.
func assertCodexToolRoundTrip(t *testing.T, raw []byte) {
	t.Helper()
	body := parseResponsesBody(t, raw)
	n := len(body.Input)
	require.GreaterOrEqual(t, n, 2, "input items")
	call, output := body.Input[n-2], body.Input[n-1]
	require.Equal(t, "function_call", call.Type, "the last but one item: %+v", call)
	assert.Equal(t, "exec_command", call.Name)
	assert.JSONEq(t, codexToolArgs, call.Arguments)
	require.Equal(t, "function_call_output", output.Type, "the last item: %+v", output)
	assert.Equal(t, call.CallID, output.CallID, "the output answers the call")
	var text string
	require.NoError(t, json.Unmarshal(output.Output, &text), "Codex sends the output as a string: %s", output.Output)
	assert.Contains(t, text, codexToolOutput)
}

// TestCodexAgainstMock runs Codex straight against the mock upstream's
// Responses API: it proves the harness (the binary, its config, the
// mock's Responses dialect and scripted tool turn) without the gateway.
func TestCodexAgainstMock(t *testing.T) {
	bin := codexproc.Require(t)
	mock := mockupstream.New(mockupstream.Options{
		Models:       []string{codexproc.DefaultModel},
		StrictModels: true,
		Chunks:       codexChunks,
		OpenAIAPIKey: codexUpstreamKey,
		ToolTurn:     codexToolTurn(),
		RecordLimit:  100,
	})
	up := httptest.NewServer(mock)
	t.Cleanup(up.Close)
	_, upPort, _ := strings.Cut(strings.TrimPrefix(up.URL, "http://"), ":")

	t.Run("text", func(t *testing.T) {
		mock.Reset()
		res := codexproc.Run(t, bin, codexproc.Options{BaseURL: up.URL + "/v1", APIKey: codexUpstreamKey, Prompt: "say hi", TraceConnect: true})
		require.Equal(t, 0, res.ExitCode, "%s", res)
		assert.Equal(t, mockupstream.ReplyText(codexChunks)+"\n", res.Stdout, "%s", res)

		// Nothing but loopback: the mock, and local sockets.
		assert.Empty(t, codexproc.Outbound(res.Connects), "connects beyond loopback")
		dialled := false
		for _, c := range res.Connects {
			dialled = dialled || (c.IP() && strconv.Itoa(c.Port) == upPort)
		}
		assert.True(t, dialled, "strace saw no connect to the mock on port %s: %+v", upPort, res.Connects)

		reqs := mock.Requests()
		require.Len(t, reqs, 1, "one model call: %s", res)
		r := reqs[0]
		assert.Equal(t, "POST", r.Method)
		assert.Equal(t, "/v1/responses", r.Path)
		assert.Empty(t, r.RawQuery)
		assert.Equal(t, "Bearer "+codexUpstreamKey, r.Header.Get("Authorization"))
		assert.Equal(t, "text/event-stream", r.Header.Get("Accept"))
		assert.Equal(t, "codex_exec", r.Header.Get("Originator"))
		body := parseResponsesBody(t, r.Body)
		assert.Equal(t, codexproc.DefaultModel, body.Model)
		assert.True(t, body.Stream, "stream")
		require.NotNil(t, body.Store)
		assert.False(t, *body.Store, "store")
		assert.Nil(t, body.Instructions, "Codex sends its system prompt as a developer message, not instructions")
		assert.Contains(t, body.toolNames(), "exec_command")
		require.NotEmpty(t, body.Input)
		assert.Equal(t, "developer", body.Input[0].Role)
		last := body.Input[len(body.Input)-1]
		assert.Equal(t, "user", last.Role)
		assert.Contains(t, string(last.Content), `"text":"say hi"`)
	})

	t.Run("tool_turn", func(t *testing.T) {
		mock.Reset()
		res := codexproc.Run(t, bin, codexproc.Options{BaseURL: up.URL + "/v1", APIKey: codexUpstreamKey, Prompt: codexToolPrompt})
		require.Equal(t, 0, res.ExitCode, "%s", res)
		assert.Equal(t, codexToolFinal+"\n", res.Stdout, "%s", res)
		reqs := mock.Requests()
		require.Len(t, reqs, 2, "the call and the answer to its output: %s", res)
		for i, r := range reqs {
			assert.Equal(t, "/v1/responses", r.Path, "request %d", i)
			assert.True(t, parseResponsesBody(t, r.Body).Stream, "request %d streams", i)
		}
		assertCodexToolRoundTrip(t, reqs[1].Body)
	})

	t.Run("stream_failed", func(t *testing.T) {
		// response.failed after 4 events: Codex reports the message and
		// fails, and does not retry (stream_max_retries = 0).
		mock.Reset()
		base := up.URL + mockupstream.PathKnobPrefix + "error-after/4/v1"
		res := codexproc.Run(t, bin, codexproc.Options{BaseURL: base, APIKey: codexUpstreamKey, Prompt: "say hi"})
		assert.Equal(t, 1, res.ExitCode, "%s", res)
		assert.Empty(t, res.Stdout)
		assert.Contains(t, res.Stderr, "stream disconnected before completion: "+mockupstream.ResponsesFailedMessage)
		assert.Len(t, mock.Requests(), 1, "no retry")
	})

	t.Run("wrong_key", func(t *testing.T) {
		mock.Reset()
		res := codexproc.Run(t, bin, codexproc.Options{BaseURL: up.URL + "/v1", APIKey: "sk-wrong", Prompt: "say hi"})
		assert.Equal(t, 1, res.ExitCode, "%s", res)
		assert.Empty(t, res.Stdout)
		assert.Contains(t, res.Stderr, "401 Unauthorized")
		assert.Len(t, mock.Requests(), 1, "no retry (request_max_retries = 0)")
	})
}

// codexGatewayKind is one provider type behind the gateway's
// /v1/responses for Codex.
type codexGatewayKind struct {
	name, model, key string
	path             string // the upstream path of a model call
	// checkCall asserts one upstream model call: credentials, model,
	// streaming, Codex's tools translated.
	checkCall func(t *testing.T, r mockupstream.Recorded)
	// checkToolResult asserts that an upstream call carries the
	// exec_command call and its output.
	checkToolResult func(t *testing.T, r mockupstream.Recorded)
}

func codexGatewayKinds() []codexGatewayKind {
	return []codexGatewayKind{
		{
			name: "openai", model: "gpt-5-mini", key: codexUpstreamKey, path: "/v1/chat/completions",
			checkCall: func(t *testing.T, r mockupstream.Recorded) {
				t.Helper()
				assert.Equal(t, "Bearer "+codexUpstreamKey, r.Header.Get("Authorization"))
				var body struct {
					Model  string `json:"model"`
					Stream bool   `json:"stream"`
					Tools  []struct {
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
				assert.Contains(t, tools, "exec_command", "Codex's function tools offered upstream")
			},
			checkToolResult: func(t *testing.T, r mockupstream.Recorded) {
				t.Helper()
				assertChatToolResult(t, r.Body, "exec_command", codexToolArgs, codexToolOutput)
			},
		},
		{
			name: "anthropic", model: "claude-test", key: codexAnthKey, path: "/v1/messages",
			checkCall: func(t *testing.T, r mockupstream.Recorded) {
				t.Helper()
				assert.Equal(t, codexAnthKey, r.Header.Get("X-Api-Key"))
				body := parseAnthropicBody(t, r.Body)
				assert.Equal(t, "claude-test", body.Model)
				assert.True(t, body.Stream, "stream")
				assert.Contains(t, body.toolNames(), "exec_command", "Codex's function tools offered upstream")
			},
			checkToolResult: func(t *testing.T, r mockupstream.Recorded) {
				t.Helper()
				assertAnthropicToolResult(t, r.Body, "exec_command", codexToolArgs, codexToolOutput)
			},
		},
	}
}

// assertChatToolResult checks that a chat request carries an assistant
// call of name with args and the tool message answering it with expect.
func assertChatToolResult(t *testing.T, raw []byte, name, args, expect string) {
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
	require.NoError(t, json.Unmarshal(raw, &body), "%.300s", raw)
	callID, result := "", ""
	for _, m := range body.Messages {
		for _, c := range m.ToolCalls {
			if c.Function.Name == name {
				callID = c.ID
				assert.JSONEq(t, args, c.Function.Arguments)
			}
		}
		if m.Role == "tool" && callID != "" && m.ToolCallID == callID {
			result = string(m.Content)
		}
	}
	require.NotEmpty(t, callID, "no %s call in the history: %.2000s", name, raw)
	assert.Contains(t, result, expect, "the tool message for %s", callID)
}

// assertAnthropicToolResult checks that a Messages request carries a
// tool_use of name with args and the tool_result answering it with expect.
func assertAnthropicToolResult(t *testing.T, raw []byte, name, args, expect string) {
	t.Helper()
	body := parseAnthropicBody(t, raw)
	useID, result := "", ""
	for _, m := range body.Messages {
		for _, b := range blocksOf(t, m.Content) {
			switch {
			case b.Type == "tool_use" && b.Name == name:
				useID = b.ID
				assert.JSONEq(t, args, string(b.Input))
			case b.Type == "tool_result" && useID != "" && b.ToolUseID == useID:
				result = string(b.Content)
			}
		}
	}
	require.NotEmpty(t, useID, "no %s tool_use in the history: %.2000s", name, raw)
	assert.Contains(t, result, expect, "the tool_result for %s", useID)
}

// TestCodexThroughGateway runs Codex against the gateway binary's
// /v1/responses, whose modelAliases map the model Codex asks for to an
// openai-type provider and to an anthropic-type provider (both
// translated through the hub). A recorder between the two shows what
// Codex sent and got.
func TestCodexThroughGateway(t *testing.T) {
	bin := codexproc.Require(t)
	gwBin := buildGatewayBinary(t)

	for _, k := range codexGatewayKinds() {
		t.Run(k.name, func(t *testing.T) {
			mock := mockupstream.New(mockupstream.Options{
				Models:          []string{"gpt-5-mini"},
				AnthropicModels: []string{"claude-test"},
				StrictModels:    true,
				Chunks:          codexChunks,
				OpenAIAPIKey:    codexUpstreamKey,
				AnthropicAPIKey: codexAnthKey,
				ToolTurn:        codexToolTurn(),
				RecordLimit:     100,
			})
			up := httptest.NewServer(mock)
			t.Cleanup(up.Close)
			gw := startGateway(t, gwBin, map[string]interface{}{
				"providers": map[string]interface{}{
					"up": map[string]interface{}{"type": k.name, "baseUrl": up.URL, "apiKey": k.key, "models": []string{k.model}},
				},
				"modelAliases": map[string]string{codexproc.DefaultModel: "up/" + k.model},
				"groups":       map[string]interface{}{"default": map[string]interface{}{"providers": []string{}}},
				"users": map[string]interface{}{"inline": []map[string]interface{}{
					{"name": "dana", "group": "default", "apiKey": codexUserKey},
				}},
			})

			// run is one Codex run through a fresh recorder.
			run := func(t *testing.T, prompt string) (codexproc.Result, []claudeproc.Exchange, []mockupstream.Recorded) {
				t.Helper()
				mock.Reset()
				rec := claudeproc.NewRecorder(t, gw.URL)
				res := codexproc.Run(t, bin, codexproc.Options{BaseURL: rec.URL + "/v1", APIKey: codexUserKey, Prompt: prompt})
				return res, rec.Exchanges(), mock.Requests()
			}

			t.Run("text", func(t *testing.T) {
				res, sent, upstream := run(t, "say hi")
				require.Equal(t, 0, res.ExitCode, "%s", res)
				assert.Equal(t, mockupstream.ReplyText(codexChunks)+"\n", res.Stdout, "%s", res)
				require.Len(t, sent, 1, "requests Codex sent: %+v", sent)
				assert.Equal(t, "POST", sent[0].Method)
				assert.Equal(t, "/v1/responses", sent[0].Path)
				assert.Equal(t, 200, sent[0].Status)
				assert.True(t, sent[0].Stream(), "Codex streams")
				require.Len(t, upstream, 1, "upstream requests")
				assert.Equal(t, k.path, upstream[0].Path)
				k.checkCall(t, upstream[0])
				for name, values := range upstream[0].Header {
					for _, v := range values {
						assert.NotContains(t, v, codexUserKey, "client key upstream in %s", name)
					}
				}
			})

			t.Run("tool_turn", func(t *testing.T) {
				res, sent, upstream := run(t, codexToolPrompt)
				require.Equal(t, 0, res.ExitCode, "%s", res)
				assert.Equal(t, codexToolFinal+"\n", res.Stdout, "%s", res)
				require.Len(t, sent, 2, "the call and the answer to its output")
				for i, e := range sent {
					assert.Equal(t, 200, e.Status, "request %d", i)
				}
				assertCodexToolRoundTrip(t, sent[1].Body)
				require.Len(t, upstream, 2, "upstream requests")
				for _, r := range upstream {
					assert.Equal(t, k.path, r.Path)
					k.checkCall(t, r)
				}
				k.checkToolResult(t, upstream[1])
			})
		})
	}
}
