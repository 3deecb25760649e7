package main

import (
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/llmgateway/llmgateway/integration/gwproc"
)

// targetRSSBytes is the goal at 10,000 streams: 300 MB.
const targetRSSBytes = 300e6

// linearR2 is the least R² of the RSS fit for the cost to count as
// linear in the number of streams.
const linearR2 = 0.98

// fit is an ordinary least-squares line y = intercept + slope·x.
type fit struct {
	slope, intercept, r2 float64
}

func linearFit(xs, ys []float64) fit {
	n := float64(len(xs))
	if len(xs) < 2 {
		return fit{}
	}
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
		sxx += xs[i] * xs[i]
		sxy += xs[i] * ys[i]
	}
	den := n*sxx - sx*sx
	if den == 0 {
		return fit{}
	}
	f := fit{slope: (n*sxy - sx*sy) / den}
	f.intercept = (sy - f.slope*sx) / n
	mean := sy / n
	var ssRes, ssTot float64
	for i := range xs {
		d := ys[i] - (f.intercept + f.slope*xs[i])
		ssRes += d * d
		ssTot += (ys[i] - mean) * (ys[i] - mean)
	}
	f.r2 = 1
	if ssTot > 0 {
		f.r2 = 1 - ssRes/ssTot
	}
	return f
}

// fits returns the RSS fit (KiB over streams) and, with the debug build,
// the goroutine fit of a phase.
func (r *phaseResult) fits() (fit, fit, bool) {
	var xs, rss, gs []float64
	haveG := true
	for _, s := range r.samples {
		xs = append(xs, float64(s.streams))
		rss = append(rss, float64(s.proc.RSSKB))
		if s.stats == nil {
			haveG = false
		} else {
			gs = append(gs, float64(s.stats.Goroutines))
		}
	}
	f := linearFit(xs, rss)
	var g fit
	if haveG && len(gs) > 0 {
		g = linearFit(xs, gs)
	}
	return f, g, haveG && len(gs) > 0
}

// statsFit is the fit of a debug-stats figure (bytes, in KiB) over the
// steps, read after a garbage collection (live) or before it, when the
// target reports it.
func (r *phaseResult) statsFit(value func(*gwproc.DebugStats) uint64, live bool) (fit, bool) {
	var xs, ys []float64
	for _, s := range r.samples {
		st := s.stats
		if live {
			st = s.live
		}
		if st == nil {
			return fit{}, false
		}
		xs = append(xs, float64(s.streams))
		ys = append(ys, float64(value(st))/1024)
	}
	return linearFit(xs, ys), len(xs) > 1
}

func (r *phaseResult) top() *sample {
	if len(r.samples) == 0 {
		return nil
	}
	return &r.samples[len(r.samples)-1]
}

// peakRSSKB is the highest RSS at the top step, its hold included.
func (r *phaseResult) peakRSSKB() int64 {
	peak := r.top().proc.RSSKB
	for _, s := range r.held {
		if s.proc.RSSKB > peak {
			peak = s.proc.RSSKB
		}
	}
	return peak
}

func render(cfg benchConfig, results []*phaseResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Concurrent SSE streams through one process\n\n")
	fmt.Fprintf(&b, "- date: %s\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "- machine: %s/%s, %d CPUs, %s; RLIMIT_NOFILE %d\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), cfg.fdLimit)
	if cfg.debug {
		fmt.Fprintf(&b, "- gateway: the workspace's `cmd/llmgateway` built with one extra file by `go build -overlay` (a pprof and `/debug/stats` listener on its own port; the rest is `bin/llmgateway`'s code)\n")
	} else {
		fmt.Fprintf(&b, "- gateway: `%s` (no debug listener: no goroutine counts)\n", cfg.gatewayBin)
	}
	fmt.Fprintf(&b, "- bare: `httputil.ReverseProxy` with a pooled transport (this program with `-role proxy`, the same debug listener), the floor\n")
	fmt.Fprintf(&b, "- each request: a streamed chat completion with a %d-byte user message\n", cfg.promptBytes)
	if len(cfg.targetEnv) > 0 {
		fmt.Fprintf(&b, "- the measured processes' extra environment: `%s`\n", strings.Join(cfg.targetEnv, " "))
	}
	fmt.Fprintf(&b, "- upstream: a drip server in its own process; every stream gets the role chunk at once, then one content chunk every %s; h2 = HTTP/2 over TLS (streams share connections, at most 250 each), h1 = plain HTTP/1.1 (one connection per stream)\n", cfg.drip)
	fmt.Fprintf(&b, "- client: one HTTP/1.1 connection per stream from %d loopback source addresses, %d opened at a time; each step samples %s after its streams are open\n", cfg.sources, cfg.parallel, cfg.settle)
	fmt.Fprintf(&b, "- live heap = heap allocated right after a forced garbage collection (read after RSS); the top step is then held %s more, sampled every %s\n", cfg.hold, cfg.settle)
	fmt.Fprintf(&b, "- per-stream KiB = slope of a least-squares line of RSS over the steps; linear = R² ≥ %.2f; Δ KiB/stream = from the previous step; target ≤ 300 MB RSS at 10,000 streams\n\n", linearR2)

	fmt.Fprintf(&b, "## Summary\n\n")
	fmt.Fprintf(&b, "| target | upstream | streams | RSS MiB | peak RSS held MiB | per stream KiB | fit intercept MiB | R² | linear | goroutines per stream | live heap per stream KiB | stacks per stream KiB | ≤ 300 MB at 10k |\n")
	fmt.Fprintf(&b, "|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---|\n")
	for _, r := range results {
		t := r.top()
		if t == nil {
			fmt.Fprintf(&b, "| %s | %s | — | — | — | — | — | — | — | — | — | — | %s |\n", r.target, r.protocol, escape(r.err))
			continue
		}
		f, g, haveG := r.fits()
		linear := "yes"
		if f.r2 < linearR2 {
			linear = "no"
		}
		gps := "—"
		if haveG {
			gps = fmt.Sprintf("%.2f", g.slope)
		}
		at10k := (f.intercept + f.slope*10000) * 1024
		verdict := "met"
		if t.streams < 10000 {
			verdict = fmt.Sprintf("projected %.0f MiB", at10k/(1<<20))
			if at10k > targetRSSBytes {
				verdict += ": missed"
			}
		} else if float64(r.peakRSSKB())*1024 > targetRSSBytes {
			verdict = "missed"
		}
		live, stacks := "—", "—"
		if lf, ok := r.statsFit(func(s *gwproc.DebugStats) uint64 { return s.HeapAlloc }, true); ok {
			live = fmt.Sprintf("%.1f", lf.slope)
		}
		if sf, ok := r.statsFit(func(s *gwproc.DebugStats) uint64 { return s.StackInuse }, false); ok {
			stacks = fmt.Sprintf("%.1f", sf.slope)
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %.1f | %.1f | %.1f | %.1f | %.4f | %s | %s | %s | %s | %s |\n",
			r.target, r.protocol, t.streams, mib(t.proc.RSSKB), mib(r.peakRSSKB()), f.slope, f.intercept/1024, f.r2, linear, gps, live, stacks, verdict)
	}

	writeRatios(&b, results)
	for _, r := range results {
		fmt.Fprintf(&b, "\n## %s, upstream %s\n\n", r.target, r.protocol)
		if r.capped != "" {
			fmt.Fprintf(&b, "%s.\n\n", capitalize(r.capped))
		}
		if r.err != "" {
			fmt.Fprintf(&b, "**FAILED: %s** (%d streams failed)\n\n", escape(r.err), r.failed)
		}
		fmt.Fprintf(&b, "| streams | RSS MiB | Δ KiB/stream | goroutines | threads | FDs | heap in use MiB | live heap MiB | stacks MiB | upstream holds | events/s | opened in s |\n")
		fmt.Fprintf(&b, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		prev := r.idle
		rows := append([]sample{r.idle}, r.samples...)
		for i, s := range append(rows, r.held...) {
			label := fmt.Sprint(s.streams)
			delta := "—"
			if i >= len(rows) {
				label = fmt.Sprintf("%d, held +%.0f s", s.streams, float64(i-len(rows)+1)*r.settle.Seconds())
			} else if s.streams > prev.streams {
				delta = fmt.Sprintf("%.1f", float64(s.proc.RSSKB-prev.proc.RSSKB)/float64(s.streams-prev.streams))
			}
			g, heap, live, stacks := "—", "—", "—", "—"
			if s.stats != nil {
				g = fmt.Sprint(s.stats.Goroutines)
				heap = fmt.Sprintf("%.1f", float64(s.stats.HeapInuse)/(1<<20))
				live = fmt.Sprintf("%.1f", float64(s.live.HeapAlloc)/(1<<20))
				stacks = fmt.Sprintf("%.1f", float64(s.stats.StackInuse)/(1<<20))
			}
			opened, events := "—", "—"
			if s.streams > 0 {
				events = fmt.Sprintf("%.0f", s.eventsPS)
				if i < len(rows) {
					opened = fmt.Sprintf("%.1f", s.openTime.Seconds())
				}
			}
			fmt.Fprintf(&b, "| %s | %.1f | %s | %s | %d | %d | %s | %s | %s | %d | %s | %s |\n",
				label, mib(s.proc.RSSKB), delta, g, s.proc.Threads, s.proc.FDs, heap, live, stacks, s.upstream, events, opened)
			if i < len(rows) {
				prev = s
			}
		}
		if r.profile != "" {
			fmt.Fprintf(&b, "\nHeap profile at the top step: `%s` (`go tool pprof -sample_index=inuse_space -top %s`).\n", r.profile, r.profile)
		}
	}
	return b.String()
}

func escape(s string) string { return strings.ReplaceAll(s, "|", "/") }

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// writeRatios compares the gateway with the bare proxy per upstream
// protocol, where both ran to the same top step.
func writeRatios(b *strings.Builder, results []*phaseResult) {
	byKey := map[string]*phaseResult{}
	seen := map[string]bool{}
	var protocols []string
	for _, r := range results {
		if r.top() == nil {
			continue
		}
		if !seen[r.protocol] {
			seen[r.protocol] = true
			protocols = append(protocols, r.protocol)
		}
		byKey[r.target+"/"+r.protocol] = r
	}
	header := false
	for _, p := range protocols {
		gw, bare := byKey["gateway/"+p], byKey["bare/"+p]
		if gw == nil || bare == nil || gw.top().streams != bare.top().streams {
			continue
		}
		if !header {
			fmt.Fprintf(b, "\n## Gateway / bare proxy\n\n| upstream | streams | RSS ratio | per-stream ratio |\n|---|---:|---:|---:|\n")
			header = true
		}
		gf, _, _ := gw.fits()
		bf, _, _ := bare.fits()
		fmt.Fprintf(b, "| %s | %d | %.2f× | %.2f× |\n", p, gw.top().streams,
			float64(gw.top().proc.RSSKB)/float64(bare.top().proc.RSSKB), gf.slope/bf.slope)
	}
}
