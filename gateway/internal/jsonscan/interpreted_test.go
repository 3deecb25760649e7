package jsonscan

import (
	"os"
	"testing"
)

// scripts/yaegi-unit.sh, which runs these tests under `yaegi test`, says
// through LLMGW_UNDER_YAEGI that they are interpreted.
func TestInterpretedMode(t *testing.T) {
	want := os.Getenv("LLMGW_UNDER_YAEGI") == "1"
	if Interpreted != want {
		t.Fatalf("Interpreted = %v, but LLMGW_UNDER_YAEGI=%q", Interpreted, os.Getenv("LLMGW_UNDER_YAEGI"))
	}
}
