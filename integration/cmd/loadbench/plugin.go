package main

// The -traefik mode: the plugin measured side by side with Traefik alone,
// each a real Traefik v3.6.12 process in front of the same mock upstream.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/llmgateway/llmgateway/integration/gwproc"
	"github.com/llmgateway/llmgateway/integration/traefikproc"
)

// pluginBenchConfig are the -traefik mode's inputs.
type pluginBenchConfig struct {
	benchConfig
	traefikBin string
	pluginDir  string
	anthropic  bool
	// traefikLog is Traefik's log level; only holds names to keep (empty: all).
	traefikLog string
	only       map[string]bool
	// profileDir, when set, receives CPU profiles of the plugin's Traefik
	// process taken during its measured cells (and a heap profile at the
	// end), fetched from Traefik's debug handlers.
	profileDir string
	// nullPluginDir, when set, adds a third Traefik whose router goes
	// through the null plugin (a Yaegi-interpreted middleware that only
	// calls next): the interpreter's floor.
	nullPluginDir string
}

// The cells the -traefik mode measures: latency at concurrency 1,
// throughput at 32, a streamed chat at 8.
const (
	latencyConc    = 1
	throughputConc = 32
	streamConc     = 8
)

// Target names in the -traefik mode.
const (
	tDirect     = "direct"
	tBare       = "bare"
	tGateway    = "gateway"
	tTraefik    = "traefik"
	tPlugin     = "traefik+plugin"
	tPluginAnth = "traefik+plugin (anthropic)"
	tNull       = "traefik+null plugin"
)

// anthropicPrefix is the path prefix of the Anthropic-translated router
// (stripped before the plugin sees the request).
const anthropicPrefix = "/anthropic"

// traefikDynamic renders the file provider's configuration: one catch-all
// router to the mock as a plain service, through the plugin when
// pluginCfg is not nil; with anthropicCfg, a second router under
// anthropicPrefix through a second plugin instance whose provider is
// Anthropic-type. The service's transport keeps maxIdle idle connections.
func traefikDynamic(mockURL string, maxIdle int, pluginCfg, anthropicCfg map[string]interface{}) ([]byte, error) {
	router := map[string]interface{}{
		"rule":        "PathPrefix(`/`)",
		"entryPoints": []interface{}{traefikproc.EntryPoint},
		"service":     "mock",
	}
	httpCfg := map[string]interface{}{
		"routers": map[string]interface{}{"bench": router},
		"services": map[string]interface{}{
			"mock": map[string]interface{}{
				"loadBalancer": map[string]interface{}{
					"servers":          []interface{}{map[string]interface{}{"url": mockURL}},
					"serversTransport": "bench",
				},
			},
		},
		"serversTransports": map[string]interface{}{
			"bench": map[string]interface{}{"maxIdleConnsPerHost": maxIdle},
		},
	}
	middlewares := map[string]interface{}{}
	if pluginCfg != nil {
		middlewares["llm"] = map[string]interface{}{"plugin": map[string]interface{}{traefikproc.PluginAlias: pluginCfg}}
		router["middlewares"] = []interface{}{"llm"}
	}
	if anthropicCfg != nil {
		middlewares["llm-anthropic"] = map[string]interface{}{"plugin": map[string]interface{}{traefikproc.PluginAlias: anthropicCfg}}
		middlewares["strip-anthropic"] = map[string]interface{}{"stripPrefix": map[string]interface{}{"prefixes": []interface{}{anthropicPrefix}}}
		httpCfg["routers"].(map[string]interface{})["bench-anthropic"] = map[string]interface{}{
			"rule":        "PathPrefix(`" + anthropicPrefix + "/`)",
			"priority":    100,
			"entryPoints": []interface{}{traefikproc.EntryPoint},
			"middlewares": []interface{}{"strip-anthropic", "llm-anthropic"},
			"service":     "mock",
		}
	}
	if len(middlewares) > 0 {
		httpCfg["middlewares"] = middlewares
	}
	return yaml.Marshal(map[string]interface{}{"http": httpCfg})
}

// pluginConfig is the plugin's configuration: one provider of typ at the
// mock, one user key.
func pluginConfig(typ, mockURL string) map[string]interface{} {
	return map[string]interface{}{
		"providers": map[string]interface{}{
			"mock": map[string]interface{}{
				"type": typ, "baseUrl": mockURL, "apiKey": upstreamKey,
				"models": []interface{}{benchModel},
			},
		},
		"groups": map[string]interface{}{"bench": map[string]interface{}{"providers": []interface{}{}}},
		"users": map[string]interface{}{
			"inline": []interface{}{map[string]interface{}{"name": "bench", "group": "bench", "apiKey": userKey}},
		},
	}
}

// Traefik set-ups: alone, with the plugin, with the null plugin.
const (
	setupAlone = iota
	setupPlugin
	setupNull
)

func startTraefik(cfg pluginBenchConfig, dir, mockURL string, setup int, debugAddr string) (*gwproc.Process, error) {
	work, err := os.MkdirTemp(dir, "traefik-")
	if err != nil {
		return nil, err
	}
	maxIdle := 2 * throughputConc
	var pc, ac map[string]interface{}
	pluginDir := ""
	switch setup {
	case setupPlugin:
		pc = pluginConfig("openai", mockURL)
		if cfg.anthropic {
			ac = pluginConfig("anthropic", mockURL)
		}
		pluginDir = cfg.pluginDir
	case setupNull:
		pc = map[string]interface{}{}
		pluginDir = cfg.nullPluginDir
	}
	dyn, err := traefikDynamic(mockURL, maxIdle, pc, ac)
	if err != nil {
		return nil, err
	}
	return traefikproc.Start(traefikproc.Config{
		Binary:      cfg.traefikBin,
		WorkDir:     work,
		PluginDir:   pluginDir,
		DynamicYAML: dyn,
		LogLevel:    cfg.traefikLog,
		Bench:       true,
		ReadyPath:   "/v1/models",
		ReadyHeader: http.Header{"Authorization": {"Bearer " + userKey}},
		DebugAddr:   debugAddr,
	})
}

// freeLoopbackAddr is a loopback address nothing listens on right now.
func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

// fetchProfile saves Traefik's pprof endpoint path (e.g.
// "profile?seconds=2") to file.
func fetchProfile(debugAddr, path, file string) error {
	resp, err := http.Get("http://" + debugAddr + "/debug/pprof/" + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %.200s", path, resp.Status, body)
	}
	return os.WriteFile(file, body, 0o644)
}

// profileName is a cell's profile file name.
func profileName(sc string, conc int, tg string) string {
	r := strings.NewReplacer("+", "-", " ", "-", "(", "", ")", "")
	return fmt.Sprintf("%s-c%d-%s.pprof", sc, conc, r.Replace(tg))
}

func runPluginBench(ctx context.Context, cfg pluginBenchConfig) (string, int, error) {
	self, err := os.Executable()
	if err != nil {
		return "", 0, err
	}
	for _, p := range []string{cfg.gatewayBin, cfg.traefikBin} {
		if _, err := os.Stat(p); err != nil {
			return "", 0, fmt.Errorf("%v (run make build-binary traefik-binary)", err)
		}
	}
	dir, err := os.MkdirTemp("", "loadbench-plugin-")
	if err != nil {
		return "", 0, err
	}
	defer os.RemoveAll(dir)

	mock, proxy, err := startMockAndProxy(self, cfg.chunks, cfg.chunkDelay)
	if err != nil {
		return "", 0, err
	}
	defer mock.Stop()
	defer proxy.Stop()
	gwConfig, err := json.Marshal(pluginConfig("openai", mock.URL))
	if err != nil {
		return "", 0, err
	}
	gw, err := gwproc.StartGateway(cfg.gatewayBin, dir, gwConfig)
	if err != nil {
		return "", 0, fmt.Errorf("gateway: %v", err)
	}
	defer gw.Stop()
	fmt.Fprintf(os.Stderr, "loadbench: starting Traefik %s alone and with the plugin ...\n", traefikproc.Version)
	alone, err := startTraefik(cfg, dir, mock.URL, setupAlone, "")
	if err != nil {
		return "", 0, fmt.Errorf("traefik alone: %v", err)
	}
	defer alone.Stop()
	started := time.Now()
	debugAddr := ""
	if cfg.profileDir != "" {
		if err := os.MkdirAll(cfg.profileDir, 0o755); err != nil {
			return "", 0, err
		}
		if debugAddr, err = freeLoopbackAddr(); err != nil {
			return "", 0, err
		}
	}
	withPlugin, err := startTraefik(cfg, dir, mock.URL, setupPlugin, debugAddr)
	if err != nil {
		return "", 0, fmt.Errorf("traefik with the plugin: %v", err)
	}
	defer withPlugin.Stop()
	fmt.Fprintf(os.Stderr, "loadbench: traefik with the plugin ready after %s\n", time.Since(started).Round(time.Millisecond))
	var null *gwproc.Process
	if cfg.nullPluginDir != "" {
		if null, err = startTraefik(cfg, dir, mock.URL, setupNull, ""); err != nil {
			return "", 0, fmt.Errorf("traefik with the null plugin: %v", err)
		}
		defer null.Stop()
	}

	client := loadClient(throughputConc)
	targets := []target{
		{name: tDirect, url: mock.URL},
		{name: tBare, url: proxy.URL, pid: proxy.PID()},
		{name: tGateway, url: gw.URL, pid: gw.PID()},
		{name: tTraefik, url: alone.URL, pid: alone.PID()},
		{name: tPlugin, url: withPlugin.URL, pid: withPlugin.PID()},
	}
	if cfg.anthropic {
		targets = append(targets, target{name: tPluginAnth, url: withPlugin.URL + anthropicPrefix, pid: withPlugin.PID()})
	}
	if null != nil {
		targets = append(targets, target{name: tNull, url: null.URL, pid: null.PID()})
	}
	if len(cfg.only) > 0 {
		var kept []target
		for _, tg := range targets {
			if tg.name == tDirect || cfg.only[tg.name] {
				kept = append(kept, tg)
			}
		}
		targets = kept
	}
	cells := []struct {
		sc   scenario
		conc int
	}{
		{nonStreaming(), latencyConc},
		{nonStreaming(), throughputConc},
		{streaming(), streamConc},
	}
	var results []*runResult
	for _, cell := range cells {
		for _, tg := range targets {
			if ctx.Err() != nil {
				return "", 0, fmt.Errorf("stopped: %v", ctx.Err())
			}
			warm := load(ctx, client, tg, cell.sc, cell.conc, cfg.warmup, cfg.maxRequests)
			var profiled chan error
			if debugAddr != "" && (tg.name == tPlugin || tg.name == tPluginAnth) && cell.conc > 1 {
				profiled = make(chan error, 1)
				secs := int(cfg.duration / time.Second)
				if secs < 1 {
					secs = 1
				}
				file := filepath.Join(cfg.profileDir, profileName(cell.sc.name, cell.conc, tg.name))
				go func() { profiled <- fetchProfile(debugAddr, "profile?seconds="+strconv.Itoa(secs), file) }()
			}
			res := load(ctx, client, tg, cell.sc, cell.conc, cfg.duration, cfg.maxRequests)
			if profiled != nil {
				if err := <-profiled; err != nil {
					return "", 0, fmt.Errorf("profiling %s: %v", tg.name, err)
				}
			}
			res.errors += warm.errors
			if res.firstError == "" {
				res.firstError = warm.firstError
			}
			fmt.Fprintf(os.Stderr, "loadbench: %-11s c=%-3d %-26s %8.0f req/s  p50 %6.3f ms  errors %d\n",
				cell.sc.name, cell.conc, tg.name, res.rps(), ms(percentile(res.latencies, 0.50)), res.errors)
			if res.errors > 0 {
				fmt.Fprintf(os.Stderr, "loadbench:   first error: %s\n", res.firstError)
			}
			results = append(results, res)
		}
	}
	for name, p := range map[string]*gwproc.Process{tTraefik: alone, tPlugin: withPlugin} {
		var kept []string
		for _, line := range strings.Split(p.Logs(), "\n") {
			// Drop Traefik's per-request debug noise.
			if !strings.Contains(line, "Service selected by WRR") {
				kept = append(kept, line)
			}
		}
		if out := strings.TrimSpace(strings.Join(kept, "\n")); out != "" {
			if len(out) > 4000 {
				out = "..." + out[len(out)-4000:]
			}
			fmt.Fprintf(os.Stderr, "loadbench: %s logged:\n%s\n", name, out)
		}
	}
	if debugAddr != "" {
		if err := fetchProfile(debugAddr, "heap", filepath.Join(cfg.profileDir, "heap-traefik-plugin.pprof")); err != nil {
			return "", 0, fmt.Errorf("heap profile: %v", err)
		}
		fmt.Fprintf(os.Stderr, "loadbench: profiles of the plugin's Traefik in %s (go tool pprof -top FILE)\n", cfg.profileDir)
	}
	procs := map[string]*gwproc.Process{"mock": mock, "bare": proxy, "gateway": gw, "traefik": alone, "traefik+plugin": withPlugin}
	if null != nil {
		procs[tNull] = null
	}
	rss, err := peakRSS(procs)
	if err != nil {
		return "", 0, err
	}
	// Traefik's own proxy's failures (alone, and behind the null plugin) are reported, not fatal: under the
	// streamed chat it aborts a few responses mid-body ("ReverseProxy read
	// error during body copy: use of closed network connection" at debug
	// level), a behaviour of Traefik's HTTP/1 proxy path that the plugin
	// (which answers itself) does not share. Every other target's failure
	// fails the run.
	failed, baseFailed := 0, 0
	for _, r := range results {
		if r.target == tTraefik || r.target == tNull {
			// Both are Traefik's own proxy at work (the null plugin only
			// calls next).
			baseFailed += r.errors
			continue
		}
		failed += r.errors
	}
	return renderPlugin(cfg, targets, results, rss, failed, baseFailed), failed, nil
}

func renderPlugin(cfg pluginBenchConfig, targets []target, results []*runResult, rss map[string]int64, failed, baseFailed int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# llmgateway as a Traefik plugin: load benchmark\n\n")
	fmt.Fprintf(&b, "- date: %s\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "- machine: %s/%s, %d CPUs, %s; Traefik %s (Yaegi-interpreted plugin)\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), traefikproc.Version)
	fmt.Fprintf(&b, "- loopback; every target a separate process in front of the same mock upstream: `direct` (the mock itself), `bare` (`httputil.ReverseProxy`), `gateway` (`%s`), `traefik` (a catch-all router to the mock as a plain service), `traefik+plugin` (the same router through the plugin, configured with one openai-type provider at the mock and one user key; the plugin answers the request itself)", cfg.gatewayBin)
	if cfg.anthropic {
		fmt.Fprintf(&b, ", `traefik+plugin (anthropic)` (the same Traefik, a router under `%s` through a plugin instance with an anthropic-type provider at the mock: OpenAI in, Anthropic upstream, translated both ways)", anthropicPrefix)
	}
	if cfg.nullPluginDir != "" {
		fmt.Fprintf(&b, ", `traefik+null plugin` (a third Traefik, the router through a Yaegi-interpreted middleware that only calls the next handler: the floor any interpreted plugin pays; the mock answers)")
	}
	fmt.Fprintf(&b, "\n- Traefik: access log off, log level %s, entry point respondingTimeouts 0 (unbounded), serversTransport maxIdleConnsPerHost %d\n", cfg.traefikLog, 2*throughputConc)
	fmt.Fprintf(&b, "- each cell: %s warm-up, then %s measured (at most %d requests), targets interleaved cell by cell; 1 KB chat body; streams carry %d content chunks (%d events), chunk delay %s\n",
		cfg.warmup, cfg.duration, cfg.maxRequests, cfg.chunks, cfg.chunks+3, cfg.chunkDelay)
	fmt.Fprintf(&b, "- added = target latency minus the direct-to-mock latency at the same percentile; TTFB = time to the first body byte; peak RSS = VmHWM over the whole run\n\n")
	if failed > 0 {
		fmt.Fprintf(&b, "**FAILED: %d requests failed — numbers below are not trustworthy.**\n\n", failed)
	}
	if baseFailed > 0 {
		fmt.Fprintf(&b, "Note: Traefik's own proxy (Traefik alone, and the null plugin, which hands every request to it) failed %d requests — responses aborted mid-body by its reverse proxy (\"read error during body copy: use of closed network connection\" in its debug log); they are counted in the errors column and do not fail the run.\n\n", baseFailed)
	}

	find := func(sc string, conc int, tg string) *runResult {
		for _, r := range results {
			if r.scenario == sc && r.concurrency == conc && r.target == tg {
				return r
			}
		}
		return nil
	}
	type row struct {
		added50, added99, rps, ttfb, total float64
		rss                                int64
		errors                             int
	}
	rows := map[string]row{}
	d1 := find("chat", latencyConc, tDirect)
	for _, tg := range targets {
		var rw row
		if r := find("chat", latencyConc, tg.name); r != nil && d1 != nil {
			rw.added50 = ms(percentile(r.latencies, 0.50) - percentile(d1.latencies, 0.50))
			rw.added99 = ms(percentile(r.latencies, 0.99) - percentile(d1.latencies, 0.99))
			rw.errors += r.errors
		}
		if r := find("chat", throughputConc, tg.name); r != nil {
			rw.rps = r.rps()
			rw.errors += r.errors
		}
		if r := find("chat-stream", streamConc, tg.name); r != nil {
			rw.ttfb = ms(percentile(r.ttfbs, 0.50))
			rw.total = ms(percentile(r.latencies, 0.50))
			rw.errors += r.errors
		}
		proc := tg.name
		if tg.name == tPluginAnth {
			proc = tPlugin
		}
		if tg.name == tDirect {
			proc = "mock"
		}
		rw.rss = rss[proc]
		rows[tg.name] = rw
	}

	fmt.Fprintf(&b, "## Summary\n\n")
	fmt.Fprintf(&b, "| target | added p50 ms (c=%d) | added p99 ms (c=%d) | req/s (c=%d) | stream TTFB p50 ms (c=%d) | stream total p50 ms (c=%d) | peak RSS MiB | errors |\n",
		latencyConc, latencyConc, throughputConc, streamConc, streamConc)
	fmt.Fprintf(&b, "|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, tg := range targets {
		rw := rows[tg.name]
		a50, a99 := fmt.Sprintf("%.3f", rw.added50), fmt.Sprintf("%.3f", rw.added99)
		if tg.name == tDirect {
			a50, a99 = "—", "—"
		}
		rssCell := fmt.Sprintf("%.1f", mib(rw.rss))
		if tg.name == tPluginAnth {
			rssCell = "(same process)"
		}
		errs := strconv.Itoa(rw.errors)
		if rw.errors > 0 {
			errs = fmt.Sprintf("**%d**", rw.errors)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %.0f | %.3f | %.3f | %s | %s |\n", tg.name, a50, a99, rw.rps, rw.ttfb, rw.total, rssCell, errs)
	}

	fmt.Fprintf(&b, "\n## Ratios to Traefik without the plugin\n\n")
	fmt.Fprintf(&b, "Added latency ratios compare the latency each adds over direct; n/a when Traefik's own added latency is at or below zero.\n\n")
	fmt.Fprintf(&b, "| target | added p50 | added p99 | req/s | stream TTFB p50 | stream total p50 | peak RSS |\n")
	fmt.Fprintf(&b, "|---|---:|---:|---:|---:|---:|---:|\n")
	base := rows[tTraefik]
	for _, tg := range targets {
		if tg.name == tDirect || tg.name == tTraefik {
			continue
		}
		rw := rows[tg.name]
		rssCell := fmtRatio(ratio(float64(rw.rss), float64(base.rss)))
		if tg.name == tPluginAnth {
			rssCell = "—"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", tg.name,
			fmtRatio(ratio(rw.added50, base.added50)), fmtRatio(ratio(rw.added99, base.added99)),
			fmtRatio(ratio(rw.rps, base.rps)), fmtRatio(ratio(rw.ttfb, base.ttfb)), fmtRatio(ratio(rw.total, base.total)), rssCell)
	}

	fmt.Fprintf(&b, "\n## Runs\n\n")
	writeRuns(&b, results)
	fmt.Fprintf(&b, "\nmock upstream peak RSS: %.1f MiB\n", mib(rss["mock"]))
	return b.String()
}
