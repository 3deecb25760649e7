package gateway

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
	"github.com/llmgateway/llmgateway/gateway/internal/store"
	"github.com/llmgateway/llmgateway/gateway/internal/translate"
)

// Limits and accounting: fixed UTC windows, counted per scope (the user,
// each member group, and a synthetic "total"), in one store round trip
// for the check and one for the accounting of a request.

// window is a fixed UTC calendar window.
type window struct {
	name string
	// layout formats a time into the window's bucket id.
	layout string
	// ttl is the counter key's retention (Redis); the in-process store
	// caps it (memoryTTL).
	ttl time.Duration
}

var (
	minuteWindow = &window{name: "min", layout: "200601021504", ttl: 2 * time.Minute}
	hourWindow   = &window{name: "hour", layout: "2006010215", ttl: 48 * time.Hour}
	dayWindow    = &window{name: "day", layout: "20060102", ttl: 35 * 24 * time.Hour}
	monthWindow  = &window{name: "month", layout: "200601", ttl: 400 * 24 * time.Hour}

	// countedWindows are the windows every request counter is kept in
	// (hour is for charts only; no limit names it).
	countedWindows = []*window{minuteWindow, hourWindow, dayWindow, monthWindow}
	// usageWindows are where tokens and cost accumulate.
	usageWindows = []*window{hourWindow, dayWindow, monthWindow}
)

// memoryStoreMaxTTL caps how long the in-process store keeps a key, so a
// long-running process does not keep every day bucket for 35 days. A
// window's own enforcement floor wins over the cap (see memoryTTL).
const memoryStoreMaxTTL = 48 * time.Hour

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

// newMemoryStore returns an in-process counter store that keeps each key
// for memoryTTL of its window's TTL.
func newMemoryStore(now func() time.Time) *store.Memory {
	return store.NewMemory(now, memoryTTL)
}

// bucket is the window's bucket id for t (always read in UTC).
func (w *window) bucket(t time.Time) string { return t.UTC().Format(w.layout) }

// start is the beginning of the window containing t.
func (w *window) start(t time.Time) time.Time {
	t = t.UTC()
	switch w {
	case minuteWindow:
		return t.Truncate(time.Minute)
	case hourWindow:
		return t.Truncate(time.Hour)
	case dayWindow:
		return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	}
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// end is the first instant after the window containing t.
func (w *window) end(t time.Time) time.Time {
	s := w.start(t)
	switch w {
	case minuteWindow:
		return s.Add(time.Minute)
	case hourWindow:
		return s.Add(time.Hour)
	case dayWindow:
		return s.AddDate(0, 0, 1)
	}
	return s.AddDate(0, 1, 0)
}

// compiledLimits is LimitsConfig validated, with costs in micro-USD.
type compiledLimits struct {
	requestsPerMinute, requestsPerDay int64
	tokensPerDay, tokensPerMonth      int64
	costPerDayMicros                  int64
	costPerMonthMicros                int64
}

func (l *compiledLimits) hasTokenLimits() bool {
	return l != nil && (l.tokensPerDay > 0 || l.tokensPerMonth > 0)
}

func (l *compiledLimits) hasCostLimits() bool {
	return l != nil && (l.costPerDayMicros > 0 || l.costPerMonthMicros > 0)
}

// compileLimits validates a limits block (nil stays nil: unlimited).
func compileLimits(field string, lc *LimitsConfig) (*compiledLimits, error) {
	if lc == nil {
		return nil, nil
	}
	counts := []struct {
		name  string
		value int64
	}{
		{"requestsPerMinute", lc.RequestsPerMinute},
		{"requestsPerDay", lc.RequestsPerDay},
		{"tokensPerDay", lc.TokensPerDay},
		{"tokensPerMonth", lc.TokensPerMonth},
	}
	for i := 0; i < len(counts); i++ {
		if counts[i].value < 0 {
			return nil, fmt.Errorf("config: %s.%s: %d must not be negative (0 is unlimited)", field, counts[i].name, counts[i].value)
		}
	}
	day, err := usdToMicros(field+".costPerDayUSD", lc.CostPerDayUSD)
	if err != nil {
		return nil, err
	}
	month, err := usdToMicros(field+".costPerMonthUSD", lc.CostPerMonthUSD)
	if err != nil {
		return nil, err
	}
	l := &compiledLimits{
		requestsPerMinute: lc.RequestsPerMinute, requestsPerDay: lc.RequestsPerDay,
		tokensPerDay: lc.TokensPerDay, tokensPerMonth: lc.TokensPerMonth,
		costPerDayMicros: day, costPerMonthMicros: month,
	}
	return l, nil
}

// usdToMicros converts a USD budget to integer micro-USD, refusing
// negative, NaN, infinite and absurd values.
func usdToMicros(field string, usd float64) (int64, error) {
	if math.IsNaN(usd) || math.IsInf(usd, 0) || usd < 0 {
		return 0, fmt.Errorf("config: %s: %v must be a finite, non-negative USD amount", field, usd)
	}
	if usd > 1e12 {
		return 0, fmt.Errorf("config: %s: %v is too large", field, usd)
	}
	return int64(math.Round(usd * 1e6)), nil
}

// limitScope is one counted scope of a request.
type limitScope struct {
	kind   string // "user", "group" or "total"
	id     string
	limits *compiledLimits // nil: counted, never enforced
	prefix string          // "llmgw:{kind}:{id}:", built once (scopePrefix)
}

// scopePrefix is the key prefix of a scope's counters.
func scopePrefix(kind, id string) string {
	return "llmgw:" + kind + ":" + strings.Replace(id, ":", "%3A", -1) + ":"
}

// key is the scope's counter key for metric in window bucket.
func (s *limitScope) key(metric string, w *window, bucket string) string {
	p := s.prefix
	if p == "" {
		p = scopePrefix(s.kind, s.id)
	}
	return p + metric + ":" + w.name + ":" + bucket
}

// windowBuckets holds each window's bucket id for one instant, so a
// request formats each time once, not once per key.
type windowBuckets struct {
	min, hour, day, month string
}

func bucketsAt(t time.Time) windowBuckets {
	return windowBuckets{min: minuteWindow.bucket(t), hour: hourWindow.bucket(t), day: dayWindow.bucket(t), month: monthWindow.bucket(t)}
}

func (b *windowBuckets) of(w *window) string {
	switch w {
	case minuteWindow:
		return b.min
	case hourWindow:
		return b.hour
	case dayWindow:
		return b.day
	}
	return b.month
}

func (s *limitScope) name() string { return s.kind + " \"" + s.id + "\"" }

// limiter enforces limits and accounts usage against a store, falling
// back to the in-process store on a store error when failOpen is set.
type limiter struct {
	counters store.Counter // Redis, or the memory store
	fallback *store.Memory // nil when counters is already the memory store
	failOpen bool
	now      func() time.Time
	log      *logger
	async    *asyncWriter // provider success rates (rejections are counted on the request path)

	lastErrorLog atomic.Int64 // unix nanos of the last store-error line
}

func newLimiter(counters store.Counter, fallback *store.Memory, failOpen bool, now func() time.Time, log *logger) *limiter {
	if now == nil {
		now = time.Now
	}
	return &limiter{counters: counters, fallback: fallback, failOpen: failOpen, now: now, log: log, async: newAsyncWriter(64)}
}

// errStoreUnavailable is the 503 when Redis fails and failOpen is false.
func errStoreUnavailable() *apiError {
	e := apierr.New(http.StatusServiceUnavailable, "server_error", "limits_store_unavailable",
		"the limits store is unreachable; retry shortly")
	e.RetryAfter = "1"
	return e
}

// run applies a batch, on the fallback store when the primary fails and
// failOpen is set. A store error is logged at most once per 30 s.
func (l *limiter) run(ctx context.Context, incrs []store.Incr, gets []string) ([]int64, []int64, error) {
	a, b, err := l.counters.Apply(ctx, incrs, gets)
	if err == nil {
		return a, b, nil
	}
	if ctx.Err() != nil {
		return nil, nil, err
	}
	l.logStoreError(err)
	if !l.failOpen || l.fallback == nil {
		return nil, nil, err
	}
	return l.fallback.Apply(ctx, incrs, gets)
}

func (l *limiter) logStoreError(err error) {
	now := time.Now().UnixNano()
	last := l.lastErrorLog.Load()
	if last != 0 && now-last < int64(30*time.Second) {
		return
	}
	if !l.lastErrorLog.CompareAndSwap(last, now) {
		return
	}
	if l.failOpen && l.fallback != nil {
		l.log.errorf("limits store error (counting in process until it recovers; logged at most every 30s): %v", err)
		return
	}
	l.log.errorf("limits store error (requests get 503; logged at most every 30s): %v", err)
}

// checkAndCount counts the request in every scope and window, then
// refuses it (429) when a scope's request rate is over its limit or its
// token or cost budget is already used up. One store round trip.
func (l *limiter) checkAndCount(ctx context.Context, scopes []limitScope) *apiError {
	now := l.now()
	b := bucketsAt(now)
	incrs := make([]store.Incr, 0, len(scopes)*len(countedWindows))
	var gets []string
	for i := 0; i < len(scopes); i++ {
		s := &scopes[i]
		for j := 0; j < len(countedWindows); j++ {
			w := countedWindows[j]
			incrs = append(incrs, store.Incr{Key: s.key("req", w, b.of(w)), Delta: 1, TTL: w.ttl})
		}
		if s.limits.hasTokenLimits() {
			gets = append(gets,
				s.key("tokin", dayWindow, b.day), s.key("tokout", dayWindow, b.day),
				s.key("tokin", monthWindow, b.month), s.key("tokout", monthWindow, b.month))
		}
		if s.limits.hasCostLimits() {
			gets = append(gets, s.key("cost", dayWindow, b.day), s.key("cost", monthWindow, b.month))
		}
	}
	counts, values, err := l.run(ctx, incrs, gets)
	if err != nil {
		if ctx.Err() != nil {
			return upstreamFailure(apierr.ClassClientCancel, "client closed the request", err)
		}
		return errStoreUnavailable()
	}
	g := 0
	for i := 0; i < len(scopes); i++ {
		s := &scopes[i]
		base := i * len(countedWindows)
		lim := s.limits
		var tokDay, tokMonth, costDay, costMonth int64
		if lim.hasTokenLimits() {
			tokDay = values[g] + values[g+1]
			tokMonth = values[g+2] + values[g+3]
			g += 4
		}
		if lim.hasCostLimits() {
			costDay = values[g]
			costMonth = values[g+1]
			g += 2
		}
		if lim == nil {
			continue
		}
		checks := []struct {
			over  bool
			limit string
			value int64
			w     *window
		}{
			{lim.requestsPerMinute > 0 && counts[base] > lim.requestsPerMinute, "requestsPerMinute", lim.requestsPerMinute, minuteWindow},
			{lim.requestsPerDay > 0 && counts[base+2] > lim.requestsPerDay, "requestsPerDay", lim.requestsPerDay, dayWindow},
			{lim.tokensPerDay > 0 && tokDay >= lim.tokensPerDay, "tokensPerDay", lim.tokensPerDay, dayWindow},
			{lim.tokensPerMonth > 0 && tokMonth >= lim.tokensPerMonth, "tokensPerMonth", lim.tokensPerMonth, monthWindow},
			{lim.costPerDayMicros > 0 && costDay >= lim.costPerDayMicros, "costPerDayUSD", lim.costPerDayMicros, dayWindow},
			{lim.costPerMonthMicros > 0 && costMonth >= lim.costPerMonthMicros, "costPerMonthUSD", lim.costPerMonthMicros, monthWindow},
		}
		for k := 0; k < len(checks); k++ {
			if checks[k].over {
				l.countRejection(ctx, scopes, i, now)
				return errLimitExceeded(s, checks[k].limit, checks[k].value, checks[k].w, now)
			}
		}
	}
	return nil
}

// errLimitExceeded is the 429 naming the scope and the limit, with
// Retry-After set to the seconds left in the limit's window.
func errLimitExceeded(s *limitScope, limit string, value int64, w *window, now time.Time) *apiError {
	shown := strconv.FormatInt(value, 10)
	what := "requests"
	switch limit {
	case "tokensPerDay", "tokensPerMonth":
		what = "tokens"
	case "costPerDayUSD", "costPerMonthUSD":
		what = "cost"
		shown = "$" + strconv.FormatFloat(float64(value)/1e6, 'f', -1, 64)
	}
	e := apierr.New(http.StatusTooManyRequests, "rate_limit_error", "rate_limit_exceeded",
		s.name()+" is over its "+limit+" limit ("+shown+" "+what+")")
	secs := int64(math.Ceil(w.end(now).Sub(now).Seconds()))
	if secs < 1 {
		secs = 1
	}
	e.RetryAfter = strconv.FormatInt(secs, 10)
	return e
}

// countRejection counts a refusal for the refusing scope and for total.
// It runs on the request goroutine (one more round trip, paid only by
// refused requests) so that a burst of refusals is counted exactly.
func (l *limiter) countRejection(ctx context.Context, scopes []limitScope, refused int, now time.Time) {
	b := bucketsAt(now)
	var incrs []store.Incr
	for i := 0; i < len(scopes); i++ {
		if i != refused && scopes[i].kind != "total" {
			continue
		}
		for j := 0; j < len(countedWindows); j++ {
			w := countedWindows[j]
			incrs = append(incrs, store.Incr{Key: scopes[i].key("rej", w, b.of(w)), Delta: 1, TTL: w.ttl})
		}
	}
	_, _, _ = l.run(ctx, incrs, nil) // a store error is logged by run
}

// account adds a finished request's tokens and cost to every scope's
// hour, day and month windows. One store round trip; nothing when there
// is nothing to add.
func (l *limiter) account(ctx context.Context, scopes []limitScope, u translate.Usage, costMicros int64) {
	b := bucketsAt(l.now())
	metrics := []struct {
		name  string
		delta int64
	}{{"tokin", u.PromptTokens}, {"tokout", u.CompletionTokens}, {"cost", costMicros}}
	var incrs []store.Incr
	for i := 0; i < len(scopes); i++ {
		for m := 0; m < len(metrics); m++ {
			if metrics[m].delta <= 0 {
				continue
			}
			for j := 0; j < len(usageWindows); j++ {
				w := usageWindows[j]
				incrs = append(incrs, store.Incr{Key: scopes[i].key(metrics[m].name, w, b.of(w)), Delta: metrics[m].delta, TTL: w.ttl})
			}
		}
	}
	if len(incrs) == 0 {
		return
	}
	if _, _, err := l.run(ctx, incrs, nil); err != nil {
		l.log.errorf("usage of a finished request could not be recorded: %v", err)
	}
}

// asyncWriter runs counter writes that nothing waits on (the provider
// success rates) off the request goroutine: at most 64
// in flight, anything beyond that is dropped, never queued.
type asyncWriter struct {
	slots   chan struct{}
	dropped atomic.Int64
	wg      sync.WaitGroup
}

func newAsyncWriter(n int) *asyncWriter { return &asyncWriter{slots: make(chan struct{}, n)} }

// submit runs fn on its own goroutine when a slot is free.
func (a *asyncWriter) submit(fn func()) bool {
	select {
	case a.slots <- struct{}{}:
	default:
		a.dropped.Add(1)
		return false
	}
	a.wg.Add(1)
	go func() {
		defer func() {
			_ = recover()
			<-a.slots
			a.wg.Done()
		}()
		fn()
	}()
	return true
}

// wait blocks until every submitted write finished (tests, Close).
func (a *asyncWriter) wait() { a.wg.Wait() }

// healthWindows are the windows of the provider success-rate counters.
var healthWindows = []*window{minuteWindow, dayWindow}

// recordAttempt counts one upstream attempt, and whether it failed by the
// provider's fault, per provider and per provider/model (model "" for
// native passthrough: provider level only). Off the request goroutine;
// dropped when 64 writes are already in flight.
func (l *limiter) recordAttempt(provider, model string, failed bool) {
	if l.async == nil {
		return
	}
	now := l.now()
	metrics := []string{"attempt"}
	if failed {
		metrics = append(metrics, "fail")
	}
	var incrs []store.Incr
	for m := 0; m < len(metrics); m++ {
		for j := 0; j < len(healthWindows); j++ {
			w := healthWindows[j]
			incrs = append(incrs, store.Incr{Key: "llmgw:prov:" + provider + ":" + metrics[m] + ":" + w.name + ":" + w.bucket(now), Delta: 1, TTL: w.ttl})
			if model != "" {
				incrs = append(incrs, store.Incr{Key: "llmgw:provmodel:" + provider + "/" + model + ":" + metrics[m] + ":" + w.name + ":" + w.bucket(now), Delta: 1, TTL: w.ttl})
			}
		}
	}
	l.async.submit(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _, _ = l.run(ctx, incrs, nil)
	})
}
