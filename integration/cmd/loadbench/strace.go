package main

// -strace-conc: syscalls per streamed request, counted by strace -c -f
// attached to each target's process for one untimed run.

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// straceResult is one target's syscall counts over one run.
type straceResult struct {
	target   string
	requests int
	calls    map[string]int // per syscall name, "total" included
}

// perRequest is a syscall's count per request.
func (s straceResult) perRequest(name string) float64 {
	if s.requests == 0 {
		return 0
	}
	return float64(s.calls[name]) / float64(s.requests)
}

// straceRun runs cell on tg with strace -c -f attached to tg's process.
// The process's idle syscalls (the runtime's timers, the other
// listeners) count too; under load they are a small share.
func straceRun(ctx context.Context, client *http.Client, cfg benchConfig, tg target, cell benchCell, dir string) (straceResult, error) {
	out := filepath.Join(dir, "strace-"+strings.NewReplacer(" ", "-", "(", "", ")", "").Replace(tg.name)+".txt")
	cmd := exec.CommandContext(ctx, "strace", "-c", "-f", "-o", out, "-p", strconv.Itoa(tg.pid))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return straceResult{}, err
	}
	if err := cmd.Start(); err != nil {
		return straceResult{}, fmt.Errorf("%v (is strace installed?)", err)
	}
	// strace says "Process N attached" for every thread it attaches to;
	// the first line means it is in.
	attached := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		first := true
		for sc.Scan() {
			if first {
				attached <- sc.Text()
				first = false
			}
		}
		if first {
			attached <- ""
		}
	}()
	select {
	case line := <-attached:
		if !strings.Contains(line, "attached") {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return straceResult{}, fmt.Errorf("strace did not attach: %q", line)
		}
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return straceResult{}, fmt.Errorf("strace did not attach within 10s")
	}
	res := load(ctx, client, tg, cell.sc, cell.conc, cfg.duration, cfg.maxRequests)
	_ = cmd.Process.Signal(syscall.SIGINT)
	_ = cmd.Wait()
	data, err := os.ReadFile(out)
	if err != nil {
		return straceResult{}, err
	}
	sr := straceResult{target: tg.name, requests: res.ok + res.errors, calls: parseStraceSummary(string(data))}
	fmt.Fprintf(os.Stderr, "loadbench: strace %-22s %d requests, %.1f syscalls per request\n", tg.name, sr.requests, sr.perRequest("total"))
	return sr, nil
}

// parseStraceSummary reads strace -c's table: "% time seconds usecs/call
// calls [errors] syscall" rows, and the "total" row.
func parseStraceSummary(s string) map[string]int {
	calls := map[string]int{}
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || strings.HasPrefix(f[0], "%") || strings.HasPrefix(f[0], "-") {
			continue
		}
		name := f[len(f)-1]
		n, err := strconv.Atoi(f[3])
		if err != nil {
			continue
		}
		calls[name] = n
	}
	return calls
}
