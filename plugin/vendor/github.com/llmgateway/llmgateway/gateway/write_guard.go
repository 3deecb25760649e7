package gateway

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// writeGuard bounds how long a relay may stay blocked writing to a client
// that stopped reading (its TCP window full, the connection still open).
// The relay reads the upstream only between its writes to the client, so
// such a client stops the upstream's progress too: the watchdog then
// cuts the upstream call after requestTimeout, and the guard gives the
// client one more timeout to take what is being written, as a write
// deadline on its connection. A write still blocked then fails, the relay
// ends as if the client had left, and the request is recorded and
// accounted like any stream it ended. A client that reads, however
// slowly, keeps both the watchdog and the guard from firing; when the
// watchdog fires on a stalled upstream instead, the deadline is far
// enough away for a reading client to get the error event.
//
// The deadline needs the connection's own writer (http.ResponseController):
// where the host's writer has none (the Traefik plugin form), there is no
// guard and a blocked write lasts until the client or the host gives up.
type writeGuard struct {
	rc      *http.ResponseController
	wd      *watchdog
	release func() bool
	mu      sync.Mutex
	ended   bool
	armed   bool
}

// startWriteGuard guards the writes to w of a relay under wd; nil when w
// cannot take a write deadline.
func startWriteGuard(w http.ResponseWriter, wd *watchdog) *writeGuard {
	rc := http.NewResponseController(w)
	if rc.SetWriteDeadline(time.Time{}) != nil {
		return nil
	}
	g := &writeGuard{rc: rc, wd: wd}
	// Started once per stream, when the watchdog's context ends (a stall,
	// the client leaving, or the end of the exchange).
	g.release = context.AfterFunc(wd.ctx, func() { writeGuardFire(g) })
	return g
}

// writeGuardFire arms the deadline when the watchdog cut the upstream
// call (not when the client left or the relay ended).
func writeGuardFire(g *writeGuard) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ended || !g.wd.stalled() {
		return
	}
	g.armed = true
	_ = g.rc.SetWriteDeadline(time.Now().Add(g.wd.timeout))
}

// stopWriteGuard ends the guard when the relay is over, clearing an
// armed deadline: what the handler still writes (the end of the chunked
// body, after the account stage's store round trip) must not meet it,
// nor, on a host that does not reset it, the connection's next request.
func stopWriteGuard(g *writeGuard) {
	if g == nil {
		return
	}
	g.release()
	g.mu.Lock()
	g.ended = true
	if g.armed {
		_ = g.rc.SetWriteDeadline(time.Time{})
	}
	g.mu.Unlock()
}
