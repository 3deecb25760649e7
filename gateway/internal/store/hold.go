package store

import (
	"context"
	"strconv"
	"sync"
	"time"
)

// Budget holds (reserve and settle). A request subject to a token or
// cost budget is admitted by one atomic Admit: its request counters are
// counted, its checks run in order, and — when none refuses — its worst
// case is held against every budgeted scope until Settle replaces the
// hold with what the request really used. A hold expires on its own
// after its TTL unless renewed, so a crashed replica's holds stop
// counting; a live request renews its hold before it expires.

// Budget is one budgeted scope's hold state: Holds is the set of live
// holds (Redis: a sorted set of members scored by expiry, in
// milliseconds on Redis's clock), Sums the amounts they hold (Redis: a
// hash with fields "t", tokens, and "c", cost).
type Budget struct {
	Holds string
	Sums  string
}

// Check is one admission check, run after the counts, in order; the
// first that fails refuses the request and nothing is held.
type Check struct {
	// Count is the 1-based index into Admission.Counts of a request-rate
	// check: it fails when that counter's post-increment value passes
	// Limit. 0 makes the check a budget check.
	Count int
	// Budget is the index into Admission.Budgets of a budget check: it
	// fails when the sum of the Used counters, plus what the scope already
	// holds, plus this request's hold, passes Limit — or, whatever the
	// hold, when used and held already reach it.
	Budget int
	// Cost compares cost amounts (Hold.Cost and the held cost); otherwise
	// tokens.
	Cost  bool
	Used  []string
	Limit int64
}

// Hold is one request's reservation.
type Hold struct {
	// Member identifies the hold in every scope's set (HoldMember).
	Member string
	// Tokens and Cost are what it holds (non-negative).
	Tokens, Cost int64
	// TTL is how long the hold lives unless renewed (at least 1 ms).
	TTL time.Duration
}

// HoldMember is the hold's member string: the request's unique id and
// the amounts, which the store reads back when the hold expires.
func HoldMember(id string, tokens, cost int64) string {
	return id + ":" + strconv.FormatInt(tokens, 10) + ":" + strconv.FormatInt(cost, 10)
}

// Admission is the check-count-and-hold of the requests of one scope set
// (within a minute: its counters' keys change with the window buckets).
// It is read-only once built and shared by concurrent Admits, which
// cache its encoding in it: use it by pointer, never copy it.
type Admission struct {
	// Counts are incremented first, like Apply's incrs.
	Counts  []Incr
	Budgets []Budget
	Checks  []Check

	encOnce sync.Once
	enc     []byte // the Redis command without its per-request tail
}

// Verdict is Admit's answer: Refused is the index of the check that
// failed (-1: admitted, and the hold is in place in every budget). For
// a budget check, Used and Held are the amounts it saw (without this
// request's hold).
type Verdict struct {
	Refused    int
	Used, Held int64
}

// Settlement ends a hold: Incrs (the request's usage, like Apply's
// incrs) are applied before the hold is removed from every budget, so no
// reader ever sees neither.
type Settlement struct {
	Incrs   []Incr
	Budgets []Budget
	Hold    Hold
}

// Holder is a store that admits with holds: Memory and Redis (and the
// Guarded store around it). Each operation is one round trip.
type Holder interface {
	// Admit counts a's counters, runs its checks, and holds h in every
	// budget when none refuses.
	Admit(ctx context.Context, a *Admission, h Hold) (Verdict, error)
	// Settle applies the usage and removes the hold (a hold already
	// expired is not removed twice).
	Settle(ctx context.Context, s *Settlement) error
	// Renew extends the hold's life by its TTL from now in every budget,
	// holding it again where it has already expired.
	Renew(ctx context.Context, budgets []Budget, h Hold) error
}

var (
	_ Holder = (*Memory)(nil)
	_ Holder = (*Redis)(nil)
	_ Holder = (*Guarded)(nil)
)

// memoryHolds is one budget's holds in the in-process store.
type memoryHolds struct {
	expires     map[string]int64 // member → unix nanos
	hold        map[string]Hold  // member → its amounts
	tokens      int64            // held in total
	cost        int64
	nextExpiry  int64 // no member expires before this (0: none held)
	lastTouched int64 // unix nanos of the last write, for the sweep
}

// Admit is Admission under the store's lock; it never fails.
func (m *Memory) Admit(ctx context.Context, a *Admission, hold Hold) (Verdict, error) {
	now := m.now().UnixNano()
	m.mu.Lock()
	m.ops++
	if m.ops%memorySweepEvery == 0 {
		m.sweep(now)
	}
	counts := applyIncrs(m, now, a.Counts)
	held := make([]*memoryHolds, len(a.Budgets))
	for i := 0; i < len(a.Budgets); i++ {
		held[i] = liveHolds(m, a.Budgets[i].Holds, now)
	}
	for i := 0; i < len(a.Checks); i++ {
		c := &a.Checks[i]
		if c.Count > 0 {
			if counts[c.Count-1] > c.Limit {
				m.mu.Unlock()
				return Verdict{Refused: i}, nil
			}
			continue
		}
		var used int64
		for j := 0; j < len(c.Used); j++ {
			if e := m.entries[c.Used[j]]; e != nil && now < e.expires {
				used += e.value
			}
		}
		h := held[c.Budget]
		have, mine := h.tokens, hold.Tokens
		if c.Cost {
			have, mine = h.cost, hold.Cost
		}
		if used+have+mine > c.Limit || used+have >= c.Limit {
			m.mu.Unlock()
			return Verdict{Refused: i, Used: used, Held: have}, nil
		}
	}
	until := now + int64(hold.TTL)
	for i := 0; i < len(held); i++ {
		addHold(held[i], hold, until, now)
	}
	m.mu.Unlock()
	return Verdict{Refused: -1}, nil
}

// Settle applies the usage and drops the hold, under the lock.
func (m *Memory) Settle(ctx context.Context, s *Settlement) error {
	now := m.now().UnixNano()
	m.mu.Lock()
	applyIncrs(m, now, s.Incrs)
	for i := 0; i < len(s.Budgets); i++ {
		h := m.holds[s.Budgets[i].Holds]
		if h == nil {
			continue
		}
		if _, ok := h.expires[s.Hold.Member]; ok {
			dropHold(h, s.Hold.Member)
		}
	}
	m.mu.Unlock()
	return nil
}

// Renew extends the hold, or holds it again where it expired.
func (m *Memory) Renew(ctx context.Context, budgets []Budget, hold Hold) error {
	now := m.now().UnixNano()
	until := now + int64(hold.TTL)
	m.mu.Lock()
	for i := 0; i < len(budgets); i++ {
		h := liveHolds(m, budgets[i].Holds, now)
		if _, ok := h.expires[hold.Member]; ok {
			h.expires[hold.Member] = until
			h.lastTouched = now
			continue
		}
		addHold(h, hold, until, now)
	}
	m.mu.Unlock()
	return nil
}

// liveHolds is the budget's holds with the expired ones dropped (the
// caller holds m.mu).
func liveHolds(m *Memory, key string, now int64) *memoryHolds {
	h := m.holds[key]
	if h == nil {
		h = &memoryHolds{expires: map[string]int64{}, hold: map[string]Hold{}}
		if m.holds == nil {
			m.holds = map[string]*memoryHolds{}
		}
		m.holds[key] = h
		return h
	}
	if h.nextExpiry == 0 || now < h.nextExpiry {
		return h
	}
	var next int64
	for member, exp := range h.expires {
		if now >= exp {
			dropHold(h, member)
			continue
		}
		if next == 0 || exp < next {
			next = exp
		}
	}
	h.nextExpiry = next
	return h
}

func addHold(h *memoryHolds, hold Hold, until, now int64) {
	h.expires[hold.Member] = until
	h.hold[hold.Member] = hold
	h.tokens += hold.Tokens
	h.cost += hold.Cost
	if h.nextExpiry == 0 || until < h.nextExpiry {
		h.nextExpiry = until
	}
	h.lastTouched = now
}

func dropHold(h *memoryHolds, member string) {
	hold := h.hold[member]
	h.tokens -= hold.Tokens
	h.cost -= hold.Cost
	delete(h.expires, member)
	delete(h.hold, member)
	if len(h.expires) == 0 {
		h.nextExpiry = 0
	}
}

// memoryHoldsIdle is how long an empty budget's hold set is kept after
// its last write before the sweep drops it.
const memoryHoldsIdle = time.Hour

// sweepHolds drops empty hold sets idle for memoryHoldsIdle (the caller
// holds m.mu).
func sweepHolds(m *Memory, now int64) {
	for key, h := range m.holds {
		if h.nextExpiry != 0 && now >= h.nextExpiry {
			liveHolds(m, key, now)
		}
		if len(h.expires) == 0 && now-h.lastTouched >= int64(memoryHoldsIdle) {
			delete(m.holds, key)
		}
	}
}
