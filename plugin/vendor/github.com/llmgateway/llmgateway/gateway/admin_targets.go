package gateway

import (
	"context"
	"time"
)

// GET /admin/api/targets: every configured MCP server and agent for the
// dashboard's "MCP & Agents" tab, each {name, url, access, counters,
// health}, sorted by name:
//
//   - url: the configured URL without userinfo, query or fragment;
//   - access: the groups that reach the target by the very match the
//     target routes enforce (targetAccess): null when every configured
//     group does, [] when none;
//   - counters: requestsPerMinute/Day/Month, the target's own request
//     counters in the current minute, UTC day and month (every call to
//     it, proxied or federated; requests only);
//   - health: the target's recorded health (targetHealthView: state and
//     consecutiveFailures always, the rest once it has been observed).
//
// Polled with overview and usage, it reads the counters like them: one
// batched read of three keys per target, not capped by
// adminMaxKeysPerRequest. When that read fails the route still answers
// (health and access need no store): every counters member is absent
// and countersUnavailable is true — never a fabricated zero. With
// targetHealth.enabled it also starts a probe sweep when one is due,
// without waiting for it: the answer is the state already recorded.

// adminTargetsAnswer is GET /admin/api/targets.
type adminTargetsAnswer struct {
	McpServers []adminTarget `json:"mcpServers"`
	Agents     []adminTarget `json:"agents"`
	// CountersUnavailable: the counter read failed; every entry's
	// counters are then absent.
	CountersUnavailable bool `json:"countersUnavailable,omitempty"`
}

// adminTarget is one MCP server or agent.
type adminTarget struct {
	Name     string               `json:"name"`
	URL      string               `json:"url"`
	Access   []string             `json:"access"`
	Counters *adminTargetCounters `json:"counters,omitempty"`
	Health   targetHealthView     `json:"health"`
}

// adminTargetCounters are a target's request counters.
type adminTargetCounters struct {
	RequestsPerMinute int64 `json:"requestsPerMinute"`
	RequestsPerDay    int64 `json:"requestsPerDay"`
	RequestsPerMonth  int64 `json:"requestsPerMonth"`
}

// targetCounterKeys is how many keys one target's counters read.
const targetCounterKeys = 3

// targetCountersKeys appends t's counter keys at now: minute, day, month.
func targetCountersKeys(keys []string, t *targetRuntime, now time.Time) []string {
	p := targetPrefix(t)
	return append(keys, statsKey(p, "req", minuteWindow, minuteWindow.bucket(now)),
		statsKey(p, "req", dayWindow, dayWindow.bucket(now)), statsKey(p, "req", monthWindow, monthWindow.bucket(now)))
}

func (g *Gateway) adminTargets(ctx context.Context) (interface{}, *apiError) {
	g.maybeSweepTargets()
	now := g.limiter.now()
	out := adminTargetsAnswer{McpServers: []adminTarget{}, Agents: []adminTarget{}}
	var all []*targetRuntime
	var keys []string
	for _, kind := range []string{targetMCP, targetAgent} {
		names := g.targetNames(kind)
		for i := 0; i < len(names); i++ {
			t := g.target(kind, names[i])
			entry := adminTarget{Name: t.name, URL: t.display, Access: g.targetAccess(t), Health: t.health.view()}
			if kind == targetMCP {
				out.McpServers = append(out.McpServers, entry)
			} else {
				out.Agents = append(out.Agents, entry)
			}
			all = append(all, t)
			keys = targetCountersKeys(keys, t, now)
		}
	}
	if len(keys) == 0 {
		return out, nil
	}
	values, e := g.readCounters(ctx, keys)
	if e != nil {
		out.CountersUnavailable = true
		return out, nil
	}
	for i := 0; i < len(all); i++ {
		v := values[i*targetCounterKeys : (i+1)*targetCounterKeys]
		c := &adminTargetCounters{RequestsPerMinute: v[0], RequestsPerDay: v[1], RequestsPerMonth: v[2]}
		if i < len(out.McpServers) {
			out.McpServers[i].Counters = c
		} else {
			out.Agents[i-len(out.McpServers)].Counters = c
		}
	}
	return out, nil
}
