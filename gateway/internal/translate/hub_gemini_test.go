package translate

import (
	"encoding/json"
	"strings"
	"testing"
)

// geminiRequestCases are OpenAI requests and the Gemini request each
// translates to.
var geminiRequestCases = []struct {
	name   string
	body   string
	want   string
	stream bool
}{
	{name: "roles, hoisted system, merging, generation config",
		body: `{"model":"g","messages":[{"role":"system","content":"Be terse."},{"role":"user","content":"Hi"},` +
			`{"role":"developer","content":[{"type":"text","text":"Use metric."}]},{"role":"user","content":[{"type":"text","text":"Weather?"}]},` +
			`{"role":"assistant","content":"Where?"},{"role":"user","content":"Paris <3","name":"bob"}],` +
			`"temperature":0.20,"top_p":1,"max_completion_tokens":512,"max_tokens":99,"stop":["END","STOP"],"n":2,` +
			`"presence_penalty":0.5,"frequency_penalty":0,"seed":42,"user":"u1","metadata":{"a":"b"},"store":false,` +
			`"service_tier":"auto","prediction":{"type":"content","content":"x"},"logprobs":false,"top_logprobs":0,"logit_bias":{},` +
			`"modalities":["text"],"verbosity":"medium","stream_options":{"include_usage":true},"unknown_field":1}`,
		want: `{"systemInstruction":{"parts":[{"text":"Be terse."},{"text":"Use metric."}]},"contents":[` +
			`{"role":"user","parts":[{"text":"Hi"},{"text":"Weather?"}]},{"role":"model","parts":[{"text":"Where?"}]},` +
			`{"role":"user","parts":[{"text":"Paris <3"}]}],"generationConfig":{"stopSequences":["END","STOP"],` +
			`"candidateCount":2,"maxOutputTokens":512,"temperature":0.20,"topP":1,"seed":42,"presencePenalty":0.5}}`},
	{name: "media parts, max_tokens, stop string, stream", stream: true,
		body: `{"model":"g","stream":true,"messages":[{"role":"user","content":[{"type":"text","text":"What is this?"},` +
			`{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo=","detail":"high"}},` +
			`{"type":"image_url","image_url":{"url":"https://example.com/a/cat.webp?x=1"}},` +
			`{"type":"image_url","image_url":{"url":"https://example.com/photo"}},` +
			`{"type":"input_audio","input_audio":{"data":"UklGRg==","format":"wav"}},` +
			`{"type":"input_audio","input_audio":{"data":"SUQz","format":"mp3"}},` +
			`{"type":"file","file":{"file_data":"data:application/pdf;base64,JVBERi0=","filename":"a.pdf"}},` +
			`{"type":"file","file":{"file_data":"JVBERi0=","filename":"b.PDF"}}]}],"max_tokens":100,"stop":"END","n":1}`,
		want: `{"contents":[{"role":"user","parts":[{"text":"What is this?"},{"inlineData":{"mimeType":"image/png","data":"iVBORw0KGgo="}},` +
			`{"fileData":{"mimeType":"image/webp","fileUri":"https://example.com/a/cat.webp?x=1"}},` +
			`{"fileData":{"mimeType":"image/jpeg","fileUri":"https://example.com/photo"}},` +
			`{"inlineData":{"mimeType":"audio/wav","data":"UklGRg=="}},{"inlineData":{"mimeType":"audio/mp3","data":"SUQz"}},` +
			`{"inlineData":{"mimeType":"application/pdf","data":"JVBERi0="}},{"inlineData":{"mimeType":"application/pdf","data":"JVBERi0="}}]}],` +
			`"generationConfig":{"stopSequences":["END"],"candidateCount":1,"maxOutputTokens":100}}`},
	{name: "tool history, schemas, required",
		body: `{"model":"g","messages":[{"role":"user","content":"Weather in Paris and time?"},` +
			`{"role":"assistant","content":null,"tool_calls":[{"id":"call_a","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}},` +
			`{"id":"call_b","type":"function","function":{"name":"get_time","arguments":""}}]},` +
			`{"role":"tool","tool_call_id":"call_a","content":"{\"temp_c\":18}"},` +
			`{"role":"tool","tool_call_id":"call_b","content":[{"type":"text","text":"12:00"}]},{"role":"user","content":"Thanks"}],` +
			`"tools":[{"type":"function","function":{"name":"get_weather","description":"Current weather","strict":true,"parameters":` +
			`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"city":{"type":"string","description":"City"},` +
			`"units":{"type":["string","null"],"enum":["metric","imperial"]},"days":{"type":"integer","format":"int32","minimum":1},` +
			`"tags":{"type":"array","items":{"type":"string","format":"uri"}}},"required":["city"],"additionalProperties":false}}},` +
			`{"type":"function","function":{"name":"get_time","parameters":{"type":"object","properties":{ },"required":[ ],"additionalProperties":false}}},` +
			`{"type":"function","function":{"name":"lookup","parameters":{"type":"object","properties":{"item":{"$ref":"#/$defs/Item"}},"$defs":{"Item":{"type":"string"}}}}}],` +
			`"tool_choice":"required","parallel_tool_calls":true}`,
		want: `{"contents":[{"role":"user","parts":[{"text":"Weather in Paris and time?"}]},` +
			`{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"Paris"}}},{"functionCall":{"name":"get_time","args":{}}}]},` +
			`{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"output":{"temp_c":18}}}},` +
			`{"functionResponse":{"name":"get_time","response":{"output":"12:00"}}},{"text":"Thanks"}]}],` +
			`"tools":[{"functionDeclarations":[{"name":"get_weather","description":"Current weather","parameters":{"type":"OBJECT","properties":` +
			`{"city":{"type":"STRING","description":"City"},"units":{"type":"STRING","nullable":true,"enum":["metric","imperial"]},` +
			`"days":{"type":"INTEGER","format":"int32","minimum":1},"tags":{"type":"ARRAY","items":{"type":"STRING"}}},"required":["city"]}},` +
			`{"name":"get_time"},{"name":"lookup","parametersJsonSchema":{"type":"object","properties":{"item":{"$ref":"#/$defs/Item"}},"$defs":{"Item":{"type":"string"}}}}]}],` +
			`"toolConfig":{"functionCallingConfig":{"mode":"ANY"}}}`},
	{name: "a reused tool call id maps to the latest call; assistant refusal and text with calls",
		body: `{"model":"g","messages":[{"role":"user","content":"go"},` +
			`{"role":"assistant","tool_calls":[{"id":"call_0","function":{"name":"first","arguments":"{}"}}]},` +
			`{"role":"tool","tool_call_id":"call_0","content":"[1,2]"},` +
			`{"role":"assistant","content":[{"type":"text","text":"Again."},{"type":"refusal","refusal":"No."}],"tool_calls":[{"id":"call_0","type":"function","function":{"name":"second","arguments":" {\"a\":1} "}}]},` +
			`{"role":"tool","tool_call_id":"call_0","content":" {\"ok\": true} "}],"tools":[{"type":"function","function":{"name":"first"}},{"type":"function","function":{"name":"second"}}]}`,
		want: `{"contents":[{"role":"user","parts":[{"text":"go"}]},{"role":"model","parts":[{"functionCall":{"name":"first","args":{}}}]},` +
			`{"role":"user","parts":[{"functionResponse":{"name":"first","response":{"output":"[1,2]"}}}]},` +
			`{"role":"model","parts":[{"text":"Again."},{"text":"No."},{"functionCall":{"name":"second","args":{"a":1}}}]},` +
			`{"role":"user","parts":[{"functionResponse":{"name":"second","response":{"output":{"ok":true}}}}]}],` +
			`"tools":[{"functionDeclarations":[{"name":"first"},{"name":"second"}]}]}`},
	{name: "tool_choice auto",
		body: `{"model":"g","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"a"}}],"tool_choice":"auto"}`,
		want: `{"contents":[{"role":"user","parts":[{"text":"x"}]}],"tools":[{"functionDeclarations":[{"name":"a"}]}],"toolConfig":{"functionCallingConfig":{"mode":"AUTO"}}}`},
	{name: "tool_choice none",
		body: `{"model":"g","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"a"}}],"tool_choice":"none"}`,
		want: `{"contents":[{"role":"user","parts":[{"text":"x"}]}],"tools":[{"functionDeclarations":[{"name":"a"}]}],"toolConfig":{"functionCallingConfig":{"mode":"NONE"}}}`},
	{name: "tool_choice none or auto without tools is dropped",
		body: `{"model":"g","messages":[{"role":"user","content":"x"}],"tool_choice":"none","tools":[],"parallel_tool_calls":false}`,
		want: `{"contents":[{"role":"user","parts":[{"text":"x"}]}]}`},
	{name: "tool_choice named function",
		body: `{"model":"g","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"a"}},{"type":"function","function":{"name":"b"}}],"tool_choice":{"type":"function","function":{"name":"b"}}}`,
		want: `{"contents":[{"role":"user","parts":[{"text":"x"}]}],"tools":[{"functionDeclarations":[{"name":"a"},{"name":"b"}]}],"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["b"]}}}`},
	{name: "tool_choice allowed_tools auto narrows the declarations",
		body: `{"model":"g","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"a"}},{"type":"function","function":{"name":"b"}},{"type":"function","function":{"name":"c"}}],` +
			`"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[{"type":"function","function":{"name":"c"}},{"type":"function","function":{"name":"a"}}]}}}`,
		want: `{"contents":[{"role":"user","parts":[{"text":"x"}]}],"tools":[{"functionDeclarations":[{"name":"a"},{"name":"c"}]}],"toolConfig":{"functionCallingConfig":{"mode":"AUTO"}}}`},
	{name: "tool_choice allowed_tools required",
		body: `{"model":"g","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"a"}},{"type":"function","function":{"name":"b"}}],` +
			`"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"required","tools":[{"type":"function","function":{"name":"b"}}]}}}`,
		want: `{"contents":[{"role":"user","parts":[{"text":"x"}]}],"tools":[{"functionDeclarations":[{"name":"a"},{"name":"b"}]}],"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["b"]}}}`},
	{name: "json_schema in the subset → responseSchema with propertyOrdering; reasoning_effort low",
		body: `{"model":"g","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"answer","strict":true,"schema":` +
			`{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"number"},"nested":{"type":"object","properties":{"b":{"type":"boolean"},"a":{"type":"null"}},"required":["b"]}},` +
			`"required":["zeta","alpha"],"additionalProperties":false}}},"reasoning_effort":"low"}`,
		want: `{"contents":[{"role":"user","parts":[{"text":"x"}]}],"generationConfig":{"responseMimeType":"application/json","responseSchema":` +
			`{"type":"OBJECT","properties":{"zeta":{"type":"STRING"},"alpha":{"type":"NUMBER"},"nested":{"type":"OBJECT","properties":{"b":{"type":"BOOLEAN"},"a":{"type":"NULL"}},` +
			`"required":["b"],"propertyOrdering":["b","a"]}},"required":["zeta","alpha"],"propertyOrdering":["zeta","alpha","nested"]},"thinkingConfig":{"thinkingBudget":1024}}}`},
	{name: "json_schema outside the subset → responseJsonSchema verbatim",
		body: `{"model":"g","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"a","schema":{"type":"object","properties":{"v":{"oneOf":[{"type":"string"},{"type":"integer"}]}}}}}}`,
		want: `{"contents":[{"role":"user","parts":[{"text":"x"}]}],"generationConfig":{"responseMimeType":"application/json","responseJsonSchema":{"type":"object","properties":{"v":{"oneOf":[{"type":"string"},{"type":"integer"}]}}}}}`},
	{name: "json_object, reasoning none, response_format text",
		body: `{"model":"g","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_object"},"reasoning_effort":"none"}`,
		want: `{"contents":[{"role":"user","parts":[{"text":"x"}]}],"generationConfig":{"responseMimeType":"application/json","thinkingConfig":{"thinkingBudget":0}}}`},
	{name: "reasoning medium and high, penalties, text format",
		body: `{"model":"g","messages":[{"role":"user","content":"x"}],"reasoning_effort":"medium","response_format":{"type":"text"},"frequency_penalty":-0.5,"presence_penalty":0.0}`,
		want: `{"contents":[{"role":"user","parts":[{"text":"x"}]}],"generationConfig":{"frequencyPenalty":-0.5,"thinkingConfig":{"thinkingBudget":8192}}}`},
	{name: "reasoning high",
		body: `{"model":"g","messages":[{"role":"user","content":"x"}],"reasoning_effort":"high","temperature":null,"stop":null,"n":null}`,
		want: `{"contents":[{"role":"user","parts":[{"text":"x"}]}],"generationConfig":{"thinkingConfig":{"thinkingBudget":24576}}}`},
	{name: "empty messages content is skipped",
		body: `{"model":"g","messages":[{"role":"system","content":""},{"role":"user","content":""},{"role":"assistant","content":null},{"role":"user","content":[{"type":"text","text":""},{"type":"text","text":"hi"}]}]}`,
		want: `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`},
}

func TestGeminiChatRequestMapping(t *testing.T) {
	for i := 0; i < len(geminiRequestCases); i++ {
		c := geminiRequestCases[i]
		out, stream, e := GeminiChatRequest([]byte(c.body))
		if e != nil {
			t.Errorf("%s: %v", c.name, e)
			continue
		}
		if string(out) != c.want || stream != c.stream {
			t.Errorf("%s:\n got %s (stream %v)\nwant %s (stream %v)", c.name, out, stream, c.want, c.stream)
		}
	}
}

// geminiTestUser and geminiTestTool complete a request in the error
// cases: one user message, one function tool.
const geminiTestUser = `"messages":[{"role":"user","content":"x"}]`
const geminiTestTool = `"tools":[{"type":"function","function":{"name":"a"}}]`

// geminiRequestErrorCases are requests geminiChatRequest refuses, with
// the error code and a part of the message each must get.
var geminiRequestErrorCases = []struct {
	body, code, has string
}{
	{`nope`, "invalid_json", "not valid JSON"},
	{`[1]`, "invalid_json", "JSON object"},
	{`{"model":"g"}`, "invalid_request", `"messages"`},
	{`{"model":"g","messages":[]}`, "invalid_request", `"messages"`},
	{`{"model":"g","messages":{}}`, "invalid_request", `"messages"`},
	{`{"model":"g","messages":[{"role":"system","content":"only system"}]}`, "invalid_request", `"messages" must contain`},
	{`{"model":"g","messages":[1]}`, "invalid_request", `messages[0]`},
	{`{"model":"g","messages":[{"content":"x"}]}`, "invalid_request", `messages[0].role`},
	{`{"model":"g","messages":[{"role":"robot","content":"x"}]}`, "invalid_request", `"robot"`},
	{`{"model":"g","messages":[{"role":"user"}]}`, "invalid_request", `messages[0].content`},
	{`{"model":"g","messages":[{"role":"system","content":null},{"role":"user","content":"x"}]}`, "invalid_request", `messages[0].content`},
	{`{"model":"g","messages":[{"role":"user","content":5}]}`, "invalid_request", `messages[0].content`},
	{`{"model":"g","messages":[{"role":"user","content":[{"type":"text","text":1}]}]}`, "invalid_request", `messages[0].content[0].text`},
	{`{"model":"g","messages":[{"role":"user","content":[{"type":"video","video":{}}]}]}`, "unsupported_parameter", `messages[0].content[0].type`},
	{`{"model":"g","messages":[{"role":"system","content":[{"type":"image_url","image_url":{"url":"https://x/a.png"}}]},{"role":"user","content":"x"}]}`, "unsupported_parameter", `messages[0].content[0].type`},
	{`{"model":"g","messages":[{"role":"user","content":[{"type":"refusal","refusal":"x"}]}]}`, "unsupported_parameter", `"refusal"`},
	{`{"model":"g","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"ftp://x/a.png"}}]}]}`, "invalid_request", `messages[0].content[0].image_url.url`},
	{`{"model":"g","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png,abc"}}]}]}`, "invalid_request", `image_url.url`},
	{`{"model":"g","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"abc","format":"flac"}}]}]}`, "unsupported_parameter", `input_audio.format`},
	{`{"model":"g","messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"file-1"}}]}]}`, "unsupported_parameter", `file.file_id`},
	{`{"model":"g","messages":[{"role":"user","content":[{"type":"file","file":{"file_data":"abc","filename":"x.bin"}}]}]}`, "invalid_request", `file.file_data`},
	{`{"model":"g","messages":[{"role":"function","name":"f","content":"x"}]}`, "unsupported_parameter", `"function"`},
	{`{"model":"g","messages":[{"role":"user","content":"x"},{"role":"assistant","function_call":{"name":"f","arguments":"{}"}}]}`, "unsupported_parameter", `messages[1].function_call`},
	{`{"model":"g","messages":[{"role":"user","content":"x"},{"role":"tool","tool_call_id":"call_x","content":"r"}]}`, "invalid_request", `messages[1].tool_call_id`},
	{`{"model":"g","messages":[{"role":"user","content":"x"},{"role":"tool","content":"r"}]}`, "invalid_request", `messages[1].tool_call_id`},
	{`{"model":"g","messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{bad"}}]}]}`, "invalid_request", `messages[1].tool_calls[0].function.arguments`},
	{`{"model":"g","messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"[1]"}}]}]}`, "invalid_request", `messages[1].tool_calls[0].function.arguments`},
	{`{"model":"g","messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"c","type":"custom","custom":{}}]}]}`, "unsupported_parameter", `messages[1].tool_calls[0].type`},
	{`{"model":"g","messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"c","function":{"name":""}}]}]}`, "invalid_request", `messages[1].tool_calls[0].function.name`},
	{`{"model":"g",` + geminiTestUser + `,"logit_bias":{"50256":-100}}`, "unsupported_parameter", `"logit_bias"`},
	{`{"model":"g",` + geminiTestUser + `,"logprobs":true}`, "unsupported_parameter", `"logprobs"`},
	{`{"model":"g",` + geminiTestUser + `,"logprobs":"yes"}`, "invalid_request", `"logprobs"`},
	{`{"model":"g",` + geminiTestUser + `,"top_logprobs":3}`, "unsupported_parameter", `"top_logprobs"`},
	{`{"model":"g",` + geminiTestUser + `,"audio":{"voice":"alloy","format":"wav"}}`, "unsupported_parameter", `"audio"`},
	{`{"model":"g",` + geminiTestUser + `,"modalities":["text","audio"]}`, "unsupported_parameter", `"modalities"`},
	{`{"model":"g",` + geminiTestUser + `,"web_search_options":{}}`, "unsupported_parameter", `"web_search_options"`},
	{`{"model":"g",` + geminiTestUser + `,"functions":[{"name":"f"}]}`, "unsupported_parameter", `"functions"`},
	{`{"model":"g",` + geminiTestUser + `,"function_call":"auto"}`, "unsupported_parameter", `"function_call"`},
	{`{"model":"g",` + geminiTestUser + `,"verbosity":"low"}`, "unsupported_parameter", `"verbosity"`},
	{`{"model":"g",` + geminiTestUser + `,"n":2,"stream":true}`, "unsupported_parameter", `"n"`},
	{`{"model":"g",` + geminiTestUser + `,"n":0}`, "invalid_request", `"n"`},
	{`{"model":"g",` + geminiTestUser + `,"n":1.5}`, "invalid_request", `"n"`},
	{`{"model":"g",` + geminiTestUser + `,"stream":"yes"}`, "invalid_request", `"stream"`},
	{`{"model":"g",` + geminiTestUser + `,` + geminiTestTool + `,"parallel_tool_calls":false}`, "unsupported_parameter", `"parallel_tool_calls"`},
	{`{"model":"g",` + geminiTestUser + `,"reasoning_effort":"extreme"}`, "unsupported_value", `"reasoning_effort"`},
	{`{"model":"g",` + geminiTestUser + `,"response_format":{"type":"xml"}}`, "unsupported_value", `"response_format.type"`},
	{`{"model":"g",` + geminiTestUser + `,"response_format":"json"}`, "invalid_request", `"response_format"`},
	{`{"model":"g",` + geminiTestUser + `,"response_format":{"type":"json_schema"}}`, "invalid_request", `"response_format.json_schema"`},
	{`{"model":"g",` + geminiTestUser + `,"response_format":{"type":"json_schema","json_schema":{"name":"a","schema":[1]}}}`, "invalid_request", `json_schema.schema`},
	{`{"model":"g",` + geminiTestUser + `,"temperature":"hot"}`, "invalid_request", `"temperature"`},
	{`{"model":"g",` + geminiTestUser + `,"top_p":true}`, "invalid_request", `"top_p"`},
	{`{"model":"g",` + geminiTestUser + `,"max_tokens":0}`, "invalid_request", `"max_tokens"`},
	{`{"model":"g",` + geminiTestUser + `,"max_completion_tokens":"9"}`, "invalid_request", `"max_completion_tokens"`},
	{`{"model":"g",` + geminiTestUser + `,"stop":5}`, "invalid_request", `"stop"`},
	{`{"model":"g",` + geminiTestUser + `,"stop":["a",1]}`, "invalid_request", `"stop"`},
	{`{"model":"g",` + geminiTestUser + `,"seed":"x"}`, "invalid_request", `"seed"`},
	{`{"model":"g",` + geminiTestUser + `,"presence_penalty":"x"}`, "invalid_request", `"presence_penalty"`},
	{`{"model":"g",` + geminiTestUser + `,"frequency_penalty":[]}`, "invalid_request", `"frequency_penalty"`},
	{`{"model":"g",` + geminiTestUser + `,"tools":{}}`, "invalid_request", `"tools"`},
	{`{"model":"g",` + geminiTestUser + `,"tools":[{"type":"web_search"}]}`, "unsupported_parameter", `tools[0].type`},
	{`{"model":"g",` + geminiTestUser + `,"tools":[{"type":"function"}]}`, "invalid_request", `tools[0].function`},
	{`{"model":"g",` + geminiTestUser + `,"tools":[{"type":"function","function":{"name":""}}]}`, "invalid_request", `tools[0].function.name`},
	{`{"model":"g",` + geminiTestUser + `,"tools":[{"type":"function","function":{"name":"a","parameters":"x"}}]}`, "invalid_request", `tools[0].function.parameters`},
	{`{"model":"g",` + geminiTestUser + `,"tools":[{"type":"function","function":{"name":"a","description":5}}]}`, "invalid_request", `tools[0].function.description`},
	{`{"model":"g",` + geminiTestUser + `,"tool_choice":"required"}`, "invalid_request", `"tool_choice"`},
	{`{"model":"g",` + geminiTestUser + `,"tool_choice":"sometimes",` + geminiTestTool + `}`, "invalid_request", `"tool_choice"`},
	{`{"model":"g",` + geminiTestUser + `,"tool_choice":5,` + geminiTestTool + `}`, "invalid_request", `"tool_choice"`},
	{`{"model":"g",` + geminiTestUser + `,"tool_choice":{"type":"function","function":{"name":"zzz"}},` + geminiTestTool + `}`, "invalid_request", `"zzz"`},
	{`{"model":"g",` + geminiTestUser + `,"tool_choice":{"type":"custom","custom":{"name":"a"}},` + geminiTestTool + `}`, "unsupported_parameter", `"tool_choice.type"`},
	{`{"model":"g",` + geminiTestUser + `,"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"sometimes","tools":[]}},` + geminiTestTool + `}`, "invalid_request", `tool_choice.allowed_tools.mode`},
	{`{"model":"g",` + geminiTestUser + `,"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[]}},` + geminiTestTool + `}`, "invalid_request", `tool_choice.allowed_tools.tools`},
}

func TestGeminiChatRequestErrors(t *testing.T) {
	for i := 0; i < len(geminiRequestErrorCases); i++ {
		c := geminiRequestErrorCases[i]
		out, _, e := GeminiChatRequest([]byte(c.body))
		if e == nil {
			t.Errorf("%s: no error, got %s", c.body, out)
			continue
		}
		if e.Status != 400 || e.Kind != "invalid_request_error" || e.Code != c.code || !strings.Contains(e.Message, c.has) {
			t.Errorf("%s:\n got %d %s %s %q\nwant 400 invalid_request_error %s containing %q", c.body, e.Status, e.Kind, e.Code, e.Message, c.code, c.has)
		}
	}
}

// ---------------------------------------------------------------------
// Chat response

func TestGeminiChatResponse(t *testing.T) {
	tc := geminiTestContext()
	cases := []struct {
		name, body, want string
		u                Usage
	}{
		{name: "text",
			body: `{"candidates":[{"content":{"role":"model","parts":[{"text":"18 °C "},{"text":"in <Paris>."}]},"finishReason":"STOP","index":0,` +
				`"safetyRatings":[{"category":"HARM_CATEGORY_HARASSMENT","probability":"NEGLIGIBLE"}]}],` +
				`"usageMetadata":{"promptTokenCount":410,"candidatesTokenCount":8,"totalTokenCount":418},"modelVersion":"gemini-2.5-flash","responseId":"mD9dZ3qZ"}`,
			want: `{"id":"chatcmpl-mD9dZ3qZ","object":"chat.completion","created":1700000000,"model":"gemini-alias","choices":[{"index":0,` +
				`"message":{"role":"assistant","content":"18 °C in <Paris>.","refusal":null},"logprobs":null,"finish_reason":"stop"}],` +
				`"usage":{"prompt_tokens":410,"completion_tokens":8,"total_tokens":418,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}}`,
			u: Usage{PromptTokens: 410, CompletionTokens: 8, Reported: true}},
		{name: "tool calls, thought dropped, usage with thoughts and cache",
			body: "{\n  \"candidates\": [{\"content\": {\"role\": \"model\", \"parts\": [{\"text\": \"plan\", \"thought\": true}, {\"text\": \"Checking.\"}," +
				"{\"functionCall\": {\"name\": \"get_weather\", \"args\": {\"city\": \"Paris\", \"n\": [1, 2.50]}}, \"thoughtSignature\": \"c2ln\"}," +
				"{\"functionCall\": {\"name\": \"get_time\"}}]}, \"finishReason\": \"STOP\"}],\n" +
				"  \"usageMetadata\": {\"promptTokenCount\": 1200, \"candidatesTokenCount\": 20, \"thoughtsTokenCount\": 96, \"cachedContentTokenCount\": 1024, \"totalTokenCount\": 1316}\n}",
			want: `{"id":"chatcmpl-test","object":"chat.completion","created":1700000000,"model":"gemini-alias","choices":[{"index":0,` +
				`"message":{"role":"assistant","content":"Checking.","refusal":null,"tool_calls":[` +
				`{"id":"call_test_0_tsig_c2ln","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\",\"n\":[1,2.50]}"}},` +
				`{"id":"call_test_1","type":"function","function":{"name":"get_time","arguments":"{}"}}]},"logprobs":null,"finish_reason":"tool_calls"}],` +
				`"usage":{"prompt_tokens":1200,"completion_tokens":116,"total_tokens":1316,"prompt_tokens_details":{"cached_tokens":1024},"completion_tokens_details":{"reasoning_tokens":96}}}`,
			u: Usage{PromptTokens: 1200, CompletionTokens: 116, CacheReadTokens: 1024, Reported: true}},
		{name: "only a function call: content null",
			body: `{"candidates":[{"content":{"parts":[{"functionCall":{"id":"gem-1","name":"f","args":{}}}]},"finishReason":"STOP"}],"responseId":"r1"}`,
			want: `{"id":"chatcmpl-r1","object":"chat.completion","created":1700000000,"model":"gemini-alias","choices":[{"index":0,` +
				`"message":{"role":"assistant","content":null,"refusal":null,"tool_calls":[{"id":"gem-1","type":"function","function":{"name":"f","arguments":"{}"}}]},"logprobs":null,"finish_reason":"tool_calls"}]}`},
		{name: "prompt blocked",
			body: `{"promptFeedback":{"blockReason":"SAFETY","safetyRatings":[]},"usageMetadata":{"promptTokenCount":12,"totalTokenCount":12}}`,
			want: `{"id":"chatcmpl-test","object":"chat.completion","created":1700000000,"model":"gemini-alias","choices":[{"index":0,` +
				`"message":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":"content_filter"}],` +
				`"usage":{"prompt_tokens":12,"completion_tokens":0,"total_tokens":12,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}}`,
			u: Usage{PromptTokens: 12, Reported: true}},
		{name: "finish reasons over several candidates",
			body: `{"candidates":[{"content":{"parts":[{"text":"a"}]},"finishReason":"MAX_TOKENS"},{"finishReason":"SAFETY","index":1},` +
				`{"content":{"parts":[{"text":"c"}]},"finishReason":"RECITATION","index":2},{"finishReason":"BLOCKLIST","index":3},` +
				`{"finishReason":"PROHIBITED_CONTENT","index":4},{"finishReason":"SPII","index":5},{"finishReason":"MALFORMED_FUNCTION_CALL","index":6},` +
				`{"finishReason":"OTHER","index":7}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":2,"toolUsePromptTokenCount":4}}`,
			want: `{"id":"chatcmpl-test","object":"chat.completion","created":1700000000,"model":"gemini-alias","choices":[` +
				`{"index":0,"message":{"role":"assistant","content":"a","refusal":null},"logprobs":null,"finish_reason":"length"},` +
				`{"index":1,"message":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":"content_filter"},` +
				`{"index":2,"message":{"role":"assistant","content":"c","refusal":null},"logprobs":null,"finish_reason":"content_filter"},` +
				`{"index":3,"message":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":"content_filter"},` +
				`{"index":4,"message":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":"content_filter"},` +
				`{"index":5,"message":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":"content_filter"},` +
				`{"index":6,"message":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":"stop"},` +
				`{"index":7,"message":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":"stop"}],` +
				`"usage":{"prompt_tokens":7,"completion_tokens":2,"total_tokens":9,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}}`,
			u: Usage{PromptTokens: 7, CompletionTokens: 2, Reported: true}},
	}
	for i := 0; i < len(cases); i++ {
		c := cases[i]
		out, u, e := GeminiChatResponse([]byte(c.body), tc)
		if e != nil {
			t.Errorf("%s: %v", c.name, e)
			continue
		}
		if string(out) != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, out, c.want)
		}
		if u != c.u {
			t.Errorf("%s: usage %+v, want %+v", c.name, u, c.u)
		}
	}
}

func TestGeminiChatResponseErrors(t *testing.T) {
	cases := []struct {
		body, code string
	}{
		{``, "upstream_bad_response"},
		{`not json`, "upstream_bad_response"},
		{`[{"candidates":[]}]`, "upstream_bad_response"},
		{`null`, "upstream_bad_response"},
		{`{}`, "upstream_bad_response"},
		{`{"candidates":[]}`, "upstream_bad_response"},
		{`{"candidates":"x"}`, "upstream_bad_response"},
		{`{"candidates":[{"content":{"parts":[{"text":5}]}}]}`, "upstream_bad_response"},
		{`{"error":{"code":500,"message":"Internal error","status":"INTERNAL"}}`, "upstream_error"},
	}
	for i := 0; i < len(cases); i++ {
		_, _, e := GeminiChatResponse([]byte(cases[i].body), geminiTestContext())
		if e == nil || e.Status != 502 || e.Kind != "server_error" || e.Code != cases[i].code {
			t.Errorf("%q: %+v, want 502 %s", cases[i].body, e, cases[i].code)
			continue
		}
		if e.Code == "upstream_bad_response" && strings.Contains(e.Message, cases[i].body) && cases[i].body != "" {
			t.Errorf("%q: the message carries the body: %q", cases[i].body, e.Message)
		}
	}
	_, _, e := GeminiChatResponse([]byte(`{"error":{"code":500,"message":"Internal error","status":"INTERNAL"}}`), geminiTestContext())
	if e.Message != "the gemini upstream reported an error: INTERNAL: Internal error" ||
		string(e.Upstream) != `{"error":{"code":500,"message":"Internal error","status":"INTERNAL"}}` {
		t.Errorf("upstream error: %q %s", e.Message, e.Upstream)
	}
}

// ---------------------------------------------------------------------
// Round trips

// A thought signature rides in the tool call id and is restored on the
// function call part of the next request (Gemini 3 refuses the turn
// otherwise).
func TestGeminiThoughtSignatureRoundTrip(t *testing.T) {
	sig := "CiQB+/w="
	resp := `{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"f","args":{}},"thoughtSignature":"` + sig + `"}]},"finishReason":"STOP"}],"responseId":"r1"}`
	out, _, e := GeminiChatResponse([]byte(resp), geminiTestContext())
	if e != nil {
		t.Fatal(e)
	}
	var got struct {
		Choices []struct {
			Message struct {
				ToolCalls []struct{ ID string } `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(out, &got); err != nil || len(got.Choices) != 1 || len(got.Choices[0].Message.ToolCalls) != 1 {
		t.Fatalf("response %s", out)
	}
	id := got.Choices[0].Message.ToolCalls[0].ID
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			t.Fatalf("id %q has %q outside [A-Za-z0-9_-]", id, c)
		}
	}
	next := `{"model":"m","messages":[{"role":"user","content":"hi"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"` + id + `","type":"function","function":{"name":"f","arguments":"{}"}}]},` +
		`{"role":"tool","tool_call_id":"` + id + `","content":"ok"}]}`
	req, _, e := GeminiChatRequest([]byte(next))
	if e != nil {
		t.Fatal(e)
	}
	if !strings.Contains(string(req), `"thoughtSignature":"`+sig+`"`) {
		t.Fatalf("signature not restored: %s", req)
	}
	if !strings.Contains(string(req), `"functionResponse":{"name":"f"`) {
		t.Fatalf("tool result not matched to its call: %s", req)
	}
}
