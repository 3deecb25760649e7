package gateway

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/translate"
)

// Every stream accounted: an openai-type stream whose client did not ask
// for usage asks for it, the client still gets the stream it asked for,
// and a stream that reports no usage is estimated from what it relayed.

// usageTestChunks is a realistic OpenAI chat stream, without the
// include_usage additions: a role chunk, text (with JSON escapes), a tool
// call's arguments, the finish chunk. Its text is 5 + 19 + 9 = 33 bytes
// as sent (escapes counted as sent): 9 estimated completion tokens.
var usageTestChunks = []string{
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1735689600,"model":"m1","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1735689600,"model":"m1","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"content":"Hello"},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1735689600,"model":"m1","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"content":" \"quoted\" world\n"},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1735689600,"model":"m1","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":1}"}}]},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1735689600,"model":"m1","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}`,
}

const (
	usageTestTextBytes = 33
	usageTestUsage     = `{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18}`
)

// openAIStream is the event stream OpenAI sends for chunks: with
// includeUsage, every chunk ends with "usage":null and a usage-only
// chunk (usage, unless empty) comes before [DONE].
func openAIStream(chunks []string, includeUsage bool, usage string) string {
	var b strings.Builder
	for _, c := range chunks {
		if includeUsage {
			c = c[:len(c)-1] + `,"usage":null}`
		}
		b.WriteString("data: " + c + "\n\n")
	}
	if includeUsage && usage != "" {
		b.WriteString(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1735689600,"model":"m1","system_fingerprint":"fp_1","choices":[],"usage":` + usage + "}\n\n")
	}
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

// openAIUpstream streams chunks like OpenAI: with the usage chunk when
// the request asks for it (honour), else never.
func openAIUpstream(honour bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		asked := honour && bytes.Contains(body, []byte(`"include_usage":true`))
		_, _ = io.WriteString(w, openAIStream(usageTestChunks, asked, usageTestUsage))
	}
}

func TestStreamUsageOutboundBody(t *testing.T) {
	ask := `"stream_options":{"include_usage":true}`
	cases := []struct {
		name, body, want string
	}{
		{"no_stream_options", `{"model":"m1","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			`{"model":"m1","stream":true,"messages":[{"role":"user","content":"hi"}],` + ask + `}`},
		{"spacing_kept", "{ \"model\" : \"m1\",\n \"stream\": true ,\"n\":1e0 }\n",
			"{ \"model\" : \"m1\",\n \"stream\": true ,\"n\":1e0 ," + ask + "}\n"},
		{"other_options", `{"model":"m1","stream":true,"stream_options":{"include_obfuscation":false},"n":1}`,
			`{"model":"m1","stream":true,"stream_options":{"include_obfuscation":false,"include_usage":true},"n":1}`},
		{"include_usage_false", `{"stream_options": {"include_usage": false}, "model":"m1", "stream":true}`,
			`{"stream_options": {"include_usage":true}, "model":"m1", "stream":true}`},
		{"stream_options_null", `{"model":"m1","stream":true,"stream_options":null}`,
			`{"model":"m1","stream":true,"stream_options":{"include_usage":true}}`},
		{"already_true", `{"model":"m1","stream":true,"stream_options": {"include_usage": true}}`,
			`{"model":"m1","stream":true,"stream_options": {"include_usage": true}}`},
		{"not_a_stream", `{"model":"m1","stream":false,"messages":[]}`, `{"model":"m1","stream":false,"messages":[]}`},
		{"model_rewritten", `{"model":"mock/m1","stream":true}`, `{"model":"m1","stream":true,` + ask + `}`},
		{"reasoning_rename", `{"model":"o3-mini","max_tokens":5,"stream":true}`,
			`{"model":"o3-mini","max_completion_tokens":5,"stream":true,` + ask + `}`},
		{"reasoning_rename_options", `{"model":"mock/o3-mini","stream_options":{},"max_tokens":5,"stream":true}`,
			`{"model":"o3-mini","stream_options":{"include_usage":true},"max_completion_tokens":5,"stream":true}`},
		{"reasoning_both_caps", `{"model":"o3-mini","max_tokens":5,"max_completion_tokens":6,"stream":true}`,
			`{"max_completion_tokens":6,"model":"o3-mini","stream":true,` + ask + `}`},
	}
	up := newFakeUpstream(t, openAIUpstream(true))
	cfg := strings.Replace(streamConfig(up.URL, ""), `"models": ["m1"]`, `"models": ["m1", "o3-mini"]`, 1)
	srv, _ := newTestGateway(t, cfg, nil)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, _, body := do(t, "POST", srv.URL+"/v1/chat/completions", testAliceKey, tc.body)
			if status != 200 {
				t.Fatalf("status %d: %s", status, body)
			}
			if got := string(up.last(t).body); got != tc.want {
				t.Fatalf("upstream got\n %s\nwant\n %s", got, tc.want)
			}
		})
	}
}

// relayUsageCase relays in through the relay relayEvents runs, with the
// events delivered in one Read (whole) or one per Read.
func relayUsageCase(t *testing.T, in string, trickled bool, strip bool) (string, *relayAccount, sseRelayResult) {
	t.Helper()
	var body io.Reader = strings.NewReader(in)
	if trickled {
		body = trickle([]byte(in))
	}
	w := &flushRecorder{ResponseRecorder: httptest.NewRecorder()}
	acct := &relayAccount{strip: strip}
	res := relayEventStream(w, body, 1<<20, openAIFormat.streamEndMark, openAIFormat.isStreamEnd, nil, acct)
	return w.Body.String(), acct, res
}

func TestRelayStripsInjectedUsage(t *testing.T) {
	with := openAIStream(usageTestChunks, true, usageTestUsage)
	without := openAIStream(usageTestChunks, false, "")
	reported := translate.Usage{PromptTokens: 11, CompletionTokens: 7, Reported: true}
	for _, trickled := range []bool{false, true} {
		name := "whole"
		if trickled {
			name = "trickled"
		}
		t.Run(name+"/injected", func(t *testing.T) {
			got, acct, res := relayUsageCase(t, with, trickled, true)
			if got != without {
				t.Fatalf("client got\n%s\nwant the stream without include_usage\n%s", got, without)
			}
			if acct.usage != reported || acct.content != usageTestTextBytes || !res.sawEnd || res.err != nil {
				t.Fatalf("usage %+v, text %d bytes, result %+v", acct.usage, acct.content, res)
			}
		})
		t.Run(name+"/client_asked", func(t *testing.T) {
			got, acct, res := relayUsageCase(t, with, trickled, false)
			if got != with || !strings.Contains(got, `"choices":[],"usage":{`) {
				t.Fatalf("client got\n%s\nwant it verbatim\n%s", got, with)
			}
			if acct.usage != reported || acct.content != usageTestTextBytes || !res.sawEnd {
				t.Fatalf("usage %+v, text %d bytes, result %+v", acct.usage, acct.content, res)
			}
		})
		t.Run(name+"/upstream_ignored_it", func(t *testing.T) {
			got, acct, res := relayUsageCase(t, without, trickled, true)
			if got != without || acct.usage.Reported || acct.content != usageTestTextBytes || !res.sawEnd {
				t.Fatalf("client got %q; usage %+v, text %d bytes, result %+v", got, acct.usage, acct.content, res)
			}
		})
	}
	t.Run("crlf", func(t *testing.T) {
		in := strings.ReplaceAll(with, "\n", "\r\n")
		got, acct, _ := relayUsageCase(t, in, false, true)
		if want := strings.ReplaceAll(without, "\n", "\r\n"); got != want || acct.usage != reported {
			t.Fatalf("client got\n%q\nwant\n%q (usage %+v)", got, want, acct.usage)
		}
	})
	t.Run("usage_null_not_last_is_kept", func(t *testing.T) {
		in := "data: {\"usage\":null,\"choices\":[{\"delta\":{\"content\":\"ab\"}}]}\n\ndata: [DONE]\n\n"
		got, acct, _ := relayUsageCase(t, in, false, true)
		if got != in || acct.content != 2 {
			t.Fatalf("client got %q, text %d", got, acct.content)
		}
	})
}

// TestRelayCountsText: the text counted is each event's delta text as
// sent, escapes included, and a string that looks like a key inside the
// text is not counted twice.
func TestRelayCountsText(t *testing.T) {
	cases := []struct {
		data string
		want int64
	}{
		{`{"choices":[{"delta":{"content":"abc"}}]}`, 3},
		{`{"choices":[{"delta":{"content":"a\\"}}]}`, 3},
		{`{"choices":[{"delta":{"content":"x\"content\":\"yy"}}]}`, 17},
		{`{"choices":[{"delta":{"content":null,"reasoning_content":"think"}}]}`, 5},
		{`{"choices":[{"delta":{"reasoning":"hmm"}}]}`, 3},
		{`{"choices":[{"delta":{"content":"","reasoning":"hmm"}}]}`, 3},
		{`{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"{}"}}]}}]}`, 2},
		{`{"choices":[{"delta":{"reasoning_content":"x","content":"yy"}}]}`, 2},
		{`{"choices":[{"delta":{}}]}`, 0},
	}
	for _, tc := range cases {
		_, acct, _ := relayUsageCase(t, "data: "+tc.data+"\n\n", false, false)
		if acct.content != tc.want {
			t.Errorf("%s: %d text bytes, want %d", tc.data, acct.content, tc.want)
		}
	}
}

// streamRecords serves cfg with a record feed and the logs.
func streamRecords(t *testing.T, cfg string) (string, recordFeed, *syncBuffer) {
	t.Helper()
	feed := make(recordFeed, 16)
	_, srv, logs := serveTestGateway(t, cfg, nil, func(g *Gateway) {
		g.recordHook = func(r *requestRecord) { feed <- *r }
	})
	return srv.URL, feed, logs
}

const noUsageWarning = `provider "mock": its streams report no usage; they are estimated`

func TestStreamWithoutUsageIsEstimated(t *testing.T) {
	req := `{"model":"m1","stream":true,"messages":[{"role":"user","content":"hello there"}]}`
	prompt := int64((len(req) + 3) / 4)
	t.Run("upstream_ignores_stream_options", func(t *testing.T) {
		up := newFakeUpstream(t, openAIUpstream(false))
		base, feed, logs := streamRecords(t, streamConfig(up.URL, ""))
		for i := 0; i < 3; i++ {
			status, _, body := do(t, "POST", base+"/v1/chat/completions", testAliceKey, req)
			if status != 200 || body != openAIStream(usageTestChunks, false, "") {
				t.Fatalf("%d %s", status, body)
			}
			u := feed.next(t).usage
			if !u.Estimated || u.Reported || u.PromptTokens != prompt || u.CompletionTokens != (usageTestTextBytes+3)/4 {
				t.Fatalf("stream %d accounted %+v, want %d prompt and %d completion tokens estimated", i, u, prompt, (usageTestTextBytes+3)/4)
			}
		}
		if n := strings.Count(logs.String(), noUsageWarning); n != 1 {
			t.Fatalf("the no-usage warning was logged %d times:\n%s", n, logs.String())
		}
	})
	t.Run("cut", func(t *testing.T) {
		up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			full := openAIStream(usageTestChunks, true, usageTestUsage)
			_, _ = io.WriteString(w, full[:strings.Index(full, "tool_calls")]) // mid-event, after "Hello" and the quoted text
		})
		base, feed, logs := streamRecords(t, streamConfig(up.URL, ""))
		status, _, body := do(t, "POST", base+"/v1/chat/completions", testAliceKey, req)
		if status != 200 || !strings.Contains(body, "upstream_stream_truncated") || strings.Contains(body, `"usage"`) {
			t.Fatalf("%d %s", status, body)
		}
		rec := feed.next(t)
		if u := rec.usage; !u.Estimated || u.PromptTokens != prompt || u.CompletionTokens != (5+19+3)/4 {
			t.Fatalf("cut stream accounted %+v, want %d prompt and %d completion tokens estimated", u, prompt, (5+19+3)/4)
		}
		if strings.Contains(logs.String(), noUsageWarning) {
			t.Fatalf("a cut stream blamed the provider:\n%s", logs.String())
		}
	})
	t.Run("client_left", func(t *testing.T) {
		release := make(chan struct{})
		up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			full := openAIStream(usageTestChunks, true, usageTestUsage)
			_, _ = io.WriteString(w, full[:strings.Index(full[1:], "data: {")+1]) // the role chunk
			w.(http.Flusher).Flush()
			select {
			case <-release:
			case <-r.Context().Done():
			}
		})
		defer close(release)
		base, feed, _ := streamRecords(t, streamConfig(up.URL, ""))
		hreq, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(req))
		hreq.Header.Set("Authorization", "Bearer "+testAliceKey)
		resp, err := http.DefaultClient.Do(hreq)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 1)
		if _, err := resp.Body.Read(buf); err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close() // the client leaves after the first byte
		rec := feed.next(t)
		if u := rec.usage; rec.errorCode != "client_closed_request" || !u.Estimated || u.PromptTokens != prompt || u.CompletionTokens != 0 {
			t.Fatalf("abandoned stream: %s, accounted %+v", rec.errorCode, u)
		}
	})
}

// TestStreamTokenBudget: a tokensPerDay budget runs out after the number
// of streams their usage says, reported (the gateway asked for it) or
// estimated (the upstream ignores the request), and the client never
// sees a usage chunk it did not ask for. Each stream reserves its prompt
// estimate plus max_tokens while it runs.
func TestStreamTokenBudget(t *testing.T) {
	req := `{"model":"m1","stream":true,"max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`
	reserved := int64((len(req)+3)/4 + 5)
	estimated := int64((len(req)+3)/4 + (usageTestTextBytes+3)/4) // 22 + 9 = 31
	cases := []struct {
		name    string
		honour  bool
		perCall int64
	}{
		{"reported", true, 18},
		{"estimated", false, estimated},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up := newFakeUpstream(t, openAIUpstream(tc.honour))
			clock := &fakeClock{now: time.Date(2026, 11, 30, 10, 0, 30, 0, time.UTC)}
			// Three streams' reservations fit; the fourth's does not.
			budget := 2*tc.perCall + reserved + tc.perCall - 1
			base, _ := limitsGateway(t, up.URL, `"groups": {"free": {"limits": {"tokensPerDay": `+strconv.FormatInt(budget, 10)+`}}},
  "users": {"inline": [{"name": "bob", "group": "free", "apiKey": "`+testBobKey+`"}]}`, clock)
			for i := 0; i < 3; i++ {
				status, _, body := do(t, "POST", base+"/v1/chat/completions", testBobKey, req)
				if status != 200 || body != openAIStream(usageTestChunks, false, "") {
					t.Fatalf("stream %d: %d\n%s", i, status, body)
				}
			}
			status, _, body := do(t, "POST", base+"/v1/chat/completions", testBobKey, req)
			if status != 429 || !strings.Contains(body, "tokensPerDay") {
				t.Fatalf("4th stream: %d %s", status, body)
			}
			if up.count() != 3 {
				t.Fatalf("upstream saw %d requests", up.count())
			}
		})
	}
	t.Run("client_asked", func(t *testing.T) {
		up := newFakeUpstream(t, openAIUpstream(true))
		clock := &fakeClock{now: time.Date(2026, 11, 30, 10, 0, 30, 0, time.UTC)}
		asked := `{"model":"m1","stream":true,"max_tokens":3,"stream_options":{"include_usage":true}}`
		// The first stream's reservation fits; after its 18 tokens, the
		// second's does not.
		budget := int64((len(asked)+3)/4+3) + 17
		base, _ := limitsGateway(t, up.URL, `"groups": {"free": {"limits": {"tokensPerDay": `+strconv.FormatInt(budget, 10)+`}}},
  "users": {"inline": [{"name": "bob", "group": "free", "apiKey": "`+testBobKey+`"}]}`, clock)
		for i := 0; i < 2; i++ {
			status, _, body := do(t, "POST", base+"/v1/chat/completions", testBobKey, asked)
			if i == 0 && (status != 200 || body != openAIStream(usageTestChunks, true, usageTestUsage)) {
				t.Fatalf("stream: %d\n%s", status, body)
			}
			if i == 1 && status != 429 {
				t.Fatalf("2nd stream: %d %s", status, body)
			}
		}
	})
}

// TestPassthroughStreamUsage: native passthrough relays the client's own
// request (no usage asked for on its behalf); a stream without usage is
// estimated by the same rule, never billed zero, and one with usage is
// billed what it reports.
func TestPassthroughStreamUsage(t *testing.T) {
	up := newFakeUpstream(t, openAIUpstream(true))
	base, feed, logs := streamRecords(t, passthroughConfig(up.URL, false))
	req := `{"model":"m1","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	status, _, body := do(t, "POST", base+"/oai/v1/chat/completions", ptAllKey, req)
	if status != 200 || body != openAIStream(usageTestChunks, false, "") || string(up.last(t).body) != req {
		t.Fatalf("%d %s (upstream got %s)", status, body, up.last(t).body)
	}
	if u := feed.next(t).usage; !u.Estimated || u.PromptTokens != int64((len(req)+3)/4) || u.CompletionTokens != (usageTestTextBytes+3)/4 {
		t.Fatalf("passthrough stream accounted %+v", u)
	}
	asked := `{"model":"m1","stream":true,"stream_options":{"include_usage":true}}`
	if status, _, body := do(t, "POST", base+"/oai/v1/chat/completions", ptAllKey, asked); status != 200 || body != openAIStream(usageTestChunks, true, usageTestUsage) {
		t.Fatalf("%d %s", status, body)
	}
	if u := feed.next(t).usage; u != (translate.Usage{PromptTokens: 11, CompletionTokens: 7, Reported: true}) {
		t.Fatalf("passthrough stream with usage accounted %+v", u)
	}
	if strings.Contains(logs.String(), "report no usage") {
		t.Fatalf("passthrough blamed the provider:\n%s", logs.String())
	}
}
