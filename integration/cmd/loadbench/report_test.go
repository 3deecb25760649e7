package main

import (
	"math"
	"testing"
	"time"
)

func TestSpreadOf(t *testing.T) {
	if s := spreadOf([]float64{3, 1, 2}); s.med != 2 || s.lo != 1 || s.hi != 3 || s.n != 3 {
		t.Fatalf("odd count: %+v", s)
	}
	if s := spreadOf([]float64{4, 1, 2, 3}); s.med != 2.5 || s.lo != 1 || s.hi != 4 {
		t.Fatalf("even count: %+v", s)
	}
	if got := fmtSpread(spreadOf([]float64{0.1, 0.3, 0.2}), "%+.1f"); got != "+0.2 (+0.1 … +0.3)" {
		t.Fatalf("fmtSpread = %q", got)
	}
	if got := fmtSpread(spread{}, "%.1f"); got != "—" {
		t.Fatalf("empty: %q", got)
	}
}

// Per-round pairs: a difference is taken only in rounds where both ran;
// an added-latency ratio whose base added nothing is left out.
func TestRoundIndexPairsRounds(t *testing.T) {
	run := func(tg string, round int, p50 time.Duration) *runResult {
		return &runResult{scenario: "chat", concurrency: 1, target: tg, round: round, ok: 1, elapsed: time.Second, latencies: []time.Duration{p50}}
	}
	idx := indexRounds([]*runResult{
		run(tDirect, 0, 1*time.Millisecond), run(tBare, 0, 2*time.Millisecond), run(tGateway, 0, 3*time.Millisecond),
		run(tDirect, 1, 1*time.Millisecond), run(tBare, 1, 1*time.Millisecond), run(tGateway, 1, 4*time.Millisecond),
		run(tGateway, 2, 9*time.Millisecond),
	})
	diff := idx.over("chat", 1, tGateway, tBare, func(r, o *runResult) float64 { return p50(r) - p50(o) })
	if diff.n != 2 || diff.lo != 1 || diff.hi != 3 {
		t.Fatalf("differences %+v, want rounds 0 and 1 only (1 and 3 ms)", diff)
	}
	ratio := idx.over("chat", 1, tGateway, tBare, func(r, o *runResult) float64 { return addedRatio(idx, r, o, p50) })
	if ratio.n != 1 || math.Abs(ratio.med-2) > 1e-9 {
		t.Fatalf("added ratios %+v, want round 0's 2× alone", ratio)
	}
}

func TestParseStraceSummary(t *testing.T) {
	out := `% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 45.00    0.010000           2      5000           write
 30.00    0.006000           1      4200       300 read
------ ----------- ----------- --------- --------- ----------------
100.00    0.016000           1      9200       300 total
`
	c := parseStraceSummary(out)
	if c["write"] != 5000 || c["read"] != 4200 || c["total"] != 9200 {
		t.Fatalf("parsed %v", c)
	}
	s := straceResult{requests: 1000, calls: c}
	if s.perRequest("write") != 5 {
		t.Fatalf("write per request %v", s.perRequest("write"))
	}
}
