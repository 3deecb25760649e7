// Command soak runs the gateway binary under mixed traffic with faults for
// a long while and fails when its memory or goroutines keep growing.
//
//	soak -duration 30m -csv docs/soak.csv -png docs/soak.png
//
// It starts a real redis-server (integration/redisproc), the mock upstream
// (integration/mockupstream, in this process) and the gateway binary built
// from the workspace with a debug listener added by go build -overlay
// (gwproc.BuildWithDebug: goroutine counts; nothing else differs from
// bin/llmgateway), then sends ~30 requests/s (-scale) of: chat, streamed
// chat, streams translated to an anthropic-type provider, /v1/messages
// (native and translated), native passthrough, clients that cancel
// mid-stream, a user far over its requestsPerMinute, and a user whose key
// every users-file edit rotates. Every -redis-every it stops Redis and
// restarts it on the same port; every -users-every it rewrites the users
// file. Every -sample it records the gateway's RSS, goroutines, threads,
// open FDs and heap in use into the CSV, and at the end draws them over
// time into the PNG.
//
// The run fails (exit 1) when, after the warm-up (the first third), RSS
// or goroutines trend upward (see trend.go), when more than 0.1% of the
// requests ended in an unexpected way, when the limited user was never
// refused, or when the gateway died.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/llmgateway/llmgateway/integration/benchkit"
	"github.com/llmgateway/llmgateway/integration/gwproc"
	"github.com/llmgateway/llmgateway/integration/mockupstream"
	"github.com/llmgateway/llmgateway/integration/redisproc"
)

func main() {
	duration := flag.Duration("duration", 30*time.Minute, "how long the traffic runs")
	scale := flag.Float64("scale", 1, "multiplies every kind's request rate (1: ~30 requests/s)")
	sampleEvery := flag.Duration("sample", 10*time.Second, "sampling interval")
	redisEvery := flag.Duration("redis-every", 3*time.Minute, "interval between Redis restarts (0: none)")
	usersEvery := flag.Duration("users-every", 2*time.Minute, "interval between users-file edits (0: none)")
	csvPath := flag.String("csv", "docs/soak.csv", "samples CSV")
	pngPath := flag.String("png", "docs/soak.png", "chart PNG (empty: none)")
	gatewayBin := flag.String("gateway", "", "gateway binary (default: build the workspace's with a debug listener; another binary has no goroutine count, its threads are used instead)")
	flag.Parse()
	if *duration <= 0 || *sampleEvery <= 0 || *scale <= 0 {
		log.Fatal("soak: -duration, -sample and -scale must be positive")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := soakConfig{duration: *duration, scale: *scale, sample: *sampleEvery, redisEvery: *redisEvery, usersEvery: *usersEvery,
		csvPath: *csvPath, pngPath: *pngPath, gatewayBin: *gatewayBin}
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintf(os.Stderr, "soak: FAILED: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "soak: passed\n")
}

type soakConfig struct {
	duration, sample, redisEvery, usersEvery time.Duration
	scale                                    float64
	csvPath, pngPath, gatewayBin             string
}

// env is the soak's processes and files.
type env struct {
	dir       string
	redis     *redisproc.Server
	gateway   *gwproc.Process
	debugAddr string // "" without the debug build
	usersFile string
	keys      *keyring
	mock      *http.Server
}

func run(ctx context.Context, cfg soakConfig) error {
	dir, err := os.MkdirTemp("", "soak-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	e, err := setup(ctx, cfg, dir)
	if err != nil {
		return err
	}
	defer e.close()

	tr := &traffic{gateway: e.gateway.URL, keys: e.keys, kinds: mix(), tallies: map[string]*tally{},
		client: &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{
			MaxIdleConns: 256, MaxIdleConnsPerHost: 128, IdleConnTimeout: 30 * time.Second, DisableCompression: true}}}
	for _, k := range tr.kinds {
		tr.tallies[k.name] = &tally{}
	}
	rec, err := newRecorder(cfg.csvPath)
	if err != nil {
		return err
	}
	defer rec.close()

	runCtx, cancel := context.WithTimeout(ctx, cfg.duration)
	defer cancel()
	start := rec.start
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); tr.run(runCtx, cfg.scale) }()
	faultErr := make(chan error, 1)
	go func() { defer wg.Done(); faultErr <- e.faults(runCtx, cfg, rec) }()

	fmt.Fprintf(os.Stderr, "soak: %s of mixed traffic against %s (pid %d), samples every %s into %s\n", cfg.duration, e.gateway.URL, e.gateway.PID(), cfg.sample, cfg.csvPath)
	tick := time.NewTicker(cfg.sample)
	defer tick.Stop()
	sampling := true
	for sampling {
		select {
		case <-runCtx.Done():
			sampling = false
		case <-tick.C:
		}
		if e.gateway.Exited() {
			cancel()
			wg.Wait()
			return fmt.Errorf("the gateway exited during the soak; output:\n%s", e.gateway.Logs())
		}
		s, err := e.sample(time.Since(start), tr)
		if err != nil {
			cancel()
			wg.Wait()
			return err
		}
		if err := rec.add(s); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "soak: %6.1f min  RSS %6.1f MiB  goroutines %5d  threads %3d  FDs %4d  requests %7d  unexpected %d\n",
			s.at.Minutes(), s.rssMiB, s.goroutines, s.threads, s.fds, s.requests, s.unexpected)
	}
	wg.Wait()
	if err := <-faultErr; err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		return err
	}
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted after %s", time.Since(start).Round(time.Second))
	}
	elapsed := time.Since(start)
	verdict := judge(rec.samples, e.debugAddr != "")
	summary := summarize(tr, rec, elapsed, verdict)
	fmt.Fprint(os.Stderr, summary)
	if cfg.pngPath != "" {
		if err := drawChart(cfg.pngPath, rec, verdict, elapsed, e.debugAddr != ""); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "soak: wrote %s\n", cfg.pngPath)
	}
	return verdict.err(tr)
}

func setup(ctx context.Context, cfg soakConfig, dir string) (*env, error) {
	e := &env{dir: dir, keys: &keyring{}}
	redisBin, err := redisproc.Lookup()
	if err != nil {
		return nil, fmt.Errorf("redis-server is not on PATH (%v); install it (apt-get install redis-server)", err)
	}
	if e.redis, err = redisproc.StartServer(redisBin, dir); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		e.close()
		return nil, err
	}
	mock := mockupstream.New(mockupstream.Options{RecordLimit: -1, ChunkDelay: 20 * time.Millisecond})
	e.mock = &http.Server{Handler: mock, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = e.mock.Serve(ln) }()
	mockURL := "http://" + ln.Addr().String()

	e.usersFile = filepath.Join(dir, "users.json")
	if err := e.writeUsers(0); err != nil {
		e.close()
		return nil, err
	}
	bin := cfg.gatewayBin
	envVars := []string{"DO_NOT_TRACK=1", "LLMGW_DRAIN_DELAY=0s", "LLMGW_SHUTDOWN_TIMEOUT=5s"}
	if bin == "" {
		fmt.Fprintf(os.Stderr, "soak: building the gateway with a debug listener (go build -overlay)\n")
		if bin, err = gwproc.BuildWithDebug(ctx, dir); err != nil {
			e.close()
			return nil, err
		}
		if e.debugAddr, err = gwproc.FreeAddr(); err != nil {
			e.close()
			return nil, err
		}
		envVars = append(envVars, gwproc.DebugListenEnv+"="+e.debugAddr)
	}
	configPath := filepath.Join(dir, "config.json")
	if err := os.WriteFile(configPath, gatewayConfig(mockURL, e.redis.Addr, e.usersFile), 0o600); err != nil {
		e.close()
		return nil, err
	}
	e.gateway, err = gwproc.Start(gwproc.Config{Binary: bin, Args: []string{"-config", configPath, "-listen", "{addr}"}, Env: envVars})
	if err != nil {
		e.close()
		return nil, err
	}
	return e, nil
}

func (e *env) close() {
	if e.gateway != nil {
		_ = e.gateway.Stop()
	}
	if e.mock != nil {
		_ = e.mock.Close()
	}
	if e.redis != nil {
		e.redis.Kill()
	}
}

// gatewayConfig: an openai-type provider, an anthropic-type one and a slow
// one (the mock waits 100 ms between events: the streams clients cancel)
// on the mock; Redis for limits and statistics; a users file.
func gatewayConfig(mockURL, redisAddr, usersFile string) []byte {
	cfg, _ := json.Marshal(map[string]interface{}{
		"providers": map[string]interface{}{
			"mock":   map[string]interface{}{"type": "openai", "baseUrl": mockURL, "apiKey": "sk-soak-upstream", "models": []string{"gpt-5-mini"}},
			"claude": map[string]interface{}{"type": "anthropic", "baseUrl": mockURL, "apiKey": "sk-soak-anthropic", "models": []string{"claude-sonnet-4-5"}},
			"slow": map[string]interface{}{"type": "openai", "baseUrl": mockURL + mockupstream.PathKnobPrefix + "chunk-delay/100ms" + mockupstream.PathKnobPrefix + "chunks/40",
				"apiKey": "sk-soak-upstream", "models": []string{"gpt-slow"}},
		},
		"groups": map[string]interface{}{
			"team":  map[string]interface{}{"providers": []string{}},
			"tight": map[string]interface{}{"providers": []string{}, "limits": map[string]interface{}{"requestsPerMinute": 30}},
		},
		"users": map[string]interface{}{
			"inline": []map[string]interface{}{
				{"name": "alice", "group": "team", "apiKey": aliceKey},
				{"name": "ops", "group": "team", "apiKey": adminKey, "admin": true},
			},
			"file": usersFile,
		},
		"redis":   map[string]interface{}{"address": redisAddr},
		"admin":   map[string]interface{}{"enabled": true},
		"metrics": map[string]interface{}{"enabled": true},
	})
	return cfg
}

// writeUsers writes the users file of edit n: the limited user and the
// rotating user with key n (written to a temp file and renamed over).
func (e *env) writeUsers(n int) error {
	key := "sk-soak-rotating-" + strconv.Itoa(n)
	data, _ := json.Marshal(map[string]interface{}{"users": []map[string]interface{}{
		{"name": "limited", "group": "tight", "apiKey": limitedKey},
		{"name": "rotating", "group": "team", "apiKey": key},
	}})
	tmp := e.usersFile + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, e.usersFile); err != nil {
		return err
	}
	e.keys.set(key)
	return nil
}

// faults restarts Redis and edits the users file on their intervals.
func (e *env) faults(ctx context.Context, cfg soakConfig, rec *recorder) error {
	nextRedis, nextUsers := forever(cfg.redisEvery), forever(cfg.usersEvery)
	start := time.Now()
	edits := 0
	for {
		wait := nextRedis
		if nextUsers < wait {
			wait = nextUsers
		}
		if err := benchkit.Sleep(ctx, time.Until(start.Add(wait))); err != nil {
			return err
		}
		if nextRedis == wait {
			if err := e.redis.Stop(); err != nil {
				return fmt.Errorf("stopping Redis: %v", err)
			}
			// Down for a moment, as a real restart is.
			_ = benchkit.Sleep(ctx, 2*time.Second)
			if err := e.redis.Restart(); err != nil {
				return fmt.Errorf("restarting Redis: %v", err)
			}
			rec.event("redis-restart")
			nextRedis += cfg.redisEvery
		}
		if nextUsers == wait {
			edits++
			if err := e.writeUsers(edits); err != nil {
				return err
			}
			rec.event("users-edit")
			nextUsers += cfg.usersEvery
		}
	}
}

// forever maps a zero interval to one that never comes.
func forever(d time.Duration) time.Duration {
	if d <= 0 {
		return 1 << 62
	}
	return d
}

// sample reads the gateway's resources and the traffic's counts.
func (e *env) sample(at time.Duration, tr *traffic) (sample, error) {
	p, err := gwproc.SampleProc(e.gateway.PID())
	if err != nil {
		return sample{}, err
	}
	s := sample{at: at, rssMiB: float64(p.RSSKB) / 1024, threads: p.Threads, fds: p.FDs, goroutines: -1, heapMiB: -1}
	if e.debugAddr != "" {
		st, err := gwproc.ReadDebugStats(e.debugAddr)
		if err != nil {
			return s, err
		}
		s.goroutines = int(st.Goroutines)
		s.heapMiB = float64(st.HeapInuse) / (1 << 20)
	}
	for _, t := range tr.tallies {
		s.requests += t.ok.Load() + t.expected.Load() + t.unexpected.Load()
		s.unexpected += t.unexpected.Load()
	}
	return s, nil
}
