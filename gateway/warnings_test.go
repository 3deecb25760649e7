package gateway

import (
	"fmt"
	"strings"
	"testing"
)

func TestWarningLogCapsAndCounts(t *testing.T) {
	logs := &syncBuffer{}
	w := &warningLog{log: newLogger("t", logs)}
	for i := 0; i < maxWarnings+7; i++ {
		w.warnf("warning %d", i)
	}
	items, dropped := w.snapshot()
	if len(items) != maxWarnings || dropped != 7 {
		t.Fatalf("kept %d, dropped %d", len(items), dropped)
	}
	if items[0] != "warning 0" || items[maxWarnings-1] != fmt.Sprintf("warning %d", maxWarnings-1) {
		t.Fatalf("kept %q ... %q", items[0], items[maxWarnings-1])
	}
	if !strings.Contains(logs.String(), fmt.Sprintf("WARN warning %d", maxWarnings+6)) {
		t.Fatal("a dropped warning was not logged")
	}
}

// A bare id served by two providers is a construction warning, kept for
// the admin API, naming both providers.
func TestCollisionWarningCollected(t *testing.T) {
	cfg, err := DecodeConfigJSON([]byte(`{"providers":{
		"b":{"type":"openai","models":["shared","only-b"]},
		"a":{"type":"openai","models":["shared"]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(nil, cfg, Options{LogOutput: &syncBuffer{}})
	if err != nil {
		t.Fatal(err)
	}
	items, dropped := g.warnings.snapshot()
	if len(items) != 1 || dropped != 0 || !strings.Contains(items[0], `model "shared" is served by providers "a" and "b"`) {
		t.Fatalf("warnings %q (dropped %d)", items, dropped)
	}
}

// snapshot returns the kept warnings and how many were dropped.
func (w *warningLog) snapshot() ([]string, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, len(w.items))
	copy(out, w.items)
	return out, w.dropped
}
