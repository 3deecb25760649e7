package gateway

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The response cache through the pipeline, with an in-memory blob store
// standing in for Redis (the Redis-backed path is covered by the
// integration tests against a real redis-server).
func cachingGateway(t *testing.T, upURL string, store *cacheTestStore, ul *usageLog) string {
	t.Helper()
	cfg := `{"redis": {"address": "127.0.0.1:1"}, "cache": {"enabled": true, "ttl": "90s"},
  "providers": {
    "mock": {"type": "openai", "baseUrl": "` + upURL + `", "apiKey": "k", "models": ["m1", "e1"]},
    "gem": {"type": "gemini", "baseUrl": "` + upURL + `", "apiKey": "k2", "models": ["gemini-x"]}},
  "groups": {"all": {}, "short": {"cacheTTL": "10s"}, "nocache": {"cache": false}},
  "users": {"inline": [
    {"name": "alice", "group": "all", "apiKey": "` + testAliceKey + `"},
    {"name": "bob", "group": "short", "apiKey": "` + testBobKey + `"},
    {"name": "carol", "group": "nocache", "apiKey": "sk-carol-0001"}]}}`
	_, srv, _ := serveTestGateway(t, cfg, nil, func(g *Gateway) {
		g.limiter = newLimiter(newMemoryStore(nil), nil, true, nil, g.log)
		g.cache = newResponseCache(store, g.log, g.cfg.cache.maxBodyBytes)
		g.recordHook = func(r *requestRecord) {
			if r.attempts > 0 && r.errorClass == "" {
				ul.add(*r)
			}
		}
	})
	return srv.URL
}

func TestResponseCache(t *testing.T) {
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, ":generateContent") {
			okJSON(`{"candidates":[{"content":{"role":"model","parts":[{"text":"g"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":2,"candidatesTokenCount":1}}`)(w, r)
			return
		}
		okJSON(chatOK)(w, r)
	})
	store := newCacheTestStore()
	ul := &usageLog{}
	base := cachingGateway(t, up.URL, store, ul)
	post := func(key, body string) (int, http.Header, string) {
		return do(t, "POST", base+"/v1/chat/completions", key, body)
	}
	status, hdr, body := post(testAliceKey, chatReq)
	if status != 200 || hdr.Get("X-Llmgw-Cache") != "miss" || body != chatOK {
		t.Fatalf("first: %d %q %s", status, hdr.Get("X-Llmgw-Cache"), body)
	}
	// Same request, other key order, other user field: a hit, no upstream call.
	status, hdr, body = post(testAliceKey, `{"messages":[{"role":"user","content":"hi"}],"user":"x","model":"m1"}`)
	if status != 200 || hdr.Get("X-Llmgw-Cache") != "hit" || body != chatOK || hdr.Get("Content-Type") != "application/json" {
		t.Fatalf("second: %d %q %q %s", status, hdr.Get("X-Llmgw-Cache"), hdr.Get("Content-Type"), body)
	}
	if up.count() != 1 {
		t.Fatalf("upstream calls %d, want 1", up.count())
	}
	// A hit counts the request but no tokens.
	recs := ul.all()
	if len(recs) != 1 {
		t.Fatalf("usage records %d, want 1 (the miss)", len(recs))
	}
	// The provider-prefixed form is a different cache entry.
	if _, hdr, _ := post(testAliceKey, `{"model":"mock/m1","messages":[{"role":"user","content":"hi"}]}`); hdr.Get("X-Llmgw-Cache") != "miss" {
		t.Fatalf("provider-prefixed id shared an entry: %q", hdr.Get("X-Llmgw-Cache"))
	}
	// Streams and opted-out groups are never cached (no header at all).
	if _, hdr, _ := post(testAliceKey, `{"model":"m1","stream":true,"messages":[]}`); hdr.Get("X-Llmgw-Cache") != "" {
		t.Fatalf("stream: %q", hdr.Get("X-Llmgw-Cache"))
	}
	if _, hdr, _ := post("sk-carol-0001", chatReq); hdr.Get("X-Llmgw-Cache") != "" {
		t.Fatalf("opted-out group: %q", hdr.Get("X-Llmgw-Cache"))
	}
	// TTLs: the global one, and a group's own for its writes.
	for k, ttl := range store.ttls {
		if ttl != 90*time.Second {
			t.Fatalf("%s ttl %v", k, ttl)
		}
	}
	post(testBobKey, `{"model":"m1","messages":[{"role":"user","content":"bob"}]}`)
	found := false
	for _, ttl := range store.ttls {
		if ttl == 10*time.Second {
			found = true
		}
	}
	if !found {
		t.Fatal("group cacheTTL not used for its write")
	}
	// Translated answers are cached too (non-streaming chat).
	post(testAliceKey, `{"model":"gem/gemini-x","messages":[{"role":"user","content":"hi"}]}`)
	if _, hdr, body := post(testAliceKey, `{"model":"gem/gemini-x","messages":[{"role":"user","content":"hi"}]}`); hdr.Get("X-Llmgw-Cache") != "hit" || !strings.Contains(body, `"model":"gem/gemini-x"`) {
		t.Fatalf("translated: %q %s", hdr.Get("X-Llmgw-Cache"), body)
	}
	// A store error is a miss, never a failed request.
	store.mu.Lock()
	store.fail = errors.New("redis down")
	store.mu.Unlock()
	calls := up.count()
	status, hdr, body = post(testAliceKey, chatReq)
	if status != 200 || hdr.Get("X-Llmgw-Cache") != "miss" || body != chatOK || up.count() != calls+1 {
		t.Fatalf("store down: %d %q %s", status, hdr.Get("X-Llmgw-Cache"), body)
	}
}

func TestCacheConfigThroughNew(t *testing.T) {
	logs := &syncBuffer{}
	cfg, err := DecodeConfigJSON([]byte(`{"cache": {"enabled": true}, "providers": {"p": {"type": "openai", "baseUrl": "http://127.0.0.1:1"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(nil, cfg, Options{LogOutput: logs})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if g.cache != nil || !strings.Contains(logs.String(), "requires redis") {
		t.Fatalf("cache without redis: cache %v, log %s", g.cache != nil, logs.String())
	}
	_, err = newGatewayFromConfig(t, `{"providers": {"p": {"type": "openai", "baseUrl": "http://127.0.0.1:1"}}, "groups": {"g": {"cache": true}}}`)
	if err == nil || !strings.Contains(err.Error(), "groups.g.cache") {
		t.Fatalf("group cache without the block: %v", err)
	}
}

// A non-streaming /v1/messages answer (here translated from an
// openai-type upstream) is cached like a chat answer, under its own
// route: the same Messages request is a hit in the Anthropic shape, and
// the same conversation on /v1/chat/completions is not.
func TestResponseCacheMessages(t *testing.T) {
	up := newFakeUpstream(t, okJSON(chatOK))
	store := newCacheTestStore()
	base := cachingGateway(t, up.URL, store, &usageLog{})
	msg := `{"model":"m1","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
	send1 := func() (*http.Response, string) {
		return send(t, base, testRequest{method: "POST", path: "/v1/messages", body: msg, headers: map[string]string{"x-api-key": testAliceKey}})
	}
	resp, first := send1()
	if resp.StatusCode != 200 || resp.Header.Get("X-Llmgw-Cache") != "miss" || !strings.Contains(first, `"type":"message"`) {
		t.Fatalf("first: %d %q %s", resp.StatusCode, resp.Header.Get("X-Llmgw-Cache"), first)
	}
	resp, second := send1()
	if resp.StatusCode != 200 || resp.Header.Get("X-Llmgw-Cache") != "hit" || second != first {
		t.Fatalf("second: %d %q\n%s\nwant\n%s", resp.StatusCode, resp.Header.Get("X-Llmgw-Cache"), second, first)
	}
	if up.count() != 1 {
		t.Fatalf("upstream calls %d, want 1", up.count())
	}
	if status, hdr, _ := do(t, "POST", base+"/v1/chat/completions", testAliceKey, chatReq); status != 200 || hdr.Get("X-Llmgw-Cache") != "miss" {
		t.Fatalf("chat after messages: %d %q", status, hdr.Get("X-Llmgw-Cache"))
	}
}

// One body can be a valid request to several routes: each route's
// answers are cached apart, never served to another route's client.
func TestResponseCacheKeepsRoutesApart(t *testing.T) {
	up := newFakeUpstream(t, okJSON(chatOK))
	base := cachingGateway(t, up.URL, newCacheTestStore(), &usageLog{})
	body := `{"model":"m1","stream":false,"messages":[{"role":"user","content":"hi"}]}`
	for _, tc := range []struct{ path, shape string }{
		{"/v1/chat/completions", `"object":"chat.completion"`},
		{"/v1/messages", `"type":"message"`},
		{"/api/chat", `"done":true`},
	} {
		for i, want := range []string{"miss", "hit"} {
			resp, got := send(t, base, testRequest{method: "POST", path: tc.path, body: body, headers: bearer(testAliceKey)})
			if resp.StatusCode != 200 || resp.Header.Get("X-Llmgw-Cache") != want || !strings.Contains(got, tc.shape) {
				t.Fatalf("%s #%d: %d %q %s, want %s in its own shape", tc.path, i, resp.StatusCode, resp.Header.Get("X-Llmgw-Cache"), got, want)
			}
		}
	}
	if up.count() != 3 {
		t.Fatalf("upstream calls %d, want one per route", up.count())
	}
}
