package translate

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func geminiFuzzSeeds(f *testing.F) [][]byte {
	return testdataSeeds(f, "gemini/*.sse")
}

func FuzzGeminiChatRequest(f *testing.F) {
	seeds := []string{
		`{"model":"g","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"g","messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}},{"type":"image_url","image_url":{"url":"https://x/y.gif"}},{"type":"input_audio","input_audio":{"data":"AA","format":"mp3"}}]},{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"n\":123456789012345678901}"}}]},{"role":"tool","tool_call_id":"c","content":[{"type":"text","text":"{\"r\":1}"}]}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"n":{"type":["integer","null"]},"m":{"anyOf":[{"type":"string"},{"type":"array","items":{"type":"number"}}]}}}}}],"tool_choice":{"type":"function","function":{"name":"f"}}}`,
		`{"messages":[{"role":"user","content":"x"}],"temperature":3,"stop":["a",""],"max_completion_tokens":9,"reasoning_effort":"high","stream":true,"n":1,"seed":-1,"presence_penalty":1.5}`,
		`{"messages":[{"role":"user","content":"x"}],"n":2,"stream":true}`,
		`{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"a","schema":{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"$ref":"#"}}}}}}}}`,
		`{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"a"}}],"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[{"type":"function","function":{"name":"a"}}]}}}`,
		`{"messages":[{"role":"user","content":[{"type":"file","file":{"file_data":"data:application/pdf;base64,JV"}}]}]}`,
		`{"messages":[]}`,
		`[]`,
	}
	for i := 0; i < len(seeds); i++ {
		f.Add([]byte(seeds[i]))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		out, _, e := GeminiChatRequest(body)
		if e != nil {
			if out != nil || e.Status != 400 || e.Kind != "invalid_request_error" || e.Code == "" || e.Message == "" {
				t.Fatalf("error %+v with output %q", e, out)
			}
			return
		}
		var req struct {
			Contents []struct {
				Role  string            `json:"role"`
				Parts []json.RawMessage `json:"parts"`
			} `json:"contents"`
			Tools []struct {
				FunctionDeclarations []struct {
					Name                 string          `json:"name"`
					Parameters           json.RawMessage `json:"parameters"`
					ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
				} `json:"functionDeclarations"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(out, &req); err != nil {
			t.Fatalf("output is not a JSON object: %v: %s", err, out)
		}
		if len(req.Contents) == 0 {
			t.Fatalf("output has no contents: %s", out)
		}
		for i := 0; i < len(req.Contents); i++ {
			c := req.Contents[i]
			if c.Role != "user" && c.Role != "model" || len(c.Parts) == 0 {
				t.Fatalf("bad content %d: %s", i, out)
			}
			if i > 0 && req.Contents[i-1].Role == c.Role {
				t.Fatalf("consecutive %s turns not merged: %s", c.Role, out)
			}
		}
		for i := 0; i < len(req.Tools); i++ {
			decls := req.Tools[i].FunctionDeclarations
			for j := 0; j < len(decls); j++ {
				if decls[j].Name == "" || len(decls[j].Parameters) > 0 && len(decls[j].ParametersJSONSchema) > 0 {
					t.Fatalf("bad declaration: %s", out)
				}
			}
		}
	})
}

func FuzzGeminiChatResponse(f *testing.F) {
	seeds := []string{
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"hi"},{"text":"x","thought":true},{"functionCall":{"name":"f","args":{"a":1e999}}}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":1,"candidatesTokenCount":2,"thoughtsTokenCount":3,"cachedContentTokenCount":1},"responseId":"r"}`,
		`{"promptFeedback":{"blockReason":"SAFETY"}}`,
		`{"candidates":[{"finishReason":"MAX_TOKENS"},{"index":1,"content":{"parts":[]}}]}`,
		`{"error":{"code":500,"message":"x","status":"INTERNAL"}}`,
		`null`,
	}
	for i := 0; i < len(seeds); i++ {
		f.Add([]byte(seeds[i]))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		out, u, e := GeminiChatResponse(body, geminiTestContext())
		if e != nil {
			if out != nil || e.Status != 502 || e.Code == "upstream_bad_response" && len(body) > 8 && strings.Contains(e.Message, string(body)) {
				t.Fatalf("error %+v with output %q", e, out)
			}
			return
		}
		var resp hubTestCompletion
		if err := json.Unmarshal(out, &resp); err != nil || resp.Object != "chat.completion" || resp.Model != "gemini-alias" || len(resp.Choices) == 0 {
			t.Fatalf("bad completion (%v): %s", err, out)
		}
		for i := 0; i < len(resp.Choices); i++ {
			c := resp.Choices[i]
			if c.Index != i || c.Message.Role != "assistant" || c.FinishReason == "" {
				t.Fatalf("bad choice %d: %s", i, out)
			}
			for j := 0; j < len(c.Message.ToolCalls); j++ {
				if c.Message.ToolCalls[j].ID == "" || !json.Valid([]byte(c.Message.ToolCalls[j].Function.Arguments)) {
					t.Fatalf("bad tool call: %s", out)
				}
			}
		}
		if u.Reported != bytes.Contains(out, []byte(`"usage":{`)) {
			t.Fatalf("usage reported %v but output %s", u.Reported, out)
		}
	})
}

// FuzzGeminiStream feeds arbitrary bytes through the SSE reader and the
// translator. The client-facing output must be well-framed
// "data: <JSON>\n\n" events with one id, a role chunk first, nothing but
// the usage chunk and [DONE] after the finish_reason, [DONE] only after
// a finish_reason, and an error only in place of [DONE].
func FuzzGeminiStream(f *testing.F) {
	seeds := geminiFuzzSeeds(f)
	for i := 0; i < len(seeds); i++ {
		f.Add(seeds[i], true)
	}
	f.Add([]byte("data: {\"candidates\":[{\"finishReason\":\"STOP\"}]}\n\n"), false)
	f.Add([]byte("data: {}\n\ndata: [DONE]\n\ndata: null\n\n"), false)
	f.Fuzz(func(t *testing.T, input []byte, includeUsage bool) {
		tc := geminiTestContext()
		tc.IncludeUsage = includeUsage
		out := fuzzHubStream(t, input, NewGeminiStream(tc), false)
		checkGeminiChunks(t, out, includeUsage)
	})
}

// checkGeminiChunks checks the order of the chunks in a framed stream.
func checkGeminiChunks(t *testing.T, out []byte, includeUsage bool) {
	t.Helper()
	if len(out) == 0 {
		return
	}
	events := strings.Split(strings.TrimSuffix(string(out), "\n\n"), "\n\n")
	id := ""
	finished, usageSeen := false, false
	for i := 0; i < len(events); i++ {
		payload := strings.TrimPrefix(events[i], "data: ")
		if payload == "[DONE]" {
			if i != len(events)-1 || !finished || usageSeen != includeUsage {
				t.Fatalf("[DONE] at %d (finished %v, usage %v): %q", i, finished, usageSeen, out)
			}
			continue
		}
		var c hubTestChunk
		if err := json.Unmarshal([]byte(payload), &c); err != nil {
			t.Fatalf("chunk %d: %v", i, err)
		}
		if c.Object != "chat.completion.chunk" || c.Model != "gemini-alias" {
			t.Fatalf("chunk %d header: %s", i, payload)
		}
		if id == "" {
			id = c.ID
		}
		if c.ID != id || id == "" {
			t.Fatalf("chunk %d id %q, first %q", i, c.ID, id)
		}
		if i == 0 && (len(c.Choices) != 1 || c.Choices[0].Delta.Role == nil || *c.Choices[0].Delta.Role != "assistant") {
			t.Fatalf("first chunk is not the role chunk: %s", payload)
		}
		if !isJSONNull(c.Usage) {
			if !finished || usageSeen || len(c.Choices) != 0 {
				t.Fatalf("misplaced usage chunk: %s", payload)
			}
			usageSeen = true
			continue
		}
		if len(c.Choices) != 1 || finished {
			t.Fatalf("chunk %d after finish or without one choice: %s", i, payload)
		}
		if c.Choices[0].FinishReason != nil {
			finished = true
		}
	}
}

func FuzzGeminiEmbed(f *testing.F) {
	f.Add([]byte(`{"model":"e","input":"hello","dimensions":8}`), []byte(`{"embedding":{"values":[0.1,-2e-3]}}`))
	f.Add([]byte(`{"model":"e","input":["a","b"],"encoding_format":"base64"}`), []byte(`{"embeddings":[{"values":[1]},{"values":[2.5E+1]}]}`))
	f.Add([]byte(`{"model":"e","input":[1,2]}`), []byte(`{"embeddings":[{"values":[null]}]}`))
	f.Fuzz(func(t *testing.T, req, resp []byte) {
		out, batch, e := GeminiEmbedRequest(req, "gemini-embedding-001")
		if e != nil {
			if out != nil || e.Status != 400 || e.Message == "" {
				t.Fatalf("request error %+v with output %q", e, out)
			}
		} else {
			var single struct {
				Model   string `json:"model"`
				Content struct {
					Parts []struct {
						Text string `json:"text"`
					} `json:"parts"`
				} `json:"content"`
			}
			var many struct {
				Requests []json.RawMessage `json:"requests"`
			}
			if batch {
				if json.Unmarshal(out, &many) != nil || len(many.Requests) == 0 {
					t.Fatalf("bad batch request: %s", out)
				}
			} else if json.Unmarshal(out, &single) != nil || single.Model != "models/gemini-embedding-001" || len(single.Content.Parts) != 1 {
				t.Fatalf("bad request: %s", out)
			}
		}
		for pass := 0; pass < 2; pass++ {
			body, u, e := GeminiEmbedResponse(resp, geminiTestContext(), pass == 1)
			if e != nil {
				if body != nil || e.Status != 502 {
					t.Fatalf("response error %+v with output %q", e, body)
				}
				continue
			}
			if u.Reported {
				t.Fatal("embeddings usage reported")
			}
			var list struct {
				Object string `json:"object"`
				Data   []struct {
					Index     int             `json:"index"`
					Embedding json.RawMessage `json:"embedding"`
				} `json:"data"`
			}
			if err := json.Unmarshal(body, &list); err != nil || list.Object != "list" || len(list.Data) == 0 {
				t.Fatalf("bad embeddings (%v): %s", err, body)
			}
			for i := 0; i < len(list.Data); i++ {
				var vals []json.Number
				if list.Data[i].Index != i || json.Unmarshal(list.Data[i].Embedding, &vals) != nil || bytes.Contains(list.Data[i].Embedding, []byte(`"`)) {
					t.Fatalf("bad embedding %d: %s", i, body)
				}
			}
			if _, e := GeminiEmbedBase64(body); e != nil {
				t.Fatalf("base64 of a translated response failed: %v: %s", e, body)
			}
		}
	})
}
