package main

import (
	"math"
	"testing"
	"time"
)

// series builds one sample a minute: rss(i) MiB and goroutines(i).
func series(n int, rss func(i int) float64, goroutines func(i int) int) []sample {
	var out []sample
	for i := 0; i < n; i++ {
		out = append(out, sample{at: time.Duration(i) * time.Minute, rssMiB: rss(i), goroutines: goroutines(i), threads: 10})
	}
	return out
}

// wobble is deterministic noise in [-1, 1].
func wobble(i int) float64 { return math.Sin(float64(i) * 1.7) }

func TestJudge(t *testing.T) {
	flatRSS := func(i int) float64 { return 60 + 3*wobble(i) }
	flatG := func(i int) int { return 40 + int(10*wobble(i)) }
	cases := []struct {
		name        string
		samples     []sample
		rss, gorout bool // want GROWING
		tooFew      bool
	}{
		{"flat with noise", series(60, flatRSS, flatG), false, false, false},
		// A warm-up climb, then flat: the first third is not judged.
		{"warm-up then flat", series(60, func(i int) float64 {
			if i < 15 {
				return 20 + 3*float64(i)
			}
			return flatRSS(i)
		}, flatG), false, false, false},
		// Redis-restart spikes are outliers, not a trend.
		{"spikes", series(60, func(i int) float64 {
			if i%10 == 0 {
				return 120
			}
			return flatRSS(i)
		}, func(i int) int {
			if i%10 == 0 {
				return 400
			}
			return flatG(i)
		}), false, false, false},
		{"RSS leak", series(60, func(i int) float64 { return 60 + 0.5*float64(i) + wobble(i) }, flatG), true, false, false},
		{"goroutine leak", series(60, flatRSS, func(i int) int { return 40 + 2*i }), false, true, false},
		// A small absolute climb stays under the floor (8 MiB, 25).
		{"slow creep under the floor", series(60, func(i int) float64 { return 60 + 0.1*float64(i) }, func(i int) int { return 40 + i/4 }), false, false, false},
		{"too few samples", series(6, flatRSS, flatG), false, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := judge(tc.samples, true)
			if v.tooFew != tc.tooFew {
				t.Fatalf("tooFew %v, want %v", v.tooFew, tc.tooFew)
			}
			if tc.tooFew {
				return
			}
			if len(v.trends) != 2 || v.trends[0].failed != tc.rss || v.trends[1].failed != tc.gorout {
				t.Fatalf("trends %v; want RSS growing %v, goroutines growing %v", v.trends, tc.rss, tc.gorout)
			}
		})
	}
}

func TestTheilSen(t *testing.T) {
	xs := []float64{0, 1, 2, 3, 4, 5, 6}
	ys := []float64{1, 3, 5, 100, 9, 11, 13} // y = 2x + 1, one outlier
	slope, intercept := theilSen(xs, ys)
	if slope != 2 || intercept != 1 {
		t.Fatalf("slope %v, intercept %v; want 2, 1", slope, intercept)
	}
}
