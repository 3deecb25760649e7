package gateway

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"
)

// hangingStore blocks every operation until its context ends, or fails
// or succeeds on demand.
type hangingStore struct {
	mode  atomic.Int64 // 0 ok, 1 hang, 2 error
	calls atomic.Int64
}

func (h *hangingStore) do(ctx context.Context) error {
	h.calls.Add(1)
	switch h.mode.Load() {
	case 1:
		<-ctx.Done()
		return ctx.Err()
	case 2:
		return errors.New("connection refused")
	}
	return nil
}

func (h *hangingStore) apply(ctx context.Context, incrs []counterIncr, gets []string) ([]int64, []int64, error) {
	if err := h.do(ctx); err != nil {
		return nil, nil, err
	}
	return make([]int64, len(incrs)), make([]int64, len(gets)), nil
}

func (h *hangingStore) getBlob(ctx context.Context, key string) ([]byte, bool, error) {
	return nil, false, h.do(ctx)
}

func (h *hangingStore) setBlob(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	return h.do(ctx)
}

func TestGuardedStoreCooldown(t *testing.T) {
	inner := &hangingStore{}
	clock := &fakeClock{now: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	s := newGuardedStore(inner)
	s.now = clock.Now
	s.timeout = 20 * time.Millisecond
	ctx := context.Background()

	inner.mode.Store(1) // hung Redis: the first operation times out ...
	if _, _, err := s.apply(ctx, nil, nil); err == nil {
		t.Fatal("a hung store answered")
	}
	// ... and the next ones fail at once, without touching it.
	for i := 0; i < 10; i++ {
		if _, _, err := s.apply(ctx, nil, nil); err != errStoreCoolingDown {
			t.Fatalf("during cooldown: %v", err)
		}
		if _, _, err := s.getBlob(ctx, "k"); err != errStoreCoolingDown {
			t.Fatalf("blob during cooldown: %v", err)
		}
	}
	if inner.calls.Load() != 1 {
		t.Fatalf("store touched %d times during cooldown, want 1", inner.calls.Load())
	}
	// After the cooldown one probe goes through; it hangs: cooldown again.
	clock.Set(clock.Now().Add(storeDownCooldown))
	if _, _, err := s.apply(ctx, nil, nil); err == nil || err == errStoreCoolingDown {
		t.Fatalf("probe: %v", err)
	}
	if _, _, err := s.apply(ctx, nil, nil); err != errStoreCoolingDown {
		t.Fatalf("after a failed probe: %v", err)
	}
	// A fast failure (connection refused) is not cooled down: every
	// operation tries Redis, so counting returns the moment it is back.
	clock.Set(clock.Now().Add(storeDownCooldown))
	inner.mode.Store(2)
	before := inner.calls.Load()
	for i := 0; i < 3; i++ {
		if _, _, err := s.apply(ctx, nil, nil); err == nil || err == errStoreCoolingDown {
			t.Fatalf("fast failure %d: %v", i, err)
		}
	}
	if inner.calls.Load() != before+3 {
		t.Fatalf("fast failures were cooled down")
	}
	// Redis is back: the next probe succeeds and everything flows again.
	inner.mode.Store(0)
	clock.Set(clock.Now().Add(storeDownCooldown))
	for i := 0; i < 3; i++ {
		if _, _, err := s.apply(ctx, []counterIncr{{key: "a", delta: 1}}, nil); err != nil {
			t.Fatalf("recovered: %v", err)
		}
	}
	// A probe whose caller goes away releases the probe slot.
	inner.mode.Store(1)
	_, _, _ = s.apply(ctx, nil, nil) // hang → down
	clock.Set(clock.Now().Add(storeDownCooldown))
	pctx, pcancel := context.WithCancel(ctx)
	go func() {
		for inner.calls.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
		pcancel()
	}()
	inner.calls.Store(0)
	_, _, _ = s.apply(pctx, nil, nil) // the probe, cancelled by its caller
	inner.mode.Store(0)
	if _, _, err := s.apply(ctx, nil, nil); err != nil {
		t.Fatalf("the probe slot leaked: %v", err)
	}
	// A caller's own cancellation does not mark the store down.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	inner.mode.Store(1)
	_, _, _ = s.apply(cctx, nil, nil)
	inner.mode.Store(0)
	if _, _, err := s.apply(ctx, nil, nil); err != nil {
		t.Fatalf("client cancel marked the store down: %v", err)
	}
}

// With failOpen, a hung Redis costs the limiter one timeout, then the
// in-process fallback answers at once.
func TestLimiterFallsBackFastOnAHungStore(t *testing.T) {
	inner := &hangingStore{}
	inner.mode.Store(1)
	s := newGuardedStore(inner)
	s.timeout = 20 * time.Millisecond
	clock := &fakeClock{now: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	l := newLimiter(s, newMemoryStore(clock.Now), true, clock.Now, newLogger("test", io.Discard))
	scopes := scopesWith(nil, &compiledLimits{requestsPerMinute: 100})
	for i := 0; i < 50; i++ {
		if e := l.checkAndCount(context.Background(), scopes); e != nil {
			t.Fatalf("request %d: %v", i, e)
		}
	}
	if inner.calls.Load() != 1 {
		t.Fatalf("hung store waited on %d times, want 1", inner.calls.Load())
	}
}
