package gateway

import (
	"os"
	"testing"
)

// The core knows whether it runs compiled or under Yaegi:
// scripts/yaegi-unit.sh, which runs these tests under `yaegi test`, says
// which through LLMGW_UNDER_YAEGI.
func TestInterpretedMode(t *testing.T) {
	want := os.Getenv("LLMGW_UNDER_YAEGI") == "1"
	if interpreted != want {
		t.Fatalf("interpreted = %v, but LLMGW_UNDER_YAEGI=%q", interpreted, os.Getenv("LLMGW_UNDER_YAEGI"))
	}
}
