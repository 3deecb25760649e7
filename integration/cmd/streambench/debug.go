package main

import (
	"encoding/json"
	"net"
	"net/http"
	_ "net/http/pprof" // serveDebug serves the profiles
	"runtime"
	"time"

	"github.com/llmgateway/llmgateway/integration/gwproc"
)

// serveDebug serves, from this process, what the gateway's debug build
// serves on gwproc.DebugListenEnv (net/http/pprof and /debug/stats), so
// the bare proxy is measured the same way as the gateway.
func serveDebug(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/debug/pprof/", http.DefaultServeMux)
	mux.HandleFunc("/debug/stats", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("gc") == "1" {
			runtime.GC()
		}
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(gwproc.DebugStats{
			Goroutines: int64(runtime.NumGoroutine()), HeapInuse: m.HeapInuse, HeapAlloc: m.HeapAlloc, HeapSys: m.HeapSys,
			HeapObjects: m.HeapObjects, StackInuse: m.StackInuse, Sys: m.Sys, NumGC: uint64(m.NumGC),
		})
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return nil
}
