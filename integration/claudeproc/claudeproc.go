// Package claudeproc runs Claude Code (the native binary of
// @anthropic-ai/claude-code, installed and cached by
// scripts/install-claude-code.sh) headless against a base URL, for
// integration tests: `claude -p <prompt>` in a fresh working directory
// with a fresh HOME, no telemetry, no auto-update, no non-essential
// traffic and few retries, under a deadline.
//
// Tests call Require rather than assume the binary: without it they are
// skipped, unless LLMGW_REQUIRE_CLAUDE=1 (CI), where a missing binary
// fails them. recorder.go has a recording reverse proxy to put between
// Claude Code and the server under test.
package claudeproc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmgateway/llmgateway/integration/cliproc"
)

// Version is the Claude Code version the tests are written against.
const Version = "2.1.328"

// Environment variables that find the binary and make its absence a
// failure.
const (
	// BinEnv holds the path of the native claude binary.
	BinEnv = "LLMGW_CLAUDE_BIN"
	// RequireEnv set to 1 turns "Claude Code is not installed" from a
	// skip into a failure.
	RequireEnv = "LLMGW_REQUIRE_CLAUDE"
)

// DefaultTimeout bounds one Run when Options.Timeout is zero.
const DefaultTimeout = 90 * time.Second

// CachedBinary is where scripts/install-claude-code.sh puts the binary:
// ${LLMGW_CACHE:-$HOME/.cache/llmgateway}/claude-code-<Version>/node_modules/@anthropic-ai/claude-code-linux-x64/claude.
func CachedBinary() (string, error) {
	cache, err := cliproc.CacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(cache, "claude-code-"+Version, "node_modules", "@anthropic-ai", "claude-code-linux-x64", "claude"), nil
}

// Lookup returns the claude binary: $LLMGW_CLAUDE_BIN, else CachedBinary
// when it exists. It checks that the binary runs and reports Version.
func Lookup() (string, error) {
	bin := os.Getenv(BinEnv)
	if bin == "" {
		cached, err := CachedBinary()
		if err != nil {
			return "", err
		}
		if _, err := os.Stat(cached); err != nil {
			return "", fmt.Errorf("%s is not set and there is no %s: run scripts/install-claude-code.sh", BinEnv, cached)
		}
		bin = cached
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %v", bin, err)
	}
	if got := strings.TrimSpace(string(out)); got != Version+" (Claude Code)" {
		return "", fmt.Errorf("%s --version printed %q, want %q", bin, got, Version+" (Claude Code)")
	}
	return bin, nil
}

// Require returns the claude binary, or skips tb when it is missing
// (fails it instead when LLMGW_REQUIRE_CLAUDE=1).
func Require(tb testing.TB) string {
	tb.Helper()
	return cliproc.Require(tb, Lookup, RequireEnv, "Claude Code", "scripts/install-claude-code.sh")
}

// Options describes one headless run.
type Options struct {
	// BaseURL is ANTHROPIC_BASE_URL (no /v1: Claude Code appends
	// /v1/messages?beta=true).
	BaseURL string
	// APIKey is ANTHROPIC_API_KEY, sent as x-api-key.
	APIKey string
	// Prompt is the argument of -p.
	Prompt string
	// Args are more flags, placed before -p (e.g. "--model", "m",
	// "--allowedTools", "Read", "--permission-mode", "dontAsk").
	Args []string
	// Dir is the working directory. Empty: a fresh directory.
	Dir string
	// Home is HOME (Claude Code writes ~/.claude* there). Empty: a fresh
	// directory.
	Home string
	// Env is added to the environment Run builds (KEY=value).
	Env []string
	// Timeout bounds the run; the process group is killed at the
	// deadline. Zero means DefaultTimeout.
	Timeout time.Duration
}

// Result is what one run produced.
type Result struct {
	// Stdout and Stderr are the process's output.
	Stdout, Stderr string
	// ExitCode is the exit status; -1 when the process was killed.
	ExitCode int
	// TimedOut reports that the deadline ended the run.
	TimedOut bool
	// Dir and Home are the working directory and HOME it ran with.
	Dir, Home string
	// Elapsed is the run's wall time.
	Elapsed time.Duration
}

// String summarises r for a test failure message.
func (r Result) String() string {
	return fmt.Sprintf("exit %d (timed out: %v) after %v\nstdout:\n%s\nstderr:\n%s", r.ExitCode, r.TimedOut, r.Elapsed.Round(time.Millisecond), r.Stdout, r.Stderr)
}

// Environment is the whole environment of a run: nothing is inherited
// but PATH, so the caller's ANTHROPIC_* or CLAUDE_* settings cannot leak
// in. Env entries come last and win.
func Environment(o Options) []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + o.Home,
		"TERM=dumb",
		"NO_COLOR=1",
		"ANTHROPIC_BASE_URL=" + o.BaseURL,
		"ANTHROPIC_API_KEY=" + o.APIKey,
		"DISABLE_TELEMETRY=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_ERROR_REPORTING=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"CLAUDE_CODE_MAX_RETRIES=2",
	}
	return append(env, o.Env...)
}

// Run runs `bin [Args...] -p Prompt` with stdin from /dev/null and
// returns its output. Fresh Dir and Home are made under tb.TempDir(). A
// run that cannot start fails tb; a non-zero exit or a timeout is
// reported in the Result, not as a failure.
func Run(tb testing.TB, bin string, o Options) Result {
	tb.Helper()
	if o.Dir == "" {
		o.Dir = freshDir(tb, "work")
	}
	if o.Home == "" {
		o.Home = freshDir(tb, "home")
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	args := append(append([]string(nil), o.Args...), "-p", o.Prompt)
	run := cliproc.Exec(tb, cliproc.Spec{Name: bin, Args: args, Dir: o.Dir, Env: Environment(o), Timeout: o.Timeout})
	return Result{Stdout: run.Stdout, Stderr: run.Stderr, Dir: o.Dir, Home: o.Home, Elapsed: run.Elapsed, TimedOut: run.TimedOut, ExitCode: run.ExitCode}
}

func freshDir(tb testing.TB, name string) string { return cliproc.FreshDir(tb, name) }
