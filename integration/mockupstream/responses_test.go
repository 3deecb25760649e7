package mockupstream

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// post sends a JSON body with a deadline and returns the status and body.
func post(t *testing.T, url, body string, headers map[string]string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// assertJSON compares two JSON texts semantically.
func assertJSON(t *testing.T, want, got string) {
	t.Helper()
	var w, g interface{}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want is not JSON: %v\n%s", err, want)
	}
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("got is not JSON: %v\n%s", err, got)
	}
	wb, _ := json.Marshal(w)
	gb, _ := json.Marshal(g)
	if string(wb) != string(gb) {
		t.Fatalf("JSON differs\n got %s\nwant %s", gb, wb)
	}
}

// responsesEvents parses a Responses stream: event names must match the
// payloads' type and sequence numbers must count from 0.
func responsesEvents(t *testing.T, body []byte) ([]string, []map[string]json.RawMessage) {
	t.Helper()
	var names []string
	var payloads []map[string]json.RawMessage
	for i, e := range namedEvents(t, body, "\n") {
		var p map[string]json.RawMessage
		if err := json.Unmarshal([]byte(e.data), &p); err != nil {
			t.Fatalf("event %d: %v: %s", i, err, e.data)
		}
		var typ string
		var seq int
		if err := json.Unmarshal(p["type"], &typ); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(p["sequence_number"], &seq); err != nil {
			t.Fatal(err)
		}
		if typ != e.name || seq != i {
			t.Fatalf("event %d: name %q, type %q, sequence_number %d", i, e.name, typ, seq)
		}
		names = append(names, e.name)
		payloads = append(payloads, p)
	}
	return names, payloads
}

const responsesEmptyResponse = `"object":"response","created_at":1735689600,"error":null,"incomplete_details":null,"model":"m","parallel_tool_calls":true,"previous_response_id":null,"store":false,"tools":[],"metadata":{}`

func TestResponsesPlain(t *testing.T) {
	_, ts := newServer(t, Options{Chunks: 2})
	status, body := post(t, ts.URL+"/v1/responses", `{"model":"m","instructions":"Be terse.","input":"hi there"}`, nil)
	if status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	assertJSON(t, `{"id":"resp_mock_1",`+responsesEmptyResponse+`,"status":"completed",
		"output":[{"type":"message","id":"msg_mock_1","status":"completed","role":"assistant",
			"content":[{"type":"output_text","text":"Hello from mock part 1","annotations":[],"logprobs":[]}]}],
		"usage":{"input_tokens":4,"input_tokens_details":{"cached_tokens":0},"output_tokens":2,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":6}}`, string(body))
}

func TestResponsesStream(t *testing.T) {
	_, ts := newServer(t, Options{Chunks: 3})
	status, body := post(t, ts.URL+"/v1/responses", `{"model":"m","stream":true,"input":[{"role":"developer","content":"Be terse."},{"type":"message","role":"user","content":[{"type":"input_text","text":"hi there"}]}]}`, nil)
	if status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	names, payloads := responsesEvents(t, body)
	want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.delta", "response.output_text.delta", "response.output_text.done",
		"response.content_part.done", "response.output_item.done", "response.completed"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Fatalf("events\n got %v\nwant %v", names, want)
	}
	var text strings.Builder
	for i := 4; i <= 6; i++ {
		var d string
		if err := json.Unmarshal(payloads[i]["delta"], &d); err != nil {
			t.Fatal(err)
		}
		text.WriteString(d)
	}
	if text.String() != ReplyText(3) {
		t.Fatalf("deltas %q", text.String())
	}
	assertJSON(t, `{"type":"message","id":"msg_mock_1","status":"in_progress","role":"assistant","content":[]}`, string(payloads[2]["item"]))
	assertJSON(t, `{"type":"output_text","text":"","annotations":[],"logprobs":[]}`, string(payloads[3]["part"]))
	assertJSON(t, `"`+ReplyText(3)+`"`, string(payloads[7]["text"]))
	assertJSON(t, `{"type":"message","id":"msg_mock_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"`+ReplyText(3)+`","annotations":[],"logprobs":[]}]}`, string(payloads[9]["item"]))
	assertJSON(t, `{"id":"resp_mock_1",`+responsesEmptyResponse+`,"status":"in_progress","output":[],"usage":null}`, string(payloads[0]["response"]))
	assertJSON(t, `{"id":"resp_mock_1",`+responsesEmptyResponse+`,"status":"completed","output":[`+string(payloads[9]["item"])+`],
		"usage":{"input_tokens":4,"input_tokens_details":{"cached_tokens":0},"output_tokens":3,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":7}}`,
		string(payloads[10]["response"]))
	if strings.Contains(string(body), "[DONE]") {
		t.Fatal("a Responses stream carries no [DONE]")
	}
}

const responsesWeatherTool = `"tools":[{"type":"web_search","external_web_access":false},{"type":"function","name":"get_weather","parameters":{"type":"object"},"strict":false}]`

func TestResponsesFunctionCall(t *testing.T) {
	_, ts := newServer(t, Options{})
	t.Run("plain", func(t *testing.T) {
		status, body := post(t, ts.URL+"/v1/responses", `{"model":"m","input":"hi",`+responsesWeatherTool+`,"tool_choice":"required"}`, nil)
		if status != 200 {
			t.Fatalf("%d %s", status, body)
		}
		var resp struct {
			Output []json.RawMessage `json:"output"`
			Usage  struct {
				OutputTokens int `json:"output_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(body, &resp); err != nil {
			t.Fatal(err)
		}
		if len(resp.Output) != 1 || resp.Usage.OutputTokens != ToolOutputTokens {
			t.Fatalf("%s", body)
		}
		assertJSON(t, `{"type":"function_call","id":"fc_mock_1","call_id":"call_mock_1","name":"get_weather","arguments":`+string(jsonString(ToolArguments()))+`,"status":"completed"}`, string(resp.Output[0]))
	})
	t.Run("stream", func(t *testing.T) {
		status, body := post(t, ts.URL+"/v1/responses", `{"model":"m","stream":true,"input":"hi",`+responsesWeatherTool+`}`, map[string]string{HeaderToolCall: "1"})
		if status != 200 {
			t.Fatalf("%d %s", status, body)
		}
		names, payloads := responsesEvents(t, body)
		want := "response.created response.in_progress response.output_item.added " + strings.Repeat("response.function_call_arguments.delta ", len(ToolArgumentPieces())-1) +
			"response.function_call_arguments.done response.output_item.done response.completed"
		if strings.Join(names, " ") != want {
			t.Fatalf("events\n got %v\nwant %s", names, want)
		}
		assertJSON(t, `{"type":"function_call","id":"fc_mock_2","call_id":"call_mock_2","name":"get_weather","arguments":"","status":"in_progress"}`, string(payloads[2]["item"]))
		var args strings.Builder
		for _, p := range payloads[3 : len(payloads)-3] {
			var d string
			if err := json.Unmarshal(p["delta"], &d); err != nil {
				t.Fatal(err)
			}
			args.WriteString(d)
		}
		if args.String() != ToolArguments() {
			t.Fatalf("argument deltas %q", args.String())
		}
		done := payloads[len(payloads)-3]
		assertJSON(t, string(jsonString(ToolArguments())), string(done["arguments"]))
		assertJSON(t, `"get_weather"`, string(done["name"]))
	})
	t.Run("weather_mention", func(t *testing.T) {
		_, body := post(t, ts.URL+"/v1/responses", `{"model":"m","input":"what is the weather in Paris",`+responsesWeatherTool+`}`, nil)
		if !strings.Contains(string(body), `"type":"function_call"`) {
			t.Fatalf("no call: %s", body)
		}
		_, body = post(t, ts.URL+"/v1/responses", `{"model":"m","input":"what is the weather in Paris",`+responsesWeatherTool+`,"tool_choice":"none"}`, nil)
		if strings.Contains(string(body), `"type":"function_call"`) {
			t.Fatalf("tool_choice none still called: %s", body)
		}
	})
}

// codexTurn is a Codex-like scripted exec_command turn.
var codexTurn = ToolTurn{Trigger: "run the check", Name: "exec_command", Input: `{"cmd": "echo ok-4711"}`, Expect: "ok-4711", FinalText: "The check printed ok-4711."}

const codexTools = `"tools":[{"type":"function","name":"exec_command","parameters":{"type":"object"},"strict":false},` +
	`{"type":"namespace","name":"multi_agent_v1","tools":[{"type":"function","name":"spawn_agent","parameters":{"type":"object"}}]},` +
	`{"type":"web_search","external_web_access":false}]`

func codexInput(items ...string) string {
	return `{"model":"m","stream":true,"store":false,"include":["reasoning.encrypted_content"],"prompt_cache_key":"s1","client_metadata":{"a":"b"},` +
		`"reasoning":{"summary":"auto"},"parallel_tool_calls":true,"tool_choice":"auto",` + codexTools + `,"input":[` +
		`{"type":"message","id":"msg_1","role":"developer","content":[{"type":"input_text","text":"You are Codex."}]},` +
		`{"type":"message","id":"msg_2","role":"user","content":[{"type":"input_text","text":"<environment_context/>"}]},` +
		strings.Join(items, ",") + `]}`
}

const (
	codexAsk    = `{"type":"message","id":"msg_3","role":"user","content":[{"type":"input_text","text":"please run the check"}]}`
	codexCalled = `{"type":"message","id":"msg_mock_1","role":"assistant","content":[{"type":"output_text","text":"Let me use the tool.","annotations":[]}]},` +
		`{"type":"function_call","id":"fc_mock_1","call_id":"call_mock_1","name":"exec_command","arguments":"{\"cmd\":\"echo ok-4711\"}","status":"completed"}`
)

func codexOutput(text string) string {
	return `{"type":"function_call_output","id":"fco_1","call_id":"call_mock_1","output":` + string(jsonString(text)) + `}`
}

func TestResponsesToolTurn(t *testing.T) {
	turn := codexTurn
	_, ts := newServer(t, Options{ToolTurn: &turn})
	t.Run("call", func(t *testing.T) {
		status, body := post(t, ts.URL+"/v1/responses", codexInput(codexAsk), nil)
		if status != 200 {
			t.Fatalf("%d %s", status, body)
		}
		names, payloads := responsesEvents(t, body)
		want := "response.created response.in_progress response.output_item.added response.content_part.added response.output_text.delta " +
			"response.output_text.done response.content_part.done response.output_item.done response.output_item.added " +
			"response.function_call_arguments.delta response.function_call_arguments.delta response.function_call_arguments.delta " +
			"response.function_call_arguments.done response.output_item.done response.completed"
		if strings.Join(names, " ") != want {
			t.Fatalf("events\n got %v\nwant %s", names, want)
		}
		assertJSON(t, `{"type":"message","id":"msg_mock_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Let me use the tool.","annotations":[],"logprobs":[]}]}`, string(payloads[7]["item"]))
		assertJSON(t, `1`, string(payloads[8]["output_index"]))
		assertJSON(t, `{"type":"function_call","id":"fc_mock_1","call_id":"call_mock_1","name":"exec_command","arguments":"{\"cmd\":\"echo ok-4711\"}","status":"completed"}`, string(payloads[13]["item"]))
		var completed struct {
			Output []json.RawMessage `json:"output"`
			Usage  struct {
				OutputTokens int `json:"output_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(payloads[14]["response"], &completed); err != nil {
			t.Fatal(err)
		}
		if len(completed.Output) != 2 || completed.Usage.OutputTokens != ToolOutputTokens {
			t.Fatalf("completed: %s", payloads[14]["response"])
		}
	})
	t.Run("answer", func(t *testing.T) {
		_, body := post(t, ts.URL+"/v1/responses", codexInput(codexAsk, codexCalled, codexOutput("Chunk ID: 1\nProcess exited with code 0\nOutput:\nok-4711\n")), nil)
		_, payloads := responsesEvents(t, body)
		var text string
		if err := json.Unmarshal(payloads[len(payloads)-4]["text"], &text); err != nil {
			t.Fatal(err)
		}
		if text != codexTurn.FinalText {
			t.Fatalf("answer %q: %s", text, body)
		}
	})
	t.Run("mismatch", func(t *testing.T) {
		_, body := post(t, ts.URL+"/v1/responses", codexInput(codexAsk, codexCalled, codexOutput("command not found")), nil)
		want := ToolTurnMismatch("exec_command", "ok-4711", "command not found")
		if !strings.Contains(string(body), string(jsonString(want))[1:len(jsonString(want))-1]) {
			t.Fatalf("no mismatch text %q: %s", want, body)
		}
	})
	t.Run("undeclared", func(t *testing.T) {
		_, body := post(t, ts.URL+"/v1/responses", `{"model":"m","input":"please run the check"}`, nil)
		if !strings.Contains(string(body), `exec_command`) || strings.Contains(string(body), `"function_call"`) {
			t.Fatalf("want the undeclared text: %s", body)
		}
	})
}

func TestResponsesIncomplete(t *testing.T) {
	_, ts := newServer(t, Options{Chunks: 5})
	status, body := post(t, ts.URL+"/v1/responses", `{"model":"m","input":"hi","max_output_tokens":2}`, nil)
	if status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	var resp struct {
		Status            string          `json:"status"`
		IncompleteDetails json.RawMessage `json:"incomplete_details"`
		Output            []struct {
			Status  string `json:"status"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"output"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Status != "incomplete" || string(resp.IncompleteDetails) != `{"reason":"max_output_tokens"}` ||
		len(resp.Output) != 1 || resp.Output[0].Status != "incomplete" || resp.Output[0].Content[0].Text != ReplyText(2) {
		t.Fatalf("%s", body)
	}
	_, body = post(t, ts.URL+"/v1/responses", `{"model":"m","input":"hi","max_output_tokens":2,"stream":true}`, nil)
	names, _ := responsesEvents(t, body)
	if names[len(names)-1] != "response.incomplete" {
		t.Fatalf("last event %v", names)
	}
}

func TestResponsesErrorAfter(t *testing.T) {
	_, ts := newServer(t, Options{})
	status, body := post(t, ts.URL+PathKnobPrefix+"error-after/3/v1/responses", `{"model":"m","input":"hi","stream":true}`, nil)
	if status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	names, payloads := responsesEvents(t, body)
	if len(names) != 4 || names[3] != "response.failed" {
		t.Fatalf("events %v", names)
	}
	assertJSON(t, `{"id":"resp_mock_1",`+strings.Replace(responsesEmptyResponse, `"error":null`, `"error":{"code":"server_error","message":"`+ResponsesFailedMessage+`"}`, 1)+
		`,"status":"failed","output":[],"usage":null}`, string(payloads[3]["response"]))
}

func TestResponsesBadRequests(t *testing.T) {
	_, ts := newServer(t, Options{Models: []string{"m"}, StrictModels: true})
	cases := []struct {
		name, body   string
		status       int
		param, match string
	}{
		{"unknown_parameter", `{"model":"m","input":"hi","messages":[]}`, 400, "messages", "Unknown parameter: 'messages'."},
		{"no_model", `{"input":"hi"}`, 400, "model", "Missing required parameter: 'model'."},
		{"no_input", `{"model":"m"}`, 400, "input", "Missing required parameter: 'input'."},
		{"empty_input", `{"model":"m","input":[]}`, 400, "input", "empty array"},
		{"previous_response_id", `{"model":"m","input":"hi","previous_response_id":"resp_1"}`, 400, "previous_response_id", "keeps no responses"},
		{"orphan_output", `{"model":"m","input":[{"type":"function_call_output","call_id":"call_9","output":"x"}]}`, 400, "input[0]", "No tool call found for function call output with call_id call_9."},
		{"assistant_input_text", `{"model":"m","input":[{"role":"assistant","content":[{"type":"input_text","text":"x"}]}]}`, 400, "input[0]", "Invalid value: 'input_text'"},
		{"bad_role", `{"model":"m","input":[{"role":"tool","content":"x"}]}`, 400, "input[0]", "Invalid value: 'tool'"},
		{"bad_item_type", `{"model":"m","input":[{"type":"tool_result","content":"x"}]}`, 400, "input", "Invalid value: 'tool_result'"},
		{"call_without_arguments", `{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f"}]}`, 400, "input[0]", "arguments"},
		{"chat_style_tool", `{"model":"m","input":"hi","tools":[{"type":"function","function":{"name":"f"}}]}`, 400, "tools[0]", "does not match pattern"},
		{"bad_tool_type", `{"model":"m","input":"hi","tools":[{"type":"retrieval"}]}`, 400, "tools[0]", "Invalid value: 'retrieval'"},
		{"unknown_choice", `{"model":"m","input":"hi",` + responsesWeatherTool + `,"tool_choice":{"type":"function","name":"nope"}}`, 400, "tool_choice", "not found in 'tools'"},
		{"max_output_tokens", `{"model":"m","input":"hi","max_output_tokens":0}`, 400, "max_output_tokens", "below minimum"},
		{"unknown_model", `{"model":"other","input":"hi"}`, 404, "", "The model 'other' does not exist"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, body := post(t, ts.URL+"/v1/responses", c.body, nil)
			var e struct {
				Error struct {
					Message string  `json:"message"`
					Type    string  `json:"type"`
					Param   *string `json:"param"`
				} `json:"error"`
			}
			if err := json.Unmarshal(body, &e); err != nil {
				t.Fatalf("%v: %s", err, body)
			}
			param := ""
			if e.Error.Param != nil {
				param = *e.Error.Param
			}
			if status != c.status || param != c.param || !strings.Contains(e.Error.Message, c.match) || e.Error.Type != "invalid_request_error" {
				t.Fatalf("got %d param %q %s; want %d param %q containing %q", status, param, body, c.status, c.param, c.match)
			}
		})
	}
	status, body := post(t, ts.URL+"/v1/responses", `{"model":"m","input":"hi"}`, map[string]string{HeaderStatus: "503"})
	if status != 503 || !strings.Contains(string(body), "injected status 503") {
		t.Fatalf("injected: %d %s", status, body)
	}
}

func TestOpenAIAPIKey(t *testing.T) {
	_, ts := newServer(t, Options{OpenAIAPIKey: "sk-right"})
	for _, path := range []string{"/v1/responses", "/v1/chat/completions"} {
		body := `{"model":"m","input":"hi"}`
		if path == "/v1/chat/completions" {
			body = `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
		}
		for key, want := range map[string]int{"": 401, "sk-wrong": 401, "sk-right": 200} {
			h := map[string]string{}
			if key != "" {
				h["Authorization"] = "Bearer " + key
			}
			status, got := post(t, ts.URL+path, body, h)
			if status != want {
				t.Fatalf("%s with key %q: %d %s", path, key, status, got)
			}
			if want == 401 && !strings.Contains(string(got), `"code":"invalid_api_key"`) {
				t.Fatalf("%s: %s", path, got)
			}
		}
	}
}

func TestToolTurnGemini(t *testing.T) {
	turn := codexTurn
	_, ts := newServer(t, Options{ToolTurn: &turn})
	const tools = `"tools":[{"functionDeclarations":[{"name":"get_weather"},{"name":"exec_command","parameters":{"type":"OBJECT"}}]}]`
	ask := `{"role":"user","parts":[{"text":"please run the check"}]}`
	called := `{"role":"model","parts":[{"text":"Let me use the tool."},{"functionCall":{"name":"exec_command","args":{"cmd":"echo ok-4711"}},"thoughtSignature":"c2ln"}]}`
	result := func(out string) string {
		return `{"role":"user","parts":[{"functionResponse":{"name":"exec_command","response":{"output":` + string(jsonString(out)) + `,"exit":0}}}]}`
	}
	url := ts.URL + "/v1beta/models/gemini-3-test:generateContent"
	h := map[string]string{"x-goog-api-key": "k"}
	text := func(body []byte) (string, string) {
		var resp struct {
			Candidates []struct {
				Content struct {
					Parts []json.RawMessage `json:"parts"`
				} `json:"content"`
				FinishReason string `json:"finishReason"`
			} `json:"candidates"`
		}
		if err := json.Unmarshal(body, &resp); err != nil || len(resp.Candidates) != 1 {
			t.Fatalf("%v: %s", err, body)
		}
		var parts []string
		for _, p := range resp.Candidates[0].Content.Parts {
			parts = append(parts, string(p))
		}
		return strings.Join(parts, ","), resp.Candidates[0].FinishReason
	}

	status, body := post(t, url, `{`+tools+`,"contents":[`+ask+`]}`, h)
	if status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	parts, finish := text(body)
	if want := `{"text":"Let me use the tool."},{"functionCall":{"name":"exec_command","args":{"cmd":"echo ok-4711"}},"thoughtSignature":"` + GeminiThoughtSignature + `"}`; parts != want || finish != "STOP" {
		t.Fatalf("call\n got %s (%s)\nwant %s", parts, finish, want)
	}
	_, body = post(t, url, `{`+tools+`,"contents":[`+ask+`,`+called+`,`+result("ok-4711\n")+`]}`, h)
	if parts, _ := text(body); parts != `{"text":"The check printed ok-4711."}` {
		t.Fatalf("answer %s", parts)
	}
	_, body = post(t, url, `{`+tools+`,"contents":[`+ask+`,`+called+`,`+result("nope")+`]}`, h)
	if parts, _ := text(body); !strings.Contains(parts, "does not contain") {
		t.Fatalf("mismatch %s", parts)
	}
	// The weather rule still applies outside the turn.
	_, body = post(t, url, `{`+tools+`,"contents":[{"role":"user","parts":[{"text":"what is the weather"}]}]}`, h)
	if parts, _ := text(body); !strings.Contains(parts, `"name":"get_weather"`) {
		t.Fatalf("weather %s", parts)
	}
}
