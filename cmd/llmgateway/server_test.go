package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// syncBuffer is a goroutine-safe log sink: the binary and the gateway core
// write to it concurrently.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor polls cond until it holds, failing the test after a generous
// bound.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// fakeUpstream is an OpenAI-compatible loopback upstream answering chat
// completions with a fixed reply.
func fakeUpstream(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, chatReply("hello from upstream"))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func chatReply(text string) string {
	return `{"id":"chatcmpl-1","object":"chat.completion","created":1735689600,"model":"gpt-5-mini",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"` + text + `"},"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":1,"completion_tokens":3,"total_tokens":4}}`
}

func configFor(upstreamURL, extra string) string {
	return `
providers:
  mock:
    type: openai
    baseUrl: ` + upstreamURL + `
    models: [gpt-5-mini]
groups:
  default:
    providers: []
users:
  inline:
    - name: demo
      group: default
      apiKey: sk-llmgw-secret-test-key
` + extra
}

// runningBinary is run() started in-process on a loopback port.
type runningBinary struct {
	base   string
	logs   *syncBuffer
	cancel context.CancelFunc
	done   chan error
}

func startRun(t *testing.T, configPath string, extraArgs ...string) *runningBinary {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	rb := &runningBinary{logs: &syncBuffer{}, cancel: cancel, done: make(chan error, 1)}
	addr := make(chan string, 1)
	args := append([]string{"-config", configPath, "-listen", "127.0.0.1:0", "-drain-delay", "0s", "-shutdown-timeout", "10s"}, extraArgs...)
	go func() {
		rb.done <- run(ctx, args, envOf(nil), rb.logs, func(a string) { addr <- a })
	}()
	select {
	case a := <-addr:
		rb.base = "http://" + a
	case err := <-rb.done:
		cancel()
		t.Fatalf("run returned before serving: %v\n%s", err, rb.logs.String())
	case <-time.After(15 * time.Second):
		cancel()
		t.Fatalf("run did not start serving\n%s", rb.logs.String())
	}
	t.Cleanup(func() { _ = rb.stop(t) }) // a second stop is a no-op; the tests that stop check the error
	return rb
}

// stop cancels the context (the signal) and waits for run to return.
func (rb *runningBinary) stop(t *testing.T) error {
	t.Helper()
	rb.cancel()
	select {
	case err, ok := <-rb.done:
		if ok {
			close(rb.done)
		}
		return err
	case <-time.After(20 * time.Second):
		t.Fatalf("run did not return after cancellation\n%s", rb.logs.String())
		return nil
	}
}

func get(t *testing.T, url string) (int, http.Header, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, string(body)
}

func TestRunServesProbesAndGateway(t *testing.T) {
	upstream := fakeUpstream(t)
	rb := startRun(t, writeFile(t, "config.yaml", configFor(upstream.URL, "")))

	status, header, body := get(t, rb.base+"/healthz")
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "application/json", header.Get("Content-Type"))
	assert.JSONEq(t, `{"status":"ok"}`, body)

	status, _, body = get(t, rb.base+"/readyz")
	assert.Equal(t, http.StatusOK, status)
	assert.JSONEq(t, `{"status":"ready"}`, body)

	req, err := http.NewRequest(http.MethodPost, rb.base+"/v1/chat/completions",
		strings.NewReader(`{"model":"gpt-5-mini","messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer sk-llmgw-secret-test-key")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	reply, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(reply))
	assert.Contains(t, string(reply), "hello from upstream")

	require.NoError(t, rb.stop(t))
	logs := rb.logs.String()
	assert.Contains(t, logs, "llmgw[gateway] INFO listening on 127.0.0.1:")
	assert.NotContains(t, logs, "sk-llmgw-secret-test-key", "key material must never be logged")
}

// The probes answer with the request ids of every gateway answer: the
// client's valid X-Request-ID kept, else a new one, and a traceparent in
// the client's trace.
func TestRunProbesCarryRequestIDs(t *testing.T) {
	upstream := fakeUpstream(t)
	rb := startRun(t, writeFile(t, "config.yaml", configFor(upstream.URL, "")))
	const trace = "4bf92f3577b34da6a3ce929d0e0e4736"
	for _, path := range []string{"/healthz", "/readyz"} {
		status, header, _ := get(t, rb.base+path)
		assert.Equal(t, http.StatusOK, status)
		assert.Regexp(t, `^[0-9a-f]{32}$`, header.Get("X-Request-Id"), path+": a generated id")
		assert.Regexp(t, `^00-[0-9a-f]{32}-[0-9a-f]{16}-00$`, header.Get("Traceparent"), path)

		req, err := http.NewRequest(http.MethodGet, rb.base+path, nil)
		require.NoError(t, err)
		req.Header.Set("X-Request-ID", "probe-1")
		req.Header.Set("traceparent", "00-"+trace+"-00f067aa0ba902b7-01")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, "probe-1", resp.Header.Get("X-Request-Id"), path+": the client's id kept")
		assert.Regexp(t, `^00-`+trace+`-[0-9a-f]{16}-01$`, resp.Header.Get("Traceparent"), path)
	}
	require.NoError(t, rb.stop(t))
}

func TestRunUnknownRouteIsOpenAI404(t *testing.T) {
	upstream := fakeUpstream(t)
	for _, extra := range []string{"", "passthroughUnknown: true\n"} {
		extra := extra
		t.Run("passthroughUnknown="+strings.TrimSpace(extra), func(t *testing.T) {
			rb := startRun(t, writeFile(t, "config.yaml", configFor(upstream.URL, extra)))
			status, header, body := get(t, rb.base+"/no/such/route?key=secret-in-query")
			assert.Equal(t, http.StatusNotFound, status)
			assert.Contains(t, header.Get("Content-Type"), "application/json")
			var envelope struct {
				Error struct {
					Message string `json:"message"`
					Type    string `json:"type"`
					Code    string `json:"code"`
				} `json:"error"`
			}
			require.NoError(t, json.Unmarshal([]byte(body), &envelope), body)
			assert.Equal(t, "invalid_request_error", envelope.Error.Type)
			assert.Equal(t, "not_found", envelope.Error.Code)
			assert.Contains(t, envelope.Error.Message, "/no/such/route")
			assert.NotContains(t, body, "secret-in-query")
		})
	}
}

func TestRunWarnsAboutPassthroughUnknown(t *testing.T) {
	upstream := fakeUpstream(t)
	rb := startRun(t, writeFile(t, "config.yaml", configFor(upstream.URL, "passthroughUnknown: true\n")))
	require.NoError(t, rb.stop(t))
	assert.Contains(t, rb.logs.String(), "WARN passthroughUnknown has no meaning in the standalone binary")
}

func TestRunCustomProbePathsAndName(t *testing.T) {
	upstream := fakeUpstream(t)
	rb := startRun(t, writeFile(t, "config.yaml", configFor(upstream.URL, "")),
		"-health-path", "/live", "-ready-path", "/ready", "-name", "edge")
	status, _, _ := get(t, rb.base+"/live")
	assert.Equal(t, http.StatusOK, status)
	status, _, _ = get(t, rb.base+"/ready")
	assert.Equal(t, http.StatusOK, status)
	status, _, _ = get(t, rb.base+"/healthz")
	assert.Equal(t, http.StatusNotFound, status, "the default path is not a probe any more")
	require.NoError(t, rb.stop(t))
	assert.Contains(t, rb.logs.String(), "llmgw[edge] INFO listening on")
}

func TestRunLogLevelFiltersLifecycleLinesOnly(t *testing.T) {
	upstream := fakeUpstream(t)
	rb := startRun(t, writeFile(t, "config.yaml", configFor(upstream.URL, "passthroughUnknown: true\n")), "-log-level", "warn")
	require.NoError(t, rb.stop(t))
	logs := rb.logs.String()
	assert.NotContains(t, logs, "INFO listening on", "the binary's info lines are filtered")
	assert.NotContains(t, logs, "INFO shutdown:", "the binary's info lines are filtered")
	assert.Contains(t, logs, "WARN passthroughUnknown", "warn lines pass")
	assert.Contains(t, logs, "llmgw[gateway] INFO ready:", "the core's own lines are never filtered")
	assert.NotContains(t, logs, "DEBUG settings:")
}

func TestRunDebugLevelLogsSettings(t *testing.T) {
	upstream := fakeUpstream(t)
	rb := startRun(t, writeFile(t, "config.yaml", configFor(upstream.URL, "")), "-log-level", "debug")
	require.NoError(t, rb.stop(t))
	assert.Contains(t, rb.logs.String(), "DEBUG settings: config=")
	assert.Contains(t, rb.logs.String(), "drain-delay=0s")
}

func TestRunStartupFailures(t *testing.T) {
	upstream := fakeUpstream(t)
	cases := []struct {
		name string
		args func(t *testing.T) []string
		want []string
	}{
		{"unknown key", func(t *testing.T) []string {
			return []string{"-config", writeFile(t, "config.yaml", configFor(upstream.URL, "alowedCIDRs: [10.0.0.0/8]\n"))}
		}, []string{`unknown config key "alowedCIDRs"`}},
		{"unreadable file", func(t *testing.T) []string {
			return []string{"-config", "/nonexistent/llmgateway/config.yaml"}
		}, []string{"cannot read config file", "/nonexistent/llmgateway/config.yaml"}},
		{"construction error", func(t *testing.T) []string {
			return []string{"-config", writeFile(t, "config.yaml", "providers: {}\n")}
		}, []string{"gateway construction failed", "at least one provider"}},
		{"listen error", func(t *testing.T) []string {
			return []string{"-config", writeFile(t, "config.yaml", configFor(upstream.URL, "")), "-listen", "127.0.0.1:notaport"}
		}, []string{"cannot listen on 127.0.0.1:notaport"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var logs syncBuffer
			called := false
			err := run(context.Background(), tc.args(t), envOf(nil), &logs, func(string) { called = true })
			require.Error(t, err)
			assert.False(t, called, "ready must not be reported")
			for _, want := range tc.want {
				assert.Contains(t, err.Error(), want)
			}
			var stderr bytes.Buffer
			assert.Equal(t, 1, exitCode(err, &stderr))
			assert.NotContains(t, stderr.String(), "goroutine ", "no stack trace")
		})
	}
}

func TestRunLogsTelemetryOptOut(t *testing.T) {
	upstream := fakeUpstream(t)
	ctx, cancel := context.WithCancel(context.Background())
	var logs syncBuffer
	done := make(chan error, 1)
	args := []string{"-config", writeFile(t, "config.yaml", configFor(upstream.URL, "")), "-listen", "127.0.0.1:0", "-drain-delay", "0s"}
	go func() {
		done <- run(ctx, args, envOf(map[string]string{"OSS_TELEMETRY_DISABLED": "1"}), &logs, func(string) { cancel() })
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("run did not return")
	}
	assert.Contains(t, logs.String(), "INFO telemetry: disabled by OSS_TELEMETRY_DISABLED")
}

// slowHandler blocks each request until release is closed.
type slowHandler struct {
	started chan struct{}
	release chan struct{}
}

func (h *slowHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.started <- struct{}{}
	select {
	case <-h.release:
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "finished")
	case <-r.Context().Done():
	}
}

// startLifecycle serves a slow handler through the lifecycle, returning
// the base URL, the log, the close counter and the serve result.
func startLifecycle(t *testing.T, ctx context.Context, drain, timeout time.Duration, h http.Handler) (string, *syncBuffer, *atomic.Int32, chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	logs := &syncBuffer{}
	closed := &atomic.Int32{}
	lc := &lifecycle{
		settings:     &settings{healthPath: "/healthz", readyPath: "/readyz", drainDelay: drain, shutdownTimeout: timeout},
		log:          newLogger(logs, "test", levelDebug),
		probes:       &probeHandler{healthPath: "/healthz", readyPath: "/readyz", gateway: h},
		closeGateway: func() error { closed.Add(1); return nil },
	}
	done := make(chan error, 1)
	go func() { done <- lc.serve(ctx, ln) }()
	base := "http://" + ln.Addr().String()
	waitFor(t, "readiness", func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return base, logs, closed, done
}

func TestShutdownSequence(t *testing.T) {
	h := &slowHandler{started: make(chan struct{}, 1), release: make(chan struct{})}
	ctx, signal := context.WithCancel(context.Background())
	defer signal()
	base, logs, closed, done := startLifecycle(t, ctx, time.Second, 30*time.Second, h)

	type result struct {
		status int
		body   string
		err    error
	}
	inFlight := make(chan result, 1)
	go func() {
		resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader("{}"))
		if err != nil {
			inFlight <- result{err: err}
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		inFlight <- result{status: resp.StatusCode, body: string(body)}
	}()
	<-h.started

	signal()
	// During the drain delay the listener still accepts: readiness fails,
	// liveness holds.
	waitFor(t, "readiness to fail", func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(string(body), "shutting down")
	})
	// The drain delay is longer than these two requests normally take; a
	// very slow machine may already have closed the listener.
	if resp, err := http.Get(base + "/healthz"); err == nil {
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		resp.Body.Close()
	}

	waitFor(t, "the listener to close", func() bool { return strings.Contains(logs.String(), "stopped accepting") })
	_, err := net.DialTimeout("tcp", strings.TrimPrefix(base, "http://"), 2*time.Second)
	assert.Error(t, err, "no new connections after the drain delay")
	assert.Equal(t, int32(0), closed.Load(), "the gateway stays open while a request is in flight")
	select {
	case err := <-done:
		t.Fatalf("serve returned with a request in flight: %v", err)
	default:
	}

	close(h.release)
	r := <-inFlight
	require.NoError(t, r.err)
	assert.Equal(t, http.StatusOK, r.status)
	assert.Equal(t, "finished", r.body)

	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not return after the last request finished")
	}
	assert.Equal(t, int32(1), closed.Load(), "the gateway is closed exactly once")
	assertInOrder(t, logs.String(),
		"INFO listening on",
		"INFO shutdown: signal received, readiness now failing; draining for 1s",
		"INFO shutdown: drain delay over; stopped accepting connections, waiting up to 30s",
		"INFO shutdown: all in-flight requests finished",
		"INFO shutdown: gateway closed",
		"INFO shutdown: complete",
	)
}

func TestShutdownTimeoutAbandonsSlowRequests(t *testing.T) {
	h := &slowHandler{started: make(chan struct{}, 1), release: make(chan struct{})}
	defer close(h.release)
	ctx, signal := context.WithCancel(context.Background())
	defer signal()
	base, logs, closed, done := startLifecycle(t, ctx, 0, 200*time.Millisecond, h)

	inFlight := make(chan error, 1)
	go func() {
		resp, err := http.Get(base + "/slow")
		if err == nil {
			resp.Body.Close()
		}
		inFlight <- err
	}()
	<-h.started
	signal()

	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not give up after the shutdown timeout")
	}
	assert.Error(t, <-inFlight, "the abandoned request's connection is closed")
	assert.Equal(t, int32(1), closed.Load())
	assertInOrder(t, logs.String(),
		"WARN shutdown: timeout of 200ms elapsed with requests still in flight",
		"INFO shutdown: gateway closed",
		"INFO shutdown: complete",
	)
}

func TestProbeMethods(t *testing.T) {
	p := &probeHandler{healthPath: "/healthz", readyPath: "/readyz", gateway: http.NotFoundHandler()}
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/healthz", nil))
	assert.Equal(t, http.StatusMethodNotAllowed, rec.Code)
	assert.Equal(t, "GET, HEAD", rec.Header().Get("Allow"))

	rec = httptest.NewRecorder()
	p.ServeHTTP(rec, httptest.NewRequest(http.MethodHead, "/healthz", nil))
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Empty(t, rec.Body.String())

	rec = httptest.NewRecorder()
	p.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code, "not ready before serving starts")
}

func assertInOrder(t *testing.T, logs string, lines ...string) {
	t.Helper()
	rest := logs
	for _, line := range lines {
		i := strings.Index(rest, line)
		if !assert.GreaterOrEqual(t, i, 0, "missing (or out of order): %q\n--- log ---\n%s", line, logs) {
			return
		}
		rest = rest[i+len(line):]
	}
}

// newLoopbackServer starts an httptest server on loopback and returns its
// URL; it is closed when the test ends.
func newLoopbackServer(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}
