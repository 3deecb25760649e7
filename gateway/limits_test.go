package gateway

import (
	"context"
	"io"
	"math"
	"math/rand"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/store"
	"github.com/llmgateway/llmgateway/gateway/internal/translate"
)

// Property: for any instant, every window's bucket contains it, the
// bucket id changes exactly at the window's end, and the end is the next
// bucket's start. Times are drawn across decades, with month ends, leap
// days and sub-second edges over-represented, in several time zones (a
// window is always read in UTC).
func TestWindowBucketsProperty(t *testing.T) {
	rng := rand.New(rand.NewSource(20261130))
	zones := []*time.Location{time.UTC, time.FixedZone("east", 14*3600), time.FixedZone("west", -12*3600-1800)}
	edges := []time.Time{
		time.Date(2028, 2, 29, 23, 59, 59, 999999999, time.UTC),
		time.Date(2028, 3, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2100, 2, 28, 23, 59, 59, 0, time.UTC), // 2100 is not a leap year
		time.Date(2026, 4, 30, 23, 59, 59, 500000000, time.UTC),
	}
	var samples []time.Time
	for i := 0; i < len(edges); i++ {
		samples = append(samples, edges[i], edges[i].Add(-time.Nanosecond), edges[i].Add(time.Nanosecond))
	}
	for i := 0; i < 5000; i++ {
		sec := rng.Int63n(int64(100 * 365 * 24 * 3600))
		samples = append(samples, time.Unix(946684800+sec, rng.Int63n(1e9)))
	}
	for i := 0; i < len(samples); i++ {
		at := samples[i].In(zones[i%len(zones)])
		for j := 0; j < len(countedWindows); j++ {
			w := countedWindows[j]
			start, end := w.start(at), w.end(at)
			if at.Before(start) || !at.Before(end) {
				t.Fatalf("%s: %v not in [%v, %v)", w.name, at.UTC(), start, end)
			}
			if w.bucket(at) != w.bucket(start) || w.bucket(at) != w.bucket(end.Add(-time.Nanosecond)) {
				t.Fatalf("%s: bucket of %v differs inside its window", w.name, at.UTC())
			}
			if w.bucket(end) == w.bucket(at) {
				t.Fatalf("%s: bucket does not change at the window end %v", w.name, end)
			}
			if !w.start(end).Equal(end) {
				t.Fatalf("%s: end %v is not the next window's start", w.name, end)
			}
			if w.ttl < end.Sub(start) {
				t.Fatalf("%s: retention %v shorter than the window", w.name, w.ttl)
			}
			if memoryTTL(w.ttl) < end.Sub(start) {
				t.Fatalf("%s: in-process retention %v shorter than the window %v", w.name, memoryTTL(w.ttl), end.Sub(start))
			}
		}
	}
	// Spot checks with known answers.
	leap := time.Date(2028, 2, 29, 12, 0, 0, 0, time.UTC)
	if b := monthWindow.bucket(leap); b != "202802" {
		t.Fatalf("leap month bucket %s", b)
	}
	if e := monthWindow.end(leap); !e.Equal(time.Date(2028, 3, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("leap month end %v", e)
	}
	if b := dayWindow.bucket(time.Date(2026, 11, 30, 23, 30, 0, 0, time.FixedZone("x", -3600))); b != "20261201" {
		t.Fatalf("day bucket read in UTC: %s", b)
	}
}

func scopesWith(user, group *compiledLimits) []limitScope {
	return []limitScope{{kind: "user", id: "alice", limits: user}, {kind: "group", id: "eng", limits: group}, {kind: "total", id: "all"}}
}

func TestLimiterRequestsPerMinute(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 11, 30, 10, 15, 40, 0, time.UTC)}
	l, store, _ := testLimiter(clock, true)
	scopes := scopesWith(nil, &compiledLimits{requestsPerMinute: 3})
	for i := 0; i < 3; i++ {
		if e := l.checkAndCount(context.Background(), scopes); e != nil {
			t.Fatalf("request %d refused: %v", i+1, e)
		}
	}
	e := l.checkAndCount(context.Background(), scopes)
	if e == nil || e.Status != 429 || e.RetryAfter != "20" || !strings.Contains(e.Message, `group "eng"`) || !strings.Contains(e.Message, "requestsPerMinute") {
		t.Fatalf("4th request: %+v", e)
	}
	l.async.wait()
	if store.calls.Load() != 5 {
		t.Fatalf("round trips = %d, want one per check plus one (async) rejection count", store.calls.Load())
	}
	// The next minute starts fresh.
	clock.Set(time.Date(2026, 11, 30, 10, 16, 0, 0, time.UTC))
	if e := l.checkAndCount(context.Background(), scopes); e != nil {
		t.Fatalf("next minute refused: %v", e)
	}
}

func TestLimiterScopesAreIndependent(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	l, _, _ := testLimiter(clock, true)
	group := &compiledLimits{requestsPerDay: 3}
	alice := []limitScope{{kind: "user", id: "alice", limits: &compiledLimits{requestsPerDay: 1}}, {kind: "group", id: "eng", limits: group}, {kind: "total", id: "all"}}
	bob := []limitScope{{kind: "user", id: "bob"}, {kind: "group", id: "eng", limits: group}, {kind: "total", id: "all"}}
	if e := l.checkAndCount(context.Background(), alice); e != nil {
		t.Fatal(e)
	}
	e := l.checkAndCount(context.Background(), alice)
	if e == nil || !strings.Contains(e.Message, `user "alice"`) {
		t.Fatalf("alice's second: %+v", e)
	}
	// Alice's refused request still counted toward the group (counted
	// before evaluation): bob gets the one request left.
	if e := l.checkAndCount(context.Background(), bob); e != nil {
		t.Fatalf("bob refused early: %v", e)
	}
	e = l.checkAndCount(context.Background(), bob)
	if e == nil || !strings.Contains(e.Message, `group "eng"`) || !strings.Contains(e.Message, "requestsPerDay") {
		t.Fatalf("bob's second: %+v", e)
	}
	if e.RetryAfter != "50400" {
		t.Fatalf("Retry-After %s, want the seconds to UTC midnight", e.RetryAfter)
	}
}

func TestLimiterTokenAndCostBudgets(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 2, 27, 12, 0, 0, 0, time.UTC)}
	l, store, _ := testLimiter(clock, true)
	scopes := scopesWith(&compiledLimits{tokensPerDay: 100, costPerMonthMicros: 5000000}, nil)
	ctx := context.Background()
	if e := l.checkAndCount(ctx, scopes); e != nil {
		t.Fatal(e)
	}
	before := store.calls.Load()
	l.account(ctx, scopes, translate.Usage{PromptTokens: 60, CompletionTokens: 39}, 1000000)
	if store.calls.Load() != before+1 {
		t.Fatalf("account took %d round trips, want 1", store.calls.Load()-before)
	}
	if e := l.checkAndCount(ctx, scopes); e != nil {
		t.Fatalf("99 of 100 tokens used: refused %v", e)
	}
	// This request pushes the day over: it was admitted (overshoot by at
	// most one request), the next one is refused.
	l.account(ctx, scopes, translate.Usage{PromptTokens: 0, CompletionTokens: 50}, 1000000)
	e := l.checkAndCount(ctx, scopes)
	if e == nil || !strings.Contains(e.Message, "tokensPerDay") || !strings.Contains(e.Message, "tokens") {
		t.Fatalf("over the token budget: %+v", e)
	}
	// The next day the token budget is fresh; the month cost is not.
	clock.Set(time.Date(2026, 2, 28, 0, 0, 1, 0, time.UTC))
	if e := l.checkAndCount(ctx, scopes); e != nil {
		t.Fatalf("next day refused: %v", e)
	}
	l.account(ctx, scopes, translate.Usage{PromptTokens: 1}, 3000000)
	e = l.checkAndCount(ctx, scopes)
	if e == nil || !strings.Contains(e.Message, "costPerMonthUSD") || !strings.Contains(e.Message, "$5") {
		t.Fatalf("over the cost budget: %+v", e)
	}
	if e.RetryAfter != "86399" {
		t.Fatalf("Retry-After %s, want the seconds to March", e.RetryAfter)
	}
	// A month budget is a calendar month even on the in-process store,
	// whose keys are otherwise capped at 48h: still refused 2 days on.
	clock.Set(time.Date(2026, 2, 28, 23, 59, 0, 0, time.UTC))
	if e := l.checkAndCount(ctx, scopes); e == nil {
		t.Fatal("month budget forgotten within the month")
	}
	clock.Set(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	if e := l.checkAndCount(ctx, scopes); e != nil {
		t.Fatalf("new month refused: %v", e)
	}
}

func TestLimiterOneRoundTripWhateverTheScopes(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	l, store, _ := testLimiter(clock, true)
	lim := &compiledLimits{requestsPerMinute: 100, tokensPerDay: 1000, costPerDayMicros: 1000}
	scopes := []limitScope{{kind: "user", id: "u", limits: lim}}
	for i := 0; i < 6; i++ {
		scopes = append(scopes, limitScope{kind: "group", id: "g" + string(rune('a'+i)), limits: lim})
	}
	scopes = append(scopes, limitScope{kind: "total", id: "all"})
	if e := l.checkAndCount(context.Background(), scopes); e != nil {
		t.Fatal(e)
	}
	l.account(context.Background(), scopes, translate.Usage{PromptTokens: 3, CompletionTokens: 4}, 7)
	if store.calls.Load() != 2 {
		t.Fatalf("round trips = %d for 8 scopes, want 2 (check + account)", store.calls.Load())
	}
}

func TestLimiterFailOpenAndClosed(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	scopes := scopesWith(nil, &compiledLimits{requestsPerMinute: 2})

	l, store, fallback := testLimiter(clock, true)
	store.fail.Store(true)
	for i := 0; i < 2; i++ {
		if e := l.checkAndCount(context.Background(), scopes); e != nil {
			t.Fatalf("fail-open request %d: %v", i, e)
		}
	}
	// The fallback still enforces.
	if e := l.checkAndCount(context.Background(), scopes); e == nil || e.Status != 429 {
		t.Fatalf("fallback did not enforce: %+v", e)
	}
	key := counterKey("total", "all", "req", minuteWindow, clock.Now())
	if _, got, _ := fallback.Apply(context.Background(), nil, []string{key}); got[0] != 3 {
		t.Fatalf("in-process count %d, want 3 (the refused request counts too)", got[0])
	}

	l2, store2, _ := testLimiter(clock, false)
	store2.fail.Store(true)
	e := l2.checkAndCount(context.Background(), scopes)
	if e == nil || e.Status != 503 || e.RetryAfter == "" {
		t.Fatalf("fail-closed: %+v", e)
	}
	store2.fail.Store(false)
	if e := l2.checkAndCount(context.Background(), scopes); e != nil {
		t.Fatalf("after recovery: %v", e)
	}
}

func TestCompileLimitsErrors(t *testing.T) {
	cases := []struct {
		lc   LimitsConfig
		want string
	}{
		{LimitsConfig{RequestsPerMinute: -1}, "g.requestsPerMinute: -1"},
		{LimitsConfig{TokensPerMonth: -5}, "g.tokensPerMonth: -5"},
		{LimitsConfig{CostPerDayUSD: -0.01}, "g.costPerDayUSD"},
		{LimitsConfig{CostPerDayUSD: math.NaN()}, "g.costPerDayUSD: NaN"},
		{LimitsConfig{CostPerMonthUSD: math.Inf(1)}, "g.costPerMonthUSD: +Inf"},
		{LimitsConfig{CostPerMonthUSD: math.Inf(-1)}, "g.costPerMonthUSD: -Inf"},
	}
	for _, tc := range cases {
		lc := tc.lc
		if _, err := compileLimits("g", &lc); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err %v, want %q", tc.lc, err, tc.want)
		}
	}
	l, err := compileLimits("g", &LimitsConfig{CostPerDayUSD: 1.25, RequestsPerMinute: 5})
	if err != nil || l.costPerDayMicros != 1250000 || l.requestsPerMinute != 5 {
		t.Fatalf("%+v %v", l, err)
	}
	// Through the config: a group's and a user's limits are validated.
	_, err = newGatewayFromConfig(t, `{"providers":{"p":{"type":"openai","baseUrl":"http://127.0.0.1:1"}},
		"groups":{"eng":{"limits":{"requestsPerDay":-2}}}}`)
	if err == nil || !strings.Contains(err.Error(), "groups.eng.limits.requestsPerDay: -2") {
		t.Fatalf("group limits: %v", err)
	}
	_, err = newGatewayFromConfig(t, `{"providers":{"p":{"type":"openai","baseUrl":"http://127.0.0.1:1"}},
		"groups":{"eng":{}},"users":{"inline":[{"name":"a","group":"eng","apiKey":"k","limits":{"costPerMonthUSD":-1}}]}}`)
	if err == nil || !strings.Contains(err.Error(), "users.inline[0] (a).limits.costPerMonthUSD") {
		t.Fatalf("user limits: %v", err)
	}
}

// The provider success-rate counts are aggregated in process: every
// attempt recorded before wait lands in the store in ONE batch, each in
// its own minute's buckets, summed per provider (passthrough included)
// and per provider/model, with no fail key where nothing failed.
func TestAttemptCountsAggregate(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 11, 30, 10, 14, 59, 0, time.UTC)}
	l, st, _ := testLimiter(clock, true)
	rec := &recordingStore{inner: st.inner}
	st.inner = rec
	l.async.every = time.Hour // only wait flushes, so the round trips are exact
	l.recordAttempt("p", "m1", false)
	l.recordAttempt("p", "m1", true)
	l.recordAttempt("p", "m1", false)
	l.recordAttempt("p", "", true)
	l.recordAttempt("q", "m2", false)
	l.recordAttempt("q", "m2", false)
	first := clock.Now()
	clock.Set(time.Date(2026, 11, 30, 10, 15, 0, 0, time.UTC))
	l.recordAttempt("p", "m1", true)
	second := clock.Now()
	l.async.wait()
	if n := st.calls.Load(); n != 1 {
		t.Fatalf("round trips = %d, want 1 for every pending attempt", n)
	}
	min1, min2, day := minuteWindow.bucket(first), minuteWindow.bucket(second), dayWindow.bucket(first)
	keys := []string{
		"llmgw:prov:p:attempt:min:" + min1, "llmgw:prov:p:fail:min:" + min1,
		"llmgw:prov:p:attempt:min:" + min2, "llmgw:prov:p:fail:min:" + min2,
		"llmgw:prov:p:attempt:day:" + day, "llmgw:prov:p:fail:day:" + day,
		"llmgw:provmodel:p/m1:attempt:min:" + min1, "llmgw:provmodel:p/m1:fail:min:" + min1,
		"llmgw:provmodel:p/m1:attempt:day:" + day, "llmgw:provmodel:p/m1:fail:day:" + day,
		"llmgw:prov:q:attempt:day:" + day, "llmgw:provmodel:q/m2:attempt:min:" + min1,
		"llmgw:provmodel:p/:attempt:day:" + day,
	}
	_, got, _ := l.counters.Apply(context.Background(), nil, keys)
	want := []int64{4, 2, 1, 1, 5, 3, 3, 1, 4, 2, 2, 2, 0}
	for i := 0; i < len(want); i++ {
		if got[i] != want[i] {
			t.Errorf("%s = %d, want %d", keys[i], got[i], want[i])
		}
	}
	// No fail counter is written where nothing failed.
	for _, k := range rec.keys() {
		if strings.Contains(k, "q:fail") || strings.Contains(k, "q/m2:fail") {
			t.Errorf("wrote %s", k)
		}
	}
	// Nothing pending: wait writes nothing.
	before := st.calls.Load()
	l.async.wait()
	if n := st.calls.Load(); n != before {
		t.Fatalf("an empty flush took %d round trips", n-before)
	}
}

// The background flush writes the counts without anyone waiting, and its
// goroutine exits once nothing is pending.
func TestAttemptCountsFlushInBackground(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	primary := &recordingStore{inner: newMemoryStore(clock.Now), applied: make(chan int, 4)}
	l := newLimiter(primary, nil, false, clock.Now, newLogger("test", io.Discard))
	l.async.every = time.Millisecond
	l.recordAttempt("p", "m1", false)
	if n := <-primary.applied; n != 4 {
		t.Fatalf("the flush wrote %d counters, want 4", n)
	}
	for {
		l.async.mu.Lock()
		running := l.async.running
		l.async.mu.Unlock()
		if !running {
			break
		}
		runtime.Gosched()
	}
	_, got, _ := primary.inner.Apply(context.Background(), nil, []string{"llmgw:provmodel:p/m1:attempt:min:" + minuteWindow.bucket(clock.Now())})
	if got[0] != 1 {
		t.Fatalf("attempt counter = %d", got[0])
	}
}

// recordingStore records every increment's key and, when applied is
// set, reports each Apply's increment count on it.
type recordingStore struct {
	inner   store.Counter
	applied chan int
	mu      sync.Mutex
	written []string
}

func (s *recordingStore) Apply(ctx context.Context, incrs []store.Incr, gets []string) ([]int64, []int64, error) {
	s.mu.Lock()
	for i := 0; i < len(incrs); i++ {
		s.written = append(s.written, incrs[i].Key)
	}
	s.mu.Unlock()
	a, b, err := s.inner.Apply(ctx, incrs, gets)
	if s.applied != nil {
		s.applied <- len(incrs)
	}
	return a, b, err
}

func (s *recordingStore) keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.written...)
}

// limitsGateway serves one openai provider with the given groups/users
// JSON and a settable clock; it returns the gateway's in-process store.
func limitsGateway(t *testing.T, upURL, groupsUsers string, clock *fakeClock) (string, *Gateway) {
	t.Helper()
	cfg := `{"providers": {"mock": {"type": "openai", "baseUrl": "` + upURL + `", "apiKey": "` + testProviderKey + `", "models": ["m1"]}},` + groupsUsers + `}`
	g, srv, _ := serveTestGateway(t, cfg, nil, func(g *Gateway) {
		g.limiter.now = clock.Now
	})
	return srv.URL, g
}

func TestLimitsOverHTTP(t *testing.T) {
	up := newFakeUpstream(t, okJSON(chatOK)) // 11 prompt + 7 completion tokens
	clock := &fakeClock{now: time.Date(2026, 11, 30, 10, 0, 30, 0, time.UTC)}
	// Bob's requests reserve their prompt estimate plus max_tokens; his
	// budget fits that after one answer (18 tokens), not after two.
	bobReq := `{"model":"m1","max_tokens":7,"messages":[{"role":"user","content":"hi"}]}`
	bobBudget := strconv.Itoa(18 + (len(bobReq)+3)/4 + 7 + 17)
	base, g := limitsGateway(t, up.URL, `
  "groups": {"eng": {"limits": {"requestsPerMinute": 2}}, "free": {"limits": {"tokensPerDay": `+bobBudget+`}}},
  "users": {"inline": [
    {"name": "alice", "group": "eng", "apiKey": "`+testAliceKey+`"},
    {"name": "bob", "group": "free", "apiKey": "`+testBobKey+`"}]}`, clock)
	for i := 0; i < 2; i++ {
		if status, _, body := do(t, "POST", base+"/v1/chat/completions", testAliceKey, chatReq); status != 200 {
			t.Fatalf("alice %d: %d %s", i, status, body)
		}
	}
	status, hdr, body := do(t, "POST", base+"/v1/chat/completions", testAliceKey, chatReq)
	if status != 429 || hdr.Get("Retry-After") != "30" || !strings.Contains(body, `group \"eng\"`) || !strings.Contains(body, "requestsPerMinute") {
		t.Fatalf("alice 3rd: %d Retry-After %q %s", status, hdr.Get("Retry-After"), body)
	}
	if up.count() != 2 {
		t.Fatalf("a refused request reached the upstream")
	}
	// Bob: 18 tokens per answer; the third request's reservation does
	// not fit what is left.
	for i := 0; i < 2; i++ {
		if status, _, body := do(t, "POST", base+"/v1/chat/completions", testBobKey, bobReq); status != 200 {
			t.Fatalf("bob %d: %d %s", i, status, body)
		}
	}
	status, hdr, body = do(t, "POST", base+"/v1/chat/completions", testBobKey, bobReq)
	wantMsg := `group \"free\" is over its tokensPerDay limit (` + bobBudget + ` tokens): this request reserves up to 26 (prompt estimate + output cap); 36 used, 0 reserved by requests in flight`
	if status != 429 || !strings.Contains(body, wantMsg) || hdr.Get("Retry-After") != "50370" {
		t.Fatalf("bob 3rd: %d Retry-After %q %s\nwant message %s", status, hdr.Get("Retry-After"), body, wantMsg)
	}
	// Prompt and completion tokens are kept apart, in every scope.
	now := clock.Now()
	keys := []string{
		counterKey("user", "bob", "tokin", dayWindow, now), counterKey("user", "bob", "tokout", dayWindow, now),
		counterKey("group", "free", "tokin", monthWindow, now), counterKey("total", "all", "tokout", hourWindow, now),
		counterKey("total", "all", "req", minuteWindow, now), counterKey("user", "alice", "req", dayWindow, now),
	}
	_, got, _ := g.limiter.counters.Apply(context.Background(), nil, keys)
	want := []int64{22, 14, 22, 28, 6, 3}
	for i := 0; i < len(want); i++ {
		if got[i] != want[i] {
			t.Errorf("%s = %d, want %d", keys[i], got[i], want[i])
		}
	}
	g.limiter.async.wait()
	_, rej, _ := g.limiter.counters.Apply(context.Background(), nil, []string{
		counterKey("group", "eng", "rej", dayWindow, now), counterKey("total", "all", "rej", dayWindow, now),
		"llmgw:prov:mock:attempt:min:" + minuteWindow.bucket(now), "llmgw:provmodel:mock/m1:fail:day:" + dayWindow.bucket(now),
		counterKey("user", "alice", "rej", dayWindow, now), counterKey("user", "bob", "rej", hourWindow, now)})
	// A refusal counts in every scope of the request (user, groups,
	// total), whichever scope refused it.
	if rej[0] != 1 || rej[1] != 2 || rej[2] != 4 || rej[3] != 0 || rej[4] != 1 || rej[5] != 1 {
		t.Fatalf("rejections/success counters = %v, want [1 2 4 0 1 1]", rej)
	}
}

func TestProviderSuccessRates(t *testing.T) {
	up := scriptedUpstream(t, okJSON(chatOK), statusReply(503, ""), statusReply(400, ""), http.HandlerFunc(hangUp), okJSON(`{}`))
	clock := &fakeClock{now: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	base, g := limitsGateway(t, up.URL, `"groups": {"all": {}}, "users": {"inline": [{"name": "alice", "group": "all", "apiKey": "`+testAliceKey+`"}]}`, clock)
	for i := 0; i < 4; i++ {
		do(t, "POST", base+"/v1/chat/completions", testAliceKey, chatReq)
	}
	send(t, base, testRequest{method: "GET", path: "/mock/v1/models", headers: bearer(testAliceKey)})
	g.limiter.async.wait()
	now := clock.Now()
	day := dayWindow.bucket(now)
	_, got, _ := g.limiter.counters.Apply(context.Background(), nil, []string{
		"llmgw:prov:mock:attempt:day:" + day, "llmgw:prov:mock:fail:day:" + day,
		"llmgw:provmodel:mock/m1:attempt:day:" + day, "llmgw:provmodel:mock/m1:fail:day:" + day,
	})
	// 5 attempts (4 unified + 1 passthrough); failures: the 503 and the
	// hang-up (the 400 is the request's fault, not the provider's); the
	// passthrough writes no provider/model counter.
	want := []int64{5, 2, 4, 2}
	for i := 0; i < len(want); i++ {
		if got[i] != want[i] {
			t.Fatalf("counters = %v, want %v", got, want)
		}
	}
}

func TestCostBudgetsAndPricing(t *testing.T) {
	up := newFakeUpstream(t, okJSON(chatOK)) // 11 prompt + 7 completion tokens
	clock := &fakeClock{now: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	users := `"groups": {"paid": {"limits": {"costPerDayUSD": 2}}, "open": {}},
  "users": {"inline": [{"name": "alice", "group": "paid", "apiKey": "` + testAliceKey + `"}, {"name": "bob", "group": "open", "apiKey": "` + testBobKey + `"}]}`

	// Unpriced model + a cost budget: 402, on the unified route and on a
	// passthrough body that names the model; no budget: served.
	base, _ := limitsGateway(t, up.URL, users, clock)
	status, _, body := do(t, "POST", base+"/v1/chat/completions", testAliceKey, chatReq)
	if status != 402 || !strings.Contains(body, "model_unpriced") || !strings.Contains(body, "allowUnpricedWithCostBudget") {
		t.Fatalf("unpriced with budget: %d %s", status, body)
	}
	resp, body := send(t, base, testRequest{method: "POST", path: "/mock/v1/chat/completions", headers: bearer(testAliceKey), body: chatReq})
	if resp.StatusCode != 402 {
		t.Fatalf("passthrough unpriced with budget: %d %s", resp.StatusCode, body)
	}
	if status, _, _ := do(t, "POST", base+"/v1/chat/completions", testBobKey, chatReq); status != 200 {
		t.Fatalf("no budget: %d", status)
	}
	if up.count() != 1 {
		t.Fatalf("refused requests reached the upstream: %d", up.count())
	}

	// allowUnpricedWithCostBudget serves it (billed 0).
	base2, _ := limitsGateway(t, up.URL, `"allowUnpricedWithCostBudget": true, `+users, clock)
	if status, _, body := do(t, "POST", base2+"/v1/chat/completions", testAliceKey, chatReq); status != 200 {
		t.Fatalf("allowUnpriced: %d %s", status, body)
	}

	// Priced by an override: cost accounted in micro-USD, budget enforced.
	// A request reserves 19 prompt-estimate tokens × $0.02 + max_tokens 7
	// × $0.06 = $0.80; it fits $2 after one answer ($0.64), not after two.
	cappedReq := `{"model":"m1","max_tokens":7,"messages":[{"role":"user","content":"hi"}]}`
	base3, g3 := limitsGateway(t, up.URL, `"pricing": {"mock/m1": {"inputPerM": 20000, "outputPerM": 60000}}, `+users, clock)
	if status, _, body := do(t, "POST", base3+"/v1/chat/completions", testAliceKey, cappedReq); status != 200 {
		t.Fatalf("priced: %d %s", status, body)
	}
	// 11 × $0.02 + 7 × $0.06 = $0.64
	_, got, _ := g3.limiter.counters.Apply(context.Background(), nil, []string{counterKey("group", "paid", "cost", dayWindow, clock.Now())})
	if got[0] != 640000 {
		t.Fatalf("cost = %d micro-USD, want 640000", got[0])
	}
	if status, _, _ := do(t, "POST", base3+"/v1/chat/completions", testAliceKey, cappedReq); status != 200 {
		t.Fatal("second request under budget refused")
	}
	status, _, body = do(t, "POST", base3+"/v1/chat/completions", testAliceKey, cappedReq)
	if status != 429 || !strings.Contains(body, `over its costPerDayUSD limit ($2 cost): this request reserves up to $0.8 (prompt estimate + output cap); $1.28 used`) {
		t.Fatalf("over the cost budget: %d %s", status, body)
	}
	// Pricing overrides are validated at construction.
	_, err := newGatewayFromConfig(t, `{"pricing": {"x": {"inputPerM": -1}}, "providers": {"p": {"type": "openai", "baseUrl": "http://127.0.0.1:1"}}}`)
	if err == nil || !strings.Contains(err.Error(), "inputPerM") {
		t.Fatalf("bad pricing: %v", err)
	}
}

// Media routes are request-counted only: an unpriced image model is served
// to a caller with a cost budget, and moves no token or cost counter.
func TestMediaRoutesNeedNoPrice(t *testing.T) {
	up := newFakeUpstream(t, okJSON(`{"created":1,"data":[]}`))
	clock := &fakeClock{now: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	cfg := `{"providers": {"mock": {"type": "openai", "baseUrl": "` + up.URL + `", "apiKey": "k", "models": ["img-x"]}},
  "groups": {"paid": {"limits": {"costPerDayUSD": 1, "requestsPerDay": 1}}},
  "users": {"inline": [{"name": "alice", "group": "paid", "apiKey": "` + testAliceKey + `"}]}}`
	g, srv, _ := serveTestGateway(t, cfg, nil, func(g *Gateway) { g.limiter.now = clock.Now })
	if status, _, body := do(t, "POST", srv.URL+"/v1/images/generations", testAliceKey, `{"model":"img-x","prompt":"p"}`); status != 200 {
		t.Fatalf("unpriced image model: %d %s", status, body)
	}
	// ... but it is request-counted: the day's one request is used up.
	if status, _, _ := do(t, "POST", srv.URL+"/v1/images/generations", testAliceKey, `{"model":"img-x","prompt":"p"}`); status != 429 {
		t.Fatalf("second image request: %d, want 429", status)
	}
	_, got, _ := g.limiter.counters.Apply(context.Background(), nil, []string{counterKey("group", "paid", "cost", dayWindow, clock.Now()), counterKey("group", "paid", "tokin", dayWindow, clock.Now())})
	if got[0] != 0 || got[1] != 0 {
		t.Fatalf("media moved cost/tokens: %v", got)
	}
}

// A passthrough body that names a priced model is cost-accounted.
func TestPassthroughCostAccounted(t *testing.T) {
	up := newFakeUpstream(t, okJSON(chatOK)) // 11 + 7 tokens
	clock := &fakeClock{now: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	cfg := `{"pricing": {"mock/m1": {"inputPerM": 1, "outputPerM": 2}},
  "providers": {"mock": {"type": "openai", "baseUrl": "` + up.URL + `", "apiKey": "k", "models": ["m1"]}},
  "groups": {"paid": {"limits": {"costPerDayUSD": 5}}},
  "users": {"inline": [{"name": "alice", "group": "paid", "apiKey": "` + testAliceKey + `"}]}}`
	g, srv, _ := serveTestGateway(t, cfg, nil, func(g *Gateway) { g.limiter.now = clock.Now })
	resp, body := send(t, srv.URL, testRequest{method: "POST", path: "/mock/v1/chat/completions", headers: bearer(testAliceKey), body: chatReq})
	if resp.StatusCode != 200 || body != chatOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	_, got, _ := g.limiter.counters.Apply(context.Background(), nil, []string{counterKey("group", "paid", "cost", dayWindow, clock.Now())})
	if got[0] != 25 { // 11 × 1 + 7 × 2 micro-USD
		t.Fatalf("passthrough cost = %d micro-USD, want 25", got[0])
	}
}

// counterKey is the key format spelled out independently of
// limitScope.key, as the tests' oracle: llmgw:{kind}:{id}:{metric}:{window}:{bucket}. ':' in an
// id is escaped so two scopes can never share a key.
func counterKey(kind, id, metric string, w *window, t time.Time) string {
	return scopePrefix(kind, id) + metric + ":" + w.name + ":" + w.bucket(t)
}

// The per-minute key cache of a scope set: a new minute gets new keys
// (and new hour/day/month buckets at their edges), and a different
// slice headed by the same scope never reuses another slice's keys.
func TestLimiterKeyCache(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 11, 30, 23, 59, 59, 0, time.UTC)}
	l, _, _ := testLimiter(clock, true)
	scopes := []limitScope{newLimitScope("user", "a:b", nil), newLimitScope("group", "g", nil), newLimitScope("total", "all", nil)}
	u := translate.Usage{PromptTokens: 3, CompletionTokens: 2}
	before := clock.Now()
	if e := l.checkAndCount(context.Background(), scopes); e != nil {
		t.Fatal(e)
	}
	l.account(context.Background(), scopes, u, 7)
	clock.Set(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	after := clock.Now()
	if e := l.checkAndCount(context.Background(), scopes[:2]); e != nil {
		t.Fatal(e)
	}
	l.account(context.Background(), scopes[:2], translate.Usage{PromptTokens: 1}, 0)
	if e := l.checkAndCount(context.Background(), scopes); e != nil {
		t.Fatal(e)
	}
	keys := []string{
		counterKey("user", "a:b", "req", minuteWindow, before), counterKey("user", "a:b", "req", minuteWindow, after),
		counterKey("total", "all", "req", monthWindow, before), counterKey("total", "all", "req", monthWindow, after),
		counterKey("group", "g", "tokin", dayWindow, before), counterKey("group", "g", "tokin", dayWindow, after),
		counterKey("total", "all", "tokin", dayWindow, after), counterKey("total", "all", "cost", hourWindow, before),
		counterKey("user", "a:b", "tokout", monthWindow, before), counterKey("user", "a:b", "req", dayWindow, after),
	}
	_, got, _ := l.counters.Apply(context.Background(), nil, keys)
	want := []int64{1, 2, 1, 1, 3, 1, 0, 7, 2, 2}
	for i := 0; i < len(want); i++ {
		if got[i] != want[i] {
			t.Errorf("%s = %d, want %d", keys[i], got[i], want[i])
		}
	}
}
