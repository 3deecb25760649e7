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
	callsBefore := map[string]int64{}
	for _, name := range []string{"evalsha", "eval", "script|load", "mget"} {
		callsBefore[name] = rd.commandCalls(name)
	}

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
		sh := turnShape(tr)
		switch kind + "/" + user {
		case "check/multi":
			// Budgeted: one admission script counts, checks and reserves.
			assert.Equal(t, []string{"group:g1", "group:g2", "group:g3", "total:all", "user:multi"}, sh.scopes, "turn %d", tr.Seq)
			assert.Equal(t, 0, sh.incrs, "check turn %d: the counting is in the script", tr.Seq)
			assert.Equal(t, 1, sh.scripts, "check turn %d: one admission script", tr.Seq)
			assert.Equal(t, 5*4, sh.scriptKeys["req"], "check turn %d: 5 scopes × 4 windows of request counters", tr.Seq)
			assert.Equal(t, 3, sh.scriptKeys["holds"], "check turn %d: reservations in the 3 budgeted groups", tr.Seq)
			assert.Equal(t, 3, sh.scriptKeys["held"], "check turn %d", tr.Seq)
			// g1 tokensPerDay (tokin, tokout), g2 costPerDay (cost), g3
			// tokensPerMonth (tokin, tokout) and costPerMonth (cost).
			assert.Equal(t, 6, sh.scriptKeys["tokin"]+sh.scriptKeys["tokout"]+sh.scriptKeys["cost"], "check turn %d: the budgets' usage counters", tr.Seq)
			assert.Equal(t, 0, sh.mgets, "check turn %d", tr.Seq)
		case "check/solo":
			assert.Equal(t, []string{"group:solo", "total:all", "user:solo"}, sh.scopes, "turn %d", tr.Seq)
			assert.Equal(t, 3*4, sh.incrs, "check turn %d: 3 scopes × 4 windows", tr.Seq)
			assert.Equal(t, 0, sh.mgets, "check turn %d: no budgets, no MGET", tr.Seq)
			assert.Equal(t, 0, sh.scripts, "check turn %d: no budgets, no script", tr.Seq)
		case "account/multi":
			// Settle: the usage, then the release of the reservation.
			assert.Equal(t, 5*3*3, sh.incrs, "account turn %d: 5 scopes × tokin/tokout/cost × hour/day/month", tr.Seq)
			assert.Equal(t, 1, sh.scripts, "account turn %d: one release script after the usage", tr.Seq)
			assert.Equal(t, 3, sh.scriptKeys["holds"], "account turn %d: released in the 3 budgeted groups", tr.Seq)
		case "account/solo":
			assert.Equal(t, 3*3*3, sh.incrs, "account turn %d: 3 scopes × tokin/tokout/cost × hour/day/month", tr.Seq)
			assert.Equal(t, 0, sh.scripts, "account turn %d", tr.Seq)
		case "prov/":
			// attempt × min/day × provider and provider/model, per minute
			// flushed (no fail counters: nothing failed).
			assert.True(t, sh.incrs > 0 && sh.incrs%4 == 0, "success-rate turn %d: %d increments", tr.Seq, sh.incrs)
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
	// The proxy saw every command Redis ran at the top level: Redis counts
	// the commands a script calls too, so the script calls and the MGETs
	// (which no script makes) are compared exactly, and the total is at
	// least what the proxy saw.
	cmdsAfter := rd.commandsProcessed()
	assert.GreaterOrEqual(t, cmdsAfter-cmdsBefore, int64(sentCommands)+1, "commands Redis processed vs commands the proxy saw")
	topLevel := map[string]int64{}
	for _, tr := range turns {
		for _, cmd := range tr.Commands {
			name := strings.ToLower(cmd[0])
			if name == "script" && len(cmd) > 1 {
				name += "|" + strings.ToLower(cmd[1]) // Redis 7 counts subcommands apart
			}
			topLevel[name]++
		}
	}
	for _, name := range []string{"evalsha", "eval", "script|load", "mget"} {
		assert.Equal(t, topLevel[name], rd.commandCalls(name)-callsBefore[name], "%s calls Redis ran vs the proxy saw", name)
	}
	_ = gw
}

// classifyTurn names a turn by the key families of its commands:
// "check" (req counters, counted by INCRBY or inside the admission
// script), "account" (tokin/tokout/cost counters, with the release
// script of a reservation), "prov" (provider success rates), "rej",
// "cache"; user is the user scope's id when the turn carries one. A
// script's own reads of the usage counters and its reservation keys
// (holds, held) name no kind; SCRIPT LOAD carries no key.
func classifyTurn(tr redisproc.Turn) (kind, user string, err error) {
	kinds := map[string]bool{}
	for _, cmd := range tr.Commands {
		name := strings.ToUpper(cmd[0])
		if name == "SCRIPT" {
			continue
		}
		if len(cmd) < 2 {
			return "", "", fmt.Errorf("command %q has no key", cmd)
		}
		keys := cmd[1:2]
		script := name == "EVALSHA" || name == "EVAL"
		switch {
		case name == "MGET":
			keys = cmd[1:]
		case script:
			keys = scriptKeys(cmd)
			if len(keys) > 0 && onlyReservationKeys(keys) {
				kinds["account"] = true // the release after the usage
			}
		}
		for _, k := range keys {
			parts := strings.Split(k, ":")
			switch {
			case len(parts) >= 2 && (parts[1] == "prov" || parts[1] == "provmodel"):
				kinds["prov"] = true
			case len(parts) >= 2 && parts[1] == "cache":
				kinds["cache"] = true
			case len(parts) == 4 && parts[0] == "llmgw" && (parts[3] == "holds" || parts[3] == "held"):
				if parts[1] == "user" {
					user = parts[2]
				}
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
					if !script {
						kinds["account"] = true
					}
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

// scriptKeys is an EVALSHA/EVAL command's KEYS.
func scriptKeys(cmd []string) []string {
	if len(cmd) < 3 {
		return nil
	}
	n, err := strconv.Atoi(cmd[2])
	if err != nil || n < 0 || 3+n > len(cmd) {
		return nil
	}
	return cmd[3 : 3+n]
}

func onlyReservationKeys(keys []string) bool {
	for _, k := range keys {
		if !strings.HasSuffix(k, ":holds") && !strings.HasSuffix(k, ":held") {
			return false
		}
	}
	return true
}

// shape is what a turn carries: the sorted scopes ("kind:id") its
// INCRBYs or script keys touch, the number of INCRBYs (each must be
// followed by the EXPIRE of its key), MGETs and script calls, and the
// scripts' keys by metric.
type shape struct {
	scopes                []string
	incrs, mgets, scripts int
	scriptKeys            map[string]int
}

func turnShape(tr redisproc.Turn) shape {
	sh := shape{scriptKeys: map[string]int{}}
	seen := map[string]bool{}
	for i, cmd := range tr.Commands {
		switch strings.ToUpper(cmd[0]) {
		case "INCRBY":
			sh.incrs++
			if i+1 >= len(tr.Commands) || tr.Commands[i+1][0] != "EXPIRE" || tr.Commands[i+1][1] != cmd[1] {
				sh.incrs = -1000 // an INCRBY without its EXPIRE: fail loudly
			}
			parts := strings.Split(cmd[1], ":")
			if len(parts) == 6 {
				seen[parts[1]+":"+parts[2]] = true
			}
		case "MGET":
			sh.mgets++
		case "EVALSHA", "EVAL":
			sh.scripts++
			for _, k := range scriptKeys(cmd) {
				parts := strings.Split(k, ":")
				if len(parts) >= 4 {
					sh.scriptKeys[parts[3]]++
					seen[parts[1]+":"+parts[2]] = true
				}
			}
		}
	}
	for s := range seen {
		sh.scopes = append(sh.scopes, s)
	}
	sort.Strings(sh.scopes)
	return sh
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
