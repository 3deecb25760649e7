package gateway

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestPassthroughCutStreamAccounted: a passthrough event stream the
// upstream cuts after its headers (the connection closed mid-body) aborts
// the client's connection — an incomplete body, never a short success —
// and is still recorded as interrupted and accounted with the text it
// relayed.
func TestPassthroughCutStreamAccounted(t *testing.T) {
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"content":"`+strings.Repeat("y", 400)+`"}}]}`+"\n\n")
		w.(http.Flusher).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	})
	records := make(chan requestRecord, 1)
	_, srv, _ := serveTestGateway(t, timeoutConfig(up.URL, "5s", ""), nil, func(g *Gateway) {
		g.recordHook = func(r *requestRecord) { records <- *r }
	})
	body := `{"model":"m1","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/mock/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testAliceKey)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil {
		t.Fatalf("a cut passthrough body must not end cleanly: %q", data)
	}
	select {
	case rec := <-records:
		if rec.statusCode != http.StatusOK || rec.errorCode != "upstream_stream_interrupted" {
			t.Fatalf("record: status %d, error %q", rec.statusCode, rec.errorCode)
		}
		want := int64((len(body) + 3) / 4)
		if rec.usage.PromptTokens != want || rec.usage.CompletionTokens != 100 || !rec.usage.Estimated {
			t.Fatalf("usage %+v, want %d prompt and 100 completion tokens, estimated", rec.usage, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no record")
	}
}
