package translate

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
	"github.com/llmgateway/llmgateway/gateway/internal/sse"
)

// The client side of these tests is Ollama's NDJSON framing, as the
// gateway's ollama wire format writes it: each payload's data and a
// newline; a mid-stream error as a last {"error":"<message>"} line.

// ollamaTestModel is the client's model string in the tests.
const ollamaTestModel = "llama3.2:latest"

// ollamaTestStart is the fixed clock's first instant.
var ollamaTestStart = time.Date(2025, 1, 1, 10, 0, 0, 0, time.UTC)

// ollamaTestClock is a clock that starts at ollamaTestStart and moves
// 100 ms forward at each reading, so a stream's times and durations
// are fixed.
func ollamaTestClock() func() time.Time {
	n := 0
	return func() time.Time {
		t := ollamaTestStart.Add(time.Duration(n) * 100 * time.Millisecond)
		n++
		return t
	}
}

// ollamaFrame frames payloads as NDJSON lines, appended to dst.
func ollamaFrame(dst []byte, payloads []Payload) []byte {
	for i := 0; i < len(payloads); i++ {
		dst = append(dst, payloads[i].Data...)
		dst = append(dst, '\n')
	}
	return dst
}

// ollamaErrorLine frames e as Ollama's mid-stream error line, appended
// to dst.
func ollamaErrorLine(dst []byte, e *apierr.Error) []byte {
	var body struct {
		Error string `json:"error"`
	}
	body.Error = e.Message
	return ollamaFrame(dst, []Payload{{Data: encodeJSON(&body)}})
}

// runOllamaOut feeds an upstream transcript through sse.NewReader and
// tr the way the pipeline does, returning exactly what an Ollama client
// receives.
func runOllamaOut(input []byte, tr StreamTranslator) []byte {
	reader := sse.NewReader(bytes.NewReader(input), 1<<20)
	var out []byte
	for {
		ev, err := reader.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return ollamaErrorLine(out, apierr.New(502, "server_error", "upstream_stream_interrupted", err.Error()))
		}
		payloads, e := tr.Event(ev, nil)
		out = ollamaFrame(out, payloads)
		if e != nil {
			return ollamaErrorLine(out, e)
		}
	}
	payloads, e := tr.Finish(nil)
	out = ollamaFrame(out, payloads)
	if e != nil {
		return ollamaErrorLine(out, e)
	}
	return out
}

// ollamaInnerContext is the context the inner (Gemini) translator of
// the tests runs with.
func ollamaInnerContext(includeUsage bool) Context {
	return Context{RequestedModel: "gemini-upstream", UpstreamModel: "gemini-2.5-flash", Created: 1735689600,
		IncludeUsage: includeUsage, IDFallback: "chatcmpl-inner"}
}

// newOllamaOutTest is the translator under test: over an OpenAI stream,
// or over a Gemini stream's translator.
func newOllamaOutTest(gemini bool, in OllamaInbound) StreamTranslator {
	var inner StreamTranslator
	if gemini {
		inner = NewGeminiStream(ollamaInnerContext(true))
	}
	in.Model = ollamaTestModel
	in.Stream = true
	return NewOllamaOutStream(inner, in, ollamaTestClock())
}

// ollamaTestLine is any line an Ollama client reads.
type ollamaTestLine struct {
	Model     *string `json:"model"`
	CreatedAt string  `json:"created_at"`
	Message   *struct {
		Role      string  `json:"role"`
		Content   *string `json:"content"`
		Thinking  *string `json:"thinking"`
		ToolCalls []struct {
			ID       string `json:"id"`
			Function struct {
				Index     int             `json:"index"`
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"message"`
	Response           *string `json:"response"`
	Thinking           *string `json:"thinking"`
	Done               *bool   `json:"done"`
	DoneReason         string  `json:"done_reason"`
	TotalDuration      *int64  `json:"total_duration"`
	LoadDuration       *int64  `json:"load_duration"`
	PromptEvalCount    *int64  `json:"prompt_eval_count"`
	PromptEvalDuration *int64  `json:"prompt_eval_duration"`
	EvalCount          *int64  `json:"eval_count"`
	EvalDuration       *int64  `json:"eval_duration"`
	Error              *string `json:"error"`
}

// ollamaAccumulated is what a client ends up with.
type ollamaAccumulated struct {
	content, thinking string
	tools             []string // "id name arguments"
	lines             int
	done              bool
	doneReason        string
	promptEval, eval  int64
	total, promptDur  int64
	evalDur           int64
	errorMessage      string
	trace             []string
}

// accumulateOllama reads a client's NDJSON the way an Ollama client
// does, checking on the way what every client relies on: one JSON
// object per line, the model and an RFC 3339 created_at on each, a chat
// line with a message and no response (a generate line the other way
// round), done false until one last done:true line carrying all six
// metrics, tool calls whole with object arguments, nothing after the
// done line or an error line.
func accumulateOllama(t *testing.T, data []byte, generate bool) ollamaAccumulated {
	t.Helper()
	var acc ollamaAccumulated
	if len(data) == 0 {
		return acc
	}
	if data[len(data)-1] != '\n' {
		t.Fatalf("output does not end with a newline: %q", data)
	}
	lines := strings.Split(string(data[:len(data)-1]), "\n")
	for i := 0; i < len(lines); i++ {
		if acc.done || acc.errorMessage != "" {
			t.Fatalf("line after the end: %s", lines[i])
		}
		var l ollamaTestLine
		dec := json.NewDecoder(strings.NewReader(lines[i]))
		if err := dec.Decode(&l); err != nil || dec.More() {
			t.Fatalf("line %d is not one JSON object (%v): %s", i, err, lines[i])
		}
		acc.lines++
		if l.Error != nil {
			if *l.Error == "" || l.Model != nil {
				t.Fatalf("bad error line: %s", lines[i])
			}
			acc.errorMessage = *l.Error
			acc.trace = append(acc.trace, "error "+*l.Error)
			continue
		}
		if l.Model == nil || *l.Model != ollamaTestModel || l.Done == nil {
			t.Fatalf("line without model or done: %s", lines[i])
		}
		if _, err := time.Parse(time.RFC3339Nano, l.CreatedAt); err != nil {
			t.Fatalf("created_at %q: %v", l.CreatedAt, err)
		}
		text, thinking := "", ""
		if generate {
			if l.Message != nil || l.Response == nil {
				t.Fatalf("generate line without response: %s", lines[i])
			}
			text = *l.Response
			if l.Thinking != nil {
				thinking = *l.Thinking
			}
		} else {
			if l.Response != nil || l.Thinking != nil || l.Message == nil || l.Message.Role != "assistant" || l.Message.Content == nil {
				t.Fatalf("chat line without message: %s", lines[i])
			}
			text = *l.Message.Content
			if l.Message.Thinking != nil {
				thinking = *l.Message.Thinking
			}
			for j := 0; j < len(l.Message.ToolCalls); j++ {
				c := l.Message.ToolCalls[j]
				if c.Function.Name == "" || len(c.Function.Arguments) == 0 || c.Function.Arguments[0] != '{' || c.Function.Index != len(acc.tools) {
					t.Fatalf("bad tool call: %s", lines[i])
				}
				acc.tools = append(acc.tools, c.ID+" "+c.Function.Name+" "+string(c.Function.Arguments))
				acc.trace = append(acc.trace, "tool "+c.ID+" "+c.Function.Name+" "+string(c.Function.Arguments))
			}
		}
		acc.content += text
		acc.thinking += thinking
		if thinking != "" {
			acc.trace = append(acc.trace, "think "+thinking)
		}
		if text != "" {
			acc.trace = append(acc.trace, "text "+text)
		}
		metrics := []*int64{l.TotalDuration, l.LoadDuration, l.PromptEvalCount, l.PromptEvalDuration, l.EvalCount, l.EvalDuration}
		if !*l.Done {
			if l.DoneReason != "" || text == "" && thinking == "" && (l.Message == nil || len(l.Message.ToolCalls) == 0) {
				t.Fatalf("empty or reasoned done:false line: %s", lines[i])
			}
			for j := 0; j < len(metrics); j++ {
				if metrics[j] != nil {
					t.Fatalf("metrics on a done:false line: %s", lines[i])
				}
			}
			continue
		}
		for j := 0; j < len(metrics); j++ {
			if metrics[j] == nil || *metrics[j] < 0 {
				t.Fatalf("final line lacks a metric: %s", lines[i])
			}
		}
		if text != "" || thinking != "" || l.DoneReason == "" {
			t.Fatalf("bad final line: %s", lines[i])
		}
		acc.done = true
		acc.doneReason = l.DoneReason
		acc.promptEval, acc.eval = *l.PromptEvalCount, *l.EvalCount
		acc.total, acc.promptDur, acc.evalDur = *l.TotalDuration, *l.PromptEvalDuration, *l.EvalDuration
		if acc.total != acc.promptDur+acc.evalDur+*l.LoadDuration {
			t.Fatalf("durations do not add up: %s", lines[i])
		}
		acc.trace = append(acc.trace, "done "+acc.doneReason+" "+strconv.FormatInt(acc.promptEval, 10)+"/"+strconv.FormatInt(acc.eval, 10))
	}
	return acc
}

// ollamaOutStreamCases are the golden transcripts: the input under
// testdata/ollama_out/, and what a client accumulates from the output.
var ollamaOutStreamCases = []struct {
	name, input      string
	gemini           bool
	in               OllamaInbound
	content          string
	thinking         string
	tools            []string
	doneReason       string
	promptEval, eval int64
	errorMessage     string
}{
	{name: "openai_text", input: "openai_text", content: "Hello, <world> & \"friends\"\nünïcödé ✓",
		doneReason: "stop", promptEval: 26, eval: 9},
	{name: "openai_generate_text", input: "openai_text", in: OllamaInbound{Generate: true},
		content: "Hello, <world> & \"friends\"\nünïcödé ✓", doneReason: "stop", promptEval: 26, eval: 9},
	{name: "openai_tools", input: "openai_tools", content: "Let me check.",
		tools:      []string{`call_W1 get_weather {"city":"Paris","n":12345678901234567890123}`, `call_T2 get_time {"tz":"Europe/Paris"}`},
		doneReason: "stop", promptEval: 410, eval: 38},
	{name: "openai_length", input: "openai_length", content: "A long answer that was cut", doneReason: "length"},
	{name: "openai_error_midstream", input: "openai_error_midstream", content: "Partial",
		errorMessage: "the provider reported an error: tokens: Rate limit reached for gpt-4o-mini on tokens per min (TPM)."},
	{name: "openai_truncated", input: "openai_truncated", content: "Cut ",
		errorMessage: "the provider's stream ended before a finish reason or [DONE]"},
	{name: "openai_thinking", input: "openai_thinking", in: OllamaInbound{Think: true}, content: "2 + 2 = 4.",
		thinking: "The user wants 2+2. That is 4.", doneReason: "stop", promptEval: 30, eval: 57},
	{name: "openai_thinking_off", input: "openai_thinking", content: "2 + 2 = 4.", doneReason: "stop", promptEval: 30, eval: 57},
	{name: "openai_generate_thinking", input: "openai_thinking", in: OllamaInbound{Generate: true, Think: true}, content: "2 + 2 = 4.",
		thinking: "The user wants 2+2. That is 4.", doneReason: "stop", promptEval: 30, eval: 57},
	{name: "gemini_text", input: "gemini_text", gemini: true, content: "Hello, <world> & \"friends\"\nünïcödé ✓",
		doneReason: "stop", promptEval: 12, eval: 9},
	{name: "gemini_tools", input: "gemini_tools", gemini: true, content: "Checking all three.",
		tools: []string{`call_gOlTools_0 get_weather {"city":"Paris","n":12345678901234567890123}`,
			`call_gOlTools_1 get_time {"tz":"Europe/Paris"}`, `call_gOlTools_2 list_files {}`},
		doneReason: "stop", promptEval: 52, eval: 31},
	{name: "gemini_length", input: "gemini_length", gemini: true, content: "A long answer that was cut", doneReason: "length", promptEval: 7, eval: 6},
	{name: "gemini_error_midstream", input: "gemini_error_midstream", gemini: true, content: "Partial",
		errorMessage: "the gemini upstream reported an error: RESOURCE_EXHAUSTED: Resource has been exhausted (e.g. check quota)."},
	{name: "gemini_truncated", input: "gemini_truncated", gemini: true, content: "Cut ", tools: []string{`call_gOlCut_0 lookup {"q":"x"}`},
		errorMessage: "the gemini stream ended before a finish reason"},
	// Gemini's translator drops thought parts: with think on, the client
	// gets the answer and no thinking.
	{name: "gemini_thinking", input: "gemini_thinking", gemini: true, in: OllamaInbound{Think: true}, content: "2 + 2 = 4.",
		doneReason: "stop", promptEval: 30, eval: 57},
}

func TestOllamaOutStreamGolden(t *testing.T) {
	for i := 0; i < len(ollamaOutStreamCases); i++ {
		tc := ollamaOutStreamCases[i]
		t.Run(tc.name, func(t *testing.T) {
			input, err := os.ReadFile("testdata/ollama_out/" + tc.input + ".sse")
			if err != nil {
				t.Fatal(err)
			}
			got := runOllamaOut(input, newOllamaOutTest(tc.gemini, tc.in))
			checkGolden(t, "testdata/ollama_out/"+tc.name+".golden", got)
		})
	}
}

func TestOllamaOutStreamSemantics(t *testing.T) {
	for i := 0; i < len(ollamaOutStreamCases); i++ {
		tc := ollamaOutStreamCases[i]
		t.Run(tc.name, func(t *testing.T) {
			golden, err := os.ReadFile("testdata/ollama_out/" + tc.name + ".golden")
			if err != nil {
				t.Fatal(err)
			}
			acc := accumulateOllama(t, golden, tc.in.Generate)
			if acc.content != tc.content || acc.thinking != tc.thinking {
				t.Errorf("content %q thinking %q, want %q %q", acc.content, acc.thinking, tc.content, tc.thinking)
			}
			if strings.Join(acc.tools, "\n") != strings.Join(tc.tools, "\n") {
				t.Errorf("tools\n%s\nwant\n%s", strings.Join(acc.tools, "\n"), strings.Join(tc.tools, "\n"))
			}
			if acc.errorMessage != tc.errorMessage {
				t.Errorf("error %q, want %q", acc.errorMessage, tc.errorMessage)
			}
			if tc.errorMessage != "" {
				if acc.done {
					t.Errorf("errored stream also ended with done")
				}
				return
			}
			if !acc.done || acc.doneReason != tc.doneReason || acc.promptEval != tc.promptEval || acc.eval != tc.eval {
				t.Errorf("done %v %q %d/%d, want %q %d/%d", acc.done, acc.doneReason, acc.promptEval, acc.eval, tc.doneReason, tc.promptEval, tc.eval)
			}
			// The clock moves 100 ms per reading: one at the start, one
			// per line.
			if want := int64(acc.lines) * int64(100*time.Millisecond); acc.total != want || acc.promptDur != int64(100*time.Millisecond) {
				t.Errorf("total %d prompt_eval %d, want %d and 100ms", acc.total, acc.promptDur, want)
			}
		})
	}
}

// ollamaChunkEvents frames hub chunks (each a delta JSON object, a
// whole chunk starting with {"id", {"error" or {"choices", "finish:R"
// for a finish chunk, or "[DONE]") as an OpenAI upstream sends them.
func ollamaChunkEvents(chunks ...string) []byte {
	var b strings.Builder
	for i := 0; i < len(chunks); i++ {
		c := chunks[i]
		switch {
		case c == "[DONE]" || strings.HasPrefix(c, "{\"id\"") || strings.HasPrefix(c, "{\"error\"") || strings.HasPrefix(c, "{\"choices\""):
		case strings.HasPrefix(c, "finish:"):
			c = `{"id":"chatcmpl-S","choices":[{"index":0,"delta":{},"finish_reason":"` + c[len("finish:"):] + `"}]}`
		default:
			c = `{"id":"chatcmpl-S","choices":[{"index":0,"delta":` + c + `,"finish_reason":null}]}`
		}
		b.WriteString("data: " + c + "\n\n")
	}
	return []byte(b.String())
}

const ollamaUsageChunk = `{"id":"chatcmpl-S","choices":[],"usage":{"prompt_tokens":50,"completion_tokens":9}}`

func TestOllamaOutStreamScenarios(t *testing.T) {
	cases := []struct {
		name  string
		in    OllamaInbound
		input []byte
		want  string
	}{
		{"interleaved_parallel_calls_go_out_in_order", OllamaInbound{}, ollamaChunkEvents(
			`{"tool_calls":[{"index":0,"id":"c0","type":"function","function":{"name":"a","arguments":""}}]}`,
			`{"tool_calls":[{"index":1,"id":"c1","type":"function","function":{"name":"b","arguments":"{\"y\":2}"}}]}`,
			`{"tool_calls":[{"index":0,"function":{"arguments":"{\"x\":"}}]}`,
			`{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}`,
			"finish:tool_calls", ollamaUsageChunk, "[DONE]"),
			"tool c0 a {\"x\":1}\ntool c1 b {\"y\":2}\ndone stop 50/9"},
		{"incomplete_arguments_flushed_at_finish_as_empty", OllamaInbound{}, ollamaChunkEvents(
			`{"tool_calls":[{"index":0,"id":"c0","type":"function","function":{"name":"now","arguments":""}}]}`,
			`{"tool_calls":[{"index":1,"id":"c1","type":"function","function":{"name":"b","arguments":"{\"y\":"}}]}`,
			"finish:tool_calls", "[DONE]"),
			"tool c0 now {}\ntool c1 b {}\ndone stop 0/0"},
		{"fragments_without_index_or_id_and_object_arguments", OllamaInbound{}, ollamaChunkEvents(
			`{"tool_calls":[{"function":{"name":"a","arguments":"{\"k\":"}}]}`,
			`{"tool_calls":[{"function":{"arguments":"true}"}}]}`,
			`{"tool_calls":[{"id":"c9","function":{"name":"b","arguments":{"obj":[1, 2.50]}}}]}`,
			`{"tool_calls":[{"id":"c9","function":{"arguments":"ignored"}}]}`,
			"finish:stop", "[DONE]"),
			"tool  a {\"k\":true}\ntool c9 b {\"obj\":[1,2.50]}\ndone stop 0/0"},
		{"nameless_call_dropped", OllamaInbound{}, ollamaChunkEvents(
			`{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}`,
			`{"tool_calls":[{"index":1,"id":"c1","function":{"name":"b","arguments":"{}"}}]}`, "finish:tool_calls", "[DONE]"),
			"tool c1 b {}\ndone stop 0/0"},
		{"text_and_calls_in_one_chunk_share_a_line", OllamaInbound{}, ollamaChunkEvents(
			`{"content":"Both:","tool_calls":[{"index":0,"id":"c0","function":{"name":"a","arguments":"{}"}}]}`, "finish:tool_calls", "[DONE]"),
			"tool c0 a {}\ntext Both:\ndone stop 0/0"},
		{"generate_drops_tool_calls", OllamaInbound{Generate: true}, ollamaChunkEvents(
			`{"content":"x","tool_calls":[{"index":0,"id":"c0","function":{"name":"a","arguments":"{}"}}]}`, "finish:tool_calls", "[DONE]"),
			"text x\ndone stop 0/0"},
		{"reasoning_and_text_in_one_line", OllamaInbound{Think: true}, ollamaChunkEvents(
			`{"reasoning":"Hmm."}`, `{"content":"A","reasoning_content":"B"}`, "finish:stop", "[DONE]"),
			"think Hmm.\nthink B\ntext A\ndone stop 0/0"},
		{"reasoning_dropped_without_think", OllamaInbound{}, ollamaChunkEvents(
			`{"reasoning":"Hmm."}`, `{"content":"A","reasoning_content":"B"}`, "finish:stop", "[DONE]"),
			"text A\ndone stop 0/0"},
		{"refusal_and_array_content", OllamaInbound{}, ollamaChunkEvents(
			`{"refusal":"I can't."}`, `{"content":[{"type":"text","text":"par\"t"},{"type":"image_url"}]}`, "finish:content_filter", "[DONE]"),
			"text I can't.\ntext par\"t\ndone stop 0/0"},
		{"empty_deltas_send_nothing", OllamaInbound{}, ollamaChunkEvents(
			`{"role":"assistant","content":""}`, `{"content":null}`, `{}`, `{"content":"x"}`, "finish:stop", "[DONE]"),
			"text x\ndone stop 0/0"},
		{"usage_in_the_finish_chunk_waits_for_done", OllamaInbound{}, ollamaChunkEvents(`{"content":"x"}`,
			`{"id":"chatcmpl-S","choices":[{"index":0,"delta":{},"finish_reason":"length"}],"usage":{"prompt_tokens":7,"completion_tokens":1}}`, "[DONE]"),
			"text x\ndone length 7/1"},
		{"usage_before_finish_does_not_end", OllamaInbound{}, ollamaChunkEvents(`{"content":"x"}`, ollamaUsageChunk, `{"content":"y"}`, "finish:stop", "[DONE]"),
			"text x\ntext y\ndone stop 50/9"},
		{"done_without_finish", OllamaInbound{}, ollamaChunkEvents(`{"content":"x"}`, "[DONE]"), "text x\ndone stop 0/0"},
		{"only_done", OllamaInbound{}, ollamaChunkEvents("[DONE]"), "done stop 0/0"},
		{"finish_without_done_ends_cleanly", OllamaInbound{}, ollamaChunkEvents(`{"content":"x"}`, "finish:stop"), "text x\ndone stop 0/0"},
		{"events_after_the_end_ignored", OllamaInbound{}, ollamaChunkEvents(`{"content":"x"}`, "finish:stop", ollamaUsageChunk,
			`{"content":"late"}`, `{"error":{"message":"late","type":"server_error"}}`, "[DONE]"),
			"text x\ndone stop 50/9"},
		{"deltas_after_finish_ignored", OllamaInbound{}, ollamaChunkEvents(`{"content":"x"}`, "finish:stop", `{"content":"late"}`, "[DONE]"),
			"text x\ndone stop 0/0"},
		{"other_choices_ignored", OllamaInbound{}, ollamaChunkEvents(
			`{"id":"chatcmpl-S","choices":[{"index":1,"delta":{"content":"other"}},{"index":0,"delta":{"content":"mine"}}]}`, "finish:stop", "[DONE]"),
			"text mine\ndone stop 0/0"},
		{"error_first", OllamaInbound{}, ollamaChunkEvents(`{"error":{"message":"Overloaded","type":"overloaded_error"}}`),
			"error the provider reported an error: overloaded_error: Overloaded"},
		{"not_json", OllamaInbound{}, []byte("data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\ndata: hello\n\n"),
			"text x\nerror the provider sent a malformed stream event (not a JSON object)"},
		{"empty_stream_is_truncated", OllamaInbound{}, nil, "error the provider's stream ended before a finish reason or [DONE]"},
		{"odd_types_read_leniently", OllamaInbound{}, ollamaChunkEvents(`{"id":"chatcmpl-S","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":7}]}`,
			`{"id":"chatcmpl-S","choices":[{"index":0,"delta":{"content":5,"tool_calls":"no"},"finish_reason":"stop"}]}`, "[DONE]"),
			"text x\ndone stop 0/0"},
	}
	for i := 0; i < len(cases); i++ {
		tc := cases[i]
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.Model = ollamaTestModel
			tr := NewOllamaOutStream(nil, in, ollamaTestClock())
			acc := accumulateOllama(t, runOllamaOut(tc.input, tr), in.Generate)
			if got := strings.Join(acc.trace, "\n"); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestOllamaOutStreamErrors(t *testing.T) {
	cases := []struct {
		name   string
		input  []byte
		status int
		code   string
		class  apierr.Class
	}{
		{"rate_limited", ollamaChunkEvents(`{"error":{"message":"Slow down","type":"requests","code":"rate_limit_exceeded"}}`),
			429, "upstream_error", apierr.ClassRateLimited},
		{"numeric_code", ollamaChunkEvents(`{"error":{"message":"unavailable","code":503}}`), 503, "upstream_error", apierr.ClassServer},
		{"bad_json", []byte("data: {\"choices\":[\n\n"), 502, "upstream_bad_response", apierr.ClassBadResponse},
	}
	for i := 0; i < len(cases); i++ {
		tc := cases[i]
		t.Run(tc.name, func(t *testing.T) {
			tr := NewOllamaOutStream(nil, OllamaInbound{Model: "m"}, ollamaTestClock())
			reader := sse.NewReader(bytes.NewReader(tc.input), 1<<20)
			ev, err := reader.Next()
			if err != nil {
				t.Fatal(err)
			}
			out, e := tr.Event(ev, nil)
			if e == nil || len(out) != 0 {
				t.Fatalf("got %d payloads, error %v; want only an error", len(out), e)
			}
			if e.Status != tc.status || e.Code != tc.code || e.Class != tc.class {
				t.Errorf("error %d %s class %d, want %d %s class %d", e.Status, e.Code, e.Class, tc.status, tc.code, tc.class)
			}
		})
	}
	t.Run("truncated_openai", func(t *testing.T) {
		tr := NewOllamaOutStream(nil, OllamaInbound{Model: "m"}, ollamaTestClock())
		if _, e := tr.Event(sse.Event{Data: []byte(`{"choices":[{"index":0,"delta":{"content":"x"}}]}`)}, nil); e != nil {
			t.Fatal(e)
		}
		out, e := tr.Finish(nil)
		if e == nil || len(out) != 0 || e.Status != 502 || e.Code != "upstream_stream_truncated" || e.Class != apierr.ClassTruncated {
			t.Fatalf("finish without finish_reason: %d payloads, %+v", len(out), e)
		}
	})
	t.Run("truncated_gemini_gets_the_class", func(t *testing.T) {
		input, err := os.ReadFile("testdata/ollama_out/gemini_truncated.sse")
		if err != nil {
			t.Fatal(err)
		}
		tr := newOllamaOutTest(true, OllamaInbound{})
		reader := sse.NewReader(bytes.NewReader(input), 1<<20)
		for {
			ev, err := reader.Next()
			if err != nil {
				break
			}
			if _, e := tr.Event(ev, nil); e != nil {
				t.Fatal(e)
			}
		}
		_, e := tr.Finish(nil)
		if e == nil || e.Status != 502 || e.Code != "upstream_stream_truncated" || e.Class != apierr.ClassTruncated {
			t.Fatalf("got %+v", e)
		}
	})
}

func TestOllamaOutStreamInner(t *testing.T) {
	chunk := func(delta string) string {
		return `{"id":"chatcmpl-in","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}`
	}
	finish := `{"id":"chatcmpl-in","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`
	overloaded := apierr.New(529, "server_error", "upstream_error", "overloaded")
	in := OllamaInbound{Model: ollamaTestModel}
	t.Run("error_after_payloads_keeps_its_status", func(t *testing.T) {
		inner := &scriptedStream{events: [][]string{{chunk(`{"content":"a"}`), chunk(`{"content":"b"}`)}}, errs: []*apierr.Error{overloaded}}
		tr := NewOllamaOutStream(inner, in, ollamaTestClock())
		out, e := tr.Event(sse.Event{Data: []byte("x")}, nil)
		if e != overloaded || len(out) != 2 {
			t.Fatalf("got %d payloads and %v; want two lines, then the inner error", len(out), e)
		}
	})
	t.Run("finish_translates_trailing_payloads_then_closes", func(t *testing.T) {
		inner := &scriptedStream{events: [][]string{{chunk(`{"content":"a"}`), finish}}, errs: []*apierr.Error{nil},
			finish: []string{`{"id":"chatcmpl-in","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2}}`}}
		tr := NewOllamaOutStream(inner, in, ollamaTestClock())
		acc := accumulateOllama(t, runOllamaOut([]byte("data: x\n\n"), tr), false)
		if got := strings.Join(acc.trace, "\n"); got != "text a\ndone stop 5/2" || !inner.finished {
			t.Errorf("got\n%s", got)
		}
		if u := tr.Usage(); u != (Usage{PromptTokens: 5, CompletionTokens: 2, Reported: true}) {
			t.Errorf("usage %+v", u)
		}
	})
	t.Run("inner_usage_when_no_usage_chunk", func(t *testing.T) {
		inner := &scriptedStream{events: [][]string{{chunk(`{"content":"a"}`), finish}}, errs: []*apierr.Error{nil},
			usage: Usage{PromptTokens: 300, CompletionTokens: 12, CacheReadTokens: 100, Reported: true}}
		tr := NewOllamaOutStream(inner, in, ollamaTestClock())
		acc := accumulateOllama(t, runOllamaOut([]byte("data: x\n\n"), tr), false)
		if got := strings.Join(acc.trace, "\n"); got != "text a\ndone stop 300/12" {
			t.Errorf("got\n%s", got)
		}
	})
	t.Run("gemini_without_include_usage", func(t *testing.T) {
		input, err := os.ReadFile("testdata/ollama_out/gemini_length.sse")
		if err != nil {
			t.Fatal(err)
		}
		tr := NewOllamaOutStream(NewGeminiStream(ollamaInnerContext(false)), in, ollamaTestClock())
		acc := accumulateOllama(t, runOllamaOut(input, tr), false)
		if got := strings.Join(acc.trace, "\n"); got != "text A long answer\ntext  that was cut\ndone length 7/6" {
			t.Errorf("got\n%s", got)
		}
	})
}

func TestOllamaOutTextLineMatchesStruct(t *testing.T) {
	at := ollamaTestStart.Add(1234567 * time.Nanosecond)
	texts := []json.RawMessage{quoteJSON("plain"), quoteJSON("<b> & \"q\"\n\u2028 ✓"), json.RawMessage(`"\u003c"`)}
	for g := 0; g < 2; g++ {
		for i := 0; i < len(texts); i++ {
			for k := 0; k < 2; k++ {
				in := OllamaInbound{Model: "m<&>\"x\"", Generate: g == 1}
				s := NewOllamaOutStream(nil, in, ollamaTestClock()).(*ollamaOutStream)
				var thinking json.RawMessage
				if k == 1 {
					thinking = quoteJSON("why <not>")
				}
				line := ollamaOutLine{Model: in.Model, CreatedAt: ollamaTimestamp(at)}
				if in.Generate {
					line.Response, line.Thinking = texts[i], thinking
				} else {
					line.Message = &ollamaOutMessage{Role: "assistant", Content: texts[i], Thinking: thinking}
				}
				want := encodeJSON(&line)
				if got := ollamaOutTextLine(s, at, texts[i], thinking).Data; !bytes.Equal(got, want) {
					t.Errorf("got  %s\nwant %s", got, want)
				}
			}
		}
	}
}
