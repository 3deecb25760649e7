package integration_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmgateway/llmgateway/integration/gwproc"
	"github.com/llmgateway/llmgateway/integration/mockupstream"
	"github.com/llmgateway/llmgateway/integration/redisproc"
	"github.com/llmgateway/llmgateway/integration/tcpproxy"
)

// Fault matrix, the store: Redis killed (SIGKILL) under load, and Redis
// answering slowly, each with failOpen on and off. The outage machinery (traffic, phases, the
// counting-resumed check) is redis_faults_test.go's; these tests add a
// SIGKILL instead of a SIGTERM, streams in flight at the kill, Redis
// with and without persistence, and the reservations left behind.

// The group "team" of the outage environment has the budgets, so its
// scope holds the reservations.
const (
	outageHolds = "llmgw:group:team:holds"
	outageHeld  = "llmgw:group:team:held"
)

// isStream: r answered an event stream.
func isStream(r rlResult) bool {
	return strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream")
}

// streamComplete: r is a whole chat stream, every chunk of the reply and
// the closing [DONE].
func streamComplete(r rlResult) bool {
	if !bytes.HasSuffix(r.body, []byte("data: [DONE]\n\n")) {
		return false
	}
	for i := 0; i < rlChunks; i++ {
		if !bytes.Contains(r.body, []byte(`"content":"`+mockupstream.ChunkText(i)+`"`)) {
			return false
		}
	}
	return true
}

// streamsAcross counts the streams that started before start and ended
// after end.
func streamsAcross(samples []rlResult, start, end time.Time) int {
	n := 0
	for _, r := range samples {
		if r.err == nil && isStream(r) && r.start.Before(start) && r.end.After(end) {
			n++
		}
	}
	return n
}

// holdState is what a budgeted scope holds in Redis: its reservations
// (member "{id}:{tokens}:{cost}" → expiry, unix ms) and their sums.
type holdState struct {
	members     map[string]int64
	tokens      int64 // the sums hash's t
	cost        int64 // and c
	memberToks  int64 // the members' own token amounts, summed
	memberCost  int64
	latestScore int64
}

func readHolds(t *testing.T, rd *rlRedis) holdState {
	t.Helper()
	h := holdState{members: map[string]int64{}}
	v, err := rd.c.Do("ZRANGE", outageHolds, "0", "-1", "WITHSCORES")
	require.NoError(t, err)
	require.NoError(t, v.Err())
	for i := 0; i+1 < len(v.Array); i += 2 {
		m := v.Array[i].Str
		score, err := strconv.ParseInt(v.Array[i+1].Str, 10, 64)
		require.NoError(t, err, "score of %s", m)
		h.members[m] = score
		if score > h.latestScore {
			h.latestScore = score
		}
		parts := strings.Split(m, ":")
		require.GreaterOrEqual(t, len(parts), 3, "hold member %q", m)
		tok, err1 := strconv.ParseInt(parts[len(parts)-2], 10, 64)
		cost, err2 := strconv.ParseInt(parts[len(parts)-1], 10, 64)
		require.NoError(t, err1, "hold member %q", m)
		require.NoError(t, err2, "hold member %q", m)
		h.memberToks += tok
		h.memberCost += cost
	}
	h.tokens, _, err = rd.c.Int("HGET", outageHeld, "t")
	require.NoError(t, err)
	h.cost, _, err = rd.c.Int("HGET", outageHeld, "c")
	require.NoError(t, err)
	return h
}

// redisNowMs is Redis's own clock (the hold scripts expire on it).
func redisNowMs(t *testing.T, rd *rlRedis) int64 {
	t.Helper()
	v, err := rd.c.Do("TIME")
	require.NoError(t, err)
	require.Len(t, v.Array, 2)
	sec, err1 := strconv.ParseInt(v.Array[0].Str, 10, 64)
	usec, err2 := strconv.ParseInt(v.Array[1].Str, 10, 64)
	require.NoError(t, err1)
	require.NoError(t, err2)
	return sec*1000 + usec/1000
}

// logLines are the gateway's log lines holding s.
func logLines(logs, s string) []string {
	var out []string
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}

// failOpen on, Redis without persistence (counters it may lose): SIGKILL
// under load — chats and streams, some streams in flight at the kill —
// and no client notices; the outage is counted in process; the
// restarted Redis is empty (what the killed one counted is lost) and
// counting goes back to it; no reservation outlives its request.
func TestRedisKilledFailOpen(t *testing.T) {
	rlAwaitHeadroom(t, 24*time.Hour, time.Minute)
	o := startOutageEnvWith(t, outageSetup{kill: true, streamEvery: 100 * time.Millisecond})
	o.run()
	before, down, after, straddle := o.phases()
	across := streamsAcross(o.samples, o.downAt, o.downAt)
	t.Logf("samples: %d before, %d during the outage (%v), %d straddling, %d after; %d streams in flight at the kill",
		len(before), len(down), o.upAt.Sub(o.downFrom).Round(time.Millisecond), len(straddle), len(after), across)
	require.GreaterOrEqual(t, len(down), 10, "too little traffic during the outage to prove anything")
	require.GreaterOrEqual(t, len(after), 10, "too little traffic after the restart")
	require.GreaterOrEqual(t, across, 1, "no stream was in flight at the kill")

	failed, streams := 0, 0
	for _, r := range o.samples {
		ok := r.err == nil && r.status == http.StatusOK
		if ok && isStream(r) {
			streams++
			ok = streamComplete(r)
		}
		if !ok {
			failed++
			if failed <= 5 {
				t.Errorf("request failed or was cut with failOpen: %s", r)
			}
		}
	}
	assert.Equal(t, 0, failed, "failed or cut requests out of %d (%d streams)", len(o.samples), streams)
	for name, r := range o.probes {
		assert.Equal(t, http.StatusOK, r.status, "%s during the outage: %s", name, r)
	}
	lines := o.storeErrorLines()
	if assert.Len(t, lines, 1, "limits store error lines:\n%s", strings.Join(lines, "\n")) {
		assert.Contains(t, lines[0], "counting in process until it recovers")
	}
	assert.Empty(t, logLines(o.gw.Logs(), "could not be recorded"), "with failOpen an unrecordable settlement is counted in process")

	o.assertCountingResumed(after)
	// What is lost: the killed Redis kept nothing on disk, so the new one
	// counts only what came after it (5 more requests included); the
	// requests before the kill and those counted in process meanwhile are
	// in no Redis counter.
	rd := rlDialRedis(t, o.rs.Addr)
	counted, _ := rd.get(rlKey("user", "alice", "req", "day", time.Now()))
	assert.LessOrEqual(t, counted, int64(len(after)+len(straddle)+5), "the restarted Redis counts only the requests after the restart")
	// No reservation outlives its request: those in the killed Redis died
	// with it, those taken in process were settled there, the rest in the
	// new Redis.
	var h holdState
	rtEventually(t, 5*time.Second, 20*time.Millisecond, "every reservation released", func() bool {
		h = readHolds(t, rd)
		return len(h.members) == 0 && h.tokens == 0 && h.cost == 0
	})
}

// failOpen off, Redis persisting every write before acknowledging it
// (appendfsync always): SIGKILL under load. Clients get 503
// limits_store_unavailable while it is down and are served again after
// the restart; a stream admitted before the kill still ends whole. What
// survives: every request served was counted, across the kill. What
// over-counts: a reservation whose settlement the dead Redis could not
// take stays (its usage is logged as lost) until reservationTTL, then
// stops counting.
func TestRedisKilledFailClosed(t *testing.T) {
	const ttl = 8 * time.Second
	rlAwaitHeadroom(t, 24*time.Hour, time.Minute)
	failOpen := false
	o := startOutageEnvWith(t, outageSetup{failOpen: &failOpen, kill: true, streamEvery: 100 * time.Millisecond,
		redis:          redisproc.Options{Args: []string{"--appendonly", "yes", "--appendfsync", "always"}},
		reservationTTL: ttl.String()})
	o.run()
	before, down, after, straddle := o.phases()
	across := streamsAcross(o.samples, o.downAt, o.downAt)
	t.Logf("samples: %d before, %d during the outage (%v), %d straddling, %d after; %d streams in flight at the kill",
		len(before), len(down), o.upAt.Sub(o.downFrom).Round(time.Millisecond), len(straddle), len(after), across)
	require.GreaterOrEqual(t, len(down), 10, "too little traffic during the outage to prove anything")
	require.GreaterOrEqual(t, len(after), 10, "too little traffic after the restart")
	require.GreaterOrEqual(t, across, 1, "no stream was in flight at the kill")

	served := 1 // run's first request
	for _, r := range o.samples {
		if r.err == nil && r.status == http.StatusOK {
			served++
			if isStream(r) {
				assert.True(t, streamComplete(r), "a stream answered 200 was cut: %s", r)
			}
		}
	}
	for i, r := range before {
		assert.Equal(t, http.StatusOK, r.status, "before the kill, request %d: %s", i, r)
	}
	for i, r := range down {
		assert.True(t, isStoreUnavailable(r), "while Redis is dead, request %d: want 503 limits_store_unavailable with Retry-After: 1, got %s", i, r)
	}
	for i, r := range straddle {
		assert.True(t, r.status == http.StatusOK || isStoreUnavailable(r), "straddling request %d: want 200 or the 503 envelope, got %s", i, r)
	}
	for i, r := range after {
		assert.Equal(t, http.StatusOK, r.status, "after the restart, request %d: %s", i, r)
	}
	lines := o.storeErrorLines()
	if assert.Len(t, lines, 1, "limits store error lines:\n%s", strings.Join(lines, "\n")) {
		assert.Contains(t, lines[0], "requests get 503")
	}

	rd := rlDialRedis(t, o.rs.Addr)
	now := time.Now()
	counted, _ := rd.get(rlKey("user", "alice", "req", "day", now))
	sent := 1 + len(o.samples)
	t.Logf("%d requests sent, %d served; Redis counts %d after the SIGKILL and restart", sent, served, counted)
	assert.GreaterOrEqual(t, counted, int64(served), "every request served was counted in Redis, and the count survived the SIGKILL")
	assert.LessOrEqual(t, counted, int64(sent), "a request is counted at most once")

	// The reservations left behind: each settlement the dead Redis could
	// not take is logged, and its reservation (persisted when it was
	// admitted) is still held; so is that of a request whose admission
	// Redis applied without answering. A settlement sent as Redis was
	// killed may have been applied and persisted before it died without
	// replying, and then released its reservation although it is logged
	// as lost — whether it failed on the reset read or on the refused
	// dial of the client's one retry on a fresh connection. A stream
	// admitted before the kill that ended well after Redis was gone
	// settled against a dead Redis (settling is the last thing a request
	// does, and against a dead Redis it fails at once): its reservation
	// is certainly still held. The sums match the members.
	unrecorded := logLines(o.gw.Logs(), "usage of a finished request could not be recorded")
	for _, line := range unrecorded {
		t.Logf("lost: %s", line)
	}
	late := streamsAcross(o.samples, o.downAt, o.downFrom.Add(500*time.Millisecond))
	h := readHolds(t, rd)
	t.Logf("%d settlements lost, %d of them by streams that ended 500 ms after Redis died; %d reservations left (%d tokens, %d micro-USD held)", len(unrecorded), late, len(h.members), h.tokens, h.cost)
	require.GreaterOrEqual(t, len(unrecorded), 1, "the stream in flight at the kill could not settle")
	assert.GreaterOrEqual(t, len(unrecorded), late, "a stream that settled against the dead Redis logged its usage as lost")
	assert.GreaterOrEqual(t, len(h.members), late, "a stream that settled against the dead Redis left its reservation held")
	assert.LessOrEqual(t, len(h.members), len(unrecorded)+len(straddle), "only requests in flight at the kill leave a reservation")
	assert.Equal(t, h.memberToks, h.tokens, "held tokens = the reservations' own")
	assert.Equal(t, h.memberCost, h.cost, "held cost = the reservations' own")

	o.assertCountingResumed(after)

	// reservationTTL after its admission a reservation stops counting:
	// the next admission drops it.
	wait := time.Duration(h.latestScore-redisNowMs(t, rd)+50) * time.Millisecond
	require.LessOrEqual(t, wait, ttl, "a reservation expires at most reservationTTL after its admission")
	if wait > 0 {
		t.Logf("waiting %v for the left-over reservations to expire", wait.Round(time.Millisecond))
		time.Sleep(wait)
	}
	r := o.chat()
	require.Equal(t, http.StatusOK, r.status, "%s", r)
	rtEventually(t, 5*time.Second, 20*time.Millisecond, "the expired reservations dropped", func() bool {
		h = readHolds(t, rd)
		return len(h.members) == 0 && h.tokens == 0 && h.cost == 0
	})
}

// slowEnv is one gateway whose Redis answers through a delaying proxy.
type slowEnv struct {
	t      *testing.T
	rs     *redisproc.Server
	proxy  *tcpproxy.Proxy
	gw     *gwproc.Process
	rd     *rlRedis // straight to Redis, past the proxy
	client *http.Client
	body   []byte
	sent   int
}

const (
	slowKey   = "sk-slow-alice"
	slowAdmin = "sk-slow-ops"
)

func startSlowEnv(t *testing.T, failOpen bool) *slowEnv {
	t.Helper()
	rs := redisproc.Start(t)
	proxy, err := tcpproxy.Start(rs.Addr, nil)
	require.NoError(t, err)
	t.Cleanup(proxy.Close)
	bin := buildGatewayBinary(t)
	_, upURL := rlMock(t, rlModel)
	cfg := map[string]interface{}{
		"providers": map[string]interface{}{"mock": rlProvider(upURL, rlModel)},
		"groups": map[string]interface{}{
			"team": map[string]interface{}{"providers": []string{}, "limits": map[string]interface{}{
				"requestsPerMinute": 1000000, "tokensPerDay": 1000000000,
			}},
		},
		"users": map[string]interface{}{"inline": []map[string]interface{}{
			rlUser("alice", "team", slowKey, nil),
			rlUser("ops", "team", slowAdmin, map[string]interface{}{"admin": true}),
		}},
		"admin": map[string]interface{}{"enabled": true},
		// A pool larger than the workers: no request waits for a
		// connection behind a slow exchange.
		"redis": map[string]interface{}{"address": proxy.Addr, "failOpen": failOpen, "poolSize": 16},
	}
	gw := startGateway(t, bin, cfg)
	return &slowEnv{t: t, rs: rs, proxy: proxy, gw: gw, rd: rlDialRedis(t, rs.Addr), client: rlHTTPClient(),
		body: rlChatBody(rlModel, "take your time", false, false)}
}

// burst runs workers sequential loops of n chat requests each.
func (e *slowEnv) burst(workers, n int) []rlResult {
	out := make([]rlResult, workers*n)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < n; i++ {
				out[w*n+i] = rlDo(e.client, http.MethodPost, e.gw.URL+"/v1/chat/completions", slowKey, e.body)
			}
		}(w)
	}
	wg.Wait()
	e.sent += len(out)
	return out
}

// counters are alice's day counters in Redis.
type slowCounters struct{ req, tokin, tokout int64 }

func (e *slowEnv) counters() slowCounters {
	now := time.Now()
	var c slowCounters
	c.req, _ = e.rd.get(rlKey("user", "alice", "req", "day", now))
	c.tokin, _ = e.rd.get(rlKey("user", "alice", "tokin", "day", now))
	c.tokout, _ = e.rd.get(rlKey("user", "alice", "tokout", "day", now))
	return c
}

// Redis answering slowly, failOpen on and off. Slower replies than usual
// but inside the store's per-operation timeout (1 s) change nothing a
// client sees, and every request is counted exactly once, tokens
// included. Replies slower than the timeout: each store operation gives
// up at the timeout (and a slow failure skips Redis for a second), so
// requests are answered without waiting for Redis — served and counted
// in process with failOpen, 503 limits_store_unavailable without. Once
// Redis is fast again counting is exact again: no late reply is read as
// another request's, and no batch was applied twice.
func TestRedisSlowFailOpen(t *testing.T)   { runRedisSlow(t, true) }
func TestRedisSlowFailClosed(t *testing.T) { runRedisSlow(t, false) }

func runRedisSlow(t *testing.T, failOpen bool) {
	const (
		slowReply  = 150 * time.Millisecond // a reply well inside the 1 s timeout
		stallReply = 10 * time.Second       // a reply far past it
		workers    = 4
	)
	rlAwaitHeadroom(t, 24*time.Hour, time.Minute)
	e := startSlowEnv(t, failOpen)
	for i, r := range e.burst(1, 3) {
		require.Equal(t, http.StatusOK, r.status, "warm-up %d: %s", i, r)
	}
	c0 := rsAwaitCounterTriple(e, slowCounters{req: 3})

	// Slow, inside the timeout: served, each counted once.
	e.proxy.SetDelay(slowReply)
	slow := e.burst(workers, 5)
	var prompt, completion int64
	for i, r := range slow {
		require.Equal(t, http.StatusOK, r.status, "slow Redis, request %d: %s", i, r)
		u := rlReportedUsage(t, r.body, false)
		require.NotNil(t, u, "usage of request %d", i)
		prompt += u.PromptTokens
		completion += u.CompletionTokens
	}
	want := slowCounters{req: c0.req + int64(len(slow)), tokin: c0.tokin + prompt, tokout: c0.tokout + completion}
	c1 := rsAwaitCounterTriple(e, want)
	assert.Equal(t, want, c1, "slow Redis: every request and its tokens counted exactly once")
	t.Logf("slow Redis (%v a reply): %d requests, slowest %v", slowReply, len(slow), maxLatency(slow).Round(time.Millisecond))

	// Stalled, far past the timeout: answered without Redis.
	e.proxy.SetDelay(stallReply)
	stalled := e.burst(workers, 3)
	for i, r := range stalled {
		if failOpen {
			assert.Equal(t, http.StatusOK, r.status, "stalled Redis with failOpen, request %d: %s", i, r)
		} else {
			assert.True(t, isStoreUnavailable(r), "stalled Redis without failOpen, request %d: want 503 limits_store_unavailable with Retry-After: 1, got %s", i, r)
		}
		// A request that waited for any Redis reply would take stallReply.
		assert.Less(t, r.end.Sub(r.start), stallReply/2, "stalled Redis, request %d waited for Redis", i)
	}
	t.Logf("stalled Redis (%v a reply): %d requests, slowest %v", stallReply, len(stalled), maxLatency(stalled).Round(time.Millisecond))
	lines := logLines(e.gw.Logs(), "limits store error")
	if assert.Len(t, lines, 1, "limits store error lines") {
		if failOpen {
			assert.Contains(t, lines[0], "counting in process until it recovers")
		} else {
			assert.Contains(t, lines[0], "requests get 503")
		}
	}

	// Fast again: once a request is counted in Redis, counting is exact.
	// Until then (at most the cooldown after the last slow failure) a
	// request is still answered without Redis.
	e.proxy.SetDelay(0)
	recovering := 0
	rtEventually(t, 10*time.Second, 50*time.Millisecond, "counting back in Redis", func() bool {
		before := e.counters().req
		r := e.burst(1, 1)[0]
		recovering++
		return r.status == http.StatusOK && e.counters().req > before
	})
	c2 := e.counters()
	again := e.burst(2, 5)
	for i, r := range again {
		require.Equal(t, http.StatusOK, r.status, "fast Redis again, request %d: %s", i, r)
	}
	c3 := rsAwaitCounterTriple(e, slowCounters{req: c2.req + int64(len(again))})
	assert.Equal(t, c2.req+int64(len(again)), c3.req, "fast Redis again: %d more requests", len(again))
	// Over the whole run: the requests outside the stall and the recovery
	// all counted, one inside them at most once (a stalled one's commands
	// reached Redis, only the reply was late), none twice.
	assert.LessOrEqual(t, c3.req, int64(e.sent), "Redis counted more requests than were sent")
	assert.GreaterOrEqual(t, c3.req, int64(e.sent-len(stalled)-recovering), "a request outside the stall is missing from Redis")
	t.Logf("%d requests sent, %d during the stall, %d while recovering; Redis counts %d", e.sent, len(stalled), recovering, c3.req)

	// The admin API reads the same figure through the (fast again) proxy.
	status, body := slowAdminGet(t, e.gw.URL+"/admin/api/usage")
	require.Equal(t, http.StatusOK, status, "%s", body)
	var u adUsage
	require.NoError(t, json.Unmarshal(body, &u), "%s", body)
	found := false
	for _, row := range u.Users {
		if row.Name == "alice" {
			found = true
			assert.Equal(t, c3.req, row.RequestsPerDay, "admin usage: alice's requestsPerDay")
			assert.Equal(t, c3.tokin, row.TokensInPerDay, "admin usage: alice's tokensInPerDay")
		}
	}
	assert.True(t, found, "alice in the admin usage: %s", body)
}

// rsAwaitCounterTriple polls the counters until they reach want (each
// field of want that is non-zero) or 5 s pass; settling may end a moment
// after the client has the whole response.
func rsAwaitCounterTriple(e *slowEnv, want slowCounters) slowCounters {
	deadline := time.Now().Add(5 * time.Second)
	for {
		c := e.counters()
		if (want.req == 0 || c.req >= want.req) && (want.tokin == 0 || c.tokin >= want.tokin) &&
			(want.tokout == 0 || c.tokout >= want.tokout) || time.Now().After(deadline) {
			return c
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// slowAdminGet is an admin GET with the slow environment's admin key.
func slowAdminGet(t *testing.T, url string) (int, []byte) {
	t.Helper()
	res := rlDo(rlHTTPClient(), http.MethodGet, url, slowAdmin, nil)
	require.NoError(t, res.err)
	return res.status, res.body
}
