package gateway

import (
	"fmt"
	"time"
)

// Breaker states, by the names logs and state dumps use.
const (
	breakerClosed   = "closed"
	breakerOpen     = "open"
	breakerHalfOpen = "half-open"
)

// breakerSettings is the compiled BreakerConfig.
type breakerSettings struct {
	threshold int
	open      time.Duration
	maxOpen   time.Duration
}

// circuitBreaker is one circuit breaker: closed → open after `threshold`
// consecutive failures → half-open (one probe) once the backoff window
// has passed; the window starts at `open` and doubles on every failed
// probe up to `maxOpen`. Discovery keeps one per provider (an extra gate
// on top of discoveryInterval, never a replacement), and the request
// path one per provider and per provider/model (health.go). Not safe for
// concurrent use: its owner's mutex guards it.
type circuitBreaker struct {
	settings  breakerSettings
	state     string
	failures  int
	backoff   time.Duration
	openUntil time.Time
}

func newBreaker(s breakerSettings) *circuitBreaker {
	return &circuitBreaker{settings: s, state: breakerClosed, backoff: s.open}
}

// allow reports whether a refresh may start now; an open breaker whose
// window has passed turns half-open and admits exactly one probe.
func (b *circuitBreaker) allow(now time.Time) bool {
	switch b.state {
	case breakerClosed:
		return true
	case breakerOpen:
		if now.Before(b.openUntil) {
			return false
		}
		b.state = breakerHalfOpen
		return true
	}
	return false // half-open: the probe is already running
}

// usable reports, without changing the state, whether allow would admit
// a request now.
func (b *circuitBreaker) usable(now time.Time) bool {
	return b.state == breakerClosed || b.state == breakerOpen && !now.Before(b.openUntil)
}

// success closes the breaker and resets the backoff.
func (b *circuitBreaker) success() {
	b.state, b.failures, b.backoff = breakerClosed, 0, b.settings.open
}

// failure counts a failed refresh: it opens a closed breaker at the
// threshold, and reopens a half-open one with a doubled backoff.
func (b *circuitBreaker) failure(now time.Time) {
	switch b.state {
	case breakerClosed:
		b.failures++
		if b.failures >= b.settings.threshold {
			b.state, b.backoff = breakerOpen, b.settings.open
			b.openUntil = now.Add(b.backoff)
		}
	case breakerHalfOpen:
		b.backoff *= 2
		if b.backoff > b.settings.maxOpen {
			b.backoff = b.settings.maxOpen
		}
		b.state = breakerOpen
		b.openUntil = now.Add(b.backoff)
	}
}

// neutral records a cancelled refresh: neither success nor failure. A
// half-open probe that was cancelled leaves the breaker open, with the
// window already passed, so the next request may probe again.
func (b *circuitBreaker) neutral() {
	if b.state == breakerHalfOpen {
		b.state = breakerOpen
	}
}

// Breaker defaults: discovery's (top-level breaker) and the request
// path's (routing.breaker).
var (
	discoveryBreakerDefaults = breakerSettings{threshold: 3, open: time.Minute, maxOpen: 6 * time.Hour}
	requestBreakerDefaults   = breakerSettings{threshold: 3, open: 30 * time.Second, maxOpen: 10 * time.Minute}
)

// compileBreaker validates a BreakerConfig (at field) against its
// documented bounds (README configuration table) over the defaults s.
func compileBreaker(field string, bc *BreakerConfig, s breakerSettings) (breakerSettings, error) {
	if bc == nil {
		return s, nil
	}
	if bc.FailureThreshold != 0 {
		if bc.FailureThreshold < 1 || bc.FailureThreshold > 100 {
			return s, fmt.Errorf("config: %s.failureThreshold: %d must be between 1 and 100", field, bc.FailureThreshold)
		}
		s.threshold = bc.FailureThreshold
	}
	var err error
	if s.open, err = parseTimeout(field+".openDuration", bc.OpenDuration, s.open); err != nil {
		return s, err
	}
	if s.maxOpen, err = parseTimeout(field+".maxOpenDuration", bc.MaxOpenDuration, s.maxOpen); err != nil {
		return s, err
	}
	if bc.MaxOpenDuration == "" && s.maxOpen < s.open {
		s.maxOpen = s.open // an openDuration above the default cap raises the cap
	}
	if s.maxOpen < s.open {
		return s, fmt.Errorf("config: %s.maxOpenDuration: %q must be at least openDuration (%s)", field, bc.MaxOpenDuration, s.open)
	}
	if s.maxOpen > 24*time.Hour {
		return s, fmt.Errorf("config: %s.maxOpenDuration: %q must be at most 24h", field, bc.MaxOpenDuration)
	}
	return s, nil
}
