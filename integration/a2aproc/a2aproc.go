// Package a2aproc runs the official A2A JS SDK (@a2a-js/sdk, installed and
// cached by scripts/install-a2a.sh) on loopback for integration tests: an
// agent server (js/agent.mjs) and a client run (js/client.mjs), both with
// node, from a temporary folder whose node_modules links to the cached
// install.
//
// Tests call Require rather than assume the install: without node or the
// SDK they are skipped, unless LLMGW_REQUIRE_A2A=1 (CI), where a missing
// one fails them.
package a2aproc

import (
	"bufio"
	"embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/llmgateway/llmgateway/integration/cliproc"
)

// Version is the @a2a-js/sdk version the tests are written against.
const Version = "1.3.0"

// Environment variables that find the install and make its absence a
// failure.
const (
	// DirEnv holds the install folder (the one holding node_modules/).
	DirEnv = "LLMGW_A2A_DIR"
	// RequireEnv set to 1 turns "not installed" from a skip into a failure.
	RequireEnv = "LLMGW_REQUIRE_A2A"
)

//go:embed js/agent.mjs js/client.mjs
var scripts embed.FS

// CachedDir is where scripts/install-a2a.sh installs the SDK:
// ${LLMGW_CACHE:-$HOME/.cache/llmgateway}/a2a-js-sdk-<Version>.
func CachedDir() (string, error) {
	cache, err := cliproc.CacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(cache, "a2a-js-sdk-"+Version), nil
}

// Env is a usable install: node and a folder of scripts whose
// node_modules is the cached SDK.
type Env struct {
	Node string
	Dir  string // holds agent.mjs, client.mjs and node_modules
}

// Lookup finds node and the install, and lays the scripts out in dir.
func Lookup(dir string) (*Env, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("node is not on PATH: %v", err)
	}
	install := os.Getenv(DirEnv)
	if install == "" {
		if install, err = CachedDir(); err != nil {
			return nil, err
		}
	}
	pkg := filepath.Join(install, "node_modules", "@a2a-js", "sdk", "package.json")
	data, err := os.ReadFile(pkg)
	if err != nil {
		return nil, fmt.Errorf("no @a2a-js/sdk at %s (run scripts/install-a2a.sh): %v", install, err)
	}
	if !strings.Contains(string(data), `"version": "`+Version+`"`) {
		return nil, fmt.Errorf("%s is not version %s", pkg, Version)
	}
	if err := os.Symlink(filepath.Join(install, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		return nil, err
	}
	for _, name := range []string{"agent.mjs", "client.mjs"} {
		src, err := scripts.ReadFile("js/" + name)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, name), src, 0o644); err != nil {
			return nil, err
		}
	}
	return &Env{Node: node, Dir: dir}, nil
}

// Require returns the install laid out in a temporary folder, or skips tb
// when it is missing (fails it instead when LLMGW_REQUIRE_A2A=1).
func Require(tb testing.TB) *Env {
	tb.Helper()
	dir := tb.TempDir()
	var env *Env
	cliproc.Require(tb, func() (string, error) {
		e, err := Lookup(dir)
		if err != nil {
			return "", err
		}
		env = e
		return e.Node, nil
	}, RequireEnv, "@a2a-js/sdk "+Version+" (node)", "scripts/install-a2a.sh")
	return env
}

// Agent is a running agent.mjs.
type Agent struct {
	// URL is its base URL (http://127.0.0.1:<port>).
	URL    string
	cmd    *exec.Cmd
	stderr *lockedWriter
}

// Logs is what the agent wrote to stderr.
func (a *Agent) Logs() string { return a.stderr.String() }

// StartAgent starts agent.mjs and waits (at most 20 s) for it to listen;
// it is stopped when the test ends.
func (e *Env) StartAgent(tb testing.TB) *Agent {
	tb.Helper()
	cmd := exec.Command(e.Node, "agent.mjs")
	cmd.Dir = e.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stderr := &lockedWriter{b: &strings.Builder{}}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	a := &Agent{cmd: cmd, stderr: stderr}
	tb.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if port, ok := strings.CutPrefix(sc.Text(), "LISTENING "); ok {
				ready <- port
			}
		}
	}()
	select {
	case port := <-ready:
		a.URL = "http://127.0.0.1:" + port
	case <-time.After(20 * time.Second):
		tb.Fatalf("agent.mjs did not listen within 20s; stderr:\n%s", stderr.String())
	}
	return a
}

// RunClient runs client.mjs against base (the agent's URL through the
// gateway) with key, asking releaseURL once the first artifact arrived.
func (e *Env) RunClient(tb testing.TB, base, key, releaseURL string) cliproc.Run {
	tb.Helper()
	return cliproc.Exec(tb, cliproc.Spec{Name: e.Node, Args: []string{"client.mjs", base, key, releaseURL}, Dir: e.Dir,
		Env: os.Environ(), Timeout: 60 * time.Second})
}

// lockedWriter serializes writes (the process's stderr copier writes
// from its own goroutine).
type lockedWriter struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
