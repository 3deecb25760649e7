package gateway

import (
	"context"
	"sync"
	"time"
)

// memoryStore is the in-process counter store: the default without
// Redis, and the fallback when Redis fails and failOpen is set. Correct
// for one replica; each replica counts on its own.
type memoryStore struct {
	mu      sync.Mutex
	entries map[string]*memoryEntry
	now     func() time.Time
	ops     int
}

type memoryEntry struct {
	value   int64
	expires time.Time
}

// memoryStoreMaxTTL caps how long the in-process store keeps a key, so a
// long-running process does not keep every day bucket for 35 days. A
// window's own enforcement floor wins over the cap (see memoryTTL).
const memoryStoreMaxTTL = 48 * time.Hour

func newMemoryStore(now func() time.Time) *memoryStore {
	if now == nil {
		now = time.Now
	}
	return &memoryStore{entries: make(map[string]*memoryEntry), now: now}
}

// memoryTTL is how long the in-process store keeps a key written with
// ttl: the retention TTL capped at 48h, but never shorter than the
// window's own length plus slack, so enforcement stays correct at every
// window (a month key outlives its calendar month).
func memoryTTL(ttl time.Duration) time.Duration {
	if ttl <= memoryStoreMaxTTL {
		return ttl
	}
	if ttl >= monthWindow.ttl {
		return 32 * 24 * time.Hour
	}
	return memoryStoreMaxTTL
}

func (m *memoryStore) apply(ctx context.Context, incrs []counterIncr, gets []string) ([]int64, []int64, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ops++
	if m.ops%4096 == 0 {
		m.sweep(now)
	}
	incrOut := make([]int64, len(incrs))
	for i := 0; i < len(incrs); i++ {
		in := incrs[i]
		e := m.entries[in.key]
		if e == nil || !now.Before(e.expires) {
			e = &memoryEntry{}
			m.entries[in.key] = e
		}
		e.value += in.delta
		e.expires = now.Add(memoryTTL(in.ttl))
		incrOut[i] = e.value
	}
	getOut := make([]int64, len(gets))
	for i := 0; i < len(gets); i++ {
		if e := m.entries[gets[i]]; e != nil && now.Before(e.expires) {
			getOut[i] = e.value
		}
	}
	return incrOut, getOut, nil
}

// sweep drops expired keys; called every few thousand operations.
func (m *memoryStore) sweep(now time.Time) {
	for k, e := range m.entries {
		if !now.Before(e.expires) {
			delete(m.entries, k)
		}
	}
}

// size reports the number of live keys (tests).
func (m *memoryStore) size() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.entries)
}
