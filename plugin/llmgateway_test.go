package llmgateway

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// traefikConfig is a configuration shaped the way Traefik delivers it:
// every scalar a string, lists as []interface{}, an empty group as "".
func traefikConfig(baseURL string) *Config {
	c := CreateConfig()
	(*c)["providers"] = map[string]interface{}{
		"local": map[string]interface{}{"type": "openai", "baseUrl": baseURL, "models": []interface{}{"m1"}, "passthrough": "false"},
	}
	(*c)["groups"] = map[string]interface{}{"default": ""}
	(*c)["users"] = map[string]interface{}{
		"inline": []interface{}{map[string]interface{}{"name": "alice", "group": "default", "apiKey": "sk-plugin-alice", "admin": "false"}},
	}
	(*c)["passthroughUnknown"] = "true"
	return c
}

func TestNewServesAndFallsThrough(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"object":"chat.completion"}`)
	}))
	defer upstream.Close()
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "next")
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h, err := New(ctx, next, traefikConfig(upstream.URL), "llm@file")
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions", strings.NewReader(`{"model":"m1"}`))
	req.Header.Set("Authorization", "Bearer sk-plugin-alice")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != `{"object":"chat.completion"}` {
		t.Fatalf("chat: %d %s", resp.StatusCode, body)
	}

	resp, err = http.Get(srv.URL + "/somewhere/else")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "next" {
		t.Fatalf("fallthrough: %d %s", resp.StatusCode, body)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	cases := map[string]func(c *Config){
		"unknown key":    func(c *Config) { (*c)["providerz"] = "" },
		"bad bool":       func(c *Config) { (*c)["passthroughUnknown"] = "maybe" },
		"no providers":   func(c *Config) { delete(*c, "providers") },
		"unknown group":  func(c *Config) { (*c)["groups"] = map[string]interface{}{"other": ""} },
		"empty":          func(c *Config) { *c = Config{} },
		"bad timeout":    func(c *Config) { (*c)["requestTimeout"] = "-1s" },
		"unknown nested": func(c *Config) { (*c)["users"] = map[string]interface{}{"fiel": "/x"} },
	}
	want := map[string]string{
		"unknown key": "providerz", "bad bool": "passthroughUnknown", "no providers": "providers",
		"unknown group": "default", "empty": "providers", "bad timeout": "requestTimeout", "unknown nested": "users",
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			c := traefikConfig("http://127.0.0.1:9")
			mutate(c)
			h, err := New(context.Background(), nil, c, "llm@file")
			if err == nil || h != nil {
				t.Fatalf("New accepted the config (handler %v)", h)
			}
			if !strings.Contains(err.Error(), want[name]) {
				t.Fatalf("error %q does not name %q", err, want[name])
			}
		})
	}
}

// TestReloadKeepsCounters: Traefik calls New again on every dynamic
// configuration change; the new instance of the same middleware keeps
// the old one's counts, so a reload does not reset a limit.
func TestReloadKeepsCounters(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"object":"chat.completion"}`)
	}))
	defer upstream.Close()
	limited := func() *Config {
		c := traefikConfig(upstream.URL)
		(*c)["groups"] = map[string]interface{}{"default": map[string]interface{}{"limits": map[string]interface{}{"requestsPerDay": "1"}}}
		return c
	}
	chat := func(h http.Handler) int {
		req := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(`{"model":"m1"}`))
		req.Header.Set("Authorization", "Bearer sk-plugin-alice")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	before, err := New(ctx, nil, limited(), "reload@file")
	if err != nil {
		t.Fatal(err)
	}
	if code := chat(before); code != 200 {
		t.Fatalf("first request: %d", code)
	}
	after, err := New(ctx, nil, limited(), "reload@file")
	if err != nil {
		t.Fatal(err)
	}
	if code := chat(after); code != http.StatusTooManyRequests {
		t.Fatalf("after the reload: %d, want 429 (the counters were reset)", code)
	}
}
