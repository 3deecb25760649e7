package translate

import (
	"testing"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// ollamaTestTimes are an exchange of 500 ms whose first token came
// after 120 ms.
var ollamaTestTimes = OllamaTimes{Start: ollamaTestStart, FirstToken: ollamaTestStart.Add(120 * time.Millisecond),
	End: ollamaTestStart.Add(500 * time.Millisecond)}

// ollamaTestMetrics is the final line's tail for ollamaTestTimes and
// the counts.
func ollamaTestMetrics(reason, prompt, eval string) string {
	return `"done":true,"done_reason":"` + reason + `","total_duration":500000000,"load_duration":0,"prompt_eval_count":` + prompt +
		`,"prompt_eval_duration":120000000,"eval_count":` + eval + `,"eval_duration":380000000}`
}

const ollamaTestHead = `{"model":"llama3.2:latest","created_at":"2025-01-01T10:00:00.5Z",`

var ollamaResponseCases = []struct {
	name  string
	in    OllamaInbound
	hub   string
	want  string
	usage Usage
}{
	{name: "text",
		hub: hubCompletion(`{"role":"assistant","content":"Hi <there> & \"you\" ✓","refusal":null}`, `"stop"`,
			`{"prompt_tokens":26,"completion_tokens":5,"total_tokens":31,"prompt_tokens_details":{"cached_tokens":6}}`),
		want:  ollamaTestHead + `"message":{"role":"assistant","content":"Hi <there> & \"you\" ✓"},` + ollamaTestMetrics("stop", "26", "5"),
		usage: Usage{PromptTokens: 26, CompletionTokens: 5, CacheReadTokens: 6, Reported: true}},
	{name: "generate_text",
		in:    OllamaInbound{Generate: true},
		hub:   hubCompletion(`{"role":"assistant","content":"Rayleigh scattering."}`, `"stop"`, `{"prompt_tokens":9,"completion_tokens":3}`),
		want:  ollamaTestHead + `"response":"Rayleigh scattering.",` + ollamaTestMetrics("stop", "9", "3"),
		usage: Usage{PromptTokens: 9, CompletionTokens: 3, Reported: true}},
	{name: "tool_calls_arguments_as_objects",
		hub: hubCompletion(`{"role":"assistant","content":null,"tool_calls":[
			{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\", \"n\": 12345678901234567890123}"}},
			{"type":"function","function":{"name":"now","arguments":""}},
			{"id":"call_3","type":"function","function":{"name":"g","arguments":"not json"}},
			{"id":"nameless","type":"function","function":{"arguments":"{}"}},
			{"id":"call_4","type":"function","function":{"name":"o","arguments":{"a":1.50}}}]}`, `"tool_calls"`, ""),
		want: ollamaTestHead + `"message":{"role":"assistant","content":"","tool_calls":[
			{"id":"call_1","function":{"index":0,"name":"get_weather","arguments":{"city":"Paris","n":12345678901234567890123}}},
			{"function":{"index":1,"name":"now","arguments":{}}},
			{"id":"call_3","function":{"index":2,"name":"g","arguments":{}}},
			{"id":"call_4","function":{"index":3,"name":"o","arguments":{"a":1.50}}}]},` + ollamaTestMetrics("stop", "0", "0")},
	{name: "generate_drops_tool_calls",
		in:   OllamaInbound{Generate: true},
		hub:  hubCompletion(`{"role":"assistant","content":"x","tool_calls":[{"id":"c","function":{"name":"f","arguments":"{}"}}]}`, `"tool_calls"`, ""),
		want: ollamaTestHead + `"response":"x",` + ollamaTestMetrics("stop", "0", "0")},
	{name: "length",
		hub:  hubCompletion(`{"role":"assistant","content":"Cut"}`, `"length"`, ""),
		want: ollamaTestHead + `"message":{"role":"assistant","content":"Cut"},` + ollamaTestMetrics("length", "0", "0")},
	{name: "content_filter_is_stop",
		hub:  hubCompletion(`{"role":"assistant","content":""}`, `"content_filter"`, ""),
		want: ollamaTestHead + `"message":{"role":"assistant","content":""},` + ollamaTestMetrics("stop", "0", "0")},
	{name: "null_finish_is_stop",
		hub:  hubCompletion(`{"role":"assistant","content":"x"}`, `null`, ""),
		want: ollamaTestHead + `"message":{"role":"assistant","content":"x"},` + ollamaTestMetrics("stop", "0", "0")},
	{name: "refusal_as_content",
		hub:  hubCompletion(`{"role":"assistant","content":null,"refusal":"I can't help with that."}`, `"stop"`, ""),
		want: ollamaTestHead + `"message":{"role":"assistant","content":"I can't help with that."},` + ollamaTestMetrics("stop", "0", "0")},
	{name: "array_content",
		hub:  hubCompletion(`{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"image_url"},{"type":"text","text":"b"}]}`, `"stop"`, ""),
		want: ollamaTestHead + `"message":{"role":"assistant","content":"ab"},` + ollamaTestMetrics("stop", "0", "0")},
	{name: "thinking_when_asked",
		in:   OllamaInbound{Think: true},
		hub:  hubCompletion(`{"role":"assistant","content":"4","reasoning_content":"2+2 is 4."}`, `"stop"`, ""),
		want: ollamaTestHead + `"message":{"role":"assistant","content":"4","thinking":"2+2 is 4."},` + ollamaTestMetrics("stop", "0", "0")},
	{name: "thinking_from_reasoning_in_generate",
		in:   OllamaInbound{Think: true, Generate: true},
		hub:  hubCompletion(`{"role":"assistant","content":"4","reasoning":"2+2 is 4."}`, `"stop"`, ""),
		want: ollamaTestHead + `"response":"4","thinking":"2+2 is 4.",` + ollamaTestMetrics("stop", "0", "0")},
	{name: "thinking_dropped_when_not_asked",
		hub:  hubCompletion(`{"role":"assistant","content":"4","reasoning_content":"2+2 is 4."}`, `"stop"`, ""),
		want: ollamaTestHead + `"message":{"role":"assistant","content":"4"},` + ollamaTestMetrics("stop", "0", "0")},
	{name: "no_choices",
		hub:  `{"id":"x","object":"chat.completion","choices":[]}`,
		want: ollamaTestHead + `"message":{"role":"assistant","content":""},` + ollamaTestMetrics("stop", "0", "0")},
}

func TestOllamaFromHubResponse(t *testing.T) {
	for i := 0; i < len(ollamaResponseCases); i++ {
		tc := ollamaResponseCases[i]
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.Model = ollamaTestModel
			out, u, e := OllamaFromHubResponse([]byte(tc.hub), in, ollamaTestTimes)
			if e != nil {
				t.Fatalf("error %+v", e)
			}
			if want := ollamaCompact(t, tc.want); string(out) != want {
				t.Errorf("got\n%s\nwant\n%s", out, want)
			}
			if u != tc.usage {
				t.Errorf("usage %+v, want %+v", u, tc.usage)
			}
		})
	}
}

func TestOllamaFromHubResponseErrors(t *testing.T) {
	cases := []struct {
		name   string
		hub    string
		status int
		code   string
		class  apierr.Class
	}{
		{"rate_limited", `{"error":{"message":"Slow down","type":"requests","code":"rate_limit_exceeded"}}`, 429, "upstream_error", apierr.ClassRateLimited},
		{"numeric_code", `{"error":{"message":"unavailable","code":503}}`, 503, "upstream_error", apierr.ClassServer},
		{"not_json", `<html>`, 502, "upstream_bad_response", apierr.ClassBadResponse},
		{"broken_json", `{"choices":[`, 502, "upstream_bad_response", apierr.ClassBadResponse},
		{"a_chunk", `{"object":"chat.completion.chunk","choices":[]}`, 502, "upstream_bad_response", apierr.ClassBadResponse},
		{"no_choices", `{"id":"x"}`, 502, "upstream_bad_response", apierr.ClassBadResponse},
	}
	for i := 0; i < len(cases); i++ {
		tc := cases[i]
		t.Run(tc.name, func(t *testing.T) {
			out, _, e := OllamaFromHubResponse([]byte(tc.hub), OllamaInbound{Model: "m"}, ollamaTestTimes)
			if e == nil || out != nil {
				t.Fatalf("got %s, %v", out, e)
			}
			if e.Status != tc.status || e.Code != tc.code || e.Class != tc.class {
				t.Errorf("error %d %s class %d, want %d %s class %d", e.Status, e.Code, e.Class, tc.status, tc.code, tc.class)
			}
		})
	}
}

func TestOllamaSpan(t *testing.T) {
	s := ollamaTestStart
	cases := []struct {
		name         string
		times        OllamaTimes
		total, first int64
	}{
		{"measured", OllamaTimes{Start: s, FirstToken: s.Add(2 * time.Second), End: s.Add(3 * time.Second)}, 3e9, 2e9},
		{"no_first_token", OllamaTimes{Start: s, End: s.Add(time.Second)}, 1e9, 1e9},
		{"first_token_before_start", OllamaTimes{Start: s, FirstToken: s.Add(-time.Second), End: s.Add(time.Second)}, 1e9, 1e9},
		{"first_token_after_end", OllamaTimes{Start: s, FirstToken: s.Add(2 * time.Second), End: s.Add(time.Second)}, 1e9, 1e9},
		{"end_before_start", OllamaTimes{Start: s, End: s.Add(-time.Second)}, 0, 0},
		{"zero", OllamaTimes{}, 0, 0},
	}
	for i := 0; i < len(cases); i++ {
		total, first := ollamaSpan(cases[i].times)
		if total != cases[i].total || first != cases[i].first {
			t.Errorf("%s: %d %d, want %d %d", cases[i].name, total, first, cases[i].total, cases[i].first)
		}
	}
}
