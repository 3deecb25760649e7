package gateway

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// readSSEIncrementally POSTs body to url and reads the event stream line
// by line. When the first event is complete it closes gotFirst, which the
// upstream waits on before sending the rest: the stream can only finish
// if event 1 reached the client while the upstream was still blocked.
// It returns the non-blank lines.
func readSSEIncrementally(t *testing.T, url, key, body string, gotFirst chan struct{}) []string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		data, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d body %s", resp.StatusCode, data)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("Content-Type %q", ct)
	}
	br := bufio.NewReader(resp.Body)
	var lines []string
	closed := false
	for {
		line, err := br.ReadString('\n')
		trimmed := strings.TrimRight(line, "\r\n")
		if trimmed != "" {
			lines = append(lines, trimmed)
		} else if line != "" && !closed && len(lines) > 0 {
			close(gotFirst)
			closed = true
		}
		if err != nil {
			break
		}
	}
	if !closed {
		close(gotFirst)
	}
	return lines
}

func streamConfig(upstreamURL, timeout string) string {
	extra := ""
	if timeout != "" {
		extra = `"requestTimeout": "` + timeout + `",`
	}
	return `{` + extra + `
  "providers": {"mock": {"type": "openai", "baseUrl": "` + upstreamURL + `", "apiKey": "` + testProviderKey + `", "models": ["m1"]}},
  "groups": {"all": {}},
  "users": {"inline": [{"name": "alice", "group": "all", "apiKey": "` + testAliceKey + `"}]}
}`
}

func TestStreamIncrementalDelivery(t *testing.T) {
	gotFirst := make(chan struct{})
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("X-Request-Id", "req-1")
		w.Header().Set("Set-Cookie", "upstream=1")
		_, _ = io.WriteString(w, "data: {\"n\":1}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-gotFirst:
		case <-time.After(5 * time.Second):
			return // the client never saw event 1: the stream stays incomplete
		}
		_, _ = io.WriteString(w, "data: {\"n\":2}\n\ndata: [DONE]\n\n")
	})
	srv, _ := newTestGateway(t, streamConfig(up.URL, ""), nil)
	lines := readSSEIncrementally(t, srv.URL+"/v1/chat/completions", testAliceKey, `{"model":"m1","stream":true}`, gotFirst)
	want := []string{`data: {"n":1}`, `data: {"n":2}`, `data: [DONE]`}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("lines %q, want %q", lines, want)
	}
}

func TestStreamHeadersAndBytes(t *testing.T) {
	transcript := "event: message\r\ndata: {\"a\":1}\r\n\r\n: comment\n\ndata: {\"b\":\n2}\n\ndata: [DONE]\n\n"
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		w.Header().Set("X-Request-Id", "req-7")
		w.Header().Set("Set-Cookie", "upstream=1")
		_, _ = io.WriteString(w, transcript)
	})
	srv, _ := newTestGateway(t, streamConfig(up.URL, ""), nil)
	resp, body := send(t, srv.URL, testRequest{path: "/v1/chat/completions", body: `{"model":"m1","stream":true}`, headers: map[string]string{
		"Authorization": "Bearer " + testAliceKey, "Accept": "text/event-stream"}})
	if resp.StatusCode != 200 || body != transcript {
		t.Fatalf("status %d body %q", resp.StatusCode, body)
	}
	checks := map[string]string{"Content-Type": "text/event-stream; charset=utf-8", "X-Upstream-Request-Id": "req-7", "Cache-Control": "no-cache", "Set-Cookie": ""}
	if ids := resp.Header.Values("X-Request-Id"); len(ids) != 1 || len(ids[0]) != 32 {
		t.Errorf("X-Request-ID %q, want the gateway's one", ids)
	}
	for k, want := range checks {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	if got := up.last(t).header.Get("Accept"); got != "text/event-stream" {
		t.Errorf("Accept forwarded as %q", got)
	}
}

// sseEvents parses a stream the way an SSE client does (lines end in
// LF, CRLF or CR; a blank line dispatches the event; data lines join with
// "\n") and returns each dispatched event's data.
func sseEvents(body string) []string {
	body = strings.ReplaceAll(body, "\r\n", "\n")
	body = strings.ReplaceAll(body, "\r", "\n")
	var events []string
	var data []string
	has := false
	lines := strings.Split(body, "\n")
	// The text after the last "\n" is an unterminated line: never dispatched.
	for i := 0; i < len(lines)-1; i++ {
		line := lines[i]
		if line == "" {
			if has {
				events = append(events, strings.Join(data, "\n"))
			}
			data = data[:0]
			has = false
			continue
		}
		if strings.HasPrefix(line, "data:") {
			v := strings.TrimPrefix(line, "data:")
			v = strings.TrimPrefix(v, " ")
			data = append(data, v)
			has = true
		}
	}
	return events
}

// lastErrorLine returns the last raw "data: {"error"...}" line; a loose
// check that an error was appended at all.
func lastErrorLine(t *testing.T, body string) envelopeDetail {
	t.Helper()
	i := strings.LastIndex(body, "\ndata: {\"error\"")
	if i < 0 {
		t.Fatalf("no error line in stream %.600q", body)
	}
	line := strings.TrimSuffix(strings.TrimPrefix(body[i+1:], "data: "), "\n\n")
	return decodeEnvelope(t, line)
}

// sseErrorEvent returns the stream's last dispatched event, which must be
// an error envelope a client can parse on its own.
func sseErrorEvent(t *testing.T, body string) envelopeDetail {
	t.Helper()
	events := sseEvents(body)
	if len(events) == 0 {
		t.Fatalf("no event in stream %.600q", body)
	}
	last := events[len(events)-1]
	if !strings.HasPrefix(last, "{\"error\"") {
		if len(last) > 300 {
			last = "..." + last[len(last)-300:]
		}
		if len(body) > 600 {
			body = "..." + body[len(body)-600:]
		}
		t.Fatalf("last event is not a parseable error event: %q (stream %q)", last, body)
	}
	return decodeEnvelope(t, last)
}

func TestStreamAbnormalEnds(t *testing.T) {
	cases := []struct {
		name    string
		timeout string
		handler func(w http.ResponseWriter, r *http.Request)
		prefix  string // client must see these bytes first
		code    string
	}{
		{
			name: "ends_without_done",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, "data: {\"n\":1}\n\n")
			},
			prefix: "data: {\"n\":1}\n\n",
			code:   "upstream_stream_truncated",
		},
		{
			name:    "stalls_mid_stream",
			timeout: "100ms",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, "data: {\"n\":1}\n\n")
				w.(http.Flusher).Flush()
				<-r.Context().Done()
			},
			prefix: "data: {\"n\":1}\n\n",
			code:   "upstream_timeout",
		},
		{
			name: "ends_mid_event",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, "data: {\"n\":1}\n\ndata: {\"n\":2}\n")
			},
			prefix: "data: {\"n\":1}\n\n",
			code:   "upstream_stream_truncated",
		},
		{
			name:    "stalls_mid_event",
			timeout: "100ms",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, "data: {\"n\":1}\n\ndata: {\"choices\":")
				w.(http.Flusher).Flush()
				<-r.Context().Done()
			},
			prefix: "data: {\"n\":1}\n\n",
			code:   "upstream_timeout",
		},
		{
			name: "connection_cut_mid_event",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, "data: {\"n\":1}\n\ndata: {\"par")
				w.(http.Flusher).Flush()
				conn, _, err := http.NewResponseController(w).Hijack()
				if err == nil {
					_ = conn.Close()
				}
			},
			prefix: "data: {\"n\":1}\n\n",
			code:   "upstream_stream_interrupted",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up := newFakeUpstream(t, tc.handler)
			srv, logs := newTestGateway(t, streamConfig(up.URL, tc.timeout), nil)
			resp, body := send(t, srv.URL, testRequest{path: "/v1/chat/completions", body: `{"model":"m1","stream":true}`, headers: bearer(testAliceKey)})
			if resp.StatusCode != 200 || !strings.HasPrefix(body, tc.prefix) {
				t.Fatalf("status %d body %q", resp.StatusCode, body)
			}
			if d := lastErrorLine(t, body); d.Code != tc.code || d.Type != "server_error" {
				t.Fatalf("error line %+v, want code %s; logs %s", d, tc.code, logs)
			}
			if !strings.HasSuffix(body, "\n\n") {
				t.Fatalf("error event not terminated by a blank line: %q", body)
			}
			if d := sseErrorEvent(t, body); d.Code != tc.code {
				t.Fatalf("error event %+v, want code %s", d, tc.code)
			}
		})
	}
}

// A slow stream that keeps sending within the window is never cut: each
// event restarts the progress timer (25 x 50ms > 1s; the gap is 20 times
// shorter than the window, which no load here stretches to it).
func TestStreamSlowButSteady(t *testing.T) {
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; i < 25; i++ {
			_, _ = io.WriteString(w, "data: {\"n\":1}\n\n")
			w.(http.Flusher).Flush()
			time.Sleep(50 * time.Millisecond)
		}
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	})
	srv, _ := newTestGateway(t, streamConfig(up.URL, "1s"), nil)
	resp, body := send(t, srv.URL, testRequest{path: "/v1/chat/completions", body: `{"model":"m1","stream":true}`, headers: bearer(testAliceKey)})
	if resp.StatusCode != 200 || strings.Contains(body, `"error"`) || strings.Count(body, "\n\n") != 26 {
		t.Fatalf("status %d body %q", resp.StatusCode, body)
	}
}

// flushRecorder counts flushes and the bytes written before each one.
type flushRecorder struct {
	*httptest.ResponseRecorder
	flushedAt []int
}

func (f *flushRecorder) Flush() {
	f.flushedAt = append(f.flushedAt, f.Body.Len())
	f.ResponseRecorder.Flush()
}

// readsReader returns one of its pieces per Read: an upstream whose
// events arrive in those reads.
type readsReader struct{ pieces []string }

func (r *readsReader) Read(b []byte) (int, error) {
	if len(r.pieces) == 0 {
		return 0, io.EOF
	}
	n := copy(b, r.pieces[0])
	if r.pieces[0] = r.pieces[0][n:]; r.pieces[0] == "" {
		r.pieces = r.pieces[1:]
	}
	return n, nil
}

// The relay writes and flushes what one upstream read completed, once:
// the events of one read go out together, an event completed by a later
// read goes out as soon as that read returns, never waiting for more.
// "|" separates the upstream's reads in "in".
func TestRelaySSEFlushesPerRead(t *testing.T) {
	cases := []struct {
		name       string
		in         string
		limit      int64
		wantOut    string
		wantFlush  []int
		wantEvents int
		wantDone   bool
		tooLarge   bool
	}{
		{"one_read_three_events", "data: a\n\ndata: b\n\ndata: [DONE]\n\n", 1 << 20, "data: a\n\ndata: b\n\ndata: [DONE]\n\n", []int{32}, 3, true, false},
		{"a_read_per_event", "data: a\n\n|data: b\n\n|data: [DONE]\n\n", 1 << 20, "data: a\n\ndata: b\n\ndata: [DONE]\n\n", []int{9, 18, 32}, 3, true, false},
		{"two_reads", "data: a\n\n|data: b\n\ndata: [DONE]\n\n", 1 << 20, "data: a\n\ndata: b\n\ndata: [DONE]\n\n", []int{9, 32}, 3, true, false},
		{"event_completed_by_next_read", "data: a\n\ndata: b|\n\n|data: [DONE]\n\n", 1 << 20, "data: a\n\ndata: b\n\ndata: [DONE]\n\n", []int{9, 18, 32}, 3, true, false},
		{"comment_kept", ": ping\n\n|data: a\n\n", 1 << 20, ": ping\n\ndata: a\n\n", []int{8, 17}, 1, false, false},
		{"crlf", "data: a\r\n\r\n", 1 << 20, "data: a\r\n\r\n", []int{11}, 1, false, false},
		{"done_without_space", "data:[DONE]\n\n", 1 << 20, "data:[DONE]\n\n", []int{13}, 1, true, false},
		{"unterminated_tail_dropped", "data: a\n\ndata: b", 1 << 20, "data: a\n\n", []int{9}, 1, false, false},
		{"empty", "", 1 << 20, "", nil, 0, false, false},
		{"cap_exceeded", "data: aaaa\n\ndata: bbbb\n\n", 14, "data: aaaa\n\n", []int{12}, 1, false, true},
		{"done_mentioned_in_payload", "data: {\"x\":\"[DONE]\"}\n\n", 1 << 20, "data: {\"x\":\"[DONE]\"}\n\n", []int{22}, 1, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := &flushRecorder{ResponseRecorder: httptest.NewRecorder()}
			skipWithoutFlushDispatch(t)
			res := relaySSE(rec, &readsReader{pieces: strings.Split(tc.in, "|")}, tc.limit, openAIFormat.isStreamEnd, nil)
			if rec.Body.String() != tc.wantOut {
				t.Fatalf("out %q, want %q", rec.Body.String(), tc.wantOut)
			}
			if len(rec.flushedAt) != len(tc.wantFlush) {
				t.Fatalf("flushes at %v, want %v", rec.flushedAt, tc.wantFlush)
			}
			for i := 0; i < len(tc.wantFlush); i++ {
				if rec.flushedAt[i] != tc.wantFlush[i] {
					t.Fatalf("flushes at %v, want %v", rec.flushedAt, tc.wantFlush)
				}
			}
			if res.events != tc.wantEvents || res.sawEnd != tc.wantDone || res.tooLarge != tc.tooLarge {
				t.Fatalf("result %+v", res)
			}
			if tc.tooLarge != (res.err != nil) {
				t.Fatalf("err %v", res.err)
			}
		})
	}
}

func TestRelaySSELongLine(t *testing.T) {
	long := "data: " + strings.Repeat("x", 100<<10) + "\n\ndata: [DONE]\n\n"
	rec := httptest.NewRecorder()
	res := relaySSE(rec, strings.NewReader(long), 1<<20, openAIFormat.isStreamEnd, nil)
	if rec.Body.String() != long || !res.sawEnd || res.err != nil {
		t.Fatalf("result %+v, %d bytes out", res, rec.Body.Len())
	}
}

func TestStreamResponseTooLarge(t *testing.T) {
	t.Parallel()
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		line := "data: " + strings.Repeat("x", 1<<20) + "\n\n"
		for i := 0; i < 33; i++ {
			if _, err := io.WriteString(w, line); err != nil {
				return
			}
		}
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	})
	srv, _ := newTestGateway(t, streamConfig(up.URL, ""), nil)
	resp, body := send(t, srv.URL, testRequest{path: "/v1/chat/completions", body: `{"model":"m1","stream":true}`, headers: bearer(testAliceKey)})
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if len(body) > maxUpstreamResponseBytes+4096 {
		t.Fatalf("relayed %d bytes past the cap", len(body))
	}
	if strings.Contains(body, "[DONE]") {
		t.Fatal("an over-cap stream must not look finished")
	}
	if d := lastErrorLine(t, body); d.Code != "upstream_response_too_large" || d.Type != "server_error" {
		t.Fatalf("error line %+v", d)
	}
	// The cap falls inside a 1 MiB data line.
	if d := sseErrorEvent(t, body); d.Code != "upstream_response_too_large" {
		t.Fatalf("error event %+v", d)
	}
}

// A client that goes away mid-stream cancels the upstream call.
func TestStreamClientDisconnectCancelsUpstream(t *testing.T) {
	cancelled := make(chan struct{})
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {\"n\":1}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			close(cancelled)
		case <-time.After(5 * time.Second):
		}
	})
	srv, logs := newTestGateway(t, streamConfig(up.URL, ""), nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(`{"model":"m1","stream":true}`))
	req.Header.Set("Authorization", "Bearer "+testAliceKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != "data: {\"n\":1}\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	cancel()
	resp.Body.Close()
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream call outlived the client")
	}
	if strings.Contains(logs.String(), "ERROR") {
		t.Fatalf("a client disconnect is not an error: %s", logs)
	}
}

// skipWithoutFlushDispatch skips under `yaegi test`: the interpreter
// dispatches an interface call on a test-defined wrapper to the embedded
// recorder's Flush, not the wrapper's, so flush positions cannot be
// observed there. (Production never wraps the host's writer.)
func skipWithoutFlushDispatch(t *testing.T) {
	t.Helper()
	if !flushDispatches() {
		t.Skip("interpreter does not dispatch Flush to a test-defined wrapper")
	}
}

// flushDispatches says a Flush through http.Flusher reaches a
// test-defined wrapper (not under Yaegi).
func flushDispatches() bool {
	probe := &flushRecorder{ResponseRecorder: httptest.NewRecorder()}
	var w http.ResponseWriter = probe
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	return len(probe.flushedAt) == 1
}
