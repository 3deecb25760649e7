package main

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// The upward-trend check. After the warm-up (the first third of the
// samples) a leak shows as a steady climb, while a healthy process only
// wobbles: the GC's heap goal, requests in flight at the sampling
// instant, a Redis restart's reconnects. So the slope is the Theil–Sen
// estimate (the median of the slopes between every pair of samples),
// which a few outliers cannot move, and the check is on the growth that
// slope projects over the window: a series fails when that growth is
// above both an absolute floor and a fraction of the series' median
// (a climb must matter in absolute terms and relative to the level).
const (
	warmupFraction = 1.0 / 3
	// rssGrowthFloorMiB and rssGrowthFraction: RSS may not climb more
	// than max(8 MiB, 10% of its median) over the window.
	rssGrowthFloorMiB = 8
	rssGrowthFraction = 0.10
	// goroutineGrowthFloor and goroutineGrowthFraction: goroutines may
	// not climb more than max(25, 10% of their median).
	goroutineGrowthFloor    = 25
	goroutineGrowthFraction = 0.10
	// minWindowSamples is the fewest post-warm-up samples a verdict needs.
	minWindowSamples = 6
	// maxUnexpectedFraction of the requests may end unexpectedly (a
	// timeout on a loaded machine) before the run fails.
	maxUnexpectedFraction = 0.001
)

// trend is one series' check over the post-warm-up window.
type trend struct {
	name      string
	unit      string
	slope     float64 // per minute, Theil–Sen
	intercept float64 // at minute 0 of the window's time axis
	growth    float64 // slope × window length
	limit     float64 // the growth allowed
	median    float64
	fromMin   float64 // the window, in minutes since the start
	toMin     float64
	failed    bool
}

func (t trend) String() string {
	verdict := "flat"
	if t.failed {
		verdict = "GROWING"
	}
	return fmt.Sprintf("%s: %+.3f %s/min over minutes %.1f–%.1f (Theil–Sen), %+.1f %s over the window, allowed %.1f (median %.1f): %s",
		t.name, t.slope, t.unit, t.fromMin, t.toMin, t.growth, t.unit, t.limit, t.median, verdict)
}

// verdict is the whole run's trend checks.
type verdict struct {
	trends  []trend
	tooFew  bool // too few samples after the warm-up to judge
	samples int
}

func (v verdict) err(tr *traffic) error {
	var problems []string
	if v.tooFew {
		problems = append(problems, fmt.Sprintf("only %d samples: too few after the warm-up to judge a trend (run longer or sample more often)", v.samples))
	}
	for _, t := range v.trends {
		if t.failed {
			problems = append(problems, t.String())
		}
	}
	var total, bad, refused int64
	for name, t := range tr.tallies {
		total += t.ok.Load() + t.expected.Load() + t.unexpected.Load()
		bad += t.unexpected.Load()
		if name == "limited" {
			refused = t.expected.Load()
		}
	}
	if total == 0 || float64(bad) > maxUnexpectedFraction*float64(total) {
		problems = append(problems, fmt.Sprintf("%d of %d requests ended unexpectedly (allowed %.1f%%)", bad, total, 100*maxUnexpectedFraction))
	}
	if refused == 0 {
		problems = append(problems, "the limited user was never refused with a 429")
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%s", strings.Join(problems, "; "))
}

// judge checks RSS and goroutines (threads without the debug build).
func judge(samples []sample, haveGoroutines bool) verdict {
	v := verdict{samples: len(samples)}
	from := int(float64(len(samples)) * warmupFraction)
	window := samples[from:]
	if len(window) < minWindowSamples {
		v.tooFew = true
		return v
	}
	xs := make([]float64, len(window))
	rss := make([]float64, len(window))
	gs := make([]float64, len(window))
	for i, s := range window {
		xs[i] = s.at.Minutes()
		rss[i] = s.rssMiB
		if haveGoroutines {
			gs[i] = float64(s.goroutines)
		} else {
			gs[i] = float64(s.threads)
		}
	}
	gName := "goroutines"
	if !haveGoroutines {
		gName = "threads"
	}
	v.trends = []trend{
		checkTrend("RSS", "MiB", xs, rss, rssGrowthFloorMiB, rssGrowthFraction),
		checkTrend(gName, "", xs, gs, goroutineGrowthFloor, goroutineGrowthFraction),
	}
	return v
}

func checkTrend(name, unit string, xs, ys []float64, floor, fraction float64) trend {
	slope, intercept := theilSen(xs, ys)
	t := trend{name: name, unit: unit, slope: slope, intercept: intercept, median: median(ys), fromMin: xs[0], toMin: xs[len(xs)-1]}
	t.growth = slope * (t.toMin - t.fromMin)
	t.limit = floor
	if l := fraction * t.median; l > t.limit {
		t.limit = l
	}
	t.failed = t.growth > t.limit
	return t
}

// theilSen returns the median of the pairwise slopes and the median
// intercept for it.
func theilSen(xs, ys []float64) (float64, float64) {
	var slopes []float64
	for i := range xs {
		for j := i + 1; j < len(xs); j++ {
			if dx := xs[j] - xs[i]; dx != 0 {
				slopes = append(slopes, (ys[j]-ys[i])/dx)
			}
		}
	}
	if len(slopes) == 0 {
		return 0, median(ys)
	}
	slope := median(slopes)
	intercepts := make([]float64, len(xs))
	for i := range xs {
		intercepts[i] = ys[i] - slope*xs[i]
	}
	return slope, median(intercepts)
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// summarize is the closing report: traffic per kind, faults, the trends.
func summarize(tr *traffic, rec *recorder, elapsed time.Duration, v verdict) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nsoak: %s, %d samples\n", elapsed.Round(time.Second), len(rec.samples))
	fmt.Fprintf(&b, "%-20s %9s %9s %11s\n", "kind", "ok", "expected", "unexpected")
	var total int64
	for _, k := range tr.kinds {
		t := tr.tallies[k.name]
		fmt.Fprintf(&b, "%-20s %9d %9d %11d\n", k.name, t.ok.Load(), t.expected.Load(), t.unexpected.Load())
		total += t.ok.Load() + t.expected.Load() + t.unexpected.Load()
	}
	fmt.Fprintf(&b, "requests: %d (%.1f/s); Redis restarts: %d; users-file edits: %d\n",
		total, float64(total)/elapsed.Seconds(), rec.count("redis-restart"), rec.count("users-edit"))
	for _, f := range tr.failures {
		fmt.Fprintf(&b, "  unexpected: %s\n", f)
	}
	if v.tooFew {
		fmt.Fprintf(&b, "trend: too few samples after the warm-up\n")
	}
	for _, t := range v.trends {
		fmt.Fprintf(&b, "trend %s\n", t)
	}
	return b.String()
}
