package main

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	buildOut  []byte
	buildDir  string
)

// TestMain removes the binary built for the process-level tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// buildBinary compiles this package into a temporary directory once per
// test run, stamped with a test version.
func buildBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "llmgateway-bin-")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(buildDir, "llmgateway")
		cmd := exec.Command("go", "build", "-o", binPath, ".")
		buildOut, buildErr = cmd.CombinedOutput()
	})
	require.NoError(t, buildErr, "go build: %s", buildOut)
	return binPath
}

// binaryEnv is the environment for the binary under test: the test's own,
// minus anything LLMGW_* that would change its settings.
func binaryEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LLMGW_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

func TestBinaryRefusesUnknownConfigKey(t *testing.T) {
	bin := buildBinary(t)
	upstream := fakeUpstream(t)
	config := writeFile(t, "config.yaml", configFor(upstream.URL, "passthroughUnknwn: true\n"))

	cmd := exec.Command(bin, "-config", config, "-listen", "127.0.0.1:0")
	cmd.Env = binaryEnv()
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "output:\n%s", out)
	exitErr, ok := err.(*exec.ExitError)
	require.True(t, ok, "want an exit error, got %v", err)
	assert.Equal(t, 1, exitErr.ExitCode())
	assert.Contains(t, string(out), `unknown config key "passthroughUnknwn"`)
	assert.Contains(t, string(out), config)
	assert.NotContains(t, string(out), "goroutine ", "no stack trace")
	assert.NotContains(t, string(out), "listening on")
}

func TestBinaryRefusesInvalidFlagFromEnv(t *testing.T) {
	bin := buildBinary(t)
	cmd := exec.Command(bin)
	cmd.Env = binaryEnv("LLMGW_DRAIN_DELAY=forever")
	out, err := cmd.CombinedOutput()
	exitErr, ok := err.(*exec.ExitError)
	require.True(t, ok, "want an exit error, got %v; output:\n%s", err, out)
	assert.Equal(t, 2, exitErr.ExitCode())
	assert.Contains(t, string(out), `invalid value "forever" for LLMGW_DRAIN_DELAY (-drain-delay)`)
}

var listeningLine = regexp.MustCompile(`INFO listening on (127\.0\.0\.1:\d+)`)

func TestBinaryGracefulShutdownOnSIGTERM(t *testing.T) {
	bin := buildBinary(t)

	upstreamStarted := make(chan struct{}, 1)
	releaseUpstream := make(chan struct{})
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(releaseUpstream) }) }
	upstream := newSlowUpstream(t, upstreamStarted, releaseUpstream)
	t.Cleanup(release)
	config := writeFile(t, "config.yaml", configFor(upstream, ""))

	logs := &syncBuffer{}
	cmd := exec.Command(bin, "-config", config, "-listen", "127.0.0.1:0", "-drain-delay", "3s", "-shutdown-timeout", "30s")
	cmd.Env = binaryEnv("DO_NOT_TRACK=1")
	cmd.Stdout = logs
	cmd.Stderr = logs
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	var exitErr error
	go func() {
		exitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill()
			<-exited
		}
	})

	var base string
	waitFor(t, "the binary to listen", func() bool {
		m := listeningLine.FindStringSubmatch(logs.String())
		if m == nil {
			return false
		}
		base = "http://" + m[1]
		return true
	})
	status, _, _ := get(t, base+"/readyz")
	require.Equal(t, http.StatusOK, status)

	type result struct {
		status int
		body   string
		err    error
	}
	inFlight := make(chan result, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions",
			strings.NewReader(`{"model":"gpt-5-mini","messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Authorization", "Bearer sk-llmgw-secret-test-key")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			inFlight <- result{err: err}
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		inFlight <- result{status: resp.StatusCode, body: string(body)}
	}()
	select {
	case <-upstreamStarted:
	case <-time.After(15 * time.Second):
		t.Fatalf("the slow request never reached the upstream\n%s", logs.String())
	}

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	waitFor(t, "readiness to fail during the drain delay", func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable
	})
	waitFor(t, "the listener to close", func() bool { return strings.Contains(logs.String(), "stopped accepting") })

	release()
	r := <-inFlight
	require.NoError(t, r.err)
	assert.Equal(t, http.StatusOK, r.status, r.body)
	assert.Contains(t, r.body, "slow hello")

	select {
	case <-exited:
		require.NoError(t, exitErr, "exit status; logs:\n%s", logs.String())
	case <-time.After(20 * time.Second):
		t.Fatalf("the binary did not exit after the in-flight request\n%s", logs.String())
	}
	out := logs.String()
	assertInOrder(t, out,
		"INFO telemetry: disabled by DO_NOT_TRACK",
		"INFO listening on",
		"INFO shutdown: signal received",
		"INFO shutdown: drain delay over",
		"INFO shutdown: all in-flight requests finished",
		"INFO shutdown: gateway closed",
		"INFO shutdown: complete",
	)
	assert.NotContains(t, out, "sk-llmgw-secret-test-key", "key material must never be logged")
}

// newSlowUpstream starts a loopback OpenAI upstream whose chat completion
// waits for release, and returns its URL.
func newSlowUpstream(t *testing.T, started chan<- struct{}, release <-chan struct{}) string {
	t.Helper()
	srv := newLoopbackServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Reading the body lets the server notice a client that goes away.
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case started <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, chatReply("slow hello"))
	}))
	return srv
}
