package gateway

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/redistest"
	"github.com/llmgateway/llmgateway/gateway/internal/translate"
)

// servedBy is the index of the one upstream that answered 200 since
// before (oks), -1 when none did, -2 when several did.
func servedBy(ups []*routedUpstream, before []int64) int {
	who := -1
	for i := 0; i < len(ups); i++ {
		if ups[i].ok.Load() != before[i] {
			if who != -1 {
				return -2
			}
			who = i
		}
	}
	return who
}

const affinityRouting = `"routing": {"strategy": "round-robin", "sessionAffinity": {"enabled": true}}, "failover": {"enabled": true},`

// In process: a session sticks to the candidate that served it first
// (round-robin would otherwise rotate), different sessions spread, and
// when the bound candidate fails the binding moves with the failover.
func TestSessionAffinityInProcess(t *testing.T) {
	ups := routedUpstreams(t, 3)
	base, feed := recordingGateway(t, routingConfig(ups, affinityRouting), nil)
	send := func(session string) int {
		t.Helper()
		before := oks(ups)
		status, _, body := chatWith(t, base, map[string]string{"X-Session-Id": session})
		if status != 200 {
			t.Fatalf("session %s: %d %s", session, status, body)
		}
		<-feed
		return servedBy(ups, before)
	}
	first := send("s1")
	for i := 0; i < 9; i++ {
		if got := send("s1"); got != first {
			t.Fatalf("request %d of s1 went to %d, bound to %d", i, got, first)
		}
	}
	seen := map[int]bool{}
	for i := 0; i < 6; i++ {
		seen[send("other-"+string(rune('a'+i)))] = true
	}
	if len(seen) < 2 {
		t.Fatalf("new sessions did not spread: %v", seen)
	}
	ups[first].fail.Store(503)
	moved := send("s1")
	if moved == first || moved < 0 {
		t.Fatalf("after the bound provider failed: served by %d", moved)
	}
	ups[first].fail.Store(0) // recovered: the session stays where it moved
	for i := 0; i < 5; i++ {
		if got := send("s1"); got != moved {
			t.Fatalf("after the move, request %d went to %d, want %d", i, got, moved)
		}
	}
}

func oks(ups []*routedUpstream) []int64 {
	out := make([]int64, len(ups))
	for i := 0; i < len(ups); i++ {
		out[i] = ups[i].ok.Load()
	}
	return out
}

func TestSessionAffinityRecord(t *testing.T) {
	ups := routedUpstreams(t, 2)
	base, feed := recordingGateway(t, routingConfig(ups, affinityRouting), nil)
	chatWith(t, base, map[string]string{"X-Claude-Code-Session-Id": "cc-1"})
	if rec := <-feed; rec.affinity != affinityNew || rec.strategy != strategyRoundRobin {
		t.Fatalf("first: affinity %q strategy %q", rec.affinity, rec.strategy)
	}
	chatWith(t, base, map[string]string{"X-Claude-Code-Session-Id": "cc-1"})
	rec := <-feed
	if rec.affinity != affinityBound {
		t.Fatalf("second: affinity %q", rec.affinity)
	}
	ups[0].fail.Store(500)
	ups[1].fail.Store(500)
	bound := rec.provider
	other := map[string]int{"a": 1, "b": 0}[bound]
	ups[other].fail.Store(0)
	chatWith(t, base, map[string]string{"X-Claude-Code-Session-Id": "cc-1"})
	if rec := <-feed; rec.affinity != affinityMoved || rec.provider == bound {
		t.Fatalf("third: affinity %q provider %q (was %q)", rec.affinity, rec.provider, bound)
	}
	// Without a session header the conversation's hash is the session.
	chatWith(t, base, nil)
	if rec := <-feed; rec.affinity != affinityNew {
		t.Fatalf("conversation-hash session: affinity %q", rec.affinity)
	}
}

func TestSessionKeys(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		// Same first system and user message: same session, whatever follows.
		{`{"model":"m","messages":[{"role":"system","content":"S"},{"role":"user","content":"U"}]}`,
			`{"model":"m","messages":[{"role":"system","content":"S"},{"role":"user","content":"U"},{"role":"assistant","content":"A"},{"role":"user","content":"U2"}]}`},
		{`{"model":"m","system":[{"type":"text","text":"S"}],"messages":[{"role":"user","content":"U"}]}`,
			`{"model":"m","system":[{"type":"text","text":"S"}],"messages":[{"role":"user","content":"U"},{"role":"assistant","content":"x"}]}`},
		{`{"model":"m","instructions":"S","input":[{"type":"message","role":"user","content":"U"}]}`,
			`{"model":"m","instructions":"S","input":[{"type":"message","role":"user","content":"U"},{"type":"function_call_output","call_id":"c","output":"o"}]}`},
		{`{"model":"m","system":"S","prompt":"U"}`, `{"model":"m","prompt":"U","system":"S","options":{}}`},
	} {
		ka, kb := conversationSeed([]byte(tc.a)), conversationSeed([]byte(tc.b))
		if ka == "" || ka != kb {
			t.Fatalf("same conversation, keys %q and %q:\n%s\n%s", ka, kb, tc.a, tc.b)
		}
	}
	a := conversationSeed([]byte(`{"messages":[{"role":"system","content":"S"},{"role":"user","content":"U"}]}`))
	for _, other := range []string{
		`{"messages":[{"role":"system","content":"S2"},{"role":"user","content":"U"}]}`,
		`{"messages":[{"role":"system","content":"S"},{"role":"user","content":"V"}]}`,
		`{"messages":[{"role":"user","content":"U"}]}`,
	} {
		if conversationSeed([]byte(other)) == a {
			t.Fatalf("different conversations share a key: %s", other)
		}
	}
	if conversationSeed([]byte(`{"messages":[{"role":"system","content":"S"}]}`)) != "" || conversationSeed([]byte(`not json`)) != "" {
		t.Fatal("a body without a user message has a session")
	}
	// The key never holds the session id or the model in the clear.
	k := bindingKey("claude-sonnet", "X-Session-Id:secret-session")
	if strings.Contains(k, "secret") || strings.Contains(k, "claude") || !strings.HasPrefix(k, "llmgw:aff:") || len(logName(k)) != 12 {
		t.Fatalf("binding key %q", k)
	}
}

// With Redis the binding is shared: a second gateway (another replica)
// follows the first's binding, and a move made through one is followed
// by the other at once (its cached binding failed, it re-reads).
func TestSessionAffinityRedis(t *testing.T) {
	addr := redistest.Start(t)
	ups := routedUpstreams(t, 2)
	cfg := routingConfig(ups, affinityRouting+`"redis": {"address": "`+addr+`"},`)
	r1, _ := newTestGateway(t, cfg, nil)
	r2, _ := newTestGateway(t, cfg, nil)
	hdr := map[string]string{"X-Session-Id": "shared-1"}
	send := func(base string) int {
		t.Helper()
		before := oks(ups)
		if status, _, body := chatWith(t, base, hdr); status != 200 {
			t.Fatalf("%d %s", status, body)
		}
		return servedBy(ups, before)
	}
	// alternate sends 10 requests, r2 first, and fails unless want
	// served each.
	alternate := func(what string, want int) {
		t.Helper()
		for i := 0; i < 10; i++ {
			base := r1.URL
			if i%2 == 0 {
				base = r2.URL
			}
			if got := send(base); got != want {
				t.Fatalf("%s: request %d went to %d, want %d", what, i, got, want)
			}
		}
	}
	first := send(r1.URL)
	alternate("bound", first)
	// The bound provider dies for good: r1 fails over and moves the
	// binding; r2, whose cached binding is at most a second old, follows
	// at once (its try of the dead provider fails, and it re-reads).
	ups[first].fail.Store(503)
	moved := send(r1.URL)
	if moved == first {
		t.Fatal("no failover")
	}
	alternate("after the move", moved)
}

// The binding's Redis read rides the limiter's round trip: a request
// whose session's binding is not in the replica's one-second cache
// costs the limit stage one round trip with affinity, as without it,
// and routes to the bound candidate.
func TestSessionAffinityReadFoldedIntoLimiter(t *testing.T) {
	addr := redistest.Start(t)
	ups := routedUpstreams(t, 3)
	for _, budgeted := range []bool{false, true} {
		limits := ``
		if budgeted {
			limits = `"limits": {"tokensPerDay": 100000000},` // admission by the reservation script
		}
		cfg := strings.Replace(routingConfig(ups, affinityRouting+`"redis": {"address": "`+addr+`"},`), `"all": {}`, `"all": {`+limits+`"models": []}`, 1)
		clock := &fakeClock{now: time.Unix(1e9, 0)}
		g, _, _ := serveTestGateway(t, cfg, nil, func(g *Gateway) { g.router.affinity.now = clock.Now })
		newSessionCall := func(session string) *call {
			req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(m1Chat))
			req.Header.Set("Authorization", "Bearer "+testAliceKey)
			if session != "" {
				req.Header.Set("X-Session-Id", session)
			}
			c := newCall(g, httptest.NewRecorder(), req, routesByPath["/v1/chat/completions"], startTrace(httptest.NewRecorder(), req))
			if !identify(c) || !admitBody(c) || !resolve(c) {
				t.Fatalf("setup: %d %s", c.rec.statusCode, c.rec.errorCode)
			}
			return c
		}
		// Bind the session to c/m1 through one replica's cache...
		c := newSessionCall("folded")
		if !limit(c) {
			t.Fatal("limit refused")
		}
		noteServed(c, c.cands[len(c.cands)-1])
		bound := c.aff.bound
		if c.resv != nil {
			c.resv.settle(translate.Usage{}, 0)
		}
		clock.Add(2 * time.Second) // ...and let the cache lapse: the next read goes to Redis
		trips := func(session string) (int64, *call) {
			c := newSessionCall(session)
			before := g.redis.RoundTrips()
			if !limit(c) {
				t.Fatalf("limit refused: %s", c.rec.errorCode)
			}
			n := g.redis.RoundTrips() - before
			if c.resv != nil {
				c.resv.settle(translate.Usage{}, 0)
			}
			return n, c
		}
		withSession, c2 := trips("folded")
		without, _ := trips("")
		if withSession != 1 || without != 1 {
			t.Fatalf("budgeted %v: limit stage round trips %d with a session to read, %d without; want 1 and 1", budgeted, withSession, without)
		}
		if c2.rec.affinity != affinityBound || candidateName(c2.cands[0]) != bound {
			t.Fatalf("budgeted %v: affinity %q, first %s, bound %s", budgeted, c2.rec.affinity, candidateName(c2.cands[0]), bound)
		}
	}
}
