package gateway

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// endlessStream answers an event stream of 16 KiB content chunks until
// the gateway goes away, then reports it on gone.
func endlessStream(gone chan<- struct{}) http.HandlerFunc {
	chunk := `data: {"choices":[{"index":0,"delta":{"content":"` + strings.Repeat("x", 16<<10) + `"}}]}` + "\n\n"
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		f := w.(http.Flusher)
		for r.Context().Err() == nil {
			if _, err := io.WriteString(w, chunk); err != nil {
				break
			}
			f.Flush()
		}
		blockUntilGone(r)
		gone <- struct{}{}
	}
}

// TestWriteGuardSlowClient: a client that stops reading a stream, its
// connection open. The relay blocks on the full window, so the watchdog
// cuts the upstream; one timeout later the guard's write deadline fails
// the blocked write, and the request ends — recorded as the client's,
// with the text relayed accounted — while the client still holds the
// connection.
func TestWriteGuardSlowClient(t *testing.T) {
	for _, path := range []string{"/v1/chat/completions", "/mock/v1/chat/completions"} {
		t.Run(strings.TrimPrefix(strings.ReplaceAll(path, "/", "_"), "_"), func(t *testing.T) {
			gone := make(chan struct{}, 1)
			up := newFakeUpstream(t, endlessStream(gone))
			records := make(chan requestRecord, 4)
			_, srv, _ := serveTestGateway(t, timeoutConfig(up.URL, "200ms", ""), nil, func(g *Gateway) {
				g.recordHook = func(r *requestRecord) { records <- *r }
			})
			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			body := `{"model":"m1","stream":true,"messages":[{"role":"user","content":"hi"}]}`
			_, err = io.WriteString(conn, "POST "+path+" HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer "+testAliceKey+
				"\r\nContent-Type: application/json\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
			if err != nil {
				t.Fatal(err)
			}
			status, err := bufio.NewReader(conn).ReadString('\n')
			if err != nil || !strings.Contains(status, " 200 ") {
				t.Fatalf("status line %q, %v", status, err)
			}
			// The client reads nothing more.
			select {
			case <-gone:
			case <-time.After(10 * time.Second):
				t.Fatal("the upstream was not released")
			}
			select {
			case rec := <-records:
				if rec.statusCode != http.StatusOK || rec.errorCode != "client_closed_request" {
					t.Fatalf("record: status %d, error %q", rec.statusCode, rec.errorCode)
				}
				if rec.usage.CompletionTokens < 4096 {
					t.Fatalf("the text relayed is accounted: %+v", rec.usage)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the request did not end while the client held its connection")
			}
		})
	}
}

// TestWriteGuardKeepAliveAfterStall: when the watchdog cuts a stalled
// upstream, the guard arms, and a client that reads still gets the
// stream's error event and a complete body; the kept-alive connection
// then serves the next request, well after the armed deadline.
func TestWriteGuardKeepAliveAfterStall(t *testing.T) {
	var calls atomic.Int32
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) > 1 {
			okJSON(`{"id":"c2","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"content":"one"}}]}`+"\n\n")
		w.(http.Flusher).Flush()
		blockUntilGone(r)
	})
	srv, _ := newTestGateway(t, timeoutConfig(up.URL, "200ms", ""), nil)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{}}
	post := func(body string) (string, bool) {
		reused := false
		trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) { reused = info.Reused }}
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
		req.Header.Set("Authorization", "Bearer "+testAliceKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("reading the answer: %v", err)
		}
		return string(data), reused
	}
	stream, _ := post(`{"model":"m1","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if d := sseErrorEvent(t, stream); d.Code != "upstream_timeout" {
		t.Fatalf("stream error %+v in %q", d, stream)
	}
	time.Sleep(600 * time.Millisecond) // past the deadline the guard set at the stall
	whole, reused := post(`{"model":"m1","messages":[{"role":"user","content":"again"}]}`)
	if !reused {
		t.Fatal("the second request did not reuse the connection")
	}
	if !strings.Contains(whole, `"content":"ok"`) {
		t.Fatalf("second answer %q", whole)
	}
}
