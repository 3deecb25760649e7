package gwproc

import (
	"context"
	"net/http"
	"os"
	"testing"
	"time"
)

func TestSampleProcOfSelf(t *testing.T) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := SampleProc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if s.RSSKB <= 0 || s.Threads < 1 || s.FDs < 4 {
		t.Fatalf("sample %+v: want RSS > 0, threads >= 1, FDs >= 4 (stdio and the open file)", s)
	}
	if _, err := SampleProc(-1); err == nil {
		t.Fatal("no error for a missing process")
	}
}

// The debug build is the binary plus its debug listener: the gateway
// answers as usual, /debug/stats reports goroutines and the heap (after
// a collection with ?gc=1), and pprof serves the heap profile.
func TestBuildWithDebugServesStats(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin, err := BuildWithDebug(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	debugAddr, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	config := []byte(`{"providers": {"p": {"type": "openai", "baseUrl": "http://127.0.0.1:9", "models": ["m"]}},
		"groups": {"g": {}}, "users": {"inline": [{"name": "u", "group": "g", "apiKey": "sk-debug-build"}]}}`)
	if err := os.WriteFile(dir+"/config.json", config, 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := Start(Config{Binary: bin, Args: []string{"-config", dir + "/config.json", "-listen", "{addr}"},
		Env: []string{"DO_NOT_TRACK=1", "LLMGW_DRAIN_DELAY=0s", DebugListenEnv + "=" + debugAddr}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	resp, err := http.Get(p.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET /v1/models without a key: %d, want 401", resp.StatusCode)
	}
	stats, err := ReadDebugStats(debugAddr)
	if err != nil {
		t.Fatal(err)
	}
	live, err := ReadLiveHeap(debugAddr)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Goroutines < 2 || stats.HeapInuse == 0 || stats.StackInuse == 0 || live.HeapAlloc == 0 || live.NumGC <= stats.NumGC {
		t.Fatalf("stats %+v, after a GC %+v", stats, live)
	}
	resp, err = http.Get("http://" + debugAddr + "/debug/pprof/heap")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("heap profile: %d", resp.StatusCode)
	}
}
