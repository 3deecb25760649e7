package store

import (
	"context"
	"strings"
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
	// keep memoizes retention: how long (nanoseconds) a key written with
	// a TTL is kept, so Apply calls retention once per distinct TTL.
	keep map[time.Duration]int64
	ops  int
	// holds are the budgets' live holds (hold.go), by Budget.Holds.
	holds map[string]*memoryHolds
}

type memoryEntry struct {
	value   int64
	expires int64 // unix nanoseconds on the store's clock
}

// memoryMaxKeep bounds how long a key is kept.
const memoryMaxKeep = 100 * 365 * 24 * time.Hour

// memorySweepEvery is how many Apply calls pass between two sweeps of
// expired keys.
const memorySweepEvery = 4096

// NewMemory returns an empty in-process store. now is its clock (nil:
// time.Now). retention maps an increment's TTL to how long the store
// keeps the key (nil: the TTL itself), so a long-running process need
// not keep every counter as long as Redis would. retention must be a
// pure function of the TTL: the store remembers its answers.
func NewMemory(now func() time.Time, retention func(ttl time.Duration) time.Duration) *Memory {
	if now == nil {
		now = time.Now
	}
	return &Memory{entries: make(map[string]*memoryEntry), now: now, retention: retention, keep: make(map[time.Duration]int64)}
}

// Apply performs the batch under one lock; it never fails. It only reads
// incrs and gets.
func (m *Memory) Apply(ctx context.Context, incrs []Incr, gets []string) ([]int64, []int64, error) {
	now := m.now().UnixNano()
	m.mu.Lock() // unlocked without defer (cheaper interpreted): nothing below panics
	m.ops++
	if m.ops%memorySweepEvery == 0 {
		m.sweep(now)
	}
	incrOut := applyIncrs(m, now, incrs)
	var getOut []int64
	if len(gets) > 0 {
		getOut = readGets(m, now, gets)
	} else {
		getOut = []int64{}
	}
	m.mu.Unlock()
	return incrOut, getOut, nil
}

// readGets reads the get keys of a batch (the caller holds m.mu); a
// missing or expired key reads 0. Its own function: under Yaegi a call
// pays for the callee's whole body, and most batches read nothing.
func readGets(m *Memory, now int64, gets []string) []int64 {
	out := make([]int64, len(gets))
	for i := 0; i < len(gets); i++ {
		if e := m.entries[gets[i]]; e != nil && now < e.expires {
			out[i] = e.value
		}
	}
	return out
}

// applyIncrs adds each incr's delta to its key (a missing or expired
// key starts at 0), sets its expiry, and returns the new values (the
// caller holds m.mu).
func applyIncrs(m *Memory, now int64, incrs []Incr) []int64 {
	out := make([]int64, len(incrs))
	for i := 0; i < len(incrs); i++ {
		in := &incrs[i]
		keep, ok := m.keep[in.TTL]
		if !ok {
			keep = m.keepFor(in.TTL)
		}
		if in.Set {
			setEntry(m, in, now+keep)
			continue // its value reads 0, as Redis's SET reply does
		}
		e := m.entries[in.Key]
		if e == nil {
			e = &memoryEntry{value: in.Delta, expires: now + keep}
			m.entries[in.Key] = e
		} else if now >= e.expires {
			e.value = in.Delta
			e.expires = now + keep
		} else {
			e.value += in.Delta
			e.expires = now + keep
		}
		out[i] = e.value
	}
	return out
}

// setEntry performs a Set incr (the caller holds m.mu): the key takes
// the delta as its value, and expires at expires. Its own function, as
// readGets.
func setEntry(m *Memory, in *Incr, expires int64) {
	e := m.entries[in.Key]
	if e == nil {
		e = &memoryEntry{}
		m.entries[in.Key] = e
	}
	e.value = in.Delta
	e.expires = expires
}

// keepFor computes and memoizes how long a key written with ttl is kept.
func (m *Memory) keepFor(ttl time.Duration) int64 {
	keep := ttl
	if m.retention != nil {
		keep = m.retention(ttl)
	}
	if keep > memoryMaxKeep {
		keep = memoryMaxKeep // unix nanos + keep must not overflow
	}
	m.keep[ttl] = int64(keep)
	return int64(keep)
}

// sweep drops expired keys; called every memorySweepEvery operations.
func (m *Memory) sweep(now int64) {
	for k, e := range m.entries {
		if now >= e.expires {
			delete(m.entries, k)
		}
	}
	sweepHolds(m, now)
}

// Snapshot returns every live key that starts with prefix and its value
// (tests and diagnostics; it copies under the store's lock).
func (m *Memory) Snapshot(prefix string) map[string]int64 {
	now := m.now().UnixNano()
	out := map[string]int64{}
	m.mu.Lock()
	for k, e := range m.entries {
		if now < e.expires && strings.HasPrefix(k, prefix) {
			out[k] = e.value
		}
	}
	m.mu.Unlock()
	return out
}
