package integration_test

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmgateway/llmgateway/integration/redisproc"
)

// Round trips per metered request, counted by a TCP proxy between the gateway and Redis.

// How the round trips are counted: the gateway talks to Redis through
// redisproc.Proxy, a TCP proxy that records request/response turns per
// connection. A turn starts with the first byte the client sends after
// the server last answered, so one pipelined write followed by the read
// of all its replies is one turn — one network round trip — however many
// commands it carries; the proxy parses both directions and reports a
// turn that began with replies still outstanding (Pending), which would
// make the count ambiguous. Each turn is then classified by the key
// families it touches: req counters (+ the budget MGET) = check-and-count,
// tokin/tokout/cost counters = accounting, llmgw:prov/llmgw:provmodel =
// the provider success-rate counts, aggregated in process and written
// in the background about once a second (off the request path and
// accounted separately). A
// cross-check with Redis's own total_commands_processed proves the proxy
// saw every command.
func TestRedisRoundTripsPerRequest(t *testing.T) {
	rs := redisproc.Start(t)
	proxy, err := redisproc.StartProxy(rs.Addr)
	require.NoError(t, err)
	t.Cleanup(proxy.Close)
	bin := buildGatewayBinary(t)
	_, upURL := rlMock(t, rlModel)
	const (
		multiKey = "sk-rt-multi"
		soloKey  = "sk-rt-solo"
		perUser  = 6 // 4 plain + 2 streaming
	)
	big := 1000000000
	cfg := map[string]interface{}{
		"providers": map[string]interface{}{"mock": rlProvider(upURL, rlModel)},
		"groups": map[string]interface{}{
			"g1":   map[string]interface{}{"providers": []string{}, "limits": map[string]interface{}{"requestsPerMinute": big, "tokensPerDay": big}},
			"g2":   map[string]interface{}{"providers": []string{}, "limits": map[string]interface{}{"requestsPerDay": big, "costPerDayUSD": 1000000}},
			"g3":   map[string]interface{}{"providers": []string{}, "limits": map[string]interface{}{"tokensPerMonth": big, "costPerMonthUSD": 1000000}},
			"solo": map[string]interface{}{"providers": []string{}},
		},
		"users": map[string]interface{}{"inline": []map[string]interface{}{
			// 5 scopes, all enforced: user, g1, g2, g3 (+ total).
			rlUser("multi", "g1", multiKey, map[string]interface{}{"groups": []string{"g2", "g3"},
				"limits": map[string]interface{}{"requestsPerMinute": big}}),
			// 3 scopes, none enforced: user, solo (+ total).
			rlUser("solo", "solo", soloKey, nil),
		}},
		"redis":   map[string]interface{}{"address": proxy.Addr},
		"pricing": rlPricing(rlModel),
	}
	gw := startGateway(t, bin, cfg)
	client := rlHTTPClient()
	rd := rlDialRedis(t, rs.Addr)
	cmdsBefore := rd.commandsProcessed()

	// Sequential requests, so each user's turns must alternate
	// check, account, check, account...
	for i := 0; i < perUser; i++ {
		stream := i >= 4
		for _, key := range []string{multiKey, soloKey} {
			r := rlDo(client, http.MethodPost, gw.URL+"/v1/chat/completions", key, rlChatBody(rlModel, "round trip "+strconv.Itoa(i), stream, stream))
			require.Equal(t, http.StatusOK, r.status, "%s", r)
		}
	}
	// The success-rate counts are aggregated in process and flushed about
	// once a second: wait until the provider-level attempt counters
	// written add up to every attempt.
	attempts := 2 * perUser
	var turns []redisproc.Turn
	deadline := time.Now().Add(10 * time.Second)
	for {
		turns = proxy.Turns()
		if provAttempts(turns) >= attempts || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // anything late would show up now
	turns = proxy.Turns()
	assert.Equal(t, attempts, provAttempts(turns), "provider-level attempts written")

	counts := map[string]int{}
	sequence := map[string][]string{}
	sentCommands := 0
	for _, tr := range turns {
		sentCommands += len(tr.Commands)
		assert.Equal(t, 0, tr.Pending, "turn %d began with %d replies outstanding", tr.Seq, tr.Pending)
		assert.Equal(t, len(tr.Commands), tr.Replies, "turn %d: replies", tr.Seq)
		kind, user, err := classifyTurn(tr)
		if !assert.NoError(t, err, "turn %d", tr.Seq) {
			continue
		}
		counts[kind+"/"+user]++
		if user != "" {
			sequence[user] = append(sequence[user], kind)
		}
		scopes, incrs, mgets := turnShape(tr)
		switch kind + "/" + user {
		case "check/multi":
			assert.Equal(t, []string{"group:g1", "group:g2", "group:g3", "total:all", "user:multi"}, scopes, "turn %d", tr.Seq)
			assert.Equal(t, 5*4, incrs, "check turn %d: 5 scopes × 4 windows", tr.Seq)
			assert.Equal(t, 1, mgets, "check turn %d: one MGET of the budgets", tr.Seq)
		case "check/solo":
			assert.Equal(t, []string{"group:solo", "total:all", "user:solo"}, scopes, "turn %d", tr.Seq)
			assert.Equal(t, 3*4, incrs, "check turn %d: 3 scopes × 4 windows", tr.Seq)
			assert.Equal(t, 0, mgets, "check turn %d: no budgets, no MGET", tr.Seq)
		case "account/multi":
			assert.Equal(t, 5*3*3, incrs, "account turn %d: 5 scopes × tokin/tokout/cost × hour/day/month", tr.Seq)
		case "account/solo":
			assert.Equal(t, 3*3*3, incrs, "account turn %d: 3 scopes × tokin/tokout/cost × hour/day/month", tr.Seq)
		case "prov/":
			// attempt × min/day × provider and provider/model, per minute
			// flushed (no fail counters: nothing failed).
			assert.True(t, incrs > 0 && incrs%4 == 0, "success-rate turn %d: %d increments", tr.Seq, incrs)
		}
	}
	t.Logf("Redis turns seen by the proxy: %v (%d commands in %d turns)", counts, sentCommands, len(turns))
	assert.Equal(t, map[string]int{
		"check/multi": perUser, "account/multi": perUser,
		"check/solo": perUser, "account/solo": perUser,
	}, withoutProv(counts), "turns by kind/user")
	assert.GreaterOrEqual(t, counts["prov/"], 1, "success-rate turns")
	assert.LessOrEqual(t, counts["prov/"], attempts, "success-rate turns (aggregated: at most one per attempt)")
	for _, user := range []string{"multi", "solo"} {
		var want []string
		for i := 0; i < perUser; i++ {
			want = append(want, "check", "account")
		}
		assert.Equal(t, want, sequence[user], "%s: one check-and-count then one accounting round trip per request", user)
	}
	// Per metered request on the request path: exactly 2 round trips.
	for _, user := range []string{"multi", "solo"} {
		perRequest := float64(counts["check/"+user]+counts["account/"+user]) / perUser
		assert.Equal(t, 2.0, perRequest, "%s: round trips per request", user)
	}
	// The proxy saw every command Redis processed (INFO counts itself on
	// the next call: +1 for the first INFO).
	cmdsAfter := rd.commandsProcessed()
	assert.Equal(t, int64(sentCommands)+1, cmdsAfter-cmdsBefore, "commands Redis processed vs commands the proxy saw")
	_ = gw
}

// classifyTurn names a turn by the key families of its commands:
// "check" (req counters, + MGET), "account" (tokin/tokout/cost counters),
// "prov" (provider success rates), "rej", "cache"; user is the user
// scope's id when the turn carries one.
func classifyTurn(tr redisproc.Turn) (kind, user string, err error) {
	kinds := map[string]bool{}
	for _, cmd := range tr.Commands {
		if len(cmd) < 2 {
			return "", "", fmt.Errorf("command %q has no key", cmd)
		}
		name := strings.ToUpper(cmd[0])
		keys := cmd[1:2]
		if name == "MGET" {
			keys = cmd[1:]
		}
		for _, k := range keys {
			parts := strings.Split(k, ":")
			switch {
			case len(parts) >= 2 && (parts[1] == "prov" || parts[1] == "provmodel"):
				kinds["prov"] = true
			case len(parts) >= 2 && parts[1] == "cache":
				kinds["cache"] = true
			case len(parts) == 6 && parts[0] == "llmgw":
				if parts[1] == "user" {
					user = parts[2]
				}
				switch {
				case name == "MGET":
					// The budgets read by the check.
				case parts[3] == "req":
					kinds["check"] = true
				case parts[3] == "rej":
					kinds["rej"] = true
				case parts[3] == "tokin" || parts[3] == "tokout" || parts[3] == "cost":
					kinds["account"] = true
				default:
					return "", "", fmt.Errorf("unknown metric in %q", k)
				}
			default:
				return "", "", fmt.Errorf("unknown key %q", k)
			}
		}
	}
	if len(kinds) != 1 {
		return "", "", fmt.Errorf("turn mixes %v: %q", kinds, tr.Commands)
	}
	for k := range kinds {
		kind = k
	}
	return kind, user, nil
}

// turnShape is the sorted scopes ("kind:id") a turn's INCRBYs touch, the
// number of INCRBYs (each must be followed by the EXPIRE of its key) and
// the number of MGETs.
func turnShape(tr redisproc.Turn) (scopes []string, incrs, mgets int) {
	seen := map[string]bool{}
	for i, cmd := range tr.Commands {
		switch strings.ToUpper(cmd[0]) {
		case "INCRBY":
			incrs++
			if i+1 >= len(tr.Commands) || tr.Commands[i+1][0] != "EXPIRE" || tr.Commands[i+1][1] != cmd[1] {
				incrs = -1000 // an INCRBY without its EXPIRE: fail loudly
			}
			parts := strings.Split(cmd[1], ":")
			if len(parts) == 6 {
				seen[parts[1]+":"+parts[2]] = true
			}
		case "MGET":
			mgets++
		}
	}
	for s := range seen {
		scopes = append(scopes, s)
	}
	sort.Strings(scopes)
	return scopes, incrs, mgets
}

// provAttempts sums the deltas of the provider-level attempt counters
// (llmgw:prov:{provider}:attempt:min:...) the turns incremented.
func provAttempts(turns []redisproc.Turn) int {
	n := 0
	for _, tr := range turns {
		for _, cmd := range tr.Commands {
			if len(cmd) == 3 && strings.ToUpper(cmd[0]) == "INCRBY" && strings.HasPrefix(cmd[1], "llmgw:prov:") && strings.Contains(cmd[1], ":attempt:min:") {
				d, _ := strconv.Atoi(cmd[2])
				n += d
			}
		}
	}
	return n
}

// withoutProv is counts without the success-rate turns.
func withoutProv(counts map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range counts {
		if k != "prov/" {
			out[k] = v
		}
	}
	return out
}
