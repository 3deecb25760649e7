package integration_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmgateway/llmgateway/integration/gwproc"
	"github.com/llmgateway/llmgateway/integration/mockupstream"
	"github.com/llmgateway/llmgateway/integration/redisproc"
)

// Session affinity through the binary: with round-robin over pa, pb and
// pc, requests of one session (a session header, else a hash of the
// first system and user message) reach one provider, while requests of
// different sessions rotate. Without affinity the same requests rotate,
// which is what makes these tests able to fail.

// rtAffinityExtra is round-robin, failover on and sessionAffinity on (off
// when !affinity), with Redis at redisAddr when it is not empty.
func rtAffinityExtra(affinity bool, redisAddr string) map[string]interface{} {
	extra := map[string]interface{}{
		"failover": rtFailoverOn,
		"routing": map[string]interface{}{
			"strategy":        "round-robin",
			"sessionAffinity": map[string]interface{}{"enabled": affinity},
		},
	}
	if redisAddr != "" {
		extra["redis"] = map[string]interface{}{"address": redisAddr}
	}
	return extra
}

// rtSessionRequest sends one chat request (fresh content unless body is
// given) with headers and returns the provider that served it.
func rtSessionRequest(t *testing.T, ps rtProviders, base string, body []byte, headers ...string) string {
	t.Helper()
	if body == nil {
		body = rtChat(rtModel, fmt.Sprintf("turn %d", rtSeq.Add(1)), false)
	}
	before := ps.counts()
	res := rtPost(t, base, body, headers...)
	require.NoError(t, res.err)
	require.Equal(t, http.StatusOK, res.status, "%s", res)
	return ps.served(t, before)
}

// distinct is the set of values in list.
func distinct(list []string) map[string]int {
	out := map[string]int{}
	for _, s := range list {
		out[s]++
	}
	return out
}

// rtConversation is turn n of one conversation: the same system and first
// user message, then n more exchanges.
func rtConversation(n int) []byte {
	msgs := []map[string]string{
		{"role": "system", "content": "you are the affinity test"},
		{"role": "user", "content": "first question of the conversation"},
	}
	for i := 0; i < n; i++ {
		msgs = append(msgs,
			map[string]string{"role": "assistant", "content": fmt.Sprintf("answer %d", i)},
			map[string]string{"role": "user", "content": fmt.Sprintf("follow-up %d", i)})
	}
	b, _ := json.Marshal(map[string]interface{}{"model": rtModel, "messages": msgs})
	return b
}

// TestAffinitySessionHeaders: each session header the gateway reads keeps
// one session on one provider (the request bodies all differ, so the
// hash fallback cannot be what keeps it there). The header names
// include what the real clients send: Claude Code 2.1.328
// X-Claude-Code-Session-Id, Codex CLI 0.169.0 "session-id" (lower case,
// hyphen: recorded on the wire, see routing_claude_test.go).
func TestAffinitySessionHeaders(t *testing.T) {
	t.Parallel()
	ps := rtThreeProviders(t)
	gw := rtStart(t, rtConfig(ps, rtAffinityExtra(true, "")))

	headers := []string{"X-Session-Id", "X-OpenWebUI-Chat-Id", "X-Claude-Code-Session-Id", "session_id", "Session-Id", "session-id"}
	for _, h := range headers {
		t.Run(h, func(t *testing.T) {
			var got []string
			for i := 0; i < 6; i++ {
				got = append(got, rtSessionRequest(t, ps, gw.URL, nil, h, "sess-"+h))
			}
			assert.Len(t, distinct(got), 1, "one session, one provider: %v", got)
		})
	}
	t.Run("distinct_sessions_rotate", func(t *testing.T) {
		// The control: a new session per request is bound round-robin.
		var got []string
		for i := 0; i < 6; i++ {
			got = append(got, rtSessionRequest(t, ps, gw.URL, nil, "X-Session-Id", fmt.Sprintf("fresh-%d", i)))
		}
		assert.GreaterOrEqual(t, len(distinct(got)), 2, "new sessions spread: %v", got)
	})
	t.Run("hash_of_first_system_and_user_message", func(t *testing.T) {
		// No header: the turns of one conversation share their first
		// system and user message.
		var got []string
		for i := 0; i < 6; i++ {
			got = append(got, rtSessionRequest(t, ps, gw.URL, rtConversation(i)))
		}
		assert.Len(t, distinct(got), 1, "one conversation, one provider: %v", got)
	})
	t.Run("no_header_distinct_messages_rotate", func(t *testing.T) {
		var got []string
		for i := 0; i < 6; i++ {
			got = append(got, rtSessionRequest(t, ps, gw.URL, nil))
		}
		assert.GreaterOrEqual(t, len(distinct(got)), 2, "distinct first messages are distinct sessions: %v", got)
	})
	t.Run("x_session_id_first", func(t *testing.T) {
		// X-Session-Id is read before X-Claude-Code-Session-Id: the same
		// X-Session-Id with varying others is one session...
		var got []string
		for i := 0; i < 6; i++ {
			got = append(got, rtSessionRequest(t, ps, gw.URL, nil,
				"X-Session-Id", "precedence-one", "X-Claude-Code-Session-Id", fmt.Sprintf("cc-%d", i)))
		}
		assert.Len(t, distinct(got), 1, "%v", got)
		// ...and the same X-Claude-Code-Session-Id with varying
		// X-Session-Id is as many sessions.
		got = nil
		for i := 0; i < 6; i++ {
			got = append(got, rtSessionRequest(t, ps, gw.URL, nil,
				"X-Session-Id", fmt.Sprintf("precedence-%d", i), "X-Claude-Code-Session-Id", "cc-same"))
		}
		assert.GreaterOrEqual(t, len(distinct(got)), 2, "%v", got)
	})
}

// TestAffinityNotForEmbeddings: embeddings never use affinity: one
// X-Session-Id rotates under round-robin.
func TestAffinityNotForEmbeddings(t *testing.T) {
	t.Parallel()
	var ps rtProviders
	for _, n := range []string{"pa", "pb", "pc"} {
		ps = append(ps, rtNewProvider(t, n, mockupstream.Options{}))
	}
	cfg := rtConfig(nil, rtAffinityExtra(true, ""))
	providers := map[string]interface{}{}
	for _, p := range ps {
		providers[p.name] = rtProviderConfig(p.url, rtModel, "text-embedding-3-small")
	}
	cfg["providers"] = providers
	gw := rtStart(t, cfg)
	var got []string
	for i := 0; i < 6; i++ {
		before := ps.counts()
		res := rtPostPath(t, gw.URL, "/v1/embeddings", []byte(`{"model":"text-embedding-3-small","input":"same text"}`), "X-Session-Id", "embed-session")
		require.NoError(t, res.err)
		require.Equal(t, http.StatusOK, res.status, "%s", res)
		got = append(got, ps.served(t, before))
	}
	assert.Len(t, distinct(got), 3, "embeddings rotate: %v", got)
	// Chat with the same header sticks (the control).
	var chat []string
	for i := 0; i < 6; i++ {
		chat = append(chat, rtSessionRequest(t, ps, gw.URL, nil, "X-Session-Id", "embed-session"))
	}
	assert.Len(t, distinct(chat), 1, "chat sticks: %v", chat)
}

// TestAffinityOff: the control for the tests above: with
// sessionAffinity off, one X-Session-Id rotates over the providers.
func TestAffinityOff(t *testing.T) {
	t.Parallel()
	ps := rtThreeProviders(t)
	gw := rtStart(t, rtConfig(ps, rtAffinityExtra(false, "")))
	var got []string
	for i := 0; i < 6; i++ {
		got = append(got, rtSessionRequest(t, ps, gw.URL, nil, "X-Session-Id", "no-affinity"))
	}
	assert.Len(t, distinct(got), 3, "round-robin without affinity: %v", got)
}

// TestAffinityMovesOnFailure (in process): the bound provider fails, the
// request fails over, and the session stays with the provider that
// served it, also once the first one has recovered.
func TestAffinityMovesOnFailure(t *testing.T) {
	t.Parallel()
	ps := rtThreeProviders(t)
	byName := map[string]*rtProvider{"pa": ps[0], "pb": ps[1], "pc": ps[2]}
	gw := rtStart(t, rtConfig(ps, rtAffinityExtra(true, "")))
	const h, s = "X-Session-Id", "moving-session"

	bound := rtSessionRequest(t, ps, gw.URL, nil, h, s)
	for i := 0; i < 3; i++ {
		require.Equal(t, bound, rtSessionRequest(t, ps, gw.URL, nil, h, s))
	}
	byName[bound].status.Store(503)
	before := ps.counts()
	res := rtPost(t, gw.URL, rtChat(rtModel, "bound one down", false), h, s)
	require.NoError(t, res.err)
	require.Equal(t, http.StatusOK, res.status, "%s", res)
	after := ps.counts()
	assert.Equal(t, int64(1), after[bound]-before[bound], "the bound provider is tried first")
	moved := ""
	for _, p := range ps {
		if p.name != bound && after[p.name] != before[p.name] {
			require.Empty(t, moved, "one stand-in: %s", rtCountsString(after))
			moved = p.name
		}
	}
	require.NotEmpty(t, moved)

	byName[bound].status.Store(0) // recovered; the binding has moved
	for i := 0; i < 6; i++ {
		assert.Equal(t, moved, rtSessionRequest(t, ps, gw.URL, nil, h, s), "request %d after the move", i)
	}
}

// TestAffinityAcrossReplicas: two gateway binaries on one redis-server.
// The requests of each session, alternating between the replicas, reach
// one provider; a third replica started later agrees (the binding is in
// Redis, not in either process). Killing a bound provider moves its
// sessions: the next request fails over, and every later request
// through any replica sticks to the new provider, although each replica
// may have read the old binding less than a second before (its read
// cache) and has seen the dead provider fail.
func TestAffinityAcrossReplicas(t *testing.T) {
	t.Parallel()
	rs := redisproc.Start(t)
	ps := rtThreeProviders(t)
	byName := map[string]*rtProvider{"pa": ps[0], "pb": ps[1], "pc": ps[2]}
	cfg := rtConfig(ps, rtAffinityExtra(true, rs.Addr))
	cfg["routing"].(map[string]interface{})["sessionAffinity"].(map[string]interface{})["ttl"] = "1h"
	a, b := rtStart(t, cfg), rtStart(t, cfg)
	const h = "X-Session-Id"

	// Put the replicas' round-robin positions apart: without a shared
	// binding the replicas would now bind a session differently.
	rtSessionRequest(t, ps, a.URL, nil, h, "offset")

	// Twelve sessions, bound round-robin: four on each provider, so
	// that the killed one has more sessions than the breaker threshold
	// (3): the later ones meet an open breaker on every replica.
	var sessions []string
	for i := 1; i <= 12; i++ {
		sessions = append(sessions, fmt.Sprintf("s%02d", i))
	}
	bound := map[string]string{}
	for _, s := range sessions {
		var got []string
		// Four requests, two on each replica: the rotation advances on
		// every request, bound or not, so a multiple of three on one
		// replica would land every new session on the same provider.
		for i := 0; i < 4; i++ {
			gw := a
			if i%2 == 1 {
				gw = b
			}
			got = append(got, rtSessionRequest(t, ps, gw.URL, nil, h, s))
		}
		require.Len(t, distinct(got), 1, "session %s over two replicas: %v", s, got)
		bound[s] = got[0]
	}
	assert.GreaterOrEqual(t, len(distinct(valuesOf(bound, sessions))), 2, "sessions are bound round-robin: %v", bound)

	// The bindings are in Redis (llmgw:aff:<32 hex>), with the idle TTL
	// configured (1h here), renewed by the reads.
	rd := rlDialRedis(t, rs.Addr)
	keys := rd.keys("llmgw:aff:*")
	assert.GreaterOrEqual(t, len(keys), len(sessions), "one binding a session (and the offset request): %v", keys)
	for _, k := range keys {
		assert.Regexp(t, `^llmgw:aff:[0-9a-f]{32}$`, k)
		ttl := rd.ttl(k)
		assert.True(t, ttl > 3500 && ttl <= 3600, "TTL of %s: %d", k, ttl)
	}

	c := rtStart(t, cfg)
	for _, s := range sessions {
		assert.Equal(t, bound[s], rtSessionRequest(t, ps, c.URL, nil, h, s), "a new replica reads session %s's binding from Redis", s)
	}

	// Kill the provider with the most sessions: more than the breaker
	// threshold, so that its later sessions meet an open breaker.
	perProvider := distinct(valuesOf(bound, sessions))
	killed := ""
	for name, n := range perProvider {
		if killed == "" || n > perProvider[killed] || n == perProvider[killed] && name < killed {
			killed = name
		}
	}
	require.GreaterOrEqual(t, perProvider[killed], 4, "the scenario needs more sessions on one provider than the breaker threshold: %v", perProvider)
	byName[killed].srv.Close()
	replicas := []*gwproc.Process{a, b, c}
	for _, s := range sessions {
		if bound[s] != killed {
			for i := 0; i < 3; i++ {
				assert.Equal(t, bound[s], rtSessionRequest(t, ps, replicas[i].URL, nil, h, s), "session %s is not moved", s)
			}
			continue
		}
		moved := rtSessionRequest(t, ps, a.URL, nil, h, s) // fails over from the dead one
		require.NotEqual(t, killed, moved)
		var got, trail []string
		for i := 0; i < 9; i++ {
			r := (i + 1) % 3
			p := rtSessionRequest(t, ps, replicas[r].URL, nil, h, s)
			got = append(got, p)
			trail = append(trail, "abc"[r:r+1]+"→"+p)
		}
		assert.Equal(t, map[string]int{moved: 9}, distinct(got), "session %s after its provider %s died (moved to %s on replica a), then %v", s, killed, moved, trail)
	}
}

// TestAffinityAcrossReplicasNeedsRedis: the control of the test above:
// without Redis each replica binds on its own, and with their
// round-robin positions apart at least one session reaches two
// providers.
func TestAffinityAcrossReplicasNeedsRedis(t *testing.T) {
	t.Parallel()
	ps := rtThreeProviders(t)
	cfg := rtConfig(ps, rtAffinityExtra(true, ""))
	a, b := rtStart(t, cfg), rtStart(t, cfg)
	const h = "X-Session-Id"
	rtSessionRequest(t, ps, a.URL, nil, h, "offset")
	split := 0
	for _, s := range []string{"s1", "s2", "s3", "s4", "s5", "s6"} {
		var got []string
		for i := 0; i < 4; i++ {
			gw := a
			if i%2 == 1 {
				gw = b
			}
			got = append(got, rtSessionRequest(t, ps, gw.URL, nil, h, s))
		}
		if len(distinct(got)) > 1 {
			split++
		}
	}
	assert.NotZero(t, split, "in-process bindings differ between replicas")
}

func valuesOf(m map[string]string, keys []string) []string {
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, m[k])
	}
	return out
}
