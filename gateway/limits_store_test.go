package gateway

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/store"
)

// The limiter over the stores of package store: round trips, failures,
// the guarded Redis and the in-process retention of window keys.

// countingStore counts round trips and can fail.
type countingStore struct {
	inner store.Counter
	calls atomic.Int64
	fail  atomic.Bool
}

func (c *countingStore) Apply(ctx context.Context, incrs []store.Incr, gets []string) ([]int64, []int64, error) {
	c.calls.Add(1)
	if c.fail.Load() {
		return nil, nil, errors.New("store down")
	}
	return c.inner.Apply(ctx, incrs, gets)
}

func (c *countingStore) Admit(ctx context.Context, a *store.Admission, h store.Hold) (store.Verdict, error) {
	c.calls.Add(1)
	if c.fail.Load() {
		return store.Verdict{}, errors.New("store down")
	}
	return c.inner.(store.Holder).Admit(ctx, a, h)
}

func (c *countingStore) Settle(ctx context.Context, st *store.Settlement) error {
	c.calls.Add(1)
	if c.fail.Load() {
		return errors.New("store down")
	}
	return c.inner.(store.Holder).Settle(ctx, st)
}

func (c *countingStore) Renew(ctx context.Context, budgets []store.Budget, h store.Hold) error {
	c.calls.Add(1)
	if c.fail.Load() {
		return errors.New("store down")
	}
	return c.inner.(store.Holder).Renew(ctx, budgets, h)
}

func testLimiter(clock *fakeClock, failOpen bool) (*limiter, *countingStore, *store.Memory) {
	primary := &countingStore{inner: newMemoryStore(clock.Now)}
	fallback := newMemoryStore(clock.Now)
	return newLimiter(primary, fallback, failOpen, clock.Now, newLogger("test", io.Discard)), primary, fallback
}

// hungStore is a Redis that never answers: every operation waits for
// its context to end.
type hungStore struct {
	calls atomic.Int64
}

func (h *hungStore) Apply(ctx context.Context, incrs []store.Incr, gets []string) ([]int64, []int64, error) {
	h.calls.Add(1)
	<-ctx.Done()
	return nil, nil, ctx.Err()
}

func (h *hungStore) GetBlob(ctx context.Context, key string) ([]byte, bool, error) {
	h.calls.Add(1)
	<-ctx.Done()
	return nil, false, ctx.Err()
}

func (h *hungStore) GetBlobRenew(ctx context.Context, key string, ttl time.Duration) ([]byte, bool, error) {
	return h.GetBlob(ctx, key)
}

func (h *hungStore) SetBlob(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	h.calls.Add(1)
	<-ctx.Done()
	return ctx.Err()
}

func (h *hungStore) Admit(ctx context.Context, a *store.Admission, hold store.Hold) (store.Verdict, error) {
	h.calls.Add(1)
	<-ctx.Done()
	return store.Verdict{}, ctx.Err()
}

func (h *hungStore) Settle(ctx context.Context, s *store.Settlement) error {
	h.calls.Add(1)
	<-ctx.Done()
	return ctx.Err()
}

func (h *hungStore) Renew(ctx context.Context, budgets []store.Budget, hold store.Hold) error {
	h.calls.Add(1)
	<-ctx.Done()
	return ctx.Err()
}

// With failOpen, a hung Redis costs the limiter one timeout, then the
// in-process fallback answers at once. The guard's clock is the test's,
// so the cooldown cannot run out mid-test however slow the machine.
func TestLimiterFallsBackFastOnAHungStore(t *testing.T) {
	inner := &hungStore{}
	clock := &fakeClock{now: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	guarded := store.NewGuarded(inner, store.GuardOptions{Timeout: 20 * time.Millisecond, Now: clock.Now})
	l := newLimiter(guarded, newMemoryStore(clock.Now), true, clock.Now, newLogger("test", io.Discard))
	scopes := scopesWith(nil, &compiledLimits{requestsPerMinute: 100})
	for i := 0; i < 50; i++ {
		if e := l.checkAndCount(context.Background(), scopes); e != nil {
			t.Fatalf("request %d: %v", i, e)
		}
	}
	if n := inner.calls.Load(); n != 1 {
		t.Fatalf("hung store waited on %d times, want 1", n)
	}
	// The fallback enforced: 50 requests counted in process.
	key := counterKey("user", "alice", "req", minuteWindow, clock.Now())
	if _, got, _ := l.fallback.Apply(context.Background(), nil, []string{key}); got[0] != 50 {
		t.Fatalf("in-process count %d, want 50", got[0])
	}
}

// The in-process store keeps a key for memoryTTL of its window: a day
// bucket for 48h, and a month bucket past the end of its month.
func TestMemoryStoreWindowRetention(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	m := newMemoryStore(clock.Now)
	ctx := context.Background()
	incrs := []store.Incr{{Key: "day", Delta: 1, TTL: dayWindow.ttl}, {Key: "month", Delta: 1, TTL: monthWindow.ttl}}
	if _, _, err := m.Apply(ctx, incrs, nil); err != nil {
		t.Fatal(err)
	}
	clock.Set(clock.Now().Add(memoryStoreMaxTTL))
	if _, got, _ := m.Apply(ctx, nil, []string{"day", "month"}); got[0] != 0 || got[1] != 1 {
		t.Fatalf("after 48h: day %d (want 0: capped), month %d (want 1)", got[0], got[1])
	}
	clock.Set(clock.Now().Add(29 * 24 * time.Hour)) // 31 days in all
	if _, got, _ := m.Apply(ctx, nil, []string{"month"}); got[0] != 1 {
		t.Fatal("a month key did not outlive its month in process")
	}
}

// TestSharedCountersSurviveRebuild: with Options.SharedCounters, a
// gateway rebuilt under the same name (Traefik's New on every dynamic
// configuration change) counts on in the same in-process store, so a
// reload does not reset a limit; another name, or the option off, counts
// on its own.
func TestSharedCountersSurviveRebuild(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"object":"chat.completion","usage":{"prompt_tokens":1,"completion_tokens":1}}`)
	}))
	defer upstream.Close()
	build := func(name string, shared bool) *Gateway {
		cfg, err := DecodeConfigJSON([]byte(`{"providers":{"p":{"type":"openai","baseUrl":"` + upstream.URL + `","models":["m1"]}},
			"groups":{"g":{}},"users":{"inline":[{"name":"alice","group":"g","apiKey":"` + testAliceKey + `","limits":{"requestsPerDay":2}}]}}`))
		if err != nil {
			t.Fatal(err)
		}
		g, err := New(nil, cfg, Options{Name: name, LogOutput: io.Discard, SharedCounters: shared})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = g.Close() })
		return g
	}
	chat := func(g *Gateway) int {
		req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(`{"model":"m1"}`))
		req.Header.Set("Authorization", "Bearer "+testAliceKey)
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, req)
		return rec.Code
	}
	name := "shared-" + t.Name()
	first := build(name, true)
	if a, b := chat(first), chat(first); a != 200 || b != 200 {
		t.Fatalf("first instance: %d %d", a, b)
	}
	rebuilt := build(name, true)
	if code := chat(rebuilt); code != http.StatusTooManyRequests {
		t.Fatalf("rebuilt instance answered %d, want 429: the reload reset the counters", code)
	}
	if code := chat(build(name+"-other", true)); code != 200 {
		t.Fatalf("another name shared the counters: %d", code)
	}
	if code := chat(build(name, false)); code != 200 {
		t.Fatalf("SharedCounters off shared the counters: %d", code)
	}
}
