package translate

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"strings"
	"testing"
)

// Gemini embeddings and Imagen translation.

func TestGeminiEmbedRequest(t *testing.T) {
	cases := []struct {
		name, body, model, want string
		batch                   bool
	}{
		{"single", `{"model":"emb","input":"hello <world>","encoding_format":"float","user":"u"}`, "gemini-embedding-001",
			`{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"hello <world>"}]}}`, false},
		{"single with dimensions, base64 accepted", `{"model":"emb","input":"hi","dimensions":768,"encoding_format":"base64"}`, "models/text-embedding-004",
			`{"model":"models/text-embedding-004","content":{"parts":[{"text":"hi"}]},"outputDimensionality":768}`, false},
		{"batch", `{"model":"emb","input":["a","b"],"dimensions":256}`, "gemini-embedding-001",
			`{"requests":[{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"a"}]},"outputDimensionality":256},` +
				`{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"b"}]},"outputDimensionality":256}]}`, true},
		{"batch of one", `{"model":"emb","input":["only"]}`, "e",
			`{"requests":[{"model":"models/e","content":{"parts":[{"text":"only"}]}}]}`, true},
	}
	for i := 0; i < len(cases); i++ {
		c := cases[i]
		out, batch, e := GeminiEmbedRequest([]byte(c.body), c.model)
		if e != nil {
			t.Errorf("%s: %v", c.name, e)
			continue
		}
		if string(out) != c.want || batch != c.batch {
			t.Errorf("%s:\n got %s (batch %v)\nwant %s (batch %v)", c.name, out, batch, c.want, c.batch)
		}
	}
	errs := []struct {
		body, code, has string
	}{
		{`x`, "invalid_json", "JSON"},
		{`{"model":"e"}`, "invalid_request", `"input"`},
		{`{"model":"e","input":null}`, "invalid_request", `"input"`},
		{`{"model":"e","input":""}`, "invalid_request", `"input"`},
		{`{"model":"e","input":[]}`, "invalid_request", `"input"`},
		{`{"model":"e","input":["a",""]}`, "invalid_request", `input[1]`},
		{`{"model":"e","input":5}`, "invalid_request", `"input"`},
		{`{"model":"e","input":[1,2,3]}`, "unsupported_parameter", `"input"`},
		{`{"model":"e","input":[[1,2],[3]]}`, "unsupported_parameter", `"input"`},
		{`{"model":"e","input":"a","encoding_format":"int8"}`, "unsupported_value", `"encoding_format"`},
		{`{"model":"e","input":"a","dimensions":0}`, "invalid_request", `"dimensions"`},
		{`{"model":"e","input":"a","dimensions":"256"}`, "invalid_request", `"dimensions"`},
	}
	for i := 0; i < len(errs); i++ {
		c := errs[i]
		_, _, e := GeminiEmbedRequest([]byte(c.body), "e")
		if e == nil || e.Status != 400 || e.Code != c.code || !strings.Contains(e.Message, c.has) {
			t.Errorf("%s: %+v, want 400 %s containing %q", c.body, e, c.code, c.has)
		}
	}
}

func TestGeminiEmbedResponse(t *testing.T) {
	tc := geminiTestContext()
	out, u, e := GeminiEmbedResponse([]byte("{\n  \"embedding\": {\n    \"values\": [\n      0.0130000000000000001,\n      -8e-3,\n      1E+2,\n      -0.0, 12\n    ]\n  }\n}\n"), tc, false)
	want := `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.0130000000000000001,-8e-3,1E+2,-0.0,12]}],` +
		`"model":"gemini-alias","usage":{"prompt_tokens":0,"total_tokens":0}}`
	if e != nil || string(out) != want || u != (Usage{}) {
		t.Errorf("single:\n got %s %+v %v\nwant %s", out, u, e, want)
	}
	out, u, e = GeminiEmbedResponse([]byte(`{"embeddings":[{"values":[0.1,0.2]},{"values":[-0.30000000000000004]}]}`), tc, true)
	want = `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,0.2]},{"object":"embedding","index":1,"embedding":[-0.30000000000000004]}],` +
		`"model":"gemini-alias","usage":{"prompt_tokens":0,"total_tokens":0}}`
	if e != nil || string(out) != want || u.Reported {
		t.Errorf("batch:\n got %s %+v %v\nwant %s", out, u, e, want)
	}
	bad := []struct {
		body  string
		batch bool
		code  string
	}{
		{`x`, false, "upstream_bad_response"},
		{`{}`, false, "upstream_bad_response"},
		{`{}`, true, "upstream_bad_response"},
		{`{"embedding":{"values":[1]}}`, true, "upstream_bad_response"},
		{`{"embeddings":[{"values":[1]}]}`, false, "upstream_bad_response"},
		{`{"embedding":{}}`, false, "upstream_bad_response"},
		{`{"embedding":{"values":[null]}}`, false, "upstream_bad_response"},
		{`{"embedding":{"values":["x"]}}`, false, "upstream_bad_response"},
		{`{"embedding":{"values":[true]}}`, false, "upstream_bad_response"},
		{`{"embeddings":[{"values":[1]},{}]}`, true, "upstream_bad_response"},
		{`{"error":{"code":400,"message":"bad","status":"INVALID_ARGUMENT"}}`, false, "upstream_error"},
	}
	for i := 0; i < len(bad); i++ {
		_, _, e := GeminiEmbedResponse([]byte(bad[i].body), tc, bad[i].batch)
		if e == nil || e.Status != 502 || e.Code != bad[i].code {
			t.Errorf("%s (batch %v): %+v, want 502 %s", bad[i].body, bad[i].batch, e, bad[i].code)
		}
	}
}

func TestGeminiEmbedBase64(t *testing.T) {
	in := []byte(`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,-2,1e-3]}],"model":"gemini-alias","usage":{"prompt_tokens":0,"total_tokens":0}}`)
	out, e := GeminiEmbedBase64(in)
	if e != nil {
		t.Fatal(e)
	}
	buf := make([]byte, 12)
	vals := []float32{0.5, -2, 1e-3}
	for i := 0; i < len(vals); i++ {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(vals[i]))
	}
	want := `{"object":"list","data":[{"object":"embedding","index":0,"embedding":"` + base64.StdEncoding.EncodeToString(buf) +
		`"}],"model":"gemini-alias","usage":{"prompt_tokens":0,"total_tokens":0}}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
	if _, e := GeminiEmbedBase64([]byte(`{"data":[{"embedding":["x"]}]}`)); e == nil {
		t.Error("a non-number value was encoded")
	}
	if !GeminiEmbedWantsBase64([]byte(`{"input":"a","encoding_format":"base64"}`)) ||
		GeminiEmbedWantsBase64([]byte(`{"input":"a","encoding_format":"float"}`)) || GeminiEmbedWantsBase64([]byte(`{"input":"a"}`)) {
		t.Error("geminiEmbedWantsBase64")
	}
}

// ---------------------------------------------------------------------
// Images

func TestGeminiImageRequest(t *testing.T) {
	ok := []struct {
		body, want string
	}{
		{`{"model":"imagen","prompt":"a watercolor fox"}`, `{"instances":[{"prompt":"a watercolor fox"}],"parameters":{"sampleCount":1,"aspectRatio":"1:1"}}`},
		{`{"model":"imagen","prompt":"fox","n":3,"size":"1792x1024","response_format":"b64_json","quality":null,"style":"","user":"u"}`,
			`{"instances":[{"prompt":"fox"}],"parameters":{"sampleCount":3,"aspectRatio":"16:9"}}`},
		{`{"model":"imagen","prompt":"fox","size":"1024x1792","quality":false}`, `{"instances":[{"prompt":"fox"}],"parameters":{"sampleCount":1,"aspectRatio":"9:16"}}`},
		{`{"model":"imagen","prompt":"fox","size":"512x512","n":null,"response_format":null}`, `{"instances":[{"prompt":"fox"}],"parameters":{"sampleCount":1,"aspectRatio":"1:1"}}`},
		{`{"model":"imagen","prompt":"<fox & hen>","size":"1024x1024"}`, `{"instances":[{"prompt":"<fox & hen>"}],"parameters":{"sampleCount":1,"aspectRatio":"1:1"}}`},
	}
	for i := 0; i < len(ok); i++ {
		out, e := GeminiImageRequest([]byte(ok[i].body))
		if e != nil || string(out) != ok[i].want {
			t.Errorf("%s:\n got %s %v\nwant %s", ok[i].body, out, e, ok[i].want)
		}
	}
	bad := []struct {
		body, code, has string
	}{
		{`x`, "invalid_json", "JSON"},
		{`{"model":"imagen"}`, "invalid_request", `"prompt"`},
		{`{"model":"imagen","prompt":""}`, "invalid_request", `"prompt"`},
		{`{"model":"imagen","prompt":"  "}`, "invalid_request", `"prompt"`},
		{`{"model":"imagen","prompt":5}`, "invalid_request", `"prompt"`},
		{`{"model":"imagen","prompt":"fox","size":"256x256"}`, "unsupported_value", `"size"`},
		{`{"model":"imagen","prompt":"fox","size":"auto"}`, "unsupported_value", `"size"`},
		{`{"model":"imagen","prompt":"fox","size":""}`, "unsupported_value", `"size"`},
		{`{"model":"imagen","prompt":"fox","size":1024}`, "invalid_request", `"size"`},
		{`{"model":"imagen","prompt":"fox","response_format":"url"}`, "unsupported_parameter", `"response_format"`},
		{`{"model":"imagen","prompt":"fox","response_format":"png"}`, "unsupported_value", `"response_format"`},
		{`{"model":"imagen","prompt":"fox","quality":"hd"}`, "unsupported_parameter", `"quality"`},
		{`{"model":"imagen","prompt":"fox","quality":"standard"}`, "unsupported_parameter", `"quality"`},
		{`{"model":"imagen","prompt":"fox","style":"vivid"}`, "unsupported_parameter", `"style"`},
		{`{"model":"imagen","prompt":"fox","style":true}`, "unsupported_parameter", `"style"`},
		{`{"model":"imagen","prompt":"fox","n":0}`, "invalid_request", `"n"`},
		{`{"model":"imagen","prompt":"fox","n":"2"}`, "invalid_request", `"n"`},
	}
	for i := 0; i < len(bad); i++ {
		_, e := GeminiImageRequest([]byte(bad[i].body))
		if e == nil || e.Status != 400 || e.Code != bad[i].code || !strings.Contains(e.Message, bad[i].has) {
			t.Errorf("%s: %+v, want 400 %s containing %q", bad[i].body, e, bad[i].code, bad[i].has)
		}
	}
}

func TestGeminiImageResponse(t *testing.T) {
	out, e := GeminiImageResponse([]byte(`{"predictions":[{"bytesBase64Encoded":"iVBORw0KGgo=","mimeType":"image/png"},{"raiFilteredReason":"filtered"},{"bytesBase64Encoded":"AAAA","mimeType":"image/png"}]}`), 1700000000)
	want := `{"created":1700000000,"data":[{"b64_json":"iVBORw0KGgo="},{"b64_json":"AAAA"}]}`
	if e != nil || string(out) != want {
		t.Errorf("got %s %v\nwant %s", out, e, want)
	}
	cases := []struct {
		body   string
		status int
		code   string
	}{
		{``, 502, "upstream_bad_response"},
		{`[]`, 502, "upstream_bad_response"},
		{`null`, 502, "upstream_bad_response"},
		{`{"predictions":"x"}`, 502, "upstream_bad_response"},
		{`{"predictions":[{"bytesBase64Encoded":5}]}`, 502, "upstream_bad_response"},
		{`{"error":{"code":400,"message":"bad","status":"INVALID_ARGUMENT"}}`, 502, "upstream_error"},
		{`{}`, 400, "content_policy_violation"},
		{`{"predictions":[{"raiFilteredReason":"Unable to show generated images."}]}`, 400, "content_policy_violation"},
	}
	for i := 0; i < len(cases); i++ {
		_, e := GeminiImageResponse([]byte(cases[i].body), 1)
		if e == nil || e.Status != cases[i].status || e.Code != cases[i].code {
			t.Errorf("%q: %+v, want %d %s", cases[i].body, e, cases[i].status, cases[i].code)
		}
	}
}
