package integration_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmgateway/llmgateway/integration/mockupstream"
)

const (
	msgUserKey   = "sk-dave-messages-client-key"
	msgAnthKey   = "sk-ant-messages-upstream"
	msgOpenAIKey = "sk-oa-messages-upstream"
	msgGemKey    = "gem-messages-upstream"
	msgChunks    = 4
	// msgPromptWords is the mock's token count of msgSystem + msgPrompt.
	msgSystem      = "Be terse."
	msgPrompt      = "say hi to the mock"
	msgPromptWords = 7
	// The tool conversation: the mock calls get_weather for the ask,
	// then answers msgToolFinal once a tool result carries "18 C".
	msgWeatherAsk   = "What is the weather in Paris?"
	msgWeatherWords = 6
	msgToolResult   = "18 C and sunny"
	msgToolFinal    = "It is 18 C and sunny in Paris."
	msgToolInput    = `{"city":"Paris","unit":"celsius"}`
)

// msgToolTurn scripts the tool conversation on the Anthropic, OpenAI
// and Gemini routes of the mock.
var msgToolTurn = mockupstream.ToolTurn{
	Trigger:   "weather in Paris",
	Name:      "get_weather",
	Input:     msgToolInput,
	Expect:    "18 C",
	FinalText: msgToolFinal,
}

// msgUsage is the Anthropic usage a client must see.
type msgUsage struct {
	input, output, cacheCreation, cacheRead int64
}

func assertMsgUsage(t *testing.T, want msgUsage, got anthropic.Usage) {
	t.Helper()
	assert.Equal(t, want.input, got.InputTokens, "input_tokens")
	assert.Equal(t, want.output, got.OutputTokens, "output_tokens")
	assert.Equal(t, want.cacheCreation, got.CacheCreationInputTokens, "cache_creation_input_tokens")
	assert.Equal(t, want.cacheRead, got.CacheReadInputTokens, "cache_read_input_tokens")
}

// messagesKind is one upstream wire format behind the Messages API.
type messagesKind struct {
	name  string // the provider type, and the subtest's name
	model string // what the client asks for
	// usage maps the mock's prompt words and output tokens to the usage
	// the client must see.
	usage func(promptWords, output int) msgUsage
	// isCall reports whether a recorded request is a model call of this
	// kind; check asserts one (stream: whether it should stream).
	isCall func(r mockupstream.Recorded) bool
	check  func(t *testing.T, r mockupstream.Recorded, stream bool)
	// toolPreamble is the text block before a tool call ("" for none);
	// toolPieces the least number of input_json_delta events of a
	// streamed call; toolAnswer the reply to the tool result.
	toolPreamble string
	toolPieces   int
	toolAnswer   string
	// maxTokens: the upstream honours the output cap (stop_reason
	// max_tokens); stopSequences: it reports which stop sequence matched.
	maxTokens, stopSequences bool
	// countExact: count_tokens answers the mock's own count.
	countExact bool
}

func anthropicMessagesKind(model string) messagesKind {
	return messagesKind{
		name:  "anthropic",
		model: model,
		usage: func(words, output int) msgUsage {
			return msgUsage{int64(words), int64(output), mockupstream.AnthropicCacheCreationTokens, mockupstream.AnthropicCacheReadTokens}
		},
		isCall: func(r mockupstream.Recorded) bool { return r.Method == "POST" && r.Path == "/v1/messages" },
		check: func(t *testing.T, r mockupstream.Recorded, stream bool) {
			t.Helper()
			assert.Equal(t, msgAnthKey, r.Header.Get("X-Api-Key"), "provider key in x-api-key")
			assert.NotEmpty(t, r.Header.Get("Anthropic-Version"))
			body := parseAnthropicBody(t, r.Body)
			assert.Equal(t, "claude-test", body.Model)
			assert.Equal(t, stream, body.Stream, "stream")
		},
		toolPreamble: mockupstream.ToolTurnPreamble, toolPieces: 2, toolAnswer: msgToolFinal,
		maxTokens: true, stopSequences: true, countExact: true,
	}
}

func messagesKinds() []messagesKind {
	return []messagesKind{
		anthropicMessagesKind("anth/claude-test"),
		{
			name:  "openai",
			model: "oa/gpt-5-mini",
			usage: func(words, output int) msgUsage { return msgUsage{int64(words), int64(output), 0, 0} },
			isCall: func(r mockupstream.Recorded) bool {
				return r.Method == "POST" && r.Path == "/v1/chat/completions"
			},
			check: func(t *testing.T, r mockupstream.Recorded, stream bool) {
				t.Helper()
				assert.Equal(t, "Bearer "+msgOpenAIKey, r.Header.Get("Authorization"))
				var body struct {
					Model  string `json:"model"`
					Stream bool   `json:"stream"`
				}
				require.NoError(t, json.Unmarshal(r.Body, &body), "%s", r.Body)
				assert.Equal(t, "gpt-5-mini", body.Model)
				assert.Equal(t, stream, body.Stream, "stream")
			},
			toolPreamble: mockupstream.ToolTurnPreamble, toolPieces: 2, toolAnswer: msgToolFinal,
		},
		{
			name:  "gemini",
			model: "gem/gemini-test",
			// Anthropic's output_tokens include thinking: candidates +
			// thoughts.
			usage: func(words, output int) msgUsage {
				return msgUsage{int64(words), int64(output + mockupstream.GeminiThoughtsTokens), 0, 0}
			},
			isCall: func(r mockupstream.Recorded) bool {
				return r.Method == "POST" &&
					(r.Path == "/v1beta/models/gemini-test:generateContent" || r.Path == "/v1beta/models/gemini-test:streamGenerateContent")
			},
			check: func(t *testing.T, r mockupstream.Recorded, stream bool) {
				t.Helper()
				assert.Equal(t, msgGemKey, r.Header.Get("X-Goog-Api-Key"))
				want := "/v1beta/models/gemini-test:generateContent"
				if stream {
					want = "/v1beta/models/gemini-test:streamGenerateContent"
				}
				assert.Equal(t, want, r.Path)
			},
			toolPreamble: mockupstream.ToolTurnPreamble, toolPieces: 1, toolAnswer: msgToolFinal,
			maxTokens: true,
		},
	}
}

// lastCall returns the most recent model call of kind k the mock saw.
func lastCall(t *testing.T, m *mockupstream.Server, k messagesKind) mockupstream.Recorded {
	t.Helper()
	reqs := m.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if k.isCall(reqs[i]) {
			return reqs[i]
		}
	}
	t.Fatalf("the upstream never received a %s model call (%d requests recorded)", k.name, len(reqs))
	return mockupstream.Recorded{}
}

func newMessagesMock() *mockupstream.Server {
	turn := msgToolTurn
	return mockupstream.New(mockupstream.Options{
		Models:          []string{"gpt-5-mini"},
		AnthropicModels: []string{"claude-test"},
		GeminiModels:    []string{"gemini-test"},
		StrictModels:    true,
		Chunks:          msgChunks,
		AnthropicAPIKey: msgAnthKey,
		GeminiAPIKey:    msgGemKey,
		RecordLimit:     1000,
		ToolTurn:        &turn,
	})
}

// newAnthropicClient is the SDK pointed at baseURL with key, ignoring
// the environment (ANTHROPIC_BASE_URL, ANTHROPIC_AUTH_TOKEN, ...) and
// retrying nothing. The SDK (v2.15.0) sends the key as "Authorization:
// Bearer <key>", not as x-api-key; withXAPIKey adds the x-api-key header
// too, which the mock's Anthropic routes require (as the gateway's
// upstream leg sends them).
func newAnthropicClient(baseURL, key string, withXAPIKey bool) anthropic.Client {
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(baseURL + "/"),
		option.WithAPIKey(key),
		option.WithMaxRetries(0),
	}
	if withXAPIKey {
		opts = append(opts, option.WithHeader("X-Api-Key", key))
	}
	return anthropic.NewClient(opts...)
}

var msgWeatherTool = anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
	Name:        "get_weather",
	Description: anthropic.String("Current weather in a city"),
	InputSchema: anthropic.ToolInputSchemaParam{
		Properties: map[string]any{"city": map[string]any{"type": "string"}, "unit": map[string]any{"type": "string"}},
		Required:   []string{"city"},
	},
}}

// TestSDKAnthropicAgainstMock runs the Messages suite with the Anthropic
// Go SDK straight against the mock: it proves the suite's expectations
// of the anthropic kind without the gateway.
func TestSDKAnthropicAgainstMock(t *testing.T) {
	mock := newMessagesMock()
	up := httptest.NewServer(mock)
	t.Cleanup(up.Close)
	client := newAnthropicClient(up.URL, msgAnthKey, true)
	runMessagesSuite(t, client, mock, anthropicMessagesKind("claude-test"))
	runMessagesErrors(t, up.URL, msgAnthKey, true, "claude-test", mock.Total, 2)
}

// TestSDKAnthropicThroughBinary runs the Messages suite with the
// Anthropic Go SDK through the gateway binary, against anthropic-,
// openai- and gemini-type providers on one mock.
func TestSDKAnthropicThroughBinary(t *testing.T) {
	bin := buildGatewayBinary(t)
	mock := newMessagesMock()
	up := httptest.NewServer(mock)
	t.Cleanup(up.Close)
	provider := func(typ, key, model string) map[string]interface{} {
		return map[string]interface{}{"type": typ, "baseUrl": up.URL, "apiKey": key, "models": []string{model}}
	}
	gw := startGateway(t, bin, map[string]interface{}{
		"providers": map[string]interface{}{
			"anth": provider("anthropic", msgAnthKey, "claude-test"),
			"oa":   provider("openai", msgOpenAIKey, "gpt-5-mini"),
			"gem":  provider("gemini", msgGemKey, "gemini-test"),
		},
		"groups": map[string]interface{}{"default": map[string]interface{}{"providers": []string{}}},
		"users": map[string]interface{}{"inline": []map[string]interface{}{
			{"name": "dave", "group": "default", "apiKey": msgUserKey},
		}},
	})
	client := newAnthropicClient(gw.URL, msgUserKey, false)
	for _, k := range messagesKinds() {
		t.Run(k.name, func(t *testing.T) { runMessagesSuite(t, client, mock, k) })
	}
	// The gateway refuses these itself: nothing reaches the upstream.
	runMessagesErrors(t, gw.URL, msgUserKey, false, "anth/claude-test", mock.Total, 0)

	t.Run("client_key_never_upstream", func(t *testing.T) {
		reqs := mock.Requests()
		require.NotEmpty(t, reqs)
		for _, r := range reqs {
			for name, values := range r.Header {
				for _, v := range values {
					assert.NotContains(t, v, msgUserKey, "%s %s header %s", r.Method, r.Path, name)
				}
			}
			assert.NotContains(t, string(r.Body), msgUserKey, "%s %s body", r.Method, r.Path)
		}
	})
}

// runMessagesSuite is the Messages API as the SDK uses it, against the
// model of kind k: plain and streamed text, a streamed tool call, the
// tool result's answer, stop reasons and count_tokens.
func runMessagesSuite(t *testing.T, client anthropic.Client, mock *mockupstream.Server, k messagesKind) {
	textParams := anthropic.MessageNewParams{
		Model:     anthropic.Model(k.model),
		MaxTokens: 1024,
		System:    []anthropic.TextBlockParam{{Text: msgSystem}},
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(msgPrompt))},
	}

	t.Run("new_text", func(t *testing.T) {
		msg, err := client.Messages.New(sdkContext(t), textParams)
		require.NoError(t, err)
		assert.NotEmpty(t, msg.ID)
		assert.Equal(t, "assistant", string(msg.Role))
		require.Len(t, msg.Content, 1, "%s", msg.RawJSON())
		assert.Equal(t, "text", msg.Content[0].Type)
		assert.Equal(t, mockupstream.ReplyText(msgChunks), msg.Content[0].Text)
		assert.Equal(t, anthropic.StopReasonEndTurn, msg.StopReason)
		assertMsgUsage(t, k.usage(msgPromptWords, msgChunks), msg.Usage)
		k.check(t, lastCall(t, mock, k), false)
	})

	t.Run("stream_text_accumulated", func(t *testing.T) {
		stream := client.Messages.NewStreaming(sdkContext(t), textParams)
		defer stream.Close()
		var acc anthropic.Message
		var types []string
		deltas := 0
		for stream.Next() {
			ev := stream.Current()
			require.NoError(t, acc.Accumulate(ev), "event %s", ev.RawJSON())
			types = append(types, ev.Type)
			if ev.Type == "content_block_delta" && ev.Delta.Type == "text_delta" {
				deltas++
			}
		}
		require.NoError(t, stream.Err())
		require.NotEmpty(t, types)
		assert.Equal(t, "message_start", types[0])
		assert.Equal(t, "message_stop", types[len(types)-1])
		assert.Equal(t, msgChunks, deltas, "one text delta a chunk: %v", types)
		require.Len(t, acc.Content, 1)
		assert.Equal(t, mockupstream.ReplyText(msgChunks), acc.Content[0].Text)
		assert.Equal(t, anthropic.StopReasonEndTurn, acc.StopReason)
		assertMsgUsage(t, k.usage(msgPromptWords, msgChunks), acc.Usage)
		k.check(t, lastCall(t, mock, k), true)
	})

	t.Run("stream_tool_use", func(t *testing.T) {
		stream := client.Messages.NewStreaming(sdkContext(t), anthropic.MessageNewParams{
			Model:     anthropic.Model(k.model),
			MaxTokens: 1024,
			Tools:     []anthropic.ToolUnionParam{msgWeatherTool},
			Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(msgWeatherAsk))},
		})
		defer stream.Close()
		var acc anthropic.Message
		pieces := 0
		for stream.Next() {
			ev := stream.Current()
			require.NoError(t, acc.Accumulate(ev), "event %s", ev.RawJSON())
			if ev.Type == "content_block_delta" && ev.Delta.Type == "input_json_delta" {
				pieces++
			}
		}
		require.NoError(t, stream.Err())
		assert.GreaterOrEqual(t, pieces, k.toolPieces, "input_json_delta events")
		var texts []string
		var tool *anthropic.ContentBlockUnion
		for i := range acc.Content {
			switch acc.Content[i].Type {
			case "text":
				texts = append(texts, acc.Content[i].Text)
			case "tool_use":
				tool = &acc.Content[i]
			}
		}
		if k.toolPreamble != "" {
			assert.Equal(t, []string{k.toolPreamble}, texts)
		}
		require.NotNil(t, tool, "no tool_use block: %+v", acc.Content)
		assert.Equal(t, "get_weather", tool.Name)
		assert.NotEmpty(t, tool.ID)
		assert.JSONEq(t, msgToolInput, string(tool.Input))
		assert.Equal(t, anthropic.StopReasonToolUse, acc.StopReason)
		assertMsgUsage(t, k.usage(msgWeatherWords, mockupstream.ToolOutputTokens), acc.Usage)
		rec := lastCall(t, mock, k)
		k.check(t, rec, true)
		assert.Contains(t, string(rec.Body), `"get_weather"`, "the tool reached the upstream")
	})

	t.Run("tool_result_answered", func(t *testing.T) {
		msg, err := client.Messages.New(sdkContext(t), anthropic.MessageNewParams{
			Model:     anthropic.Model(k.model),
			MaxTokens: 1024,
			Tools:     []anthropic.ToolUnionParam{msgWeatherTool},
			Messages: []anthropic.MessageParam{
				anthropic.NewUserMessage(anthropic.NewTextBlock(msgWeatherAsk)),
				anthropic.NewAssistantMessage(
					anthropic.NewTextBlock(mockupstream.ToolTurnPreamble),
					anthropic.NewToolUseBlock("toolu_sdk_1", json.RawMessage(msgToolInput), "get_weather"),
				),
				anthropic.NewUserMessage(anthropic.NewToolResultBlock("toolu_sdk_1", msgToolResult, false)),
			},
		})
		require.NoError(t, err)
		require.Len(t, msg.Content, 1, "%s", msg.RawJSON())
		assert.Equal(t, k.toolAnswer, msg.Content[0].Text)
		assert.Equal(t, anthropic.StopReasonEndTurn, msg.StopReason)
		rec := lastCall(t, mock, k)
		k.check(t, rec, false)
		assert.Contains(t, string(rec.Body), msgToolResult, "the tool result reached the upstream")
	})

	t.Run("stop_max_tokens", func(t *testing.T) {
		if !k.maxTokens {
			t.Skipf("the mock's %s route ignores the output cap", k.name)
		}
		params := textParams
		params.MaxTokens = 2
		msg, err := client.Messages.New(sdkContext(t), params)
		require.NoError(t, err)
		require.Len(t, msg.Content, 1)
		assert.Equal(t, mockupstream.ReplyText(2), msg.Content[0].Text)
		assert.Equal(t, anthropic.StopReasonMaxTokens, msg.StopReason)
	})

	t.Run("stop_sequence", func(t *testing.T) {
		if !k.stopSequences {
			t.Skipf("the %s wire format does not say which stop sequence matched", k.name)
		}
		params := textParams
		params.StopSequences = []string{"part 2"}
		msg, err := client.Messages.New(sdkContext(t), params)
		require.NoError(t, err)
		require.Len(t, msg.Content, 1)
		assert.Equal(t, "Hello from mock part 1 ", msg.Content[0].Text)
		assert.Equal(t, anthropic.StopReasonStopSequence, msg.StopReason)
		assert.Equal(t, "part 2", msg.StopSequence)
	})

	t.Run("count_tokens", func(t *testing.T) {
		count, err := client.Messages.CountTokens(sdkContext(t), anthropic.MessageCountTokensParams{
			Model:    anthropic.Model(k.model),
			System:   anthropic.MessageCountTokensParamsSystemUnion{OfString: anthropic.String(msgSystem)},
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(msgPrompt))},
		})
		require.NoError(t, err)
		if k.countExact {
			assert.Equal(t, int64(msgPromptWords), count.InputTokens)
		} else {
			assert.Positive(t, count.InputTokens)
		}
	})
}

// runMessagesErrors checks the error types the SDK decodes: a wrong key
// is a 401 authentication_error and an unknown model a 404
// not_found_error, plain and streamed. goodKey is a key the server
// accepts (sent as x-api-key too with xAPIKey); upstreamTotal counts the
// requests the upstream has seen, of which each case may add at most
// maxUpstream.
func runMessagesErrors(t *testing.T, baseURL, goodKey string, xAPIKey bool, model string, upstreamTotal func() int64, maxUpstream int64) {
	ask := func(m string) anthropic.MessageNewParams {
		return anthropic.MessageNewParams{
			Model: anthropic.Model(m), MaxTokens: 64,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
		}
	}
	cases := []struct {
		name, key, model string
		status           int
		typ              anthropic.ErrorType
	}{
		{"wrong_key_401", "sk-wrong-key", model, http.StatusUnauthorized, anthropic.ErrorTypeAuthenticationError},
		{"unknown_model_404", goodKey, "no-such-model", http.StatusNotFound, anthropic.ErrorTypeNotFoundError},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			client := newAnthropicClient(baseURL, tc.key, xAPIKey)
			before := upstreamTotal()

			_, err := client.Messages.New(sdkContext(t), ask(tc.model))
			var apiErr *anthropic.Error
			require.True(t, errors.As(err, &apiErr), "want *anthropic.Error, got %T %v", err, err)
			assert.Equal(t, tc.status, apiErr.StatusCode, "%v", err)
			assert.Equal(t, tc.typ, apiErr.Type(), "%v", err)
			assert.NotEmpty(t, apiErr.Message)

			stream := client.Messages.NewStreaming(sdkContext(t), ask(tc.model))
			for stream.Next() {
				t.Errorf("a refused stream delivered %s", stream.Current().RawJSON())
			}
			apiErr = nil
			require.True(t, errors.As(stream.Err(), &apiErr), "stream: want *anthropic.Error, got %T %v", stream.Err(), stream.Err())
			assert.Equal(t, tc.status, apiErr.StatusCode)
			assert.Equal(t, tc.typ, apiErr.Type())
			stream.Close()

			assert.LessOrEqual(t, upstreamTotal()-before, maxUpstream, "requests that reached the upstream")
		})
	}
}
