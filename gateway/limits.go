package gateway

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
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
	// keys caches the scope's counter keys for the current minute
	// (newLimitScope sets it; a scope without one builds its keys on
	// every request).
	keys *scopeKeyCache
}

// newLimitScope is a scope with its key prefix and key cache.
func newLimitScope(kind, id string, limits *compiledLimits) limitScope {
	return limitScope{kind: kind, id: id, limits: limits, prefix: scopePrefix(kind, id), keys: &scopeKeyCache{}}
}

// scopePrefix is the key prefix of a scope's counters.
func scopePrefix(kind, id string) string {
	return "llmgw:" + kind + ":" + strings.ReplaceAll(id, ":", "%3A") + ":"
}

// key is the scope's counter key for metric in window bucket.
func (s *limitScope) key(metric string, w *window, bucket string) string {
	p := s.prefix
	if p == "" {
		p = scopePrefix(s.kind, s.id)
	}
	return p + metric + ":" + w.name + ":" + bucket
}

// setKeys is every counter key a request of one scope set (a user's
// scopes) uses in one UTC minute, laid out as the store batches want
// them. Every window's bucket is constant within a UTC minute, so the
// keys are too. Shared by concurrent requests: the slices are read-only
// (the store treats a batch as read-only; account copies the template
// before setting deltas).
type setKeys struct {
	minute int64       // unix minute (floored) the keys are for
	head   *limitScope // &scopes[0] of the set they were built for
	n      int         // len(scopes)
	// check is, per scope, req × min, hour, day, month, each Delta 1.
	check []store.Incr
	// gets are the budget keys the check reads, per budgeted scope:
	// tokin, tokout × day, month when it has token limits, then cost ×
	// day, month when it has cost limits; nil when no scope has any.
	gets []string
	// acct is, per scope, tokin, tokout, cost × hour, day, month with
	// Delta 0: the template account copies.
	acct []store.Incr
	// plan is the admission with reservations (reserve.go), nil when no
	// scope has a token or cost budget.
	plan *admitPlan
}

// scopeKeyCache holds the *setKeys of the latest minute seen for the
// scope set a scope heads (only the first scope's cache is used).
type scopeKeyCache struct {
	v atomic.Value // *setKeys
}

// setKeysAt returns the keys of scopes for the minute containing now
// (minute is the floored Unix minute of now): the cached ones when
// scopes[0] carries a cache holding this minute's keys for this very
// slice, else built (and cached when there is a cache).
func setKeysAt(scopes []limitScope, now time.Time, minute int64) *setKeys {
	var c *scopeKeyCache
	if len(scopes) > 0 {
		c = scopes[0].keys
	}
	if c != nil {
		if k, ok := c.v.Load().(*setKeys); ok && k.minute == minute && k.n == len(scopes) && k.head == &scopes[0] {
			return k
		}
	}
	k := buildSetKeys(scopes, now, minute)
	if c != nil {
		c.v.Store(k)
	}
	return k
}

// buildSetKeys formats every key of scopes for now's minute.
func buildSetKeys(scopes []limitScope, now time.Time, minute int64) *setKeys {
	b := bucketsAt(now)
	k := &setKeys{minute: minute, n: len(scopes)}
	if len(scopes) > 0 {
		k.head = &scopes[0]
	}
	metrics := []string{"tokin", "tokout", "cost"}
	k.check = make([]store.Incr, 0, len(scopes)*len(countedWindows))
	k.acct = make([]store.Incr, 0, len(scopes)*len(metrics)*len(usageWindows))
	for i := 0; i < len(scopes); i++ {
		s := &scopes[i]
		for j := 0; j < len(countedWindows); j++ {
			w := countedWindows[j]
			k.check = append(k.check, store.Incr{Key: s.key("req", w, b.of(w)), Delta: 1, TTL: w.ttl})
		}
		if s.limits.hasTokenLimits() {
			k.gets = append(k.gets,
				s.key("tokin", dayWindow, b.day), s.key("tokout", dayWindow, b.day),
				s.key("tokin", monthWindow, b.month), s.key("tokout", monthWindow, b.month))
		}
		if s.limits.hasCostLimits() {
			k.gets = append(k.gets, s.key("cost", dayWindow, b.day), s.key("cost", monthWindow, b.month))
		}
		for m := 0; m < len(metrics); m++ {
			for j := 0; j < len(usageWindows); j++ {
				w := usageWindows[j]
				k.acct = append(k.acct, store.Incr{Key: s.key(metrics[m], w, b.of(w)), TTL: w.ttl})
			}
		}
	}
	k.plan = buildAdmitPlan(scopes, k, b)
	return k
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
	async    *attemptCounts // provider success rates, written in the background (rejections are counted on the request path)
	// health are the success-rate counters' windows (healthWindows, or
	// adminHealthWindows with statistics on).
	health []*window
	// holder admits budgeted requests with reservations: counters, which
	// every store the gateway builds also is (a Counter that is not — a
	// test double — leaves the budgets checked against what is used);
	// holdTTL is a reservation's life unless renewed.
	holder  store.Holder
	holdTTL time.Duration
	// metrics counts the refusals for /metrics (nil: metrics off).
	metrics *metricsBook

	lastErrorLog atomic.Int64 // unix nanos of the last store-error line
}

func newLimiter(counters store.Counter, fallback *store.Memory, failOpen bool, now func() time.Time, log *logger) *limiter {
	if now == nil {
		now = time.Now
	}
	l := &limiter{counters: counters, fallback: fallback, failOpen: failOpen, now: now, log: log, holdTTL: defaultReservationTTL, health: healthWindows}
	l.holder, _ = counters.(store.Holder)
	l.async = newAttemptCounts(l)
	return l
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
	return l.retry(ctx, incrs, gets, err)
}

// retry is run after the primary store failed with err (the hot paths
// call the primary themselves and this only on a failure).
func (l *limiter) retry(ctx context.Context, incrs []store.Incr, gets []string, err error) ([]int64, []int64, error) {
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
	return l.checkAndCountPeek(ctx, scopes, nil)
}

// checkAndCountPeek is checkAndCount with peek folded into its round
// trip when the store can (peek.Done then says so).
func (l *limiter) checkAndCountPeek(ctx context.Context, scopes []limitScope, peek *store.Peek) *apiError {
	now := l.now()
	sec := now.Unix() // the floored Unix minute, computed inline
	minute := sec / 60
	if sec%60 < 0 {
		minute--
	}
	k := setKeysAt(scopes, now, minute)
	var counts, values []int64
	var err error
	if pk, ok := l.counters.(store.Peeker); ok && peek != nil {
		counts, values, err = pk.ApplyPeek(ctx, k.check, k.gets, peek)
	} else {
		counts, values, err = l.counters.Apply(ctx, k.check, k.gets)
	}
	if err != nil {
		counts, values, err = l.retry(ctx, k.check, k.gets, err)
	}
	if err != nil {
		if ctx.Err() != nil {
			return upstreamFailure(apierr.ClassClientCancel, "client closed the request", err)
		}
		return errStoreUnavailable()
	}
	// The limits in order: requestsPerMinute, requestsPerDay,
	// tokensPerDay, tokensPerMonth, costPerDayUSD, costPerMonthUSD; the
	// first exceeded one refuses. counts holds each scope's req counters
	// (min, hour, day, month); values each budgeted scope's gets.
	g := 0
	for i := 0; i < len(scopes); i++ {
		lim := scopes[i].limits
		if lim == nil {
			continue
		}
		base := i * len(countedWindows)
		if lim.requestsPerMinute > 0 && counts[base] > lim.requestsPerMinute {
			return l.refuse(ctx, scopes, i, "requestsPerMinute", lim.requestsPerMinute, minuteWindow, now)
		}
		if lim.requestsPerDay > 0 && counts[base+2] > lim.requestsPerDay {
			return l.refuse(ctx, scopes, i, "requestsPerDay", lim.requestsPerDay, dayWindow, now)
		}
		if lim.tokensPerDay > 0 || lim.tokensPerMonth > 0 {
			if lim.tokensPerDay > 0 && values[g]+values[g+1] >= lim.tokensPerDay {
				return l.refuse(ctx, scopes, i, "tokensPerDay", lim.tokensPerDay, dayWindow, now)
			}
			if lim.tokensPerMonth > 0 && values[g+2]+values[g+3] >= lim.tokensPerMonth {
				return l.refuse(ctx, scopes, i, "tokensPerMonth", lim.tokensPerMonth, monthWindow, now)
			}
			g += 4
		}
		if lim.costPerDayMicros > 0 || lim.costPerMonthMicros > 0 {
			if lim.costPerDayMicros > 0 && values[g] >= lim.costPerDayMicros {
				return l.refuse(ctx, scopes, i, "costPerDayUSD", lim.costPerDayMicros, dayWindow, now)
			}
			if lim.costPerMonthMicros > 0 && values[g+1] >= lim.costPerMonthMicros {
				return l.refuse(ctx, scopes, i, "costPerMonthUSD", lim.costPerMonthMicros, monthWindow, now)
			}
			g += 2
		}
	}
	return nil
}

// refuse counts the refusal and returns the 429 for scopes[i]'s limit.
func (l *limiter) refuse(ctx context.Context, scopes []limitScope, i int, limit string, value int64, w *window, now time.Time) *apiError {
	l.countRejection(ctx, scopes, i, now)
	return errLimitExceeded(&scopes[i], limit, value, w, now)
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

// countRejection counts a refusal in every scope of the request (the
// user's, each group's and total's rej counters: the admin usage rows),
// and for the refusing scope and total in /metrics.
// It runs on the request goroutine (one more round trip, paid only by
// refused requests) so that a burst of refusals is counted exactly.
func (l *limiter) countRejection(ctx context.Context, scopes []limitScope, refused int, now time.Time) {
	b := bucketsAt(now)
	var incrs []store.Incr
	for i := 0; i < len(scopes); i++ {
		if l.metrics != nil && (i == refused || scopes[i].kind == "total") {
			countMetricsRejection(l.metrics, &scopes[i])
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
	l.accountWith(ctx, scopes, u, costMicros, nil, "")
}

// accountWith is account for one request, with its statistics
// increments (stats.go) in the same batch (they go to writeStats when
// there is no usage to add); ids (its request and trace ids) ends the
// log line of a failed write.
func (l *limiter) accountWith(ctx context.Context, scopes []limitScope, u translate.Usage, costMicros int64, extra []store.Incr, ids string) {
	if len(scopes) == 0 || (u.PromptTokens <= 0 && u.CompletionTokens <= 0 && costMicros <= 0) {
		writeStats(l, extra)
		return
	}
	now := l.now()
	sec := now.Unix() // the floored Unix minute, computed inline
	minute := sec / 60
	if sec%60 < 0 {
		minute--
	}
	incrs := usageIncrs(setKeysAt(scopes, now, minute).acct, len(scopes), u.PromptTokens, u.CompletionTokens, costMicros)
	if len(extra) > 0 {
		incrs = append(incrs, extra...)
	}
	if _, _, err := l.run(ctx, incrs, nil); err != nil {
		l.log.errorf("usage of a finished request could not be recorded: %v%s", err, ids)
	}
}

// usageIncrs is the account batch of a request's usage from a minute's
// template a (per scope tokin, tokout, cost × hour, day, month, Delta
// 0): a copy with the deltas set, skipping a metric with nothing to add;
// nil when there is nothing.
func usageIncrs(a []store.Incr, scopes int, tin, tout, costMicros int64) []store.Incr {
	n := 0
	if tin > 0 {
		n++
	}
	if tout > 0 {
		n++
	}
	if costMicros > 0 {
		n++
	}
	if n == 0 {
		return nil
	}
	if n < 3 {
		return someUsageIncrs(a, scopes*n*3, tin, tout, costMicros)
	}
	incrs := make([]store.Incr, len(a))
	copy(incrs, a)
	for j := 0; j < len(incrs); j += 9 {
		incrs[j].Delta = tin
		incrs[j+1].Delta = tin
		incrs[j+2].Delta = tin
		incrs[j+3].Delta = tout
		incrs[j+4].Delta = tout
		incrs[j+5].Delta = tout
		incrs[j+6].Delta = costMicros
		incrs[j+7].Delta = costMicros
		incrs[j+8].Delta = costMicros
	}
	return incrs
}

// someUsageIncrs is account's batch when some metric has nothing to add
// (its own function: under Yaegi a call pays for every local of the
// callee, so the common all-three path stays small).
func someUsageIncrs(a []store.Incr, size int, tin, tout, costMicros int64) []store.Incr {
	incrs := make([]store.Incr, 0, size)
	for i := 0; i < len(a); i += 9 {
		if tin > 0 {
			j := len(incrs)
			incrs = append(incrs, a[i:i+3]...)
			incrs[j].Delta = tin
			incrs[j+1].Delta = tin
			incrs[j+2].Delta = tin
		}
		if tout > 0 {
			j := len(incrs)
			incrs = append(incrs, a[i+3:i+6]...)
			incrs[j].Delta = tout
			incrs[j+1].Delta = tout
			incrs[j+2].Delta = tout
		}
		if costMicros > 0 {
			j := len(incrs)
			incrs = append(incrs, a[i+6:i+9]...)
			incrs[j].Delta = costMicros
			incrs[j+1].Delta = costMicros
			incrs[j+2].Delta = costMicros
		}
	}
	return incrs
}
