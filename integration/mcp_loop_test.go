package integration_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmgateway/llmgateway/integration/mockupstream"
)

// The gateway-run tool loop through the binary: the mock LLM's scripted
// tool turn (mockupstream.ToolTurn) calls weather_forecast, which the
// gateway runs on an MCP Go SDK v1.8.0 server ("forecast" on server
// "weather"), and the mock answers the result on the second turn.

const (
	loopUserKey   = "sk-loop-alice-key"
	loopBudgetKey = "sk-loop-bob-key"
	loopFinal     = "It is sunny in Paris."
)

// loopForecastArgs is the forecast tool's input.
type loopForecastArgs struct {
	City string `json:"city" jsonschema:"the city"`
}

// loopMCPServer is a stateless MCP SDK server answering JSON with two
// tools: forecast (a short text) and report (a long one); it records
// the cities asked and fails the request if a gateway key reaches it.
type loopMCPServer struct {
	*httptest.Server
	mu     sync.Mutex
	cities []string
}

func startLoopMCPServer(t *testing.T) *loopMCPServer {
	t.Helper()
	s := &loopMCPServer{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "1.0.0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "forecast", Description: "Weather forecast for a city"},
		func(ctx context.Context, req *mcp.CallToolRequest, in loopForecastArgs) (*mcp.CallToolResult, any, error) {
			s.mu.Lock()
			s.cities = append(s.cities, in.City)
			s.mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sunny in " + in.City}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "report", Description: "A long weather report"},
		func(ctx context.Context, req *mcp.CallToolRequest, in loopForecastArgs) (*mcp.CallToolResult, any, error) {
			s.mu.Lock()
			s.cities = append(s.cities, in.City)
			s.mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("sunny and warm, ", 600)}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" || r.Header.Get("X-Api-Key") != "" {
			http.Error(w, "a gateway key reached the MCP server", http.StatusBadRequest)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *loopMCPServer) asked() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.cities...)
}

// usageRecorder serves the mock and keeps the usage of each whole chat
// answer it sent.
type usageRecorder struct {
	mock *mockupstream.Server
	mu   sync.Mutex
	sums [2]int64 // prompt, completion over every answer
	n    int
}

func (u *usageRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := httptest.NewRecorder()
	u.mock.ServeHTTP(rec, r)
	var a struct {
		Usage struct {
			PromptTokens     int64 `json:"prompt_tokens"`
			CompletionTokens int64 `json:"completion_tokens"`
		} `json:"usage"`
	}
	if json.Unmarshal(rec.Body.Bytes(), &a) == nil && r.URL.Path == "/v1/chat/completions" {
		u.mu.Lock()
		u.sums[0] += a.Usage.PromptTokens
		u.sums[1] += a.Usage.CompletionTokens
		u.n++
		u.mu.Unlock()
	}
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

func (u *usageRecorder) totals() (int64, int64, int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.sums[0], u.sums[1], u.n
}

// startLoopGateway runs the binary with the mock (scripted to call
// tool) and the MCP server: alice's group loops (maxTurns 3), bob's
// loops under tokensPerDay 800.
func startLoopGateway(t *testing.T, bin, tool string, mcpURL string) (string, *usageRecorder) {
	t.Helper()
	mock := mockupstream.New(mockupstream.Options{Models: []string{"gpt-5-mini"}, ToolTurn: &mockupstream.ToolTurn{
		Name: tool, Input: `{"city":"Paris"}`, Expect: "sunny in Paris", FinalText: loopFinal}})
	rec := &usageRecorder{mock: mock}
	up := httptest.NewServer(rec)
	t.Cleanup(up.Close)
	cfg := map[string]interface{}{
		"accessLog": true,
		"providers": map[string]interface{}{
			"mock": map[string]interface{}{"type": "openai", "baseUrl": up.URL, "apiKey": sdkUpstreamKey, "models": []string{"gpt-5-mini"}},
		},
		"mcpServers": map[string]interface{}{"weather": map[string]interface{}{"url": mcpURL}},
		"groups": map[string]interface{}{
			"loop":   map[string]interface{}{"mcpLoop": map[string]interface{}{"enabled": true, "maxTurns": 3}},
			"budget": map[string]interface{}{"mcpLoop": map[string]interface{}{"enabled": true}, "limits": map[string]interface{}{"tokensPerDay": 800}},
		},
		"users": map[string]interface{}{"inline": []map[string]interface{}{
			{"name": "alice", "group": "loop", "apiKey": loopUserKey},
			{"name": "bob", "group": "budget", "apiKey": loopBudgetKey},
		}},
	}
	return startGateway(t, bin, cfg).URL, rec
}

func TestMCPToolLoopThroughBinary(t *testing.T) {
	bin := buildGatewayBinary(t)
	mcpSrv := startLoopMCPServer(t)
	base, usage := startLoopGateway(t, bin, "weather_forecast", mcpSrv.URL)

	t.Run("openai_sdk_chat", func(t *testing.T) {
		client := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey(loopUserKey), option.WithMaxRetries(0))
		var resp *http.Response
		before := len(mcpSrv.asked())
		p0, c0, n0 := usage.totals()
		out, err := client.Chat.Completions.New(sdkContext(t), openai.ChatCompletionNewParams{
			Model:    "gpt-5-mini",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What is the weather in Paris?")},
		}, option.WithResponseInto(&resp))
		require.NoError(t, err)
		require.Len(t, out.Choices, 1)
		assert.Equal(t, loopFinal, out.Choices[0].Message.Content)
		assert.Equal(t, "done", resp.Header.Get("X-Llmgw-Tool-Loop"))
		assert.Equal(t, "2", resp.Header.Get("X-Llmgw-Tool-Turns"))
		assert.Equal(t, []string{"Paris"}, mcpSrv.asked()[before:], "the tool ran once with the model's arguments")
		p1, c1, n1 := usage.totals()
		require.Equal(t, 2, n1-n0, "two model calls")
		assert.Equal(t, p1-p0, out.Usage.PromptTokens, "prompt tokens summed over the turns")
		assert.Equal(t, c1-c0, out.Usage.CompletionTokens, "completion tokens summed over the turns")
	})

	t.Run("openai_sdk_stream", func(t *testing.T) {
		client := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey(loopUserKey), option.WithMaxRetries(0))
		stream := client.Chat.Completions.NewStreaming(sdkContext(t), openai.ChatCompletionNewParams{
			Model:         "gpt-5-mini",
			Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What is the weather in Paris?")},
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
		})
		defer stream.Close()
		acc := openai.ChatCompletionAccumulator{}
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		require.NoError(t, stream.Err())
		require.Len(t, acc.Choices, 1)
		assert.Equal(t, loopFinal, acc.Choices[0].Message.Content)
		assert.Positive(t, acc.Usage.PromptTokens)
	})

	t.Run("anthropic_sdk_stream", func(t *testing.T) {
		client := newAnthropicClient(base, loopUserKey, false)
		p0, c0, _ := usage.totals()
		stream := client.Messages.NewStreaming(sdkContext(t), anthropic.MessageNewParams{
			Model:     "gpt-5-mini",
			MaxTokens: 256,
			Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("What is the weather in Paris?"))},
		})
		defer stream.Close()
		var acc anthropic.Message
		for stream.Next() {
			ev := stream.Current()
			require.NoError(t, acc.Accumulate(ev), "event %s", ev.RawJSON())
		}
		require.NoError(t, stream.Err())
		require.Len(t, acc.Content, 1)
		assert.Equal(t, loopFinal, acc.Content[0].Text)
		p1, c1, _ := usage.totals()
		assert.Equal(t, c1-c0, acc.Usage.OutputTokens, "output tokens summed over the turns")
		assert.Equal(t, p1-p0, acc.Usage.InputTokens, "input tokens summed over the turns")
	})

	t.Run("own_tools_untouched", func(t *testing.T) {
		before := len(mcpSrv.asked())
		body := `{"model":"gpt-5-mini","messages":[{"role":"user","content":"What is the weather in Paris?"}],` +
			`"tools":[{"type":"function","function":{"name":"mine","parameters":{"type":"object"}}}]}`
		status, h, got := loopPost(t, base+"/v1/chat/completions", loopUserKey, body)
		require.Equal(t, http.StatusOK, status, got)
		assert.Empty(t, h.Get("X-Llmgw-Tool-Loop"))
		var out struct {
			Choices []struct {
				Message struct {
					Content string `json:"content"`
				} `json:"message"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal([]byte(got), &out))
		require.Len(t, out.Choices, 1)
		assert.Equal(t, mockupstream.ToolTurnUndeclared("weather_forecast"), out.Choices[0].Message.Content, "the model saw only the client's tools")
		assert.Len(t, mcpSrv.asked(), before)
	})
}

// TestMCPToolLoopBudgetThroughBinary: the tool's long result makes the
// second turn's reservation pass tokensPerDay: the client gets the
// limiter's 429 after one model call and one tool call.
func TestMCPToolLoopBudgetThroughBinary(t *testing.T) {
	bin := buildGatewayBinary(t)
	mcpSrv := startLoopMCPServer(t)
	base, usage := startLoopGateway(t, bin, "weather_report", mcpSrv.URL)
	body := `{"model":"gpt-5-mini","max_tokens":100,"messages":[{"role":"user","content":"What is the weather in Paris?"}]}`
	status, h, got := loopPost(t, base+"/v1/chat/completions", loopBudgetKey, body)
	require.Equal(t, http.StatusTooManyRequests, status, got)
	assert.Contains(t, got, "tokensPerDay")
	assert.Equal(t, "refused", h.Get("X-Llmgw-Tool-Loop"))
	assert.Equal(t, "1", h.Get("X-Llmgw-Tool-Turns"))
	assert.Equal(t, []string{"Paris"}, mcpSrv.asked())
	_, _, n := usage.totals()
	assert.Equal(t, 1, n, "one model call")
}

func loopPost(t *testing.T, url, key, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(sdkContext(t), http.MethodPost, url, bytes.NewReader([]byte(body)))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, string(data)
}
