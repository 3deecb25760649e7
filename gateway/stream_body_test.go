package gateway

import (
	"context"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"testing"
)

// A streamed request's outbound body (heldBodyRequest) goes out whole, with its
// Content-Length, on the first attempt and on a retry, relayed and
// translated alike; the stream answers normally.
func TestStreamRequestBodyOutbound(t *testing.T) {
	prompt := strings.Repeat("a long prompt ", 1000)
	cases := []struct {
		name, path, body string
		headers          map[string]string
		failFirst        bool
		wantEnd          string
	}{
		{"relayed", "/v1/chat/completions", `{"model":"m1","stream":true,"messages":[{"role":"user","content":"` + prompt + `"}]}`, nil, false, "data: [DONE]\n\n"},
		{"relayed after a retry", "/v1/chat/completions", `{"model":"m1","stream":true,"messages":[{"role":"user","content":"` + prompt + `"}]}`, nil, true, "data: [DONE]\n\n"},
		{"translated from messages", "/v1/messages", `{"model":"m1","max_tokens":16,"stream":true,"messages":[{"role":"user","content":"` + prompt + `"}]}`,
			map[string]string{"anthropic-version": "2023-06-01"}, false, "event: message_stop"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var lengths []int64
			var bodies []string
			up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				mu.Lock()
				lengths = append(lengths, r.ContentLength)
				bodies = append(bodies, string(body))
				n := len(bodies)
				mu.Unlock()
				if tc.failFirst && n == 1 {
					http.Error(w, `{"error":{"message":"busy","type":"server_error"}}`, http.StatusServiceUnavailable)
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, `data: {"id":"c1","object":"chat.completion.chunk","model":"m1","choices":[{"index":0,"delta":{"role":"assistant","content":"hi"},"finish_reason":null}]}`+"\n\n")
				_, _ = io.WriteString(w, `data: {"id":"c1","object":"chat.completion.chunk","model":"m1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\n")
				_, _ = io.WriteString(w, `data: {"id":"c1","object":"chat.completion.chunk","model":"m1","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`+"\n\n")
				_, _ = io.WriteString(w, "data: [DONE]\n\n")
			})
			extra := ""
			if tc.failFirst {
				extra = retryExtra(1)
			}
			srv, _ := newTestGateway(t, `{`+extra+strings.TrimPrefix(streamConfig(up.URL, ""), "{"), nil)
			headers := map[string]string{"Authorization": "Bearer " + testAliceKey, "Content-Type": "application/json"}
			for k, v := range tc.headers {
				headers[k] = v
			}
			resp, got := send(t, srv.URL, testRequest{path: tc.path, headers: headers, body: tc.body})
			if resp.StatusCode != http.StatusOK || !strings.Contains(got, tc.wantEnd) {
				t.Fatalf("status %d, body %q", resp.StatusCode, got)
			}
			mu.Lock()
			defer mu.Unlock()
			want := 1
			if tc.failFirst {
				want = 2
			}
			if len(bodies) != want {
				t.Fatalf("%d upstream requests, want %d", len(bodies), want)
			}
			for i, b := range bodies {
				if lengths[i] != int64(len(b)) || !strings.Contains(b, prompt) || !strings.Contains(b, `"stream":true`) {
					t.Fatalf("attempt %d: Content-Length %d, body of %d bytes: %.120q", i+1, lengths[i], len(b), b)
				}
				if i > 0 && b != bodies[0] {
					t.Fatalf("the retry sent another body:\n%.200q\n%.200q", b, bodies[0])
				}
			}
		})
	}
}

// A streaming attempt's request body lets go of its bytes once the
// transport wrote them (its client trace's WroteRequest), and GetBody
// still gives the whole body for a retry.
func TestOutboundRequestReleasesWrittenBody(t *testing.T) {
	body := []byte(strings.Repeat("x", 10000))
	o := &outbound{method: http.MethodPost, url: "http://127.0.0.1:1/v1/chat/completions", body: body, stream: true}
	req, err := heldBodyRequest(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if req.ContentLength != int64(len(body)) {
		t.Fatalf("Content-Length %d", req.ContentLength)
	}
	trace := httptrace.ContextClientTrace(req.Context())
	if trace == nil || trace.WroteRequest == nil {
		t.Fatal("no client trace releasing the body")
	}
	// What the transport does: read the body, then report it written. The
	// report comes after half the body here: what is left is dropped, so
	// the reader holds nothing once the trace ran.
	half := make([]byte, len(body)/2)
	if _, err := io.ReadFull(req.Body, half); err != nil {
		t.Fatal(err)
	}
	trace.WroteRequest(httptrace.WroteRequestInfo{})
	if rest, err := io.ReadAll(req.Body); err != nil || len(rest) != 0 {
		t.Fatalf("after WroteRequest the body still gave %d bytes (%v)", len(rest), err)
	}
	again, err := req.GetBody()
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := io.ReadAll(again); string(got) != string(body) {
		t.Fatalf("GetBody gave %d bytes", len(got))
	}
}

// Once a stream relays, the call lets go of the request's bodies, except
// in a tool loop, whose next turn needs them.
func TestReleaseRequestBodies(t *testing.T) {
	build := func(loop *toolLoop) (*call, *outbound) {
		c := &call{req: &jsonRequest{raw: []byte(`{"model":"m"}`)}, hubConv: &hubConversion{hub: &jsonRequest{raw: []byte(`{"model":"h"}`)}}, loop: loop}
		return c, &outbound{body: []byte(`{"model":"u"}`)}
	}
	c, o := build(nil)
	releaseRequestBodies(c, o)
	if c.req.raw != nil || c.hubConv.hub.raw != nil || o.body != nil {
		t.Fatalf("still held: %q %q %q", c.req.raw, c.hubConv.hub.raw, o.body)
	}
	c, o = build(&toolLoop{})
	releaseRequestBodies(c, o)
	if c.req.raw == nil || c.hubConv.hub.raw == nil || o.body == nil {
		t.Fatal("a tool loop's bodies were released")
	}
}
