package mockupstream

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image/png"
	"strings"
	"testing"
)

func gemHeaders(extra ...string) map[string]string {
	h := map[string]string{"x-goog-api-key": "gem-test", "content-type": "application/json"}
	for i := 0; i+1 < len(extra); i += 2 {
		h[extra[i]] = extra[i+1]
	}
	return h
}

const gemWeatherTools = `"tools":[{"functionDeclarations":[{"name":"get_weather","description":"Current weather","parameters":{"type":"OBJECT","properties":{"city":{"type":"STRING"}},"required":["city"]}}]}]`

func TestGeminiModels(t *testing.T) {
	_, ts := newServer(t, Options{GeminiModels: []string{"gemini-a", "text-embedding-b", "imagen-c"}})
	resp, body := do(t, "GET", ts.URL+"/v1beta/models", "", gemHeaders())
	want := `{"models":[` +
		`{"name":"models/gemini-a","version":"001","displayName":"Mock gemini-a","description":"Deterministic mock model","inputTokenLimit":1048576,"outputTokenLimit":65536,"supportedGenerationMethods":["generateContent","streamGenerateContent","countTokens","createCachedContent","batchGenerateContent"]},` +
		`{"name":"models/text-embedding-b","version":"001","displayName":"Mock text-embedding-b","description":"Deterministic mock model","inputTokenLimit":2048,"outputTokenLimit":1,"supportedGenerationMethods":["embedContent","batchEmbedContents","countTokens"]},` +
		`{"name":"models/imagen-c","version":"001","displayName":"Mock imagen-c","description":"Deterministic mock model","inputTokenLimit":480,"outputTokenLimit":8192,"supportedGenerationMethods":["predict"]}]}`
	if resp.StatusCode != 200 || string(body) != want {
		t.Fatalf("%d\n got %s\nwant %s", resp.StatusCode, body, want)
	}

	var page struct {
		Models []struct {
			Name string `json:"name"`
		} `json:"models"`
		NextPageToken string `json:"nextPageToken"`
	}
	_, body = do(t, "GET", ts.URL+"/v1beta/models?pageSize=2", "", gemHeaders())
	if err := json.Unmarshal(body, &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Models) != 2 || page.NextPageToken == "" {
		t.Fatalf("page 1: %s", body)
	}
	_, body = do(t, "GET", ts.URL+"/v1beta/models?pageSize=2&pageToken="+page.NextPageToken, "", gemHeaders())
	page.NextPageToken = ""
	page.Models = nil
	if err := json.Unmarshal(body, &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Models) != 1 || page.Models[0].Name != "models/imagen-c" || page.NextPageToken != "" {
		t.Fatalf("page 2: %s", body)
	}

	resp, body = do(t, "GET", ts.URL+"/v1beta/models/gemini-a", "", gemHeaders())
	if resp.StatusCode != 200 || !strings.HasPrefix(string(body), `{"name":"models/gemini-a"`) {
		t.Fatalf("one: %d %s", resp.StatusCode, body)
	}
	resp, body = do(t, "GET", ts.URL+"/v1beta/models/nope", "", gemHeaders())
	if resp.StatusCode != 404 || !strings.Contains(string(body), `"status":"NOT_FOUND"`) {
		t.Fatalf("unknown: %d %s", resp.StatusCode, body)
	}
}

func TestGeminiAuth(t *testing.T) {
	_, ts := newServer(t, Options{GeminiAPIKey: "gem-right"})
	body := `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`
	url := ts.URL + "/v1beta/models/gemini-x:generateContent"
	resp, got := do(t, "POST", url, body, map[string]string{"Authorization": "Bearer gem-right"})
	if resp.StatusCode != 401 || !strings.HasPrefix(string(got), `{"error":{"code":401,"message":"Method doesn't allow unregistered callers`) ||
		!strings.HasSuffix(string(got), `,"status":"UNAUTHENTICATED"}}`) {
		t.Fatalf("no key: %d %s", resp.StatusCode, got)
	}
	resp, got = do(t, "POST", url, body, map[string]string{"x-goog-api-key": "gem-wrong"})
	if resp.StatusCode != 400 || !strings.Contains(string(got), `"status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","domain":"googleapis.com","reason":"API_KEY_INVALID"}]`) {
		t.Fatalf("wrong key: %d %s", resp.StatusCode, got)
	}
	for _, ok := range []struct {
		url     string
		headers map[string]string
	}{{url, map[string]string{"x-goog-api-key": "gem-right"}}, {url + "?key=gem-right", nil}} {
		resp, got = do(t, "POST", ok.url, body, ok.headers)
		if resp.StatusCode != 200 {
			t.Fatalf("right key (%s): %d %s", ok.url, resp.StatusCode, got)
		}
	}
}

func TestGeminiGenerate(t *testing.T) {
	_, ts := newServer(t, Options{Chunks: 3})
	body := `{"systemInstruction":{"parts":[{"text":"Be terse please."}]},"contents":[{"role":"user","parts":[{"text":"say hi now"}]}],"generationConfig":{"maxOutputTokens":100}}`
	resp, got := do(t, "POST", ts.URL+"/v1beta/models/gemini-x:generateContent", body, gemHeaders())
	want := `{"candidates":[{"content":{"parts":[{"text":"Hello from mock part 1 part 2"}],"role":"model"},"finishReason":"STOP","index":0}],` +
		`"usageMetadata":{"promptTokenCount":6,"candidatesTokenCount":3,"totalTokenCount":11,"thoughtsTokenCount":2},"modelVersion":"gemini-x","responseId":"mock-1"}`
	if resp.StatusCode != 200 || string(got) != want {
		t.Fatalf("%d\n got %s\nwant %s", resp.StatusCode, got, want)
	}
	// snake_case field names are accepted too.
	snake := `{"system_instruction":{"parts":[{"text":"a"}]},"contents":[{"role":"user","parts":[{"text":"b"}]}],"generation_config":{"max_output_tokens":2}}`
	resp, got = do(t, "POST", ts.URL+"/v1beta/models/gemini-x:generateContent", snake, gemHeaders())
	if resp.StatusCode != 200 || !strings.Contains(string(got), `"finishReason":"MAX_TOKENS"`) {
		t.Fatalf("snake/max tokens: %d %s", resp.StatusCode, got)
	}
}

func TestGeminiStreamSSE(t *testing.T) {
	_, ts := newServer(t, Options{Chunks: 3})
	body := `{"contents":[{"role":"user","parts":[{"text":"hi there"}]}]}`
	resp, got := do(t, "POST", ts.URL+"/v1beta/models/gemini-x:streamGenerateContent?alt=sse", body, gemHeaders())
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("%d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := sseEvents(t, got)
	want := []string{
		`{"candidates":[{"content":{"parts":[{"text":"Hello from mock"}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":2,"totalTokenCount":2},"modelVersion":"gemini-x","responseId":"mock-1"}`,
		`{"candidates":[{"content":{"parts":[{"text":" part 1"}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":2,"totalTokenCount":2},"modelVersion":"gemini-x","responseId":"mock-1"}`,
		`{"candidates":[{"content":{"parts":[{"text":" part 2"}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":2,"candidatesTokenCount":3,"totalTokenCount":7,"thoughtsTokenCount":2},"modelVersion":"gemini-x","responseId":"mock-1"}`,
	}
	if strings.Join(events, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events\n got %q\nwant %q", events, want)
	}
	if strings.Contains(string(got), "[DONE]") || strings.Contains(string(got), "event:") {
		t.Fatalf("gemini streams carry no [DONE] and no event names: %q", got)
	}

	_, got = do(t, "POST", ts.URL+"/v1beta/models/gemini-x:streamGenerateContent?alt=sse", body, gemHeaders(HeaderSSECRLF, "1"))
	if len(namedEvents(t, got, "\r\n")) != 3 {
		t.Fatalf("crlf: %q", got)
	}

	// Mid-stream error.
	_, got = do(t, "POST", ts.URL+"/v1beta/models/gemini-x:streamGenerateContent?alt=sse", body, gemHeaders(HeaderErrorAfter, "1"))
	events = sseEvents(t, got)
	if len(events) != 2 || events[1] != `{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}` {
		t.Fatalf("error after: %q", events)
	}
}

func TestGeminiStreamArray(t *testing.T) {
	_, ts := newServer(t, Options{Chunks: 2})
	body := `{"contents":[{"parts":[{"text":"hi"}]}]}`
	resp, got := do(t, "POST", ts.URL+"/v1beta/models/gemini-x:streamGenerateContent", body, gemHeaders())
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("%d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var arr []struct {
		Candidates []struct {
			FinishReason string `json:"finishReason"`
		} `json:"candidates"`
	}
	if err := json.Unmarshal(got, &arr); err != nil || len(arr) != 2 || arr[1].Candidates[0].FinishReason != "STOP" {
		t.Fatalf("array: %v %s", err, got)
	}
}

func TestGeminiFunctionCall(t *testing.T) {
	_, ts := newServer(t, Options{})
	body := `{"contents":[{"role":"user","parts":[{"text":"What's the weather in Paris?"}]}],` + gemWeatherTools + `}`
	_, got := do(t, "POST", ts.URL+"/v1beta/models/gemini-x:generateContent", body, gemHeaders())
	want := `{"candidates":[{"content":{"parts":[{"functionCall":{"name":"get_weather","args":{"city":"Paris","unit":"celsius"}},"thoughtSignature":"` + GeminiThoughtSignature + `"}],"role":"model"},"finishReason":"STOP","index":0}],` +
		`"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":17,"totalTokenCount":24,"thoughtsTokenCount":2},"modelVersion":"gemini-x","responseId":"mock-1"}`
	if string(got) != want {
		t.Fatalf("\n got %s\nwant %s", got, want)
	}
	_, got = do(t, "POST", ts.URL+"/v1beta/models/gemini-x:streamGenerateContent?alt=sse", body, gemHeaders())
	events := sseEvents(t, got)
	if len(events) != 1 || !strings.Contains(events[0], `"functionCall":{"name":"get_weather"`) || !strings.Contains(events[0], `"finishReason":"STOP"`) {
		t.Fatalf("stream: %q", events)
	}
	// Mode NONE, or no "weather": text.
	none := strings.Replace(body, `"tools"`, `"toolConfig":{"functionCallingConfig":{"mode":"NONE"}},"tools"`, 1)
	_, got = do(t, "POST", ts.URL+"/v1beta/models/gemini-x:generateContent", none, gemHeaders())
	if strings.Contains(string(got), "functionCall") {
		t.Fatalf("mode NONE: %s", got)
	}
	plain := `{"contents":[{"role":"user","parts":[{"text":"hello"}]}],` + gemWeatherTools + `}`
	_, got = do(t, "POST", ts.URL+"/v1beta/models/gemini-x:generateContent", plain, gemHeaders())
	if strings.Contains(string(got), "functionCall") {
		t.Fatalf("plain: %s", got)
	}
	_, got = do(t, "POST", ts.URL+"/v1beta/models/gemini-x:generateContent", plain, gemHeaders(HeaderToolCall, "1"))
	if !strings.Contains(string(got), "functionCall") {
		t.Fatalf("forced: %s", got)
	}
	// The function response turn.
	followUp := `{"contents":[{"role":"user","parts":[{"text":"What's the weather in Paris?"}]},` +
		`{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"Paris"}}}]},` +
		`{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"output":"18 C"}}}]}],` + gemWeatherTools + `}`
	resp, got := do(t, "POST", ts.URL+"/v1beta/models/gemini-x:generateContent", followUp, gemHeaders())
	if resp.StatusCode != 200 || strings.Contains(string(got), "functionCall") {
		t.Fatalf("follow-up: %d %s", resp.StatusCode, got)
	}
}

func TestGeminiBadRequests(t *testing.T) {
	_, ts := newServer(t, Options{StrictModels: true, GeminiModels: []string{"g", "text-embedding-e"}})
	cases := []struct {
		name, path, body, contains string
		status                     int
	}{
		{"no contents", "g:generateContent", `{}`, "contents is not specified", 400},
		{"assistant role", "g:generateContent", `{"contents":[{"role":"assistant","parts":[{"text":"x"}]}]}`, "valid role", 400},
		{"system role", "g:generateContent", `{"contents":[{"role":"system","parts":[{"text":"x"}]}]}`, "valid role", 400},
		{"openai field", "g:generateContent", `{"contents":[{"parts":[{"text":"x"}]}],"stream_options":{}}`, `Unknown name \"stream_options\"`, 400},
		{"openai messages", "g:generateContent", `{"messages":[{"role":"user","content":"x"}]}`, `Unknown name \"messages\"`, 400},
		{"empty parts", "g:generateContent", `{"contents":[{"role":"user","parts":[]}]}`, "must not be empty", 400},
		{"unknown part", "g:generateContent", `{"contents":[{"role":"user","parts":[{"image_url":"x"}]}]}`, `Unknown name \"image_url\"`, 400},
		{"two data fields", "g:generateContent", `{"contents":[{"role":"user","parts":[{"text":"x","inlineData":{"mimeType":"image/png","data":"AA=="}}]}]}`, "oneof", 400},
		{"bad base64", "g:generateContent", `{"contents":[{"role":"user","parts":[{"inlineData":{"mimeType":"image/png","data":"data:image/png;base64,AA=="}}]}]}`, "Base64", 400},
		{"string response", "g:generateContent", `{"contents":[{"role":"user","parts":[{"functionResponse":{"name":"f","response":"18 C"}}]}]}`, "function_response.response", 400},
		{"response count", "g:generateContent", `{"contents":[{"role":"user","parts":[{"text":"x"}]},{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}},{"functionCall":{"name":"f","args":{}}}]},{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"output":1}}}]}]}`, "number of function response parts", 400},
		{"response without call", "g:generateContent", `{"contents":[{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"output":1}}}]}]}`, "number of function response parts", 400},
		{"string args", "g:generateContent", `{"contents":[{"role":"model","parts":[{"functionCall":{"name":"f","args":"{}"}}]},{"role":"user","parts":[{"text":"x"}]}]}`, "function_call.args", 400},
		{"additionalProperties", "g:generateContent", `{"contents":[{"parts":[{"text":"x"}]}],"tools":[{"functionDeclarations":[{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}}]}]}`, `Unknown name \"additionalProperties\"`, 400},
		{"$schema nested", "g:generateContent", `{"contents":[{"parts":[{"text":"x"}]}],"tools":[{"functionDeclarations":[{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"object","$schema":"x"}}}}]}]}`, `Unknown name \"$schema\"`, 400},
		{"json schema ok", "g:generateContent", `{"contents":[{"parts":[{"text":"x"}]}],"tools":[{"functionDeclarations":[{"name":"f","parametersJsonSchema":{"type":"object","additionalProperties":false}}]}]}`, "candidates", 200},
		{"openai tool", "g:generateContent", `{"contents":[{"parts":[{"text":"x"}]}],"tools":[{"type":"function","function":{"name":"f"}}]}`, `Unknown name \"function\"`, 400},
		{"bad generationConfig", "g:generateContent", `{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"max_tokens":5}}`, `Unknown name \"max_tokens\"`, 400},
		{"temperature", "g:generateContent", `{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"temperature":3}}`, "temperature", 400},
		{"strict model", "nope:generateContent", `{"contents":[{"parts":[{"text":"x"}]}]}`, "NOT_FOUND", 404},
		{"strict method", "g:embedContent", `{"content":{"parts":[{"text":"x"}]}}`, "not supported for embedContent", 404},
		{"batch without model", "text-embedding-e:batchEmbedContents", `{"requests":[{"content":{"parts":[{"text":"x"}]}}]}`, "BatchEmbedContentsRequest.model", 400},
		{"batch wrong model", "text-embedding-e:batchEmbedContents", `{"requests":[{"model":"models/g","content":{"parts":[{"text":"x"}]}}]}`, "BatchEmbedContentsRequest.model", 400},
		{"embed openai shape", "text-embedding-e:embedContent", `{"input":"x"}`, `Unknown name \"input\"`, 400},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, got := do(t, "POST", ts.URL+"/v1beta/models/"+tc.path, tc.body, gemHeaders())
			if resp.StatusCode != tc.status || !strings.Contains(string(got), tc.contains) {
				t.Fatalf("%d %s\nwant %d containing %q", resp.StatusCode, got, tc.status, tc.contains)
			}
			if tc.status != 200 && !strings.HasPrefix(string(got), `{"error":{"code":`) {
				t.Fatalf("not a Gemini envelope: %s", got)
			}
		})
	}
}

func TestGeminiThoughtSignature(t *testing.T) {
	_, ts := newServer(t, Options{})
	turn := func(sig string) string {
		sigField := ""
		if sig != "" {
			sigField = `,"thoughtSignature":"` + sig + `"`
		}
		return `{"contents":[{"role":"user","parts":[{"text":"old question"}]},` +
			`{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{}}}]},` + // an earlier turn: not checked
			`{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"output":1}}}]},` +
			`{"role":"model","parts":[{"text":"ok"}]},` +
			`{"role":"user","parts":[{"text":"What's the weather in Paris?"}]},` +
			`{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"Paris"}}` + sigField + `}]},` +
			`{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"output":"18 C"}}}]}],` + gemWeatherTools + `}`
	}
	for _, tc := range []struct {
		model, sig string
		status     int
	}{
		{"gemini-3-pro", "", 400},
		{"gemini-3-pro", GeminiThoughtSignature, 200},
		{"gemini-3-pro", "skip_thought_signature_validator", 200},
		{"gemini-2.5-flash", "", 200},
	} {
		resp, got := do(t, "POST", ts.URL+"/v1beta/models/"+tc.model+":generateContent", turn(tc.sig), gemHeaders())
		if resp.StatusCode != tc.status {
			t.Fatalf("%s sig %q: %d %s", tc.model, tc.sig, resp.StatusCode, got)
		}
		if tc.status == 400 && !strings.Contains(string(got), "missing a thought_signature") {
			t.Fatalf("%s", got)
		}
	}
}

func TestGeminiInjectedStatus(t *testing.T) {
	_, ts := newServer(t, Options{})
	resp, got := do(t, "POST", ts.URL+"/v1beta/models/g:generateContent", `{}`, gemHeaders(HeaderStatus, "429", HeaderRetryAfter, "5"))
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "5" ||
		string(got) != `{"error":{"code":429,"message":"mock: injected status 429","status":"RESOURCE_EXHAUSTED"}}` {
		t.Fatalf("%d %s", resp.StatusCode, got)
	}
}

func TestGeminiEmbeddings(t *testing.T) {
	m, ts := newServer(t, Options{Dimensions: 4})
	resp, got := do(t, "POST", ts.URL+"/v1beta/models/text-embedding-e:embedContent",
		`{"model":"models/text-embedding-e","content":{"parts":[{"text":"hello world"}]},"taskType":"RETRIEVAL_DOCUMENT"}`, gemHeaders())
	want, _ := json.Marshal(map[string]interface{}{"embedding": map[string]interface{}{"values": Vector("hello world", 4)}})
	if resp.StatusCode != 200 || string(got) != string(want) {
		t.Fatalf("%d %s\nwant %s", resp.StatusCode, got, want)
	}
	_, got = do(t, "POST", ts.URL+"/v1beta/models/text-embedding-e:embedContent",
		`{"content":{"parts":[{"text":"x"}]},"outputDimensionality":6}`, gemHeaders())
	var one struct {
		Embedding struct {
			Values []float32 `json:"values"`
		} `json:"embedding"`
	}
	if err := json.Unmarshal(got, &one); err != nil {
		t.Fatal(err)
	}
	if len(one.Embedding.Values) != 6 {
		t.Fatalf("dims: %s", got)
	}

	resp, got = do(t, "POST", ts.URL+"/v1beta/models/text-embedding-e:batchEmbedContents",
		`{"requests":[{"model":"models/text-embedding-e","content":{"parts":[{"text":"a"}]}},{"model":"models/text-embedding-e","content":{"parts":[{"text":"b c"}]}}]}`, gemHeaders())
	want, _ = json.Marshal(map[string]interface{}{"embeddings": []interface{}{
		map[string]interface{}{"values": Vector("a", 4)}, map[string]interface{}{"values": Vector("b c", 4)},
	}})
	if resp.StatusCode != 200 || string(got) != string(want) {
		t.Fatalf("batch %d %s\nwant %s", resp.StatusCode, got, want)
	}
	rec, _ := m.LastRequest()
	if rec.Path != "/v1beta/models/text-embedding-e:batchEmbedContents" || rec.Header.Get("X-Goog-Api-Key") != "gem-test" {
		t.Fatalf("recorded %+v", rec)
	}
}

func TestGeminiPredict(t *testing.T) {
	_, ts := newServer(t, Options{})
	var out struct {
		Predictions []struct {
			BytesBase64Encoded string `json:"bytesBase64Encoded"`
			MimeType           string `json:"mimeType"`
		} `json:"predictions"`
	}
	resp, got := do(t, "POST", ts.URL+"/v1beta/models/imagen-x:predict", `{"instances":[{"prompt":"a fox"}],"parameters":{"sampleCount":2,"aspectRatio":"16:9"}}`, gemHeaders())
	if resp.StatusCode != 200 || json.Unmarshal(got, &out) != nil || len(out.Predictions) != 2 {
		t.Fatalf("%d %s", resp.StatusCode, got)
	}
	for i, p := range out.Predictions {
		raw, err := base64.StdEncoding.DecodeString(p.BytesBase64Encoded)
		if err != nil || p.MimeType != "image/png" || !bytes.Equal(raw, ImagePNG("a fox", i)) {
			t.Fatalf("prediction %d: %v %+v", i, err, p)
		}
		if _, err := png.Decode(bytes.NewReader(raw)); err != nil {
			t.Fatalf("not a PNG: %v", err)
		}
	}
	if bytes.Equal(ImagePNG("a fox", 0), ImagePNG("a fox", 1)) {
		t.Fatal("images of one prompt must differ")
	}
	out.Predictions = nil
	_, got = do(t, "POST", ts.URL+"/v1beta/models/imagen-x:predict", `{"instances":[{"prompt":"a fox"}]}`, gemHeaders())
	if err := json.Unmarshal(got, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Predictions) != GeminiDefaultSampleCount {
		t.Fatalf("default sampleCount: %s", got)
	}
	for _, bad := range []string{`{"instances":[]}`, `{"instances":[{"prompt":"x"}],"parameters":{"sampleCount":9}}`, `{"instances":[{"prompt":"x"}],"parameters":{"aspectRatio":"2:1"}}`} {
		resp, got = do(t, "POST", ts.URL+"/v1beta/models/imagen-x:predict", bad, gemHeaders())
		if resp.StatusCode != 400 {
			t.Fatalf("%s: %d %s", bad, resp.StatusCode, got)
		}
	}
}

func TestGeminiCountTokens(t *testing.T) {
	_, ts := newServer(t, Options{})
	_, got := do(t, "POST", ts.URL+"/v1beta/models/g:countTokens", `{"contents":[{"parts":[{"text":"a b c"}]}]}`, gemHeaders())
	if string(got) != `{"totalTokens":3}` {
		t.Fatalf("%s", got)
	}
	_, got = do(t, "POST", ts.URL+"/v1beta/models/g:countTokens", `{"generateContentRequest":{"model":"models/g","contents":[{"parts":[{"text":"a b"}]}]}}`, gemHeaders())
	if string(got) != `{"totalTokens":2}` {
		t.Fatalf("%s", got)
	}
}
