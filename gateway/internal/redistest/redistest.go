// Package redistest starts a throwaway redis-server for the core's own
// tests and benchmarks. It uses os.StartProcess (not os/exec, which the
// Yaegi interpreter does not provide), so the tests that use it run
// under `yaegi test` too.
package redistest

import (
	"bufio"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// Start runs redis-server on a free loopback port (no persistence, in a
// temp dir), waits for PING, kills it when the test ends and returns its
// address. Without redis-server on PATH the test is skipped, unless
// LLMGW_REQUIRE_REDIS=1, which fails it.
func Start(tb testing.TB) string {
	tb.Helper()
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
			tb.Fatal("LLMGW_REQUIRE_REDIS=1 but redis-server is not on PATH")
		}
		tb.Skip("redis-server is not on PATH")
	}
	dir := tb.TempDir()
	for attempt := 0; attempt < 3; attempt++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		addr := ln.Addr().String()
		_, port, _ := net.SplitHostPort(addr)
		_ = ln.Close()
		devNull, err := os.Open(os.DevNull)
		if err != nil {
			tb.Fatal(err)
		}
		argv := []string{path, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--dir", dir, "--logfile", filepath.Join(dir, "redis.log")}
		proc, err := os.StartProcess(path, argv, &os.ProcAttr{Dir: dir, Files: []*os.File{devNull, devNull, devNull}})
		_ = devNull.Close()
		if err != nil {
			tb.Fatalf("starting redis-server: %v", err)
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
			if exitedYet(exited) {
				deadline = time.Now() // died (port taken?): next attempt
				continue
			}
			if answers(addr) {
				tb.Cleanup(stop)
				return addr
			}
			time.Sleep(20 * time.Millisecond)
		}
		stop()
	}
	log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
	tb.Fatalf("redis-server did not start:\n%s", log)
	return ""
}

// answers reports whether addr answers a PING.
func answers(addr string) bool {
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

// exitedYet reports whether exited is closed, without a select statement
// (see gateway/internal/chans; this helper package imports no other).
func exitedYet(exited chan struct{}) bool {
	v, _ := reflect.ValueOf(exited).TryRecv()
	return v.IsValid()
}
