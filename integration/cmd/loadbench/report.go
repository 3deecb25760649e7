package main

import (
	"fmt"
	"math"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The default mode's report: medians over the rounds, the streams
// against the bare proxy (the gateway's targets), before/after against a
// baseline binary, syscalls per request.

// Stream targets against the bare proxy, measured in the same run: a
// same-shape stream's first byte within sameShapeFirstByte of the bare
// proxy's and its total time within sameShapeTotal times it; a
// translated stream's first byte within translatedFirstByte.
const (
	sameShapeFirstByte  = 0.2 // ms
	sameShapeTotal      = 1.1 // ×
	translatedFirstByte = 0.5 // ms
)

// spread is a median over the rounds and its range.
type spread struct {
	med, lo, hi float64
	n           int
}

func spreadOf(v []float64) spread {
	if len(v) == 0 {
		return spread{}
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return spread{med: m, lo: s[0], hi: s[len(s)-1], n: len(s)}
}

// fmtSpread formats a spread with format f ("%+.2f", "%.2f×"): the
// median, and the range when there is more than one round.
func fmtSpread(s spread, f string) string {
	if s.n == 0 {
		return "—"
	}
	if s.n == 1 {
		return fmt.Sprintf(f, s.med)
	}
	return fmt.Sprintf(f+" ("+f+" … "+f+")", s.med, s.lo, s.hi)
}

// roundIndex finds a cell's run per round.
type roundIndex map[string]map[int]*runResult

func indexRounds(results []*runResult) roundIndex {
	idx := roundIndex{}
	for _, r := range results {
		k := cellName(r.scenario, r.concurrency, r.target)
		if idx[k] == nil {
			idx[k] = map[int]*runResult{}
		}
		idx[k][r.round] = r
	}
	return idx
}

func cellName(sc string, conc int, tg string) string {
	return sc + "/" + strconv.Itoa(conc) + "/" + tg
}

// over collects f over the rounds where tg (and, when other is not "",
// other) ran the cell.
func (idx roundIndex) over(sc string, conc int, tg, other string, f func(r, o *runResult) float64) spread {
	var v []float64
	runs := idx[cellName(sc, conc, tg)]
	for round, r := range runs {
		var o *runResult
		if other != "" {
			if o = idx[cellName(sc, conc, other)][round]; o == nil {
				continue
			}
		}
		if x := f(r, o); !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	return spreadOf(v)
}

func p50(r *runResult) float64  { return ms(percentile(r.latencies, 0.50)) }
func p99(r *runResult) float64  { return ms(percentile(r.latencies, 0.99)) }
func ttfb(r *runResult) float64 { return ms(percentile(r.ttfbs, 0.50)) }

func render(cfg benchConfig, targets []target, results []*runResult, straced []straceResult, rss map[string]int64, failed int) string {
	var b strings.Builder
	idx := indexRounds(results)
	fmt.Fprintf(&b, "# llmgateway load benchmark\n\n")
	fmt.Fprintf(&b, "- date: %s\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "- machine: %s/%s, %d CPUs, %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
	fmt.Fprintf(&b, "- loopback; every target a separate process in front of the same mock upstream: `direct` (the mock), `bare` (`httputil.ReverseProxy`), `gateway` (`%s`; an openai-type provider at the mock)", cfg.gatewayBin)
	if cfg.profileDir != "" {
		fmt.Fprintf(&b, " — with -profile, the workspace's gateway built with a pprof listener")
	}
	fmt.Fprintf(&b, ", `gateway (translated)` (the same process, a model of its anthropic-type provider at the mock: an OpenAI client, an Anthropic upstream stream translated)")
	if cfg.baselineBin != "" {
		fmt.Fprintf(&b, ", `baseline` and `baseline (translated)` (`%s`, same configuration)", cfg.baselineBin)
	}
	fmt.Fprintf(&b, "; one client with a pool sized to the concurrency\n")
	fmt.Fprintf(&b, "- %d rounds; in each, every cell runs every target (%s warm-up, then %s measured, at most %d requests), the targets' order rotating from round to round; tables give the median over the rounds and, in brackets, the range\n",
		cfg.rounds, cfg.warmup, cfg.duration, cfg.maxRequests)
	fmt.Fprintf(&b, "- 1 KB chat body; streams carry %d content chunks (%d events), chunk delay %s\n", cfg.chunks, cfg.chunks+3, cfg.chunkDelay)
	fmt.Fprintf(&b, "- added = target latency minus the direct-to-mock latency in the same round; TTFB = time to the first body byte; total = time to the last byte\n\n")
	if failed > 0 {
		fmt.Fprintf(&b, "**FAILED: %d requests failed — numbers below are not trustworthy.**\n\n", failed)
	}

	var cells []benchCell
	for _, c := range cfg.levels {
		cells = append(cells, benchCell{nonStreaming(), c})
	}
	for _, c := range cfg.streamLevels {
		cells = append(cells, benchCell{streaming(), c})
	}

	fmt.Fprintf(&b, "## Streams against the bare proxy\n\n")
	fmt.Fprintf(&b, "Targets: a same-shape stream's first byte within +%.1f ms of the bare proxy's and its total time within %.1f×; a translated stream's first byte within +%.1f ms. Differences and ratios are taken round by round (p50s), then the median.\n\n",
		sameShapeFirstByte, sameShapeTotal, translatedFirstByte)
	fmt.Fprintf(&b, "| conc | target | TTFB p50 ms | first byte − bare ms | total p50 ms | total / bare | req/s / bare | CPU µs/request | target |\n")
	fmt.Fprintf(&b, "|---:|---|---:|---:|---:|---:|---:|---:|---|\n")
	for _, c := range cfg.streamLevels {
		sc := "chat-stream"
		bare := idx.over(sc, c, tBare, "", func(r, _ *runResult) float64 { return ttfb(r) })
		bareTotal := idx.over(sc, c, tBare, "", func(r, _ *runResult) float64 { return p50(r) })
		bareCPU := idx.over(sc, c, tBare, "", func(r, _ *runResult) float64 { return r.cpuPerRequest(r.cpu) })
		fmt.Fprintf(&b, "| %d | bare | %s | — | %s | — | — | %s | — |\n", c, fmtSpread(bare, "%.3f"), fmtSpread(bareTotal, "%.3f"), fmtSpread(bareCPU, "%.0f"))
		for _, tg := range targets {
			if tg.name == tDirect || tg.name == tBare || tg.anthropic {
				continue
			}
			first := idx.over(sc, c, tg.name, tBare, func(r, o *runResult) float64 { return ttfb(r) - ttfb(o) })
			total := idx.over(sc, c, tg.name, tBare, func(r, o *runResult) float64 { return p50(r) / p50(o) })
			rps := idx.over(sc, c, tg.name, tBare, func(r, o *runResult) float64 { return r.rps() / o.rps() })
			goal := ""
			if tg.model != "" {
				goal = verdict(first.med <= translatedFirstByte) + fmt.Sprintf(" (+%.1f ms)", translatedFirstByte)
			} else {
				goal = verdict(first.med <= sameShapeFirstByte && total.med <= sameShapeTotal) + fmt.Sprintf(" (+%.1f ms, %.1f×)", sameShapeFirstByte, sameShapeTotal)
			}
			fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", c, tg.name,
				fmtSpread(idx.over(sc, c, tg.name, "", func(r, _ *runResult) float64 { return ttfb(r) }), "%.3f"),
				fmtSpread(first, "%+.3f"),
				fmtSpread(idx.over(sc, c, tg.name, "", func(r, _ *runResult) float64 { return p50(r) }), "%.3f"),
				fmtSpread(total, "%.2f×"), fmtSpread(rps, "%.2f×"),
				fmtSpread(idx.over(sc, c, tg.name, "", func(r, _ *runResult) float64 { return r.cpuPerRequest(r.cpu) }), "%.0f"), goal)
		}
	}

	fmt.Fprintf(&b, "\n## Translated streams against the bare proxy relaying the Anthropic stream\n\n")
	fmt.Fprintf(&b, "The mock's Anthropic stream (12 events, each written and flushed) costs the mock and the reader more than its OpenAI stream (8 events): `bare (anthropic)` is the bare proxy relaying it, the floor of a translated stream's upstream side; the gateway's own part of the translation is the difference to it.\n\n")
	fmt.Fprintf(&b, "| conc | target | TTFB p50 ms | first byte − bare (anthropic) ms | total / bare (anthropic) | CPU µs/request |\n|---:|---|---:|---:|---:|---:|\n")
	for _, c := range cfg.streamLevels {
		sc := "chat-stream"
		for _, tg := range targets {
			if tg.model == "" && !tg.anthropic {
				continue
			}
			first, total := "—", "—"
			if !tg.anthropic {
				first = fmtSpread(idx.over(sc, c, tg.name, tBareAnthropic, func(r, o *runResult) float64 { return ttfb(r) - ttfb(o) }), "%+.3f")
				total = fmtSpread(idx.over(sc, c, tg.name, tBareAnthropic, func(r, o *runResult) float64 { return p50(r) / p50(o) }), "%.2f×")
			}
			fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s |\n", c, tg.name,
				fmtSpread(idx.over(sc, c, tg.name, "", func(r, _ *runResult) float64 { return ttfb(r) }), "%.3f"), first, total,
				fmtSpread(idx.over(sc, c, tg.name, "", func(r, _ *runResult) float64 { return r.cpuPerRequest(r.cpu) }), "%.0f"))
		}
	}

	if cfg.baselineBin != "" {
		fmt.Fprintf(&b, "\n## Before (baseline) and after (gateway)\n\n")
		fmt.Fprintf(&b, "Medians over the rounds of each round's difference or ratio to the bare proxy.\n\n")
		fmt.Fprintf(&b, "| scenario | conc | shape | first byte − bare ms, before | after | total / bare, before | after | req/s / bare, before | after |\n")
		fmt.Fprintf(&b, "|---|---:|---|---:|---:|---:|---:|---:|---:|\n")
		for _, cell := range cells {
			shapes := [][3]string{{"same shape", tBaseline, tGateway}}
			if cell.sc.stream {
				shapes = append(shapes, [3]string{"translated", tBaselineTr, tGatewayTr})
			}
			for _, sh := range shapes {
				sc, c := cell.sc.name, cell.conc
				firstCell := func(tg string) string {
					if !cell.sc.stream {
						return "—"
					}
					return fmtSpread(idx.over(sc, c, tg, tBare, func(r, o *runResult) float64 { return ttfb(r) - ttfb(o) }), "%+.3f")
				}
				totalCell := func(tg string) string {
					return fmtSpread(idx.over(sc, c, tg, tBare, func(r, o *runResult) float64 { return p50(r) / p50(o) }), "%.2f×")
				}
				rpsCell := func(tg string) string {
					return fmtSpread(idx.over(sc, c, tg, tBare, func(r, o *runResult) float64 { return r.rps() / o.rps() }), "%.2f×")
				}
				fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %s | %s |\n", sc, c, sh[0],
					firstCell(sh[1]), firstCell(sh[2]), totalCell(sh[1]), totalCell(sh[2]), rpsCell(sh[1]), rpsCell(sh[2]))
			}
		}
	}

	fmt.Fprintf(&b, "\n## Gateway / bare proxy\n\n")
	fmt.Fprintf(&b, "Goal (go-proxy-notes.md): throughput ratio >= 0.85, added p50 ratio <= 1.2 (medians of the per-round ratios).\n\n")
	fmt.Fprintf(&b, "| scenario | conc | target | req/s ratio | added p50 ratio | added p99 ratio | goal |\n")
	fmt.Fprintf(&b, "|---|---:|---|---:|---:|---:|---|\n")
	for _, cell := range cells {
		for _, tg := range []string{tGateway, tBaseline} {
			if tg == tBaseline && cfg.baselineBin == "" {
				continue
			}
			sc, c := cell.sc.name, cell.conc
			rps := idx.over(sc, c, tg, tBare, func(r, o *runResult) float64 { return r.rps() / o.rps() })
			a50 := idx.over(sc, c, tg, tBare, func(r, o *runResult) float64 { return addedRatio(idx, r, o, p50) })
			a99 := idx.over(sc, c, tg, tBare, func(r, o *runResult) float64 { return addedRatio(idx, r, o, p99) })
			goal := verdict(rps.med >= 0.85 && a50.med <= 1.2)
			fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s |\n", sc, c, tg, fmtSpread(rps, "%.2f×"), fmtSpread(a50, "%.2f×"), fmtSpread(a99, "%.2f×"), goal)
		}
	}

	fmt.Fprintf(&b, "\n## Medians over the rounds\n\n")
	fmt.Fprintf(&b, "CPU µs/request: the CPU time (user + system, 10 ms clock ticks) the target's process, the mock's and the load client used during the measured run, per request served.\n\n")
	fmt.Fprintf(&b, "| scenario | conc | target | req/s | p50 ms | p99 ms | added p50 ms | TTFB p50 ms | CPU µs/req: target | mock | client | requests | errors |\n")
	fmt.Fprintf(&b, "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, cell := range cells {
		for _, tg := range targets {
			sc, c := cell.sc.name, cell.conc
			runs := idx[cellName(sc, c, tg.name)]
			if len(runs) == 0 {
				continue
			}
			ok, errs, firstErr := 0, 0, ""
			for _, r := range runs {
				ok += r.ok
				errs += r.errors
				if firstErr == "" {
					firstErr = r.firstError
				}
			}
			added := "—"
			if tg.name != tDirect {
				added = fmtSpread(idx.over(sc, c, tg.name, tDirect, func(r, o *runResult) float64 { return p50(r) - p50(o) }), "%.3f")
			}
			first := "—"
			if cell.sc.stream {
				first = fmtSpread(idx.over(sc, c, tg.name, "", func(r, _ *runResult) float64 { return ttfb(r) }), "%.3f")
			}
			errCell := strconv.Itoa(errs)
			if errs > 0 {
				errCell = fmt.Sprintf("**%d** (%s)", errs, strings.ReplaceAll(firstErr, "|", "/"))
			}
			cpuOf := func(d func(r *runResult) time.Duration) string {
				return fmtSpread(idx.over(sc, c, tg.name, "", func(r, _ *runResult) float64 { return r.cpuPerRequest(d(r)) }), "%.0f")
			}
			fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d | %s |\n", sc, c, tg.name,
				fmtSpread(idx.over(sc, c, tg.name, "", func(r, _ *runResult) float64 { return r.rps() }), "%.0f"),
				fmtSpread(idx.over(sc, c, tg.name, "", func(r, _ *runResult) float64 { return p50(r) }), "%.3f"),
				fmtSpread(idx.over(sc, c, tg.name, "", func(r, _ *runResult) float64 { return p99(r) }), "%.3f"),
				added, first,
				cpuOf(func(r *runResult) time.Duration { return r.cpu }),
				cpuOf(func(r *runResult) time.Duration { return r.mockCPU }),
				cpuOf(func(r *runResult) time.Duration { return r.clientCPU }),
				ok, errCell)
		}
	}

	if len(straced) > 0 {
		fmt.Fprintf(&b, "\n## Syscalls per streamed request (strace -c -f, concurrency %d, untimed run)\n\n", cfg.straceConc)
		names := []string{"write", "read", "epoll_pwait", "futex", "nanosleep", "getsockopt", "setsockopt"}
		fmt.Fprintf(&b, "| target | requests | total | %s | other |\n|---|---:|---:|%s---:|\n", strings.Join(names, " | "), strings.Repeat("---:|", len(names)))
		for _, s := range straced {
			other := s.perRequest("total")
			row := ""
			for _, n := range names {
				other -= s.perRequest(n)
				row += fmt.Sprintf(" %.1f |", s.perRequest(n))
			}
			fmt.Fprintf(&b, "| %s | %d | %.1f |%s %.1f |\n", s.target, s.requests, s.perRequest("total"), row, other)
		}
	}

	fmt.Fprintf(&b, "\n## Peak RSS (VmHWM over the whole benchmark)\n\n")
	fmt.Fprintf(&b, "| process | VmHWM MiB |\n|---|---:|\n")
	fmt.Fprintf(&b, "| gateway | %.1f |\n| bare proxy | %.1f |\n| mock upstream | %.1f |\n", mib(rss[tGateway]), mib(rss[tBare]), mib(rss["mock"]))
	if kb, ok := rss[tBaseline]; ok {
		fmt.Fprintf(&b, "| baseline | %.1f |\n", mib(kb))
	}
	fmt.Fprintf(&b, "| **gateway / bare** | **%s** |\n", fmtRatio(ratio(float64(rss[tGateway]), float64(rss[tBare]))))
	return b.String()
}

// addedRatio is r's latency added over direct (same round) divided by
// o's, at the percentile f reads; NaN (left out of the median) when o
// added nothing measurable.
func addedRatio(idx roundIndex, r, o *runResult, f func(*runResult) float64) float64 {
	d := idx[cellName(r.scenario, r.concurrency, tDirect)][r.round]
	if d == nil || f(o) <= f(d) {
		return math.NaN()
	}
	return (f(r) - f(d)) / (f(o) - f(d))
}

func verdict(met bool) string {
	if met {
		return "met"
	}
	return "**missed**"
}

// writeRuns writes one table row per run, with the latency added over the
// direct run of the same scenario and concurrency (the -traefik mode,
// which runs every cell once).
func writeRuns(b *strings.Builder, results []*runResult) {
	fmt.Fprintf(b, "| scenario | conc | target | req/s | p50 ms | p99 ms | added p50 ms | added p99 ms | TTFB p50 ms | ok | errors |\n")
	fmt.Fprintf(b, "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	direct := map[string]*runResult{}
	for _, r := range results {
		if r.target == "direct" {
			direct[r.scenario+"/"+strconv.Itoa(r.concurrency)] = r
		}
	}
	for _, r := range results {
		d := direct[r.scenario+"/"+strconv.Itoa(r.concurrency)]
		added50, added99 := "—", "—"
		if r.target != "direct" && d != nil && len(r.latencies) > 0 && len(d.latencies) > 0 {
			added50 = fmt.Sprintf("%.3f", ms(percentile(r.latencies, 0.50)-percentile(d.latencies, 0.50)))
			added99 = fmt.Sprintf("%.3f", ms(percentile(r.latencies, 0.99)-percentile(d.latencies, 0.99)))
		}
		first := "—"
		if len(r.ttfbs) > 0 {
			first = fmt.Sprintf("%.3f", ms(percentile(r.ttfbs, 0.50)))
		}
		errs := strconv.Itoa(r.errors)
		if r.errors > 0 {
			errs = fmt.Sprintf("**%d** (%s)", r.errors, strings.ReplaceAll(r.firstError, "|", "/"))
		}
		fmt.Fprintf(b, "| %s | %d | %s | %.0f | %.3f | %.3f | %s | %s | %s | %d | %s |\n",
			r.scenario, r.concurrency, r.target, r.rps(), ms(percentile(r.latencies, 0.50)), ms(percentile(r.latencies, 0.99)),
			added50, added99, first, r.ok, errs)
	}
}

func mib(kb int64) float64 { return float64(kb) / 1024 }

// ratio returns a/b, or -1 when b is not positive (an added latency at or
// below zero is noise, not a base for a ratio).
func ratio(a, b float64) float64 {
	if b <= 0 {
		return -1
	}
	return a / b
}

func fmtRatio(r float64) string {
	if r < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f×", r)
}
