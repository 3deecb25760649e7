//go:build !yaegi
// +build !yaegi

package store

import (
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// startRedisServer runs redis-server on a free loopback port for the
// test, or skips.
func startRedisServer(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("LLMGW_REQUIRE_REDIS") == "1" {
			t.Fatalf("redis-server not installed and LLMGW_REQUIRE_REDIS=1")
		}
		t.Skip("redis-server not installed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(path, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr := "127.0.0.1:" + strconv.Itoa(port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on %s did not start: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
