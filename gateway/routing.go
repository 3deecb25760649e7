package gateway

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/store"
)

// Routing orders a request's candidates before the limit stage, in four
// steps over the candidates the caller may use (resolve):
//
//  1. the pool: every candidate that can serve the route — only the first
//     under the priority strategy with failover off (today's behaviour,
//     at no cost);
//  2. the strategy orders the pool (the alias's own, else
//     routing.strategy);
//  3. session affinity moves the candidate the session is bound to to
//     the front, when it is in the pool and healthy;
//  4. health drops the candidates whose breaker is open or that are
//     parked by a 429 (all of them dropped: the first is kept, so a
//     request is always attempted), and failover keeps the first and
//     the later candidates the cost guard allows, at most
//     failover.maxAttempts; without failover only the first.
//
// The call stage walks the result in order.

// Strategy names (routing.strategy and an alias's strategy).
const (
	strategyPriority     = "priority"
	strategyRoundRobin   = "round-robin"
	strategyWeighted     = "weighted"
	strategyLeastLatency = "least-latency"
	strategyLeastCost    = "least-cost"
)

var strategies = map[string]bool{strategyPriority: true, strategyRoundRobin: true, strategyWeighted: true,
	strategyLeastLatency: true, strategyLeastCost: true}

// strategyNames lists them for error messages.
const strategyNames = "priority, round-robin, weighted, least-latency, least-cost"

// routingSettings is RoutingConfig validated.
type routingSettings struct {
	strategy    string
	breaker     breakerSettings
	affinity    bool
	affinityTTL time.Duration
}

const defaultAffinityTTL = 24 * time.Hour

func compileRouting(rc *RoutingConfig) (routingSettings, error) {
	s := routingSettings{strategy: strategyPriority, breaker: requestBreakerDefaults, affinityTTL: defaultAffinityTTL}
	if rc == nil {
		return s, nil
	}
	if rc.Strategy != "" {
		if !strategies[rc.Strategy] {
			return s, fmt.Errorf("config: routing.strategy: %q is not a strategy (one of %s)", rc.Strategy, strategyNames)
		}
		s.strategy = rc.Strategy
	}
	var err error
	if s.breaker, err = compileBreaker("routing.breaker", rc.Breaker, requestBreakerDefaults); err != nil {
		return s, err
	}
	if a := rc.SessionAffinity; a != nil {
		s.affinity = a.Enabled
		if s.affinityTTL, err = parseTimeout("routing.sessionAffinity.ttl", a.TTL, defaultAffinityTTL); err != nil {
			return s, err
		}
		if s.affinityTTL < time.Second {
			return s, fmt.Errorf("config: routing.sessionAffinity.ttl: %q must be at least 1s", a.TTL)
		}
	}
	return s, nil
}

// router is the routing stage's runtime state, in process.
type router struct {
	settings routingSettings
	// active: something may reorder or skip candidates (failover, a
	// strategy other than priority anywhere, affinity); off, the stage
	// keeps the first candidate and records no health.
	active   bool
	health   *healthBook
	affinity *affinityBook // nil: affinity off
	turns    sync.Map      // client model id -> *atomic.Uint64 (round-robin, weighted, exploration)
	latency  latencyBook
	// everywhere: the operations every provider type serves.
	everywhere [operationCount]bool
}

// latencyBook is the exponentially weighted moving average of time to
// first byte per provider/model (least-latency).
type latencyBook struct {
	mu   sync.Mutex
	ewma map[string]time.Duration
}

// latencyWeight is the EWMA's weight of a new sample, in eighths.
const latencyWeight = 3

// exploreEvery: one least-latency decision in this many is made round
// robin instead, so a provider that was slow is measured again.
const exploreEvery = 10

func (l *latencyBook) observe(key string, d time.Duration) {
	l.mu.Lock()
	if old, ok := l.ewma[key]; ok {
		d = old + (d-old)*latencyWeight/8
	}
	if l.ewma == nil {
		l.ewma = map[string]time.Duration{}
	}
	l.ewma[key] = d
	l.mu.Unlock()
}

// of is key's average; ok is false when it has no sample.
func (l *latencyBook) of(key string) (time.Duration, bool) {
	l.mu.Lock()
	d, ok := l.ewma[key]
	l.mu.Unlock()
	return d, ok
}

func newRouter(cfg *compiledConfig, log *logger) *router {
	r := &router{settings: cfg.routing, health: newHealthBook(cfg.routing.breaker), everywhere: everywhere()}
	r.health.log = log
	r.active = cfg.failover.enabled || cfg.routing.strategy != strategyPriority || cfg.routing.affinity || aliasesRoute(cfg)
	return r
}

// aliasesRoute reports whether an alias sets a strategy of its own
// other than priority.
func aliasesRoute(cfg *compiledConfig) bool {
	for _, spec := range cfg.aliases {
		if spec.strategy != "" && spec.strategy != strategyPriority {
			return true
		}
	}
	return false
}

// turn is the next number of id's rotation.
func (r *router) turn(id string) uint64 {
	v, ok := r.turns.Load(id)
	if !ok {
		v, _ = r.turns.LoadOrStore(id, new(atomic.Uint64))
	}
	return v.(*atomic.Uint64).Add(1) - 1
}

// orderCandidates is the routing stage's first half, in the resolve
// stage (see the top of the file): the pool and the strategy's order,
// and the session's binding when it is known without a store read. The
// second half (finishRouting) runs in the limit stage, after the
// limiter's round trip, into which a binding read from Redis is folded.
// Until then c.cands is the pool in order; c.target's first candidate
// is set by the second half.
func orderCandidates(c *call) {
	all := c.target.candidates
	r := c.g.router
	if !r.active || len(all) < 2 {
		c.cands = all[:1]
		return
	}
	orderPool(c, all, r)
}

// orderPool is orderCandidates for a model with several candidates and
// routing on. Its own function: under Yaegi a call pays for the callee's
// whole body, and a model with one candidate need not pay for this.
func orderPool(c *call, all []candidate, r *router) {
	strategy := c.target.strategy
	if strategy == "" {
		strategy = r.settings.strategy
	}
	failover := c.g.cfg.failover.enabled && c.route.failover
	if !failover && strategy == strategyPriority && r.affinity == nil {
		c.cands = all[:1]
		return
	}
	c.rec.strategy = strategy
	c.routing = true
	// One slice holds the walk through every step: it is this request's
	// own (the registry's lists are shared and never modified).
	pool := append(make([]candidate, 0, len(all)), all...)
	if !r.everywhere[c.route.op] {
		pool = pool[:1]
		for i := 1; i < len(all); i++ {
			if backendFor(all[i].provider.kind).ops[c.route.op] != nil {
				pool = append(pool, all[i])
			}
		}
	}
	if !failover && strategy == strategyPriority {
		pool = pool[:1] // affinity alone never moves a request off the first candidate
	}
	orderBy(c, strategy, pool)
	c.cands = pool
	if len(pool) > 1 {
		startAffinity(c)
	}
}

// finishRouting is the routing stage's second half: affinity (with the
// binding the limiter's round trip read, or read now when it could not),
// health, and the failover walk's cost guard.
func finishRouting(c *call, peek *store.Peek) {
	if !c.routing {
		return
	}
	c.routing = false
	r := c.g.router
	pool := c.cands
	applyAffinity(c, pool, peek)
	healthy := pool
	if !r.health.clean() {
		healthy = keepHealthy(c, pool)
	}
	if !c.g.cfg.failover.enabled || !c.route.failover {
		healthy = healthy[:1]
	} else {
		healthy = costGuarded(c, healthy)
	}
	c.cands = healthy
	c.target.provider, c.target.model = healthy[0].provider, healthy[0].model
	c.rec.provider, c.rec.model = healthy[0].provider.name, healthy[0].model
}

// keepHealthy filters pool in place to its healthy candidates, noting
// the others in the record; when none is healthy the first is kept (a
// request is always attempted) and marked forced.
func keepHealthy(c *call, pool []candidate) []candidate {
	h := c.g.router.health
	now := h.now()
	first := pool[0]
	healthy := pool[:0]
	for i := 0; i < len(pool); i++ {
		if h.standing(pool[i], now) == healthOK {
			healthy = append(healthy, pool[i])
		} else {
			c.rec.skipped = append(c.rec.skipped, candidateName(pool[i]))
		}
	}
	if len(healthy) == 0 {
		healthy = append(healthy, first)
		c.forceFirst = true
	}
	return healthy
}

// everywhere notes the operations every provider type serves (the pool
// then needs no per-candidate check); read after the backends' tables
// are filled.
func everywhere() [operationCount]bool {
	var out [operationCount]bool
	for op := 0; op < int(operationCount); op++ {
		out[op] = openAIBackend.ops[op] != nil && anthropicBackend.ops[op] != nil && geminiBackend.ops[op] != nil
	}
	return out
}

// costGuarded is the failover walk, filtered in place: the first
// candidate, then every later one the cost guard allows, at most
// failover.maxAttempts.
func costGuarded(c *call, cands []candidate) []candidate {
	max := c.g.cfg.failover.maxAttempts
	out := cands[:1]
	for i := 1; i < len(cands) && len(out) < max; i++ {
		if costAllowed(cands[0], cands[i]) {
			out = append(out, cands[i])
			continue
		}
		c.g.failoverLog.skipped(c.g, cands[0], cands[i])
	}
	return out
}

// orderBy puts out (the request's own slice) in the strategy's order.
func orderBy(c *call, strategy string, out []candidate) {
	if len(out) < 2 {
		return
	}
	r := c.g.router
	switch strategy {
	case strategyRoundRobin:
		rotate(out, int(r.turn(c.req.model)%uint64(len(out))))
	case strategyWeighted:
		pickWeighted(out, r.turn(c.req.model))
	case strategyLeastLatency:
		if n := r.turn(c.req.model); n%exploreEvery == exploreEvery-1 {
			rotate(out, int((n/exploreEvery)%uint64(len(out))))
			break
		}
		byLatency(r, out)
	case strategyLeastCost:
		byCost(out)
	}
}

// rotate moves out[k] to the front, keeping the cyclic order (builtin
// copies: no interpreted per-element loop).
func rotate(out []candidate, k int) {
	if k == 0 {
		return
	}
	head := append([]candidate(nil), out[:k]...)
	copy(out, out[k:])
	copy(out[len(out)-k:], head)
}

// pickWeighted moves turn n's candidate to the front: over every run of
// sum(weights) turns each candidate is first weight times, interleaved
// (the turns are spread with a stride coprime to the sum).
func pickWeighted(out []candidate, n uint64) {
	total := 0
	for i := 0; i < len(out); i++ {
		total += candWeight(out[i])
	}
	slot := int(spread(n, uint64(total)))
	for i := 0; i < len(out); i++ {
		w := candWeight(out[i])
		if slot < w {
			first := out[i]
			copy(out[1:i+1], out[:i])
			out[0] = first
			return
		}
		slot -= w
	}
}

func candWeight(c candidate) int {
	if c.weight > 0 {
		return c.weight
	}
	return 1
}

// spread maps turn n to a slot of [0, total): a permutation of every run
// of total turns that interleaves the slots (a stride near total × 0.618
// that is coprime to total).
func spread(n, total uint64) uint64 {
	if total <= 1 {
		return 0
	}
	stride := total*618/1000 + 1
	for gcd(stride, total) != 1 {
		stride++
	}
	return (n % total) * stride % total
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// byLatency sorts by the time-to-first-byte average; a candidate with no
// sample yet goes first (it is measured).
func byLatency(r *router, out []candidate) {
	keys := make([]time.Duration, len(out))
	for i := 0; i < len(out); i++ {
		d, ok := r.latency.of(candidateName(out[i]))
		if !ok {
			d = -1
		}
		keys[i] = d
	}
	sort.Stable(&candSorter{c: out, less: func(i, j int) bool { return keys[i] < keys[j] }, swap: func(i, j int) { keys[i], keys[j] = keys[j], keys[i] }})
}

// byCost sorts by list price (input plus output per token); an unknown
// price sorts last.
func byCost(out []candidate) {
	keys := make([]int64, len(out))
	for i := 0; i < len(out); i++ {
		if out[i].listSource == priceSourceUnpriced {
			keys[i] = 1 << 62
			continue
		}
		keys[i] = out[i].list.inputPerMTokMicroUSD + out[i].list.outputPerMTokMicroUSD
	}
	sort.Stable(&candSorter{c: out, less: func(i, j int) bool { return keys[i] < keys[j] }, swap: func(i, j int) { keys[i], keys[j] = keys[j], keys[i] }})
}

// candSorter sorts candidates by a key kept in a parallel slice.
type candSorter struct {
	c    []candidate
	less func(i, j int) bool
	swap func(i, j int)
}

func (s *candSorter) Len() int           { return len(s.c) }
func (s *candSorter) Less(i, j int) bool { return s.less(i, j) }
func (s *candSorter) Swap(i, j int) {
	s.c[i], s.c[j] = s.c[j], s.c[i]
	s.swap(i, j)
}
