package gateway

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// timeoutConfig: global requestTimeout and an optional per-provider
// override.
func timeoutConfig(upstreamURL, global, perProvider string) string {
	g, p := "", ""
	if global != "" {
		g = `"requestTimeout": "` + global + `",`
	}
	if perProvider != "" {
		p = `, "requestTimeout": "` + perProvider + `"`
	}
	return `{` + g + `
  "providers": {"mock": {"type": "openai", "baseUrl": "` + upstreamURL + `", "apiKey": "` + testProviderKey + `", "models": ["m1"]` + p + `}},
  "groups": {"all": {}},
  "users": {"inline": [{"name": "alice", "group": "all", "apiKey": "` + testAliceKey + `"}]}
}`
}

// blockUntilGone waits for the gateway to give up on the exchange.
func blockUntilGone(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-time.After(10 * time.Second):
	}
}

func TestTimeoutStalls(t *testing.T) {
	cases := []struct {
		name        string
		global      string
		perProvider string
		handler     http.HandlerFunc
	}{
		{"no_headers_global", "100ms", "", func(w http.ResponseWriter, r *http.Request) { blockUntilGone(r) }},
		{"no_headers_provider_override", "5m", "100ms", func(w http.ResponseWriter, r *http.Request) { blockUntilGone(r) }},
		{"stall_mid_json_body", "100ms", "", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"id":"partial",`)
			w.(http.Flusher).Flush()
			blockUntilGone(r)
		}},
		{"stall_after_stream_headers", "100ms", "", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
			blockUntilGone(r)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up := newFakeUpstream(t, tc.handler)
			srv, logs := newTestGateway(t, timeoutConfig(up.URL, tc.global, tc.perProvider), nil)
			path := "/v1/chat/completions"
			resp, body := send(t, srv.URL, testRequest{path: path, body: `{"model":"m1","stream":true}`, headers: bearer(testAliceKey)})
			if resp.Header.Get("Content-Type") == "text/event-stream" {
				// Headers already went out: the stall is reported in-stream.
				if d := sseErrorEvent(t, body); d.Code != "upstream_timeout" {
					t.Fatalf("stream error %+v", d)
				}
				return
			}
			d := expectEnvelope(t, resp, body, 502, "server_error", "upstream_timeout")
			if d.Upstream != nil {
				t.Fatalf("a timeout carries no upstream body: %s", body)
			}
			if logs.String() == "" {
				t.Fatal("timeout not logged")
			}
		})
	}
}

// An upstream that is slow overall (25 x 50ms > 1s) but never silent
// for a whole window (a gap 20 times shorter than it, which no load here
// stretches to the window) succeeds: the timeout measures progress, not
// total duration.
func TestTimeoutSlowButSteadyJSON(t *testing.T) {
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"parts":[0`)
		w.(http.Flusher).Flush()
		for i := 0; i < 25; i++ {
			time.Sleep(50 * time.Millisecond)
			_, _ = io.WriteString(w, `,1`)
			w.(http.Flusher).Flush()
		}
		_, _ = io.WriteString(w, `]}`)
	})
	srv, _ := newTestGateway(t, timeoutConfig(up.URL, "1s", ""), nil)
	resp, body := send(t, srv.URL, testRequest{path: "/v1/chat/completions", body: `{"model":"m1"}`, headers: bearer(testAliceKey)})
	if resp.StatusCode != 200 || body != `{"parts":[0`+strings.Repeat(",1", 25)+`]}` {
		t.Fatalf("status %d body %s", resp.StatusCode, body)
	}
}

// A per-provider override longer than the global timeout wins.
func TestTimeoutProviderOverrideLonger(t *testing.T) {
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(300 * time.Millisecond)
		okJSON(`{"id":"late"}`)(w, r)
	})
	srv, _ := newTestGateway(t, timeoutConfig(up.URL, "50ms", "10s"), nil)
	resp, body := send(t, srv.URL, testRequest{path: "/v1/embeddings", body: `{"model":"m1"}`, headers: bearer(testAliceKey)})
	if resp.StatusCode != 200 || body != `{"id":"late"}` {
		t.Fatalf("status %d body %s", resp.StatusCode, body)
	}
}

func TestWatchdogUnit(t *testing.T) {
	t.Run("fires_without_progress", func(t *testing.T) {
		ctx, wd := startWatchdog(context.Background(), 20*time.Millisecond)
		defer wd.stop()
		<-ctx.Done()
		if !wd.stalled() {
			t.Fatal("context ended but watchdog does not report a stall")
		}
		e := exchangeFailure("p", wd, context.Background(), ctx.Err())
		if e.Status != 502 || e.Code != "upstream_timeout" {
			t.Fatalf("classified as %d %s", e.Status, e.Code)
		}
	})
	t.Run("stop_is_not_a_stall", func(t *testing.T) {
		ctx, wd := startWatchdog(context.Background(), time.Hour)
		wd.stop()
		<-ctx.Done()
		if wd.stalled() {
			t.Fatal("stop reported as a stall")
		}
	})
}

// A native passthrough that stalls after its headers cannot be turned
// into a 502 any more; the client must see the body cut short, never a
// complete-looking response and never a hang.
func TestTimeoutPassthroughStallMidBody(t *testing.T) {
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "100")
		_, _ = io.WriteString(w, `{"partial":`)
		w.(http.Flusher).Flush()
		blockUntilGone(r)
	})
	cfg := `{"requestTimeout": "100ms",
  "providers": {"oai": {"type": "openai", "baseUrl": "` + up.URL + `", "apiKey": "sk-pt-stall"}},
  "groups": {"all": {}},
  "users": {"inline": [{"name": "alice", "group": "all", "apiKey": "` + testAliceKey + `"}]}}`
	srv, _ := newTestGateway(t, cfg, nil)
	req, _ := http.NewRequest("GET", srv.URL+"/oai/v1/models", nil)
	req.Header.Set("Authorization", "Bearer "+testAliceKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return // connection aborted before the headers were flushed
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err == nil {
		t.Fatalf("stalled passthrough body ended cleanly: %d %q", resp.StatusCode, data)
	}
	if !strings.HasPrefix(`{"partial":`, string(data)) {
		t.Fatalf("relayed %q before the cut", data)
	}
}

// TestReadUpstreamBody covers both ways a whole answer is read: a
// declared length in one piece, and an undeclared one read by read,
// each with its cap (tooBig, never a truncated body) and a short body.
func TestReadUpstreamBody(t *testing.T) {
	wd := &watchdog{timer: time.NewTimer(time.Hour), timeout: time.Hour}
	defer wd.timer.Stop()
	big := strings.Repeat("x", 70<<10)
	cases := []struct {
		name         string
		body         string
		length       int64
		limit        int64
		want         string
		tooBig, fail bool
	}{
		{"declared", `{"a":1}`, 7, 100, `{"a":1}`, false, false},
		{"declared empty", ``, 0, 100, ``, false, false},
		{"declared but cut short", `{"a"`, 7, 100, ``, false, true},
		{"declared over the cap", `{"a":1}`, 7, 6, ``, true, false},
		{"undeclared", big, -1, 1 << 20, big, false, false},
		{"undeclared at the cap", big, -1, int64(len(big)), big, false, false},
		{"undeclared over the cap", big, -1, int64(len(big)) - 1, ``, true, false},
	}
	for _, tc := range cases {
		data, tooBig, err := readUpstreamBody(iotest.OneByteReader(strings.NewReader(tc.body)), wd, tc.length, tc.limit)
		if tooBig != tc.tooBig || (err != nil) != tc.fail || (!tc.tooBig && !tc.fail && string(data) != tc.want) {
			t.Errorf("%s: %d bytes, tooBig %v, err %v", tc.name, len(data), tooBig, err)
		}
		if (tc.tooBig || tc.fail) && data != nil {
			t.Errorf("%s: returned %d bytes with a failure", tc.name, len(data))
		}
	}
}
