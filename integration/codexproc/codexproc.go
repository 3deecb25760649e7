// Package codexproc runs Codex CLI (the native binary of @openai/codex,
// installed and cached by scripts/install-codex.sh) headless against a
// base URL, for integration tests: `codex exec <prompt>` with a custom
// model provider written to a fresh HOME's .codex/config.toml (no
// retries, no plugins, no analytics, no update check), in a fresh
// working directory, stdin from /dev/null, under a deadline.
//
// Tests call Require rather than assume the binary: without it they are
// skipped, unless LLMGW_REQUIRE_CODEX=1 (CI), where a missing binary
// fails them. Options.TraceConnect runs Codex under strace to list every
// socket it connects (trace.go), so a test can prove it dialled nothing
// beyond loopback.
package codexproc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmgateway/llmgateway/integration/cliproc"
)

// Version is the Codex CLI version the tests are written against.
const Version = "0.169.0"

// Environment variables that find the binary and make its absence a
// failure.
const (
	// BinEnv holds the path of the native codex binary.
	BinEnv = "LLMGW_CODEX_BIN"
	// RequireEnv set to 1 turns "Codex is not installed" from a skip
	// into a failure.
	RequireEnv = "LLMGW_REQUIRE_CODEX"
)

// APIKeyEnv is the variable the provider's env_key names: Codex sends its
// value as Authorization: Bearer.
const APIKeyEnv = "LLMGW_CODEX_API_KEY"

// ProviderID is the model_providers key of the custom provider.
const ProviderID = "llmgw"

// Defaults of a run.
const (
	// DefaultTimeout bounds one Run when Options.Timeout is zero.
	DefaultTimeout = 90 * time.Second
	// DefaultModel is the model when Options.Model is empty: an id
	// Codex's bundled catalog does not know, so it sends the plain
	// request shape (flat function tools, no apply_patch grammar).
	DefaultModel = "gw-codex-model"
	// DefaultStreamIdleTimeout is stream_idle_timeout_ms when
	// Options.StreamIdleTimeout is zero.
	DefaultStreamIdleTimeout = 20 * time.Second
)

// relBinary is the native binary inside the npm install.
var relBinary = filepath.Join("node_modules", "@openai", "codex-linux-x64", "vendor", "x86_64-unknown-linux-musl", "bin", "codex")

// CachedBinary is where scripts/install-codex.sh puts the binary:
// ${LLMGW_CACHE:-$HOME/.cache/llmgateway}/codex-<Version>/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex.
func CachedBinary() (string, error) {
	cache, err := cliproc.CacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(cache, "codex-"+Version, relBinary), nil
}

// Lookup returns the codex binary: $LLMGW_CODEX_BIN, else CachedBinary
// when it exists. It checks that the binary runs and reports Version.
func Lookup() (string, error) {
	bin := os.Getenv(BinEnv)
	if bin == "" {
		cached, err := CachedBinary()
		if err != nil {
			return "", err
		}
		if _, err := os.Stat(cached); err != nil {
			return "", fmt.Errorf("%s is not set and there is no %s: run scripts/install-codex.sh", BinEnv, cached)
		}
		bin = cached
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--version")
	// A fresh HOME: --version must not read or write the caller's ~/.codex.
	home, err := os.MkdirTemp("", "codex-version-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(home)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %v", bin, err)
	}
	if got := strings.TrimSpace(string(out)); got != "codex-cli "+Version {
		return "", fmt.Errorf("%s --version printed %q, want %q", bin, got, "codex-cli "+Version)
	}
	return bin, nil
}

// Require returns the codex binary, or skips tb when it is missing (fails
// it instead when LLMGW_REQUIRE_CODEX=1).
func Require(tb testing.TB) string {
	tb.Helper()
	return cliproc.Require(tb, Lookup, RequireEnv, "Codex", "scripts/install-codex.sh")
}

// Options describes one headless run.
type Options struct {
	// BaseURL is the provider's base_url, ending in /v1: Codex appends
	// /responses.
	BaseURL string
	// APIKey is sent as Authorization: Bearer (through APIKeyEnv).
	APIKey string
	// Model is the model Codex asks for. Empty means DefaultModel.
	Model string
	// Prompt is exec's prompt argument.
	Prompt string
	// Args are more exec flags, placed before the prompt (e.g. "--json").
	Args []string
	// Dir is the working directory. Empty: a fresh directory.
	Dir string
	// Home is HOME; .codex/config.toml is written there. Empty: a fresh
	// directory.
	Home string
	// Env is added to the environment Run builds (KEY=value).
	Env []string
	// StreamIdleTimeout is stream_idle_timeout_ms: how long Codex waits
	// for the next SSE event. Zero means DefaultStreamIdleTimeout.
	StreamIdleTimeout time.Duration
	// Timeout bounds the run; the process group is killed at the
	// deadline. Zero means DefaultTimeout.
	Timeout time.Duration
	// TraceConnect runs Codex under `strace -f -e trace=connect` and
	// fills Result.Connects. Run skips tb when strace is missing or
	// cannot trace here.
	TraceConnect bool
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
	// Connects lists the connect(2) calls of Codex and its children,
	// with Options.TraceConnect.
	Connects []Connect
}

// String summarises r for a test failure message.
func (r Result) String() string {
	return fmt.Sprintf("exit %d (timed out: %v) after %v\nstdout:\n%s\nstderr:\n%s", r.ExitCode, r.TimedOut, r.Elapsed.Round(time.Millisecond), r.Stdout, r.Stderr)
}

// Config is the text of $HOME/.codex/config.toml for o: the custom
// provider at o.BaseURL as the model provider, no retries (a failure is
// reported at once, and a test sees exactly one request a model call),
// bounded waits, and nothing that would dial anything but base_url:
// plugins (github.com, chatgpt.com), analytics (ab.chatgpt.com), the
// update check and unbounded connection retries are off.
func Config(o Options) string {
	model := o.Model
	if model == "" {
		model = DefaultModel
	}
	idle := o.StreamIdleTimeout
	if idle == 0 {
		idle = DefaultStreamIdleTimeout
	}
	q := strconv.Quote
	var b strings.Builder
	fmt.Fprintf(&b, "model = %s\n", q(model))
	fmt.Fprintf(&b, "model_provider = %s\n", q(ProviderID))
	b.WriteString("check_for_update_on_startup = false\n\n")
	fmt.Fprintf(&b, "[model_providers.%s]\n", ProviderID)
	b.WriteString("name = \"LLM gateway\"\n")
	fmt.Fprintf(&b, "base_url = %s\n", q(o.BaseURL))
	fmt.Fprintf(&b, "env_key = %s\n", q(APIKeyEnv))
	b.WriteString("wire_api = \"responses\"\n")
	b.WriteString("request_max_retries = 0\n")
	b.WriteString("stream_max_retries = 0\n")
	fmt.Fprintf(&b, "stream_idle_timeout_ms = %d\n\n", idle.Milliseconds())
	b.WriteString("[features]\n")
	b.WriteString("plugins = false\n")
	b.WriteString("unbounded_connection_retries = false\n\n")
	b.WriteString("[analytics]\n")
	b.WriteString("enabled = false\n")
	return b.String()
}

// Environment is the whole environment of a run: nothing is inherited
// but PATH, so the caller's OPENAI_*, CODEX_* or proxy settings cannot
// leak in. Env entries come last and win.
func Environment(o Options) []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + o.Home,
		"TERM=dumb",
		"NO_COLOR=1",
		APIKeyEnv + "=" + o.APIKey,
	}
	return append(env, o.Env...)
}

// Args is exec's command line for o: no git repository needed, no
// session files, no sandbox or approvals (the tests run in throwaway
// directories), no colour, then o.Args and the prompt.
func Args(o Options) []string {
	args := []string{"exec", "--skip-git-repo-check", "--ephemeral", "--dangerously-bypass-approvals-and-sandbox", "--color", "never"}
	args = append(args, o.Args...)
	return append(args, o.Prompt)
}

// Run writes the config and runs `bin exec ... Prompt` with stdin from
// /dev/null, returning its output. Fresh Dir and Home are made under
// tb.TempDir(). A run that cannot start fails tb; a non-zero exit or a
// timeout is reported in the Result, not as a failure.
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
	codexDir := filepath.Join(o.Home, ".codex")
	if err := os.MkdirAll(codexDir, 0o700); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(codexDir, "config.toml"), []byte(Config(o)), 0o600); err != nil {
		tb.Fatal(err)
	}

	name, args := bin, Args(o)
	var traceFile string
	if o.TraceConnect {
		strace := requireStrace(tb)
		traceFile = filepath.Join(tb.TempDir(), "connect.trace")
		name, args = strace, append([]string{"-f", "-qq", "-e", "trace=connect", "-o", traceFile, bin}, args...)
	}

	run := cliproc.Exec(tb, cliproc.Spec{Name: name, Args: args, Dir: o.Dir, Env: Environment(o), Timeout: o.Timeout})
	res := Result{Stdout: run.Stdout, Stderr: run.Stderr, Dir: o.Dir, Home: o.Home, Elapsed: run.Elapsed, TimedOut: run.TimedOut, ExitCode: run.ExitCode}
	if traceFile != "" {
		raw, err := os.ReadFile(traceFile)
		if err != nil {
			tb.Fatalf("reading the strace output: %v", err)
		}
		res.Connects = ParseConnects(string(raw))
	}
	return res
}

func freshDir(tb testing.TB, name string) string { return cliproc.FreshDir(tb, name) }
