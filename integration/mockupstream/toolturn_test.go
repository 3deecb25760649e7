package mockupstream

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// readTurn is the scripted turn the tests share: a Read of a file whose
// content must come back in the tool result.
var readTurn = ToolTurn{
	Trigger:   "read the note",
	Name:      "Read",
	Input:     `{ "file_path": "/tmp/work/note.txt" }`,
	Expect:    "secret 4711",
	FinalText: "The note says secret 4711.",
}

const readInput = `{"file_path":"/tmp/work/note.txt"}`

const anthReadTools = `"tools":[{"name":"Bash","input_schema":{"type":"object"}},{"name":"Read","input_schema":{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"file_path":{"type":"string"}}}}]`

// anthTurnBody is a streaming Messages request with the Read tool and
// the given messages.
func anthTurnBody(messages string) string {
	return `{"model":"claude-x","max_tokens":1024,"stream":true,` + anthReadTools + `,"messages":[` + messages + `]}`
}

const (
	anthAsk      = `{"role":"user","content":[{"type":"text","text":"<system-reminder>x</system-reminder>"},{"type":"text","text":"please read the note"}]}`
	anthCalled   = `{"role":"assistant","content":[{"type":"text","text":"Let me use the tool."},{"type":"tool_use","id":"toolu_7","name":"Read","input":{"file_path":"/tmp/work/note.txt"}}]}`
	anthResultOK = `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_7","content":"1\tsecret 4711\n2\t","cache_control":{"type":"ephemeral"}}]}`
)

// anthropicText concatenates the text deltas of a Messages stream and
// returns it with the stop reason.
func anthropicText(t *testing.T, body []byte) (string, string) {
	t.Helper()
	var text strings.Builder
	stop := ""
	for _, e := range namedEvents(t, body, "\n") {
		var d struct {
			Delta struct {
				Type       string `json:"type"`
				Text       string `json:"text"`
				StopReason string `json:"stop_reason"`
			} `json:"delta"`
		}
		if err := json.Unmarshal([]byte(e.data), &d); err != nil {
			t.Fatal(err)
		}
		if d.Delta.Type == "text_delta" {
			text.WriteString(d.Delta.Text)
		}
		if e.name == "message_delta" {
			stop = d.Delta.StopReason
		}
	}
	return text.String(), stop
}

func TestToolTurnAnthropicCall(t *testing.T) {
	turn := readTurn
	_, ts := newServer(t, Options{ToolTurn: &turn})
	resp, got := do(t, "POST", ts.URL+"/v1/messages?beta=true", anthTurnBody(anthAsk), anthHeaders())
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, got)
	}
	events := namedEvents(t, got, "\n")
	want := []namedEvent{
		{"message_start", `{"type":"message_start","message":{"id":"msg_mock_1","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"cache_creation_input_tokens":2,"cache_read_input_tokens":3,"output_tokens":1}}}`},
		{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
		{"ping", `{"type": "ping"}`},
		{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me use the tool."}}`},
		{"content_block_stop", `{"type":"content_block_stop","index":0}`},
		{"content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_mock_1","name":"Read","input":{}}}`},
		{"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}`},
		{"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"file_path\""}}`},
		{"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":":\"/tmp/work/"}}`},
		{"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"note.txt\"}"}}`},
		{"content_block_stop", `{"type":"content_block_stop","index":1}`},
		{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":17}}`},
		{"message_stop", `{"type":"message_stop"}`},
	}
	if !reflect.DeepEqual(events, want) {
		t.Fatalf("events\n got %q\nwant %q", events, want)
	}

	// Not streamed: the same call as one message.
	plain := strings.Replace(anthTurnBody(anthAsk), `"stream":true,`, "", 1)
	_, got = do(t, "POST", ts.URL+"/v1/messages", plain, anthHeaders())
	if !strings.Contains(string(got), `"content":[{"type":"text","text":"Let me use the tool."},{"type":"tool_use","id":"toolu_mock_2","name":"Read","input":`+readInput+`}],"stop_reason":"tool_use"`) {
		t.Fatalf("non-streamed call: %s", got)
	}
}

func TestToolTurnAnthropicAnswer(t *testing.T) {
	turn := readTurn
	_, ts := newServer(t, Options{ToolTurn: &turn, Chunks: 2})
	cases := []struct {
		name, body, text string
	}{
		{"result carries Expect", anthTurnBody(anthAsk + "," + anthCalled + "," + anthResultOK), "The note says secret 4711."},
		{"result lacks Expect", anthTurnBody(anthAsk + "," + anthCalled + "," + strings.Replace(anthResultOK, "secret 4711", "nothing", 1)),
			ToolTurnMismatch("Read", "secret 4711", "1\tnothing\n2\t")},
		{"result in text blocks", anthTurnBody(anthAsk + "," + anthCalled + "," +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_7","content":[{"type":"text","text":"secret 4711"}]},{"type":"text","text":"<system-reminder>r</system-reminder>"}]}`),
			"The note says secret 4711."},
		{"result of another tool", anthTurnBody(anthAsk + "," + strings.Replace(anthCalled, `"name":"Read"`, `"name":"Bash"`, 1) + "," + anthResultOK), ReplyText(2)},
		{"no trigger", anthTurnBody(`{"role":"user","content":"say hi"}`), ReplyText(2)},
		{"undeclared tool", `{"model":"claude-x","max_tokens":1024,"stream":true,"messages":[` + anthAsk + `]}`, ToolTurnUndeclared("Read")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, got := do(t, "POST", ts.URL+"/v1/messages", tc.body, anthHeaders())
			if resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, got)
			}
			text, stop := anthropicText(t, got)
			if text != tc.text || stop != "end_turn" {
				t.Fatalf("got %q (%s), want %q (end_turn)", text, stop, tc.text)
			}
		})
	}
	// The answer streams a word a delta and counts them as output tokens.
	_, got := do(t, "POST", ts.URL+"/v1/messages", anthTurnBody(anthAsk+","+anthCalled+","+anthResultOK), anthHeaders())
	var deltas []string
	for _, e := range namedEvents(t, got, "\n") {
		if e.name == "content_block_delta" {
			deltas = append(deltas, e.data)
		}
	}
	if len(deltas) != 5 || !strings.Contains(deltas[1], `"text":" note"`) || !strings.Contains(string(got), `"usage":{"output_tokens":5}`) {
		t.Fatalf("answer chunks %q\n%s", deltas, got)
	}
}

func TestToolTurnEmptyTriggerAndBadInput(t *testing.T) {
	_, ts := newServer(t, Options{ToolTurn: &ToolTurn{Name: "Read"}})
	plain := strings.Replace(anthTurnBody(`{"role":"user","content":"anything"}`), `"stream":true,`, "", 1)
	_, got := do(t, "POST", ts.URL+"/v1/messages", plain, anthHeaders())
	if !strings.Contains(string(got), `{"type":"tool_use","id":"toolu_mock_1","name":"Read","input":{}}`) {
		t.Fatalf("empty trigger, empty input: %s", got)
	}
	answer := strings.Replace(anthTurnBody(anthAsk+","+anthCalled+","+anthResultOK), `"stream":true,`, "", 1)
	_, got = do(t, "POST", ts.URL+"/v1/messages", answer, anthHeaders())
	if !strings.Contains(string(got), `"text":"`+DefaultToolTurnFinalText+`"`) {
		t.Fatalf("default final text: %s", got)
	}

	_, bad := newServer(t, Options{ToolTurn: &ToolTurn{Name: "Read", Input: `["not", "an object"]`}})
	resp, got := do(t, "POST", bad.URL+"/v1/messages", plain, anthHeaders())
	if resp.StatusCode != 500 || !strings.Contains(string(got), "Options.ToolTurn.Input is not a JSON object") {
		t.Fatalf("bad input: %d %s", resp.StatusCode, got)
	}
	resp, got = do(t, "POST", bad.URL+"/v1/chat/completions", `{"model":"m","tools":[{"type":"function","function":{"name":"Read"}}],"messages":[{"role":"user","content":"x"}]}`, nil)
	if resp.StatusCode != 500 || !strings.Contains(string(got), "Options.ToolTurn.Input is not a JSON object") {
		t.Fatalf("bad input (chat): %d %s", resp.StatusCode, got)
	}
}

const chatReadTools = `"tools":[{"type":"function","function":{"name":"Bash","parameters":{"type":"object"}}},{"type":"function","function":{"name":"Read","parameters":{"type":"object"}}}]`

func TestToolTurnChatCall(t *testing.T) {
	turn := readTurn
	_, ts := newServer(t, Options{ToolTurn: &turn})
	body := `{"model":"m","stream":true,"stream_options":{"include_usage":true},` + chatReadTools +
		`,"messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"please read the note"}]}]}`
	resp, got := do(t, "POST", ts.URL+"/v1/chat/completions", body, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, got)
	}
	const prefix = `{"id":"chatcmpl-mock-1","object":"chat.completion.chunk","created":1735689600,"model":"m","system_fingerprint":"fp_mock","choices":`
	want := []string{
		prefix + `[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":null}`,
		prefix + `[{"index":0,"delta":{"content":"Let me use the tool."},"logprobs":null,"finish_reason":null}],"usage":null}`,
		prefix + `[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_mock_1","type":"function","function":{"name":"Read","arguments":""}}]},"logprobs":null,"finish_reason":null}],"usage":null}`,
		prefix + `[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"file_path\""}}]},"logprobs":null,"finish_reason":null}],"usage":null}`,
		prefix + `[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":\"/tmp/work/"}}]},"logprobs":null,"finish_reason":null}],"usage":null}`,
		prefix + `[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"note.txt\"}"}}]},"logprobs":null,"finish_reason":null}],"usage":null}`,
		prefix + `[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}],"usage":null}`,
		prefix + `[],"usage":{"prompt_tokens":6,"completion_tokens":17,"total_tokens":23}}`,
		`[DONE]`,
	}
	if ev := sseEvents(t, got); !reflect.DeepEqual(ev, want) {
		t.Fatalf("events\n got %q\nwant %q", ev, want)
	}

	plain := strings.Replace(body, `"stream":true,"stream_options":{"include_usage":true},`, "", 1)
	_, got = do(t, "POST", ts.URL+"/v1/chat/completions", plain, nil)
	wantPlain := `{"id":"chatcmpl-mock-2","object":"chat.completion","created":1735689600,"model":"m","system_fingerprint":"fp_mock","choices":[{"index":0,"message":{"role":"assistant","content":"Let me use the tool.",` +
		`"tool_calls":[{"id":"call_mock_2","type":"function","function":{"name":"Read","arguments":"{\"file_path\":\"/tmp/work/note.txt\"}"}}],"refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"tool_calls"}],` +
		`"usage":{"prompt_tokens":6,"completion_tokens":17,"total_tokens":23}}`
	if string(got) != wantPlain {
		t.Fatalf("non-streamed\n got %s\nwant %s", got, wantPlain)
	}
}

func TestToolTurnChatAnswer(t *testing.T) {
	turn := readTurn
	_, ts := newServer(t, Options{ToolTurn: &turn, Chunks: 2})
	const (
		ask    = `{"role":"user","content":"please read the note"}`
		called = `{"role":"assistant","content":null,"tool_calls":[{"id":"call_9","type":"function","function":{"name":"Read","arguments":"{\"file_path\":\"/tmp/work/note.txt\"}"}}]}`
	)
	cases := []struct {
		name, messages, text string
	}{
		{"result carries Expect", ask + "," + called + `,{"role":"tool","tool_call_id":"call_9","content":"1\tsecret 4711"}`, "The note says secret 4711."},
		{"result as text parts", ask + "," + called + `,{"role":"tool","tool_call_id":"call_9","content":[{"type":"text","text":"secret 4711"}]}`, "The note says secret 4711."},
		{"result then user text", ask + "," + called + `,{"role":"tool","tool_call_id":"call_9","content":"secret 4711"},{"role":"user","content":"<system-reminder>r</system-reminder>"}`, "The note says secret 4711."},
		{"result lacks Expect", ask + "," + called + `,{"role":"tool","tool_call_id":"call_9","content":"empty"}`, ToolTurnMismatch("Read", "secret 4711", "empty")},
		{"result for another id", ask + "," + called + `,{"role":"tool","tool_call_id":"call_other","content":"secret 4711"}`, ReplyText(2)},
		{"no trigger", `{"role":"user","content":"hello"}`, ReplyText(2)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"model":"m",` + chatReadTools + `,"messages":[` + tc.messages + `]}`
			resp, got := do(t, "POST", ts.URL+"/v1/chat/completions", body, nil)
			var out struct {
				Choices []struct {
					Message struct {
						Content   string            `json:"content"`
						ToolCalls []json.RawMessage `json:"tool_calls"`
					} `json:"message"`
					FinishReason string `json:"finish_reason"`
				} `json:"choices"`
			}
			if resp.StatusCode != 200 || json.Unmarshal(got, &out) != nil || len(out.Choices) != 1 {
				t.Fatalf("%d %s", resp.StatusCode, got)
			}
			c := out.Choices[0]
			if c.Message.Content != tc.text || c.FinishReason != "stop" || len(c.Message.ToolCalls) != 0 {
				t.Fatalf("got %s\nwant content %q", got, tc.text)
			}
		})
	}
	// Streamed: a word a chunk.
	body := `{"model":"m","stream":true,` + chatReadTools + `,"messages":[` + ask + "," + called + `,{"role":"tool","tool_call_id":"call_9","content":"secret 4711"}]}`
	_, got := do(t, "POST", ts.URL+"/v1/chat/completions", body, nil)
	var text []string
	for _, ev := range sseEvents(t, got) {
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if json.Unmarshal([]byte(ev), &chunk) == nil && len(chunk.Choices) == 1 && chunk.Choices[0].Delta.Content != "" {
			text = append(text, chunk.Choices[0].Delta.Content)
		}
	}
	if want := []string{"The", " note", " says", " secret", " 4711."}; !reflect.DeepEqual(text, want) {
		t.Fatalf("streamed answer %q, want %q", text, want)
	}
}

func TestAnthropicSystemMessages(t *testing.T) {
	_, ts := newServer(t, Options{Chunks: 2})
	// Claude Code sends the environment as a role "system" message after
	// the user's, under the per-turn-control beta.
	body := `{"model":"c","max_tokens":10,"stream":true,"messages":[{"role":"user","content":[{"type":"text","text":"say hi"}]},` +
		`{"role":"system","content":"# Environment here"},{"role":"system","content":[{"type":"text","text":"more"}]}]}`
	resp, got := do(t, "POST", ts.URL+"/v1/messages?beta=true", body, anthHeaders())
	if resp.StatusCode != 400 || !strings.Contains(string(got), `"message":"messages.1.role: Input should be 'user' or 'assistant'"`) {
		t.Fatalf("without the beta: %d %s", resp.StatusCode, got)
	}
	beta := anthHeaders("anthropic-beta", "claude-code-20250219,"+SystemMessagesBeta+",effort-2025-11-24")
	resp, got = do(t, "POST", ts.URL+"/v1/messages?beta=true", body, beta)
	if resp.StatusCode != 200 {
		t.Fatalf("with the beta: %d %s", resp.StatusCode, got)
	}
	if text, stop := anthropicText(t, got); text != ReplyText(2) || stop != "end_turn" {
		t.Fatalf("with the beta: %q %q", text, stop)
	}
	if !strings.Contains(string(got), `"input_tokens":6`) {
		t.Fatalf("system message words not counted: %s", got)
	}
	count := strings.Replace(strings.Replace(body, `"max_tokens":10,`, "", 1), `"stream":true,`, "", 1)
	resp, got = do(t, "POST", ts.URL+"/v1/messages/count_tokens", count, beta)
	if resp.StatusCode != 200 || string(got) != `{"input_tokens":6}` {
		t.Fatalf("count_tokens: %d %s", resp.StatusCode, got)
	}
	bad := strings.Replace(body, `"content":"# Environment here"`, `"content":[{"type":"image","source":{}}]`, 1)
	resp, got = do(t, "POST", ts.URL+"/v1/messages", bad, beta)
	if resp.StatusCode != 400 || !strings.Contains(string(got), "messages.1.0: Input tag 'image'") {
		t.Fatalf("non-text system message: %d %s", resp.StatusCode, got)
	}

	// The scripted turn looks past trailing system messages.
	turn := readTurn
	_, tts := newServer(t, Options{ToolTurn: &turn})
	withTools := anthTurnBody(anthAsk + `,{"role":"system","content":"# Environment"}`)
	resp, got = do(t, "POST", tts.URL+"/v1/messages", withTools, beta)
	if resp.StatusCode != 200 || !strings.Contains(string(got), `"stop_reason":"tool_use"`) {
		t.Fatalf("turn past a system message: %d %s", resp.StatusCode, got)
	}
}

func TestSplitPieces(t *testing.T) {
	cases := []struct {
		in   string
		n    int
		want []string
	}{
		{"", 3, nil},
		{"{}", 3, []string{"{", "}"}},
		{"abcdefg", 3, []string{"abc", "def", "g"}},
		{`{"p":"é€"}`, 3, []string{`{"p":`, `"é€`, `"}`}},
	}
	for _, tc := range cases {
		if got := splitPieces(tc.in, tc.n); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("splitPieces(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
	if got := textChunks("a  b c"); !reflect.DeepEqual(got, []string{"a", "  b", " c"}) {
		t.Errorf("textChunks = %q", got)
	}
}
