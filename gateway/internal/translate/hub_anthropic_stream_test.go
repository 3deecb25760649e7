package translate

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/llmgateway/llmgateway/gateway/internal/sse"
)

// anthropicTestContext is the fixed context every Anthropic golden is
// produced with.
func anthropicTestContext(includeUsage bool) Context {
	return Context{RequestedModel: "claude-alias", UpstreamModel: "claude-sonnet-4-5-20250929",
		Created: 1700000000, IncludeUsage: includeUsage, IDFallback: "chatcmpl-fallback"}
}

// runAnthropicStream is runStream with the Anthropic translator.
func runAnthropicStream(input []byte, tc Context) []byte {
	return runStream(input, NewAnthropicStream(tc))
}

// anthropicStreamCases are the recorded transcripts in
// testdata/anthropic and what a client accumulates from each.
var anthropicStreamCases = []struct {
	name         string
	includeUsage bool
	id           string
	content      string
	tools        []anthropicAccumulatedTool
	finish       string
	usage        *hubUsage
	errorCode    string
}{
	{name: "text", id: "msg_01Text", content: "Hello, <world> & \"friends\"\n¡ünïcödé ✓", finish: "stop"},
	{name: "tools_parallel", includeUsage: true, id: "msg_01Tools", content: "Checking both.",
		tools: []anthropicAccumulatedTool{
			{id: "toolu_01A", name: "get_weather", arguments: `{"city": "Paris"}`},
			{id: "toolu_01B", name: "get_time", arguments: `{"tz":"Europe/Paris","n":12345678901234567890123}`},
		},
		finish: "tool_calls",
		usage:  &hubUsage{PromptTokens: 410, CompletionTokens: 38, TotalTokens: 448}},
	{name: "thinking", includeUsage: true, id: "msg_01Think", content: "2 + 2 = 4.", finish: "stop",
		usage: &hubUsage{PromptTokens: 30, CompletionTokens: 57, TotalTokens: 87}},
	{name: "usage_cache", includeUsage: true, id: "msg_01Cache", content: "Long answer cut", finish: "length",
		usage: &hubUsage{PromptTokens: 3005, CompletionTokens: 20, TotalTokens: 3025,
			PromptTokensDetails: hubPromptTokensDetails{CachedTokens: 2000}}},
	{name: "error_overloaded", includeUsage: true, id: "msg_01Err", content: "Partial", errorCode: "upstream_error"},
	{name: "truncated", includeUsage: true, id: "msg_01Trunc", content: "Cut ",
		tools:     []anthropicAccumulatedTool{{id: "toolu_01C", name: "lookup", arguments: `{"q":`}},
		errorCode: "upstream_stream_truncated"},
}

func TestAnthropicStreamGolden(t *testing.T) {
	for i := 0; i < len(anthropicStreamCases); i++ {
		tc := anthropicStreamCases[i]
		t.Run(tc.name, func(t *testing.T) {
			input, err := os.ReadFile("testdata/anthropic/" + tc.name + ".sse")
			if err != nil {
				t.Fatal(err)
			}
			got := runAnthropicStream(input, anthropicTestContext(tc.includeUsage))
			checkGolden(t, "testdata/anthropic/"+tc.name+".golden", got)
		})
	}
}

// anthropicAccumulatedTool is one tool call as a client SDK assembles
// it from the chunks.
type anthropicAccumulatedTool struct {
	id, name, arguments string
}

// anthropicAccumulated is what an OpenAI SDK accumulator ends up with.
type anthropicAccumulated struct {
	ids, models map[string]bool
	role        string
	content     string
	tools       []anthropicAccumulatedTool
	finish      string
	finishes    int
	usage       *hubUsage
	done        int
	errorCode   string
	objects     map[string]bool
	created     map[int64]bool
}

// accumulateAnthropicOutput parses client-facing SSE the way an OpenAI
// SDK would, failing on anything a strict client would reject.
func accumulateAnthropicOutput(t *testing.T, out []byte) anthropicAccumulated {
	t.Helper()
	acc := anthropicAccumulated{ids: map[string]bool{}, models: map[string]bool{}, objects: map[string]bool{}, created: map[int64]bool{}}
	payloads := hubTestPayloads(t, out)
	for i := 0; i < len(payloads); i++ {
		payload := payloads[i]
		if acc.done > 0 || acc.errorCode != "" {
			t.Fatalf("event %d after the end of the stream: %q", i, payload)
		}
		if payload == "[DONE]" {
			acc.done++
			continue
		}
		var chunk hubTestChunk
		if err := json.Unmarshal([]byte(payload), &chunk); err != nil {
			t.Fatalf("event %d: %v: %s", i, err, payload)
		}
		if chunk.Error != nil {
			acc.errorCode = chunk.Error.Code
			continue
		}
		acc.addChunk(t, i, &chunk)
	}
	return acc
}

// addChunk folds one chunk in: the usage chunk (once, with no choices,
// after every choice chunk) or a chunk of exactly choice 0.
func (acc *anthropicAccumulated) addChunk(t *testing.T, i int, chunk *hubTestChunk) {
	t.Helper()
	acc.ids[chunk.ID] = true
	acc.models[chunk.Model] = true
	acc.objects[chunk.Object] = true
	acc.created[chunk.Created] = true
	if chunk.Choices == nil {
		t.Fatalf("event %d: choices null or absent", i)
	}
	if !isJSONNull(chunk.Usage) {
		var u hubUsage
		if err := json.Unmarshal(chunk.Usage, &u); err != nil || len(chunk.Choices) != 0 || acc.usage != nil {
			t.Fatalf("event %d: usage must come once, in a chunk with no choices (%v)", i, err)
		}
		acc.usage = &u
		return
	}
	if acc.usage != nil {
		t.Fatalf("event %d: a choice chunk after the usage chunk", i)
	}
	if len(chunk.Choices) != 1 || chunk.Choices[0].Index != 0 {
		t.Fatalf("event %d: want exactly choice 0: %+v", i, chunk.Choices)
	}
	d := chunk.Choices[0].Delta
	if d.Role != nil {
		if acc.role != "" || *d.Role != "assistant" {
			t.Fatalf("event %d: role %q repeated or wrong", i, *d.Role)
		}
		acc.role = *d.Role
	} else if acc.role == "" {
		t.Fatalf("event %d: the first chunk must carry the role", i)
	}
	if d.Content != nil {
		acc.content += *d.Content
	}
	for j := 0; j < len(d.ToolCalls); j++ {
		acc.addToolFragment(t, i, &d.ToolCalls[j])
	}
	if chunk.Choices[0].FinishReason != nil {
		acc.finish = *chunk.Choices[0].FinishReason
		acc.finishes++
	}
}

// addToolFragment folds one tool call fragment in: the first of a call
// has its id, type, name and (possibly empty) arguments, the later ones
// only more arguments.
func (acc *anthropicAccumulated) addToolFragment(t *testing.T, i int, call *hubTestToolCall) {
	t.Helper()
	if call.Index == nil {
		t.Fatalf("event %d: tool call without index", i)
	}
	k := *call.Index
	switch {
	case k == len(acc.tools):
		if call.ID == "" || call.Type != "function" || call.Function.Name == "" || call.Function.Arguments == nil {
			t.Fatalf("event %d: first fragment of tool %d needs id, type, name and arguments", i, k)
		}
		acc.tools = append(acc.tools, anthropicAccumulatedTool{id: call.ID, name: call.Function.Name, arguments: *call.Function.Arguments})
	case k < len(acc.tools):
		if call.ID != "" || call.Function.Name != "" || call.Function.Arguments == nil || *call.Function.Arguments == "" {
			t.Fatalf("event %d: later fragment of tool %d must carry only arguments", i, k)
		}
		acc.tools[k].arguments += *call.Function.Arguments
	default:
		t.Fatalf("event %d: tool index %d skips ahead", i, k)
	}
}

func TestAnthropicStreamSemantics(t *testing.T) {
	for i := 0; i < len(anthropicStreamCases); i++ {
		tc := anthropicStreamCases[i]
		t.Run(tc.name, func(t *testing.T) {
			golden, err := os.ReadFile("testdata/anthropic/" + tc.name + ".golden")
			if err != nil {
				t.Fatal(err)
			}
			acc := accumulateAnthropicOutput(t, golden)
			if len(acc.ids) != 1 || !acc.ids[tc.id] {
				t.Errorf("ids %v, want only %q", acc.ids, tc.id)
			}
			if len(acc.models) != 1 || !acc.models["claude-alias"] {
				t.Errorf("models %v, want only claude-alias", acc.models)
			}
			if len(acc.objects) != 1 || !acc.objects["chat.completion.chunk"] || len(acc.created) != 1 || !acc.created[1700000000] {
				t.Errorf("objects %v created %v", acc.objects, acc.created)
			}
			if acc.content != tc.content {
				t.Errorf("content %q, want %q", acc.content, tc.content)
			}
			if len(acc.tools) != len(tc.tools) {
				t.Fatalf("tools %+v, want %+v", acc.tools, tc.tools)
			}
			for j := 0; j < len(tc.tools); j++ {
				if acc.tools[j] != tc.tools[j] {
					t.Errorf("tool %d = %+v, want %+v", j, acc.tools[j], tc.tools[j])
				}
			}
			if acc.errorCode != tc.errorCode {
				t.Errorf("error code %q, want %q", acc.errorCode, tc.errorCode)
			}
			if tc.errorCode != "" {
				if acc.done != 0 || acc.finishes != 0 || acc.usage != nil {
					t.Errorf("errored stream: done %d finishes %d usage %v, want none", acc.done, acc.finishes, acc.usage)
				}
				return
			}
			if acc.done != 1 || acc.finishes != 1 || acc.finish != tc.finish {
				t.Errorf("done %d finishes %d finish %q, want 1, 1, %q", acc.done, acc.finishes, acc.finish, tc.finish)
			}
			switch {
			case tc.usage == nil && acc.usage != nil:
				t.Errorf("usage %+v sent without include_usage", *acc.usage)
			case tc.usage != nil && (acc.usage == nil || *acc.usage != *tc.usage):
				t.Errorf("usage %+v, want %+v", acc.usage, *tc.usage)
			}
		})
	}
}

func TestAnthropicStreamUsageFold(t *testing.T) {
	input, err := os.ReadFile("testdata/anthropic/usage_cache.sse")
	if err != nil {
		t.Fatal(err)
	}
	reader := sse.NewReader(bytes.NewReader(input), 1<<20)
	tr := NewAnthropicStream(anthropicTestContext(false))
	if u := tr.Usage(); u.Reported {
		t.Fatalf("usage before any event: %+v", u)
	}
	for {
		ev, err := reader.Next()
		if err != nil {
			break
		}
		if _, e := translateEvent(tr, ev); e != nil {
			t.Fatal(e)
		}
	}
	want := Usage{PromptTokens: 3005, CompletionTokens: 20, CacheCreationTokens: 1000, CacheReadTokens: 2000, Reported: true}
	if got := tr.Usage(); got != want {
		t.Fatalf("usage %+v, want %+v", got, want)
	}
	if out, e := tr.Finish(nil); e != nil || len(out) != 0 {
		t.Fatalf("finish after message_stop = %q, %v; want nothing", out, e)
	}
}

// anthropicEvents frames events as an upstream would send them.
func anthropicEvents(lines ...string) []byte {
	var b strings.Builder
	for i := 0; i < len(lines); i++ {
		b.WriteString(lines[i])
		b.WriteString("\n\n")
	}
	return []byte(b.String())
}

const (
	anthropicTestStart = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}"
	anthropicTestStop  = "event: message_stop\ndata: {\"type\":\"message_stop\"}"
)

func TestAnthropicStreamEvents(t *testing.T) {
	const prefix = `{"id":"msg_1","object":"chat.completion.chunk","created":1700000000,"model":"claude-alias","choices":[{"index":0,"delta":`
	roleChunk := "data: " + prefix + `{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n"
	stopChunk := "data: " + prefix + `{},"finish_reason":"stop"}]}` + "\n\n"
	cases := []struct {
		name  string
		input []byte
		want  string
	}{
		{"unknown_events_ignored", anthropicEvents(anthropicTestStart,
			"event: future_event\ndata: not json at all",
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"future_delta\",\"x\":1}}",
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"server_tool_use\",\"id\":\"srvtoolu_1\",\"name\":\"web_search\",\"input\":{}}}",
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}",
			": keep-alive comment",
			"event: ping\ndata: {\"type\": \"ping\"}",
			anthropicTestStop),
			roleChunk + stopChunk + "data: [DONE]\n\n"},
		{"type_from_data_without_event_field", anthropicEvents(
			"data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\"}}",
			"data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}",
			"data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"refusal\"}}",
			"data: {\"type\":\"message_stop\"}"),
			roleChunk + "data: " + prefix + `{"content":"hi"},"finish_reason":null}]}` + "\n\n" +
				"data: " + prefix + `{},"finish_reason":"content_filter"}]}` + "\n\n" + "data: [DONE]\n\n"},
		{"content_before_message_start_gets_role_first", anthropicEvents(
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}",
			anthropicTestStop),
			strings.Replace(roleChunk, "msg_1", "chatcmpl-fallback", 1) +
				"data: " + strings.Replace(prefix, "msg_1", "chatcmpl-fallback", 1) + `{"content":"x"},"finish_reason":null}]}` + "\n\n" +
				strings.Replace(stopChunk, "msg_1", "chatcmpl-fallback", 1) + "data: [DONE]\n\n"},
		{"events_after_message_stop_ignored", anthropicEvents(anthropicTestStart, anthropicTestStop,
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"late\"}}",
			anthropicTestStop),
			roleChunk + stopChunk + "data: [DONE]\n\n"},
		{"second_message_delta_sends_no_second_finish", anthropicEvents(anthropicTestStart,
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"pause_turn\"},\"usage\":{\"output_tokens\":2}}",
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":4}}",
			anthropicTestStop),
			roleChunk + stopChunk + "data: [DONE]\n\n"},
		{"bad_json_in_known_event", anthropicEvents(anthropicTestStart,
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"),
			roleChunk + `data: {"error":{"message":"anthropic-type provider sent a malformed content_block_delta event","type":"server_error","param":null,"code":"upstream_bad_response"}}` + "\n\n"},
		{"message_start_without_message", anthropicEvents("event: message_start\ndata: {\"type\":\"message_start\"}"),
			`data: {"error":{"message":"anthropic-type provider sent a malformed message_start event","type":"server_error","param":null,"code":"upstream_bad_response"}}` + "\n\n"},
		{"error_event", anthropicEvents(anthropicTestStart,
			"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"Slow down\"}}"),
			roleChunk + `data: {"error":{"message":"anthropic-type provider reported an error: rate_limit_error: Slow down","type":"server_error","param":null,"code":"upstream_error"}}` + "\n\n"},
		{"empty_stream_is_truncated", nil,
			`data: {"error":{"message":"stream from anthropic-type provider ended before message_stop","type":"server_error","param":null,"code":"upstream_stream_truncated"}}` + "\n\n"},
	}
	for i := 0; i < len(cases); i++ {
		tc := cases[i]
		t.Run(tc.name, func(t *testing.T) {
			got := string(runAnthropicStream(tc.input, anthropicTestContext(false)))
			if got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestAnthropicStreamErrorEvent(t *testing.T) {
	tr := NewAnthropicStream(anthropicTestContext(true))
	data := `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
	out, e := translateEvent(tr, sse.Event{Name: "error", Data: []byte(data)})
	if len(out) != 0 || e == nil {
		t.Fatalf("got %q, %v; want an error only", out, e)
	}
	if e.Status != 502 || e.Kind != "server_error" || e.Code != "upstream_error" ||
		e.Message != "anthropic-type provider reported an error: overloaded_error: Overloaded" || string(e.Upstream) != data {
		t.Fatalf("error %+v", e)
	}
}

// plainEventCases are text deltas the fast path takes, and near misses
// (block starts among them) it must leave to the decode.
var plainEventCases = []string{
	`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`,
	`{"type":"content_block_delta","index":12,"delta":{"type":"text_delta","text":""}}`,
	`{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"é日本 <b>&amp; 😀 ` + "\x7f/" + `"}}`,
	`{"type":"content_block_delta","index":123456789,"delta":{"type":"text_delta","text":"x"}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\"b"}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\nb"}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a` + "\t" + `b"}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"bad ` + "\xff" + `"}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"` + "\u2028" + `"}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"— “q” ` + "\u2029" + ` end"}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a","x":"b"}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"}}`,
	`{"type":"content_block_delta","index":01,"delta":{"type":"text_delta","text":"a"}}`,
	`{"type":"content_block_delta","index":-1,"delta":{"type":"text_delta","text":"a"}}`,
	`{"type":"content_block_delta","index":1234567890,"delta":{"type":"text_delta","text":"a"}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{"}}`,
	`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
	`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t","name":"f","input":{}}}`,
	`{"type":"content_block_start","index":00,"content_block":{"type":"text","text":""}}`,
	`{"type":"content_block_start","index":,"content_block":{"type":"text","text":""}}`,
	`{"type":"content_block_start","index":3,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
	`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"","citations":[]}}`,
	`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","text":""}}`,
}

// checkPlainEvent: whatever the fast path takes, the decode reads the
// same way — a text delta whose text quoteWith encodes to exactly the
// bytes taken.
func checkPlainEvent(t *testing.T, data []byte) {
	t.Helper()
	var tk textChunker
	textPrefix(&tk, Context{}, "x")
	// The two implementations of each check agree.
	if m, sc := plainBlockStartShape.Match(data), plainBlockStartScan(data); m != sc {
		t.Fatalf("%q: block start by the regular expression %v, by the scan %v", data, m, sc)
	}
	mq, mok := plainTextDeltaMatch(data)
	if sq, sok := plainTextDeltaScan(data); mok != sok || !bytes.Equal(mq, sq) {
		t.Fatalf("%q: text delta by the regular expression %q %v, by the scan %q %v", data, mq, mok, sq, sok)
	}
	if sc := plainBlockStartScan(data); sc {
		var ev anthropicWireEvent
		if err := json.Unmarshal(data, &ev); err != nil || ev.Type != "content_block_start" || ev.ContentBlock == nil || ev.ContentBlock.Type == "tool_use" {
			t.Fatalf("%q: passed over as a text block's start, decodes as %+v (%v)", data, ev, err)
		}
	}
	if quoted, ok := plainTextDeltaScan(data); ok {
		var ev anthropicWireEvent
		if err := json.Unmarshal(data, &ev); err != nil || ev.Type != "content_block_delta" || ev.Delta == nil || ev.Delta.Type != "text_delta" {
			t.Fatalf("%q: taken as a text delta, decodes as %+v (%v)", data, ev, err)
		}
		if want := quoteWith(&tk, ev.Delta.Text); !bytes.Equal(quoted, want) {
			t.Fatalf("%q: took %s, the decode and quoteWith give %s", data, quoted, want)
		}
	}
}

func TestAnthropicStreamPlainEvents(t *testing.T) {
	taken := map[bool]int{}
	for _, c := range plainEventCases {
		checkPlainEvent(t, []byte(c))
		_, delta := plainTextDeltaScan([]byte(c))
		taken[delta]++
	}
	// The first four deltas are taken; the rest are not.
	if taken[true] != 4 {
		t.Fatalf("the fast path took %d of the cases, want 4", taken[true])
	}
	starts := 0
	for _, c := range plainEventCases {
		if plainBlockStartScan([]byte(c)) {
			starts++
		}
	}
	// A text block's start at index 0 and a thinking block's.
	if starts != 2 {
		t.Fatalf("%d block starts passed over, want 2", starts)
	}
}

// FuzzAnthropicStreamPlainEvents: the same for any event data.
func FuzzAnthropicStreamPlainEvents(f *testing.F) {
	for _, c := range plainEventCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkPlainEvent(t, data) })
}
