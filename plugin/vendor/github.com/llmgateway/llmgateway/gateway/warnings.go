package gateway

import (
	"fmt"
	"sync"
)

// maxWarnings caps the construction warnings kept for the admin API;
// later ones are counted, not kept (they are still logged).
const maxWarnings = 50

// warningLog collects the warnings raised while building a gateway
// (model collisions and the like): each is logged and kept, up to
// maxWarnings, with a count of the ones dropped past the cap.
type warningLog struct {
	mu      sync.Mutex
	log     *logger
	items   []string
	dropped int
	once    map[string]bool
	// sealed: construction is over; later warnings are only logged (the
	// admin API reports construction warnings only).
	sealed bool
}

// seal ends the collection (New calls it as it returns).
func (w *warningLog) seal() {
	w.mu.Lock()
	w.sealed = true
	w.mu.Unlock()
}

// collected is a copy of the kept warnings (never nil) and the count
// dropped past maxWarnings.
func (w *warningLog) collected() ([]string, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, len(w.items))
	copy(out, w.items)
	return out, w.dropped
}

// warnOnce is warnf, at most once per key over the gateway's lifetime.
func (w *warningLog) warnOnce(key, format string, args ...interface{}) {
	w.mu.Lock()
	if w.once == nil {
		w.once = map[string]bool{}
	}
	seen := w.once[key]
	w.once[key] = true
	w.mu.Unlock()
	if !seen {
		w.warnf(format, args...)
	}
}

// warnf logs a warning and keeps it.
func (w *warningLog) warnf(format string, args ...interface{}) {
	msg := fmt.Sprintf(format, args...)
	w.log.warnf("%s", msg)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.sealed {
		return
	}
	if len(w.items) >= maxWarnings {
		w.dropped++
		return
	}
	w.items = append(w.items, msg)
}
