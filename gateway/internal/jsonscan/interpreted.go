package jsonscan

import (
	"runtime"
	"strings"
)

// Interpreted is true when the core runs under Yaegi (the Traefik plugin
// form) and false when it is compiled (the binary, the library, `go
// test`). A few readers have two exact implementations, one cheapest
// compiled and one cheapest interpreted, where the two costs differ by
// more than the work itself: a loop of ours costs 10–100× more
// interpreted, a standard-library call the same in both. The choice is
// made once, here, and both implementations are tested against each
// other in both modes.
//
// The test is where the runtime places this very function: compiled, in
// this file; under Yaegi, runtime.Caller reports the interpreter's own
// frame (a file of package reflect). Should a later Yaegi report our
// file, Interpreted turns false and the plugin runs the compiled form's
// readers: still exact, only slower. TestInterpretedMode (here and in
// package gateway) checks the answer against how the test itself was
// started (scripts/yaegi-unit.sh sets LLMGW_UNDER_YAEGI=1).
var Interpreted = func() bool {
	_, file, _, ok := runtime.Caller(0)
	return !ok || !strings.HasSuffix(file, "/interpreted.go")
}()
