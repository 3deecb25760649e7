package gateway

import (
	"context"
	"sync"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/store"
)

// The provider success-rate counters: every upstream attempt, and
// whether it failed by the provider's fault, aggregated in process and
// written to the store in the background, one batch a second (with the
// statistics increments that rode no accounting round trip).

// healthWindows are the windows of the provider success-rate counters;
// with admin (statistics) on, adminHealthWindows (limiter.health).
var (
	healthWindows      = []*window{minuteWindow, dayWindow}
	adminHealthWindows = []*window{minuteWindow, hourWindow, dayWindow}
)

// attemptFlushEvery is how often the provider success-rate counts
// aggregated in process are written to the store.
const attemptFlushEvery = time.Second

// attemptFlushTimeout bounds one flush (shorter than half the guard's
// timeout, so a flush never counts as the guard's slow failure).
const attemptFlushTimeout = 400 * time.Millisecond

// attemptCounts aggregates the provider success-rate counters in process
// and writes them to the store in one batch per attemptFlushEvery, from
// one background goroutine that runs while there is something to write
// (it exits after a flush that leaves nothing pending, and the next
// attempt starts it again). Counts are kept per UTC minute, so each lands
// in the buckets of the minute its attempt happened in.
type attemptCounts struct {
	l *limiter

	mu      sync.Mutex
	cur     *attemptMinute   // the latest minute's counts (nil: none)
	done    []*attemptMinute // earlier minutes not yet written
	running bool             // the flush goroutine is running

	flushMu sync.Mutex // one flush at a time; wait blocks on a running one

	// stats are statistics increments that rode no accounting round trip
	// (stats.go), merged by key (deltas added; a Set keeps the latest).
	stats map[string]*store.Incr

	every time.Duration // flush period (attemptFlushEvery; tests change it before the first attempt)
}

// attemptMinute is one UTC minute's attempt counts, provider → model
// ("" for native passthrough) → counts.
type attemptMinute struct {
	minute int64
	at     time.Time // an instant of the minute (its buckets)
	cells  map[string]map[string]*attemptCell
}

type attemptCell struct {
	attempts, fails int64
}

func newAttemptCounts(l *limiter) *attemptCounts {
	return &attemptCounts{l: l, every: attemptFlushEvery}
}

// loop flushes every attemptFlushEvery until a flush leaves nothing
// pending.
func (a *attemptCounts) loop() {
	defer func() {
		if r := recover(); r != nil {
			a.mu.Lock()
			a.running = false
			a.mu.Unlock()
			logBackgroundPanic(a.l.log, "success-rate flush", "", r)
		}
	}()
	for {
		time.Sleep(a.every)
		a.flush()
		a.mu.Lock()
		idle := a.cur == nil && len(a.done) == 0 && len(a.stats) == 0
		if idle {
			a.running = false
		}
		a.mu.Unlock()
		if idle {
			return
		}
	}
}

// wait writes every pending count now, after any flush in progress
// (tests, Close): when it returns, every attempt recorded before the
// call is in the store.
func (a *attemptCounts) wait() { a.flush() }

// flush writes the pending counts in one store batch (nothing when there
// are none). A store error is logged by run; the counts are then lost,
// as a failed write always was.
func (a *attemptCounts) flush() {
	a.flushMu.Lock()
	defer a.flushMu.Unlock()
	a.mu.Lock()
	minutes := a.done
	if a.cur != nil {
		minutes = append(minutes, a.cur)
	}
	stats := a.stats
	a.done = nil
	a.cur = nil
	a.stats = nil
	a.mu.Unlock()
	var incrs []store.Incr
	windows := a.l.health
	for i := 0; i < len(minutes); i++ {
		incrs = minutes[i].appendIncrs(incrs, windows)
	}
	for _, in := range stats {
		incrs = append(incrs, *in)
	}
	if len(incrs) == 0 {
		return
	}
	// A short deadline of its own: a flush that meets a hung store gives
	// up as its caller (which tells the guard nothing about the store)
	// rather than waiting out the guard's timeout and marking the store
	// down over the requests that follow; and it never probes a store
	// marked down. The guard's state is the requests' to decide.
	ctx, cancel := context.WithTimeout(context.Background(), attemptFlushTimeout)
	defer cancel()
	l := a.l
	var err error
	if bg, ok := l.counters.(backgroundCounter); ok {
		_, _, err = bg.ApplyIfUp(ctx, incrs, nil)
	} else {
		_, _, err = l.counters.Apply(ctx, incrs, nil)
	}
	if err == nil {
		return
	}
	l.logStoreError(err)
	if l.failOpen && l.fallback != nil {
		_, _, _ = l.fallback.Apply(context.Background(), incrs, nil)
	}
}

// backgroundCounter is a store with a write for background work that
// never probes a store marked down (store.Guarded).
type backgroundCounter interface {
	ApplyIfUp(ctx context.Context, incrs []store.Incr, gets []string) ([]int64, []int64, error)
}

// appendIncrs appends the minute's counter increments: per provider,
// attempt (and fail, when any) × min, day at the provider level (every
// model, passthrough included), then the same per provider/model.
func (m *attemptMinute) appendIncrs(incrs []store.Incr, windows []*window) []store.Incr {
	for provider, models := range m.cells {
		var attempts, fails int64
		for model, c := range models {
			attempts += c.attempts
			fails += c.fails
			if model != "" {
				incrs = appendHealthIncrs(incrs, provModelStatsPrefix(provider+"/"+model), c.attempts, c.fails, m.at, windows)
			}
		}
		incrs = appendHealthIncrs(incrs, provStatsPrefix(provider), attempts, fails, m.at, windows)
	}
	return incrs
}

// appendHealthIncrs appends prefix's attempt and (when fails > 0) fail
// counters in every health window.
func appendHealthIncrs(incrs []store.Incr, prefix string, attempts, fails int64, at time.Time, windows []*window) []store.Incr {
	for j := 0; j < len(windows); j++ {
		w := windows[j]
		incrs = append(incrs, store.Incr{Key: prefix + "attempt:" + w.name + ":" + w.bucket(at), Delta: attempts, TTL: w.ttl})
		if fails > 0 {
			incrs = append(incrs, store.Incr{Key: prefix + "fail:" + w.name + ":" + w.bucket(at), Delta: fails, TTL: w.ttl})
		}
	}
	return incrs
}

// recordAttempt counts one upstream attempt, and whether it failed by the
// provider's fault, per provider and per provider/model (model "" for
// native passthrough: provider level only). Counted in process; written
// to the store within about attemptFlushEvery, in one batch for every
// attempt of that second.
func (l *limiter) recordAttempt(provider, model string, failed bool) {
	a := l.async
	if a == nil {
		return
	}
	now := l.now()
	sec := now.Unix() // the floored Unix minute, computed inline
	minute := sec / 60
	if sec%60 < 0 {
		minute--
	}
	a.mu.Lock()
	var c *attemptCell
	if m := a.cur; m != nil && m.minute == minute {
		c = m.cells[provider][model]
	}
	if c == nil {
		c = newAttemptCell(a, provider, model, minute, now)
	}
	c.attempts++
	if failed {
		c.fails++
	}
	start := !a.running
	a.running = true
	a.mu.Unlock()
	if start {
		go a.loop()
	}
}

// newAttemptCell is recordAttempt's cell for a provider and model not yet
// counted in this minute (the caller holds a.mu): a new minute closes the
// last one (queued for the flush). Its own function: under Yaegi a call
// pays for the callee's whole body, and most attempts find their cell.
func newAttemptCell(a *attemptCounts, provider, model string, minute int64, now time.Time) *attemptCell {
	m := a.cur
	if m == nil || m.minute != minute {
		if m != nil {
			a.done = append(a.done, m)
		}
		m = &attemptMinute{minute: minute, at: now, cells: map[string]map[string]*attemptCell{}}
		a.cur = m
	}
	models := m.cells[provider]
	if models == nil {
		models = map[string]*attemptCell{}
		m.cells[provider] = models
	}
	c := &attemptCell{}
	models[model] = c
	return c
}

// addStats queues statistics increments for the next background flush.
func (a *attemptCounts) addStats(incrs []store.Incr) {
	a.mu.Lock()
	if a.stats == nil {
		a.stats = make(map[string]*store.Incr, len(incrs))
	}
	for i := 0; i < len(incrs); i++ {
		in := &incrs[i]
		if p := a.stats[in.Key]; p != nil {
			if in.Set {
				if in.Delta > p.Delta {
					p.Delta = in.Delta
				}
			} else {
				p.Delta += in.Delta
			}
			continue
		}
		q := new(store.Incr)
		*q = *in
		a.stats[in.Key] = q
	}
	start := !a.running
	a.running = true
	a.mu.Unlock()
	if start {
		go a.loop()
	}
}
