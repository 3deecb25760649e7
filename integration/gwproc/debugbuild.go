package gwproc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// DebugListenEnv names the environment variable that makes a binary built
// by BuildWithDebug serve its debug endpoints on the given address.
const DebugListenEnv = "LLMGW_DEBUG_LISTEN"

// debugFile is the one file BuildWithDebug adds to the binary's main
// package: with DebugListenEnv set it serves net/http/pprof and
// /debug/stats (goroutines and runtime.MemStats as JSON) on that address,
// on a listener of its own, so the gateway's handler never sees them.
// /debug/stats?gc=1 runs a garbage collection first, so heapAlloc is the
// live heap.
const debugFile = `package main

import (
	"encoding/json"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"runtime"
)

func init() {
	addr := os.Getenv("` + DebugListenEnv + `")
	if addr == "" {
		return
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		panic("debug listener: " + err.Error())
	}
	http.HandleFunc("/debug/stats", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("gc") == "1" {
			runtime.GC()
		}
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]uint64{
			"goroutines":  uint64(runtime.NumGoroutine()),
			"heapInuse":   m.HeapInuse,
			"heapAlloc":   m.HeapAlloc,
			"heapSys":     m.HeapSys,
			"heapObjects": m.HeapObjects,
			"stackInuse":  m.StackInuse,
			"sys":         m.Sys,
			"numGC":       uint64(m.NumGC),
		})
	})
	go func() { _ = http.Serve(ln, nil) }()
}
`

// BuildWithDebug compiles the gateway binary into dir like Build, with
// one file added to its main package through "go build -overlay" (the
// repository is not touched): when DebugListenEnv is set the process
// serves net/http/pprof and /debug/stats on that address. Everything else
// is the binary's own code, so what it measures is what bin/llmgateway
// does; it is how the stream benchmark and the soak read goroutine counts
// and heap profiles of a binary that exposes neither.
func BuildWithDebug(ctx context.Context, dir string) (string, error) {
	list := exec.CommandContext(ctx, "go", "list", "-f", "{{.Dir}}", BinaryPackage)
	pkgDir, err := list.Output()
	if err != nil {
		return "", fmt.Errorf("go list %s: %v", BinaryPackage, err)
	}
	src := filepath.Join(dir, "zz_debug_listener.go")
	if err := os.WriteFile(src, []byte(debugFile), 0o644); err != nil {
		return "", err
	}
	overlay, _ := json.Marshal(map[string]map[string]string{
		"Replace": {filepath.Join(strings.TrimSpace(string(pkgDir)), "zz_debug_listener.go"): src},
	})
	overlayPath := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlayPath, overlay, 0o644); err != nil {
		return "", err
	}
	out := filepath.Join(dir, "llmgateway-debug")
	cmd := exec.CommandContext(ctx, "go", "build", "-overlay", overlayPath, "-o", out, BinaryPackage)
	var stderr bytes.Buffer
	cmd.Stdout = &stderr
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build -overlay %s: %v\n%s", BinaryPackage, err, stderr.String())
	}
	return out, nil
}

// DebugStats is what /debug/stats of a BuildWithDebug binary reports.
type DebugStats struct {
	Goroutines  int64  `json:"goroutines"`
	HeapInuse   uint64 `json:"heapInuse"`
	HeapAlloc   uint64 `json:"heapAlloc"`
	HeapSys     uint64 `json:"heapSys"`
	HeapObjects uint64 `json:"heapObjects"`
	StackInuse  uint64 `json:"stackInuse"`
	Sys         uint64 `json:"sys"`
	NumGC       uint64 `json:"numGC"`
}

// ReadDebugStats fetches /debug/stats from a BuildWithDebug binary's
// debug address (host:port).
func ReadDebugStats(addr string) (DebugStats, error) {
	return readDebugStats("http://" + addr + "/debug/stats")
}

// ReadLiveHeap is ReadDebugStats after a garbage collection: HeapAlloc is
// then the live heap. The collection changes what the process holds
// afterwards (the heap goal), so read RSS before it.
func ReadLiveHeap(addr string) (DebugStats, error) {
	return readDebugStats("http://" + addr + "/debug/stats?gc=1")
}

func readDebugStats(url string) (DebugStats, error) {
	var s DebugStats
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return s, fmt.Errorf("/debug/stats: status %d", resp.StatusCode)
	}
	err = json.NewDecoder(resp.Body).Decode(&s)
	return s, err
}
