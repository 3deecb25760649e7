package integration_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/llmgateway/llmgateway/integration/mockupstream"
)

// Load balancing through the binary: routing.strategy orders the
// candidates of a bare id; the first of the order serves (failover walks
// the rest).

// rtTrio is pa, pb and pc serving rtModel (knobsC in pc's baseUrl), and
// a gateway over them with extra.
func rtTrio(t *testing.T, extra map[string]interface{}, knobsC ...string) (rtProviders, string) {
	t.Helper()
	ps := rtProviders{
		rtNewProvider(t, "pa", mockupstream.Options{RecordLimit: -1}),
		rtNewProvider(t, "pb", mockupstream.Options{RecordLimit: -1}),
		rtNewProvider(t, "pc", mockupstream.Options{RecordLimit: -1}, knobsC...),
	}
	gw := rtStart(t, rtConfig(ps, extra))
	return ps, gw.URL
}

func rtStrategy(name string, failover bool) map[string]interface{} {
	extra := map[string]interface{}{"routing": map[string]interface{}{"strategy": name}}
	if failover {
		extra["failover"] = rtFailoverOn
	}
	return extra
}

// TestRoutingRoundRobin: 300 requests over three providers, each within
// 100±10; with failover off as well (the first of the order serves).
func TestRoutingRoundRobin(t *testing.T) {
	t.Parallel()
	for _, failover := range []bool{true, false} {
		failover := failover
		name := "failover_off"
		if failover {
			name = "failover_on"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ps, base := rtTrio(t, rtStrategy("round-robin", failover))
			for i := 0; i < 300; i++ {
				rtOK(t, base, rtModel)
			}
			c := ps.counts()
			assert.Equal(t, int64(300), ps.sum(), "one upstream call a request")
			for _, p := range ps {
				assert.InDelta(t, 100, c[p.name], 10, "%s: %s", p.name, rtCountsString(c))
			}
		})
	}
}

// TestRoutingPriorityDefault: the default strategy is today's order: pa
// serves everything.
func TestRoutingPriorityDefault(t *testing.T) {
	t.Parallel()
	ps, base := rtTrio(t, map[string]interface{}{"failover": rtFailoverOn})
	for i := 0; i < 20; i++ {
		rtOK(t, base, rtModel)
	}
	assert.Equal(t, map[string]int64{"pa": 20, "pb": 0, "pc": 0}, ps.counts())
}

// TestRoutingLeastLatency: pc answers 200 ms late; after a warm-up most
// requests go to the fast ones (the EWMA of time to first byte, with
// ~10% exploration).
func TestRoutingLeastLatency(t *testing.T) {
	t.Parallel()
	ps, base := rtTrio(t, rtStrategy("least-latency", true), "delay", "200ms")
	for i := 0; i < 30; i++ {
		rtOK(t, base, rtModel)
	}
	before := ps.counts()
	for i := 0; i < 100; i++ {
		rtOK(t, base, rtModel)
	}
	after := ps.counts()
	fast := (after["pa"] - before["pa"]) + (after["pb"] - before["pb"])
	slow := after["pc"] - before["pc"]
	assert.Equal(t, int64(100), fast+slow)
	assert.GreaterOrEqual(t, fast, int64(70), "requests to the fast providers (after warm-up): %s, before %s", rtCountsString(after), rtCountsString(before))
	// Round-robin would give pc a third; ~10% exploration gives it a
	// few.
	assert.LessOrEqual(t, slow, int64(15), "requests to the slow provider")
	// Exploration keeps both fast ones in use too (not required to be
	// even).
	assert.NotZero(t, after["pa"]-before["pa"], "pa")
	assert.NotZero(t, after["pb"]-before["pb"], "pb")
}

// TestRoutingLeastCost: the cheapest priced candidate serves; the cost
// guard then refuses the dearer ones as stand-ins.
func TestRoutingLeastCost(t *testing.T) {
	t.Parallel()
	price := func(in, out float64) map[string]interface{} {
		return map[string]interface{}{"inputPerM": in, "outputPerM": out}
	}
	extra := rtStrategy("least-cost", true)
	extra["pricing"] = map[string]interface{}{
		"pa/" + rtModel: price(3, 6),
		"pb/" + rtModel: price(1, 2),
		"pc/" + rtModel: price(2, 4),
	}
	ps, base := rtTrio(t, extra)
	for i := 0; i < 20; i++ {
		rtOK(t, base, rtModel)
	}
	assert.Equal(t, map[string]int64{"pa": 0, "pb": 20, "pc": 0}, ps.counts())
	// pb failing: every other candidate is dearer than the first.
	ps[1].status.Store(503)
	res := rtPost(t, base, rtChat(rtModel, "cheapest down", false))
	assert.Equal(t, 503, res.status, "%s", res)
	assert.Equal(t, map[string]int64{"pa": 0, "pb": 21, "pc": 0}, ps.counts(), "no dearer stand-in")
}

// TestRoutingAliasTargets: modelAliases values as a list of targets
// (round-robin over them) and as {targets, strategy: weighted, weights}.
func TestRoutingAliasTargets(t *testing.T) {
	t.Parallel()
	t.Run("list_round_robin", func(t *testing.T) {
		t.Parallel()
		extra := rtStrategy("round-robin", true)
		extra["modelAliases"] = map[string]interface{}{"rt-list": []string{"pa/" + rtModel, "pb/" + rtModel}}
		ps, base := rtTrio(t, extra)
		for i := 0; i < 40; i++ {
			rtOK(t, base, "rt-list")
		}
		c := ps.counts()
		assert.InDelta(t, 20, c["pa"], 4, "%s", rtCountsString(c))
		assert.InDelta(t, 20, c["pb"], 4, "%s", rtCountsString(c))
		assert.Equal(t, int64(0), c["pc"], "pc is not a target")
	})
	t.Run("weighted_3_to_1", func(t *testing.T) {
		t.Parallel()
		extra := map[string]interface{}{
			"failover": rtFailoverOn,
			"modelAliases": map[string]interface{}{"rt-weighted": map[string]interface{}{
				"targets":  []string{"pa/" + rtModel, "pb/" + rtModel},
				"strategy": "weighted",
				"weights":  []int{3, 1},
			}},
		}
		ps, base := rtTrio(t, extra)
		for i := 0; i < 400; i++ {
			rtOK(t, base, "rt-weighted")
		}
		c := ps.counts()
		// Binomial(400, 3/4): sd 8.7; ±45 is over five of them.
		assert.InDelta(t, 300, c["pa"], 45, "%s", rtCountsString(c))
		assert.InDelta(t, 100, c["pb"], 45, "%s", rtCountsString(c))
		assert.Equal(t, int64(0), c["pc"])
	})
}
