package gateway

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A stream's headers go out with its first event: the first flush comes
// after the event's bytes, not before them (the hold outlasts the test),
// relayed and translated alike.
func TestStreamHeadersGoWithTheFirstEvent(t *testing.T) {
	skipWithoutFlushDispatch(t)
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.(http.Flusher).Flush()
		if r.URL.Path == "/v1/messages" {
			writeBenchEvents(w, benchAnthropicEvents)
			return
		}
		writeBenchEvents(w, benchEvents)
	})
	cfg := `{
  "providers": {
    "mock": {"type": "openai", "baseUrl": "` + up.URL + `", "apiKey": "` + testProviderKey + `", "models": ["m1"]},
    "ant": {"type": "anthropic", "baseUrl": "` + up.URL + `", "apiKey": "` + testProviderKey + `", "models": ["claude-1"]}
  },
  "groups": {"all": {}},
  "users": {"inline": [{"name": "alice", "group": "all", "apiKey": "` + testAliceKey + `"}]}
}`
	g, _, _ := serveTestGateway(t, cfg, nil, func(g *Gateway) { g.headerHold = time.Hour })
	for _, model := range []string{"m1", "claude-1"} {
		rec := &flushRecorder{ResponseRecorder: httptest.NewRecorder()}
		req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(`{"model":"`+model+`","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Authorization", "Bearer "+testAliceKey)
		g.ServeHTTP(rec, req)
		body := rec.Body.String()
		if rec.Code != http.StatusOK || !strings.HasSuffix(body, "data: [DONE]\n\n") {
			t.Fatalf("%s: status %d, body %q", model, rec.Code, body)
		}
		if len(rec.flushedAt) == 0 || rec.flushedAt[0] == 0 {
			t.Fatalf("%s: flushes at %v: the headers went out before the first event", model, rec.flushedAt)
		}
	}
}

// An upstream that sends its headers and then nothing for a while (a
// model thinking): the client gets the headers anyway, before the first
// event, which the upstream sends only once the client has them.
func TestStreamHeadersWhileTheUpstreamThinks(t *testing.T) {
	gotHeaders := make(chan struct{})
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.(http.Flusher).Flush()
		select {
		case <-gotHeaders:
		case <-time.After(10 * time.Second):
			return // the client never got the headers: the stream stays incomplete
		}
		_, _ = io.WriteString(w, "data: {\"n\":1}\n\ndata: [DONE]\n\n")
	})
	srv, _ := newTestGateway(t, streamConfig(up.URL, ""), nil)
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(`{"model":"m1","stream":true}`))
	req.Header.Set("Authorization", "Bearer "+testAliceKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	close(gotHeaders)
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" ||
		!bytes.Equal(body, []byte("data: {\"n\":1}\n\ndata: [DONE]\n\n")) {
		t.Fatalf("status %d, Content-Type %q, body %q (%v)", resp.StatusCode, resp.Header.Get("Content-Type"), body, err)
	}
}
