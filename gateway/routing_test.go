package gateway

import (
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// routedUpstream is one provider of a routing test: it answers chatOK,
// or the status in fail when non-zero (with Retry-After when set), and
// counts its requests.
type routedUpstream struct {
	*fakeUpstream
	fail       atomic.Int64
	retryAfter atomic.Value // string
	n          atomic.Int64
	ok         atomic.Int64 // the requests it answered 200
}

func newRoutedUpstream(t *testing.T) *routedUpstream {
	u := &routedUpstream{}
	u.retryAfter.Store("")
	u.fakeUpstream = newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		u.n.Add(1)
		if s := int(u.fail.Load()); s != 0 {
			if ra := u.retryAfter.Load().(string); ra != "" {
				w.Header().Set("Retry-After", ra)
			}
			http.Error(w, `{"error":{"message":"no","type":"server_error"}}`, s)
			return
		}
		u.ok.Add(1)
		okJSON(chatOK)(w, r)
	})
	return u
}

// routingConfig serves m1 from one provider per upstream, named a, b,
// c, … in order, with extra top-level keys.
func routingConfig(ups []*routedUpstream, extra string) string {
	var p []string
	for i := 0; i < len(ups); i++ {
		name := string(rune('a' + i))
		p = append(p, `"`+name+`": {"type": "openai", "baseUrl": "`+ups[i].URL+`", "apiKey": "k`+name+`", "models": ["m1"]}`)
	}
	return `{` + extra + `
  "providers": {` + strings.Join(p, ",") + `},
  "groups": {"all": {}},
  "users": {"inline": [{"name": "alice", "group": "all", "apiKey": "` + testAliceKey + `"}]}
}`
}

func routedUpstreams(t *testing.T, n int) []*routedUpstream {
	out := make([]*routedUpstream, n)
	for i := 0; i < n; i++ {
		out[i] = newRoutedUpstream(t)
	}
	return out
}

func counts(ups []*routedUpstream) []int64 {
	out := make([]int64, len(ups))
	for i := 0; i < len(ups); i++ {
		out[i] = ups[i].n.Load()
	}
	return out
}

// sendThenCount resets the counts, sends n chats, and fails unless the
// upstreams then counted want.
func sendThenCount(t *testing.T, base string, ups []*routedUpstream, n int, what string, want ...int64) {
	t.Helper()
	resetCounts(ups)
	for i := 0; i < n; i++ {
		chatWith(t, base, nil)
	}
	got := counts(ups)
	for i := 0; i < len(want); i++ {
		if got[i] != want[i] {
			t.Fatalf("%s: counts %v, want %v", what, got, want)
		}
	}
}

func resetCounts(ups []*routedUpstream) {
	for i := 0; i < len(ups); i++ {
		ups[i].n.Store(0)
	}
}

const m1Chat = `{"model":"m1","messages":[{"role":"user","content":"hi"}]}`

// chatWith sends m1Chat with extra headers and returns status, headers
// and body.
func chatWith(t *testing.T, base string, headers map[string]string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(m1Chat))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testAliceKey)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sb strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, resp.Header, sb.String()
}

func TestRoutingRoundRobin(t *testing.T) {
	ups := routedUpstreams(t, 3)
	srv, _ := newTestGateway(t, routingConfig(ups, `"routing": {"strategy": "round-robin"},`), nil)
	for i := 0; i < 30; i++ {
		if status, _, body := chatWith(t, srv.URL, nil); status != 200 {
			t.Fatalf("request %d: %d %s", i, status, body)
		}
	}
	if got := counts(ups); got[0] != 10 || got[1] != 10 || got[2] != 10 {
		t.Fatalf("round robin spread %v, want 10 each", got)
	}
	// Failover off: a failing provider's turn is its failure (round-robin
	// spreads load, it does not hide an error).
	ups[1].fail.Store(500)
	resetCounts(ups)
	fails := 0
	for i := 0; i < 3; i++ {
		if status, _, _ := chatWith(t, srv.URL, nil); status != 200 {
			fails++
		}
	}
	if fails != 1 {
		t.Fatalf("%d of 3 failed, want exactly b's turn", fails)
	}
}

// The default (priority, failover off) keeps today's order: the first
// provider serves everything, and a failing first is not routed around.
func TestRoutingPriorityDefault(t *testing.T) {
	ups := routedUpstreams(t, 2)
	g, srv, _ := serveTestGateway(t, routingConfig(ups, ""), nil, nil)
	if g.router.active {
		t.Fatal("routing is active in a default config")
	}
	ups[0].fail.Store(503)
	for i := 0; i < 5; i++ {
		if status, _, _ := chatWith(t, srv.URL, nil); status != 503 {
			t.Fatalf("request %d: %d, want a's 503", i, status)
		}
	}
	if got := counts(ups); got[0] != 5 || got[1] != 0 {
		t.Fatalf("counts %v, want [5 0]", got)
	}
}

func TestPickWeighted(t *testing.T) {
	a, b, c := &providerRuntime{name: "a"}, &providerRuntime{name: "b"}, &providerRuntime{name: "c"}
	pool := []candidate{{provider: a, model: "m", weight: 3}, {provider: b, model: "m", weight: 1}, {provider: c, model: "m", weight: 0}}
	got := map[string]int{}
	run := 0 // the longest run of one provider first
	last, cur := "", 0
	for n := uint64(0); n < 500; n++ {
		out := make([]candidate, len(pool))
		copy(out, pool)
		pickWeighted(out, n)
		name := out[0].provider.name
		got[name]++
		if name == last {
			cur++
		} else {
			last, cur = name, 1
		}
		if cur > run {
			run = cur
		}
		if len(out) != 3 || out[0].provider == out[1].provider || out[1].provider == out[2].provider || out[0].provider == out[2].provider {
			t.Fatalf("turn %d: not a permutation: %v", n, out)
		}
	}
	if got["a"] != 300 || got["b"] != 100 || got["c"] != 100 {
		t.Fatalf("weighted 3:1:1 over 500 turns: %v", got)
	}
	if run > 3 {
		t.Fatalf("a run of %d turns on one candidate: the slots are not interleaved", run)
	}
}

func TestRoutingLeastCost(t *testing.T) {
	ups := routedUpstreams(t, 3)
	pricing := `"pricing": {"a/m1": {"inputPerM": 3, "outputPerM": 3}, "b/m1": {"inputPerM": 1, "outputPerM": 2}},` // c unpriced: last
	srv, _ := newTestGateway(t, routingConfig(ups, `"routing": {"strategy": "least-cost"}, "failover": {"enabled": true}, `+pricing), nil)
	if status, _, _ := chatWith(t, srv.URL, nil); status != 200 {
		t.Fatal(status)
	}
	if got := counts(ups); got[0] != 0 || got[1] != 1 || got[2] != 0 {
		t.Fatalf("least-cost: counts %v, want b only", got)
	}
	// b failing: a is dearer than b, so the cost guard refuses it, and c
	// (unknown price) too: the request fails with b's error.
	ups[1].fail.Store(502)
	resetCounts(ups)
	if status, _, _ := chatWith(t, srv.URL, nil); status != 502 {
		t.Fatalf("status %d, want b's 502", status)
	}
	if got := counts(ups); got[0] != 0 || got[1] != 1 || got[2] != 0 {
		t.Fatalf("counts %v, want b only (cost guard)", got)
	}
}

func TestRoutingLeastLatency(t *testing.T) {
	ups := routedUpstreams(t, 2)
	g, _, _ := serveTestGateway(t, routingConfig(ups, `"routing": {"strategy": "least-latency"},`), nil, nil)
	reg, _ := g.registry.Load().(*modelRegistry)
	target, e := reg.route("m1")
	if e != nil {
		t.Fatal(e.Error())
	}
	c := &call{g: g, req: &jsonRequest{model: "m1"}}
	firstOf := func() string {
		out := append([]candidate(nil), target.candidates...)
		orderBy(c, strategyLeastLatency, out)
		return out[0].provider.name
	}
	// No samples: registry order; a sampled candidate sorts after an
	// unsampled one (it is measured first).
	g.router.latency.observe("a/m1", 300*time.Millisecond)
	first := firstOf()
	if first != "b" {
		t.Fatalf("unsampled b should go first, got %s", first)
	}
	g.router.latency.observe("b/m1", 20*time.Millisecond)
	firsts := map[string]int{}
	for i := 0; i < 100; i++ {
		firsts[firstOf()]++
	}
	// One turn in exploreEvery rotates: b (fast) is first 90 + 5 times.
	if firsts["b"] != 95 || firsts["a"] != 5 {
		t.Fatalf("least-latency firsts %v, want b 95, a 5", firsts)
	}
	// The average moves: a becomes the faster one.
	for i := 0; i < 20; i++ {
		g.router.latency.observe("a/m1", time.Millisecond)
		g.router.latency.observe("b/m1", 400*time.Millisecond)
	}
	if first := firstOf(); first != "a" {
		t.Fatalf("after a got faster: first %s", first)
	}
}

// The request-path breaker: three failed requests open a provider's
// breaker, it is skipped while open, one half-open probe after the
// window, and the backoff doubles on a failed probe.
func TestRequestBreaker(t *testing.T) {
	ups := routedUpstreams(t, 2)
	clock := &fakeClock{now: time.Unix(1e9, 0)}
	g, srv, logs := serveTestGateway(t, routingConfig(ups, `"failover": {"enabled": true},`), nil, func(g *Gateway) {
		g.router.health.now = clock.Now
	})
	ups[0].fail.Store(500)
	for i := 0; i < 3; i++ {
		if status, _, _ := chatWith(t, srv.URL, nil); status != 200 {
			t.Fatalf("request %d: %d (b should serve)", i, status)
		}
	}
	if got := counts(ups); got[0] != 3 || got[1] != 3 {
		t.Fatalf("counts %v, want [3 3]", got)
	}
	if s := g.router.health.state("a"); s != breakerOpen {
		t.Fatalf("a's breaker is %s after 3 failures", s)
	}
	if !strings.Contains(logs.String(), `routing: "a" is skipped for 30s after 3 consecutive failed requests`) {
		t.Fatalf("no breaker line:\n%s", logs)
	}
	sendThenCount(t, srv.URL, ups, 5, "while open", 0, 5)
	// The window passes: one probe, which fails: open again for 60s.
	clock.Add(31 * time.Second)
	sendThenCount(t, srv.URL, ups, 2, "failed probe", 1, 2)
	clock.Add(31 * time.Second) // within the doubled window
	sendThenCount(t, srv.URL, ups, 1, "within the doubled window", 0)
	// a recovers; the next probe closes the breaker.
	ups[0].fail.Store(0)
	clock.Add(30 * time.Second)
	sendThenCount(t, srv.URL, ups, 3, "after recovery", 3, 0)
	if s := g.router.health.state("a"); s != breakerClosed {
		t.Fatalf("a's breaker is %s after a good probe", s)
	}
}

// Every candidate open: one is attempted anyway (the request is never
// refused without an attempt); a 400 never counts.
func TestRequestBreakerAllOpen(t *testing.T) {
	ups := routedUpstreams(t, 2)
	g, srv, _ := serveTestGateway(t, routingConfig(ups, `"failover": {"enabled": true},`), nil, nil)
	ups[0].fail.Store(400)
	for i := 0; i < 5; i++ {
		if status, _, _ := chatWith(t, srv.URL, nil); status != 400 {
			t.Fatalf("400 case: %d", status)
		}
	}
	if s := g.router.health.state("a"); s != breakerClosed {
		t.Fatalf("400s opened the breaker: %s", s)
	}
	ups[0].fail.Store(503)
	ups[1].fail.Store(503)
	for i := 0; i < 3; i++ {
		chatWith(t, srv.URL, nil)
	}
	if g.router.health.state("a") != breakerOpen || g.router.health.state("b") != breakerOpen {
		t.Fatal("both breakers should be open")
	}
	resetCounts(ups)
	if status, _, _ := chatWith(t, srv.URL, nil); status != 503 {
		t.Fatalf("all open: %d, want an attempted 503", status)
	}
	if got := counts(ups); got[0]+got[1] != 1 {
		t.Fatalf("all open: counts %v, want one attempt", got)
	}
}

// A 429 with Retry-After parks the provider/model until then, before
// any breaker opens.
func TestRateLimitParking(t *testing.T) {
	ups := routedUpstreams(t, 2)
	clock := &fakeClock{now: time.Unix(1e9, 0)}
	_, srv, _ := serveTestGateway(t, routingConfig(ups, `"failover": {"enabled": true},`), nil, func(g *Gateway) {
		g.router.health.now = clock.Now
	})
	ups[0].fail.Store(429)
	ups[0].retryAfter.Store("5")
	if status, _, _ := chatWith(t, srv.URL, nil); status != 200 {
		t.Fatalf("first: %d", status)
	}
	ups[0].fail.Store(0)
	sendThenCount(t, srv.URL, ups, 3, "parked", 0, 3)
	clock.Add(6 * time.Second)
	sendThenCount(t, srv.URL, ups, 1, "after Retry-After", 1, 0)
}

// blockingUpstream holds every request until release is closed, telling
// arrived about each.
func blockingUpstream(t *testing.T) (*fakeUpstream, chan struct{}, chan struct{}) {
	arrived, release := make(chan struct{}, 16), make(chan struct{})
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		okJSON(chatOK)(w, r)
	})
	return up, arrived, release
}

func TestProviderMaxConcurrent(t *testing.T) {
	a, arrived, release := blockingUpstream(t)
	b := newRoutedUpstream(t)
	cfg := func(extra, aExtra string) string {
		return `{` + extra + `
  "providers": {
    "a": {"type": "openai", "baseUrl": "` + a.URL + `", "models": ["m1"], "maxConcurrent": 1` + aExtra + `},
    "b": {"type": "openai", "baseUrl": "` + b.URL + `", "models": ["m1"]}},
  "groups": {"all": {}},
  "users": {"inline": [{"name": "alice", "group": "all", "apiKey": "` + testAliceKey + `"}]}}`
	}
	off, _ := newTestGateway(t, cfg("", `, "maxQueue": 0`), nil)
	on, _ := newTestGateway(t, cfg(`"failover": {"enabled": true},`, `, "maxQueue": 0`), nil)
	queued, _ := newTestGateway(t, cfg("", `, "maxQueue": 1, "queueTimeout": "1m"`), nil)

	hold := func(base string) chan int {
		done := make(chan int, 1)
		go func() {
			status, _, _ := do(t, "POST", base+"/v1/chat/completions", testAliceKey, m1Chat)
			done <- status
		}()
		<-arrived
		return done
	}
	// Failover off: the second request gets 429 provider_saturated.
	held := hold(off.URL)
	status, h, body := chatWith(t, off.URL, nil)
	if status != 429 || h.Get("Retry-After") != "1" || !strings.Contains(body, `"code":"provider_saturated"`) {
		t.Fatalf("saturated: %d %q %s", status, h.Get("Retry-After"), body)
	}
	// Failover on: it goes to b instead.
	held2 := hold(on.URL)
	if status, _, body := chatWith(t, on.URL, nil); status != 200 || b.n.Load() != 1 {
		t.Fatalf("saturated with failover: %d, b %d: %s", status, b.n.Load(), body)
	}
	// A queue: the second request waits for the first's slot.
	held3 := hold(queued.URL)
	waiting := make(chan int, 1)
	go func() {
		status, _, _ := do(t, "POST", queued.URL+"/v1/chat/completions", testAliceKey, m1Chat)
		waiting <- status
	}()
	close(release)
	// (Four receives, not a range over a slice of channels: Yaegi
	// mis-ranges one.)
	s1, s2, s3, s4 := <-held, <-held2, <-held3, <-waiting
	if s1 != 200 || s2 != 200 || s3 != 200 || s4 != 200 {
		t.Fatalf("held requests: %d %d %d %d", s1, s2, s3, s4)
	}
	if a.count() != 4 {
		t.Fatalf("a served %d, want 4 (3 held, 1 queued)", a.count())
	}
}

// firstByteDeadline bounds every attempt and retry wait to the first
// response headers: 504 upstream_timeout when it passes.
func TestFirstByteDeadline(t *testing.T) {
	a, arrived, release := blockingUpstream(t)
	defer close(release)
	b := newRoutedUpstream(t)
	b.fail.Store(503)
	cfg := `{"firstByteDeadline": "300ms", "failover": {"enabled": true}, "retry": {"enabled": true, "attempts": 3, "backoff": "1ms"},
  "providers": {
    "a": {"type": "openai", "baseUrl": "` + a.URL + `", "models": ["m1"]},
    "b": {"type": "openai", "baseUrl": "` + b.URL + `", "models": ["m1"]}},
  "groups": {"all": {}},
  "users": {"inline": [{"name": "alice", "group": "all", "apiKey": "` + testAliceKey + `"}]}}`
	base, feed := recordingGateway(t, cfg, nil)
	status, _, body := do(t, "POST", base+"/v1/chat/completions", testAliceKey, m1Chat)
	<-arrived
	if status != 504 || !strings.Contains(body, `"code":"upstream_timeout"`) || !strings.Contains(body, "firstByteDeadline (300ms") {
		t.Fatalf("deadline: %d %s", status, body)
	}
	rec := <-feed
	// a's one attempt used the whole deadline: b is never reached.
	if rec.attempts != 1 || b.n.Load() != 0 || len(rec.tried) != 1 || rec.tried[0].outcome != "upstream_timeout" {
		t.Fatalf("record: attempts %d, b %d, tried %+v", rec.attempts, b.n.Load(), rec.tried)
	}
	if _, err := newGatewayFromConfig(t, strings.Replace(cfg, `"300ms"`, `"soon"`, 1)); err == nil || !strings.Contains(err.Error(), "firstByteDeadline") {
		t.Fatalf("bad firstByteDeadline: %v", err)
	}
}

// The record carries the walk: the strategy, each candidate's attempts
// and outcome, and what was skipped as unhealthy.
func TestRoutingRecordTrail(t *testing.T) {
	ups := routedUpstreams(t, 3)
	ups[0].fail.Store(500)
	base, feed := recordingGateway(t, routingConfig(ups, `"failover": {"enabled": true}, "retry": {"enabled": true, "attempts": 1, "backoff": "1ms"},`), nil)
	if status, _, _ := do(t, "POST", base+"/v1/chat/completions", testAliceKey, m1Chat); status != 200 {
		t.Fatal(status)
	}
	rec := <-feed
	if rec.strategy != strategyPriority || rec.provider != "b" || rec.attempts != 3 || len(rec.tried) != 2 ||
		rec.tried[0] != (triedCandidate{candidate: "a/m1", attempts: 2, outcome: "upstream_error"}) ||
		rec.tried[1] != (triedCandidate{candidate: "b/m1", attempts: 1, outcome: "served"}) {
		t.Fatalf("record: strategy %q provider %q attempts %d tried %+v", rec.strategy, rec.provider, rec.attempts, rec.tried)
	}
	for i := 0; i < 2; i++ {
		do(t, "POST", base+"/v1/chat/completions", testAliceKey, m1Chat)
		<-feed
	}
	do(t, "POST", base+"/v1/chat/completions", testAliceKey, m1Chat)
	rec = <-feed
	if len(rec.skipped) != 1 || rec.skipped[0] != "a/m1" || rec.tried[0].candidate != "b/m1" {
		t.Fatalf("after a's breaker opened: skipped %v tried %+v", rec.skipped, rec.tried)
	}
}

func TestRoutingConfigRefusals(t *testing.T) {
	ups := routedUpstreams(t, 1)
	for _, tc := range []struct{ extra, want string }{
		{`"routing": {"strategy": "random"},`, `routing.strategy: "random" is not a strategy`},
		{`"routing": {"breaker": {"failureThreshold": 101}},`, "routing.breaker.failureThreshold: 101 must be between 1 and 100"},
		{`"routing": {"breaker": {"openDuration": "1m", "maxOpenDuration": "30s"}},`, "routing.breaker.maxOpenDuration"},
		{`"routing": {"sessionAffinity": {"enabled": true, "ttl": "500ms"}},`, "routing.sessionAffinity.ttl: \"500ms\" must be at least 1s"},
		{`"routing": {"sessionAffinity": {"enabled": true, "ttl": "forever"}},`, "routing.sessionAffinity.ttl"},
		{`"routing": {"stickiness": true},`, `unknown config key "stickiness"`},
		{`"firstByteDeadline": "-1s",`, "firstByteDeadline"},
	} {
		if _, err := newGatewayFromConfig(t, routingConfig(ups, tc.extra)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%s: %v, want %q", tc.extra, err, tc.want)
		}
	}
	for _, tc := range []struct{ provider, want string }{
		{`"maxConcurrent": -1`, "providers.p.maxConcurrent: -1 is out of range"},
		{`"maxConcurrent": 2, "maxQueue": -1`, "providers.p.maxQueue: -1 is out of range"},
		{`"maxQueue": 3`, "providers.p: maxQueue and queueTimeout need maxConcurrent"},
		{`"maxConcurrent": 2, "queueTimeout": "0s"`, "providers.p.queueTimeout"},
	} {
		cfg := `{"providers": {"p": {"type": "openai", "baseUrl": "http://127.0.0.1:1", "models": ["m1"], ` + tc.provider + `}}}`
		if _, err := newGatewayFromConfig(t, cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%s: %v, want %q", tc.provider, err, tc.want)
		}
	}
	// Traefik's form: every scalar a string.
	cfg, err := ConfigFromMap(map[string]interface{}{
		"providers": map[string]interface{}{"p": map[string]interface{}{"type": "openai", "models": "m1", "maxConcurrent": "4", "maxQueue": "0", "queueTimeout": "2s"}},
		"routing": map[string]interface{}{"strategy": "round-robin", "breaker": map[string]interface{}{"failureThreshold": "5"},
			"sessionAffinity": map[string]interface{}{"enabled": "true", "ttl": "1h"}},
		"firstByteDeadline": "20s",
	})
	if err != nil {
		t.Fatal(err)
	}
	compiled, err := compileConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := compiled.providers["p"].slots
	if cap(s.sem) != 4 || s.maxQueue != 0 || s.timeout != 2*time.Second || compiled.routing.strategy != strategyRoundRobin ||
		compiled.routing.breaker.threshold != 5 || !compiled.routing.affinity || compiled.routing.affinityTTL != time.Hour ||
		compiled.firstByteDeadline != 20*time.Second {
		t.Fatalf("compiled from Traefik's form: %+v %+v %v", s, compiled.routing, compiled.firstByteDeadline)
	}
}

// Native passthrough holds the provider's slot too.
func TestProviderMaxConcurrentPassthrough(t *testing.T) {
	a, arrived, release := blockingUpstream(t)
	cfg := `{"providers": {"a": {"type": "openai", "baseUrl": "` + a.URL + `", "models": ["m1"], "maxConcurrent": 1, "maxQueue": 0}},
  "groups": {"all": {}},
  "users": {"inline": [{"name": "alice", "group": "all", "apiKey": "` + testAliceKey + `"}]}}`
	srv, _ := newTestGateway(t, cfg, nil)
	done := make(chan int, 1)
	go func() {
		status, _, _ := do(t, "POST", srv.URL+"/a/v1/chat/completions", testAliceKey, m1Chat)
		done <- status
	}()
	<-arrived
	status, h, body := do(t, "POST", srv.URL+"/a/v1/chat/completions", testAliceKey, m1Chat)
	if status != 429 || h.Get("Retry-After") != "1" || !strings.Contains(body, `"code":"provider_saturated"`) {
		t.Fatalf("passthrough over the cap: %d %s", status, body)
	}
	close(release)
	if s := <-done; s != 200 {
		t.Fatalf("held passthrough: %d", s)
	}
	if status, _, _ := do(t, "POST", srv.URL+"/a/v1/chat/completions", testAliceKey, m1Chat); status != 200 {
		t.Fatalf("after the slot freed: %d", status)
	}
}

// An alias's own strategy and weights order its targets, whatever
// routing.strategy says; a list alias uses the global one.
func TestRoutingAliasStrategies(t *testing.T) {
	ups := routedUpstreams(t, 3)
	aliases := `"modelAliases": {
    "heavy": {"targets": ["a/m1", "b/m1"], "strategy": "weighted", "weights": [3, 1]},
    "pair": ["b/m1", "c/m1"]},`
	srv, _ := newTestGateway(t, routingConfig(ups, aliases), nil)
	chatModel := func(model string) {
		t.Helper()
		status, _, body := do(t, "POST", srv.URL+"/v1/chat/completions", testAliceKey, `{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`)
		if status != 200 {
			t.Fatalf("%s: %d %s", model, status, body)
		}
	}
	for i := 0; i < 40; i++ {
		chatModel("heavy")
	}
	if got := counts(ups); got[0] != 30 || got[1] != 10 || got[2] != 0 {
		t.Fatalf("weighted 3:1 alias: counts %v, want [30 10 0]", got)
	}
	resetCounts(ups)
	for i := 0; i < 4; i++ {
		chatModel("pair") // the global strategy (priority, failover off): b alone
	}
	if got := counts(ups); got[0] != 0 || got[1] != 4 || got[2] != 0 {
		t.Fatalf("priority list alias: counts %v, want [0 4 0]", got)
	}
}

// A stall (requestTimeout without a byte) fails over, also under a
// firstByteDeadline that has time left.
func TestFailoverOnStall(t *testing.T) {
	a, arrived, release := blockingUpstream(t)
	defer close(release)
	b := newRoutedUpstream(t)
	for _, extra := range []string{``, `"firstByteDeadline": "1m",`} {
		cfg := `{"failover": {"enabled": true}, ` + extra + `
  "providers": {
    "a": {"type": "openai", "baseUrl": "` + a.URL + `", "models": ["m1"], "requestTimeout": "100ms"},
    "b": {"type": "openai", "baseUrl": "` + b.URL + `", "models": ["m1"]}},
  "groups": {"all": {}},
  "users": {"inline": [{"name": "alice", "group": "all", "apiKey": "` + testAliceKey + `"}]}}`
		srv, _ := newTestGateway(t, cfg, nil)
		before := b.ok.Load()
		status, _, body := do(t, "POST", srv.URL+"/v1/chat/completions", testAliceKey, m1Chat)
		<-arrived
		if status != 200 || b.ok.Load() != before+1 {
			t.Fatalf("%s: stall did not fail over: %d %s", extra, status, body)
		}
	}
}

// A budgeted request that names no output cap reserves for the candidate
// of its walk that may write the most, not only the first.
func TestRoutingReservesForTheLargestCandidate(t *testing.T) {
	ups := routedUpstreams(t, 2)
	cfg := strings.Replace(routingConfig(ups, `"routing": {"strategy": "round-robin"},
  "modelMeta": {"a/m1": {"maxOutputTokens": 100}, "b/m1": {"maxOutputTokens": 5000}},`),
		`"all": {}`, `"all": {"limits": {"tokensPerDay": 1000}}`, 1)
	srv, _ := newTestGateway(t, cfg, nil)
	prompt := (len(m1Chat) + 3) / 4
	for i := 0; i < 2; i++ { // whichever candidate the rotation puts first
		status, _, body := chatWith(t, srv.URL, nil)
		if status != 429 || !strings.Contains(body, "this request reserves up to "+strconv.Itoa(prompt+5000)+" ") {
			t.Fatalf("turn %d: %d %s", i, status, body)
		}
	}
}
