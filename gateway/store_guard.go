package gateway

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// guardedStore bounds what a failing Redis can cost a request. Every
// operation gets a short timeout (which also bounds the wait for a pooled
// connection). A failure that was slow — a hung or unreachable-by-timeout
// Redis — marks the store down for a cooldown: operations then fail at
// once (so the limiter falls back or answers 503 without waiting), until a
// single probe finds Redis answering again. A hung Redis therefore costs
// one timeout per cooldown, not one per request. A fast failure
// (connection refused while Redis restarts) is not cooled down: trying
// again costs nothing, and counting returns to Redis the moment it is
// back.
type guardedStore struct {
	inner    sharedStore
	timeout  time.Duration
	cooldown time.Duration
	now      func() time.Time

	downUntil atomic.Int64 // unix nanos; 0 = up
	probing   atomic.Bool
}

var errStoreCoolingDown = errors.New("redis failed recently; skipping it until the cooldown ends")

const (
	storeOpTimeout    = time.Second
	storeDownCooldown = time.Second
)

// sharedStore is a store that is both a counterStore and a blobStore
// (Redis).
type sharedStore interface {
	apply(ctx context.Context, incrs []counterIncr, gets []string) ([]int64, []int64, error)
	getBlob(ctx context.Context, key string) ([]byte, bool, error)
	setBlob(ctx context.Context, key string, value []byte, ttl time.Duration) error
}

func newGuardedStore(inner sharedStore) *guardedStore {
	return &guardedStore{inner: inner, timeout: storeOpTimeout, cooldown: storeDownCooldown, now: time.Now}
}

// begin decides whether an operation may use Redis now, and whether it is
// the single probe after a cooldown.
func (s *guardedStore) begin() (bool, bool) {
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
func (s *guardedStore) end(parent, ctx context.Context, err error, probe bool, started time.Time) {
	if probe {
		defer s.probing.Store(false)
	}
	switch {
	case parent.Err() != nil:
		// The caller went away: that says nothing about Redis.
	case err == nil:
		s.downUntil.Store(0)
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || time.Since(started) >= s.timeout/2:
		s.downUntil.Store(s.now().Add(s.cooldown).UnixNano())
	}
}

func (s *guardedStore) apply(ctx context.Context, incrs []counterIncr, gets []string) ([]int64, []int64, error) {
	ok, probe := s.begin()
	if !ok {
		return nil, nil, errStoreCoolingDown
	}
	opCtx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	started := time.Now()
	a, b, err := s.inner.apply(opCtx, incrs, gets)
	s.end(ctx, opCtx, err, probe, started)
	return a, b, err
}

func (s *guardedStore) getBlob(ctx context.Context, key string) ([]byte, bool, error) {
	ok, probe := s.begin()
	if !ok {
		return nil, false, errStoreCoolingDown
	}
	opCtx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	started := time.Now()
	v, found, err := s.inner.getBlob(opCtx, key)
	s.end(ctx, opCtx, err, probe, started)
	return v, found, err
}

func (s *guardedStore) setBlob(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	ok, probe := s.begin()
	if !ok {
		return errStoreCoolingDown
	}
	opCtx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	started := time.Now()
	err := s.inner.setBlob(opCtx, key, value, ttl)
	s.end(ctx, opCtx, err, probe, started)
	return err
}
