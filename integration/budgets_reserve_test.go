package integration_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmgateway/llmgateway/integration/gwproc"
	"github.com/llmgateway/llmgateway/integration/mockupstream"
	"github.com/llmgateway/llmgateway/integration/redisproc"
)

// Reserve and settle: a request under a token or cost budget reserves its
// worst case (prompt estimate ceil(request bytes / 4) plus its output
// cap) in every scope before the upstream call, atomically, and is
// refused when used + held + its reservation would pass the budget; the
// hold is settled to the actual usage when the response ends. A burst of
// concurrent requests therefore cannot overshoot a budget, on one replica
// or many. Holds carry a TTL (reservationTTL) that a live request renews,
// so only a dead replica's holds expire.
//
// The mock answers every admitted request with exactly rsMaxTokens
// completion tokens (the X-Mock-Chunks knob) after rsUpstreamDelay (the
// X-Mock-Delay knob), so the requests of a burst overlap and the actual
// usage is close to the reservation: an overshoot shows.

const (
	// rsModel is not a reasoning model: max_tokens reaches the upstream
	// as the client sent it.
	rsModel = "gpt-4o-mini"
	// rsProbeModel is served at once, with one completion token.
	rsProbeModel   = "probe-model"
	rsContent      = "count my tokens" // 3 prompt tokens for the mock
	rsPromptTokens = 3
	rsMaxTokens    = 150
	rsFired        = 100
	rsTokensPerDay = 2000
	// rsMinServed is the least a correct gateway serves of a burst:
	// rsTokensPerDay / (one reservation) is 11 for the bodies below.
	rsMinServed     = 9
	rsUpstreamDelay = time.Second
	rsKey           = "sk-reserve-alice"
	rsTokensRefusal = `user "alice" is over its tokensPerDay limit`
	rsCostRefusal   = `user "alice" is over its costPerDayUSD limit`
)

// rsChatBody is a chat request with one user message and max_tokens.
func rsChatBody(model, content string, maxTokens int) []byte {
	b, _ := json.Marshal(map[string]interface{}{
		"model":      model,
		"messages":   []map[string]string{{"role": "user", "content": content}},
		"max_tokens": maxTokens,
	})
	return b
}

// rsPromptEstimate is the gateway's prompt estimate: ceil(bytes / 4).
func rsPromptEstimate(body []byte) int64 { return int64((len(body) + 3) / 4) }

// rsReservation is the tokens a request with body and output cap
// maxTokens reserves.
func rsReservation(body []byte, maxTokens int) int64 {
	return rsPromptEstimate(body) + int64(maxTokens)
}

// rsBodyReserving is a body of model with rsPromptTokens prompt tokens
// (for the mock) whose reservation is exactly want tokens: the output cap
// and trailing spaces of the content (which the mock does not count)
// tune it.
func rsBodyReserving(t *testing.T, model string, want int64) ([]byte, int) {
	t.Helper()
	for maxTokens := 1; int64(maxTokens) < want; maxTokens++ {
		for pad := 0; pad < 4; pad++ {
			body := rsChatBody(model, rsContent+strings.Repeat(" ", pad), maxTokens)
			if rsReservation(body, maxTokens) == want {
				return body, maxTokens
			}
		}
	}
	t.Fatalf("no %s body reserves exactly %d tokens", model, want)
	return nil, 0
}

// rsUpstream is the mock and the provider base URLs in front of it: slow
// answers every request after rsUpstreamDelay with rsMaxTokens completion
// tokens; quick answers at once with one.
type rsUpstream struct {
	mock        *mockupstream.Server
	slow, quick string
}

func rsStartUpstream(t *testing.T) rsUpstream {
	t.Helper()
	mock, url := rlMock(t)
	return rsUpstream{
		mock:  mock,
		slow:  fmt.Sprintf("%s/x-mock-chunks/%d/x-mock-delay/%s", url, rsMaxTokens, rsUpstreamDelay),
		quick: url + "/x-mock-chunks/1",
	}
}

// rsBurstConfig is a gateway config with alice under limits, rsModel on
// the slow provider and rsProbeModel on the quick one.
func rsBurstConfig(up rsUpstream, limits map[string]interface{}, redisAddr string) map[string]interface{} {
	cfg := map[string]interface{}{
		"providers": map[string]interface{}{
			"slow":  rlProvider(up.slow, rsModel),
			"quick": rlProvider(up.quick, rsProbeModel),
		},
		"groups":  map[string]interface{}{"team": map[string]interface{}{"providers": []string{}}},
		"users":   map[string]interface{}{"inline": []map[string]interface{}{rlUser("alice", "team", rsKey, map[string]interface{}{"limits": limits})}},
		"pricing": rlPricing(rsModel, rsProbeModel),
	}
	if redisAddr != "" {
		cfg["redis"] = map[string]interface{}{"address": redisAddr}
	}
	return cfg
}

// rsBurst sends n copies of body with key, spread round-robin over
// replicas, all released together through a gate, and returns the
// results in order.
func rsBurst(t *testing.T, replicas []string, key string, body []byte, n int) []rlResult {
	t.Helper()
	client := rlHTTPClient()
	t.Cleanup(client.CloseIdleConnections)
	results := make([]rlResult, n)
	gate := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-gate
			results[i] = rlDo(client, http.MethodPost, replicas[i%len(replicas)]+"/v1/chat/completions", key, body)
		}(i)
	}
	close(gate)
	wg.Wait() // every request has the client's 30 s timeout
	return results
}

// rsTally is what a burst's responses say.
type rsTally struct {
	served, refused          int
	prompt, completion, cost int64 // summed over the served responses' usage
}

// rsCount checks every result: a 200 that reports the mock's exact usage,
// or a 429 rate_limit_exceeded whose message contains refusal.
func rsCount(t *testing.T, results []rlResult, refusal string) rsTally {
	t.Helper()
	var tally rsTally
	for i, r := range results {
		require.NoError(t, r.err, "request %d", i)
		switch r.status {
		case http.StatusOK:
			tally.served++
			u := rlReportedUsage(t, r.body, false)
			if assert.NotNil(t, u, "request %d: no usage in %s", i, r.body) {
				assert.Equal(t, rlUsage{PromptTokens: rsPromptTokens, CompletionTokens: rsMaxTokens}, *u, "request %d", i)
				tally.prompt += u.PromptTokens
				tally.completion += u.CompletionTokens
				tally.cost += rlCost(u.PromptTokens, u.CompletionTokens)
			}
		case http.StatusTooManyRequests:
			tally.refused++
			e := rlParseEnvelope(t, r.body)
			assert.Equal(t, "rate_limit_exceeded", e.Error.Code, "request %d", i)
			assert.Contains(t, e.Error.Message, refusal, "request %d", i)
		default:
			t.Errorf("request %d: unexpected %s", i, r)
		}
	}
	return tally
}

// rsAwaitCounter polls read until it returns want or 5 s pass, and
// returns the last value read. Settling may end a moment after the
// client has the whole response.
func rsAwaitCounter(read func() int64, want int64) int64 {
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := read()
		if got == want || time.Now().After(deadline) {
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// rsTokensAccounted is alice's tokin + tokout of the day of at in Redis.
func rsTokensAccounted(rd *rlRedis, at time.Time) func() int64 {
	return func() int64 {
		in, _ := rd.get(rlKey("user", "alice", "tokin", "day", at))
		out, _ := rd.get(rlKey("user", "alice", "tokout", "day", at))
		return in + out
	}
}

// A token budget of 2000 shared by two replicas on one Redis: 100
// concurrent requests that each reserve ~174 tokens get about 11
// admitted, the accounted total stays within the budget, and what was
// accounted is exactly what the served responses reported.
func TestReserveTokensAcrossReplicas(t *testing.T) {
	rs := redisproc.Start(t)
	bin := buildGatewayBinary(t)
	up := rsStartUpstream(t)
	cfg := rsBurstConfig(up, map[string]interface{}{"tokensPerDay": rsTokensPerDay}, rs.Addr)
	replicas := []string{startGateway(t, bin, cfg).URL, startGateway(t, bin, cfg).URL}
	rd := rlDialRedis(t, rs.Addr)
	body := rsChatBody(rsModel, rsContent, rsMaxTokens)
	reservation := rsReservation(body, rsMaxTokens)

	rlAwaitHeadroom(t, 24*time.Hour, time.Minute)
	at := time.Now()
	before := up.mock.Total()
	results := rsBurst(t, replicas, rsKey, body, rsFired)
	tally := rsCount(t, results, rsTokensRefusal)
	reported := tally.prompt + tally.completion
	accounted := rsAwaitCounter(rsTokensAccounted(rd, at), reported)

	t.Logf("%d requests over 2 replicas, %d tokens reserved each, budget %d: admitted %d, refused %d, accounted %d tokens (responses reported %d)",
		rsFired, reservation, rsTokensPerDay, tally.served, tally.refused, accounted, reported)
	assert.Equal(t, rsFired, tally.served+tally.refused, "every request is served or refused")
	assert.LessOrEqual(t, accounted, int64(rsTokensPerDay), "accounted tokens overshoot the budget")
	assert.GreaterOrEqual(t, tally.served, rsMinServed, "served")
	assert.Equal(t, reported, accounted, "accounted tokens == the usage the served responses reported")
	assert.Equal(t, int64(tally.served), up.mock.Total()-before, "only admitted requests reach the upstream")
}

// The same burst against a cost budget that fits ten and a half
// worst-case requests (prompt estimate at the input price plus
// max_tokens at the output price).
func TestReserveCostAcrossReplicas(t *testing.T) {
	rs := redisproc.Start(t)
	bin := buildGatewayBinary(t)
	up := rsStartUpstream(t)
	body := rsChatBody(rsModel, rsContent, rsMaxTokens)
	worstCase := rlCost(rsPromptEstimate(body), rsMaxTokens) // micro-USD
	budget := 10*worstCase + worstCase/2
	cfg := rsBurstConfig(up, map[string]interface{}{"costPerDayUSD": float64(budget) / 1e6}, rs.Addr)
	replicas := []string{startGateway(t, bin, cfg).URL, startGateway(t, bin, cfg).URL}
	rd := rlDialRedis(t, rs.Addr)

	rlAwaitHeadroom(t, 24*time.Hour, time.Minute)
	at := time.Now()
	before := up.mock.Total()
	results := rsBurst(t, replicas, rsKey, body, rsFired)
	tally := rsCount(t, results, rsCostRefusal)
	accounted := rsAwaitCounter(func() int64 {
		v, _ := rd.get(rlKey("user", "alice", "cost", "day", at))
		return v
	}, tally.cost)

	t.Logf("%d requests over 2 replicas, %d micro-USD reserved each, budget %d micro-USD: admitted %d, refused %d, accounted %d micro-USD (responses reported %d)",
		rsFired, worstCase, budget, tally.served, tally.refused, accounted, tally.cost)
	assert.Equal(t, rsFired, tally.served+tally.refused, "every request is served or refused")
	assert.LessOrEqual(t, accounted, budget, "accounted cost overshoots the budget")
	assert.GreaterOrEqual(t, tally.served, rsMinServed, "served")
	assert.Equal(t, tally.cost, accounted, "accounted cost == the cost of the usage the served responses reported")
	assert.Equal(t, int64(tally.served), up.mock.Total()-before, "only admitted requests reach the upstream")
}

// One binary with the in-process store: the same burst stays within the
// budget. The binary exposes no per-user usage, so the accounted total is
// the usage the served responses reported, and two probes read the
// gateway's own figure back: a request reserving one token less than the
// headroom left is admitted, one reserving one more is refused.
func TestReserveTokensInProcess(t *testing.T) {
	bin := buildGatewayBinary(t)
	up := rsStartUpstream(t)
	gw := startGateway(t, bin, rsBurstConfig(up, map[string]interface{}{"tokensPerDay": rsTokensPerDay}, ""))
	body := rsChatBody(rsModel, rsContent, rsMaxTokens)

	rlAwaitHeadroom(t, 24*time.Hour, time.Minute)
	before := up.mock.Total()
	results := rsBurst(t, []string{gw.URL}, rsKey, body, rsFired)
	tally := rsCount(t, results, rsTokensRefusal)
	accounted := tally.prompt + tally.completion

	t.Logf("%d requests on one replica, %d tokens reserved each, budget %d: admitted %d, refused %d, accounted %d tokens",
		rsFired, rsReservation(body, rsMaxTokens), rsTokensPerDay, tally.served, tally.refused, accounted)
	assert.Equal(t, rsFired, tally.served+tally.refused, "every request is served or refused")
	assert.LessOrEqual(t, accounted, int64(rsTokensPerDay), "accounted tokens overshoot the budget")
	assert.GreaterOrEqual(t, tally.served, rsMinServed, "served")
	assert.Equal(t, int64(tally.served), up.mock.Total()-before, "only admitted requests reach the upstream")
	if t.Failed() {
		return
	}

	// The gateway's used figure is the responses' sum: with headroom h
	// left, a request reserving h-1 is admitted (once the burst has
	// settled), and after it, one reserving the new headroom + 1 is not.
	client := rlHTTPClient()
	t.Cleanup(client.CloseIdleConnections)
	headroom := int64(rsTokensPerDay) - accounted
	fits, _ := rsBodyReserving(t, rsProbeModel, headroom-1)
	var admitted rlResult
	deadline := time.Now().Add(5 * time.Second)
	for {
		admitted = rlDo(client, http.MethodPost, gw.URL+"/v1/chat/completions", rsKey, fits)
		require.NoError(t, admitted.err)
		if admitted.status != http.StatusTooManyRequests || time.Now().After(deadline) {
			break
		}
		assert.Contains(t, rlParseEnvelope(t, admitted.body).Error.Message, rsTokensRefusal)
		time.Sleep(50 * time.Millisecond)
	}
	require.Equal(t, http.StatusOK, admitted.status, "a request reserving %d of the %d tokens left: %s", headroom-1, headroom, admitted)
	u := rlReportedUsage(t, admitted.body, false)
	require.NotNil(t, u, "no usage in %s", admitted.body)
	headroom -= u.PromptTokens + u.CompletionTokens

	tooBig, _ := rsBodyReserving(t, rsProbeModel, headroom+1)
	refused := rlDo(client, http.MethodPost, gw.URL+"/v1/chat/completions", rsKey, tooBig)
	require.Equal(t, http.StatusTooManyRequests, refused.status, "a request reserving %d with %d tokens left: %s", headroom+1, headroom, refused)
	e := rlParseEnvelope(t, refused.body)
	assert.Equal(t, "rate_limit_exceeded", e.Error.Code)
	assert.Contains(t, e.Error.Message, rsTokensRefusal)
}

// A replica killed with a request in flight leaves its hold behind; the
// hold blocks the budget until its reservationTTL passes, then expires.
// A live request that outlasts the TTL keeps renewing its hold.
func TestReserveKilledReplicaExpires(t *testing.T) {
	const (
		ttl       = 2 * time.Second
		slowDelay = 3500 * time.Millisecond // longer than ttl
		aliceKey  = "sk-killed-alice"
		bobKey    = "sk-killed-bob"
		// The three models' names have the same length, so their bodies
		// reserve the same.
		holdModel, fastModel, slowModel = "hold-model", "fast-model", "slow-model"
	)
	rs := redisproc.Start(t)
	bin := buildGatewayBinary(t)
	mock, url := rlMock(t)
	body := func(model string) []byte { return rsChatBody(model, rsContent, rsMaxTokens) }
	reservation := rsReservation(body(holdModel), rsMaxTokens)
	// One reservation fits, two do not.
	budget := reservation + reservation/2
	limits := map[string]interface{}{"limits": map[string]interface{}{"tokensPerDay": budget}}
	cfg := map[string]interface{}{
		"providers": map[string]interface{}{
			"hold": rlProvider(url+"/x-mock-delay/1m", holdModel),
			"fast": rlProvider(url, fastModel),
			"slow": rlProvider(url+"/x-mock-delay/"+slowDelay.String(), slowModel),
		},
		"groups": map[string]interface{}{"team": map[string]interface{}{"providers": []string{}}},
		"users": map[string]interface{}{"inline": []map[string]interface{}{
			rlUser("alice", "team", aliceKey, limits),
			rlUser("bob", "team", bobKey, limits),
		}},
		"redis":          map[string]interface{}{"address": rs.Addr},
		"reservationTTL": ttl.String(),
	}
	replicaA := startGateway(t, bin, cfg)
	replicaB := startGateway(t, bin, cfg)
	client := rlHTTPClient()
	t.Cleanup(client.CloseIdleConnections)
	rlAwaitHeadroom(t, 24*time.Hour, time.Minute)
	t.Logf("each request reserves %d tokens, budget %d, reservationTTL %v", reservation, budget, ttl)

	chat := func(gw *gwproc.Process, key, model string) rlResult {
		return rlDo(client, http.MethodPost, gw.URL+"/v1/chat/completions", key, body(model))
	}
	inBackground := func(gw *gwproc.Process, key, model string) <-chan rlResult {
		done := make(chan rlResult, 1)
		go func() { done <- chat(gw, key, model) }()
		return done
	}
	awaitMock := func(want int64) time.Time {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for mock.Total() < want {
			require.False(t, time.Now().After(deadline), "the mock saw %d requests within 10s, want %d", mock.Total(), want)
			time.Sleep(5 * time.Millisecond)
		}
		return time.Now()
	}
	assertRefused := func(r rlResult, who string) {
		t.Helper()
		if assert.Equal(t, http.StatusTooManyRequests, r.status, "%s: %s", who, r) {
			e := rlParseEnvelope(t, r.body)
			assert.Equal(t, "rate_limit_exceeded", e.Error.Code, who)
			assert.Contains(t, e.Error.Message, who+` is over its tokensPerDay limit`)
		}
	}
	assertServed := func(r rlResult, what string) {
		t.Helper()
		require.NoError(t, r.err, what)
		if assert.Equal(t, http.StatusOK, r.status, "%s: %s", what, r) {
			assert.Equal(t, &rlUsage{PromptTokens: rsPromptTokens, CompletionTokens: rlChunks}, rlReportedUsage(t, r.body, false), what)
		}
	}

	// Replica A holds alice's reservation for a request the mock keeps
	// open; while A lives, replica B refuses alice.
	held := inBackground(replicaA, aliceKey, holdModel)
	awaitMock(1)
	assertRefused(chat(replicaB, aliceKey, fastModel), `user "alice"`)

	// A dies hard: nothing settles or releases its hold.
	require.NoError(t, replicaA.Kill())
	killedAt := time.Now()
	select {
	case r := <-held:
		assert.Error(t, r.err, "the killed replica's client got an answer: %s", r)
	case <-time.After(10 * time.Second):
		t.Fatal("the killed replica's client still waits 10s after the kill")
	}

	// B admits alice once the orphaned hold's TTL has passed.
	var r rlResult
	refusedAfterKill := 0
	deadline := killedAt.Add(10 * time.Second)
	for {
		r = chat(replicaB, aliceKey, fastModel)
		require.NoError(t, r.err)
		if r.status != http.StatusTooManyRequests || time.Now().After(deadline) {
			break
		}
		assertRefused(r, `user "alice"`)
		refusedAfterKill++
		time.Sleep(50 * time.Millisecond)
	}
	assertServed(r, "alice on B after the hold expired")
	t.Logf("the dead replica's hold blocked alice for %v after the kill (%d refusals on B)",
		time.Since(killedAt).Round(10*time.Millisecond), refusedAfterKill)
	assert.Equal(t, int64(2), mock.Total(), "the upstream saw the held request and the one admitted after expiry")

	// Control: bob's slow request on B lives past the TTL; its renewed
	// hold still refuses bob's second request once the TTL is over.
	slow := inBackground(replicaB, bobKey, slowModel)
	slowReceived := awaitMock(3)
	time.Sleep(time.Until(slowReceived.Add(ttl + 500*time.Millisecond)))
	late := chat(replicaB, bobKey, fastModel)
	select {
	case s := <-slow:
		t.Fatalf("the slow request ended before the check it should outlive: %s", s)
	default:
	}
	t.Logf("bob's second request answered %d, %v after his slow request reached the upstream (reservationTTL %v)",
		late.status, late.end.Sub(slowReceived).Round(10*time.Millisecond), ttl)
	assertRefused(late, `user "bob"`)
	select {
	case s := <-slow:
		assertServed(s, "bob's slow request")
	case <-time.After(10 * time.Second):
		t.Fatal("bob's slow request did not end within 10s")
	}
	// Settled to its small actual usage, the hold no longer blocks bob.
	after := chat(replicaB, bobKey, fastModel)
	for after.status == http.StatusTooManyRequests && time.Since(late.end) < 5*time.Second {
		time.Sleep(50 * time.Millisecond)
		after = chat(replicaB, bobKey, fastModel)
	}
	assertServed(after, "bob after his slow request settled")
}
