package integration_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmgateway/llmgateway/integration/mockupstream"
)

// The translate environment: the gateway binary with an openai, an
// anthropic and a gemini provider all backed by ONE mock upstream (it
// answers each wire format on its own paths), plus providers on the same
// mock whose baseUrl carries a failure knob (see mockupstream's path
// knobs).
const (
	trUserKey   = "sk-carol-translate-client-key"
	trOpenAIKey = "sk-oa-upstream-key"
	trAnthKey   = "sk-ant-test"
	trGemKey    = "gem-test"
	trChunks    = 4
	// trAnthStallAfter: message_start, content_block_start, ping and two
	// text deltas reach the gateway, then the upstream stalls.
	trAnthStallAfter = 5
	// trGemStallAfter: two text chunks, then a stall.
	trGemStallAfter = 2

	trAnthModel  = "anth/claude-test"
	trGemModel   = "gem/gemini-test"
	trGemEmbed   = "gem/text-embedding-test"
	trGemImagen  = "gem/imagen-test"
	trOpenAIChat = "oa/gpt-5-mini"
)

func TestSDKTranslateThroughBinary(t *testing.T) {
	env := startTranslateEnv(t)

	t.Run("models_list", func(t *testing.T) {
		page, err := env.client.Models.List(sdkContext(t))
		require.NoError(t, err)
		var ids []string
		for _, m := range page.Data {
			ids = append(ids, m.ID)
		}
		sort.Strings(ids)
		for _, want := range []string{trAnthModel, trGemModel, trGemEmbed, trGemImagen, trOpenAIChat} {
			assert.Contains(t, ids, want)
		}
		// Discovered through GET /v1/models (Anthropic shape) and GET
		// /v1beta/models.
		for _, want := range []string{"anthdisc/claude-test", "gemdisc/gemini-test", "gemdisc/gemini-3-test", "gemdisc/text-embedding-test", "gemdisc/imagen-test"} {
			assert.Contains(t, ids, want)
		}
		rec := lastTo(t, env.mock, "GET", "/v1/models")
		assert.Equal(t, trAnthKey, rec.Header.Get("X-Api-Key"))
		assert.NotEmpty(t, rec.Header.Get("Anthropic-Version"))
		rec = lastTo(t, env.mock, "GET", "/v1beta/models")
		assert.Equal(t, trGemKey, rec.Header.Get("X-Goog-Api-Key"))
	})

	t.Run("openai_still_works", func(t *testing.T) {
		resp, err := env.client.Chat.Completions.New(sdkContext(t), openai.ChatCompletionNewParams{
			Model:    trOpenAIChat,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
		})
		require.NoError(t, err)
		assert.Equal(t, mockupstream.ReplyText(trChunks), resp.Choices[0].Message.Content)
		rec := lastTo(t, env.mock, "POST", "/v1/chat/completions")
		assert.Equal(t, "Bearer "+trOpenAIKey, rec.Header.Get("Authorization"))
	})

	for _, k := range translateKinds() {
		k := k
		t.Run(k.name, func(t *testing.T) {
			t.Run("chat", func(t *testing.T) {
				resp, err := env.client.Chat.Completions.New(sdkContext(t), openai.ChatCompletionNewParams{
					Model: k.model,
					Messages: []openai.ChatCompletionMessageParamUnion{
						openai.SystemMessage("Be terse."),
						openai.UserMessage("say hi to the mock"),
					},
				})
				require.NoError(t, err)
				assert.Equal(t, k.model, resp.Model, "model echoes the requested id")
				assert.Equal(t, "chat.completion", string(resp.Object))
				assert.NotEmpty(t, resp.ID)
				require.Len(t, resp.Choices, 1)
				assert.Equal(t, mockupstream.ReplyText(trChunks), resp.Choices[0].Message.Content)
				assert.Equal(t, "assistant", string(resp.Choices[0].Message.Role))
				assert.Equal(t, "stop", resp.Choices[0].FinishReason)
				assertUsage(t, k.usage(2+5, trChunks), resp.Usage)

				body := k.check(t, lastChatTo(t, env.mock, k.name), false)
				switch k.name {
				case "anthropic":
					// system hoisted out of messages.
					assert.Contains(t, string(mustJSON(t, body["system"])), "Be terse.", "system hoisted")
					msgs := body["messages"].([]interface{})
					assert.Len(t, msgs, 1)
					assert.NotContains(t, string(mustJSON(t, msgs)), "Be terse.")
				case "gemini":
					assert.Contains(t, string(mustJSON(t, body["systemInstruction"])), "Be terse.", "systemInstruction")
					contents := body["contents"].([]interface{})
					require.Len(t, contents, 1)
					assert.Equal(t, "user", contents[0].(map[string]interface{})["role"])
					assert.NotContains(t, string(mustJSON(t, contents)), "Be terse.")
				}
			})

			t.Run("chat_max_tokens_length", func(t *testing.T) {
				resp, err := env.client.Chat.Completions.New(sdkContext(t), openai.ChatCompletionNewParams{
					Model:               k.model,
					Messages:            []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
					MaxCompletionTokens: openai.Int(2),
				})
				require.NoError(t, err)
				assert.Equal(t, mockupstream.ReplyText(2), resp.Choices[0].Message.Content)
				assert.Equal(t, "length", resp.Choices[0].FinishReason)
			})

			t.Run("chat_stop_sequence", func(t *testing.T) {
				resp, err := env.client.Chat.Completions.New(sdkContext(t), openai.ChatCompletionNewParams{
					Model:    k.model,
					Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
					Stop:     openai.ChatCompletionNewParamsStopUnion{OfStringArray: []string{"rt 2"}},
				})
				require.NoError(t, err)
				assert.Equal(t, "Hello from mock part 1 pa", resp.Choices[0].Message.Content)
				assert.Equal(t, "stop", resp.Choices[0].FinishReason)
				body := k.check(t, lastChatTo(t, env.mock, k.name), false)
				if k.name == "anthropic" {
					assert.Equal(t, []interface{}{"rt 2"}, body["stop_sequences"])
				} else {
					assert.Contains(t, string(mustJSON(t, body["generationConfig"])), `"rt 2"`)
				}
			})

			t.Run("image_input", func(t *testing.T) {
				png := mockupstream.ImagePNG("input", 0)
				b64 := base64.StdEncoding.EncodeToString(png)
				resp, err := env.client.Chat.Completions.New(sdkContext(t), openai.ChatCompletionNewParams{
					Model: k.model,
					Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
						openai.TextContentPart("describe this image"),
						openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "data:image/png;base64," + b64}),
					})},
				})
				require.NoError(t, err)
				assert.Equal(t, mockupstream.ReplyText(trChunks), resp.Choices[0].Message.Content)
				body := k.check(t, lastChatTo(t, env.mock, k.name), false)
				sent := string(mustJSON(t, body))
				assert.Contains(t, sent, `"`+b64+`"`, "the image bytes travel base64, without the data: prefix")
				assert.NotContains(t, sent, "data:image/png")
				if k.name == "anthropic" {
					assert.Contains(t, sent, `"media_type":"image/png"`)
				} else {
					assert.Contains(t, sent, `"mimeType":"image/png"`)
				}
			})

			t.Run("stream_accumulated", func(t *testing.T) {
				stream := env.client.Chat.Completions.NewStreaming(sdkContext(t), openai.ChatCompletionNewParams{
					Model:         k.model,
					Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("stream to me please")},
					StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
				})
				defer stream.Close()
				acc, chunks, finished, _ := accumulate(t, stream, k.model)
				require.NoError(t, stream.Err())
				assert.GreaterOrEqual(t, chunks, trChunks+1, "at least one chunk per upstream text piece plus the usage chunk")
				require.Len(t, acc.Choices, 1)
				assert.Equal(t, mockupstream.ReplyText(trChunks), acc.Choices[0].Message.Content)
				assert.Equal(t, mockupstream.ReplyText(trChunks), finished)
				assert.Equal(t, "stop", acc.Choices[0].FinishReason)
				assert.Equal(t, k.model, acc.Model)
				assertUsage(t, k.usage(4, trChunks), acc.Usage)
				k.check(t, lastChatTo(t, env.mock, k.name), true)
			})

			t.Run("stream_without_usage", func(t *testing.T) {
				stream := env.client.Chat.Completions.NewStreaming(sdkContext(t), openai.ChatCompletionNewParams{
					Model:    k.model,
					Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("no usage please")},
				})
				defer stream.Close()
				acc, _, _, _ := accumulate(t, stream, k.model)
				require.NoError(t, stream.Err())
				assert.Equal(t, mockupstream.ReplyText(trChunks), acc.Choices[0].Message.Content)
				assert.Zero(t, acc.Usage.TotalTokens, "usage sent although include_usage was not set")
			})

			toolParams := openai.ChatCompletionNewParams{
				Model:         k.model,
				Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What's the weather in Paris?")},
				Tools:         []openai.ChatCompletionToolUnionParam{weatherTool()},
				StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
			}

			t.Run("stream_tool_call", func(t *testing.T) {
				stream := env.client.Chat.Completions.NewStreaming(sdkContext(t), toolParams)
				defer stream.Close()
				acc, _, _, finishedTools := accumulate(t, stream, k.model)
				require.NoError(t, stream.Err())
				require.Len(t, acc.Choices, 1)
				msg := acc.Choices[0].Message
				assert.Equal(t, "tool_calls", acc.Choices[0].FinishReason)
				require.Len(t, msg.ToolCalls, 1, "tool calls: %+v", msg.ToolCalls)
				call := msg.ToolCalls[0]
				assert.NotEmpty(t, call.ID, "tool call id")
				assert.Equal(t, "function", string(call.Type))
				assert.Equal(t, "get_weather", call.Function.Name)
				assert.JSONEq(t, mockupstream.ToolArguments(), call.Function.Arguments)
				switch k.name {
				case "anthropic":
					// The gateway relays the partial_json pieces; their
					// concatenation is byte-exact.
					assert.Equal(t, mockupstream.ToolArguments(), call.Function.Arguments)
					assert.True(t, strings.HasPrefix(call.ID, "toolu_mock_"), "Anthropic tool id kept: %q", call.ID)
					assert.Equal(t, mockupstream.ToolPreamble, msg.Content)
				case "gemini":
					assert.Empty(t, msg.Content)
				}
				if assert.Len(t, finishedTools, 1, "JustFinishedToolCall") {
					assert.Equal(t, call.ID, finishedTools[0].ID)
					assert.Equal(t, call.Function.Arguments, finishedTools[0].Arguments)
				}
				assertUsage(t, k.usage(5, mockupstream.ToolOutputTokens), acc.Usage)

				body := k.check(t, lastChatTo(t, env.mock, k.name), true)
				tools := string(mustJSON(t, body["tools"]))
				assert.Contains(t, tools, "get_weather")
				if k.name == "anthropic" {
					assert.Contains(t, tools, `"input_schema"`)
				} else {
					assert.Contains(t, tools, `"functionDeclarations"`)
				}
			})

			t.Run("tool_call_round_trip", func(t *testing.T) {
				p := toolParams
				p.StreamOptions = openai.ChatCompletionStreamOptionsParam{}
				resp, err := env.client.Chat.Completions.New(sdkContext(t), p)
				require.NoError(t, err)
				require.Len(t, resp.Choices, 1)
				assert.Equal(t, "tool_calls", resp.Choices[0].FinishReason)
				require.Len(t, resp.Choices[0].Message.ToolCalls, 1)
				call := resp.Choices[0].Message.ToolCalls[0]
				assert.NotEmpty(t, call.ID)
				assert.Equal(t, "get_weather", call.Function.Name)
				assert.JSONEq(t, mockupstream.ToolArguments(), call.Function.Arguments)
				assertUsage(t, k.usage(5, mockupstream.ToolOutputTokens), resp.Usage)

				// Send the result back: the mock checks the pairing
				// (tool_use → tool_result / functionCall → functionResponse)
				// the way the real API does, and answers with text.
				p.Messages = append(p.Messages, resp.Choices[0].Message.ToParam(),
					openai.ToolMessage(`{"temp_c": 18}`, call.ID))
				resp2, err := env.client.Chat.Completions.New(sdkContext(t), p)
				require.NoError(t, err)
				assert.Equal(t, "stop", resp2.Choices[0].FinishReason)
				assert.Equal(t, mockupstream.ReplyText(trChunks), resp2.Choices[0].Message.Content)

				body := k.check(t, lastChatTo(t, env.mock, k.name), false)
				sent := string(mustJSON(t, body["messages"]))
				if k.name == "anthropic" {
					assert.Contains(t, sent, `"tool_result"`)
					assert.Contains(t, sent, call.ID)
				} else {
					sent = string(mustJSON(t, body["contents"]))
					assert.Contains(t, sent, `"functionResponse"`)
					assert.Contains(t, sent, `"functionCall"`)
				}
			})

			t.Run("stream_relayed_before_upstream_ends", func(t *testing.T) {
				// The *stall providers deliver a few events and then hold
				// the stream open: the client sees them only if the
				// translator emits and flushes per upstream event.
				model := strings.Replace(k.model, "/", "stall/", 1)
				wantText := mockupstream.ReplyText(trGemStallAfter)
				if k.name == "anthropic" {
					wantText = mockupstream.ReplyText(trAnthStallAfter - 3)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
				defer cancel()
				stream := env.client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
					Model:    model,
					Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hold on")},
				})
				defer stream.Close()
				acc := openai.ChatCompletionAccumulator{}
				for acc.Choices == nil || acc.Choices[0].Message.Content != wantText {
					require.True(t, stream.Next(), "stream ended before %q arrived (got %q): %v", wantText, acc.Choices, stream.Err())
					require.True(t, acc.AddChunk(stream.Current()))
				}
				require.NoError(t, ctx.Err(), "events arrived only after the deadline")
				cancel()
				assert.False(t, stream.Next(), "a stalled stream delivered another event")
			})

			t.Run("upstream_error_mid_stream", func(t *testing.T) {
				model := strings.Replace(k.model, "/", "fail/", 1)
				stream := env.client.Chat.Completions.NewStreaming(sdkContext(t), openai.ChatCompletionNewParams{
					Model:         model,
					Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("this will break")},
					StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
				})
				defer stream.Close()
				acc, _, _, _ := accumulate(t, stream, model)
				require.Error(t, stream.Err(), "the SDK must see the upstream's mid-stream error")
				t.Logf("SDK stream error: %v", stream.Err())
				// The stream started (200) and relayed the text before the
				// error; it never finished.
				require.Len(t, acc.Choices, 1, "no chunk arrived before the error")
				assert.Equal(t, mockupstream.ChunkText(0), acc.Choices[0].Message.Content)
				assert.Empty(t, acc.Choices[0].FinishReason)
			})

			t.Run("upstream_truncated_stream", func(t *testing.T) {
				// The upstream connection ends cleanly mid-answer: the client
				// must be able to tell this from a finished answer.
				model := strings.Replace(k.model, "/", "cut/", 1)
				stream := env.client.Chat.Completions.NewStreaming(sdkContext(t), openai.ChatCompletionNewParams{
					Model:         model,
					Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("this will be cut")},
					StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
				})
				defer stream.Close()
				acc, _, _, _ := accumulate(t, stream, model)
				require.Len(t, acc.Choices, 1)
				assert.Equal(t, mockupstream.ReplyText(2), acc.Choices[0].Message.Content)
				assert.Error(t, stream.Err(), "a cut stream must end with an error (got finish_reason %q)", acc.Choices[0].FinishReason)
				t.Logf("SDK stream error: %v", stream.Err())
			})

			t.Run("upstream_429_stream", func(t *testing.T) {
				model := strings.Replace(k.model, "/", "429/", 1)
				stream := env.client.Chat.Completions.NewStreaming(sdkContext(t), openai.ChatCompletionNewParams{
					Model:    model,
					Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
				})
				defer stream.Close()
				assert.False(t, stream.Next())
				var apiErr *openai.Error
				require.True(t, errors.As(stream.Err(), &apiErr), "want *openai.Error, got %T %v", stream.Err(), stream.Err())
				assert.Equal(t, http.StatusTooManyRequests, apiErr.StatusCode)
			})

			t.Run("provider_key_refused_502", func(t *testing.T) {
				// The upstream refusing the gateway's own key is the
				// gateway's fault, not the caller's.
				model := strings.Replace(k.model, "/", "badkey/", 1)
				_, err := env.client.Chat.Completions.New(sdkContext(t), openai.ChatCompletionNewParams{
					Model:    model,
					Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
				})
				var apiErr *openai.Error
				require.True(t, errors.As(err, &apiErr), "want *openai.Error, got %T %v", err, err)
				assert.Equal(t, http.StatusBadGateway, apiErr.StatusCode, "client got: %s", apiErr.RawJSON())
				assert.NotContains(t, apiErr.RawJSON(), "-wrong", "the provider key leaked into the error")
			})

			t.Run("upstream_429", func(t *testing.T) {
				model := strings.Replace(k.model, "/", "429/", 1)
				_, err := env.client.Chat.Completions.New(sdkContext(t), openai.ChatCompletionNewParams{
					Model:    model,
					Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
				})
				var apiErr *openai.Error
				require.True(t, errors.As(err, &apiErr), "want *openai.Error, got %T %v", err, err)
				assert.Equal(t, http.StatusTooManyRequests, apiErr.StatusCode)
				assert.NotEmpty(t, apiErr.Message)
			})
		})
	}

	t.Run("anthropic_temperature_clamped", func(t *testing.T) {
		// OpenAI allows 0-2, Anthropic 0-1 (the mock refuses more, as the
		// API does): the gateway clamps.
		resp, err := env.client.Chat.Completions.New(sdkContext(t), openai.ChatCompletionNewParams{
			Model:       trAnthModel,
			Messages:    []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
			Temperature: openai.Float(1.7),
		})
		require.NoError(t, err)
		assert.Equal(t, mockupstream.ReplyText(trChunks), resp.Choices[0].Message.Content)
		body := decodeBody(t, lastChatTo(t, env.mock, "anthropic"))
		assert.Equal(t, 1.0, body["temperature"])
	})

	t.Run("gemini_stream_crlf", func(t *testing.T) {
		const model = "gemcrlf/gemini-test"
		stream := env.client.Chat.Completions.NewStreaming(sdkContext(t), openai.ChatCompletionNewParams{
			Model:         model,
			Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("crlf please")},
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
		})
		defer stream.Close()
		acc, _, _, _ := accumulate(t, stream, model)
		require.NoError(t, stream.Err())
		require.Len(t, acc.Choices, 1)
		assert.Equal(t, mockupstream.ReplyText(trChunks), acc.Choices[0].Message.Content)
		assert.Equal(t, "stop", acc.Choices[0].FinishReason)
		assertUsage(t, geminiUsageFor(2, trChunks), acc.Usage)
	})

	t.Run("gemini3_tool_call_round_trip", func(t *testing.T) {
		// Gemini 3 models refuse a function-call turn whose functionCall
		// part lost the thoughtSignature the model sent (the mock enforces
		// it for gemini-3* ids as the API does). The signature has no
		// OpenAI field, so the gateway must carry it through the client
		// round trip (e.g. inside the tool call id) and put it back.
		const model = "gem/gemini-3-test"
		for _, streamed := range []bool{false, true} {
			p := openai.ChatCompletionNewParams{
				Model:    model,
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What's the weather in Paris?")},
				Tools:    []openai.ChatCompletionToolUnionParam{weatherTool()},
			}
			var assistant openai.ChatCompletionMessage
			if streamed {
				stream := env.client.Chat.Completions.NewStreaming(sdkContext(t), p)
				acc, _, _, _ := accumulate(t, stream, model)
				stream.Close()
				require.NoError(t, stream.Err())
				require.Len(t, acc.Choices, 1)
				assistant = acc.Choices[0].Message
			} else {
				resp, err := env.client.Chat.Completions.New(sdkContext(t), p)
				require.NoError(t, err)
				assistant = resp.Choices[0].Message
			}
			require.Len(t, assistant.ToolCalls, 1, "streamed=%v", streamed)
			call := assistant.ToolCalls[0]
			p.Messages = append(p.Messages, assistant.ToParam(), openai.ToolMessage(`{"temp_c": 18}`, call.ID))
			resp, err := env.client.Chat.Completions.New(sdkContext(t), p)
			var apiErr *openai.Error
			if errors.As(err, &apiErr) {
				t.Logf("client got %d: %s", apiErr.StatusCode, apiErr.RawJSON())
			}
			if !assert.NoError(t, err, "streamed=%v: the follow-up turn with the tool result", streamed) {
				rec := lastTo(t, env.mock, "POST", "/v1beta/models/gemini-3-test:generateContent")
				t.Logf("upstream got: %s", rec.Body)
				continue
			}
			assert.Equal(t, mockupstream.ReplyText(trChunks), resp.Choices[0].Message.Content)
		}
	})

	t.Run("gemini_embeddings", func(t *testing.T) {
		t.Run("single", func(t *testing.T) {
			resp, err := env.client.Embeddings.New(sdkContext(t), openai.EmbeddingNewParams{
				Model: trGemEmbed,
				Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("alpha beta")},
			})
			require.NoError(t, err)
			require.Len(t, resp.Data, 1)
			assertVector(t, mockupstream.Vector("alpha beta", 8), resp.Data[0].Embedding)
			assert.Equal(t, trGemEmbed, resp.Model)
			rec := lastGeminiEmbed(t, env.mock)
			assert.Equal(t, trGemKey, rec.Header.Get("X-Goog-Api-Key"))
			assert.Empty(t, rec.Header.Get("Authorization"))
		})
		t.Run("batch_with_dimensions", func(t *testing.T) {
			inputs := []string{"alpha beta", "gamma", "delta epsilon zeta"}
			resp, err := env.client.Embeddings.New(sdkContext(t), openai.EmbeddingNewParams{
				Model:      trGemEmbed,
				Input:      openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: inputs},
				Dimensions: openai.Int(5),
			})
			require.NoError(t, err)
			require.Len(t, resp.Data, len(inputs))
			for i, in := range inputs {
				assert.Equal(t, int64(i), resp.Data[i].Index)
				assertVector(t, mockupstream.Vector(in, 5), resp.Data[i].Embedding)
			}
			rec := lastGeminiEmbed(t, env.mock)
			assert.Contains(t, string(rec.Body), `5`, "outputDimensionality sent")
		})
		t.Run("base64", func(t *testing.T) {
			// The Go SDK does not decode base64 vectors: use plain HTTP.
			req, err := http.NewRequest("POST", env.gw.URL+"/v1/embeddings",
				strings.NewReader(`{"model":"`+trGemEmbed+`","input":["gamma"],"encoding_format":"base64"}`))
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+trUserKey)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			var out struct {
				Data []struct {
					Embedding string `json:"embedding"`
				} `json:"data"`
			}
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
			require.Len(t, out.Data, 1)
			raw, err := base64.StdEncoding.DecodeString(out.Data[0].Embedding)
			require.NoError(t, err)
			want := mockupstream.Vector("gamma", 8)
			require.Len(t, raw, 4*len(want))
			got := make([]float64, len(want))
			for j := range got {
				got[j] = float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[4*j:])))
			}
			assertVector(t, want, got)
		})
	})

	t.Run("anthropic_embeddings_501", func(t *testing.T) {
		before := len(env.mock.Requests())
		_, err := env.client.Embeddings.New(sdkContext(t), openai.EmbeddingNewParams{
			Model: trAnthModel,
			Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("x")},
		})
		var apiErr *openai.Error
		require.True(t, errors.As(err, &apiErr), "want *openai.Error, got %T %v", err, err)
		assert.Equal(t, http.StatusNotImplemented, apiErr.StatusCode)
		assert.NotEmpty(t, apiErr.Message)
		assert.Equal(t, before, len(env.mock.Requests()), "nothing may reach the upstream")
	})

	t.Run("gemini_images", func(t *testing.T) {
		const prompt = "a watercolor fox"
		resp, err := env.client.Images.Generate(sdkContext(t), openai.ImageGenerateParams{
			Model:          trGemImagen,
			Prompt:         prompt,
			N:              openai.Int(2),
			ResponseFormat: openai.ImageGenerateParamsResponseFormatB64JSON,
		})
		require.NoError(t, err)
		require.Len(t, resp.Data, 2)
		for i, d := range resp.Data {
			raw, err := base64.StdEncoding.DecodeString(d.B64JSON)
			require.NoError(t, err, "data[%d].b64_json", i)
			assert.True(t, bytes.Equal(mockupstream.ImagePNG(prompt, i), raw), "data[%d] is the upstream's image %d", i, i)
		}
		rec := lastTo(t, env.mock, "POST", "/v1beta/models/imagen-test:predict")
		assert.Equal(t, trGemKey, rec.Header.Get("X-Goog-Api-Key"))
		var body struct {
			Instances []struct {
				Prompt string `json:"prompt"`
			} `json:"instances"`
			Parameters struct {
				SampleCount int `json:"sampleCount"`
			} `json:"parameters"`
		}
		require.NoError(t, json.Unmarshal(rec.Body, &body))
		require.Len(t, body.Instances, 1)
		assert.Equal(t, prompt, body.Instances[0].Prompt)
		assert.Equal(t, 2, body.Parameters.SampleCount)

		// size maps to the nearest aspect ratio.
		_, err = env.client.Images.Generate(sdkContext(t), openai.ImageGenerateParams{
			Model: trGemImagen, Prompt: prompt, N: openai.Int(1), Size: openai.ImageGenerateParamsSize("1792x1024"), // a legacy size (the SDK deprecates its constant)
			ResponseFormat: openai.ImageGenerateParamsResponseFormatB64JSON,
		})
		require.NoError(t, err)
		rec = lastTo(t, env.mock, "POST", "/v1beta/models/imagen-test:predict")
		assert.Contains(t, string(rec.Body), `"aspectRatio":"16:9"`)

		// n omitted means one image (Imagen's own default is 4).
		resp, err = env.client.Images.Generate(sdkContext(t), openai.ImageGenerateParams{
			Model: trGemImagen, Prompt: prompt, ResponseFormat: openai.ImageGenerateParamsResponseFormatB64JSON,
		})
		require.NoError(t, err)
		assert.Len(t, resp.Data, 1)
	})

	// Runs last: every request any subtest made.
	t.Run("credentials_upstream", func(t *testing.T) {
		reqs := env.mock.Requests()
		require.NotEmpty(t, reqs)
		for _, r := range reqs {
			where := r.Method + " " + r.Path
			for name, values := range r.Header {
				for _, v := range values {
					assert.NotContains(t, v, trUserKey, "%s header %s carries the client's gateway key", where, name)
				}
			}
			assert.NotContains(t, string(r.Body), trUserKey, "%s body", where)
			assert.NotContains(t, r.RawQuery, trUserKey, "%s query", where)
			switch {
			case strings.HasPrefix(r.Path, "/v1beta/"):
				assert.Contains(t, []string{trGemKey, "gem-wrong"}, r.Header.Get("X-Goog-Api-Key"), where)
				assert.Empty(t, r.Header.Get("X-Api-Key"), where)
				assert.Empty(t, r.Header.Get("Authorization"), where)
			case strings.HasPrefix(r.Path, "/v1/messages"), r.Header.Get("Anthropic-Version") != "":
				assert.Contains(t, []string{trAnthKey, "sk-ant-wrong"}, r.Header.Get("X-Api-Key"), where)
				assert.Empty(t, r.Header.Get("X-Goog-Api-Key"), where)
				assert.Empty(t, r.Header.Get("Authorization"), where)
			default:
				assert.Equal(t, "Bearer "+trOpenAIKey, r.Header.Get("Authorization"), where)
				assert.Empty(t, r.Header.Get("X-Api-Key"), where)
			}
		}
	})
}
