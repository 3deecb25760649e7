package gateway

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/redistest"
	"github.com/llmgateway/llmgateway/gateway/internal/store"
)

// Each kind of event is derived from the request's record, with the
// fields its kind has.
func TestEventsFromRecords(t *testing.T) {
	ups := routedUpstreams(t, 2)
	cfg := strings.Replace(routingConfig(ups, `"failover": {"enabled": true}, "routing": {"breaker": {"failureThreshold": 100}},`),
		`"all": {}`, `"all": {"limits": {"requestsPerMinute": 4}}`, 1)
	g, srv, _ := serveTestGateway(t, cfg, nil, nil)
	// A failover: a answers 500, b serves.
	ups[0].fail.Store(500)
	chatWith(t, srv.URL, nil)
	// An upstream failure: both fail.
	ups[1].fail.Store(502)
	chatWith(t, srv.URL, nil)
	// Rate limited: requests 5 and on.
	ups[0].fail.Store(0)
	ups[1].fail.Store(0)
	chatWith(t, srv.URL, nil)
	chatWith(t, srv.URL, nil)
	if status, _, _ := chatWith(t, srv.URL, nil); status != 429 {
		t.Fatalf("fifth request: %d, want the rate limit", status)
	}
	got := g.events.recent(10)
	if len(got) != 3 {
		t.Fatalf("events %+v, want 3", got)
	}
	rl, up, fo := got[0], got[1], got[2] // newest first
	if rl.Kind != eventRateLimit || rl.User != "alice" || rl.Group != "all" || rl.Status != 429 || rl.Provider != "" ||
		!strings.Contains(rl.Message, "requestsPerMinute") || rl.Route != "chat/completions" {
		t.Fatalf("rate limit event %+v", rl)
	}
	if up.Kind != eventUpstream || up.Provider != "b" || up.Model != "m1" || up.Status != 502 || up.User != "alice" {
		t.Fatalf("upstream event %+v", up)
	}
	if fo.Kind != eventFailover || fo.Provider != "b" || !strings.Contains(fo.Message, "after a/m1 (upstream_error)") || fo.Status != 200 {
		t.Fatalf("failover event %+v", fo)
	}
	if rl.Replica == "" || rl.Instance != "test" || rl.Time == "" {
		t.Fatalf("event identity %+v", rl)
	}
}

func TestEventsBudgetTimeoutUnpriced(t *testing.T) {
	a, arrived, release := blockingUpstream(t)
	defer close(release)
	b := newRoutedUpstream(t)
	cfg := `{
  "providers": {
    "a": {"type": "openai", "baseUrl": "` + a.URL + `", "models": ["slow"], "requestTimeout": "100ms"},
    "b": {"type": "openai", "baseUrl": "` + b.URL + `", "models": ["m1", "free-ish"]}},
  "pricing": {"b/m1": {"inputPerM": 1, "outputPerM": 1}, "a/slow": {"inputPerM": 1, "outputPerM": 1}},
  "groups": {"all": {"limits": {"costPerDayUSD": 1}}, "tiny": {"limits": {"tokensPerDay": 10}}},
  "users": {"inline": [
    {"name": "alice", "group": "all", "apiKey": "` + testAliceKey + `"},
    {"name": "bob", "group": "tiny", "apiKey": "sk-events-bob"}]}}`
	g, srv, _ := serveTestGateway(t, cfg, nil, nil)
	if status, _, body := do(t, "POST", srv.URL+"/v1/chat/completions", testAliceKey, `{"model":"slow","messages":[{"role":"user","content":"hi"}]}`); status != 502 {
		t.Fatalf("stalled upstream: %d %s", status, body)
	}
	<-arrived
	do(t, "POST", srv.URL+"/v1/chat/completions", testAliceKey, `{"model":"free-ish","messages":[{"role":"user","content":"hi"}]}`)
	do(t, "POST", srv.URL+"/v1/chat/completions", "sk-events-bob", m1Chat)
	got := g.events.recent(3)
	if len(got) != 3 {
		t.Fatalf("events %+v", got)
	}
	if got[0].Kind != eventBudget || got[0].User != "bob" || got[0].Group != "tiny" || !strings.Contains(got[0].Message, "tokensPerDay") {
		t.Fatalf("budget event %+v", got[0])
	}
	if got[1].Kind != eventUnpriced || got[1].Status != 402 || got[1].Provider != "b" || got[1].Model != "free-ish" {
		t.Fatalf("unpriced event %+v", got[1])
	}
	if got[2].Kind != eventTimeout || got[2].Provider != "a" || got[2].Model != "slow" {
		t.Fatalf("timeout event %+v", got[2])
	}
}

// The ring keeps the newest eventRingSize events, newest first.
func TestEventRing(t *testing.T) {
	f := newEventFeed("t", nil, newLogger("t", nil))
	for i := 0; i < eventRingSize+50; i++ {
		f.add(gatewayEvent{Kind: eventUpstream, Message: strconv.Itoa(i)})
	}
	got := f.recent(1000)
	if len(got) != eventRingSize || got[0].Message != strconv.Itoa(eventRingSize+49) || got[eventRingSize-1].Message != "50" {
		t.Fatalf("ring: %d events, newest %q, oldest %q", len(got), got[0].Message, got[len(got)-1].Message)
	}
	if n := len(f.recent(5)); n != 5 {
		t.Fatalf("recent(5): %d", n)
	}
}

// With Redis the events are mirrored onto llmgw:events (newest first,
// bounded), at most eventMirrorPerSecond a second per replica; the ring
// keeps every one.
func TestEventMirrorRedis(t *testing.T) {
	r := store.NewRedis(store.RedisSettings{Address: redistest.Start(t)})
	t.Cleanup(r.Close)
	logs := &syncBuffer{}
	f := newEventFeed("t", r, newLogger("t", logs))
	fixed := time.Unix(1e9, 0)
	f.now = func() time.Time { return fixed } // every event in the same second
	for i := 0; i < eventMirrorPerSecond+10; i++ {
		f.add(gatewayEvent{Kind: eventUpstream, Message: strconv.Itoa(i), Route: "chat/completions"})
	}
	if n := len(f.recent(eventRingSize)); n != eventMirrorPerSecond+10 {
		t.Fatalf("ring holds %d", n)
	}
	ctx := context.Background()
	var n int64
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if n = int64(len(mirrored(t, r, ctx))); n == eventMirrorPerSecond {
			break
		}
	}
	if n != eventMirrorPerSecond {
		t.Fatalf("mirror holds %d, want %d (throttled)", n, eventMirrorPerSecond)
	}
	first := mirrored(t, r, ctx)[0]
	var e gatewayEvent
	if err := json.Unmarshal([]byte(first), &e); err != nil || e.Message != strconv.Itoa(eventMirrorPerSecond-1) || e.Kind != eventUpstream || e.Replica == "" {
		t.Fatalf("newest mirrored event %q: %+v %v", first, e, err)
	}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), "10 events were not mirrored") && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), "events: 10 events were not mirrored to Redis (over 50 a second)") {
		t.Fatalf("no throttle line:\n%s", logs)
	}
}

func mirrored(t *testing.T, r *store.Redis, ctx context.Context) []string {
	t.Helper()
	v, err := r.ListRange(ctx, eventsKey, eventRingSize)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
