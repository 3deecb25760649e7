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
	if len(w.items) >= maxWarnings {
		w.dropped++
		return
	}
	w.items = append(w.items, msg)
}
