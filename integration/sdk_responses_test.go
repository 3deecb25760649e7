package integration_test

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmgateway/llmgateway/integration/mockupstream"
)

// The Responses API through openai-go: text, a function-calling round
// trip and a length stop, plain and streaming, against the mock's own
// Responses API (the harness) and through the gateway binary against an
// openai-, an anthropic- and a gemini-type provider on one mock.
const (
	rsChunks       = 4
	rsUserKey      = "sk-frank-responses-client-key"
	rsOpenAIKey    = "sk-oa-responses-upstream"
	rsAnthKey      = "sk-ant-responses-upstream"
	rsGemKey       = "gem-responses-upstream"
	rsInstructions = "Be terse."          // 2 words
	rsPrompt       = "say hi to the mock" // 5 words
	// The scripted tool turn: the mock calls get_forecast for Paris, and
	// answers rsToolFinal once the function_call_output carries
	// rsToolResult.
	rsToolPrompt = "please look up the forecast for Paris" // 7 words
	rsToolName   = "get_forecast"
	rsToolArgs   = `{"city":"Paris"}`
	rsToolResult = "sunny, 18 C"
	rsToolFinal  = "The forecast for Paris: sunny, 18 C."
)

func rsToolTurn() *mockupstream.ToolTurn {
	return &mockupstream.ToolTurn{Trigger: "look up the forecast", Name: rsToolName, Input: rsToolArgs, Expect: rsToolResult, FinalText: rsToolFinal}
}

func newResponsesMock() *mockupstream.Server {
	return mockupstream.New(mockupstream.Options{
		Models:          []string{"gpt-5-mini"},
		AnthropicModels: []string{"claude-test"},
		GeminiModels:    []string{"gemini-test"},
		StrictModels:    true,
		Chunks:          rsChunks,
		OpenAIAPIKey:    rsOpenAIKey,
		AnthropicAPIKey: rsAnthKey,
		GeminiAPIKey:    rsGemKey,
		ToolTurn:        rsToolTurn(),
		RecordLimit:     1000,
	})
}

// openaiUsageFor is the usage of the mock's own OpenAI answers: a token a
// word of the prompt, a token a chunk.
func openaiUsageFor(promptWords, output int) wantUsage {
	return wantUsage{prompt: int64(promptWords), completion: int64(output), total: int64(promptWords + output)}
}

// responsesTarget is one server a Responses client talks to.
type responsesTarget struct {
	name  string
	model string
	usage func(promptWords, output int) wantUsage
	// exact: one text delta a mock chunk (the mock itself); a gateway may
	// cut deltas differently.
	exact bool
}

func assertResponsesUsage(t *testing.T, want wantUsage, got responses.ResponseUsage) {
	t.Helper()
	assert.Equal(t, want.prompt, got.InputTokens, "input_tokens")
	assert.Equal(t, want.completion, got.OutputTokens, "output_tokens")
	assert.Equal(t, want.total, got.TotalTokens, "total_tokens")
	assert.Equal(t, want.cached, got.InputTokensDetails.CachedTokens, "input_tokens_details.cached_tokens")
	assert.Equal(t, want.reasoning, got.OutputTokensDetails.ReasoningTokens, "output_tokens_details.reasoning_tokens")
}

// streamedResponse is what a Responses stream delivered.
type streamedResponse struct {
	types    []string // event types, in order
	text     string   // the output_text deltas, concatenated
	args     string   // the function_call_arguments deltas, concatenated
	terminal responses.Response
}

// readResponsesStream drains a stream, checking that sequence numbers
// count from 0 and that it ends with a terminal event carrying the
// response.
func readResponsesStream(t *testing.T, stream interface {
	Next() bool
	Current() responses.ResponseStreamEventUnion
	Err() error
	Close() error
}) streamedResponse {
	t.Helper()
	defer stream.Close()
	var out streamedResponse
	for stream.Next() {
		e := stream.Current()
		assert.Equal(t, int64(len(out.types)), e.SequenceNumber, "sequence_number of %s", e.Type)
		out.types = append(out.types, e.Type)
		switch e.Type {
		case "response.output_text.delta":
			out.text += e.Delta
		case "response.function_call_arguments.delta":
			out.args += e.Delta
		case "response.completed", "response.incomplete", "response.failed":
			out.terminal = e.Response
		}
	}
	require.NoError(t, stream.Err())
	require.NotEmpty(t, out.types, "no events")
	require.NotEmpty(t, out.terminal.ID, "no terminal event with a response id: %v", out.types)
	return out
}

// compressDeltas collapses runs of the same delta event into one, so a
// sequence can be compared whatever the number of deltas.
func compressDeltas(types []string) []string {
	var out []string
	for _, typ := range types {
		if n := len(out); n > 0 && out[n-1] == typ && strings.HasSuffix(typ, ".delta") {
			continue
		}
		out = append(out, typ)
	}
	return out
}

var (
	rsTextEvents = []string{
		"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.done", "response.content_part.done", "response.output_item.done",
	}
	rsCallEvents = []string{
		"response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.done", "response.output_item.done",
	}
)

func rsForecastTool() []responses.ToolUnionParam {
	return []responses.ToolUnionParam{responses.ToolParamOfFunction(rsToolName, map[string]any{
		"type":       "object",
		"properties": map[string]any{"city": map[string]any{"type": "string"}},
		"required":   []string{"city"},
	}, false)}
}

// functionCallOf returns the function_call output item of resp.
func functionCallOf(t *testing.T, resp responses.Response) responses.ResponseFunctionToolCall {
	t.Helper()
	for _, item := range resp.Output {
		if item.Type == "function_call" {
			return item.AsFunctionCall()
		}
	}
	t.Fatalf("no function_call output item: %s", resp.RawJSON())
	return responses.ResponseFunctionToolCall{}
}

// runResponsesSuite runs the Responses scenarios against client for each
// target.
func runResponsesSuite(t *testing.T, client openai.Client, targets []responsesTarget) {
	for _, k := range targets {
		t.Run(k.name, func(t *testing.T) {
			textParams := responses.ResponseNewParams{
				Model:        k.model,
				Instructions: openai.String(rsInstructions),
				Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String(rsPrompt)},
			}

			t.Run("text", func(t *testing.T) {
				resp, err := client.Responses.New(sdkContext(t), textParams)
				require.NoError(t, err)
				assert.NotEmpty(t, resp.ID)
				assert.Equal(t, "response", string(resp.Object))
				assert.Equal(t, responses.ResponseStatusCompleted, resp.Status)
				assert.Equal(t, k.model, resp.Model, "model echoes the requested id")
				require.Len(t, resp.Output, 1, "%s", resp.RawJSON())
				assert.Equal(t, "message", resp.Output[0].Type)
				assert.Equal(t, "assistant", resp.Output[0].Role)
				assert.Equal(t, mockupstream.ReplyText(rsChunks), resp.OutputText())
				assertResponsesUsage(t, k.usage(7, rsChunks), resp.Usage)
			})

			t.Run("text_stream", func(t *testing.T) {
				got := readResponsesStream(t, client.Responses.NewStreaming(sdkContext(t), textParams))
				want := append(append([]string(nil), rsTextEvents...), "response.completed")
				if k.exact {
					assert.Equal(t, rsChunks, strings.Count(strings.Join(got.types, " "), "response.output_text.delta"), "a delta a chunk")
				}
				assert.Equal(t, want, compressDeltas(got.types))
				assert.Equal(t, mockupstream.ReplyText(rsChunks), got.text)
				assert.Equal(t, responses.ResponseStatusCompleted, got.terminal.Status)
				assert.Equal(t, got.text, got.terminal.OutputText(), "the completed response carries the streamed text")
				assertResponsesUsage(t, k.usage(7, rsChunks), got.terminal.Usage)
			})

			// The round trip: the model calls get_forecast; the client
			// sends the call and its output back (no previous_response_id:
			// the whole conversation, as Codex does with store false).
			callParams := responses.ResponseNewParams{
				Model: k.model,
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(rsToolPrompt)},
				Tools: rsForecastTool(),
			}
			answerParams := func(call responses.ResponseFunctionToolCall) responses.ResponseNewParams {
				p := callParams
				p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
					responses.ResponseInputItemParamOfMessage(rsToolPrompt, responses.EasyInputMessageRoleUser),
					responses.ResponseInputItemParamOfFunctionCall(call.Arguments, call.CallID, call.Name),
					responses.ResponseInputItemParamOfFunctionCallOutput(rsToolResult),
				}}
				p.Input.OfInputItemList[2].OfFunctionCallOutput.CallID = openai.String(call.CallID)
				return p
			}

			t.Run("tools", func(t *testing.T) {
				resp, err := client.Responses.New(sdkContext(t), callParams)
				require.NoError(t, err)
				assert.Equal(t, responses.ResponseStatusCompleted, resp.Status)
				call := functionCallOf(t, *resp)
				assert.Equal(t, rsToolName, call.Name)
				assert.JSONEq(t, rsToolArgs, call.Arguments)
				assert.NotEmpty(t, call.CallID)
				assertResponsesUsage(t, k.usage(7, mockupstream.ToolOutputTokens), resp.Usage)

				final, err := client.Responses.New(sdkContext(t), answerParams(call))
				require.NoError(t, err)
				assert.Equal(t, responses.ResponseStatusCompleted, final.Status)
				assert.Equal(t, rsToolFinal, final.OutputText(), "the mock answers this only when the output reached it: %s", final.RawJSON())
				assert.Positive(t, final.Usage.InputTokens)
				assert.Equal(t, final.Usage.InputTokens+final.Usage.OutputTokens, final.Usage.TotalTokens)
			})

			t.Run("tools_stream", func(t *testing.T) {
				got := readResponsesStream(t, client.Responses.NewStreaming(sdkContext(t), callParams))
				want := append(append(append([]string(nil), rsTextEvents...), rsCallEvents...), "response.completed")
				assert.Equal(t, want, compressDeltas(got.types), "a message with the preamble, then the call")
				assert.Equal(t, mockupstream.ToolTurnPreamble, got.text)
				assert.JSONEq(t, rsToolArgs, got.args)
				call := functionCallOf(t, got.terminal)
				assert.Equal(t, rsToolName, call.Name)
				assert.JSONEq(t, rsToolArgs, call.Arguments)
				assertResponsesUsage(t, k.usage(7, mockupstream.ToolOutputTokens), got.terminal.Usage)

				final := readResponsesStream(t, client.Responses.NewStreaming(sdkContext(t), answerParams(call)))
				assert.Equal(t, append(append([]string(nil), rsTextEvents...), "response.completed"), compressDeltas(final.types))
				assert.Equal(t, rsToolFinal, final.text)
				assert.Equal(t, rsToolFinal, final.terminal.OutputText())
			})

			lengthParams := textParams
			lengthParams.MaxOutputTokens = openai.Int(2)
			t.Run("length_stop", func(t *testing.T) {
				if k.name == "openai" {
					t.Skip("the mock's chat route ignores the output cap, so an openai-type provider never stops on length here")
				}
				resp, err := client.Responses.New(sdkContext(t), lengthParams)
				require.NoError(t, err)
				assert.Equal(t, responses.ResponseStatusIncomplete, resp.Status)
				assert.Equal(t, "max_output_tokens", resp.IncompleteDetails.Reason)
				assert.Equal(t, mockupstream.ReplyText(2), resp.OutputText())

				got := readResponsesStream(t, client.Responses.NewStreaming(sdkContext(t), lengthParams))
				require.NotEmpty(t, got.types)
				assert.Equal(t, "response.incomplete", got.types[len(got.types)-1])
				assert.Equal(t, mockupstream.ReplyText(2), got.text)
				assert.Equal(t, "max_output_tokens", got.terminal.IncompleteDetails.Reason)
			})
		})
	}
}

// TestSDKResponsesAgainstMock runs openai-go's Responses client straight
// against the mock's Responses API: it proves the mock speaks the API as
// the official SDK reads it (the base of a native provider's tests).
func TestSDKResponsesAgainstMock(t *testing.T) {
	mock := newResponsesMock()
	up := httptest.NewServer(mock)
	t.Cleanup(up.Close)
	client := openai.NewClient(option.WithBaseURL(up.URL+"/v1/"), option.WithAPIKey(rsOpenAIKey), option.WithMaxRetries(0))
	runResponsesSuite(t, client, []responsesTarget{{name: "mock", model: "gpt-5-mini", usage: openaiUsageFor, exact: true}})
	for _, r := range mock.Requests() {
		assert.Equal(t, "/v1/responses", r.Path)
		assert.Equal(t, "Bearer "+rsOpenAIKey, r.Header.Get("Authorization"))
	}
}

// TestSDKResponsesThroughBinary runs the same scenarios through the
// gateway binary's /v1/responses, translated through the hub to an
// openai-, an anthropic- and a gemini-type provider.
func TestSDKResponsesThroughBinary(t *testing.T) {
	bin := buildGatewayBinary(t)
	mock := newResponsesMock()
	up := httptest.NewServer(mock)
	t.Cleanup(up.Close)
	provider := func(typ, key, model string) map[string]interface{} {
		return map[string]interface{}{"type": typ, "baseUrl": up.URL, "apiKey": key, "models": []string{model}}
	}
	gw := startGateway(t, bin, map[string]interface{}{
		"providers": map[string]interface{}{
			"oa":   provider("openai", rsOpenAIKey, "gpt-5-mini"),
			"anth": provider("anthropic", rsAnthKey, "claude-test"),
			"gem":  provider("gemini", rsGemKey, "gemini-test"),
		},
		"groups": map[string]interface{}{"default": map[string]interface{}{"providers": []string{}}},
		"users": map[string]interface{}{"inline": []map[string]interface{}{
			{"name": "frank", "group": "default", "apiKey": rsUserKey},
		}},
	})
	client := openai.NewClient(option.WithBaseURL(gw.URL+"/v1/"), option.WithAPIKey(rsUserKey), option.WithMaxRetries(0))

	runResponsesSuite(t, client, []responsesTarget{
		{name: "openai", model: "oa/gpt-5-mini", usage: openaiUsageFor},
		{name: "anthropic", model: "anth/claude-test", usage: anthropicUsageFor},
		{name: "gemini", model: "gem/gemini-test", usage: geminiUsageFor},
	})

	t.Run("upstream_paths", func(t *testing.T) {
		// Translated: no provider was sent a Responses request.
		paths := map[string]int{}
		for _, r := range mock.Requests() {
			paths[r.Path]++
			for name, values := range r.Header {
				for _, v := range values {
					assert.NotContains(t, v, rsUserKey, "client key upstream in %s", name)
				}
			}
		}
		assert.Zero(t, paths["/v1/responses"], "paths %v", paths)
		assert.Positive(t, paths["/v1/chat/completions"], "paths %v", paths)
		assert.Positive(t, paths["/v1/messages"], "paths %v", paths)
	})

	t.Run("unknown_model", func(t *testing.T) {
		_, err := client.Responses.New(sdkContext(t), responses.ResponseNewParams{
			Model: "oa/no-such-model",
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(rsPrompt)},
		})
		var apiErr *openai.Error
		require.True(t, errors.As(err, &apiErr), "want an API error, got %v", err)
		assert.Equal(t, 404, apiErr.StatusCode)
		assert.Equal(t, "model_not_found", apiErr.Code, "the OpenAI envelope: %s", apiErr.RawJSON())
		assert.Contains(t, apiErr.Message, "oa/no-such-model")
	})
}
