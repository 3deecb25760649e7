package mockupstream

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

func newServer(t *testing.T, opts Options) (*Server, *httptest.Server) {
	t.Helper()
	m := New(opts)
	ts := httptest.NewServer(m)
	t.Cleanup(ts.Close)
	return m, ts
}

func do(t *testing.T, method, url, body string, headers map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// sseEvents splits an SSE body into the payloads of its data: lines.
func sseEvents(t *testing.T, body []byte) []string {
	t.Helper()
	var out []string
	for _, ev := range strings.Split(string(body), "\n\n") {
		if ev == "" {
			continue
		}
		if !strings.HasPrefix(ev, "data: ") || strings.Contains(ev, "\n") {
			t.Fatalf("malformed SSE event %q", ev)
		}
		out = append(out, strings.TrimPrefix(ev, "data: "))
	}
	return out
}

func TestModels(t *testing.T) {
	_, ts := newServer(t, Options{Models: []string{"a", "b"}})
	resp, body := do(t, "GET", ts.URL+"/v1/models", "", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	want := `{"object":"list","data":[{"id":"a","object":"model","created":1735689600,"owned_by":"mock"},{"id":"b","object":"model","created":1735689600,"owned_by":"mock"}]}`
	if string(body) != want {
		t.Fatalf("body\n got %s\nwant %s", body, want)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("content-type %q", ct)
	}

	resp, body = do(t, "GET", ts.URL+"/v1/models/b", "", nil)
	if resp.StatusCode != 200 || string(body) != `{"id":"b","object":"model","created":1735689600,"owned_by":"mock"}` {
		t.Fatalf("model b: %d %s", resp.StatusCode, body)
	}
	resp, body = do(t, "GET", ts.URL+"/v1/models/zz", "", nil)
	if resp.StatusCode != 404 || !strings.Contains(string(body), `"code":"model_not_found"`) {
		t.Fatalf("model zz: %d %s", resp.StatusCode, body)
	}
}

func TestChatNonStreaming(t *testing.T) {
	_, ts := newServer(t, Options{Chunks: 3})
	reqBody := `{"model":"gpt-5-mini","messages":[{"role":"system","content":"Be terse."},{"role":"user","content":[{"type":"text","text":"say hi now"}]}]}`
	resp, body := do(t, "POST", ts.URL+"/v1/chat/completions", reqBody, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	want := `{"id":"chatcmpl-mock-1","object":"chat.completion","created":1735689600,"model":"gpt-5-mini","system_fingerprint":"fp_mock","choices":[{"index":0,"message":{"role":"assistant","content":"Hello from mock part 1 part 2","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}`
	if string(body) != want {
		t.Fatalf("body\n got %s\nwant %s", body, want)
	}
	if resp.Header.Get("X-Request-Id") != "req_mock_1" {
		t.Fatalf("x-request-id %q", resp.Header.Get("X-Request-Id"))
	}
	if ReplyText(3) != "Hello from mock part 1 part 2" {
		t.Fatalf("ReplyText(3) = %q", ReplyText(3))
	}
}

func TestChatStreaming(t *testing.T) {
	cases := []struct {
		name    string
		body    string
		headers map[string]string
		want    []string
	}{
		{
			name: "no usage",
			body: `{"model":"m1","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			want: []string{
				`{"id":"chatcmpl-mock-1","object":"chat.completion.chunk","created":1735689600,"model":"m1","system_fingerprint":"fp_mock","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
				`{"id":"chatcmpl-mock-1","object":"chat.completion.chunk","created":1735689600,"model":"m1","system_fingerprint":"fp_mock","choices":[{"index":0,"delta":{"content":"Hello from mock"},"logprobs":null,"finish_reason":null}]}`,
				`{"id":"chatcmpl-mock-1","object":"chat.completion.chunk","created":1735689600,"model":"m1","system_fingerprint":"fp_mock","choices":[{"index":0,"delta":{"content":" part 1"},"logprobs":null,"finish_reason":null}]}`,
				`{"id":"chatcmpl-mock-1","object":"chat.completion.chunk","created":1735689600,"model":"m1","system_fingerprint":"fp_mock","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}`,
				`[DONE]`,
			},
		},
		{
			name: "include usage",
			body: `{"model":"m2","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi there"}]}`,
			want: []string{
				`{"id":"chatcmpl-mock-1","object":"chat.completion.chunk","created":1735689600,"model":"m2","system_fingerprint":"fp_mock","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":null}`,
				`{"id":"chatcmpl-mock-1","object":"chat.completion.chunk","created":1735689600,"model":"m2","system_fingerprint":"fp_mock","choices":[{"index":0,"delta":{"content":"Hello from mock"},"logprobs":null,"finish_reason":null}],"usage":null}`,
				`{"id":"chatcmpl-mock-1","object":"chat.completion.chunk","created":1735689600,"model":"m2","system_fingerprint":"fp_mock","choices":[{"index":0,"delta":{"content":" part 1"},"logprobs":null,"finish_reason":null}],"usage":null}`,
				`{"id":"chatcmpl-mock-1","object":"chat.completion.chunk","created":1735689600,"model":"m2","system_fingerprint":"fp_mock","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}`,
				`{"id":"chatcmpl-mock-1","object":"chat.completion.chunk","created":1735689600,"model":"m2","system_fingerprint":"fp_mock","choices":[],"usage":{"prompt_tokens":2,"completion_tokens":2,"total_tokens":4}}`,
				`[DONE]`,
			},
		},
		{
			name:    "chunks header",
			body:    `{"model":"m3","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			headers: map[string]string{HeaderChunks: "0", HeaderChunkDelay: "1ms"},
			want: []string{
				`{"id":"chatcmpl-mock-1","object":"chat.completion.chunk","created":1735689600,"model":"m3","system_fingerprint":"fp_mock","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
				`{"id":"chatcmpl-mock-1","object":"chat.completion.chunk","created":1735689600,"model":"m3","system_fingerprint":"fp_mock","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}`,
				`[DONE]`,
			},
		},
		{
			name:    "error after",
			body:    `{"model":"m4","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			headers: map[string]string{HeaderErrorAfter: "2"},
			want: []string{
				`{"id":"chatcmpl-mock-1","object":"chat.completion.chunk","created":1735689600,"model":"m4","system_fingerprint":"fp_mock","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
				`{"id":"chatcmpl-mock-1","object":"chat.completion.chunk","created":1735689600,"model":"m4","system_fingerprint":"fp_mock","choices":[{"index":0,"delta":{"content":"Hello from mock"},"logprobs":null,"finish_reason":null}]}`,
				`{"error":{"message":"mock: injected mid-stream error","type":"server_error","param":null,"code":null}}`,
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, ts := newServer(t, Options{Chunks: 2})
			resp, body := do(t, "POST", ts.URL+"/v1/chat/completions", tc.body, tc.headers)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
				t.Fatalf("content-type %q", ct)
			}
			got := sseEvents(t, body)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d events, want %d:\n%s", len(got), len(tc.want), body)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("event %d\n got %s\nwant %s", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestChatStreamingWithDelay(t *testing.T) {
	// A per-request delay still yields the whole sequence (TestStallAfter
	// shows events are flushed one by one).
	_, ts := newServer(t, Options{Chunks: 3})
	req, _ := http.NewRequest("POST", ts.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`))
	req.Header.Set(HeaderChunkDelay, "50ms")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	n := 0
	for {
		line, err := br.ReadString('\n')
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(line, "data: ") {
			n++
		}
	}
	if n != 6 { // role, 3 content, finish, [DONE]
		t.Fatalf("got %d events, want 6", n)
	}
}

func TestStallAfter(t *testing.T) {
	_, ts := newServer(t, Options{Chunks: 5})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`))
	req.Header.Set(HeaderStallAfter, "2")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	br := bufio.NewReader(resp.Body)
	var events []string
	for len(events) < 2 {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("after %d events: %v", len(events), err)
		}
		if strings.HasPrefix(line, "data: ") {
			events = append(events, line)
		}
	}
	// The third event must not come; the read is unblocked by cancel.
	got := make(chan string, 1)
	go func() {
		line, _ := br.ReadString('\n')
		for line == "\n" {
			line, _ = br.ReadString('\n')
		}
		got <- line
	}()
	select {
	case line := <-got:
		t.Fatalf("stalled stream delivered %q", line)
	case <-time.After(200 * time.Millisecond):
	}
	cancel()
	if line := <-got; strings.HasPrefix(line, "data: ") {
		t.Fatalf("stalled stream delivered %q after cancel", line)
	}
	if !strings.Contains(events[1], `"content":"Hello from mock"`) {
		t.Fatalf("second event %q", events[1])
	}
}

func TestInjectedStatus(t *testing.T) {
	cases := []struct {
		status int
		retry  string
		want   string
	}{
		{429, "3", `{"error":{"message":"mock: injected status 429","type":"requests","param":null,"code":"rate_limit_exceeded"}}`},
		{401, "", `{"error":{"message":"mock: injected status 401","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`},
		{500, "", `{"error":{"message":"mock: injected status 500","type":"server_error","param":null,"code":null}}`},
		{400, "", `{"error":{"message":"mock: injected status 400","type":"invalid_request_error","param":null,"code":null}}`},
	}
	for _, tc := range cases {
		t.Run(strconv.Itoa(tc.status), func(t *testing.T) {
			_, ts := newServer(t, Options{})
			h := map[string]string{HeaderStatus: strconv.Itoa(tc.status)}
			if tc.retry != "" {
				h[HeaderRetryAfter] = tc.retry
			}
			for _, path := range []string{"/v1/chat/completions", "/v1/embeddings", "/v1/models"} {
				method := "POST"
				if path == "/v1/models" {
					method = "GET"
				}
				resp, body := do(t, method, ts.URL+path, `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`, h)
				if resp.StatusCode != tc.status {
					t.Fatalf("%s: status %d, want %d", path, resp.StatusCode, tc.status)
				}
				if string(body) != tc.want {
					t.Fatalf("%s: body\n got %s\nwant %s", path, body, tc.want)
				}
				if got := resp.Header.Get("Retry-After"); got != tc.retry {
					t.Fatalf("%s: retry-after %q, want %q", path, got, tc.retry)
				}
			}
		})
	}
}

func TestBadRequests(t *testing.T) {
	cases := []struct {
		name, method, path, body string
		strict                   bool
		status                   int
		contains                 string
	}{
		{"bad json", "POST", "/v1/chat/completions", `{"model":`, false, 400, "invalid JSON"},
		{"no model", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}]}`, false, 400, "model parameter"},
		{"no messages", "POST", "/v1/chat/completions", `{"model":"m"}`, false, 400, "messages"},
		{"strict unknown model", "POST", "/v1/chat/completions", `{"model":"nope","messages":[{"role":"user","content":"x"}]}`, true, 404, "model_not_found"},
		{"lenient unknown model", "POST", "/v1/chat/completions", `{"model":"nope","messages":[{"role":"user","content":"x"}]}`, false, 200, `"model":"nope"`},
		{"wrong method", "GET", "/v1/chat/completions", ``, false, 405, "not allowed"},
		{"unknown path", "POST", "/v1/nothing", `{}`, false, 404, "unknown_url"},
		{"embeddings no input", "POST", "/v1/embeddings", `{"model":"e"}`, false, 400, "input"},
		{"embeddings bad format", "POST", "/v1/embeddings", `{"model":"e","input":"x","encoding_format":"hex"}`, false, 400, "encoding_format"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, ts := newServer(t, Options{StrictModels: tc.strict})
			resp, body := do(t, tc.method, ts.URL+tc.path, tc.body, nil)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			if !strings.Contains(string(body), tc.contains) {
				t.Fatalf("body %s does not contain %q", body, tc.contains)
			}
			if tc.status != 200 {
				var env struct {
					Error struct {
						Message string `json:"message"`
						Type    string `json:"type"`
					} `json:"error"`
				}
				if err := json.Unmarshal(body, &env); err != nil || env.Error.Message == "" || env.Error.Type == "" {
					t.Fatalf("not an OpenAI error envelope: %s", body)
				}
			}
		})
	}
}

func TestEmbeddings(t *testing.T) {
	type emb struct {
		Object string `json:"object"`
		Model  string `json:"model"`
		Data   []struct {
			Object    string          `json:"object"`
			Index     int             `json:"index"`
			Embedding json.RawMessage `json:"embedding"`
		} `json:"data"`
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
			TotalTokens  int `json:"total_tokens"`
		} `json:"usage"`
	}
	cases := []struct {
		name    string
		body    string
		keys    []string
		tokens  int
		dims    int
		base64  bool
		rawWant string
	}{
		{name: "string", body: `{"model":"e","input":"hello world"}`, keys: []string{"hello world"}, tokens: 2, dims: 4},
		{name: "strings", body: `{"model":"e","input":["a","b c"]}`, keys: []string{"a", "b c"}, tokens: 3, dims: 4},
		{name: "tokens", body: `{"model":"e","input":[1,2,3]}`, keys: []string{"[1,2,3]"}, tokens: 3, dims: 4},
		{name: "token lists", body: `{"model":"e","input":[[1,2],[3]]}`, keys: []string{"[1,2]", "[3]"}, tokens: 3, dims: 4},
		{name: "dimensions", body: `{"model":"e","input":"x","dimensions":6}`, keys: []string{"x"}, tokens: 1, dims: 6},
		{name: "base64", body: `{"model":"e","input":"x","encoding_format":"base64"}`, keys: []string{"x"}, tokens: 1, dims: 4, base64: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, ts := newServer(t, Options{Dimensions: 4})
			resp, body := do(t, "POST", ts.URL+"/v1/embeddings", tc.body, nil)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			var got emb
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			if got.Object != "list" || got.Model != "e" || len(got.Data) != len(tc.keys) {
				t.Fatalf("bad envelope: %s", body)
			}
			if got.Usage.PromptTokens != tc.tokens || got.Usage.TotalTokens != tc.tokens {
				t.Fatalf("usage %+v, want %d", got.Usage, tc.tokens)
			}
			for i, d := range got.Data {
				if d.Object != "embedding" || d.Index != i {
					t.Fatalf("data[%d] = %+v", i, d)
				}
				want := Vector(tc.keys[i], tc.dims)
				var vec []float32
				if tc.base64 {
					var s string
					if err := json.Unmarshal(d.Embedding, &s); err != nil {
						t.Fatal(err)
					}
					raw, err := base64.StdEncoding.DecodeString(s)
					if err != nil || len(raw) != 4*tc.dims {
						t.Fatalf("base64 %q: %v", s, err)
					}
					for j := 0; j < tc.dims; j++ {
						vec = append(vec, math.Float32frombits(binary.LittleEndian.Uint32(raw[4*j:])))
					}
				} else if err := json.Unmarshal(d.Embedding, &vec); err != nil {
					t.Fatal(err)
				}
				if len(vec) != len(want) {
					t.Fatalf("data[%d] has %d dims, want %d", i, len(vec), len(want))
				}
				for j := range vec {
					if vec[j] != want[j] {
						t.Fatalf("data[%d][%d] = %v, want %v", i, j, vec[j], want[j])
					}
				}
			}
		})
	}
}

func TestRecording(t *testing.T) {
	m, ts := newServer(t, Options{RecordLimit: 2})
	bodies := []string{
		`{"model":"a","messages":[{"role":"user","content":"1"}]}`,
		`{"model":"b","messages":[{"role":"user","content":"2"}],"x_unknown":{"n":12345678901234567890}}`,
		`{"model":"c","input":"3"}`,
	}
	paths := []string{"/v1/chat/completions", "/v1/chat/completions?beta=true", "/v1/embeddings"}
	for i, b := range bodies {
		resp, _ := do(t, "POST", ts.URL+paths[i], b, map[string]string{"Authorization": "Bearer k" + strconv.Itoa(i)})
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: status %d", i, resp.StatusCode)
		}
	}
	got := m.Requests()
	if len(got) != 2 {
		t.Fatalf("recorded %d, want 2 (limit)", len(got))
	}
	if string(got[0].Body) != bodies[1] || string(got[1].Body) != bodies[2] {
		t.Fatalf("bodies not byte-exact: %q %q", got[0].Body, got[1].Body)
	}
	if got[0].Path != "/v1/chat/completions" || got[0].RawQuery != "beta=true" || got[0].Method != "POST" {
		t.Fatalf("recorded %+v", got[0])
	}
	if got[1].Header.Get("Authorization") != "Bearer k2" {
		t.Fatalf("authorization %q", got[1].Header.Get("Authorization"))
	}
	if last, ok := m.LastRequest(); !ok || last.Path != "/v1/embeddings" {
		t.Fatalf("LastRequest = %+v, %v", last, ok)
	}
	if m.Total() != 3 {
		t.Fatalf("Total = %d", m.Total())
	}
	m.Reset()
	if len(m.Requests()) != 0 || m.Total() != 0 {
		t.Fatal("Reset did not clear")
	}

	off, ts2 := newServer(t, Options{RecordLimit: -1})
	do(t, "GET", ts2.URL+"/v1/models", "", nil)
	if len(off.Requests()) != 0 || off.Total() != 1 {
		t.Fatalf("disabled recording: %d recorded, total %d", len(off.Requests()), off.Total())
	}
}

func TestDelayHoldsTheAnswer(t *testing.T) {
	const d = 300 * time.Millisecond
	m, ts := newServer(t, Options{Chunks: 2})
	chat := `{"model":"m","messages":[{"role":"user","content":"a b"}]}`
	want := `"usage":{"prompt_tokens":2,"completion_tokens":2,"total_tokens":4}`
	cases := []struct {
		name, url string
		headers   map[string]string
	}{
		{"header", ts.URL + "/v1/chat/completions", map[string]string{HeaderDelay: d.String()}},
		{"path knob", ts.URL + "/x-mock-delay/" + d.String() + "/v1/chat/completions", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			resp, body := do(t, "POST", tc.url, chat, tc.headers)
			if elapsed := time.Since(start); elapsed < d {
				t.Fatalf("answered after %v, want at least %v", elapsed, d)
			}
			if resp.StatusCode != 200 || !strings.Contains(string(body), want) {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
		})
	}
	if m.Total() != 2 {
		t.Fatalf("Total = %d, want 2", m.Total())
	}
}

func TestDelayCountsFirstAndEndsWithTheClient(t *testing.T) {
	m := New(Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := httptest.NewRequest("POST", "/v1/chat/completions",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"x"}]}`)).WithContext(ctx)
	req.Header.Set(HeaderDelay, "1h")
	rec := httptest.NewRecorder()
	served := make(chan struct{})
	go func() {
		m.ServeHTTP(rec, req)
		close(served)
	}()
	// The held request is already counted.
	deadline := time.Now().Add(5 * time.Second)
	for m.Total() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the held request was not counted within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case <-served:
		t.Fatal("answered during a 1h delay")
	default:
	}
	cancel()
	select {
	case <-served:
	case <-time.After(5 * time.Second):
		t.Fatal("the wait did not end when the client went away")
	}
	if rec.Body.Len() != 0 || rec.Header().Get("Content-Type") != "" {
		t.Fatalf("a request whose client went away was answered: %q %v", rec.Body.String(), rec.Header())
	}
}

func TestDelayMalformed(t *testing.T) {
	_, ts := newServer(t, Options{})
	cases := []struct {
		name, path, body string
		headers          map[string]string
		want             string
	}{
		{"openai", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"x"}]}`,
			map[string]string{HeaderDelay: "soon"},
			`{"error":{"message":"mock: bad X-Mock-Delay header","type":"invalid_request_error","param":null,"code":null}}`},
		{"anthropic", "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`,
			map[string]string{HeaderDelay: "-1s", "X-Api-Key": "k", AnthropicVersionHeader: "2023-06-01"},
			`{"type":"error","error":{"type":"invalid_request_error","message":"mock: bad X-Mock-Delay header"},"request_id":"req_mock_2"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := do(t, "POST", ts.URL+tc.path, tc.body, tc.headers)
			if resp.StatusCode != 400 || string(body) != tc.want {
				t.Fatalf("status %d, body\n got %s\nwant %s", resp.StatusCode, body, tc.want)
			}
		})
	}
}
