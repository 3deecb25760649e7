package integration_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmgateway/llmgateway/integration/mockupstream"
)

// Failover through the binary (README "Failover"): providers pa and pb
// both serve rtModel; the candidates of the bare id are pa then pb
// (sorted names). Every case starts its own mocks and its own gateway,
// so that no breaker or binding of one case leaks into the next.

var rtFailoverOn = map[string]interface{}{"enabled": true}

// rtPair is pa and pb, both healthy, and a gateway over them with extra.
func rtPair(t *testing.T, extra map[string]interface{}, knobsA ...string) (pa, pb *rtProvider, base string) {
	t.Helper()
	pa = rtNewProvider(t, "pa", mockupstream.Options{}, knobsA...)
	pb = rtNewProvider(t, "pb", mockupstream.Options{})
	gw := rtStart(t, rtConfig(rtProviders{pa, pb}, extra))
	return pa, pb, gw.URL
}

// TestFailoverFallsThrough: every upstream failure but a 400 moves the
// request from pa to pb, which serves it; the client sees pb's 200.
func TestFailoverFallsThrough(t *testing.T) {
	cases := []struct {
		name string
		// setup breaks pa; it returns pa's expected count after one
		// request.
		setup func(t *testing.T) (cfg map[string]interface{}, pa, pb *rtProvider, paHits int64)
	}{
		{"5xx_503", func(t *testing.T) (map[string]interface{}, *rtProvider, *rtProvider, int64) {
			pa, pb := rtNewProvider(t, "pa", mockupstream.Options{}), rtNewProvider(t, "pb", mockupstream.Options{})
			pa.status.Store(503)
			return rtConfig(rtProviders{pa, pb}, map[string]interface{}{"failover": rtFailoverOn}), pa, pb, 1
		}},
		{"5xx_500", func(t *testing.T) (map[string]interface{}, *rtProvider, *rtProvider, int64) {
			pa, pb := rtNewProvider(t, "pa", mockupstream.Options{}), rtNewProvider(t, "pb", mockupstream.Options{})
			pa.status.Store(500)
			return rtConfig(rtProviders{pa, pb}, map[string]interface{}{"failover": rtFailoverOn}), pa, pb, 1
		}},
		{"429", func(t *testing.T) (map[string]interface{}, *rtProvider, *rtProvider, int64) {
			pa, pb := rtNewProvider(t, "pa", mockupstream.Options{}), rtNewProvider(t, "pb", mockupstream.Options{})
			pa.status.Store(429)
			return rtConfig(rtProviders{pa, pb}, map[string]interface{}{"failover": rtFailoverOn}), pa, pb, 1
		}},
		{"404", func(t *testing.T) (map[string]interface{}, *rtProvider, *rtProvider, int64) {
			pa, pb := rtNewProvider(t, "pa", mockupstream.Options{}), rtNewProvider(t, "pb", mockupstream.Options{})
			pa.status.Store(404)
			return rtConfig(rtProviders{pa, pb}, map[string]interface{}{"failover": rtFailoverOn}), pa, pb, 1
		}},
		{"401_provider_key_refused", func(t *testing.T) (map[string]interface{}, *rtProvider, *rtProvider, int64) {
			pa, pb := rtNewProvider(t, "pa", mockupstream.Options{}), rtNewProvider(t, "pb", mockupstream.Options{})
			pa.status.Store(401)
			return rtConfig(rtProviders{pa, pb}, map[string]interface{}{"failover": rtFailoverOn}), pa, pb, 1
		}},
		{"timeout", func(t *testing.T) (map[string]interface{}, *rtProvider, *rtProvider, int64) {
			// pa holds its answer 5 s; its requestTimeout is 300 ms.
			pa := rtNewProvider(t, "pa", mockupstream.Options{}, "delay", "5s")
			pb := rtNewProvider(t, "pb", mockupstream.Options{})
			cfg := rtConfig(rtProviders{pa, pb}, map[string]interface{}{"failover": rtFailoverOn})
			cfg["providers"].(map[string]interface{})["pa"].(map[string]interface{})["requestTimeout"] = "300ms"
			return cfg, pa, pb, 1
		}},
		{"connection_refused", func(t *testing.T) (map[string]interface{}, *rtProvider, *rtProvider, int64) {
			pa, pb := rtNewProvider(t, "pa", mockupstream.Options{}), rtNewProvider(t, "pb", mockupstream.Options{})
			pa.url = closedURL(t)
			return rtConfig(rtProviders{pa, pb}, map[string]interface{}{"failover": rtFailoverOn}), pa, pb, 0
		}},
	}
	for _, tc := range cases {
		tc := tc
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, pa, pb, paHits := tc.setup(t)
			gw := rtStart(t, cfg)
			for _, stream := range []bool{false, true} {
				beforeA, beforeB := pa.total(), pb.total()
				res := rtPost(t, gw.URL, rtChat(rtModel, "fall through", stream))
				require.NoError(t, res.err)
				require.Equal(t, http.StatusOK, res.status, "stream=%v: %s", stream, res)
				assert.Contains(t, string(res.body), strings.TrimSpace(mockupstream.ChunkText(0)), "stream=%v: pb's answer", stream)
				assert.Equal(t, paHits, pa.total()-beforeA, "stream=%v: pa tried once", stream)
				assert.Equal(t, int64(1), pb.total()-beforeB, "stream=%v: pb served", stream)
			}
		})
	}
}

// TestFailoverNotOn400: a 400 ends the walk; the client sees it and pb is
// never called.
func TestFailoverNotOn400(t *testing.T) {
	t.Parallel()
	pa, pb, base := rtPair(t, map[string]interface{}{"failover": rtFailoverOn})
	pa.status.Store(400)
	res := rtPost(t, base, rtChat(rtModel, "bad request", false))
	require.NoError(t, res.err)
	assert.Equal(t, http.StatusBadRequest, res.status, "%s", res)
	assert.Equal(t, int64(1), pa.total())
	assert.Equal(t, int64(0), pb.total(), "no failover on a 400")
}

// TestFailoverOffByDefault: without failover.enabled pa's 503 reaches the
// client and pb is not called.
func TestFailoverOffByDefault(t *testing.T) {
	t.Parallel()
	pa, pb, base := rtPair(t, nil)
	pa.status.Store(503)
	res := rtPost(t, base, rtChat(rtModel, "no failover", false))
	require.NoError(t, res.err)
	assert.Equal(t, http.StatusServiceUnavailable, res.status, "%s", res)
	assert.Equal(t, int64(1), pa.total())
	assert.Equal(t, int64(0), pb.total())
}

// TestFailoverCostGuard: pa fails with 503; pb may stand in only when it
// is no dearer on input and output price than pa. The model is one no
// built-in table prices, so the pricing block decides.
func TestFailoverCostGuard(t *testing.T) {
	const model = "rt-priced-model"
	price := func(in, out float64) map[string]interface{} {
		return map[string]interface{}{"inputPerM": in, "outputPerM": out}
	}
	cases := []struct {
		name    string
		pricing map[string]interface{}
		// tried: pb is a failover candidate.
		tried bool
	}{
		{"cheaper_fallback_used", map[string]interface{}{"pa/" + model: price(2, 4), "pb/" + model: price(1, 2)}, true},
		{"equal_price_used", map[string]interface{}{model: price(2, 4)}, true},
		{"dearer_output_refused", map[string]interface{}{"pa/" + model: price(2, 4), "pb/" + model: price(1, 8)}, false},
		{"dearer_input_refused", map[string]interface{}{"pa/" + model: price(2, 4), "pb/" + model: price(3, 4)}, false},
		{"unknown_fallback_refused", map[string]interface{}{"pa/" + model: price(2, 4)}, false},
		{"priced_fallback_for_unknown_first_refused", map[string]interface{}{"pb/" + model: price(1, 2)}, false},
		{"both_unknown_used", nil, true},
		{"known_zero_fallback_for_unknown_first_used", map[string]interface{}{"pb/" + model: price(0, 0)}, true},
	}
	for _, tc := range cases {
		tc := tc
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pa := rtNewProvider(t, "pa", mockupstream.Options{})
			pb := rtNewProvider(t, "pb", mockupstream.Options{})
			pa.status.Store(503)
			cfg := rtConfig(rtProviders{pa, pb}, map[string]interface{}{"failover": rtFailoverOn})
			cfg["providers"].(map[string]interface{})["pa"].(map[string]interface{})["models"] = []string{model}
			cfg["providers"].(map[string]interface{})["pb"].(map[string]interface{})["models"] = []string{model}
			if tc.pricing != nil {
				cfg["pricing"] = tc.pricing
			}
			gw := rtStart(t, cfg)
			res := rtPost(t, gw.URL, rtChat(model, "cost guard", false))
			require.NoError(t, res.err)
			assert.Equal(t, int64(1), pa.total(), "pa is the first candidate")
			if tc.tried {
				assert.Equal(t, http.StatusOK, res.status, "%s", res)
				assert.Equal(t, int64(1), pb.total(), "pb stands in")
			} else {
				assert.Equal(t, http.StatusServiceUnavailable, res.status, "pa's failure: %s", res)
				assert.Equal(t, int64(0), pb.total(), "pb is never tried")
			}
		})
	}
}

// TestFailoverExplicitNotSubstituted: "pa/gpt-4o-mini" has one candidate.
func TestFailoverExplicitNotSubstituted(t *testing.T) {
	t.Parallel()
	pa, pb, base := rtPair(t, map[string]interface{}{"failover": rtFailoverOn})
	pa.status.Store(503)
	res := rtPost(t, base, rtChat("pa/"+rtModel, "explicit", false))
	require.NoError(t, res.err)
	assert.Equal(t, http.StatusServiceUnavailable, res.status, "%s", res)
	assert.Equal(t, int64(1), pa.total())
	assert.Equal(t, int64(0), pb.total(), "an explicit provider/model is never substituted")
}

// TestFailoverNotMidStream: pa's stream fails after its first events
// reached the client; the client gets the 200, the events and the error,
// and pb is never called (retry on as well: no retry after a byte).
func TestFailoverNotMidStream(t *testing.T) {
	t.Parallel()
	pa, pb, base := rtPair(t, map[string]interface{}{
		"failover": rtFailoverOn,
		"retry":    map[string]interface{}{"enabled": true, "attempts": 2, "backoff": "10ms"},
	}, "error-after", "2")
	res := rtPost(t, base, rtChat(rtModel, "cut me", true))
	require.NoError(t, res.err)
	require.Equal(t, http.StatusOK, res.status, "%s", res)
	body := string(res.body)
	assert.Contains(t, body, mockupstream.ChunkText(0), "the events before the failure")
	assert.Contains(t, body, "error", "the mid-stream error")
	assert.Equal(t, int64(1), pa.total(), "no retry after the first byte")
	assert.Equal(t, int64(0), pb.total(), "no failover after the first byte")
}

// TestFailoverAttemptBudget: ten always-503 providers, three retries
// each, failover over all ten: the request makes exactly
// min(maxUpstreamAttempts, 10 × (1 + 3)) upstream attempts, the retries
// of one candidate before the next (sorted names).
func TestFailoverAttemptBudget(t *testing.T) {
	cases := []struct {
		name string
		max  int // maxUpstreamAttempts; 0 leaves the default (6)
		want []int64
	}{
		{"max40", 40, []int64{4, 4, 4, 4, 4, 4, 4, 4, 4, 4}},
		{"default6", 0, []int64{4, 2, 0, 0, 0, 0, 0, 0, 0, 0}},
		{"max7", 7, []int64{4, 3, 0, 0, 0, 0, 0, 0, 0, 0}},
	}
	for _, tc := range cases {
		tc := tc
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var ps rtProviders
			for i := 0; i < 10; i++ {
				p := rtNewProvider(t, fmt.Sprintf("p%02d", i), mockupstream.Options{})
				p.status.Store(503)
				ps = append(ps, p)
			}
			extra := map[string]interface{}{
				"failover": map[string]interface{}{"enabled": true, "maxAttempts": 10},
				"retry":    map[string]interface{}{"enabled": true, "attempts": 3, "backoff": "10ms"},
			}
			if tc.max != 0 {
				extra["maxUpstreamAttempts"] = tc.max
			}
			gw := rtStart(t, rtConfig(ps, extra))
			res := rtPost(t, gw.URL, rtChat(rtModel, "budget", false))
			require.NoError(t, res.err)
			assert.Equal(t, http.StatusServiceUnavailable, res.status, "%s", res)
			var want int64
			got := make([]int64, len(ps))
			for i, p := range ps {
				got[i] = p.total()
				want += tc.want[i]
			}
			assert.Equal(t, want, ps.sum(), "upstream attempts in total: %s", rtCountsString(ps.counts()))
			assert.Equal(t, tc.want, got, "attempts per provider, in candidate order")
		})
	}
}

// TestFailoverFirstByteDeadline: firstByteDeadline bounds the time to the
// first upstream response headers across every attempt and retry wait;
// past it the client gets 504 upstream_timeout.
func TestFailoverFirstByteDeadline(t *testing.T) {
	t.Run("one_slow_candidate", func(t *testing.T) {
		t.Parallel()
		// pa holds 5 s (its requestTimeout is the default 5 m): the
		// deadline, not a stall, ends the request, and no later
		// candidate is tried past it.
		pa, pb, base := rtPair(t, map[string]interface{}{"failover": rtFailoverOn, "firstByteDeadline": "500ms"}, "delay", "5s")
		res := rtPost(t, base, rtChat(rtModel, "deadline", false))
		require.NoError(t, res.err)
		elapsed := res.end.Sub(res.start)
		assert.Equal(t, http.StatusGatewayTimeout, res.status, "%s", res)
		if res.status == http.StatusGatewayTimeout {
			assert.Equal(t, "upstream_timeout", rtErrorCode(t, res.body))
		}
		assert.GreaterOrEqual(t, elapsed, 450*time.Millisecond, "not before the deadline")
		assert.Less(t, elapsed, 3*time.Second, "at the deadline, not at pa's 5 s")
		assert.Equal(t, int64(1), pa.total())
		assert.Equal(t, int64(0), pb.total(), "the deadline covers the whole walk")
	})
	t.Run("across_candidates", func(t *testing.T) {
		t.Parallel()
		// Three candidates stall after 300 ms each (requestTimeout): the
		// 800 ms deadline falls during the third.
		var ps rtProviders
		for _, n := range []string{"pa", "pb", "pc"} {
			ps = append(ps, rtNewProvider(t, n, mockupstream.Options{}, "delay", "5s"))
		}
		cfg := rtConfig(ps, map[string]interface{}{"failover": rtFailoverOn, "firstByteDeadline": "800ms"})
		for _, n := range []string{"pa", "pb", "pc"} {
			cfg["providers"].(map[string]interface{})[n].(map[string]interface{})["requestTimeout"] = "300ms"
		}
		gw := rtStart(t, cfg)
		res := rtPost(t, gw.URL, rtChat(rtModel, "deadline", false))
		require.NoError(t, res.err)
		elapsed := res.end.Sub(res.start)
		assert.Equal(t, http.StatusGatewayTimeout, res.status, "%s", res)
		if res.status == http.StatusGatewayTimeout {
			assert.Equal(t, "upstream_timeout", rtErrorCode(t, res.body))
		}
		assert.GreaterOrEqual(t, elapsed, 750*time.Millisecond)
		assert.Less(t, elapsed, 2500*time.Millisecond)
		assert.Equal(t, map[string]int64{"pa": 1, "pb": 1, "pc": 1}, ps.counts())
	})
	t.Run("retry_wait_counts", func(t *testing.T) {
		t.Parallel()
		// pa answers 503; the retry wait (2 s base) would pass the
		// 500 ms deadline: 504 at once, no second attempt.
		pa := rtNewProvider(t, "pa", mockupstream.Options{})
		pa.status.Store(503)
		gw := rtStart(t, rtConfig(rtProviders{pa}, map[string]interface{}{
			"firstByteDeadline": "500ms",
			"retry":             map[string]interface{}{"enabled": true, "attempts": 3, "backoff": "2s"},
		}))
		res := rtPost(t, gw.URL, rtChat(rtModel, "deadline", false))
		require.NoError(t, res.err)
		assert.Equal(t, http.StatusGatewayTimeout, res.status, "%s", res)
		if res.status == http.StatusGatewayTimeout {
			assert.Equal(t, "upstream_timeout", rtErrorCode(t, res.body))
		}
		assert.Less(t, res.end.Sub(res.start), 1500*time.Millisecond)
		assert.Equal(t, int64(1), pa.total())
	})
	t.Run("without_deadline_a_stall_is_502", func(t *testing.T) {
		t.Parallel()
		// The control: the same single stall without firstByteDeadline is
		// the stall's 502, so the 504 above is the deadline's.
		pa := rtNewProvider(t, "pa", mockupstream.Options{}, "delay", "5s")
		cfg := rtConfig(rtProviders{pa}, nil)
		cfg["providers"].(map[string]interface{})["pa"].(map[string]interface{})["requestTimeout"] = "300ms"
		gw := rtStart(t, cfg)
		res := rtPost(t, gw.URL, rtChat(rtModel, "stall", false))
		require.NoError(t, res.err)
		assert.Equal(t, http.StatusBadGateway, res.status, "%s", res)
	})
}
