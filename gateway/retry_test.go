package gateway

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// pipelineConfig is one openai provider "mock" at upstreamURL (models
// m1, o3-mini, tts-1, dall-e-3, whisper-1) with extra top-level config,
// and alice in group all.
func pipelineConfig(upstreamURL, extra string) string {
	return `{` + extra + `
  "providers": {"mock": {"type": "openai", "baseUrl": "` + upstreamURL + `", "apiKey": "` + testProviderKey + `", "models": ["m1", "o3-mini", "tts-1", "dall-e-3", "whisper-1"]}},
  "groups": {"all": {}},
  "users": {"inline": [{"name": "alice", "group": "all", "apiKey": "` + testAliceKey + `"}]}
}`
}

// pipelineGateway serves pipelineConfig and records usage.
func pipelineGateway(t *testing.T, upstreamURL, extra string) (*httptest.Server, *usageLog, *syncBuffer) {
	t.Helper()
	return serveWithUsage(t, pipelineConfig(upstreamURL, extra))
}

// usageLog collects the request records of requests that reached an
// upstream answer (the ones the account stage settled) from the
// gateway's record hook.
type usageLog struct {
	mu      sync.Mutex
	records []requestRecord
}

func (l *usageLog) add(r requestRecord) {
	l.mu.Lock()
	l.records = append(l.records, r)
	l.mu.Unlock()
}

func (l *usageLog) all() []requestRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]requestRecord(nil), l.records...)
}

// waitFor polls until the log holds n records (a request's record is
// emitted after its last byte is written).
func (l *usageLog) waitFor(t *testing.T, n int) []requestRecord {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if recs := l.all(); len(recs) >= n {
			return recs
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("usage records: got %d, want %d", len(l.all()), n)
	return nil
}

func serveWithUsage(t *testing.T, cfgJSON string) (*httptest.Server, *usageLog, *syncBuffer) {
	t.Helper()
	ul := &usageLog{}
	_, srv, logs := serveTestGateway(t, cfgJSON, nil, func(g *Gateway) {
		g.recordHook = func(r *requestRecord) {
			if r.attempts > 0 && r.errorClass == "" {
				ul.add(*r)
			}
		}
	})
	return srv, ul, logs
}

// scriptedUpstream answers the i-th request with script[i] (the last
// entry repeats).
func scriptedUpstream(t *testing.T, script ...http.HandlerFunc) *fakeUpstream {
	var n int64
	return newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		i := int(atomic.AddInt64(&n, 1)) - 1
		if i >= len(script) {
			i = len(script) - 1
		}
		script[i](w, r)
	})
}

func statusReply(status int, retryAfter string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, `{"error":{"message":"scripted","type":"x"}}`)
	}
}

// hangUp closes the connection without an answer: a connection error.
func hangUp(w http.ResponseWriter, r *http.Request) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		_ = conn.Close()
	}
}

const chatOK = `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18}}`

const chatReq = `{"model":"m1","messages":[{"role":"user","content":"hi"}]}`

func retryExtra(attempts int) string {
	return `"retry": {"enabled": true, "attempts": ` + strconv.Itoa(attempts) + `, "backoff": "1ms"},`
}

func TestRetryTransientFailures(t *testing.T) {
	cases := []struct {
		name       string
		extra      string
		script     []http.HandlerFunc
		wantStatus int
		wantCalls  int
	}{
		{"off: one attempt", "", []http.HandlerFunc{statusReply(503, ""), okJSON(chatOK)}, 503, 1},
		{"disabled block: one attempt", `"retry": {"enabled": false, "attempts": 3},`, []http.HandlerFunc{statusReply(503, ""), okJSON(chatOK)}, 503, 1},
		{"503 then ok", retryExtra(1), []http.HandlerFunc{statusReply(503, ""), okJSON(chatOK)}, 200, 2},
		{"500,502 then ok with 2 retries", retryExtra(2), []http.HandlerFunc{statusReply(500, ""), statusReply(502, ""), okJSON(chatOK)}, 200, 3},
		{"retries exhausted", retryExtra(3), []http.HandlerFunc{statusReply(503, "")}, 503, 4},
		{"429 then ok", retryExtra(1), []http.HandlerFunc{statusReply(429, "0"), okJSON(chatOK)}, 200, 2},
		{"connection error then ok", retryExtra(1), []http.HandlerFunc{hangUp, okJSON(chatOK)}, 200, 2},
		{"400 never retried", retryExtra(3), []http.HandlerFunc{statusReply(400, ""), okJSON(chatOK)}, 400, 1},
		{"404 never retried", retryExtra(3), []http.HandlerFunc{statusReply(404, ""), okJSON(chatOK)}, 404, 1},
		{"upstream 401 never retried", retryExtra(3), []http.HandlerFunc{statusReply(401, ""), okJSON(chatOK)}, 502, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up := scriptedUpstream(t, tc.script...)
			srv, ul, _ := pipelineGateway(t, up.URL, tc.extra)
			status, _, body := do(t, "POST", srv.URL+"/v1/chat/completions", testAliceKey, chatReq)
			if status != tc.wantStatus {
				t.Fatalf("status = %d, want %d; body %s", status, tc.wantStatus, body)
			}
			if up.count() != tc.wantCalls {
				t.Fatalf("upstream calls = %d, want %d", up.count(), tc.wantCalls)
			}
			if tc.wantStatus == 200 {
				recs := ul.waitFor(t, 1)
				if len(recs) != 1 || recs[0].usage.PromptTokens != 11 || recs[0].usage.CompletionTokens != 7 || recs[0].usage.Estimated {
					t.Fatalf("usage records = %+v, want one with 11/7 from the final attempt", recs)
				}
			}
		})
	}
}

func TestRetryStreamOnlyBeforeFirstByte(t *testing.T) {
	stream := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: [DONE]\n\n")
	}
	t.Run("failure before headers is retried", func(t *testing.T) {
		up := scriptedUpstream(t, statusReply(503, ""), stream)
		srv, _, _ := pipelineGateway(t, up.URL, retryExtra(1))
		status, _, body := do(t, "POST", srv.URL+"/v1/chat/completions", testAliceKey, `{"model":"m1","stream":true,"messages":[]}`)
		if status != 200 || !strings.Contains(body, "data: [DONE]") || up.count() != 2 {
			t.Fatalf("status %d calls %d body %q", status, up.count(), body)
		}
	})
	t.Run("a stream cut after the first event is not retried", func(t *testing.T) {
		cut := func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n")
			w.(http.Flusher).Flush()
			hangUp(w, r)
		}
		up := scriptedUpstream(t, cut, stream)
		srv, _, _ := pipelineGateway(t, up.URL, retryExtra(3))
		status, _, body := do(t, "POST", srv.URL+"/v1/chat/completions", testAliceKey, `{"model":"m1","stream":true,"messages":[]}`)
		if status != 200 || up.count() != 1 {
			t.Fatalf("status %d calls %d", status, up.count())
		}
		if !strings.Contains(body, `"content":"a"`) || !strings.Contains(body, `"error"`) || strings.Contains(body, "[DONE]") {
			t.Fatalf("body %q: want the first event then an error event", body)
		}
	})
}

func TestRetryNeverRetriesAStall(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	up := scriptedUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	srv, _, logs := pipelineGateway(t, up.URL, retryExtra(3)+`"requestTimeout": "150ms",`)
	status, _, body := do(t, "POST", srv.URL+"/v1/chat/completions", testAliceKey, chatReq)
	if status != 502 || !strings.Contains(body, "upstream_timeout") {
		t.Fatalf("status %d body %s", status, body)
	}
	if up.count() != 1 {
		t.Fatalf("upstream calls = %d, want 1 (a stall is never retried)", up.count())
	}
	if !strings.Contains(logs.String(), "upstream progress stalled") {
		t.Fatalf("log lacks the stall line:\n%s", logs.String())
	}
}

func TestRetryWaitAbortedByClientCancel(t *testing.T) {
	arrived := make(chan struct{}, 4)
	up := scriptedUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		statusReply(429, "30")(w, r)
	})
	ended := make(chan requestRecord, 1)
	_, srv, _ := serveTestGateway(t, pipelineConfig(up.URL, retryExtra(1)), nil, func(g *Gateway) {
		g.recordHook = func(r *requestRecord) { ended <- *r }
	})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/chat/completions", strings.NewReader(chatReq))
	req.Header.Set("Authorization", "Bearer "+testAliceKey)
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
	}()
	<-arrived
	cancel()
	<-done
	// The request's record is emitted when its handler returns: from then
	// on no second attempt can be made, so the count is final.
	var rec requestRecord
	// The case binds a new variable: a receive assigned to an existing
	// one ("case rec = <-ended") panics under Yaegi (reflect.Select:
	// invalid Dir).
	select {
	case got := <-ended:
		rec = got
	case <-time.After(5 * time.Second):
		t.Fatal("the request did not end after the client cancelled its retry wait")
	}
	if up.count() != 1 || rec.attempts != 1 || rec.errorCode != "client_closed_request" {
		t.Fatalf("upstream calls = %d, record %+v after cancel; want 1 attempt, client_closed_request", up.count(), rec)
	}
}

func TestRetryWait(t *testing.T) {
	s := retrySettings{retries: 3, backoff: 250 * time.Millisecond}
	exact := []struct {
		status     int
		retryAfter string
		want       time.Duration
	}{
		{429, "7", 7 * time.Second},
		{429, "0", 0},
		{429, " 3 ", 3 * time.Second},
		{429, "45", 30 * time.Second},
		{429, "30", 30 * time.Second},
	}
	for _, tc := range exact {
		if got := s.retryWait(1, tc.status, tc.retryAfter); got != tc.want {
			t.Errorf("retryWait(429, %q) = %v, want %v", tc.retryAfter, got, tc.want)
		}
	}
	ladder := []struct {
		n          int
		status     int
		retryAfter string
		max        time.Duration
	}{
		{1, 503, "", 250 * time.Millisecond},
		{2, 503, "", 500 * time.Millisecond},
		{3, 0, "", time.Second},
		{1, 429, "-1", 250 * time.Millisecond},
		{1, 429, "Wed, 21 Oct 2015 07:28:00 GMT", 250 * time.Millisecond},
		{1, 429, "1.5", 250 * time.Millisecond},
		{1, 503, "20", 250 * time.Millisecond}, // Retry-After only counts on a 429
	}
	for _, tc := range ladder {
		for i := 0; i < 200; i++ {
			got := s.retryWait(tc.n, tc.status, tc.retryAfter)
			if got < tc.max/2 || got > tc.max {
				t.Fatalf("retryWait(%d, %d, %q) = %v, want within [%v, %v]", tc.n, tc.status, tc.retryAfter, got, tc.max/2, tc.max)
			}
		}
	}
	long := retrySettings{retries: 3, backoff: 1500 * time.Millisecond}
	for i := 0; i < 200; i++ {
		if got := long.retryWait(3, 500, ""); got < time.Second || got > 2*time.Second {
			t.Fatalf("capped wait = %v, want within [1s, 2s]", got)
		}
	}
}

func TestRetryConfigErrors(t *testing.T) {
	cases := []struct{ retry, want string }{
		{`{"enabled": true, "attempts": 4}`, "retry.attempts: 4"},
		{`{"enabled": true, "attempts": -1}`, "retry.attempts: -1"},
		{`{"enabled": false, "attempts": 9}`, "retry.attempts: 9"},
		{`{"enabled": true, "backoff": "soon"}`, `retry.backoff: "soon"`},
		{`{"enabled": true, "backoff": "0s"}`, `retry.backoff: "0s"`},
	}
	for _, tc := range cases {
		_, err := newGatewayFromConfig(t, `{"retry": `+tc.retry+`, "providers": {"p": {"type": "openai", "baseUrl": "http://127.0.0.1:1"}}}`)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("retry %s: err = %v, want it to name %q", tc.retry, err, tc.want)
		}
	}
	g, err := newGatewayFromConfig(t, `{"retry": {"enabled": true}, "providers": {"p": {"type": "openai", "baseUrl": "http://127.0.0.1:1"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	if g.cfg.retry.retries != 1 || g.cfg.retry.backoff != 250*time.Millisecond {
		t.Fatalf("defaults = %+v, want 1 retry, 250ms", g.cfg.retry)
	}
}

func TestRetryDiscoveryListing(t *testing.T) {
	up := scriptedUpstream(t, statusReply(503, ""), okJSON(`{"object":"list","data":[{"id":"found-1","object":"model"}]}`))
	cfg := `{` + retryExtra(1) + `
  "providers": {"p": {"type": "openai", "baseUrl": "` + up.URL + `", "discovery": true}},
  "groups": {"all": {}},
  "users": {"inline": [{"name": "alice", "group": "all", "apiKey": "` + testAliceKey + `"}]}}`
	srv, _, _ := serveWithUsage(t, cfg)
	status, _, body := do(t, "GET", srv.URL+"/v1/models", testAliceKey, "")
	if status != 200 || !strings.Contains(body, `"found-1"`) {
		t.Fatalf("models %d %s", status, body)
	}
	if up.count() != 2 {
		t.Fatalf("listing calls %d, want 2 (one retry)", up.count())
	}
}
