package gateway

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"time"
)

// The events feed: operational events (a rate-limit or budget refusal, a
// store outage, an upstream failure or timeout, an unpriced model, a
// full body admission, a failover), derived from each request's record
// when it ends. Every event lands in an in-process ring of eventCapacity
// (the newest overwrite the oldest); with Redis, events are also
// mirrored onto the shared list eventsKey (LPUSH + LTRIM to
// eventCapacity, bounded by size alone), so a reader through any replica
// sees every replica's. The mirror is written in the background, at most
// once per eventFlushEvery for every event of that interval, and takes
// at most eventMirrorPerSecond events per second per replica (a failure
// storm never turns into a write storm); the ring is never throttled.
// The admin API's events route reads them.

// Event kinds.
const (
	eventRateLimit = "rate_limit"
	eventBudget    = "budget"
	eventStoreDown = "store_down"
	eventUpstream  = "upstream"
	eventTimeout   = "timeout"
	eventUnpriced  = "unpriced"
	eventCapacity  = "capacity"
	eventFailover  = "failover"
)

const (
	eventRingSize        = 200
	eventsKey            = "llmgw:events"
	eventMirrorPerSecond = 50
	eventFlushEvery      = time.Second
	eventFlushTimeout    = 2 * time.Second
)

// gatewayEvent is one event, in the shape the events route answers and
// the mirror stores (JSON). Fields that do not apply to the kind are
// omitted.
type gatewayEvent struct {
	Time     string `json:"time"`
	Replica  string `json:"replica"`
	Instance string `json:"instance,omitempty"`
	User     string `json:"user,omitempty"`
	Group    string `json:"group,omitempty"`
	Model    string `json:"model,omitempty"`
	Provider string `json:"provider,omitempty"`
	Route    string `json:"route"`
	Kind     string `json:"kind"`
	Message  string `json:"message"`
	Status   int    `json:"status,omitempty"`
}

// eventStore is the shared store's list (the guarded Redis store).
type eventStore interface {
	PushList(ctx context.Context, key string, values []string, keep int) error
	ListRange(ctx context.Context, key string, n int) ([]string, error)
}

// eventFeed is the ring and the mirror.
type eventFeed struct {
	replica  string
	instance string
	now      func() time.Time
	log      *logger
	mu       sync.Mutex
	ring     [eventRingSize]gatewayEvent
	next     int // the ring slot the next event takes
	count    int // events in the ring (at most eventRingSize)
	// The mirror (nil shared: none): pending events (JSON) for the next
	// flush, this second's count for the throttle, dropped since the last
	// flush, and whether the flusher runs.
	shared  eventStore
	pending []string
	second  int64
	inSec   int
	dropped int
	running bool
}

func newEventFeed(instance string, shared eventStore, log *logger) *eventFeed {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = os.Getenv("HOSTNAME")
	}
	if host == "" {
		host = "unknown"
	}
	return &eventFeed{replica: host, instance: instance, now: time.Now, log: log, shared: shared}
}

// add records e: in the ring always, in the mirror's next flush within
// the throttle.
func (f *eventFeed) add(e gatewayEvent) {
	e.Replica = f.replica
	e.Instance = f.instance
	now := f.now()
	e.Time = now.UTC().Format(time.RFC3339Nano)
	var mirrored []byte
	if f.shared != nil {
		mirrored, _ = json.Marshal(e)
	}
	f.mu.Lock()
	f.ring[f.next] = e
	f.next = (f.next + 1) % eventRingSize
	if f.count < eventRingSize {
		f.count++
	}
	start := false
	if mirrored != nil {
		if sec := now.Unix(); sec != f.second {
			f.second = sec
			f.inSec = 0
		}
		if f.inSec < eventMirrorPerSecond {
			f.inSec++
			f.pending = append(f.pending, string(mirrored))
			start = !f.running
			f.running = f.running || start
		} else {
			f.dropped++
		}
	}
	f.mu.Unlock()
	if start {
		go f.loop()
	}
}

// recent is the ring's newest n events, newest first.
func (f *eventFeed) recent(n int) []gatewayEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n > f.count {
		n = f.count
	}
	out := make([]gatewayEvent, 0, n)
	for i := 1; i <= n; i++ {
		out = append(out, f.ring[(f.next-i+eventRingSize)%eventRingSize])
	}
	return out
}

// loop flushes the mirror every eventFlushEvery until nothing is
// pending.
func (f *eventFeed) loop() {
	defer func() {
		if r := recover(); r != nil {
			f.mu.Lock()
			f.running = false
			f.mu.Unlock()
			logBackgroundPanic(f.log, "event mirror flush", "", r)
		}
	}()
	for {
		time.Sleep(eventFlushEvery)
		if !f.flush() {
			return
		}
	}
}

// flush writes the pending events in one round trip; false when there
// were none (the flusher then stops).
func (f *eventFeed) flush() bool {
	f.mu.Lock()
	pending := f.pending
	dropped := f.dropped
	f.pending = nil
	f.dropped = 0
	if len(pending) == 0 {
		f.running = false
		f.mu.Unlock()
		return false
	}
	f.mu.Unlock()
	if dropped > 0 {
		f.log.warnf("events: %d events were not mirrored to Redis (over %d a second); the local ring has them", dropped, eventMirrorPerSecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), eventFlushTimeout)
	defer cancel()
	// LPUSH puts its last value first: pending is oldest first.
	if err := f.shared.PushList(ctx, eventsKey, pending, eventRingSize); err != nil {
		f.log.warnf("events: mirroring %d events to Redis failed: %v (the local ring has them)", len(pending), err)
	}
	return true
}

// recordEvents derives the request's events from its record.
func recordEvents(f *eventFeed, rec *requestRecord) {
	kind := eventKind(rec)
	if kind == "" {
		return
	}
	e := gatewayEvent{User: rec.user, Model: rec.model, Provider: rec.provider, Route: rec.route, Kind: kind,
		Message: rec.errorMessage, Status: rec.statusCode}
	if len(rec.groups) > 0 {
		e.Group = rec.groups[0]
	}
	switch kind {
	case eventCapacity:
		// Refused before the request was attributed to anyone.
		// (One assignment each: Yaegi loses values of a literal tuple.)
		e.User = ""
		e.Group = ""
		e.Model = ""
		e.Provider = ""
		e.Route = eventCapacity
	case eventFailover:
		e.Message = "served by " + rec.provider + "/" + rec.model + " after " + failedCandidates(rec)
	case eventRateLimit, eventBudget, eventStoreDown, eventUnpriced:
		if kind != eventUnpriced {
			e.Provider = ""
		}
	}
	f.add(e)
}

// eventKind is the record's event kind ("" none).
func eventKind(rec *requestRecord) string {
	switch rec.errorCode {
	case "":
		if len(rec.tried) > 1 && rec.tried[len(rec.tried)-1].outcome == "served" {
			return eventFailover
		}
		return ""
	case "rate_limit_exceeded":
		if strings.Contains(rec.errorMessage, " limit (") && (strings.Contains(rec.errorMessage, "tokensPer") || strings.Contains(rec.errorMessage, "costPer")) {
			return eventBudget
		}
		return eventRateLimit
	case "limits_store_unavailable":
		return eventStoreDown
	case "model_unpriced":
		return eventUnpriced
	case "capacity":
		return eventCapacity
	case "upstream_timeout":
		return eventTimeout
	}
	switch rec.errorClass {
	case "", "none", "client_cancel", "bad_request":
		return ""
	case "stall":
		return eventTimeout
	}
	return eventUpstream
}

// failedCandidates names the candidates a failover left behind.
func failedCandidates(rec *requestRecord) string {
	var names []string
	for i := 0; i+1 < len(rec.tried); i++ {
		names = append(names, rec.tried[i].candidate+" ("+rec.tried[i].outcome+")")
	}
	return strings.Join(names, ", ")
}
