package gateway

import (
	"os"
	"testing"

	"github.com/llmgateway/llmgateway/gateway/internal/jsonscan"
)

// The core knows whether it runs compiled or under Yaegi:
// scripts/yaegi-unit.sh, which runs these tests under `yaegi test`, says
// which through LLMGW_UNDER_YAEGI.
func TestInterpretedMode(t *testing.T) {
	want := os.Getenv("LLMGW_UNDER_YAEGI") == "1"
	if jsonscan.Interpreted != want {
		t.Fatalf("jsonscan.Interpreted = %v, but LLMGW_UNDER_YAEGI=%q", jsonscan.Interpreted, os.Getenv("LLMGW_UNDER_YAEGI"))
	}
}
