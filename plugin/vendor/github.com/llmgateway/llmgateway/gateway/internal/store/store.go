package store

import (
	"context"
	"time"
)

// Incr is one counter increment: Apply adds Delta to Key (a missing key
// starts at 0) and (re)sets the key's time to live to TTL. With Set, the
// key is set to Delta instead (Redis: SET key Delta, then the same
// EXPIRE; its post-increment value reads 0): a "last seen" timestamp,
// where the last write wins.
type Incr struct {
	Key   string
	Delta int64
	TTL   time.Duration
	Set   bool
}

// Counter applies one batch of counter operations in ONE round trip
// (Redis: one pipelined write, one read of all replies), however many
// keys the batch touches.
type Counter interface {
	// Apply performs every incr, then reads every get key (a missing key
	// reads 0). It returns the post-increment value of each incr and the
	// value of each get, in order. Semantics are at-least-once: a batch
	// resent after a lost reply counts twice, never zero times.
	Apply(ctx context.Context, incrs []Incr, gets []string) ([]int64, []int64, error)
}

// Blob holds opaque values with a time to live (the response cache).
type Blob interface {
	// GetBlob returns the value, whether it exists, and a store error.
	GetBlob(ctx context.Context, key string) ([]byte, bool, error)
	// SetBlob stores value for ttl (rounded up to whole seconds, at
	// least one).
	SetBlob(ctx context.Context, key string, value []byte, ttl time.Duration) error
	// GetBlobRenew is GetBlob that also renews an existing key's time to
	// live to ttl, in the same round trip.
	GetBlobRenew(ctx context.Context, key string, ttl time.Duration) ([]byte, bool, error)
}

// Peek is a blob read folded into another operation's round trip: the
// operation's commands are followed by GET Key and EXPIRE Key TTL (the
// read renews an existing key's time to live). Done reports that the
// read was made; Value and Found are its result.
type Peek struct {
	Key   string
	TTL   time.Duration
	Done  bool
	Found bool
	Value []byte
}

// Peeker folds a Peek into the counter and admission round trips. A nil
// peek is the plain operation.
type Peeker interface {
	ApplyPeek(ctx context.Context, incrs []Incr, gets []string, p *Peek) ([]int64, []int64, error)
	AdmitPeek(ctx context.Context, a *Admission, h Hold, p *Peek) (Verdict, error)
}

// Swapper moves a blob from one value to another atomically (a session
// binding that two replicas may move at once).
type Swapper interface {
	// SwapBlob sets key to value for ttl when it is missing or holds
	// old, and returns what it holds afterwards.
	SwapBlob(ctx context.Context, key string, old, value []byte, ttl time.Duration) ([]byte, error)
}

// ListPusher keeps a size-bounded list (the events mirror).
type ListPusher interface {
	// PushList puts values at the head of key's list (the last value
	// first) and trims it to keep entries, in one round trip.
	PushList(ctx context.Context, key string, values []string, keep int) error
	// ListRange is the list's first n entries.
	ListRange(ctx context.Context, key string, n int) ([]string, error)
}

// Shared is a store that is a Counter, a Blob and a Holder: Redis, and the
// Guarded store around it.
type Shared interface {
	Counter
	Blob
	Holder
}

var (
	_ Counter    = (*Memory)(nil)
	_ Shared     = (*Redis)(nil)
	_ Shared     = (*Guarded)(nil)
	_ Peeker     = (*Redis)(nil)
	_ Peeker     = (*Guarded)(nil)
	_ Swapper    = (*Redis)(nil)
	_ Swapper    = (*Guarded)(nil)
	_ ListPusher = (*Redis)(nil)
	_ ListPusher = (*Guarded)(nil)
)
