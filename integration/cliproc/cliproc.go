// Package cliproc is what the real-CLI runners (claudeproc, codexproc)
// share: where the cached installs live, the skip-or-fail rule when a
// CLI is missing, and one headless run in its own process group under a
// deadline.
package cliproc

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// CacheDir is ${LLMGW_CACHE:-$HOME/.cache/llmgateway}, where the install
// scripts put the CLIs.
func CacheDir() (string, error) {
	if cache := os.Getenv("LLMGW_CACHE"); cache != "" {
		return cache, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".cache", "llmgateway"), nil
}

// Require returns lookup's binary, or skips tb when it is not usable
// (fails it instead when the environment variable requireEnv is "1").
// what names the CLI and install the script that installs it.
func Require(tb testing.TB, lookup func() (string, error), requireEnv, what, install string) string {
	tb.Helper()
	bin, err := lookup()
	if err == nil {
		return bin
	}
	if os.Getenv(requireEnv) == "1" {
		tb.Fatalf("%s=1 but %s is not usable: %v", requireEnv, what, err)
	}
	tb.Skipf("%s is not installed (%v): skipping (run %s, or set %s=1 to fail instead)", what, err, install, requireEnv)
	return ""
}

// Spec is one headless run.
type Spec struct {
	Name    string   // the program
	Args    []string // its arguments
	Dir     string   // its working directory
	Env     []string // its whole environment
	Timeout time.Duration
}

// Run is what a run left.
type Run struct {
	Stdout, Stderr string
	ExitCode       int // -1 when the deadline killed it
	TimedOut       bool
	Elapsed        time.Duration
}

// Exec runs s with stdin from /dev/null, in its own process group, so
// the deadline also ends what it spawned (git, shells); the wait for
// their pipes is bounded too. A failure to start fails tb.
func Exec(tb testing.TB, s Spec) Run {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), s.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.Name, s.Args...)
	cmd.Dir = s.Dir
	cmd.Env = s.Env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err := cmd.Run()
	res := Run{Stdout: stdout.String(), Stderr: stderr.String(), Elapsed: time.Since(start), TimedOut: ctx.Err() != nil}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		res.ExitCode = exit.ExitCode()
	case res.TimedOut:
		res.ExitCode = -1
	default:
		tb.Fatalf("running %s: %v", s.Name, err)
	}
	return res
}

// FreshDir is a new empty directory name under tb's temp dir.
func FreshDir(tb testing.TB, name string) string {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	return dir
}
