package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// kind is one shape of request in the mix, sent at a fixed rate.
type kind struct {
	name string
	// perSecond is the kind's share of the request rate.
	perSecond float64
	// do sends one request and classifies its outcome.
	do func(ctx context.Context, t *traffic) outcome
}

// outcome is how one request ended.
type outcome int

const (
	ok       outcome = iota // what the kind expects
	expected                // a documented refusal: a 429 past the limit, a 401 while a rotated key reloads
	unexpected
)

// tally counts one kind's outcomes.
type tally struct {
	ok, expected, unexpected atomic.Int64
}

// traffic sends the mixed load at the gateway.
type traffic struct {
	gateway string
	client  *http.Client
	keys    *keyring
	kinds   []kind
	tallies map[string]*tally

	mu       sync.Mutex
	failures []string // the first unexpected outcomes, for the report
}

// keyring holds the keys the traffic uses; the rotating user's key
// changes with every users-file edit.
type keyring struct {
	mu        sync.Mutex
	rotating  string
	rotatedAt time.Time
}

func (k *keyring) rotated() (string, time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.rotating, k.rotatedAt
}

func (k *keyring) set(key string) {
	k.mu.Lock()
	k.rotating, k.rotatedAt = key, time.Now()
	k.mu.Unlock()
}

// reloadGrace is how long after a users-file edit a 401 for the new key
// is expected: the gateway checks the file at most every 5 s, from the
// request path.
const reloadGrace = 15 * time.Second

const (
	aliceKey   = "sk-soak-alice"
	limitedKey = "sk-soak-limited"
	adminKey   = "sk-soak-admin"
)

func chatBody(model string, stream bool) []byte {
	s := `{"model":"` + model + `","messages":[{"role":"user","content":"soak test, say something"}]`
	if stream {
		s += `,"stream":true`
	}
	return []byte(s + `}`)
}

func messagesBody(model string, stream bool) []byte {
	s := `{"model":"` + model + `","max_tokens":64,"messages":[{"role":"user","content":"soak test, say something"}]`
	if stream {
		s += `,"stream":true`
	}
	return []byte(s + `}`)
}

// mix is the traffic: ~30 requests/s at the default scale of 1.
func mix() []kind {
	return []kind{
		{"chat", 7, func(ctx context.Context, t *traffic) outcome {
			return t.expectBody(ctx, "chat", "/v1/chat/completions", aliceKey, chatBody("gpt-5-mini", false), nil, `"choices"`)
		}},
		{"stream", 6, func(ctx context.Context, t *traffic) outcome {
			return t.expectBody(ctx, "stream", "/v1/chat/completions", aliceKey, chatBody("gpt-5-mini", true), nil, "data: [DONE]\n\n")
		}},
		{"translated-stream", 4, func(ctx context.Context, t *traffic) outcome {
			return t.expectBody(ctx, "translated-stream", "/v1/chat/completions", aliceKey, chatBody("claude-sonnet-4-5", true), nil, "data: [DONE]\n\n")
		}},
		{"messages", 3, func(ctx context.Context, t *traffic) outcome {
			return t.expectBody(ctx, "messages", "/v1/messages", aliceKey, messagesBody("claude-sonnet-4-5", true), anthropicHeaders, "event: message_stop")
		}},
		{"messages-translated", 2, func(ctx context.Context, t *traffic) outcome {
			return t.expectBody(ctx, "messages-translated", "/v1/messages", aliceKey, messagesBody("gpt-5-mini", false), anthropicHeaders, `"type":"message"`)
		}},
		{"passthrough", 3, func(ctx context.Context, t *traffic) outcome {
			return t.expectBody(ctx, "passthrough", "/mock/v1/chat/completions", aliceKey, chatBody("gpt-5-mini", true), nil, "data: [DONE]\n\n")
		}},
		{"cancel", 2, func(ctx context.Context, t *traffic) outcome { return t.cancelMidStream(ctx) }},
		{"limited", 2, func(ctx context.Context, t *traffic) outcome { return t.limited(ctx) }},
		{"rotating-key", 1, func(ctx context.Context, t *traffic) outcome { return t.rotatingKey(ctx) }},
		{"metrics", 0.2, func(ctx context.Context, t *traffic) outcome {
			return t.expectBody(ctx, "metrics", "/metrics", adminKey, nil, nil, "llmgateway_")
		}},
	}
}

var anthropicHeaders = map[string]string{"anthropic-version": "2023-06-01"}

// run sends every kind at its rate times scale until ctx ends, each
// request in its own goroutine (open loop: a slow answer does not slow
// the rate), at most 64 in flight per kind.
func (t *traffic) run(ctx context.Context, scale float64) {
	var wg sync.WaitGroup
	for _, k := range t.kinds {
		k := k
		interval := time.Duration(float64(time.Second) / (k.perSecond * scale))
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots := make(chan struct{}, 64)
			tick := time.NewTicker(interval)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					for i := 0; i < cap(slots); i++ {
						slots <- struct{}{}
					}
					return
				case <-tick.C:
				}
				select {
				case slots <- struct{}{}:
				default:
					t.fail(k.name, "64 requests of this kind already in flight")
					continue
				}
				go func() {
					defer func() { <-slots }()
					// A request is never cut short by the end of the run.
					switch k.do(context.Background(), t) {
					case ok:
						t.tallies[k.name].ok.Add(1)
					case expected:
						t.tallies[k.name].expected.Add(1)
					default:
						t.tallies[k.name].unexpected.Add(1)
					}
				}()
			}
		}()
	}
	wg.Wait()
}

func (t *traffic) fail(kind, msg string) outcome {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.failures) < 20 {
		t.failures = append(t.failures, time.Now().UTC().Format("15:04:05")+" "+kind+": "+msg)
	}
	return unexpected
}

func (t *traffic) request(ctx context.Context, path, key string, body []byte, headers map[string]string) (*http.Request, error) {
	method := http.MethodPost
	var rd io.Reader
	if body == nil {
		method = http.MethodGet
	} else {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, t.gateway+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return req, nil
}

// send returns the status and the whole body.
func (t *traffic) send(ctx context.Context, path, key string, body []byte, headers map[string]string) (int, []byte, error) {
	req, err := t.request(ctx, path, key, body, headers)
	if err != nil {
		return 0, nil, err
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

// expectBody wants a 200 whose body contains want.
func (t *traffic) expectBody(ctx context.Context, kind, path, key string, body []byte, headers map[string]string, want string) outcome {
	status, data, err := t.send(ctx, path, key, body, headers)
	if err != nil {
		return t.fail(kind, err.Error())
	}
	if status != http.StatusOK || !strings.Contains(string(data), want) {
		return t.fail(kind, fmt.Sprintf("status %d, body %.200q", status, data))
	}
	return ok
}

// cancelMidStream opens a slow stream (the mock waits between events),
// reads its first event and goes away.
func (t *traffic) cancelMidStream(ctx context.Context) outcome {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := t.request(ctx, "/v1/chat/completions", aliceKey, chatBody("gpt-slow", true), nil)
	if err != nil {
		return t.fail("cancel", err.Error())
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return t.fail("cancel", err.Error())
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return t.fail("cancel", fmt.Sprintf("status %d", resp.StatusCode))
	}
	buf := make([]byte, 4096)
	n, err := resp.Body.Read(buf)
	if n == 0 || !bytes.Contains(buf[:n], []byte("data: ")) {
		return t.fail("cancel", fmt.Sprintf("first read %q (%v)", buf[:n], err))
	}
	cancel()
	return ok
}

// limited sends as a user whose requestsPerMinute is far below its rate:
// a 200 or a 429 in the OpenAI envelope are both what it expects.
func (t *traffic) limited(ctx context.Context) outcome {
	status, data, err := t.send(ctx, "/v1/chat/completions", limitedKey, chatBody("gpt-5-mini", false), nil)
	switch {
	case err != nil:
		return t.fail("limited", err.Error())
	case status == http.StatusOK && bytes.Contains(data, []byte(`"choices"`)):
		return ok
	case status == http.StatusTooManyRequests && bytes.Contains(data, []byte(`"error"`)):
		return expected
	}
	return t.fail("limited", fmt.Sprintf("status %d, body %.200q", status, data))
}

// rotatingKey sends with the newest key of the user the users-file edits
// rotate; a 401 soon after an edit is the reload not having run yet.
func (t *traffic) rotatingKey(ctx context.Context) outcome {
	key, at := t.keys.rotated()
	status, data, err := t.send(ctx, "/v1/chat/completions", key, chatBody("gpt-5-mini", false), nil)
	switch {
	case err != nil:
		return t.fail("rotating-key", err.Error())
	case status == http.StatusOK:
		return ok
	case status == http.StatusUnauthorized && time.Since(at) < reloadGrace:
		return expected
	}
	return t.fail("rotating-key", fmt.Sprintf("status %d %.0fs after the edit, body %.200q", status, time.Since(at).Seconds(), data))
}
