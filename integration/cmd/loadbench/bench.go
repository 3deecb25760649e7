package main

// The default mode: the gateway binary (and, with -baseline, a second
// gateway binary, built from another commit) side by side with the bare
// httputil.ReverseProxy in front of the same mock, in interleaved rounds.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/llmgateway/llmgateway/integration/gwproc"
)

type benchConfig struct {
	gatewayBin string
	// baselineBin, when set, is a second gateway binary measured with the
	// same configuration, interleaved with the first (before/after).
	baselineBin string
	duration    time.Duration
	warmup      time.Duration
	maxRequests int
	// levels are the non-streaming scenario's concurrency levels,
	// streamLevels the streaming one's.
	levels       []int
	streamLevels []int
	// rounds is how many times every cell runs, the targets' order
	// rotating from one round to the next; the report gives medians.
	rounds     int
	chunks     int
	chunkDelay time.Duration
	// profileDir, when set, receives the gateway's CPU and allocation
	// profiles of the first round's streaming cells above concurrency 1
	// (the gateway is then the workspace's, built with a pprof listener).
	profileDir string
	// straceConc, when above 0, adds one run per streaming target at that
	// concurrency under strace -c -f after the rounds: syscalls per
	// request (not timed: strace slows the process down).
	straceConc int
	// mockPID is the mock upstream's process, for CPU per request.
	mockPID int
}

// The default mode's target names besides tDirect, tBare and tGateway.
const (
	tGatewayTr = "gateway (translated)"
	// tBareAnthropic is the bare proxy relaying the mock's Anthropic
	// stream of the same reply: what the translated targets' upstream
	// side costs without a gateway.
	tBareAnthropic = "bare (anthropic)"
	tBaseline      = "baseline"
	tBaselineTr    = "baseline (translated)"
)

// anthropicModel is what the gateway's anthropic-type provider serves: a
// client asking for it gets an OpenAI stream translated from the mock's
// Anthropic one.
const anthropicModel = "claude-bench"

// gatewayConfig is the benchmarked gateway's configuration: an
// openai-type provider at the mock for benchModel, an anthropic-type one
// for anthropicModel, one user.
func gatewayConfig(mockURL string) ([]byte, error) {
	return json.Marshal(map[string]interface{}{
		"providers": map[string]interface{}{
			"mock":           map[string]interface{}{"type": "openai", "baseUrl": mockURL, "apiKey": upstreamKey, "models": []string{benchModel}},
			"mock-anthropic": map[string]interface{}{"type": "anthropic", "baseUrl": mockURL, "apiKey": upstreamKey, "models": []string{anthropicModel}},
		},
		"groups": map[string]interface{}{"bench": map[string]interface{}{}},
		"users":  map[string]interface{}{"inline": []map[string]interface{}{{"name": "bench", "group": "bench", "apiKey": userKey}}},
	})
}

// benchCell is one scenario at one concurrency.
type benchCell struct {
	sc   scenario
	conc int
}

func runBench(ctx context.Context, cfg benchConfig) (string, int, error) {
	self, err := os.Executable()
	if err != nil {
		return "", 0, err
	}
	for _, bin := range []string{cfg.gatewayBin, cfg.baselineBin} {
		if _, err := os.Stat(bin); bin != "" && err != nil {
			return "", 0, fmt.Errorf("gateway binary: %v (run make build-binary)", err)
		}
	}
	dir, err := os.MkdirTemp("", "loadbench-")
	if err != nil {
		return "", 0, err
	}
	defer os.RemoveAll(dir)

	gatewayBin := cfg.gatewayBin
	var debugEnv []string
	debugAddr := ""
	if cfg.profileDir != "" {
		if err := os.MkdirAll(cfg.profileDir, 0o755); err != nil {
			return "", 0, err
		}
		fmt.Fprintf(os.Stderr, "loadbench: -profile: building the workspace's gateway with a pprof listener (go build -overlay)\n")
		if gatewayBin, err = gwproc.BuildWithDebug(ctx, dir); err != nil {
			return "", 0, err
		}
		if debugAddr, err = gwproc.FreeAddr(); err != nil {
			return "", 0, err
		}
		debugEnv = []string{gwproc.DebugListenEnv + "=" + debugAddr}
	}

	mock, proxy, err := startMockAndProxy(self, cfg.chunks, cfg.chunkDelay)
	if err != nil {
		return "", 0, err
	}
	defer mock.Stop()
	defer proxy.Stop()
	cfg.mockPID = mock.PID()
	gwConfig, err := gatewayConfig(mock.URL)
	if err != nil {
		return "", 0, err
	}
	gw, err := startGatewayIn(gatewayBin, filepath.Join(dir, "gateway"), gwConfig, debugEnv...)
	if err != nil {
		return "", 0, fmt.Errorf("gateway: %v", err)
	}
	defer gw.Stop()
	procs := map[string]*gwproc.Process{"mock": mock, tBare: proxy, tGateway: gw}
	targets := []target{
		{name: tDirect, url: mock.URL},
		{name: tBare, url: proxy.URL, pid: proxy.PID()},
		{name: tBareAnthropic, url: proxy.URL, pid: proxy.PID(), streamOnly: true, anthropic: true},
		{name: tGateway, url: gw.URL, pid: gw.PID(), debugAddr: debugAddr},
		{name: tGatewayTr, url: gw.URL, pid: gw.PID(), model: anthropicModel, streamOnly: true, debugAddr: debugAddr},
	}
	if cfg.baselineBin != "" {
		base, err := startGatewayIn(cfg.baselineBin, filepath.Join(dir, "baseline"), gwConfig)
		if err != nil {
			return "", 0, fmt.Errorf("baseline gateway: %v", err)
		}
		defer base.Stop()
		procs[tBaseline] = base
		targets = append(targets,
			target{name: tBaseline, url: base.URL, pid: base.PID()},
			target{name: tBaselineTr, url: base.URL, pid: base.PID(), model: anthropicModel, streamOnly: true})
	}

	maxConc := 1
	for _, c := range append(append([]int(nil), cfg.levels...), cfg.streamLevels...) {
		if c > maxConc {
			maxConc = c
		}
	}
	client := loadClient(maxConc)
	var cells []benchCell
	for _, c := range cfg.levels {
		cells = append(cells, benchCell{nonStreaming(), c})
	}
	for _, c := range cfg.streamLevels {
		cells = append(cells, benchCell{streaming(), c})
	}
	var results []*runResult
	for round := 0; round < cfg.rounds; round++ {
		for _, cell := range cells {
			var cellTargets []target
			for _, tg := range targets {
				if !tg.streamOnly || cell.sc.stream {
					cellTargets = append(cellTargets, tg)
				}
			}
			for i := range cellTargets {
				// Rotate the order from round to round: no target always
				// runs first (or right after the noisiest one).
				tg := cellTargets[(i+round)%len(cellTargets)]
				if ctx.Err() != nil {
					return "", 0, fmt.Errorf("stopped: %v", ctx.Err())
				}
				profile := cfg.profileDir != "" && round == 0 && cell.sc.stream && cell.conc > 1 && tg.debugAddr != ""
				res, err := runCell(ctx, client, cfg, tg, cell, profile)
				if err != nil {
					return "", 0, err
				}
				res.round = round
				fmt.Fprintf(os.Stderr, "loadbench: round %d %-11s c=%-3d %-22s %7.0f req/s  p50 %6.3f ms  ttfb %6.3f ms  errors %d\n",
					round+1, cell.sc.name, cell.conc, tg.name, res.rps(), ms(percentile(res.latencies, 0.50)), ms(percentile(res.ttfbs, 0.50)), res.errors)
				results = append(results, res)
			}
		}
	}
	var straced []straceResult
	if cfg.straceConc > 0 {
		for _, tg := range targets {
			if tg.name == tDirect {
				continue
			}
			sr, err := straceRun(ctx, client, cfg, tg, benchCell{streaming(), cfg.straceConc}, dir)
			if err != nil {
				return "", 0, fmt.Errorf("strace %s: %v", tg.name, err)
			}
			straced = append(straced, sr)
		}
	}
	rss, err := peakRSS(procs)
	if err != nil {
		return "", 0, err
	}
	failed := 0
	for _, r := range results {
		failed += r.errors
	}
	return render(cfg, targets, results, straced, rss, failed), failed, nil
}

// startGatewayIn starts a gateway binary with its config and its log
// file in its own folder (the gateway and the baseline each have one).
func startGatewayIn(bin, dir string, configJSON []byte, env ...string) (*gwproc.Process, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	// The gateway logs a line per request; written to a file, its lines
	// cost the gateway its write as in production, and not this client a
	// wake-up and a read per request (the bare proxy logs nothing).
	return gwproc.StartGatewayLogFile(bin, dir, configJSON, filepath.Join(dir, "gateway.log"), env...)
}

// runCell is one target's warm-up and measured run of a cell; with
// profile, the gateway's CPU profile over the measured run and its
// allocation profiles before and after it are saved in cfg.profileDir.
func runCell(ctx context.Context, client *http.Client, cfg benchConfig, tg target, cell benchCell, profile bool) (*runResult, error) {
	// Warm-up: fill the connection pools, let the runtimes settle. Its
	// failures count like any other.
	warm := load(ctx, client, tg, cell.sc, cell.conc, cfg.warmup, cfg.maxRequests)
	var profiled chan error
	base := ""
	if profile {
		base = filepath.Join(cfg.profileDir, strings.TrimSuffix(profileName(cell.sc.name, cell.conc, tg.name), ".pprof"))
		if err := fetchProfile(tg.debugAddr, "allocs", base+".allocs-before"); err != nil {
			return nil, fmt.Errorf("allocation profile of %s: %v", tg.name, err)
		}
		secs := int(cfg.duration / time.Second)
		if secs < 1 {
			secs = 1
		}
		profiled = make(chan error, 1)
		go func() { profiled <- fetchProfile(tg.debugAddr, "profile?seconds="+strconv.Itoa(secs), base+".cpu") }()
	}
	cpu := readCPU(tg.pid, cfg.mockPID)
	res := load(ctx, client, tg, cell.sc, cell.conc, cfg.duration, cfg.maxRequests)
	after := readCPU(tg.pid, cfg.mockPID)
	res.cpu, res.mockCPU, res.clientCPU = after[0]-cpu[0], after[1]-cpu[1], after[2]-cpu[2]
	if tg.pid == 0 {
		res.cpu = res.mockCPU // direct: the target is the mock
	}
	if profile {
		if err := <-profiled; err != nil {
			return nil, fmt.Errorf("CPU profile of %s: %v", tg.name, err)
		}
		if err := fetchProfile(tg.debugAddr, "allocs", base+".allocs-after"); err != nil {
			return nil, fmt.Errorf("allocation profile of %s: %v", tg.name, err)
		}
		fmt.Fprintf(os.Stderr, "loadbench: profiled %d requests: go tool pprof -top %s.cpu; go tool pprof -sample_index=alloc_objects -base %s.allocs-before -top %s.allocs-after\n",
			res.ok+res.errors, base, base, base)
	}
	res.errors += warm.errors
	if res.firstError == "" {
		res.firstError = warm.firstError
	}
	if res.errors > 0 {
		fmt.Fprintf(os.Stderr, "loadbench:   first error: %s\n", res.firstError)
	}
	return res, nil
}

// readCPU is the CPU time used so far by the target's process (0: none),
// the mock's and this process; a process that cannot be read counts 0.
func readCPU(targetPID, mockPID int) [3]time.Duration {
	var t [3]time.Duration
	for i, pid := range []int{targetPID, mockPID, os.Getpid()} {
		if pid > 0 {
			t[i], _ = gwproc.CPUTime(pid)
		}
	}
	return t
}

// peakRSS reads each process's peak RSS (VmHWM, KiB) after a run; a
// process that died during it is an error with its output.
func peakRSS(procs map[string]*gwproc.Process) (map[string]int64, error) {
	rss := map[string]int64{}
	for name, p := range procs {
		if p.Exited() {
			return nil, fmt.Errorf("%s died during the run; output:\n%s", name, p.Logs())
		}
		kb, err := gwproc.PeakRSSKB(p.PID())
		if err != nil {
			return nil, fmt.Errorf("reading VmHWM of %s: %v", name, err)
		}
		rss[name] = kb
	}
	return rss, nil
}

// loadClient is the load generator's client: pooled connections for conc
// concurrent requests per target, no proxy, no compression.
func loadClient(conc int) *http.Client {
	return &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			Proxy:               nil,
			MaxIdleConns:        8 * conc,
			MaxIdleConnsPerHost: conc,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
		},
	}
}
