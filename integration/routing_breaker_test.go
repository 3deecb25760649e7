package integration_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The request-path breaker and 429 parking through the binary: per
// provider, in process. pa and pb serve rtModel, pa first (priority).

// rtBreakerConfig is failover on with routing.breaker's openDuration.
func rtBreakerConfig(open string) map[string]interface{} {
	return map[string]interface{}{
		"failover": rtFailoverOn,
		"routing": map[string]interface{}{
			"breaker": map[string]interface{}{"failureThreshold": 3, "openDuration": open},
		},
	}
}

// rtTripBreaker sends three requests that pa fails (pb serves them) and
// returns when pa's third failure arrived.
func rtTripBreaker(t *testing.T, base string, pa, pb *rtProvider) time.Time {
	t.Helper()
	for i := 1; i <= 3; i++ {
		rtOK(t, base, rtModel)
		require.Equal(t, int64(i), pa.total(), "request %d tries pa first", i)
		require.Equal(t, int64(i), pb.total(), "request %d is served by pb", i)
	}
	return pa.arrivals()[2]
}

// rtAssertSkipped sends requests while pa's breaker is surely still open
// (until opened+window) and requires that none reaches pa; at least one
// must finish in the window.
func rtAssertSkipped(t *testing.T, base string, pa *rtProvider, opened time.Time, window time.Duration) {
	t.Helper()
	paBefore := pa.total()
	inWindow := 0
	for i := 0; i < 20; i++ {
		res := rtOK(t, base, rtModel)
		if res.end.After(opened.Add(window)) {
			break
		}
		inWindow++
		require.Equal(t, paBefore, pa.total(), "request %d in the open window reached pa", inWindow)
	}
	require.NotZero(t, inWindow, "no request finished within %v of the breaker opening (machine too slow?)", window)
}

// TestRoutingBreakerOpensAndRecovers: three failed requests open pa's
// breaker; the next go straight to pb; after openDuration one half-open
// probe reaches pa, and its success closes the breaker (pa serves again).
func TestRoutingBreakerOpensAndRecovers(t *testing.T) {
	t.Parallel()
	pa, pb, base := rtPair(t, rtBreakerConfig("1s"))
	pa.status.Store(503)
	opened := rtTripBreaker(t, base, pa, pb)

	// The 4th request (and any other within the open second) goes
	// straight to pb: pa stays at 3.
	rtAssertSkipped(t, base, pa, opened, time.Second)
	assert.Equal(t, int64(3), pa.total())

	// pa recovers; poll until the half-open probe reaches it.
	pa.status.Store(0)
	rtEventually(t, 5*time.Second, 50*time.Millisecond, "half-open probe of pa", func() bool {
		rtOK(t, base, rtModel)
		return pa.total() == 4
	})
	probe := pa.arrivals()[3]
	assert.GreaterOrEqual(t, probe.Sub(opened), 990*time.Millisecond, "the probe waits openDuration")

	// The probe succeeded: closed, pa serves every request again.
	for i := 0; i < 3; i++ {
		before := rtProviders{pa, pb}.counts()
		rtOK(t, base, rtModel)
		assert.Equal(t, "pa", rtProviders{pa, pb}.served(t, before), "request %d after recovery", i)
	}
}

// TestRoutingBreakerReopensWithDoubledBackoff: a failed half-open probe
// re-opens the breaker for twice openDuration.
func TestRoutingBreakerReopensWithDoubledBackoff(t *testing.T) {
	t.Parallel()
	pa, pb, base := rtPair(t, rtBreakerConfig("1s"))
	pa.status.Store(503)
	opened := rtTripBreaker(t, base, pa, pb)

	rtEventually(t, 5*time.Second, 50*time.Millisecond, "first probe of pa", func() bool {
		rtOK(t, base, rtModel) // the probe fails over to pb
		return pa.total() == 4
	})
	first := pa.arrivals()[3]
	assert.GreaterOrEqual(t, first.Sub(opened), 990*time.Millisecond)
	// Re-opened for 2 s: nothing reaches pa for a while after the probe.
	rtAssertSkipped(t, base, pa, first, 1500*time.Millisecond)

	rtEventually(t, 8*time.Second, 50*time.Millisecond, "second probe of pa", func() bool {
		rtOK(t, base, rtModel)
		return pa.total() == 5
	})
	second := pa.arrivals()[4]
	assert.GreaterOrEqual(t, second.Sub(first), 1990*time.Millisecond, "the backoff doubled to 2 s")
}

// TestRoutingBreakerCountsRequestsNotRetries: with two retries, a failed
// request makes three attempts on pa but counts once: pa is still tried
// by the 2nd and 3rd requests and skipped from the 4th.
func TestRoutingBreakerCountsRequestsNotRetries(t *testing.T) {
	t.Parallel()
	cfg := rtBreakerConfig("30s")
	cfg["retry"] = map[string]interface{}{"enabled": true, "attempts": 2, "backoff": "10ms"}
	pa, pb, base := rtPair(t, cfg)
	pa.status.Store(503)
	for i := 1; i <= 3; i++ {
		rtOK(t, base, rtModel)
		require.Equal(t, int64(3*i), pa.total(), "request %d: three attempts on pa", i)
		require.Equal(t, int64(i), pb.total(), "request %d: served by pb", i)
	}
	rtOK(t, base, rtModel)
	assert.Equal(t, int64(9), pa.total(), "open after three failed requests")
	assert.Equal(t, int64(4), pb.total())
}

// TestRoutingBreakerConsecutiveOnly: a success in between resets the
// count, and a 400 is not a failure.
func TestRoutingBreakerConsecutiveOnly(t *testing.T) {
	t.Parallel()
	t.Run("success_resets", func(t *testing.T) {
		t.Parallel()
		pa, pb, base := rtPair(t, rtBreakerConfig("30s"))
		pa.failNext.Store(2)
		rtOK(t, base, rtModel)
		rtOK(t, base, rtModel)
		rtOK(t, base, rtModel) // pa serves
		require.Equal(t, map[string]int64{"pa": 3, "pb": 2}, rtProviders{pa, pb}.counts())
		pa.failNext.Store(2)
		rtOK(t, base, rtModel)
		rtOK(t, base, rtModel)
		rtOK(t, base, rtModel) // two consecutive failures only: pa is tried, and serves
		assert.Equal(t, map[string]int64{"pa": 6, "pb": 4}, rtProviders{pa, pb}.counts())
	})
	t.Run("400_is_not_a_failure", func(t *testing.T) {
		t.Parallel()
		pa, pb, base := rtPair(t, rtBreakerConfig("30s"))
		pa.status.Store(400)
		for i := 0; i < 4; i++ {
			res := rtPost(t, base, rtChat(rtModel, "bad", false))
			require.NoError(t, res.err)
			require.Equal(t, http.StatusBadRequest, res.status, "%s", res)
		}
		pa.status.Store(0)
		rtOK(t, base, rtModel)
		assert.Equal(t, map[string]int64{"pa": 5, "pb": 0}, rtProviders{pa, pb}.counts(), "pa was never opened")
	})
}

// TestRoutingBreakerAllOpen: when every candidate is open one is
// attempted anyway (the client gets its answer, not a refusal without a
// call).
func TestRoutingBreakerAllOpen(t *testing.T) {
	t.Parallel()
	pa, pb, base := rtPair(t, rtBreakerConfig("30s"))
	pa.status.Store(503)
	pb.status.Store(503)
	ps := rtProviders{pa, pb}
	for i := 1; i <= 3; i++ {
		res := rtPost(t, base, rtChat(rtModel, "both down", false))
		require.NoError(t, res.err)
		require.Equal(t, http.StatusServiceUnavailable, res.status, "%s", res)
		require.Equal(t, map[string]int64{"pa": int64(i), "pb": int64(i)}, ps.counts(), "request %d tries both", i)
	}
	// Both open now. Healthy again, but the breakers do not know it.
	pa.status.Store(0)
	pb.status.Store(0)
	before := ps.sum()
	res := rtPost(t, base, rtChat(rtModel, "both open", false))
	require.NoError(t, res.err)
	assert.Equal(t, int64(1), ps.sum()-before, "exactly one candidate attempted: %s", rtCountsString(ps.counts()))
	assert.Equal(t, http.StatusOK, res.status, "%s", res)
}

// TestRoutingRateLimitParks: a 429 with Retry-After parks that
// provider/model until then: the next requests skip pa without calling
// it, and pa is used again once the wait has passed.
func TestRoutingRateLimitParks(t *testing.T) {
	t.Parallel()
	t.Run("retry_after_5", func(t *testing.T) {
		t.Parallel()
		pa, pb, base := rtPair(t, map[string]interface{}{"failover": rtFailoverOn})
		pa.retryAfter.Store("5")
		pa.failNext.Store(1) // one 429 with Retry-After: 5
		rtOK(t, base, rtModel)
		require.Equal(t, map[string]int64{"pa": 1, "pb": 1}, rtProviders{pa, pb}.counts())
		parked := pa.arrivals()[0]
		for i := 0; i < 5; i++ {
			res := rtOK(t, base, rtModel)
			if res.end.After(parked.Add(5 * time.Second)) {
				break
			}
			assert.Equal(t, int64(1), pa.total(), "request %d while pa is parked", i+2)
		}
		assert.Equal(t, int64(6), pb.total())
	})
	t.Run("retry_after_1_then_back", func(t *testing.T) {
		t.Parallel()
		pa, pb, base := rtPair(t, map[string]interface{}{"failover": rtFailoverOn})
		pa.retryAfter.Store("1")
		pa.failNext.Store(1)
		rtOK(t, base, rtModel)
		require.Equal(t, map[string]int64{"pa": 1, "pb": 1}, rtProviders{pa, pb}.counts())
		parked := pa.arrivals()[0]
		rtEventually(t, 5*time.Second, 50*time.Millisecond, "pa used again after its Retry-After", func() bool {
			rtOK(t, base, rtModel)
			return pa.total() == 2
		})
		assert.GreaterOrEqual(t, pa.arrivals()[1].Sub(parked), 900*time.Millisecond, "not before Retry-After")
		assert.Greater(t, pb.total(), int64(1), "pb served while pa was parked")
	})
	t.Run("capped_by_maxOpenDuration", func(t *testing.T) {
		t.Parallel()
		// Retry-After: 60, but parking lasts at most maxOpenDuration (1s).
		pa, pb, base := rtPair(t, map[string]interface{}{
			"failover": rtFailoverOn,
			"routing": map[string]interface{}{
				"breaker": map[string]interface{}{"openDuration": "1s", "maxOpenDuration": "1s"},
			},
		})
		pa.retryAfter.Store("60")
		pa.failNext.Store(1)
		rtOK(t, base, rtModel)
		require.Equal(t, map[string]int64{"pa": 1, "pb": 1}, rtProviders{pa, pb}.counts())
		parked := pa.arrivals()[0]
		rtEventually(t, 5*time.Second, 50*time.Millisecond, "pa used again after maxOpenDuration", func() bool {
			rtOK(t, base, rtModel)
			return pa.total() == 2
		})
		assert.GreaterOrEqual(t, pa.arrivals()[1].Sub(parked), 900*time.Millisecond)
	})
	t.Run("without_failover_the_429_reaches_the_client", func(t *testing.T) {
		t.Parallel()
		// The control: parking chooses among candidates; it does not
		// invent one. With failover off the client gets pa's 429.
		pa, pb, base := rtPair(t, nil)
		pa.retryAfter.Store("5")
		pa.failNext.Store(1)
		res := rtPost(t, base, rtChat(rtModel, "parked", false))
		require.NoError(t, res.err)
		assert.Equal(t, http.StatusTooManyRequests, res.status, "%s", res)
		assert.Equal(t, "5", res.header.Get("Retry-After"))
		assert.Equal(t, int64(0), pb.total())
	})
}

// TestRoutingBreakerOneProbe: while the half-open probe is in flight
// (held inside pa), every other request goes to pb: one probe, not one
// per request.
func TestRoutingBreakerOneProbe(t *testing.T) {
	t.Parallel()
	pa, pb, base := rtPair(t, rtBreakerConfig("1s"))
	pa.status.Store(503)
	rtTripBreaker(t, base, pa, pb)
	pa.status.Store(0)
	release := pa.holdRequests()
	t.Cleanup(release)

	// Poll in the background (a request every 50 ms) until one is the
	// probe, held inside pa.
	results := make(chan rlResult, 200)
	deadline := time.After(5 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	launched := 0
wait:
	for {
		select {
		case <-pa.entered:
			break wait
		case <-deadline:
			t.Fatal("no half-open probe reached pa within 5s")
		case <-tick.C:
			launched++
			go func() { results <- rtPost(t, base, rtChat(rtModel, "poll", false)) }()
		}
	}
	require.Equal(t, int64(4), pa.total(), "the probe")
	for i := 0; i < 10; i++ {
		rtOK(t, base, rtModel)
	}
	assert.Equal(t, int64(4), pa.total(), "no second probe while the first runs")
	release()
	for i := 0; i < launched; i++ {
		res := rtAwait(t, results)
		assert.Equal(t, 200, res.status, "%s", res)
	}
	// The probe succeeded: pa serves again.
	before := rtProviders{pa, pb}.counts()
	rtOK(t, base, rtModel)
	assert.Equal(t, "pa", rtProviders{pa, pb}.served(t, before))
}

// TestRoutingBreakerFailureKinds: a 429 without Retry-After, a 404, a
// 500, a refused provider key (401) and a stall are failures alike:
// three in a row of one kind open the breaker. (The core counts 404 and
// 429 against a provider/model breaker and the others against the
// provider's, so a mix of kinds is not tested here.)
func TestRoutingBreakerFailureKinds(t *testing.T) {
	t.Parallel()
	for _, status := range []int32{429, 404, 500, 401} {
		status := status
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			t.Parallel()
			pa, pb, base := rtPair(t, rtBreakerConfig("30s"))
			pa.status.Store(status)
			rtTripBreaker(t, base, pa, pb)
			pa.status.Store(0)
			rtOK(t, base, rtModel)
			assert.Equal(t, map[string]int64{"pa": 3, "pb": 4}, rtProviders{pa, pb}.counts(), "open after three %ds", status)
		})
	}
}
