package gateway

import (
	"sync"
	"time"
)

// Target health: what the gateway has observed of each MCP server and
// agent. Every proxied or federated call records its outcome (source
// "passive"); with targetHealth.enabled an active probe sweep adds its
// own (source "probe"). A target is "unknown" until a call succeeds,
// "healthy" after a success, and "unhealthy" once failureThreshold
// observations in a row have failed; a success makes it healthy again.

// Target health states.
const (
	targetUnknown   = "unknown"
	targetHealthy   = "healthy"
	targetUnhealthy = "unhealthy"
)

// targetHealth is one target's observations.
type targetHealth struct {
	mu        sync.Mutex
	observed  bool
	state     string
	lastCheck time.Time
	lastError string
	failures  int
	latency   time.Duration
	source    string
}

// targetHealthView is a copy of a targetHealth for the admin API and
// /metrics (the fields past State are omitted while never observed).
type targetHealthView struct {
	State               string     `json:"state"`
	LastCheck           *time.Time `json:"lastCheck,omitempty"`
	LastError           *string    `json:"lastError,omitempty"`
	ConsecutiveFailures int        `json:"consecutiveFailures"`
	LatencyMs           *int64     `json:"latencyMs,omitempty"`
	Source              string     `json:"source,omitempty"`
}

// observe records one call's outcome. errMsg describes a failure in the
// gateway's own words (never a URL, header or body of the target's).
func (h *targetHealth) observe(ok bool, errMsg string, latency time.Duration, source string, threshold int, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.observed = true
	h.lastCheck = now
	h.latency = latency
	h.source = source
	if ok {
		h.state = targetHealthy
		h.failures = 0
		h.lastError = ""
		return
	}
	h.failures++
	h.lastError = errMsg
	if h.state == "" {
		h.state = targetUnknown
	}
	if h.failures >= threshold {
		h.state = targetUnhealthy
	}
}

// view is the health as the admin API shows it.
func (h *targetHealth) view() targetHealthView {
	h.mu.Lock()
	defer h.mu.Unlock()
	v := targetHealthView{State: targetUnknown, ConsecutiveFailures: h.failures}
	if !h.observed {
		return v
	}
	if h.state != "" {
		v.State = h.state
	}
	at := h.lastCheck
	msg := h.lastError
	ms := h.latency.Milliseconds()
	v.LastCheck = &at
	v.LastError = &msg
	v.LatencyMs = &ms
	v.Source = h.source
	return v
}

// observeTarget records a call's outcome on t's health.
func (g *Gateway) observeTarget(t *targetRuntime, ok bool, errMsg string, latency time.Duration, source string) {
	t.health.observe(ok, errMsg, latency, source, g.cfg.targetHealth.threshold, time.Now())
}

// maybeSweepTargets starts the active probe sweep when targetHealth is
// enabled and one is due; it never waits for it. (The sweep itself is
// built with the health issue item; until then only passive
// observations are recorded.)
func (g *Gateway) maybeSweepTargets() {}
