package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/llmgateway/llmgateway/integration/benchkit"
	"github.com/llmgateway/llmgateway/integration/gwproc"
)

type benchConfig struct {
	gatewayBin  string
	targets     []string
	protocols   []string
	steps       []int
	drip        time.Duration
	settle      time.Duration
	hold        time.Duration
	promptBytes int
	targetEnv   []string
	parallel    int
	sources     int
	profileDir  string
	fdLimit     uint64

	// debug is set when the gateway is the debug build, whose
	// /debug/stats gives goroutine counts and heap figures.
	debug bool
}

// sample is one step's reading of the target process.
type sample struct {
	streams  int
	proc     gwproc.ProcSample
	stats    *gwproc.DebugStats // nil without the debug build
	live     *gwproc.DebugStats // the same read after a garbage collection
	upstream int64              // streams the upstream holds open
	eventsPS float64            // SSE events/s delivered to the clients over the settle window
	openTime time.Duration      // how long opening the step's new streams took
}

// phaseResult is one target's run over the steps, with one upstream
// protocol.
type phaseResult struct {
	target   string
	protocol string
	binary   string
	idle     sample // before any stream
	samples  []sample
	held     []sample // the top step's further samples
	capped   string   // why the top steps were lowered, if they were
	failed   int64
	err      string
	profile  string // the heap profile saved at the top step, if any
	settle   time.Duration
}

func runBench(ctx context.Context, cfg *benchConfig) ([]*phaseResult, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "streambench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)

	if cfg.gatewayBin == "" {
		fmt.Fprintf(os.Stderr, "streambench: building the gateway with a debug listener (go build -overlay)\n")
		cfg.gatewayBin, err = gwproc.BuildWithDebug(ctx, dir)
		if err != nil {
			return nil, err
		}
		cfg.debug = true
	}
	certFile, keyFile, err := writeTestCert(dir)
	if err != nil {
		return nil, err
	}
	tlsAddr, err := gwproc.FreeAddr()
	if err != nil {
		return nil, err
	}
	up, err := gwproc.Start(gwproc.Config{
		Binary:    self,
		Args:      []string{"-role", "upstream", "-listen", "{addr}", "-tls-listen", tlsAddr, "-cert", certFile, "-key", keyFile, "-drip", cfg.drip.String()},
		ReadyPath: "/readyz",
	})
	if err != nil {
		return nil, fmt.Errorf("drip upstream: %v", err)
	}
	defer up.Stop()
	upstreamURLs := map[string]string{"h1": up.URL, "h2": "https://" + tlsAddr}

	var results []*phaseResult
	for _, proto := range cfg.protocols {
		upURL, ok := upstreamURLs[proto]
		if !ok {
			return nil, fmt.Errorf("unknown upstream protocol %q (h1, h2)", proto)
		}
		for _, target := range cfg.targets {
			if ctx.Err() != nil {
				return results, ctx.Err()
			}
			res, err := runPhase(ctx, *cfg, dir, self, target, proto, upURL, certFile, up)
			if err != nil {
				return nil, fmt.Errorf("%s/%s: %v", target, proto, err)
			}
			results = append(results, res)
		}
	}
	return results, nil
}

// startTarget starts the process under measurement.
func startTarget(cfg benchConfig, dir, self, target, upURL, certFile string) (*gwproc.Process, string, error) {
	env := append([]string{"DO_NOT_TRACK=1", "SSL_CERT_FILE=" + certFile, "LLMGW_DRAIN_DELAY=0s", "LLMGW_SHUTDOWN_TIMEOUT=2s"}, cfg.targetEnv...)
	switch target {
	case "gateway":
		path := filepath.Join(dir, "config.json")
		if err := os.WriteFile(path, gatewayConfig(upURL), 0o600); err != nil {
			return nil, "", err
		}
		debugAddr := ""
		if cfg.debug {
			var err error
			if debugAddr, err = gwproc.FreeAddr(); err != nil {
				return nil, "", err
			}
			env = append(env, gwproc.DebugListenEnv+"="+debugAddr)
		}
		p, err := gwproc.Start(gwproc.Config{Binary: cfg.gatewayBin, Args: []string{"-config", path, "-listen", "{addr}"}, Env: env})
		return p, debugAddr, err
	case "bare":
		debugAddr, err := gwproc.FreeAddr()
		if err != nil {
			return nil, "", err
		}
		env = append(env, gwproc.DebugListenEnv+"="+debugAddr)
		p, err := gwproc.Start(gwproc.Config{Binary: self, Args: []string{"-role", "proxy", "-listen", "{addr}", "-upstream", upURL}, Env: env})
		return p, debugAddr, err
	}
	return nil, "", fmt.Errorf("unknown target %q (gateway, bare)", target)
}

func runPhase(ctx context.Context, cfg benchConfig, dir, self, target, proto, upURL, certFile string, up *gwproc.Process) (*phaseResult, error) {
	p, debugAddr, err := startTarget(cfg, dir, self, target, upURL, certFile)
	if err != nil {
		return nil, err
	}
	defer p.Stop()
	res := &phaseResult{target: target, protocol: proto, binary: cfg.gatewayBin, settle: cfg.settle}
	if target == "bare" {
		res.binary = "httputil.ReverseProxy"
	}
	steps := append([]int(nil), cfg.steps...)
	if proto == "h1" {
		// Two descriptors a stream, and some headroom for the process's own.
		// An unlimited (RLIM_INFINITY) or huge limit caps nothing.
		limit := math.MaxInt32
		if cfg.fdLimit < math.MaxInt32 {
			limit = (int(cfg.fdLimit) - 64) / 2
		}
		for i, n := range steps {
			if n > limit {
				steps[i] = limit
				res.capped = fmt.Sprintf("steps above %d lowered to %d: over HTTP/1.1 each stream holds two descriptors and RLIMIT_NOFILE's hard limit is %d here", limit, limit, cfg.fdLimit)
			}
		}
	}

	client := newStreamClient(p.Addr, userKey, benchModel, cfg.promptBytes, cfg.sources)
	defer client.closeAll()
	// Let the process settle before the idle reading.
	time.Sleep(time.Second)
	if res.idle, err = takeSample(p, debugAddr, up, 0); err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "streambench: %s/%s idle: RSS %.1f MiB, %d threads, %d FDs\n", target, proto, mib(res.idle.proc.RSSKB), res.idle.proc.Threads, res.idle.proc.FDs)
	for i, n := range steps {
		if i > 0 && n == steps[i-1] {
			continue
		}
		start := time.Now()
		if err := client.openMore(ctx, n-client.open(), cfg.parallel); err != nil {
			res.err = fmt.Sprintf("opening stream %d: %v", client.open()+1, err)
			break
		}
		opened := time.Since(start)
		before := client.events.Load()
		t0 := time.Now()
		if err := benchkit.Sleep(ctx, cfg.settle); err != nil {
			return nil, err
		}
		s, err := takeSample(p, debugAddr, up, n)
		if err != nil {
			return nil, err
		}
		s.eventsPS = float64(client.events.Load()-before) / time.Since(t0).Seconds()
		s.openTime = opened
		res.samples = append(res.samples, s)
		line := fmt.Sprintf("streambench: %s/%s %6d streams: RSS %7.1f MiB, %5d threads, %6d FDs, upstream holds %d, %.0f events/s, opened in %.1fs",
			target, proto, n, mib(s.proc.RSSKB), s.proc.Threads, s.proc.FDs, s.upstream, s.eventsPS, opened.Seconds())
		if s.stats != nil {
			line += fmt.Sprintf(", %d goroutines, heap in use %.1f MiB, live heap %.1f MiB, stacks %.1f MiB",
				s.stats.Goroutines, float64(s.stats.HeapInuse)/(1<<20), float64(s.live.HeapAlloc)/(1<<20), float64(s.stats.StackInuse)/(1<<20))
		}
		fmt.Fprintln(os.Stderr, line)
		if f := client.failed.Load(); f > 0 {
			res.failed = f
			res.err = client.firstError()
			break
		}
	}
	// Hold the top step: does RSS keep climbing once the streams are open?
	for held := time.Duration(0); res.err == "" && held < cfg.hold; held += cfg.settle {
		before := client.events.Load()
		t0 := time.Now()
		if err := benchkit.Sleep(ctx, cfg.settle); err != nil {
			return nil, err
		}
		s, err := takeSample(p, debugAddr, up, client.open())
		if err != nil {
			return nil, err
		}
		s.eventsPS = float64(client.events.Load()-before) / time.Since(t0).Seconds()
		res.held = append(res.held, s)
		fmt.Fprintf(os.Stderr, "streambench: %s/%s held %3.0fs: RSS %7.1f MiB, live heap %.1f MiB\n", target, proto, (held + cfg.settle).Seconds(), mib(s.proc.RSSKB), float64(s.live.HeapAlloc)/(1<<20))
		if f := client.failed.Load(); f > 0 {
			res.failed = f
			res.err = client.firstError()
		}
	}
	if cfg.profileDir != "" && debugAddr != "" && res.err == "" {
		res.profile, err = saveHeapProfile(debugAddr, cfg.profileDir, target+"-"+proto+"-"+strconv.Itoa(client.open()))
		if err != nil {
			return nil, err
		}
	}
	res.failed = client.failed.Load()
	client.closeAll()
	if p.Exited() {
		return nil, fmt.Errorf("the %s process died during the run; output:\n%s", target, p.Logs())
	}
	return res, nil
}

func takeSample(p *gwproc.Process, debugAddr string, up *gwproc.Process, streams int) (sample, error) {
	s := sample{streams: streams}
	var err error
	if s.proc, err = gwproc.SampleProc(p.PID()); err != nil {
		return s, err
	}
	if debugAddr != "" {
		stats, err := gwproc.ReadDebugStats(debugAddr)
		if err != nil {
			return s, err
		}
		s.stats = &stats
		live, err := gwproc.ReadLiveHeap(debugAddr)
		if err != nil {
			return s, err
		}
		s.live = &live
	}
	var upStats struct {
		Active int64 `json:"active"`
	}
	if err := getJSON(up.URL+"/stats", &upStats); err != nil {
		return s, fmt.Errorf("upstream stats: %v", err)
	}
	s.upstream = upStats.Active
	return s, nil
}

func getJSON(u string, v interface{}) error {
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: status %d", u, resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// saveHeapProfile writes the target's heap profile (pprof format, read
// with go tool pprof) into dir and returns its path.
func saveHeapProfile(debugAddr, dir, name string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	client := &http.Client{Timeout: 60 * time.Second}
	resp, err := client.Get("http://" + debugAddr + "/debug/pprof/heap?gc=1")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	path := filepath.Join(dir, "heap-"+name+".pb.gz")
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return "", err
	}
	return path, f.Close()
}

func mib(kb int64) float64 { return float64(kb) / 1024 }
