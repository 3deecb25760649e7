package translate

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// sameAnthropicRequest translates body on the fast path and on the
// general path and fails unless both give the same answer: the same
// error, or requests equal as JSON values and the same stream flag. It
// reports whether the fast path read the conversation.
func sameAnthropicRequest(t *testing.T, body []byte) bool {
	t.Helper()
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil {
		return false
	}
	fast, fastStream, fastErr := anthropicChatRequest(fields, "claude-up", false)
	general, generalStream, generalErr := anthropicChatRequest(fields, "claude-up", true)
	if (fastErr == nil) != (generalErr == nil) {
		t.Fatalf("fast path error %v, general path error %v, for %s", fastErr, generalErr, body)
	}
	if fastErr != nil {
		if !reflect.DeepEqual(fastErr, generalErr) {
			t.Fatalf("fast path error %+v, general path error %+v", *fastErr, *generalErr)
		}
		return false
	}
	var a, b interface{}
	if err := json.Unmarshal(fast, &a); err != nil {
		t.Fatalf("fast path output is not JSON (%v): %s", err, fast)
	}
	if err := json.Unmarshal(general, &b); err != nil {
		t.Fatalf("general path output is not JSON (%v): %s", err, general)
	}
	if !reflect.DeepEqual(a, b) || fastStream != generalStream {
		t.Fatalf("the paths differ for %s:\nfast    %s (stream %v)\ngeneral %s (stream %v)", body, fast, fastStream, general, generalStream)
	}
	raw, ok := fields["messages"]
	if !ok {
		return false
	}
	_, took := anthropicFastMessages(raw)
	return took
}

// The conversations OpenAI clients send most — plain text, in the
// compact encoding of most SDKs or the spaced one of Python's json —
// take the fast path, with the general path's result.
func TestAnthropicFastPathTaken(t *testing.T) {
	bodies := []string{
		`{"model":"m","stream":true,"messages":[{"role":"system","content":"Be terse."},{"role":"user","content":"Hello <b>&</b> é 😀"}],"temperature":0.2}`,
		`{"model": "m", "messages": [{"role": "system", "content": "a"}, {"role": "user", "content": "b"}, {"role": "assistant", "content": "c"}, {"role": "user", "content": "d"}], "max_tokens": 50}`,
		"{\"messages\":[\n  {\n\t\"role\" : \"user\" ,\r\n \"content\" : \"first\"\n  } , {\"role\":\"assistant\",\"content\":\"second\"}\n]}",
		// Merged turns, dropped blank text, system wherever it is.
		`{"messages":[{"role":"user","content":"a"},{"role":"developer","content":"d1"},{"role":"user","content":"b"},{"role":"assistant","content":"   "},{"role":"user","content":"c"},{"role":"system","content":"s2"}]}`,
		`{"messages":[{"role":"system","content":" "},{"role":"assistant","content":"only an assistant turn"}],"stop":["x"],"user":"u1","reasoning_effort":"low"}`,
		`{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":"auto"}`,
		`{"messages":[{"role":"user","content":"line` + "\u2028" + `sep"}]}`,
	}
	for _, body := range bodies {
		if !sameAnthropicRequest(t, []byte(body)) {
			t.Errorf("the fast path did not read %s", body)
		}
	}
}

// Whatever is not a plain text conversation the general path accepts
// goes to the general path, with its answer.
func TestAnthropicFastPathDeclines(t *testing.T) {
	bodies := []string{
		`{"messages":[{"role":"user","content":"a \"quoted\" word"}]}`,
		`{"messages":[{"role":"user","content":"tab\tescaped"}]}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"parts"}]}]}`,
		`{"messages":[{"role":"user","content":"x","name":"n"}]}`,
		`{"messages":[{"content":"the text first","role":"user"}]}`,
		`{"messages":[{"role":"user","role":"assistant","content":"x"}]}`,
		`{"messages":[{"role":"user","content":"x","content":"y"}]}`,
		`{"messages":[{"role":"tool","content":"x"}]}`,
		`{"messages":[{"role":"function","content":"x"}]}`,
		`{"messages":[{"role":"","content":"x"}]}`,
		`{"messages":[{"role":"User","content":"x"}]}`,
		`{"messages":[{"Role":"user","content":"x"}]}`,
		`{"messages":[{"role":"user"}]}`,
		`{"messages":[{"role":"user","content":null}]}`,
		`{"messages":[{"role":"assistant","content":null}]}`,
		`{"messages":[{"role":"system","content":"only system"}]}`,
		`{"messages":[{"role":"user","content":"  "}]}`,
		`{"messages":[]}`,
		`{"messages":{}}`,
		`{"messages":"x"}`,
		`{"messages":[{"role":"user","content":"x"},"y"]}`,
		`{"messages":[{"r\u006fle":"user","content":"x"}]}`,
		`{"messages":[{"role":"us\u0065r","content":"x"}]}`,
		`{"messages":[{"role":"user","content":"bad ` + "\xff" + ` byte"}]}`,
		`{"messages":[{"role":"user","content":"x"}],"n":2}`,
		`{"messages":[{"role":"user","content":"x"}],"max_tokens":0}`,
		`{"model":"m"}`,
	}
	for _, body := range bodies {
		if sameAnthropicRequest(t, []byte(body)) {
			t.Errorf("the fast path read %s", body)
		}
	}
}

// FuzzAnthropicFastMessages holds the fast path to the general one: for
// any request, the same error or the same request (as JSON values).
func FuzzAnthropicFastMessages(f *testing.F) {
	seeds := []string{
		`{"model":"m","stream":true,"messages":[{"role":"system","content":"Be terse."},{"role":"user","content":"` + strings.Repeat("lorem ipsum ", 20) + `"}],"temperature":0.2}`,
		`{"messages": [{"role": "user", "content": "a"}, {"content": "b", "role": "assistant"}, {"role": "user", "content": " "}]}`,
		`{"messages":[{"role":"developer","content":"d"},{"role":"user","content":"u"},{"role":"system","content":"s"},{"role":"user","content":"v"}]}`,
		`{"messages":[{"role":"user","content":"a\nb"}]}`,
		`{"messages":[{"role":"assistant","content":"x","tool_calls":[]}]}`,
		`{"messages":[{"role":"user","content":"` + "\u00a0\u0085" + `"}]}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		sameAnthropicRequest(t, body)
	})
}
