package store

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// Guarded bounds what a failing Redis can cost a request. Every
// operation gets a short timeout (which also bounds the wait for a pooled
// connection). A failure that was slow — a hung or unreachable-by-timeout
// Redis — marks the store down for a cooldown: operations then fail at
// once (so the limiter falls back or answers 503 without waiting), until a
// single probe finds Redis answering again. A hung Redis therefore costs
// one timeout per cooldown, not one per request. A fast failure
// (connection refused while Redis restarts) is not cooled down: trying
// again costs nothing, and counting returns to Redis the moment it is
// back.
type Guarded struct {
	inner    Shared
	timeout  time.Duration
	cooldown time.Duration
	now      func() time.Time

	downUntil atomic.Int64 // unix nanos on now's clock; 0 = up
	probing   atomic.Bool
}

// GuardOptions tunes NewGuarded; a zero field takes its default.
type GuardOptions struct {
	// Timeout bounds each operation, including the wait for a pooled
	// connection. A failure after at least half of it counts as slow.
	// Default 1 s.
	Timeout time.Duration
	// Cooldown is how long a slow failure keeps the store marked down.
	// Default 1 s.
	Cooldown time.Duration
	// Now is the clock for the cooldown and for telling slow failures
	// from fast ones. Default time.Now.
	Now func() time.Time
}

// errCoolingDown is what an operation returns, without touching the
// inner store, while the store is marked down.
var errCoolingDown = errors.New("redis failed recently; skipping it until the cooldown ends")

const (
	defaultGuardTimeout  = time.Second
	defaultGuardCooldown = time.Second
)

// NewGuarded wraps inner (Redis) with the per-operation timeout and the
// cooldown after a slow failure.
func NewGuarded(inner Shared, opts GuardOptions) *Guarded {
	s := &Guarded{inner: inner, timeout: opts.Timeout, cooldown: opts.Cooldown, now: opts.Now}
	if s.timeout <= 0 {
		s.timeout = defaultGuardTimeout
	}
	if s.cooldown <= 0 {
		s.cooldown = defaultGuardCooldown
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s
}

// begin decides whether an operation may use Redis now, and whether it is
// the single probe after a cooldown.
func (s *Guarded) begin() (bool, bool) {
	down := s.downUntil.Load()
	if down == 0 {
		return true, false
	}
	if s.now().UnixNano() < down {
		return false, false
	}
	if s.probing.CompareAndSwap(false, true) {
		return true, true
	}
	return false, false
}

// end records an operation's outcome. A caller's own cancellation says
// nothing about Redis.
func (s *Guarded) end(parent, ctx context.Context, err error, probe bool, started time.Time) {
	if probe {
		defer s.probing.Store(false)
	}
	switch {
	case parent.Err() != nil:
		// The caller went away: that says nothing about Redis.
	case err == nil:
		s.downUntil.Store(0)
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || s.now().Sub(started) >= s.timeout/2:
		s.downUntil.Store(s.now().Add(s.cooldown).UnixNano())
	}
}

// Apply is the inner Apply under the guard.
func (s *Guarded) Apply(ctx context.Context, incrs []Incr, gets []string) ([]int64, []int64, error) {
	return s.ApplyPeek(ctx, incrs, gets, nil)
}

// ApplyIfUp is Apply for background writes: while the store is marked
// down it fails at once with the cooldown error, even after the cooldown
// has passed, leaving the probe to a foreground operation (a periodic
// background write would otherwise probe at arbitrary times and, against
// a still-hung Redis, extend the cooldown over the requests that follow).
func (s *Guarded) ApplyIfUp(ctx context.Context, incrs []Incr, gets []string) ([]int64, []int64, error) {
	if s.downUntil.Load() != 0 {
		return nil, nil, errCoolingDown
	}
	return s.Apply(ctx, incrs, gets)
}

// GetBlob is the inner GetBlob under the guard.
func (s *Guarded) GetBlob(ctx context.Context, key string) ([]byte, bool, error) {
	return s.getBlob(ctx, key, 0, false)
}

// GetBlobRenew is the inner GetBlobRenew under the guard.
func (s *Guarded) GetBlobRenew(ctx context.Context, key string, ttl time.Duration) ([]byte, bool, error) {
	return s.getBlob(ctx, key, ttl, true)
}

func (s *Guarded) getBlob(ctx context.Context, key string, ttl time.Duration, renew bool) ([]byte, bool, error) {
	ok, probe := s.begin()
	if !ok {
		return nil, false, errCoolingDown
	}
	opCtx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	started := s.now()
	var v []byte
	var found bool
	var err error
	if renew {
		v, found, err = s.inner.GetBlobRenew(opCtx, key, ttl)
	} else {
		v, found, err = s.inner.GetBlob(opCtx, key)
	}
	s.end(ctx, opCtx, err, probe, started)
	return v, found, err
}

// SetBlob is the inner SetBlob under the guard.
func (s *Guarded) SetBlob(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	ok, probe := s.begin()
	if !ok {
		return errCoolingDown
	}
	opCtx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	started := s.now()
	err := s.inner.SetBlob(opCtx, key, value, ttl)
	s.end(ctx, opCtx, err, probe, started)
	return err
}

// PushList is the inner PushList under the guard, for background
// writes: while the store is marked down it fails at once (like
// ApplyIfUp), never probing it.
func (s *Guarded) PushList(ctx context.Context, key string, values []string, keep int) error {
	pl, isPusher := s.inner.(ListPusher)
	if !isPusher {
		return errors.New("store: no PushList")
	}
	if s.downUntil.Load() != 0 {
		return errCoolingDown
	}
	opCtx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	started := s.now()
	err := pl.PushList(opCtx, key, values, keep)
	s.end(ctx, opCtx, err, false, started)
	return err
}

// ListRange is the inner ListRange under the guard.
func (s *Guarded) ListRange(ctx context.Context, key string, n int) ([]string, error) {
	lr, isLister := s.inner.(ListPusher)
	if !isLister {
		return nil, errors.New("store: no ListRange")
	}
	var v []string
	err := s.guard(ctx, func(opCtx context.Context) error {
		var err error
		v, err = lr.ListRange(opCtx, key, n)
		return err
	})
	return v, err
}

// guard runs a rarely used operation under the guard (the request path's
// operations inline the same steps: a closure costs more under Yaegi).
func (s *Guarded) guard(ctx context.Context, op func(opCtx context.Context) error) error {
	ok, probe := s.begin()
	if !ok {
		return errCoolingDown
	}
	opCtx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	started := s.now()
	err := op(opCtx)
	s.end(ctx, opCtx, err, probe, started)
	return err
}

// SwapBlob is the inner SwapBlob under the guard (the inner store must
// be a Swapper).
func (s *Guarded) SwapBlob(ctx context.Context, key string, old, value []byte, ttl time.Duration) ([]byte, error) {
	sw, isSwapper := s.inner.(Swapper)
	if !isSwapper {
		return nil, errors.New("store: no SwapBlob")
	}
	var v []byte
	err := s.guard(ctx, func(opCtx context.Context) error {
		var err error
		v, err = sw.SwapBlob(opCtx, key, old, value, ttl)
		return err
	})
	return v, err
}

// Admit is the inner Admit under the guard.
func (s *Guarded) Admit(ctx context.Context, a *Admission, h Hold) (Verdict, error) {
	return s.AdmitPeek(ctx, a, h, nil)
}

// ApplyPeek is the inner ApplyPeek under the guard (without a peek, or
// over a store that cannot fold one, the inner Apply: p.Done stays
// false).
func (s *Guarded) ApplyPeek(ctx context.Context, incrs []Incr, gets []string, p *Peek) ([]int64, []int64, error) {
	ok, probe := s.begin()
	if !ok {
		return nil, nil, errCoolingDown
	}
	opCtx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	started := s.now()
	var a, b []int64
	var err error
	if pk, isPeeker := s.inner.(Peeker); isPeeker && p != nil {
		a, b, err = pk.ApplyPeek(opCtx, incrs, gets, p)
	} else {
		a, b, err = s.inner.Apply(opCtx, incrs, gets)
	}
	s.end(ctx, opCtx, err, probe, started)
	return a, b, err
}

// AdmitPeek is the inner AdmitPeek under the guard (without a peek, or
// over a store that cannot fold one, the inner Admit).
func (s *Guarded) AdmitPeek(ctx context.Context, a *Admission, h Hold, p *Peek) (Verdict, error) {
	ok, probe := s.begin()
	if !ok {
		return Verdict{}, errCoolingDown
	}
	opCtx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	started := s.now()
	var v Verdict
	var err error
	if pk, isPeeker := s.inner.(Peeker); isPeeker && p != nil {
		v, err = pk.AdmitPeek(opCtx, a, h, p)
	} else {
		v, err = s.inner.Admit(opCtx, a, h)
	}
	s.end(ctx, opCtx, err, probe, started)
	return v, err
}

// Settle is the inner Settle under the guard.
func (s *Guarded) Settle(ctx context.Context, st *Settlement) error {
	ok, probe := s.begin()
	if !ok {
		return errCoolingDown
	}
	opCtx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	started := s.now()
	err := s.inner.Settle(opCtx, st)
	s.end(ctx, opCtx, err, probe, started)
	return err
}

// Renew is the inner Renew under the guard.
func (s *Guarded) Renew(ctx context.Context, budgets []Budget, h Hold) error {
	ok, probe := s.begin()
	if !ok {
		return errCoolingDown
	}
	opCtx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	started := s.now()
	err := s.inner.Renew(opCtx, budgets, h)
	s.end(ctx, opCtx, err, probe, started)
	return err
}
