package gateway

import (
	"context"
	"time"
)

// Counter and blob storage. Two implementations: the in-process
// memoryStore (store_memory.go) and the Redis store over the stdlib-only
// RESP2 client (resp.go). The limiter and the response cache only see
// these interfaces.

// counterIncr adds delta to key, creating it at 0, and (re)sets its TTL.
type counterIncr struct {
	key   string
	delta int64
	ttl   time.Duration
}

// counterStore applies one batch of counter operations in ONE round trip
// (Redis: one pipelined write, one read of all replies), however many
// keys the batch touches.
type counterStore interface {
	// apply performs every incr (INCRBY + EXPIRE), then reads every get
	// key (a missing key reads 0). It returns the post-increment value
	// of each incr and the value of each get, in order. Semantics are
	// at-least-once: a batch resent after a lost reply counts twice,
	// never zero times.
	apply(ctx context.Context, incrs []counterIncr, gets []string) ([]int64, []int64, error)
}

// blobStore holds opaque values with a TTL (the response cache).
type blobStore interface {
	// getBlob returns the value, whether it exists, and a store error.
	getBlob(ctx context.Context, key string) ([]byte, bool, error)
	// setBlob stores value for ttl (at least one second).
	setBlob(ctx context.Context, key string, value []byte, ttl time.Duration) error
}
