package translate

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"testing"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

func TestHubFromOllamaEmbed(t *testing.T) {
	cases := []struct {
		name   string
		legacy bool
		in     string
		want   string
	}{
		{"string_input", false, `{"model":"all-minilm","input":"Why is the sky <blue>?"}`,
			`{"model":"all-minilm","input":"Why is the sky <blue>?","encoding_format":"float"}`},
		{"array_input_dimensions_and_ignored_keys", false,
			`{"model":"m","input":["a","b"],"truncate":false,"dimensions":384,"options":{"num_ctx":512},"keep_alive":"5m"}`,
			`{"model":"m","input":["a","b"],"dimensions":384,"encoding_format":"float"}`},
		{"legacy_prompt", true, `{"model":"m","prompt":"hello","options":{"temperature":0},"keep_alive":-1}`,
			`{"model":"m","input":"hello","encoding_format":"float"}`},
	}
	for i := 0; i < len(cases); i++ {
		tc := cases[i]
		t.Run(tc.name, func(t *testing.T) {
			out, model, e := HubFromOllamaEmbed([]byte(tc.in), tc.legacy)
			if e != nil {
				t.Fatalf("error %+v", e)
			}
			if string(out) != tc.want || model == "" {
				t.Errorf("got %s (model %q)\nwant %s", out, model, tc.want)
			}
		})
	}
	bad := []struct {
		name    string
		legacy  bool
		in      string
		message string
	}{
		{"not_an_object", false, `[]`, "request body must be a JSON object"},
		{"no_model", false, `{"input":"x"}`, `"model" is required`},
		{"no_input", false, `{"model":"m"}`, `"input" is required`},
		{"empty_input", false, `{"model":"m","input":[]}`, `"input" must not be empty`},
		{"token_input", false, `{"model":"m","input":[1,2]}`, `"input" must be a string or an array of strings`},
		{"object_input", false, `{"model":"m","input":{}}`, `"input" must be a string or an array of strings`},
		{"dimensions_zero", false, `{"model":"m","input":"x","dimensions":0}`, `"dimensions" must be at least 1`},
		{"dimensions_string", false, `{"model":"m","input":"x","dimensions":"8"}`, `"dimensions" must be an integer`},
		{"legacy_no_prompt", true, `{"model":"m","input":"x"}`, `"prompt" is required`},
		{"legacy_prompt_not_a_string", true, `{"model":"m","prompt":["x"]}`, `"prompt" must be a string`},
	}
	for i := 0; i < len(bad); i++ {
		tc := bad[i]
		out, _, e := HubFromOllamaEmbed([]byte(tc.in), tc.legacy)
		if e == nil || out != nil || e.Status != 400 || e.Message != tc.message {
			t.Errorf("%s: got %s, %+v; want a 400 %q", tc.name, out, e, tc.message)
		}
	}
}

// ollamaBase64Vector is values as OpenAI's base64 encoding_format.
func ollamaBase64Vector(values []float32) string {
	buf := make([]byte, 4*len(values))
	for i := 0; i < len(values); i++ {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(values[i]))
	}
	return base64.StdEncoding.EncodeToString(buf)
}

func TestOllamaFromHubEmbeddings(t *testing.T) {
	const usage = `"usage":{"prompt_tokens":8,"total_tokens":8}`
	cases := []struct {
		name   string
		legacy bool
		hub    string
		want   string
		usage  Usage
	}{
		{"float_text_kept", false,
			`{"object":"list","model":"text-embedding-3-small","data":[{"object":"embedding","index":0,"embedding":[0.0100, -1.7E-3, 12345678901234567890, 0]}],` + usage + `}`,
			`{"model":"all-minilm","embeddings":[[0.0100,-1.7E-3,12345678901234567890,0]],"total_duration":500000000,"load_duration":0,"prompt_eval_count":8}`,
			Usage{PromptTokens: 8, Reported: true}},
		{"index_order", false,
			`{"data":[{"index":1,"embedding":[2]},{"index":0,"embedding":[1]},{"index":2,"embedding":[]}],` + usage + `}`,
			`{"model":"all-minilm","embeddings":[[1],[2],[]],"total_duration":500000000,"load_duration":0,"prompt_eval_count":8}`,
			Usage{PromptTokens: 8, Reported: true}},
		{"indexes_not_a_permutation_keep_the_order", false,
			`{"data":[{"embedding":[2]},{"embedding":[1]}]}`,
			`{"model":"all-minilm","embeddings":[[2],[1]],"total_duration":500000000,"load_duration":0,"prompt_eval_count":0}`,
			Usage{}},
		{"base64_decoded", false,
			`{"data":[{"index":0,"embedding":"` + ollamaBase64Vector([]float32{0.5, -0.25, 1e-7, 3}) + `"}],"usage":{"prompt_tokens":0,"total_tokens":3}}`,
			`{"model":"all-minilm","embeddings":[[0.5,-0.25,1e-07,3]],"total_duration":500000000,"load_duration":0,"prompt_eval_count":3}`,
			Usage{PromptTokens: 3, Reported: true}},
		{"zero_usage_is_not_reported", false,
			`{"data":[{"index":0,"embedding":[1]}],"usage":{"prompt_tokens":0,"total_tokens":0}}`,
			`{"model":"all-minilm","embeddings":[[1]],"total_duration":500000000,"load_duration":0,"prompt_eval_count":0}`,
			Usage{}},
		{"empty_data", false, `{"data":[]}`,
			`{"model":"all-minilm","embeddings":[],"total_duration":500000000,"load_duration":0,"prompt_eval_count":0}`, Usage{}},
		{"legacy", true, `{"data":[{"index":0,"embedding":[0.0100,-0.0017]}],` + usage + `}`,
			`{"embedding":[0.0100,-0.0017]}`, Usage{PromptTokens: 8, Reported: true}},
		{"legacy_empty", true, `{"data":[]}`, `{"embedding":[]}`, Usage{}},
	}
	for i := 0; i < len(cases); i++ {
		tc := cases[i]
		t.Run(tc.name, func(t *testing.T) {
			out, u, e := OllamaFromHubEmbeddings([]byte(tc.hub), tc.legacy, "all-minilm", ollamaTestTimes)
			if e != nil {
				t.Fatalf("error %+v", e)
			}
			if string(out) != tc.want {
				t.Errorf("got\n%s\nwant\n%s", out, tc.want)
			}
			if u != tc.usage {
				t.Errorf("usage %+v, want %+v", u, tc.usage)
			}
		})
	}
	bad := []struct {
		name   string
		hub    string
		status int
		class  apierr.Class
	}{
		{"error_body", `{"error":{"message":"Slow down","code":"rate_limit_exceeded"}}`, 429, apierr.ClassRateLimited},
		{"not_json", `Bad Gateway`, 502, apierr.ClassBadResponse},
		{"no_data", `{"object":"list"}`, 502, apierr.ClassBadResponse},
		{"strings_in_vector", `{"data":[{"embedding":["1"]}]}`, 502, apierr.ClassBadResponse},
		{"bad_base64", `{"data":[{"embedding":"***"}]}`, 502, apierr.ClassBadResponse},
		{"base64_not_float32s", `{"data":[{"embedding":"AAA="}]}`, 502, apierr.ClassBadResponse},
		{"base64_nan", `{"data":[{"embedding":"` + ollamaBase64Vector([]float32{float32(math.NaN())}) + `"}]}`, 502, apierr.ClassBadResponse},
		{"vector_object", `{"data":[{"embedding":{}}]}`, 502, apierr.ClassBadResponse},
	}
	for i := 0; i < len(bad); i++ {
		tc := bad[i]
		out, _, e := OllamaFromHubEmbeddings([]byte(tc.hub), false, "m", ollamaTestTimes)
		if e == nil || out != nil || e.Status != tc.status || e.Class != tc.class {
			t.Errorf("%s: got %s, %+v; want %d class %d", tc.name, out, e, tc.status, tc.class)
		}
	}
}
