package gateway

import (
	"fmt"
	"net/http"
	"sync"
	"time"
)

// Cross-provider failover (off by default): a request for a bare model
// id — or an alias with several candidates — may move to its next
// authorized candidate when its first candidate fails with anything
// but a 400, before any byte reached the client, and only to a candidate
// no dearer than the first on both input and output price (the cost
// guard). An explicit provider/model has one candidate and is never
// substituted.

// failoverSettings is FailoverConfig validated.
type failoverSettings struct {
	enabled     bool
	maxAttempts int
}

const (
	defaultFailoverAttempts = 3
	maxFailoverAttempts     = 10
	// defaultMaxUpstreamAttempts bounds one request's outbound attempts,
	// every retry on every candidate included (maxUpstreamAttempts).
	defaultMaxUpstreamAttempts = 6
	maxMaxUpstreamAttempts     = 40
)

func compileFailover(fc *FailoverConfig) (failoverSettings, error) {
	s := failoverSettings{maxAttempts: defaultFailoverAttempts}
	if fc == nil {
		return s, nil
	}
	s.enabled = fc.Enabled
	if fc.MaxAttempts != 0 {
		if fc.MaxAttempts < 1 || fc.MaxAttempts > maxFailoverAttempts {
			return s, fmt.Errorf("config: failover.maxAttempts: %d is out of range (1-%d candidates, the first included)", fc.MaxAttempts, maxFailoverAttempts)
		}
		s.maxAttempts = fc.MaxAttempts
	}
	return s, nil
}

// composedWarnAbove is the composed worst case above which startup
// warns.
const composedWarnAbove = 12

// composedAttemptsWarning is the startup warning about one request's
// worst case when failover and retry compose to many outbound calls
// ("" when they do not): failover.maxAttempts × (1 + retry.attempts),
// bounded by maxUpstreamAttempts, each waiting up to its provider's
// requestTimeout for headers unless firstByteDeadline bounds the sum.
func composedAttemptsWarning(c *compiledConfig) string {
	if !c.failover.enabled || c.retry.retries == 0 {
		return ""
	}
	composed := c.failover.maxAttempts * (1 + c.retry.retries)
	if composed <= composedWarnAbove {
		return ""
	}
	bound := composed
	if c.maxAttempts < bound {
		bound = c.maxAttempts
	}
	deadline := "each waiting up to its provider's requestTimeout for response headers (set firstByteDeadline to bound the sum)"
	if c.firstByteDeadline > 0 {
		deadline = "all within firstByteDeadline (" + c.firstByteDeadline.String() + ")"
	}
	return fmt.Sprintf("failover.maxAttempts (%d) × (1 + retry.attempts (%d)) = %d outbound calls for one request at worst; maxUpstreamAttempts bounds it to %d, %s",
		c.failover.maxAttempts, c.retry.retries, composed, bound, deadline)
}

func compileMaxUpstreamAttempts(n int) (int, error) {
	if n == 0 {
		return defaultMaxUpstreamAttempts, nil
	}
	if n < 1 || n > maxMaxUpstreamAttempts {
		return 0, fmt.Errorf("config: maxUpstreamAttempts: %d is out of range (1-%d)", n, maxMaxUpstreamAttempts)
	}
	return n, nil
}

// costAllowed is the cost guard: cand may stand in for first only when
// it is no dearer on input and on output per token. Prices (resolved
// once per registry snapshot, on the candidates) are as billing
// resolves them (pricing overrides, then the built-in tables),
// never through modelMeta (its free flag included). Unknown is never
// free: a known-priced first refuses an unknown-priced candidate; an
// unknown-priced first refuses a candidate with a known non-zero price;
// both unknown, or both known zero, are equal.
func costAllowed(first, cand candidate) bool {
	fp, cp := first.list, cand.list
	fKnown, cKnown := first.listSource != priceSourceUnpriced, cand.listSource != priceSourceUnpriced
	switch {
	case fKnown && !cKnown:
		return false
	case !fKnown && cKnown:
		return cp.inputPerMTokMicroUSD == 0 && cp.outputPerMTokMicroUSD == 0
	case !fKnown && !cKnown:
		return true
	}
	return cp.inputPerMTokMicroUSD <= fp.inputPerMTokMicroUSD && cp.outputPerMTokMicroUSD <= fp.outputPerMTokMicroUSD
}

// failoverLog writes the failover lines: a failover past a 404 always
// (it usually means a configuration mistake), the routine line at most
// once per 30 s with the count of lines suppressed since.
type failoverLog struct {
	mu         sync.Mutex
	last       time.Time
	suppressed int
}

const failoverLogEvery = 30 * time.Second

func (f *failoverLog) moved(g *Gateway, from, to candidate, e *apiError, tr *requestTrace) {
	if e.Status == http.StatusNotFound {
		g.log.warnf("failover past a 404: provider %q answered 404 for model %q; trying provider %q (model %q) — check the configuration%s",
			from.provider.name, from.model, to.provider.name, to.model, tr.logTail)
		return
	}
	f.mu.Lock()
	now := time.Now()
	if !f.last.IsZero() && now.Sub(f.last) < failoverLogEvery {
		f.suppressed++
		f.mu.Unlock()
		return
	}
	n := f.suppressed
	f.last, f.suppressed = now, 0
	f.mu.Unlock()
	if n > 0 {
		g.log.warnf("failover: %d more failover lines were suppressed in the last %s", n, failoverLogEvery)
	}
	g.log.warnf("failing over from provider %q to %q for model %q: %s%s", from.provider.name, to.provider.name, from.model, e.Error(), tr.logTail)
}

func (f *failoverLog) skipped(g *Gateway, first, cand candidate) {
	g.warnings.warnOnce("failover-cost:"+first.provider.name+"/"+first.model+">"+cand.provider.name+"/"+cand.model,
		"failover: provider %q (model %q) is never a failover candidate for provider %q: it is dearer or its price is unknown (cost guard)",
		cand.provider.name, cand.model, first.provider.name)
}
