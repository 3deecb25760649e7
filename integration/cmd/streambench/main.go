// Command streambench measures what concurrent SSE streams cost one
// gateway process: it opens thousands of streamed chat completions
// through it at once, holds them open against a slow-dripping upstream,
// and samples the process's RSS, goroutines, OS threads and open file
// descriptors at each step (say 1,000, 2,500, 5,000, 7,500 and 10,000
// streams). A linear fit of RSS over the steps gives the memory per
// stream and says whether the cost is linear. It writes a markdown
// report.
//
//	streambench -out bench/streams.md -steps 1000,2500,5000,7500,10000
//
// Processes: the drip upstream (this program with -role upstream: an
// OpenAI-compatible server whose streams send the role chunk at once and
// then one content chunk every -drip, forever), the gateway binary built
// from the workspace with a debug listener added by go build -overlay
// (gwproc.BuildWithDebug: pprof and goroutine counts; nothing else
// differs from bin/llmgateway), and, as the floor, a bare
// httputil.ReverseProxy (-role proxy). Each target is measured with the
// upstream spoken to over HTTP/2 with TLS (the hosted providers'
// protocol: streams share a few connections) and over plain HTTP/1.1
// (one upstream connection per stream, like a self-hosted server).
//
// A stream costs the target two file descriptors over HTTP/1.1 (client
// and upstream connections), so a step above half the RLIMIT_NOFILE hard
// limit is lowered to fit and the report says so. The tool raises its
// own soft limit to the hard limit; the children inherit it.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/llmgateway/llmgateway/integration/benchkit"
	"github.com/llmgateway/llmgateway/integration/gwproc"
)

const (
	userKey     = "sk-streambench-user"
	upstreamKey = "sk-streambench-upstream"
	benchModel  = "gpt-5-mini"
)

func main() {
	role := flag.String("role", "bench", "bench, or (internal) upstream / proxy")
	listen := flag.String("listen", "127.0.0.1:0", "with -role upstream/proxy: listen address")
	tlsListen := flag.String("tls-listen", "", "with -role upstream: HTTP/2-over-TLS listen address")
	certFile := flag.String("cert", "", "with -role upstream: TLS certificate (PEM)")
	keyFile := flag.String("key", "", "with -role upstream: TLS key (PEM)")
	upstream := flag.String("upstream", "", "with -role proxy: upstream base URL")
	drip := flag.Duration("drip", 5*time.Second, "interval between the upstream's content chunks on every stream")
	gatewayBin := flag.String("gateway", "", "gateway binary to measure (default: build the workspace's binary with a debug listener, for goroutine counts)")
	targets := flag.String("targets", "gateway,bare", "comma-separated targets: gateway, bare")
	protocols := flag.String("upstream-protocols", "h2,h1", "comma-separated upstream protocols: h2 (TLS), h1 (plain)")
	steps := flag.String("steps", "1000,2500,5000,7500,10000", "comma-separated concurrent stream counts, ascending")
	settle := flag.Duration("settle", 0, "wait after a step's streams are open before sampling (default 2×drip)")
	hold := flag.Duration("hold", time.Minute, "how long the top step is held after its sample, sampled every settle, before the streams close")
	promptBytes := flag.Int("prompt-bytes", 1024, "size of each request's user message")
	targetEnv := flag.String("target-env", "", "comma-separated KEY=VALUE pairs added to the measured processes' environment (GOGC=50, GOMEMLIMIT=..., GODEBUG=...)")
	parallel := flag.Int("open-parallel", 32, "streams opened at a time")
	sources := flag.Int("sources", 8, "loopback source addresses for the client's connections (127.0.0.2, ...)")
	out := flag.String("out", "bench/streams.md", "markdown report path (empty: stdout only)")
	profileDir := flag.String("profile", "", "directory for a heap profile of the gateway at its top step (needs the debug build)")
	timeout := flag.Duration("timeout", 40*time.Minute, "hard bound on the whole benchmark")
	flag.Parse()

	switch *role {
	case "upstream":
		serveUpstream(*listen, *tlsListen, *certFile, *keyFile, *drip)
		return
	case "proxy":
		if addr := os.Getenv(gwproc.DebugListenEnv); addr != "" {
			if err := serveDebug(addr); err != nil {
				log.Fatalf("streambench proxy: %v", err)
			}
		}
		serveProxy(*listen, *upstream)
		return
	case "bench":
	default:
		log.Fatalf("streambench: unknown -role %q", *role)
	}

	cfg := benchConfig{drip: *drip, settle: *settle, hold: *hold, promptBytes: *promptBytes, parallel: *parallel, sources: *sources, profileDir: *profileDir, gatewayBin: *gatewayBin}
	if cfg.settle == 0 {
		cfg.settle = 2 * cfg.drip
	}
	var err error
	if cfg.steps, err = parseSteps(*steps); err != nil {
		log.Fatalf("streambench: -steps: %v", err)
	}
	cfg.targets = splitList(*targets)
	cfg.targetEnv = splitList(*targetEnv)
	cfg.protocols = splitList(*protocols)
	cfg.fdLimit, err = raiseFDLimit()
	if err != nil {
		log.Fatalf("streambench: RLIMIT_NOFILE: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	results, err := runBench(ctx, &cfg)
	if err != nil {
		log.Fatalf("streambench: %v", err)
	}
	report := render(cfg, results)
	fmt.Print(report)
	if *out != "" {
		if err := benchkit.WriteReport("streambench", *out, report); err != nil {
			log.Fatalf("streambench: %v", err)
		}
	}
	for _, r := range results {
		if r.failed > 0 || r.err != "" {
			fmt.Fprintf(os.Stderr, "streambench: FAILED: %s/%s: %d streams failed %s\n", r.target, r.protocol, r.failed, r.err)
			os.Exit(1)
		}
	}
}

func parseSteps(s string) ([]int, error) {
	var steps []int
	for _, f := range splitList(s) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad step %q", f)
		}
		steps = append(steps, n)
	}
	if len(steps) == 0 || !sort.IntsAreSorted(steps) {
		return nil, fmt.Errorf("%q: want ascending counts", s)
	}
	return steps, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// raiseFDLimit sets this process's RLIMIT_NOFILE soft limit to its hard
// limit and returns it. Setting it explicitly also makes the children
// inherit it (Go otherwise restores the original soft limit on exec).
func raiseFDLimit() (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	return lim.Max, nil
}

// serveProxy runs the floor: benchkit's bare httputil.ReverseProxy with
// a sized idle pool, HTTP/2 to TLS upstreams.
func serveProxy(addr, upstream string) {
	h, err := benchkit.BareProxy(upstream, upstreamKey, &http.Transport{
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   true,
	})
	if err != nil {
		log.Fatalf("streambench proxy: %v", err)
	}
	benchkit.Serve(addr, h)
}

// gatewayConfig is the measured gateway's config: one openai-type
// provider at the drip upstream, one user.
func gatewayConfig(upstreamURL string) []byte {
	cfg, _ := json.Marshal(map[string]interface{}{
		"providers": map[string]interface{}{
			"drip": map[string]interface{}{"type": "openai", "baseUrl": upstreamURL, "apiKey": upstreamKey, "models": []string{benchModel}},
		},
		"groups": map[string]interface{}{"bench": map[string]interface{}{}},
		"users":  map[string]interface{}{"inline": []map[string]interface{}{{"name": "bench", "group": "bench", "apiKey": userKey}}},
	})
	return cfg
}
