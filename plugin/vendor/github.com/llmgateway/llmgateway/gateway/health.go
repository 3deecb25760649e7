package gateway

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// Request-path health: in process, a circuit breaker per provider and
// one per provider/model, fed by the outcome of every logical request to
// a candidate (its retries count once), plus a 429's Retry-After parking
// of the provider/model. The routing stage skips a candidate whose
// breaker is open or that is parked while another candidate remains; a
// breaker whose window has passed admits one half-open probe.
//
// Which breaker a failure counts against: a 404 or a 429 is the model's
// (providers answer them per model: an unknown id, a per-model rate
// limit); every other failure but a 400 — a 5xx, 401/403, a refused
// connection, a timeout — is the provider's. A success closes both.

// healthBook holds the breakers and parkings. Its keys are a provider's
// name and "provider/model".
type healthBook struct {
	settings breakerSettings
	now      func() time.Time
	mu       sync.Mutex
	breakers map[string]*circuitBreaker
	parked   map[string]time.Time // provider/model -> skipped until
	log      *logger              // nil in tests
	// dirty counts the breakers that are not closed or have counted a
	// failure, and the parkings (recounted under mu on every change):
	// while it is 0 every candidate is healthy and a success changes
	// nothing, so the routing and call stages skip the book.
	dirty atomic.Int64
}

// clean reports whether the book holds nothing but closed breakers with
// no failure counted, and no parking.
func (h *healthBook) clean() bool { return h.dirty.Load() == 0 }

// recount refreshes dirty (mu held).
func (h *healthBook) recount() {
	n := int64(len(h.parked))
	for _, b := range h.breakers {
		if b.state != breakerClosed || b.failures > 0 {
			n++
		}
	}
	h.dirty.Store(n)
}

func newHealthBook(s breakerSettings) *healthBook {
	return &healthBook{settings: s, now: time.Now, breakers: map[string]*circuitBreaker{}, parked: map[string]time.Time{}}
}

// healthVerdict is a candidate's standing for the routing stage.
const (
	healthOK     = iota // closed, or open with its window passed (a probe may start)
	healthOpen          // open, or half-open with its probe running
	healthParked        // parked by a 429's Retry-After
)

// standing is cand's verdict at now, without claiming a probe.
func (h *healthBook) standing(cand candidate, now time.Time) int {
	pm := candidateName(cand)
	h.mu.Lock()
	verdict := healthOK
	if until, ok := h.parked[pm]; ok {
		if now.Before(until) {
			verdict = healthParked
		} else {
			delete(h.parked, pm)
			h.recount()
		}
	}
	if b := h.breakers[cand.provider.name]; verdict == healthOK && b != nil && !b.usable(now) {
		verdict = healthOpen
	}
	if b := h.breakers[pm]; verdict == healthOK && b != nil && !b.usable(now) {
		verdict = healthOpen
	}
	h.mu.Unlock()
	return verdict
}

// begin claims cand for one logical request: false when one of its
// breakers is open or its half-open probe is already running (the
// caller moves on, unless force). A breaker whose window passed turns
// half-open and this request is its probe. Every begin that returned
// true is followed by exactly one end.
func (h *healthBook) begin(cand candidate, force bool) bool {
	if h.clean() {
		return true
	}
	now := h.now()
	pm := candidateName(cand)
	h.mu.Lock()
	pb, mb := h.breakers[cand.provider.name], h.breakers[pm]
	if !force && (pb != nil && !pb.usable(now) || mb != nil && !mb.usable(now)) {
		h.mu.Unlock()
		return false
	}
	if pb != nil {
		pb.allow(now)
	}
	if mb != nil {
		mb.allow(now)
	}
	h.mu.Unlock()
	return true
}

// Outcomes of a logical request, for end.
const (
	outcomeSuccess = iota
	outcomeNeutral // cancelled, saturated, or the client's own mistake (400)
	outcomeProviderFailure
	outcomeModelFailure
)

// healthOutcome classifies a candidate's result: nil is a success.
func healthOutcome(e *apiError) int {
	switch {
	case e == nil:
		return outcomeSuccess
	case e.Class == apierr.ClassBadRequest || e.Class == apierr.ClassClientCancel || e.Code == codeSaturated:
		return outcomeNeutral
	case e.Class == apierr.ClassRateLimited || e.Class == apierr.ClassRefused && e.Status == http.StatusNotFound:
		return outcomeModelFailure
	}
	return outcomeProviderFailure
}

// end reports the outcome of the logical request begin admitted. A 429
// with a Retry-After parks the provider/model for that long (at most
// the breaker's maximum open duration).
func (h *healthBook) end(cand candidate, e *apiError) {
	outcome := healthOutcome(e)
	if outcome == outcomeSuccess && h.clean() {
		return
	}
	now := h.now()
	pm := candidateName(cand)
	h.mu.Lock()
	h.record(outcome, cand.provider.name, pm, e, now)
	h.recount()
	h.mu.Unlock()
}

// record applies one outcome to the breakers of provider and pm (mu
// held).
func (h *healthBook) record(outcome int, provider, pm string, e *apiError, now time.Time) {
	pb, mb := h.breakers[provider], h.breakers[pm]
	switch outcome {
	case outcomeSuccess:
		h.closed(provider, pb)
		h.closed(pm, mb)
		return
	case outcomeProviderFailure:
		h.failed(provider, pb, now)
		if mb != nil {
			mb.neutral()
		}
		return
	case outcomeModelFailure:
		h.failed(pm, mb, now)
		if pb != nil {
			pb.neutral()
		}
		if wait := retryAfterDelay(e.RetryAfter, now); e.Status == http.StatusTooManyRequests && wait > 0 {
			if wait > h.settings.maxOpen {
				wait = h.settings.maxOpen
			}
			h.parked[pm] = now.Add(wait)
		}
		return
	}
	if pb != nil {
		pb.neutral()
	}
	if mb != nil {
		mb.neutral()
	}
}

// failed counts a failure against key's breaker, creating it (the
// book's mutex is held). The map is bounded by the configuration: keys
// are providers and the provider/model pairs the registry serves.
func (h *healthBook) failed(key string, b *circuitBreaker, now time.Time) {
	if b == nil {
		b = newBreaker(h.settings)
		h.breakers[key] = b
	}
	before := b.state
	b.failure(now)
	if b.state == breakerOpen && before != breakerOpen && h.log != nil {
		h.log.warnf("routing: %q is skipped for %s after %d consecutive failed requests (breaker open)", key, b.backoff, b.settings.threshold)
	}
}

// retryAfterDelay reads a Retry-After value: delay seconds or an HTTP
// date; 0 when absent or unreadable.
func retryAfterDelay(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.Atoi(v); err == nil {
		if secs < 0 {
			return 0
		}
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// closed closes key's breaker on a success, logging a recovery.
func (h *healthBook) closed(key string, b *circuitBreaker) {
	if b == nil {
		return
	}
	if b.state != breakerClosed && h.log != nil {
		h.log.infof("routing: %q answered again (breaker closed)", key)
	}
	b.success()
}

// state is key's breaker state (closed when it has none), for tests and
// the admin view.
func (h *healthBook) state(key string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if b := h.breakers[key]; b != nil {
		return b.state
	}
	return breakerClosed
}
