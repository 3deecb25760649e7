package gateway

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/translate"
)

// recordFeed receives request records from the gateway's hook; next
// waits for one with a deadline (a record is emitted after the request's
// last byte, so the client may see the answer first).
type recordFeed chan requestRecord

func (f recordFeed) next(t *testing.T) requestRecord {
	t.Helper()
	select {
	case r := <-f:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("no request record within 5s")
	}
	return requestRecord{}
}

// recordingGateway serves cfg with every request record sent to the
// returned feed.
func recordingGateway(t *testing.T, cfg string, setup func(*Gateway)) (string, recordFeed) {
	t.Helper()
	feed := make(recordFeed, 16)
	_, srv, _ := serveTestGateway(t, cfg, nil, func(g *Gateway) {
		if setup != nil {
			setup(g)
		}
		g.recordHook = func(r *requestRecord) { feed <- *r }
	})
	return srv.URL, feed
}

func checkRecord(t *testing.T, got, want requestRecord) {
	t.Helper()
	if got.route != want.route || got.format != want.format || got.user != want.user ||
		strings.Join(got.groups, ",") != strings.Join(want.groups, ",") ||
		got.requestedModel != want.requestedModel || got.provider != want.provider || got.model != want.model ||
		got.stream != want.stream || got.statusCode != want.statusCode || got.errorCode != want.errorCode ||
		got.errorClass != want.errorClass || got.attempts != want.attempts || got.cache != want.cache {
		t.Fatalf("record\n got %+v\nwant %+v", got, want)
	}
	if got.usage.PromptTokens != want.usage.PromptTokens || got.usage.CompletionTokens != want.usage.CompletionTokens ||
		got.usage.Reported != want.usage.Reported || got.usage.Estimated != want.usage.Estimated {
		t.Fatalf("record usage %+v, want %+v", got.usage, want.usage)
	}
	if got.latency <= 0 || got.start.IsZero() {
		t.Fatalf("record timing: latency %v start %v", got.latency, got.start)
	}
	if ttfb := got.ttfb; ttfb < 0 || ttfb > got.latency || (want.statusCode != 499 && ttfb == 0) {
		t.Fatalf("record ttfb %v with latency %v", ttfb, got.latency)
	}
}

func TestRequestRecord(t *testing.T) {
	reported := translate.Usage{PromptTokens: 11, CompletionTokens: 7, Reported: true}
	t.Run("success", func(t *testing.T) {
		up := newFakeUpstream(t, okJSON(chatOK))
		base, feed := recordingGateway(t, standardConfig(up.URL), nil)
		if status, _, body := do(t, "POST", base+"/v1/chat/completions", testAliceKey, chatReq); status != 200 || body != chatOK {
			t.Fatalf("%d %s", status, body)
		}
		checkRecord(t, feed.next(t), requestRecord{route: "chat/completions", format: "openai", user: "alice", groups: []string{"all"},
			requestedModel: "m1", provider: "mock", model: "m1", statusCode: 200, attempts: 1, usage: reported})
	})
	t.Run("success_without_usage_is_estimated", func(t *testing.T) {
		up := newFakeUpstream(t, okJSON(`{"data":[]}`))
		base, feed := recordingGateway(t, standardConfig(up.URL), nil)
		body := `{"model":"m2","input":"hello"}`
		if status, _, _ := do(t, "POST", base+"/v1/embeddings", testAliceKey, body); status != 200 {
			t.Fatalf("status %d", status)
		}
		checkRecord(t, feed.next(t), requestRecord{route: "embeddings", format: "openai", user: "alice", groups: []string{"all"},
			requestedModel: "m2", provider: "mock", model: "m2", statusCode: 200, attempts: 1,
			usage: translate.Usage{PromptTokens: int64((len(body) + 3) / 4), Estimated: true}})
	})
	t.Run("upstream_error_after_retries", func(t *testing.T) {
		up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, `{"error":"busy"}`)
		})
		cfg := `{"retry": {"enabled": true, "attempts": 2, "backoff": "1ms"},` + strings.TrimPrefix(standardConfig(up.URL), "{")
		base, feed := recordingGateway(t, cfg, nil)
		if status, _, _ := do(t, "POST", base+"/v1/chat/completions", testAliceKey, chatReq); status != 503 {
			t.Fatalf("status %d", status)
		}
		checkRecord(t, feed.next(t), requestRecord{route: "chat/completions", format: "openai", user: "alice", groups: []string{"all"},
			requestedModel: "m1", provider: "mock", model: "m1", statusCode: 503, errorCode: "upstream_error", errorClass: "server", attempts: 3})
	})
	t.Run("refused_before_the_upstream", func(t *testing.T) {
		up := newFakeUpstream(t, okJSON(chatOK))
		base, feed := recordingGateway(t, standardConfig(up.URL), nil)
		if status, _, _ := do(t, "POST", base+"/v1/chat/completions", testAliceKey, `{"model":"nope"}`); status != 404 {
			t.Fatalf("status %d", status)
		}
		checkRecord(t, feed.next(t), requestRecord{route: "chat/completions", format: "openai", user: "alice", groups: []string{"all"},
			requestedModel: "nope", statusCode: 404, errorCode: "model_not_found"})
		if status, _, _ := do(t, "POST", base+"/v1/chat/completions", "sk-wrong", chatReq); status != 401 {
			t.Fatalf("status %d", status)
		}
		checkRecord(t, feed.next(t), requestRecord{route: "chat/completions", format: "openai", statusCode: 401, errorCode: "invalid_api_key"})
	})
	t.Run("client_cancel", func(t *testing.T) {
		release := make(chan struct{})
		arrived := make(chan struct{})
		up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
			close(arrived)
			select {
			case <-release:
			case <-r.Context().Done():
			}
		})
		defer close(release)
		base, feed := recordingGateway(t, standardConfig(up.URL), nil)
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1/chat/completions", strings.NewReader(chatReq))
		req.Header.Set("Authorization", "Bearer "+testAliceKey)
		done := make(chan error, 1)
		go func() {
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				resp.Body.Close()
			}
			done <- err
		}()
		<-arrived
		cancel()
		if err := <-done; err == nil {
			t.Fatal("request succeeded after cancel")
		}
		checkRecord(t, feed.next(t), requestRecord{route: "chat/completions", format: "openai", user: "alice", groups: []string{"all"},
			requestedModel: "m1", provider: "mock", model: "m1", statusCode: 499, errorCode: "client_closed_request",
			errorClass: "client_cancel", attempts: 1})
	})
	t.Run("stream_cut", func(t *testing.T) {
		up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n")
		})
		base, feed := recordingGateway(t, streamConfig(up.URL, ""), nil)
		status, _, body := do(t, "POST", base+"/v1/chat/completions", testAliceKey, `{"model":"m1","stream":true}`)
		if status != 200 || !strings.Contains(body, "upstream_stream_truncated") {
			t.Fatalf("%d %s", status, body)
		}
		checkRecord(t, feed.next(t), requestRecord{route: "chat/completions", format: "openai", user: "alice", groups: []string{"all"},
			requestedModel: "m1", provider: "mock", model: "m1", stream: true, statusCode: 200,
			errorCode: "upstream_stream_truncated", errorClass: "truncated", attempts: 1,
			// Estimated: 28 request bytes, 1 byte of text relayed.
			usage: translate.Usage{PromptTokens: 7, CompletionTokens: 1, Estimated: true}})
	})
	t.Run("stream_with_usage", func(t *testing.T) {
		up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n"+
				"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":7}}\n\ndata: [DONE]\n\n")
		})
		base, feed := recordingGateway(t, streamConfig(up.URL, ""), nil)
		if status, _, _ := do(t, "POST", base+"/v1/chat/completions", testAliceKey, `{"model":"m1","stream":true}`); status != 200 {
			t.Fatalf("status %d", status)
		}
		checkRecord(t, feed.next(t), requestRecord{route: "chat/completions", format: "openai", user: "alice", groups: []string{"all"},
			requestedModel: "m1", provider: "mock", model: "m1", stream: true, statusCode: 200, attempts: 1, usage: reported})
	})
	t.Run("cache_miss_then_hit", func(t *testing.T) {
		up := newFakeUpstream(t, okJSON(chatOK))
		cfg := `{"redis": {"address": "127.0.0.1:1"}, "cache": {"enabled": true},` + strings.TrimPrefix(standardConfig(up.URL), "{")
		base, feed := recordingGateway(t, cfg, func(g *Gateway) {
			g.limiter = newLimiter(newMemoryStore(nil), nil, true, nil, g.log)
			g.cache = newResponseCache(newCacheTestStore(), g.log, g.cfg.cache.maxBodyBytes)
		})
		want := requestRecord{route: "chat/completions", format: "openai", user: "alice", groups: []string{"all"},
			requestedModel: "m1", provider: "mock", model: "m1", statusCode: 200, attempts: 1, usage: reported, cache: "miss"}
		for i := 0; i < 2; i++ {
			if status, hdr, body := do(t, "POST", base+"/v1/chat/completions", testAliceKey, chatReq); status != 200 || body != chatOK {
				t.Fatalf("request %d: %d %q %s", i, status, hdr.Get("X-Llmgw-Cache"), body)
			}
			checkRecord(t, feed.next(t), want)
			want.cache, want.attempts, want.usage = "hit", 0, translate.Usage{}
		}
	})
	t.Run("passthrough", func(t *testing.T) {
		up := newFakeUpstream(t, okJSON(chatOK))
		base, feed := recordingGateway(t, standardConfig(up.URL), nil)
		if status, _, body := do(t, "POST", base+"/mock/v1/chat/completions", testAliceKey, chatReq); status != 200 || body != chatOK {
			t.Fatalf("%d %s", status, body)
		}
		checkRecord(t, feed.next(t), requestRecord{route: "passthrough", format: "openai", user: "alice", groups: []string{"all"},
			provider: "mock", statusCode: 200, attempts: 1, usage: reported})
	})
}
