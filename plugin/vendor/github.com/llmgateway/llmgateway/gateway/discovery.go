package gateway

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// warmFillTimeout bounds each provider's discovery fetch in New.
	warmFillTimeout = 5 * time.Second
	// defaultDiscoveryInterval is the floor between refreshes.
	defaultDiscoveryInterval = time.Hour
)

// warmFillRetryDelay is when the one cold-start retry runs after a failed
// warm fill (a variable only so tests can shorten it).
var warmFillRetryDelay = 10 * time.Second

// discoveryState is one discovering provider's mutable state.
type discoveryState struct {
	provider *providerRuntime
	interval time.Duration
	// notBefore (unix ns) lets the request path skip a refresh check
	// without taking mu until the interval or the breaker window is over.
	notBefore atomic.Int64

	mu          sync.Mutex
	models      []string         // last good discovered set (stale-while-error)
	contexts    map[string]int64 // from metadataPath, last good
	lastAttempt time.Time
	refreshing  bool
	completed   int // finished refreshes, to let the cold-start retry skip
	breaker     *circuitBreaker
	lastSuccess time.Time // when a refresh last succeeded (zero: never); the admin overview's lastRefresh
}

// discoverer runs model discovery: a synchronous warm fill in New, then
// refreshes started from the request path (never a background ticker),
// each gated by discoveryInterval and the provider's circuit breaker.
// A failed refresh keeps the last known set.
type discoverer struct {
	states     []*discoveryState // sorted by provider name
	transport  http.RoundTripper
	log        *logger
	now        func() time.Time
	retryDelay time.Duration
	onChange   func() // rebuilds the model registry
	ctx        context.Context
	cancel     context.CancelFunc
	running    sync.WaitGroup

	mu     sync.Mutex
	timers []*time.Timer
	// schedule arms the cold-start retry (time.AfterFunc; tests hold the
	// retry to run it when they choose).
	schedule func(delay time.Duration, f func()) *time.Timer
}

func newDiscoverer(c *compiledConfig, transport http.RoundTripper, log *logger) *discoverer {
	ctx, cancel := context.WithCancel(context.Background())
	if c.retry.retries > 0 {
		transport = &retryingTransport{rt: transport, settings: c.retry}
	}
	d := &discoverer{transport: transport, log: log, now: time.Now, retryDelay: warmFillRetryDelay, ctx: ctx, cancel: cancel}
	d.schedule = func(delay time.Duration, f func()) *time.Timer { return time.AfterFunc(delay, f) }
	for i := 0; i < len(c.providerNames); i++ {
		p := c.providers[c.providerNames[i]]
		if p.discoveryInterval > 0 {
			d.states = append(d.states, &discoveryState{provider: p, interval: p.discoveryInterval, breaker: newBreaker(c.breaker)})
		}
	}
	return d
}

// discoverySnapshot is what discovery currently knows, by provider.
type discoverySnapshot struct {
	models   map[string][]string
	contexts map[string]map[string]int64
}

// discovered returns each discovering provider's last good model set and
// captured context lengths.
func (d *discoverer) discovered() discoverySnapshot {
	out := discoverySnapshot{models: map[string][]string{}, contexts: map[string]map[string]int64{}}
	for i := 0; i < len(d.states); i++ {
		s := d.states[i]
		s.mu.Lock()
		out.models[s.provider.name] = s.models
		out.contexts[s.provider.name] = s.contexts
		s.mu.Unlock()
	}
	return out
}

// warmFill fetches every discovering provider once, in turn, each bounded
// by warmFillTimeout. A failure schedules one retry after retryDelay,
// unless the gateway is shutting down.
func (d *discoverer) warmFill() {
	for i := 0; i < len(d.states); i++ {
		s := d.states[i]
		if !d.start(s, true) {
			continue
		}
		ok := d.run(s, warmFillTimeout)
		if !ok && d.ctx.Err() == nil {
			d.scheduleRetry(s)
		}
	}
}

// scheduleRetry arms the one cold-start retry for s.
func (d *discoverer) scheduleRetry(s *discoveryState) {
	s.mu.Lock()
	completedAtFailure := s.completed
	s.mu.Unlock()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ctx.Err() != nil {
		return
	}
	d.timers = append(d.timers, d.schedule(d.retryDelay, func() {
		defer recoverBackground(d.log, "model discovery", "")
		s.mu.Lock()
		skip := s.refreshing || s.completed != completedAtFailure
		s.mu.Unlock()
		if skip || d.ctx.Err() != nil || !d.start(s, true) {
			return
		}
		if d.run(s, s.provider.timeout) {
			d.log.infof("discovery for provider %q recovered on the cold-start retry", s.provider.name)
		}
	}))
}

// maybeRefresh starts, in the background, a refresh for every provider
// whose interval has passed and whose breaker admits one. It is called
// from the request path and never blocks on the network.
func (d *discoverer) maybeRefresh() {
	now := d.now().UnixNano()
	for i := 0; i < len(d.states); i++ {
		s := d.states[i]
		if now < s.notBefore.Load() || !d.start(s, false) {
			continue
		}
		d.running.Add(1)
		go func(s *discoveryState) {
			defer d.running.Done()
			defer recoverBackground(d.log, "model discovery", "")
			d.run(s, s.provider.timeout)
		}(s)
	}
}

// start claims s for one refresh: not already refreshing, and (unless
// force) the interval has passed and the breaker allows it.
func (d *discoverer) start(s *discoveryState, force bool) bool {
	now := d.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refreshing || d.ctx.Err() != nil {
		return false
	}
	if !force {
		if next := s.lastAttempt.Add(s.interval); now.Before(next) {
			s.notBefore.Store(next.UnixNano())
			return false
		}
		if !s.breaker.allow(now) {
			if s.breaker.state == breakerOpen {
				s.notBefore.Store(s.breaker.openUntil.UnixNano())
			}
			return false
		}
	}
	s.refreshing = true
	s.lastAttempt = now
	s.notBefore.Store(now.Add(s.interval).UnixNano())
	return true
}

// run performs one claimed refresh and records its outcome: success
// replaces the set and closes the breaker; failure keeps the set and
// counts against the breaker; a cancellation counts as neither.
func (d *discoverer) run(s *discoveryState, timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(d.ctx, timeout)
	models, err := fetchModels(ctx, d.transport, s.provider)
	var contexts map[string]int64
	if err == nil && s.provider.metadataPath != "" {
		var metaErr error
		if contexts, metaErr = fetchContextLengths(ctx, d.transport, s.provider); metaErr != nil && d.ctx.Err() == nil {
			d.log.warnf("model metadata for provider %q not captured: %v", s.provider.name, metaErr)
		}
	}
	cancel()
	s.mu.Lock()
	s.refreshing = false
	s.completed++
	changed := false
	switch {
	case err == nil:
		s.breaker.success()
		s.lastSuccess = d.now()
		changed = !equalStrings(s.models, models) || !equalContexts(s.contexts, contexts)
		s.models = models
		if contexts != nil || s.provider.metadataPath == "" {
			s.contexts = contexts
		}
	case d.ctx.Err() != nil:
		s.breaker.neutral()
	default:
		s.breaker.failure(d.now())
	}
	kept, state := len(s.models), s.breaker.state
	s.mu.Unlock()
	if err != nil {
		if d.ctx.Err() == nil {
			d.log.errorf("discovery for provider %q failed (breaker %s), keeping %d discovered models: %v", s.provider.name, state, kept, err)
		}
		return false
	}
	if changed && d.onChange != nil {
		d.onChange()
	}
	return true
}

// close stops retries and cancels refreshes in flight.
func (d *discoverer) close() {
	d.cancel()
	d.mu.Lock()
	for i := 0; i < len(d.timers); i++ {
		d.timers[i].Stop()
	}
	d.mu.Unlock()
}

func equalContexts(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
