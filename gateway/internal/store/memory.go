package store

import (
	"context"
	"sync"
	"time"
)

// Memory is the in-process Counter: the default without Redis, and the
// fallback when Redis fails and failOpen is set. Correct for one
// replica; each replica counts on its own. Expired keys read 0 and are
// dropped every few thousand operations.
type Memory struct {
	mu        sync.Mutex
	entries   map[string]*memoryEntry
	now       func() time.Time
	retention func(time.Duration) time.Duration
	ops       int
}

type memoryEntry struct {
	value   int64
	expires time.Time
}

// memorySweepEvery is how many Apply calls pass between two sweeps of
// expired keys.
const memorySweepEvery = 4096

// NewMemory returns an empty in-process store. now is its clock (nil:
// time.Now). retention maps an increment's TTL to how long the store
// keeps the key (nil: the TTL itself), so a long-running process need
// not keep every counter as long as Redis would.
func NewMemory(now func() time.Time, retention func(ttl time.Duration) time.Duration) *Memory {
	if now == nil {
		now = time.Now
	}
	return &Memory{entries: make(map[string]*memoryEntry), now: now, retention: retention}
}

// Apply performs the batch under one lock; it never fails.
func (m *Memory) Apply(ctx context.Context, incrs []Incr, gets []string) ([]int64, []int64, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ops++
	if m.ops%memorySweepEvery == 0 {
		m.sweep(now)
	}
	incrOut := make([]int64, len(incrs))
	for i := 0; i < len(incrs); i++ {
		in := incrs[i]
		e := m.entries[in.Key]
		if e == nil || !now.Before(e.expires) {
			e = &memoryEntry{}
			m.entries[in.Key] = e
		}
		e.value += in.Delta
		keep := in.TTL
		if m.retention != nil {
			keep = m.retention(in.TTL)
		}
		e.expires = now.Add(keep)
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

// sweep drops expired keys; called every memorySweepEvery operations.
func (m *Memory) sweep(now time.Time) {
	for k, e := range m.entries {
		if !now.Before(e.expires) {
			delete(m.entries, k)
		}
	}
}
