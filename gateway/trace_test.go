package gateway

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const (
	testTraceID     = "4bf92f3577b34da6a3ce929d0e0e4736"
	testParentID    = "00f067aa0ba902b7"
	testTraceparent = "00-" + testTraceID + "-" + testParentID + "-01"
	testTracestate  = "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"
	limitedKey      = "sk-trace-limited-0001"
)

// traceConfig serves model m1 from one openai provider "mock" at
// upstreamURL (native passthrough on); alice may use everything, limited
// one request a minute. extra is spliced in at the top level.
func traceConfig(upstreamURL, extra string) string {
	return `{` + extra + `
  "providers": {"mock": {"type": "openai", "baseUrl": "` + upstreamURL + `", "apiKey": "` + testProviderKey + `", "models": ["m1"]}},
  "groups": {"all": {}, "slow": {"limits": {"requestsPerMinute": 1}}},
  "users": {"inline": [
    {"name": "alice", "group": "all", "apiKey": "` + testAliceKey + `"},
    {"name": "limited", "group": "slow", "apiKey": "` + limitedKey + `"}
  ]}
}`
}

// traceUpstream answers a chat request whole, or as a stream when the
// body asks for one; with failFirst set, the first request of all gets a
// 500.
func traceUpstream(t *testing.T, failFirst bool) *fakeUpstream {
	var n atomic.Int64
	return newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 && failFirst {
			http.Error(w, `{"error":{"message":"busy","type":"server_error"}}`, 500)
			return
		}
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n"+
				"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n")
			return
		}
		okJSON(chatOK)(w, r)
	})
}

// isHex reports whether s is n lowercase hex digits.
func isHex(s string, n int) bool {
	return len(s) == n && strings.Trim(s, "0123456789abcdef") == ""
}

// splitTraceparent returns a version-00 traceparent's trace id, span id
// and flags, failing the test on anything else.
func splitTraceparent(t *testing.T, tp string) (string, string, string) {
	t.Helper()
	parts := strings.Split(tp, "-")
	if len(parts) != 4 || parts[0] != "00" || !isHex(parts[1], 32) || !isHex(parts[2], 16) || !isHex(parts[3], 2) {
		t.Fatalf("traceparent %q is not a version-00 traceparent", tp)
	}
	return parts[1], parts[2], parts[3]
}

func TestValidRequestID(t *testing.T) {
	long := strings.Repeat("a", 128)
	for _, id := range []string{"a", "req-1", "A.b_c:d=e+f/g-h", "0123456789abcdef", long} {
		if !validRequestID(id) {
			t.Errorf("%q refused", id)
		}
	}
	for _, id := range []string{long + "a", "a b", "a\tb", "a\"b", "a,b", "a;b", "ü", "a\\b", " a", "a "} {
		if validRequestID(id) {
			t.Errorf("%q accepted", id)
		}
	}
}

func TestValidTraceparent(t *testing.T) {
	for _, tp := range []string{
		testTraceparent,
		"00-" + testTraceID + "-" + testParentID + "-00",
		"00-" + testTraceID + "-" + testParentID + "-ff",
		"01-" + testTraceID + "-" + testParentID + "-01",                 // a later version, 55 characters
		"cc-" + testTraceID + "-" + testParentID + "-01-what-the-future", // a later version with more fields
	} {
		if !validTraceparent(tp) {
			t.Errorf("%q refused", tp)
		}
	}
	for _, tp := range []string{
		"",
		"00-" + testTraceID + "-" + testParentID, // no flags
		"00-" + strings.ToUpper(testTraceID) + "-" + testParentID + "-01", // uppercase hex
		"00-" + testTraceID + "-" + strings.ToUpper(testParentID) + "-01",
		"00-" + zeroTraceID + "-" + testParentID + "-01", // all-zero trace id
		"00-" + testTraceID + "-" + zeroSpanID + "-01",   // all-zero parent id
		"ff-" + testTraceID + "-" + testParentID + "-01", // version ff
		"0g-" + testTraceID + "-" + testParentID + "-01",
		"00-" + testTraceID + "-" + testParentID + "-01-extra", // version 00 is exactly 55 characters
		"01-" + testTraceID + "-" + testParentID + "-01x",      // a later version's extra part starts with "-"
		"00-" + testTraceID[:31] + "-" + testParentID + "0-01", // a dash out of place
		"00_" + testTraceID + "_" + testParentID + "_01",
		"00-" + testTraceID[:30] + "--" + testParentID + "-01",
		"00-" + testTraceID + "-" + testParentID + "-0x",
	} {
		if validTraceparent(tp) {
			t.Errorf("%q accepted", tp)
		}
	}
}

func TestKeptTracestate(t *testing.T) {
	if got := keptTracestate([]string{testTracestate}); got != testTracestate {
		t.Errorf("tracestate %q, want it verbatim", got)
	}
	if got := keptTracestate([]string{"a=1", "b=2"}); got != "a=1,b=2" {
		t.Errorf("two headers: %q, want them joined", got)
	}
	if got := keptTracestate([]string{"a=" + strings.Repeat("x", maxTracestateBytes)}); got != "" {
		t.Errorf("an oversized tracestate is kept: %d bytes", len(got))
	}
	if got := keptTracestate([]string{"a=1\x01"}); got != "" {
		t.Errorf("a control character is kept: %q", got)
	}
}

func TestAttemptSpansDiffer(t *testing.T) {
	r, _ := http.NewRequest("GET", "http://gw/", nil)
	r.Header.Set("Traceparent", testTraceparent)
	tr := startTrace(httptest.NewRecorder(), r)
	seen := map[string]bool{tr.spanID: true}
	for n := 1; n <= 40; n++ {
		trace, span, flags := splitTraceparent(t, attemptTraceparent(tr, n))
		if trace != testTraceID || flags != "01" || seen[span] || span == testParentID {
			t.Fatalf("attempt %d: trace %s span %s flags %s (spans so far %v)", n, trace, span, flags, seen)
		}
		seen[span] = true
	}
}

// idCase is one request whose answer must carry the request ids.
type idCase struct {
	name   string
	method string
	path   string
	key    string
	body   string
	status int
}

func idCases() []idCase {
	return []idCase{
		{"chat_200", "POST", "/v1/chat/completions", testAliceKey, chatReq, 200},
		{"stream_200", "POST", "/v1/chat/completions", testAliceKey, `{"model":"m1","stream":true,"messages":[]}`, 200},
		{"unauthorized_401", "POST", "/v1/chat/completions", "sk-wrong", chatReq, 401},
		{"unknown_model_404", "POST", "/v1/chat/completions", testAliceKey, `{"model":"nope"}`, 404},
		{"unknown_route_404", "GET", "/no/such/route", testAliceKey, "", 404},
		{"models_200", "GET", "/v1/models", testAliceKey, "", 200},
		{"models_401", "GET", "/v1/models", "", "", 401},
		{"passthrough_200", "POST", "/mock/v1/chat/completions", testAliceKey, chatReq, 200},
		{"passthrough_401", "POST", "/mock/v1/chat/completions", "sk-wrong", chatReq, 401},
		{"ollama_version_200", "GET", "/api/version", "", "", 200},
		{"messages_401", "POST", "/v1/messages", "sk-wrong", `{"model":"m1"}`, 401},
	}
}

// sendWithIDs sends one case's request with the given extra headers and
// returns the answer's status and headers.
func sendWithIDs(t *testing.T, base string, tc idCase, headers map[string]string) (int, http.Header) {
	t.Helper()
	var body io.Reader
	if tc.body != "" {
		body = strings.NewReader(tc.body)
	}
	req, err := http.NewRequest(tc.method, base+tc.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if tc.key != "" {
		req.Header.Set("Authorization", "Bearer "+tc.key)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header
}

// TestRequestIDOnEveryAnswer: every answer the gateway writes — success,
// stream, refusals, 404s, listings, passthrough — carries X-Request-ID
// (the client's when valid, else a new one) and a traceparent naming
// the gateway's span in the client's trace (or a new one).
func TestRequestIDOnEveryAnswer(t *testing.T) {
	up := traceUpstream(t, false)
	srv, _ := newTestGateway(t, traceConfig(up.URL, ""), nil)
	for _, tc := range idCases() {
		t.Run(tc.name, func(t *testing.T) {
			status, h := sendWithIDs(t, srv.URL, tc, map[string]string{"X-Request-ID": "client-req.1:a=b+c/d", "Traceparent": testTraceparent})
			if status != tc.status {
				t.Fatalf("status %d, want %d", status, tc.status)
			}
			if ids := h.Values("X-Request-Id"); len(ids) != 1 || ids[0] != "client-req.1:a=b+c/d" {
				t.Fatalf("X-Request-ID %q, want the client's", ids)
			}
			trace, span, flags := splitTraceparent(t, h.Get("Traceparent"))
			if trace != testTraceID || span == testParentID || flags != "01" {
				t.Fatalf("traceparent %q: want the client's trace and sampling, a span of the gateway's", h.Get("Traceparent"))
			}

			status, h = sendWithIDs(t, srv.URL, tc, nil)
			if status != tc.status {
				t.Fatalf("status %d, want %d", status, tc.status)
			}
			id := h.Get("X-Request-Id")
			if !isHex(id, 32) {
				t.Fatalf("generated X-Request-ID %q, want 32 hex digits", id)
			}
			trace, _, flags = splitTraceparent(t, h.Get("Traceparent"))
			if trace == testTraceID || flags != "00" {
				t.Fatalf("traceparent %q: want a new, unsampled trace", h.Get("Traceparent"))
			}
		})
	}
}

func TestRequestIDOnRateLimitRefusal(t *testing.T) {
	up := traceUpstream(t, false)
	srv, _ := newTestGateway(t, traceConfig(up.URL, ""), nil)
	tc := idCase{"chat", "POST", "/v1/chat/completions", limitedKey, chatReq, 200}
	if status, _ := sendWithIDs(t, srv.URL, tc, nil); status != 200 {
		t.Fatalf("first request: %d", status)
	}
	status, h := sendWithIDs(t, srv.URL, tc, map[string]string{"X-Request-ID": "limited-2"})
	if status != 429 || h.Get("X-Request-Id") != "limited-2" || h.Get("Traceparent") == "" {
		t.Fatalf("429 with ids: %d %v", status, h)
	}
}

// An invalid client id is replaced whole, never trimmed or repaired.
func TestInvalidRequestIDsReplaced(t *testing.T) {
	up := traceUpstream(t, false)
	srv, _ := newTestGateway(t, traceConfig(up.URL, ""), nil)
	tc := idCases()[0]
	for name, id := range map[string]string{"129_chars": strings.Repeat("r", 129), "space": "req 1", "empty": "", "comma": "a,b"} {
		t.Run(name, func(t *testing.T) {
			status, h := sendWithIDs(t, srv.URL, tc, map[string]string{"X-Request-ID": id})
			if status != 200 {
				t.Fatalf("status %d", status)
			}
			if got := h.Get("X-Request-Id"); !isHex(got, 32) {
				t.Fatalf("X-Request-ID %q for client id %q, want a new one", got, id)
			}
		})
	}
	status, h := sendWithIDs(t, srv.URL, tc, map[string]string{"X-Request-ID": strings.Repeat("r", 128)})
	if status != 200 || h.Get("X-Request-Id") != strings.Repeat("r", 128) {
		t.Fatalf("a 128-character id is kept: %d %q", status, h.Get("X-Request-Id"))
	}
}

// Every upstream attempt carries the request's trace id with a span of
// its own, and the client's tracestate.
func TestTraceparentToUpstream(t *testing.T) {
	t.Run("client_trace_continues_with_a_span_per_attempt", func(t *testing.T) {
		up := traceUpstream(t, true)
		srv, _ := newTestGateway(t, traceConfig(up.URL, retryExtra(1)), nil)
		status, h := sendWithIDs(t, srv.URL, idCases()[0], map[string]string{"Traceparent": testTraceparent, "Tracestate": testTracestate})
		if status != 200 || up.count() != 2 {
			t.Fatalf("status %d after %d upstream calls, want 200 after a retry", status, up.count())
		}
		_, gwSpan, _ := splitTraceparent(t, h.Get("Traceparent"))
		spans := map[string]bool{testParentID: true, gwSpan: true}
		up.mu.Lock()
		reqs := append([]recordedRequest(nil), up.requests...)
		up.mu.Unlock()
		for i := 0; i < 2; i++ {
			rq := reqs[i]
			trace, span, flags := splitTraceparent(t, rq.header.Get("Traceparent"))
			if trace != testTraceID || flags != "01" || spans[span] {
				t.Fatalf("attempt %d traceparent %q: want the client's trace, a new span (seen %v)", i+1, rq.header.Get("Traceparent"), spans)
			}
			spans[span] = true
			if got := rq.header.Get("Tracestate"); got != testTracestate {
				t.Fatalf("attempt %d tracestate %q, want the client's", i+1, got)
			}
		}
	})
	t.Run("generated_when_absent", func(t *testing.T) {
		up := traceUpstream(t, false)
		srv, _ := newTestGateway(t, traceConfig(up.URL, ""), nil)
		_, h := sendWithIDs(t, srv.URL, idCases()[0], nil)
		respTrace, _, _ := splitTraceparent(t, h.Get("Traceparent"))
		trace, _, flags := splitTraceparent(t, up.last(t).header.Get("Traceparent"))
		if trace != respTrace || flags != "00" || up.last(t).header.Get("Tracestate") != "" {
			t.Fatalf("upstream traceparent %q, response's %q", up.last(t).header.Get("Traceparent"), h.Get("Traceparent"))
		}
	})
	t.Run("invalid_replaced_and_its_tracestate_dropped", func(t *testing.T) {
		up := traceUpstream(t, false)
		srv, _ := newTestGateway(t, traceConfig(up.URL, ""), nil)
		bad := "00-" + strings.ToUpper(testTraceID) + "-" + testParentID + "-01"
		_, h := sendWithIDs(t, srv.URL, idCases()[0], map[string]string{"Traceparent": bad, "Tracestate": testTracestate})
		respTrace, _, _ := splitTraceparent(t, h.Get("Traceparent"))
		trace, _, _ := splitTraceparent(t, up.last(t).header.Get("Traceparent"))
		if trace != respTrace || strings.EqualFold(trace, testTraceID) || up.last(t).header.Get("Tracestate") != "" {
			t.Fatalf("upstream got %q / %q for an invalid traceparent", up.last(t).header.Get("Traceparent"), up.last(t).header.Get("Tracestate"))
		}
	})
	t.Run("passthrough_replaces_the_clients_traceparent", func(t *testing.T) {
		up := traceUpstream(t, false)
		srv, _ := newTestGateway(t, traceConfig(up.URL, ""), nil)
		pt := idCase{"pt", "POST", "/mock/v1/chat/completions", testAliceKey, chatReq, 200}
		status, h := sendWithIDs(t, srv.URL, pt, map[string]string{"Traceparent": testTraceparent, "Tracestate": testTracestate, "X-Request-ID": "pt-1"})
		if status != 200 {
			t.Fatalf("status %d", status)
		}
		got := up.last(t).header
		_, gwSpan, _ := splitTraceparent(t, h.Get("Traceparent"))
		trace, span, flags := splitTraceparent(t, got.Get("Traceparent"))
		if trace != testTraceID || span == testParentID || span == gwSpan || flags != "01" || got.Get("Tracestate") != testTracestate {
			t.Fatalf("passthrough upstream got traceparent %q tracestate %q", got.Get("Traceparent"), got.Get("Tracestate"))
		}
		if got.Get("X-Request-Id") != "pt-1" || h.Get("X-Request-Id") != "pt-1" {
			t.Fatalf("request ids: upstream %q, client %q", got.Get("X-Request-Id"), h.Get("X-Request-Id"))
		}
		// Without a client traceparent, passthrough's upstream still gets one.
		status, h = sendWithIDs(t, srv.URL, pt, map[string]string{"X-Request-ID": "bad id"})
		respTrace, _, _ := splitTraceparent(t, h.Get("Traceparent"))
		if trace, _, _ := splitTraceparent(t, up.last(t).header.Get("Traceparent")); status != 200 || trace != respTrace {
			t.Fatalf("passthrough upstream trace %q, response's %q", trace, respTrace)
		}
		if id := h.Get("X-Request-Id"); !isHex(id, 32) || up.last(t).header.Get("X-Request-Id") != id {
			t.Fatalf("an invalid client id reached the upstream: %q / %q", up.last(t).header.Get("X-Request-Id"), id)
		}
	})
}

// The log lines about a request carry its ids: the auth lines, a retry's
// and a failure's.
func TestLogLinesCarryRequestIDs(t *testing.T) {
	up := traceUpstream(t, true)
	srv, logs := newTestGateway(t, traceConfig(up.URL, retryExtra(1)), nil)
	ids := map[string]string{"X-Request-ID": "log-1", "Traceparent": testTraceparent}
	if status, _ := sendWithIDs(t, srv.URL, idCases()[0], ids); status != 200 {
		t.Fatalf("status %d", status)
	}
	if status, _ := sendWithIDs(t, srv.URL, idCases()[2], ids); status != 401 {
		t.Fatalf("status %d", status)
	}
	tail := " request_id=log-1 trace_id=" + testTraceID
	want := map[string]bool{"auth ok user=": false, "retrying provider": false, "auth failed": false}
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		for prefix := range want {
			if strings.Contains(line, prefix) {
				if !strings.HasSuffix(line, tail) {
					t.Errorf("line without the request's ids: %s", line)
				}
				want[prefix] = true
			}
		}
	}
	for prefix, seen := range want {
		if !seen {
			t.Errorf("no %q line in:\n%s", prefix, logs.String())
		}
	}
}

func TestFailoverLogLineCarriesRequestIDs(t *testing.T) {
	var aStatus, bStatus atomic.Int64
	aStatus.Store(500)
	bStatus.Store(200)
	a, _ := statusUpstream(t, &aStatus)
	b, _ := statusUpstream(t, &bStatus)
	srv, logs := newTestGateway(t, failoverConfig(a.URL, b.URL, `"failover": {"enabled": true}, `), nil)
	if status, _ := sendWithIDs(t, srv.URL, idCases()[0], map[string]string{"X-Request-ID": "fo-1", "Traceparent": testTraceparent}); status != 200 {
		t.Fatalf("status %d", status)
	}
	found := false
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "failing over from provider") {
			found = true
			if !strings.HasSuffix(line, " request_id=fo-1 trace_id="+testTraceID) {
				t.Errorf("failover line without the request's ids: %s", line)
			}
		}
	}
	if !found {
		t.Fatalf("no failover line:\n%s", logs.String())
	}
}

// The request record carries the ids, for the events feed and metrics.
func TestRequestRecordCarriesIDs(t *testing.T) {
	up := traceUpstream(t, false)
	base, feed := recordingGateway(t, traceConfig(up.URL, ""), nil)
	_, h := sendWithIDs(t, base, idCases()[0], map[string]string{"X-Request-ID": "rec-1", "Traceparent": testTraceparent})
	rec := feed.next(t)
	if rec.requestID != "rec-1" || rec.traceID != testTraceID || rec.method != "POST" || h.Get("X-Request-Id") != "rec-1" {
		t.Fatalf("record ids %q %q method %q", rec.requestID, rec.traceID, rec.method)
	}
	_, h = sendWithIDs(t, base, idCases()[7], nil) // passthrough
	rec = feed.next(t)
	trace, _, _ := splitTraceparent(t, h.Get("Traceparent"))
	if rec.route != "passthrough" || rec.requestID != h.Get("X-Request-Id") || rec.traceID != trace {
		t.Fatalf("passthrough record %q %q %q, response %q %q", rec.route, rec.requestID, rec.traceID, h.Get("X-Request-Id"), trace)
	}
}

// accessLines returns the access log's lines.
func accessLines(logs *syncBuffer) []string {
	var out []string
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, " INFO access ") {
			out = append(out, line)
		}
	}
	return out
}

func TestAccessLog(t *testing.T) {
	up := traceUpstream(t, false)
	cfg := traceConfig(up.URL, `"accessLog": true, "pricing": {"m1": {"inputPerM": 2, "outputPerM": 4}},`)
	srv, logs := newTestGateway(t, cfg, nil)
	ids := map[string]string{"X-Request-ID": "acc-1", "Traceparent": testTraceparent}
	sendWithIDs(t, srv.URL, idCases()[0], ids) // chat: 11 prompt + 7 completion tokens
	sendWithIDs(t, srv.URL, idCases()[7], ids) // passthrough
	sendWithIDs(t, srv.URL, idCases()[2], ids) // 401
	sendWithIDs(t, srv.URL, idCases()[5], ids) // /v1/models: not a metered request
	lines := waitAccessLines(t, logs, 3)
	chat := lines[0]
	for _, want := range []string{
		" INFO access method=POST route=chat/completions status=200 user=\"alice\" provider=mock model=m1 attempts=1 ttfb_ms=",
		" prompt_tokens=11 completion_tokens=7 cost_micro_usd=50 cache=\"\" request_id=acc-1 trace_id=" + testTraceID + " error=\"\"",
	} {
		if !strings.Contains(chat, want) {
			t.Errorf("access line lacks %q:\n%s", want, chat)
		}
	}
	if !strings.Contains(chat, " duration_ms=") {
		t.Errorf("access line without its duration: %s", chat)
	}
	// Passthrough reads no body here (nothing restricts or prices it), so
	// no model is known.
	if !strings.Contains(lines[1], "access method=POST route=passthrough status=200 user=\"alice\" provider=mock model=\"\" attempts=1 ") {
		t.Errorf("passthrough access line: %s", lines[1])
	}
	if !strings.Contains(lines[2], "access method=POST route=chat/completions status=401 user=\"\" provider=\"\" model=\"\" attempts=0 ") ||
		!strings.HasSuffix(lines[2], " request_id=acc-1 trace_id="+testTraceID+" error=invalid_api_key") {
		t.Errorf("401 access line: %s", lines[2])
	}
	for _, line := range lines {
		if strings.Contains(line, testAliceKey) || strings.Contains(line, testProviderKey) || strings.Contains(line, "messages") {
			t.Errorf("access line holds a key or the body: %s", line)
		}
	}

	off, offLogs := newTestGateway(t, traceConfig(up.URL, ""), nil)
	sendWithIDs(t, off.URL, idCases()[0], nil)
	if got := accessLines(offLogs); len(got) != 0 {
		t.Fatalf("access lines without accessLog: %v", got)
	}
}

// waitAccessLines waits for n access lines (a record is emitted after
// the answer's last byte) and returns them.
func waitAccessLines(t *testing.T, logs *syncBuffer, n int) []string {
	t.Helper()
	for i := 0; i < 500; i++ {
		if lines := accessLines(logs); len(lines) >= n {
			if len(lines) > n {
				t.Fatalf("%d access lines, want %d:\n%s", len(lines), n, strings.Join(lines, "\n"))
			}
			return lines
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("fewer than %d access lines:\n%s", n, logs.String())
	return nil
}

func TestLogValue(t *testing.T) {
	for in, want := range map[string]string{"m1": "m1", "": `""`, "a b": `"a b"`, `a"b`: `"a\"b"`, "a=b": `"a=b"`, "a\nb": `"a\nb"`, "gpt-5/x:y": "gpt-5/x:y"} {
		if got := logValue(in); got != want {
			t.Errorf("logValue(%q) = %s, want %s", in, got, want)
		}
	}
}
