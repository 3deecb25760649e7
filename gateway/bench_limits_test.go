package gateway

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/store"
	"github.com/llmgateway/llmgateway/gateway/internal/translate"
)

// BenchmarkLimiter measures one metered request's limiter work — the
// check-and-count before the upstream call and the accounting after it —
// for a user counted in 3 scopes (the user and one group, both with
// request, token and cost limits, plus the synthetic total), against the
// in-process store and against a real redis-server on loopback. It
// reports the store round trips per request (roundtrips/op): 2 for both,
// whatever the number of scopes.
//
// The Redis case starts its own redis-server (os.StartProcess, as the
// real-Redis tests do: this file is interpreted by `yaegi test` too) and
// is skipped when redis-server is not on PATH, unless
// LLMGW_REQUIRE_REDIS=1.
func BenchmarkLimiter(b *testing.B) {
	b.Run("memory", func(b *testing.B) {
		ms := &countingStore{inner: newMemoryStore(nil)}
		var logs bytes.Buffer
		l := newLimiter(ms, nil, false, nil, newLogger("bench", &logs))
		runLimiterBench(b, l, &logs, func() int64 { return ms.calls.Load() })
	})
	b.Run("redis", func(b *testing.B) {
		addr := benchRedisServer(b)
		rs := store.NewRedis(store.RedisSettings{Address: addr})
		defer rs.Close()
		var logs bytes.Buffer
		// failOpen off: a store error must fail the benchmark, never be
		// absorbed by the in-process fallback.
		l := newLimiter(rs, nil, false, nil, newLogger("bench", &logs))
		runLimiterBench(b, l, &logs, func() int64 { return rs.RoundTrips() })
	})
}

// benchLimiterScopes is a 3-scope user whose limits are never reached
// but make the check read the token and cost budgets (the MGET).
func benchLimiterScopes() []limitScope {
	const huge = int64(1) << 60
	user := &compiledLimits{requestsPerMinute: huge, tokensPerDay: huge, costPerDayMicros: huge}
	group := &compiledLimits{requestsPerDay: huge, tokensPerMonth: huge, costPerMonthMicros: huge}
	return []limitScope{newLimitScope("user", "bench-user", user), newLimitScope("group", "bench-group", group), newLimitScope("total", "all", nil)}
}

func runLimiterBench(b *testing.B, l *limiter, logs *bytes.Buffer, roundTrips func() int64) {
	scopes := benchLimiterScopes()
	u := translate.Usage{PromptTokens: 180, CompletionTokens: 6}
	ctx := context.Background()
	// Warm up (the Redis client dials its first connection here).
	if e := l.checkAndCount(ctx, scopes); e != nil {
		b.Fatalf("checkAndCount: %s", e.Error())
	}
	l.account(ctx, scopes, u, 1234)
	start := roundTrips()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if e := l.checkAndCount(ctx, scopes); e != nil {
			b.Fatalf("checkAndCount: %s", e.Error())
		}
		l.account(ctx, scopes, u, 1234)
	}
	b.StopTimer()
	b.ReportMetric(float64(roundTrips()-start)/float64(b.N), "roundtrips/op")
	if logs.Len() > 0 {
		b.Fatalf("the limiter logged errors:\n%s", logs.String())
	}
}

// benchRedisServer starts a throwaway redis-server on a free loopback
// port (no persistence, in a temp dir), waits for PING and kills it when
// the benchmark ends.
func benchRedisServer(b *testing.B) string {
	b.Helper()
	path := ""
	dirs := filepath.SplitList(os.Getenv("PATH"))
	for i := 0; i < len(dirs) && path == ""; i++ {
		if dirs[i] == "" {
			continue
		}
		p := filepath.Join(dirs[i], "redis-server")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			path = p
		}
	}
	if path == "" {
		if os.Getenv("LLMGW_REQUIRE_REDIS") == "1" {
			b.Fatal("LLMGW_REQUIRE_REDIS=1 but redis-server is not on PATH")
		}
		b.Skip("redis-server is not on PATH: skipping the Redis limiter benchmark")
	}
	dir := b.TempDir()
	for attempt := 0; attempt < 3; attempt++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		addr := ln.Addr().String()
		_, port, _ := net.SplitHostPort(addr)
		_ = ln.Close()
		devNull, err := os.Open(os.DevNull)
		if err != nil {
			b.Fatal(err)
		}
		argv := []string{path, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--dir", dir, "--logfile", filepath.Join(dir, "redis.log")}
		proc, err := os.StartProcess(path, argv, &os.ProcAttr{Dir: dir, Files: []*os.File{devNull, devNull, devNull}})
		_ = devNull.Close()
		if err != nil {
			b.Fatalf("starting redis-server: %v", err)
		}
		exited := make(chan struct{})
		go func() {
			defer close(exited)
			_, _ = proc.Wait()
		}()
		stop := func() {
			_ = proc.Kill()
			<-exited
		}
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			select {
			case <-exited:
				deadline = time.Now() // died (port taken?): next attempt
				continue
			default:
			}
			if benchRedisAnswers(addr) {
				b.Cleanup(stop)
				return addr
			}
			time.Sleep(20 * time.Millisecond)
		}
		stop()
	}
	log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
	b.Fatalf("redis-server did not start:\n%s", log)
	return ""
}

// benchRedisAnswers reports whether addr answers a PING.
func benchRedisAnswers(addr string) bool {
	nc, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(time.Second))
	if _, err := nc.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(nc).ReadString('\n')
	return err == nil && line == "+PONG\r\n"
}
