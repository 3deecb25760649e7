// Command loadbench compares the gateway binary with a bare
// httputil.ReverseProxy on loopback, side by side, in front of the same
// mock upstream.
//
// It starts three child processes — the mock upstream and the bare proxy
// (both this program re-executed with -role) and bin/llmgateway with a
// generated config — then drives each target (the mock directly, the bare
// proxy, the gateway) with one pooled HTTP client: non-streaming and
// streaming 1 KB chat requests at each concurrency level, for a fixed
// duration per run. It prints a markdown table (requests/s, p50/p99
// latency, latency added over the direct mock, time to first streamed
// byte, errors, peak RSS) with gateway/bare ratios, and writes it to -out.
// It exits 1 when any request failed.
//
//	loadbench -gateway bin/llmgateway -out bench/latest.md -duration 3s -concurrency 1,32
//
// With -traefik it also starts two real Traefik processes — one routing to
// the mock as a plain service, one with the llmgateway plugin on the same
// router — and reports, for every target, the latency added at
// concurrency 1, req/s at 32, a streamed chat's TTFB and total at 8 and
// peak RSS, with ratios to Traefik alone (plugin.go):
//
//	loadbench -traefik ~/.cache/llmgateway/traefik-v3.6.12 -gateway bin/llmgateway -out bench/plugin.md -duration 2s
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/llmgateway/llmgateway/integration/benchkit"
	"github.com/llmgateway/llmgateway/integration/gwproc"
	"github.com/llmgateway/llmgateway/integration/mockupstream"
)

const (
	userKey     = "sk-loadbench-user"
	upstreamKey = "sk-loadbench-upstream"
	benchModel  = "gpt-5-mini"
)

func main() {
	role := flag.String("role", "bench", "bench, or (internal) mock / proxy")
	listen := flag.String("listen", "127.0.0.1:0", "listen address for -role mock/proxy")
	upstream := flag.String("upstream", "", "upstream base URL for -role proxy")
	chunks := flag.Int("chunks", 5, "content chunks per streamed reply")
	chunkDelay := flag.Duration("chunk-delay", 0, "delay between streamed events at the mock")
	gatewayBin := flag.String("gateway", "bin/llmgateway", "gateway binary to benchmark")
	out := flag.String("out", "bench/latest.md", "markdown report path (empty: stdout only)")
	duration := flag.Duration("duration", 3*time.Second, "measured duration of each run")
	warmup := flag.Duration("warmup", 300*time.Millisecond, "unmeasured warm-up before each run")
	maxRequests := flag.Int("max-requests", 100000, "upper bound of requests per run")
	concurrency := flag.String("concurrency", "1,32", "comma-separated concurrency levels")
	timeout := flag.Duration("timeout", 150*time.Second, "hard bound on the whole benchmark")
	traefikBin := flag.String("traefik", "", "Traefik binary: benchmark the plugin in a real Traefik, side by side with Traefik alone (the -concurrency levels are then fixed)")
	pluginDir := flag.String("plugin-dir", ".", "folder laid out like the repository root (.traefik.yml, plugin/ with vendor/) for -traefik")
	anthropic := flag.Bool("anthropic", false, "with -traefik: also an Anthropic-translated plugin target (the mock speaks Anthropic)")
	traefikLog := flag.String("traefik-log", "ERROR", "with -traefik: Traefik's log level (printed to stderr after the run)")
	only := flag.String("only", "", "with -traefik: comma-separated targets to run besides direct (default all: bare,gateway,traefik,traefik+plugin,...)")
	profile := flag.String("profile", "", "with -traefik: directory for CPU profiles of the plugin's Traefik during its c>1 cells, and a heap profile at the end")
	nullPlugin := flag.String("null-plugin-dir", "", "with -traefik: also a Traefik through this null plugin (integration/cmd/loadbench/nullplugin), the interpreter's floor")
	flag.Parse()

	switch *role {
	case "mock":
		serveMock(*listen, *chunks, *chunkDelay)
		return
	case "proxy":
		serveProxy(*listen, *upstream)
		return
	case "bench":
	default:
		log.Fatalf("loadbench: unknown -role %q", *role)
	}

	var levels []int
	for _, s := range strings.Split(*concurrency, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			log.Fatalf("loadbench: bad -concurrency %q", *concurrency)
		}
		levels = append(levels, n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	cfg := benchConfig{
		gatewayBin: *gatewayBin, duration: *duration, warmup: *warmup, maxRequests: *maxRequests,
		levels: levels, chunks: *chunks, chunkDelay: *chunkDelay,
	}
	var (
		report string
		failed int
		err    error
	)
	if *traefikBin != "" {
		pc := pluginBenchConfig{benchConfig: cfg, traefikBin: *traefikBin, pluginDir: *pluginDir, anthropic: *anthropic, traefikLog: *traefikLog, only: map[string]bool{}, profileDir: *profile, nullPluginDir: *nullPlugin}
		for _, n := range strings.Split(*only, ",") {
			if n = strings.TrimSpace(n); n != "" {
				pc.only[n] = true
			}
		}
		report, failed, err = runPluginBench(ctx, pc)
	} else {
		report, failed, err = runBench(ctx, cfg)
	}
	if err != nil {
		log.Fatalf("loadbench: %v", err)
	}
	fmt.Print(report)
	if *out != "" {
		if err := benchkit.WriteReport("loadbench", *out, report); err != nil {
			log.Fatalf("loadbench: %v", err)
		}
	}
	if failed > 0 {
		fmt.Fprintf(os.Stderr, "loadbench: FAILED: %d requests failed (see the errors column)\n", failed)
		os.Exit(1)
	}
}

// serveMock runs the mock upstream as a child process, without recording.
func serveMock(addr string, chunks int, delay time.Duration) {
	h := mockupstream.New(mockupstream.Options{Models: []string{benchModel}, Chunks: chunks, ChunkDelay: delay, RecordLimit: -1})
	benchkit.Serve(addr, h)
}

// serveProxy runs the baseline: benchkit's bare httputil.ReverseProxy
// with a sized idle pool.
func serveProxy(addr, upstream string) {
	h, err := benchkit.BareProxy(upstream, upstreamKey, &http.Transport{
		Proxy:               nil,
		MaxIdleConns:        512,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
	})
	if err != nil {
		log.Fatalf("loadbench proxy: %v", err)
	}
	benchkit.Serve(addr, h)
}

type benchConfig struct {
	gatewayBin  string
	duration    time.Duration
	warmup      time.Duration
	maxRequests int
	levels      []int
	chunks      int
	chunkDelay  time.Duration
}

// target is one endpoint under load.
type target struct {
	name string
	url  string
	pid  int // 0 when not a separate process of interest
}

// runResult is one (scenario, concurrency, target) run.
type runResult struct {
	scenario    string
	concurrency int
	target      string
	ok          int
	errors      int
	firstError  string
	elapsed     time.Duration
	latencies   []time.Duration
	ttfbs       []time.Duration
}

func (r *runResult) rps() float64 { return float64(r.ok) / r.elapsed.Seconds() }

func runBench(ctx context.Context, cfg benchConfig) (string, int, error) {
	self, err := os.Executable()
	if err != nil {
		return "", 0, err
	}
	if _, err := os.Stat(cfg.gatewayBin); err != nil {
		return "", 0, fmt.Errorf("gateway binary: %v (run make build-binary)", err)
	}
	dir, err := os.MkdirTemp("", "loadbench-")
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
	gwConfig, _ := json.Marshal(map[string]interface{}{
		"providers": map[string]interface{}{
			"mock": map[string]interface{}{"type": "openai", "baseUrl": mock.URL, "apiKey": upstreamKey, "models": []string{benchModel}},
		},
		"groups": map[string]interface{}{"bench": map[string]interface{}{}},
		"users":  map[string]interface{}{"inline": []map[string]interface{}{{"name": "bench", "group": "bench", "apiKey": userKey}}},
	})
	gw, err := gwproc.StartGateway(cfg.gatewayBin, dir, gwConfig)
	if err != nil {
		return "", 0, fmt.Errorf("gateway: %v", err)
	}
	defer gw.Stop()

	maxConc := 1
	for _, c := range cfg.levels {
		if c > maxConc {
			maxConc = c
		}
	}
	client := &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			Proxy:               nil,
			MaxIdleConns:        4 * maxConc,
			MaxIdleConnsPerHost: maxConc,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
		},
	}

	targets := []target{
		{name: "direct", url: mock.URL},
		{name: "bare", url: proxy.URL, pid: proxy.PID()},
		{name: "gateway", url: gw.URL, pid: gw.PID()},
	}
	scenarios := []scenario{nonStreaming(), streaming()}
	var results []*runResult
	for _, sc := range scenarios {
		for _, conc := range cfg.levels {
			for _, tg := range targets {
				if ctx.Err() != nil {
					return "", 0, fmt.Errorf("stopped: %v", ctx.Err())
				}
				// Warm-up: fill the connection pools, let the runtimes settle.
				// Its failures count like any other.
				warm := load(ctx, client, tg, sc, conc, cfg.warmup, cfg.maxRequests)
				res := load(ctx, client, tg, sc, conc, cfg.duration, cfg.maxRequests)
				res.errors += warm.errors
				if res.firstError == "" {
					res.firstError = warm.firstError
				}
				fmt.Fprintf(os.Stderr, "loadbench: %-13s c=%-3d %-8s %8.0f req/s  p50 %6.3f ms  errors %d\n",
					sc.name, conc, tg.name, res.rps(), ms(percentile(res.latencies, 0.50)), res.errors)
				results = append(results, res)
			}
		}
	}
	for _, p := range []*gwproc.Process{mock, proxy, gw} {
		if p.Exited() {
			return "", 0, fmt.Errorf("a child process died during the run; output:\n%s", p.Logs())
		}
	}
	gwRSS, err1 := gwproc.PeakRSSKB(gw.PID())
	bareRSS, err2 := gwproc.PeakRSSKB(proxy.PID())
	mockRSS, _ := gwproc.PeakRSSKB(mock.PID())
	if err1 != nil || err2 != nil {
		return "", 0, fmt.Errorf("reading VmHWM: %v %v", err1, err2)
	}
	failed := 0
	for _, r := range results {
		failed += r.errors
	}
	return render(cfg, results, gwRSS, bareRSS, mockRSS, failed), failed, nil
}

// scenario is one request shape.
type scenario struct {
	name   string
	body   []byte
	stream bool
	// wantSuffix must end every successful response body.
	wantSuffix []byte
}

// chatBody is a ~1 KB chat request.
func chatBody(stream bool) []byte {
	filler := strings.Repeat("lorem ipsum dolor sit amet ", 34)
	s := `{"model":"` + benchModel + `",`
	if stream {
		s += `"stream":true,`
	}
	s += `"messages":[{"role":"system","content":"Be terse."},{"role":"user","content":"` + filler + `"}],"temperature":0.2}`
	return []byte(s)
}

func nonStreaming() scenario {
	return scenario{name: "chat", body: chatBody(false), wantSuffix: []byte(`}}`)}
}

func streaming() scenario {
	return scenario{name: "chat-stream", body: chatBody(true), stream: true, wantSuffix: []byte("data: [DONE]\n\n")}
}

// load drives tg with conc workers for d (or maxRequests requests).
func load(ctx context.Context, client *http.Client, tg target, sc scenario, conc int, d time.Duration, maxRequests int) *runResult {
	res := &runResult{scenario: sc.name, concurrency: conc, target: tg.name}
	runCtx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var (
		mu        sync.Mutex
		wg        sync.WaitGroup
		remaining = maxRequests
	)
	take := func() bool {
		mu.Lock()
		defer mu.Unlock()
		if remaining <= 0 {
			return false
		}
		remaining--
		return true
	}
	start := time.Now()
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 32<<10)
			var lat, ttfb []time.Duration
			errs, ok := 0, 0
			firstErr := ""
			for runCtx.Err() == nil && take() {
				l, f, err := oneRequest(client, tg.url, sc, buf)
				if err != nil {
					errs++
					if firstErr == "" {
						firstErr = err.Error()
					}
					continue
				}
				ok++
				lat = append(lat, l)
				if sc.stream {
					ttfb = append(ttfb, f)
				}
			}
			mu.Lock()
			res.ok += ok
			res.errors += errs
			if res.firstError == "" {
				res.firstError = firstErr
			}
			res.latencies = append(res.latencies, lat...)
			res.ttfbs = append(res.ttfbs, ttfb...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	sortDurations(res.latencies)
	sortDurations(res.ttfbs)
	return res
}

// oneRequest sends one chat request and reads the whole response. It
// returns the total latency and the time to the first body byte. Requests
// are not bound to the run's context, so a run's end never cuts one short.
func oneRequest(client *http.Client, base string, sc scenario, buf []byte) (time.Duration, time.Duration, error) {
	req, err := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", bytes.NewReader(sc.body))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+userKey)
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	var first time.Duration
	var tail []byte
	total := 0
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			if total == 0 {
				first = time.Since(start)
			}
			total += n
			tail = append(tail, buf[:n]...)
			if len(tail) > 64 {
				tail = tail[len(tail)-64:]
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return 0, 0, fmt.Errorf("reading body after %d bytes: %v", total, rerr)
		}
	}
	latency := time.Since(start)
	if resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("status %d: %q", resp.StatusCode, tail)
	}
	if !bytes.HasSuffix(tail, sc.wantSuffix) {
		return 0, 0, fmt.Errorf("truncated or unexpected body (%d bytes), ends %q", total, tail)
	}
	return latency, first, nil
}

func sortDurations(d []time.Duration) {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(p*float64(len(sorted)-1)+0.5)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func render(cfg benchConfig, results []*runResult, gwRSS, bareRSS, mockRSS int64, failed int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# llmgateway load benchmark\n\n")
	fmt.Fprintf(&b, "- date: %s\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "- machine: %s/%s, %d CPUs, %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
	fmt.Fprintf(&b, "- loopback; mock upstream, bare `httputil.ReverseProxy` and `%s` each a separate process; one client with a pool sized to the concurrency\n", cfg.gatewayBin)
	fmt.Fprintf(&b, "- each run: %s warm-up, then %s measured (at most %d requests); 1 KB chat body; streams carry %d content chunks (%d events), chunk delay %s\n",
		cfg.warmup, cfg.duration, cfg.maxRequests, cfg.chunks, cfg.chunks+3, cfg.chunkDelay)
	fmt.Fprintf(&b, "- added = target latency minus the direct-to-mock latency at the same percentile; TTFB = time to the first body byte\n\n")
	if failed > 0 {
		fmt.Fprintf(&b, "**FAILED: %d requests failed — numbers below are not trustworthy.**\n\n", failed)
	}

	fmt.Fprintf(&b, "## Runs\n\n")
	writeRuns(&b, results)
	direct := map[string]*runResult{}
	bare := map[string]*runResult{}
	gw := map[string]*runResult{}
	key := func(r *runResult) string { return r.scenario + "/" + strconv.Itoa(r.concurrency) }
	for _, r := range results {
		switch r.target {
		case "direct":
			direct[key(r)] = r
		case "bare":
			bare[key(r)] = r
		case "gateway":
			gw[key(r)] = r
		}
	}
	fmt.Fprintf(&b, "\n## Gateway / bare proxy\n\n")
	fmt.Fprintf(&b, "Goal (go-proxy-notes.md): throughput ratio >= 0.85, added p50 ratio <= 1.2.\n\n")
	fmt.Fprintf(&b, "| scenario | conc | req/s ratio | added p50 ratio | added p99 ratio | TTFB p50 ratio | goal |\n")
	fmt.Fprintf(&b, "|---|---:|---:|---:|---:|---:|---|\n")
	for _, r := range results {
		if r.target != "gateway" {
			continue
		}
		k := key(r)
		br, d := bare[k], direct[k]
		if br == nil || d == nil {
			continue
		}
		rpsRatio := ratio(r.rps(), br.rps())
		a50 := ratio(ms(percentile(r.latencies, 0.50)-percentile(d.latencies, 0.50)), ms(percentile(br.latencies, 0.50)-percentile(d.latencies, 0.50)))
		a99 := ratio(ms(percentile(r.latencies, 0.99)-percentile(d.latencies, 0.99)), ms(percentile(br.latencies, 0.99)-percentile(d.latencies, 0.99)))
		ttfb := "—"
		if len(r.ttfbs) > 0 && len(br.ttfbs) > 0 {
			ttfb = fmtRatio(ratio(ms(percentile(r.ttfbs, 0.50)), ms(percentile(br.ttfbs, 0.50))))
		}
		goal := "met"
		switch {
		case rpsRatio < 0.85 || a50 > 1.2:
			goal = "missed"
		case a50 < 0:
			goal = "met (added p50 n/a)"
		}
		if r.errors > 0 || br.errors > 0 {
			goal = "errors"
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s |\n", r.scenario, r.concurrency, fmtRatio(rpsRatio), fmtRatio(a50), fmtRatio(a99), ttfb, goal)
	}

	fmt.Fprintf(&b, "\n## Peak RSS (VmHWM over the whole benchmark)\n\n")
	fmt.Fprintf(&b, "| process | VmHWM MiB |\n|---|---:|\n")
	fmt.Fprintf(&b, "| gateway | %.1f |\n| bare proxy | %.1f |\n| mock upstream | %.1f |\n", mib(gwRSS), mib(bareRSS), mib(mockRSS))
	fmt.Fprintf(&b, "| **gateway / bare** | **%s** |\n", fmtRatio(ratio(float64(gwRSS), float64(bareRSS))))
	return b.String()
}

// writeRuns writes one table row per run, with the latency added over the
// direct run of the same scenario and concurrency.
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
		ttfb := "—"
		if len(r.ttfbs) > 0 {
			ttfb = fmt.Sprintf("%.3f", ms(percentile(r.ttfbs, 0.50)))
		}
		errs := strconv.Itoa(r.errors)
		if r.errors > 0 {
			errs = fmt.Sprintf("**%d** (%s)", r.errors, strings.ReplaceAll(r.firstError, "|", "/"))
		}
		fmt.Fprintf(b, "| %s | %d | %s | %.0f | %.3f | %.3f | %s | %s | %s | %d | %s |\n",
			r.scenario, r.concurrency, r.target, r.rps(), ms(percentile(r.latencies, 0.50)), ms(percentile(r.latencies, 0.99)),
			added50, added99, ttfb, r.ok, errs)
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

// startMockAndProxy starts this binary as the mock upstream and as the
// bare httputil.ReverseProxy in front of it (the baseline).
func startMockAndProxy(self string, chunks int, chunkDelay time.Duration) (*gwproc.Process, *gwproc.Process, error) {
	mock, err := gwproc.Start(gwproc.Config{
		Binary:    self,
		Args:      []string{"-role", "mock", "-listen", "{addr}", "-chunks", strconv.Itoa(chunks), "-chunk-delay", chunkDelay.String()},
		ReadyPath: "/v1/models",
	})
	if err != nil {
		return nil, nil, fmt.Errorf("mock upstream: %v", err)
	}
	proxy, err := gwproc.Start(gwproc.Config{
		Binary:    self,
		Args:      []string{"-role", "proxy", "-listen", "{addr}", "-upstream", mock.URL},
		ReadyPath: "/v1/models",
	})
	if err != nil {
		mock.Stop()
		return nil, nil, fmt.Errorf("bare proxy: %v", err)
	}
	return mock, proxy, nil
}
