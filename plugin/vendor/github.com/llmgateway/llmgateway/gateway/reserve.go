package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
	"github.com/llmgateway/llmgateway/gateway/internal/store"
	"github.com/llmgateway/llmgateway/gateway/internal/translate"
)

// Reserve and settle. A request subject to a token or cost budget (in
// any of its scopes) is admitted by one atomic operation of the store
// (Redis: one script, one round trip): its request counters are counted,
// every limit is checked in the usual order, and its worst case — the
// prompt estimate plus its output cap, in tokens and in cost — is
// reserved against every budgeted scope when it fits:
//
//	used + reserved by requests in flight + this request's worst case ≤ budget
//
// When the request ends (answered, failed, cancelled, cut) the
// reservation is settled: the real usage is added and the reservation
// removed, in one more round trip. The accounted usage of a window
// therefore never exceeds a budget by more than the amount by which
// responses exceeded their own reservations (a prompt estimate below the
// real prompt, or a provider ignoring the output cap).
//
// A reservation lives for reservationTTL unless renewed; a live request
// renews it every half TTL, so only a dead replica's reservations
// expire. Requests without a token or cost budget keep the plain
// count-then-check (checkAndCount).

// defaultOutputCapTokens is a request's output cap when it names none
// and the model's maximum output is unknown.
const defaultOutputCapTokens = 4096

// maxHoldAmount caps a reservation's tokens and cost (the store's
// arithmetic is exact below 2^53): a request this large is refused by
// any budget anyway.
const maxHoldAmount = int64(1) << 50

// budgetCheck says what a store check of the admission refers to: the
// scope, the limit's name and value, and its window.
type budgetCheck struct {
	scope int
	limit string
	value int64
	w     *window
	cost  bool // a cost budget (else tokens; unused for request rates)
}

// admitPlan is the part of an admission fixed for a scope set within a
// UTC minute (cached in setKeys): the store operation's counts, budgets
// and checks, and what each check means.
type admitPlan struct {
	admission store.Admission // shared by the requests (by pointer)
	checks    []budgetCheck
}

// buildAdmitPlan is the admission of scopes for the minute's keys k, or
// nil when no scope has a token or cost budget.
func buildAdmitPlan(scopes []limitScope, k *setKeys, b windowBuckets) *admitPlan {
	budgeted := false
	for i := 0; i < len(scopes); i++ {
		if scopes[i].limits.hasTokenLimits() || scopes[i].limits.hasCostLimits() {
			budgeted = true
		}
	}
	if !budgeted {
		return nil
	}
	p := &admitPlan{}
	a := &p.admission
	a.Counts = k.check
	for i := 0; i < len(scopes); i++ {
		s := &scopes[i]
		lim := s.limits
		if lim == nil {
			continue
		}
		base := i * len(countedWindows)
		if lim.requestsPerMinute > 0 {
			a.Checks = append(a.Checks, store.Check{Count: base + 1, Limit: lim.requestsPerMinute})
			p.checks = append(p.checks, budgetCheck{scope: i, limit: "requestsPerMinute", value: lim.requestsPerMinute, w: minuteWindow})
		}
		if lim.requestsPerDay > 0 {
			a.Checks = append(a.Checks, store.Check{Count: base + 3, Limit: lim.requestsPerDay})
			p.checks = append(p.checks, budgetCheck{scope: i, limit: "requestsPerDay", value: lim.requestsPerDay, w: dayWindow})
		}
		if !lim.hasTokenLimits() && !lim.hasCostLimits() {
			continue
		}
		bi := len(a.Budgets)
		prefix := s.prefix
		if prefix == "" {
			prefix = scopePrefix(s.kind, s.id)
		}
		a.Budgets = append(a.Budgets, store.Budget{Holds: prefix + "holds", Sums: prefix + "held"})
		if lim.tokensPerDay > 0 {
			a.Checks = append(a.Checks, store.Check{Budget: bi, Limit: lim.tokensPerDay,
				Used: []string{s.key("tokin", dayWindow, b.day), s.key("tokout", dayWindow, b.day)}})
			p.checks = append(p.checks, budgetCheck{scope: i, limit: "tokensPerDay", value: lim.tokensPerDay, w: dayWindow})
		}
		if lim.tokensPerMonth > 0 {
			a.Checks = append(a.Checks, store.Check{Budget: bi, Limit: lim.tokensPerMonth,
				Used: []string{s.key("tokin", monthWindow, b.month), s.key("tokout", monthWindow, b.month)}})
			p.checks = append(p.checks, budgetCheck{scope: i, limit: "tokensPerMonth", value: lim.tokensPerMonth, w: monthWindow})
		}
		if lim.costPerDayMicros > 0 {
			a.Checks = append(a.Checks, store.Check{Budget: bi, Cost: true, Limit: lim.costPerDayMicros,
				Used: []string{s.key("cost", dayWindow, b.day)}})
			p.checks = append(p.checks, budgetCheck{scope: i, limit: "costPerDayUSD", value: lim.costPerDayMicros, w: dayWindow, cost: true})
		}
		if lim.costPerMonthMicros > 0 {
			a.Checks = append(a.Checks, store.Check{Budget: bi, Cost: true, Limit: lim.costPerMonthMicros,
				Used: []string{s.key("cost", monthWindow, b.month)}})
			p.checks = append(p.checks, budgetCheck{scope: i, limit: "costPerMonthUSD", value: lim.costPerMonthMicros, w: monthWindow, cost: true})
		}
	}
	return p
}

// reservation is one admitted request's hold, settled once.
type reservation struct {
	l      *limiter
	holder store.Holder // where the hold was made (Redis, or the fallback)
	keys   *setKeys     // the admission minute's keys: usage is charged to its windows
	hold   store.Hold
	// ids ends the log line of a settlement that could not be written
	// (the request's ids; set by the request that holds it).
	ids string

	mu      sync.Mutex
	settled bool
	renewal *time.Timer
}

// holdIDs makes reservation ids unique across replicas and restarts: a
// random process prefix and a counter.
var (
	holdPrefix  = newHoldPrefix()
	holdCounter atomic.Int64
)

func newHoldPrefix() string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	return hex.EncodeToString(b[:])
}

// clampHold bounds a reservation amount to [0, maxHoldAmount].
func clampHold(n int64) int64 {
	if n < 0 {
		return 0
	}
	if n > maxHoldAmount {
		return maxHoldAmount
	}
	return n
}

// reserve admits a request of scopes that reserves tokens and cost
// (micro-USD): checkAndCount's semantics for request rates, and the
// reservation against every token and cost budget. It returns the
// reservation to settle (nil when no scope has a budget: the request was
// only counted).
func (l *limiter) reserve(ctx context.Context, scopes []limitScope, tokens, cost int64) (*reservation, *apiError) {
	return l.reservePeek(ctx, scopes, tokens, cost, nil)
}

// reservePeek is reserve with peek folded into its round trip when the
// store can (peek.Done then says so).
func (l *limiter) reservePeek(ctx context.Context, scopes []limitScope, tokens, cost int64, peek *store.Peek) (*reservation, *apiError) {
	now := l.now()
	sec := now.Unix() // the floored Unix minute, computed inline
	minute := sec / 60
	if sec%60 < 0 {
		minute--
	}
	k := setKeysAt(scopes, now, minute)
	if k.plan == nil || l.holder == nil {
		return nil, l.checkAndCountPeek(ctx, scopes, peek)
	}
	tokens, cost = clampHold(tokens), clampHold(cost)
	a := &k.plan.admission
	id := holdPrefix + "-" + strconv.FormatInt(holdCounter.Add(1), 36)
	hold := store.Hold{Member: store.HoldMember(id, tokens, cost), Tokens: tokens, Cost: cost, TTL: l.holdTTL}
	holder := l.holder
	var v store.Verdict
	var err error
	if pk, ok := holder.(store.Peeker); ok && peek != nil {
		v, err = pk.AdmitPeek(ctx, a, hold, peek)
	} else {
		v, err = holder.Admit(ctx, a, hold)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, upstreamFailure(apierr.ClassClientCancel, "client closed the request", err)
		}
		l.logStoreError(err)
		if !l.failOpen || l.fallback == nil {
			return nil, errStoreUnavailable()
		}
		holder = l.fallback
		v, _ = holder.Admit(ctx, a, hold)
	}
	if v.Refused >= 0 {
		bc := &k.plan.checks[v.Refused]
		l.countRejection(ctx, scopes, bc.scope, now)
		e := errLimitExceeded(&scopes[bc.scope], bc.limit, bc.value, bc.w, now)
		if bc.limit[0] != 'r' { // a token or cost budget
			explainReservation(e, bc, v, tokens, cost)
		}
		return nil, e
	}
	r := &reservation{l: l, holder: holder, keys: k, hold: hold}
	r.mu.Lock()
	r.renewal = time.AfterFunc(l.holdTTL/2, func() { renewReservation(r) })
	r.mu.Unlock()
	return r, nil
}

// explainReservation completes a budget refusal's message with the
// amounts, and — when only the reservations of requests in flight stand
// in the way — a Retry-After of one second instead of the window's end.
func explainReservation(e *apiError, bc *budgetCheck, v store.Verdict, tokens, cost int64) {
	mine := tokens
	show := func(n int64) string { return strconv.FormatInt(n, 10) }
	if bc.cost {
		mine = cost
		show = func(n int64) string { return "$" + strconv.FormatFloat(float64(n)/1e6, 'f', -1, 64) }
	}
	e.Message += ": this request reserves up to " + show(mine) + " (prompt estimate + output cap); " +
		show(v.Used) + " used, " + show(v.Held) + " reserved by requests in flight"
	if v.Used+mine <= bc.value {
		e.RetryAfter = "1"
	}
}

// renewReservation extends a live reservation and schedules the next
// renewal; it stops once the reservation is settled.
func renewReservation(r *reservation) {
	defer recoverBackground(r.l.log, "reservation renewal", "")
	r.mu.Lock()
	if r.settled {
		r.mu.Unlock()
		return
	}
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	err := r.holder.Renew(ctx, r.keys.plan.admission.Budgets, r.hold)
	cancel()
	if err != nil {
		r.l.logStoreError(err)
	}
	r.mu.Lock()
	if !r.settled {
		r.renewal = time.AfterFunc(r.l.holdTTL/2, func() { renewReservation(r) })
	}
	r.mu.Unlock()
}

// settle adds the request's usage (u, costMicros) to every scope, in the
// windows of the minute it was admitted in, and removes its reservation:
// one store round trip. Only the first call does anything.
func (r *reservation) settle(u translate.Usage, costMicros int64) {
	r.settleWith(u, costMicros, nil)
}

// settleWith is settle with the request's statistics increments
// (stats.go) in the same round trip.
func (r *reservation) settleWith(u translate.Usage, costMicros int64, extra []store.Incr) {
	r.mu.Lock()
	if r.settled {
		r.mu.Unlock()
		return
	}
	r.settled = true
	if r.renewal != nil {
		r.renewal.Stop()
	}
	r.mu.Unlock()
	l := r.l
	st := store.Settlement{Incrs: usageIncrs(r.keys.acct, r.keys.n, u.PromptTokens, u.CompletionTokens, costMicros),
		Budgets: r.keys.plan.admission.Budgets, Hold: r.hold}
	if len(extra) > 0 {
		st.Incrs = append(st.Incrs, extra...)
	}
	// No deadline of its own: the in-process store never blocks, and the
	// guarded Redis store bounds every operation with its own timeout.
	err := r.holder.Settle(context.Background(), &st)
	if err == nil {
		return
	}
	l.logStoreError(err)
	// The reservation expires on its own; the usage goes to the
	// fallback when there is one, as every failed write does.
	if l.failOpen && l.fallback != nil && len(st.Incrs) > 0 {
		_, _, _ = l.fallback.Apply(context.Background(), st.Incrs, nil)
		return
	}
	l.log.errorf("usage of a finished request could not be recorded: %v%s", err, r.ids)
}
