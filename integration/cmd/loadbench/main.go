// Command loadbench compares the gateway binary with a bare
// httputil.ReverseProxy on loopback, side by side, in front of the same
// mock upstream.
//
// It starts the mock upstream and the bare proxy (both this program
// re-executed with -role) and bin/llmgateway with a generated config (an
// openai-type provider at the mock, and an anthropic-type one for the
// translated target), then drives each target — the mock directly, the
// bare proxy, the gateway, the gateway translating an Anthropic upstream
// stream for an OpenAI client — with one pooled HTTP client:
// non-streaming 1 KB chat requests at each -concurrency level and streamed
// ones at each -stream-concurrency level, for a fixed duration per run, in
// -rounds interleaved rounds (the targets' order rotating). It prints a
// markdown report of medians and ranges over the rounds (requests/s,
// p50/p99 latency, latency added over the direct mock, time to the first
// streamed byte, the streams' distance to the bare proxy against their
// targets, errors, peak RSS) and writes it to -out. It exits 1 when any
// request failed.
//
//	loadbench -gateway bin/llmgateway -out bench/latest.md -duration 2s -rounds 3 -concurrency 1,32 -stream-concurrency 1,8,32
//
// -baseline BIN adds a second gateway binary (built from another commit)
// with the same configuration, interleaved with the first, for
// before/after tables. -profile DIR measures the workspace's gateway built
// with a pprof listener and saves its CPU and allocation profiles of the
// first round's streamed cells above concurrency 1. -strace-conc N adds an
// untimed streamed run at concurrency N per target under strace -c -f:
// syscalls per request.
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
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
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
	concurrency := flag.String("concurrency", "1,32", "comma-separated concurrency levels of the non-streaming scenario")
	streamConcurrency := flag.String("stream-concurrency", "1,8,32", "comma-separated concurrency levels of the streaming scenario")
	rounds := flag.Int("rounds", 3, "interleaved rounds of every cell (medians are reported)")
	baseline := flag.String("baseline", "", "a second gateway binary (say, built from a base commit) measured interleaved with -gateway")
	straceConc := flag.Int("strace-conc", 0, "when > 0: one untimed streamed run per target at this concurrency under strace -c -f (syscalls per request)")
	timeout := flag.Duration("timeout", 30*time.Minute, "hard bound on the whole benchmark")
	traefikBin := flag.String("traefik", "", "Traefik binary: benchmark the plugin in a real Traefik, side by side with Traefik alone (the -concurrency levels are then fixed)")
	pluginDir := flag.String("plugin-dir", ".", "folder laid out like the repository root (.traefik.yml, plugin/ with vendor/) for -traefik")
	anthropic := flag.Bool("anthropic", false, "with -traefik: also an Anthropic-translated plugin target (the mock speaks Anthropic)")
	traefikLog := flag.String("traefik-log", "ERROR", "with -traefik: Traefik's log level (printed to stderr after the run)")
	only := flag.String("only", "", "with -traefik: comma-separated targets to run besides direct (default all: bare,gateway,traefik,traefik+plugin,...)")
	profile := flag.String("profile", "", "directory for profiles: the gateway's CPU and allocation profiles of the first round's streamed cells above concurrency 1 (the workspace's gateway, built with a pprof listener); with -traefik, CPU profiles of the plugin's Traefik during its c>1 cells, and a heap profile at the end")
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

	levels, err := parseLevels(*concurrency)
	if err != nil {
		log.Fatalf("loadbench: bad -concurrency: %v", err)
	}
	streamLevels, err := parseLevels(*streamConcurrency)
	if err != nil {
		log.Fatalf("loadbench: bad -stream-concurrency: %v", err)
	}
	if *rounds < 1 {
		log.Fatalf("loadbench: -rounds must be at least 1")
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	cfg := benchConfig{
		gatewayBin: *gatewayBin, duration: *duration, warmup: *warmup, maxRequests: *maxRequests,
		levels: levels, streamLevels: streamLevels, rounds: *rounds, chunks: *chunks, chunkDelay: *chunkDelay,
		baselineBin: *baseline, straceConc: *straceConc,
	}
	var (
		report string
		failed int
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
		cfg.profileDir = *profile
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

// parseLevels reads a comma-separated list of concurrency levels.
func parseLevels(s string) ([]int, error) {
	var levels []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q", s)
		}
		levels = append(levels, n)
	}
	return levels, nil
}
