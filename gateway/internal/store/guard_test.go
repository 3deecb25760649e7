package store

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// scriptedStore is a Shared store whose every operation hangs until its
// context ends, fails at once, or succeeds, on demand. onCall, when set,
// runs at the start of each operation (before it hangs or returns).
type scriptedStore struct {
	mode   atomic.Int64 // 0 ok, 1 hang, 2 error
	calls  atomic.Int64
	onCall func()
}

const (
	storeOK int64 = iota
	storeHangs
	storeFails
)

func (h *scriptedStore) do(ctx context.Context) error {
	h.calls.Add(1)
	if h.onCall != nil {
		h.onCall()
	}
	switch h.mode.Load() {
	case storeHangs:
		<-ctx.Done()
		return ctx.Err()
	case storeFails:
		return errors.New("connection refused")
	}
	return nil
}

func (h *scriptedStore) Apply(ctx context.Context, incrs []Incr, gets []string) ([]int64, []int64, error) {
	if err := h.do(ctx); err != nil {
		return nil, nil, err
	}
	return make([]int64, len(incrs)), make([]int64, len(gets)), nil
}

func (h *scriptedStore) GetBlob(ctx context.Context, key string) ([]byte, bool, error) {
	return nil, false, h.do(ctx)
}

func (h *scriptedStore) GetBlobRenew(ctx context.Context, key string, ttl time.Duration) ([]byte, bool, error) {
	return h.GetBlob(ctx, key)
}

func (h *scriptedStore) SetBlob(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	return h.do(ctx)
}

// guardedForTest is a Guarded store on a fake clock with a short
// timeout: a hung operation ends on the real 20 ms timeout, and only the
// test moves the clock the cooldown is measured on.
func guardedForTest(inner Shared) (*Guarded, *fakeClock) {
	clock := &fakeClock{now: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	return NewGuarded(inner, GuardOptions{Timeout: 20 * time.Millisecond, Cooldown: time.Second, Now: clock.Now}), clock
}

func TestGuardedDefaults(t *testing.T) {
	s := NewGuarded(&scriptedStore{}, GuardOptions{})
	if s.timeout != time.Second || s.cooldown != time.Second || s.now == nil {
		t.Fatalf("defaults: timeout %v, cooldown %v, clock set %v", s.timeout, s.cooldown, s.now != nil)
	}
}

func TestGuardedCooldown(t *testing.T) {
	inner := &scriptedStore{}
	s, clock := guardedForTest(inner)
	ctx := context.Background()

	inner.mode.Store(storeHangs) // hung Redis: the first operation times out ...
	if _, _, err := s.Apply(ctx, nil, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a hung store: err = %v, want the operation's deadline", err)
	}
	// ... and the next ones fail at once, without touching it.
	for i := 0; i < 10; i++ {
		if _, _, err := s.Apply(ctx, nil, nil); err != errCoolingDown {
			t.Fatalf("during cooldown: %v", err)
		}
		if _, _, err := s.GetBlob(ctx, "k"); err != errCoolingDown {
			t.Fatalf("GetBlob during cooldown: %v", err)
		}
		if err := s.SetBlob(ctx, "k", nil, time.Second); err != errCoolingDown {
			t.Fatalf("SetBlob during cooldown: %v", err)
		}
	}
	if n := inner.calls.Load(); n != 1 {
		t.Fatalf("store touched %d times during cooldown, want 1", n)
	}
	// Just before the cooldown ends, still down.
	clock.Add(time.Second - time.Nanosecond)
	if _, _, err := s.Apply(ctx, nil, nil); err != errCoolingDown {
		t.Fatalf("1ns before the cooldown ends: %v", err)
	}
	// After the cooldown one probe goes through; it hangs: cooldown again.
	clock.Add(time.Nanosecond)
	if _, _, err := s.Apply(ctx, nil, nil); err == nil || err == errCoolingDown {
		t.Fatalf("probe: %v", err)
	}
	if _, _, err := s.Apply(ctx, nil, nil); err != errCoolingDown {
		t.Fatalf("after a failed probe: %v", err)
	}
	// A fast failure (connection refused) is not cooled down: every
	// operation tries Redis, so counting returns the moment it is back.
	clock.Add(time.Second)
	inner.mode.Store(storeFails)
	before := inner.calls.Load()
	for i := 0; i < 3; i++ {
		if _, _, err := s.Apply(ctx, nil, nil); err == nil || err == errCoolingDown {
			t.Fatalf("fast failure %d: %v", i, err)
		}
	}
	if n := inner.calls.Load(); n != before+3 {
		t.Fatalf("fast failures were cooled down: %d calls, want %d", n, before+3)
	}
	// Redis is back: everything flows again, blobs included.
	inner.mode.Store(storeOK)
	for i := 0; i < 3; i++ {
		if _, _, err := s.Apply(ctx, []Incr{{Key: "a", Delta: 1}}, nil); err != nil {
			t.Fatalf("recovered: %v", err)
		}
	}
	if err := s.SetBlob(ctx, "k", []byte("v"), time.Second); err != nil {
		t.Fatalf("SetBlob after recovery: %v", err)
	}
	if _, _, err := s.GetBlob(ctx, "k"); err != nil {
		t.Fatalf("GetBlob after recovery: %v", err)
	}
}

// A failure that took at least half the timeout, without the deadline
// firing, counts as slow (a server answering errors after a long wait).
func TestGuardedSlowFailureCoolsDown(t *testing.T) {
	inner := &scriptedStore{}
	s, clock := guardedForTest(inner)
	inner.mode.Store(storeFails)
	inner.onCall = func() { clock.Add(10 * time.Millisecond) } // timeout/2
	if _, _, err := s.Apply(context.Background(), nil, nil); err == nil || err == errCoolingDown {
		t.Fatalf("slow failure: %v", err)
	}
	inner.onCall = nil
	if _, _, err := s.Apply(context.Background(), nil, nil); err != errCoolingDown {
		t.Fatalf("after a slow failure: %v, want the cooldown", err)
	}
	if n := inner.calls.Load(); n != 1 {
		t.Fatalf("store touched %d times, want 1", n)
	}
}

// A probe whose caller goes away releases the probe slot, and a caller's
// own cancellation never marks the store down, however long the
// operation took.
func TestGuardedCallerCancellation(t *testing.T) {
	inner := &scriptedStore{}
	s, clock := guardedForTest(inner)
	ctx := context.Background()

	inner.mode.Store(storeHangs)
	_, _, _ = s.Apply(ctx, nil, nil) // hang → down
	clock.Add(time.Second)
	pctx, pcancel := context.WithCancel(ctx)
	defer pcancel()
	// The caller goes away while the probe is in the store, after a
	// while that would count as slow.
	inner.onCall = func() { clock.Add(20 * time.Millisecond); pcancel() }
	if _, _, err := s.Apply(pctx, nil, nil); err != context.Canceled {
		t.Fatalf("cancelled probe: err = %v, want context.Canceled", err)
	}
	inner.onCall = nil
	if s.probing.Load() {
		t.Fatal("the cancelled probe kept the probe slot")
	}
	inner.mode.Store(storeOK)
	if _, _, err := s.Apply(ctx, nil, nil); err != nil {
		t.Fatalf("the next probe: %v", err)
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	inner.mode.Store(storeHangs)
	inner.onCall = func() { clock.Add(20 * time.Millisecond) }
	if _, _, err := s.Apply(cctx, nil, nil); err != context.Canceled {
		t.Fatalf("already-cancelled caller: err = %v", err)
	}
	inner.onCall = nil
	inner.mode.Store(storeOK)
	if _, _, err := s.Apply(ctx, nil, nil); err != nil {
		t.Fatalf("a caller's cancellation marked the store down: %v", err)
	}
}

// ApplyIfUp never probes: while the store is marked down it fails at
// once, after the cooldown too, until a foreground operation finds the
// store up again.
func TestGuardedApplyIfUpNeverProbes(t *testing.T) {
	inner := &scriptedStore{}
	g, clock := guardedForTest(inner)
	g.downUntil.Store(clock.Now().Add(time.Second).UnixNano())
	clock.Add(2 * time.Second)
	if _, _, err := g.ApplyIfUp(context.Background(), []Incr{{Key: "k", Delta: 1, TTL: time.Second}}, nil); err != errCoolingDown {
		t.Fatalf("background write while down: %v", err)
	}
	if _, _, err := g.Apply(context.Background(), []Incr{{Key: "k", Delta: 1, TTL: time.Second}}, nil); err != nil {
		t.Fatalf("the foreground probe: %v", err)
	}
	if _, _, err := g.ApplyIfUp(context.Background(), []Incr{{Key: "k", Delta: 1, TTL: time.Second}}, nil); err != nil {
		t.Fatalf("background write once up: %v", err)
	}
	if n := inner.calls.Load(); n != 2 {
		t.Fatalf("inner calls = %d, want 2 (the probe and the write after it)", n)
	}
}

func (h *scriptedStore) Admit(ctx context.Context, a *Admission, hold Hold) (Verdict, error) {
	if err := h.do(ctx); err != nil {
		return Verdict{}, err
	}
	return Verdict{Refused: -1}, nil
}

func (h *scriptedStore) Settle(ctx context.Context, s *Settlement) error { return h.do(ctx) }

func (h *scriptedStore) Renew(ctx context.Context, budgets []Budget, hold Hold) error {
	return h.do(ctx)
}
