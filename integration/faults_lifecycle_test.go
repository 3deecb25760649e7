package integration_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmgateway/llmgateway/integration/gwproc"
	"github.com/llmgateway/llmgateway/integration/mockupstream"
	"github.com/llmgateway/llmgateway/integration/redisproc"
)

// Fault matrix, the lifecycle: SIGTERM to the binary with 100 streams in
// flight (README "Running the binary": readiness fails, the drain delay
// passes, the listener closes, in-flight requests get up to
// -shutdown-timeout). cmd/llmgateway's TestBinaryGracefulShutdownOnSIGTERM
// covers one plain request.

// heldUpstream is the mock upstream holding every stream after its first
// event until release is closed.
type heldUpstream struct {
	mock    *mockupstream.Server
	held    chan struct{} // one send per stream now held
	release chan struct{}
}

func (u *heldUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.mock.ServeHTTP(&holdingWriter{ResponseWriter: w, u: u}, r)
}

// holdingWriter holds the stream at its second flush (the mock flushes
// the headers, then every event).
type holdingWriter struct {
	http.ResponseWriter
	u       *heldUpstream
	flushes int
}

func (w *holdingWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
	w.flushes++
	if w.flushes == 2 {
		w.u.held <- struct{}{}
		<-w.u.release
	}
}

// heldStream is one client stream: its first event's arrival, then the
// whole answer.
type heldStream struct {
	status int
	body   []byte
	err    error
	ended  time.Time
}

// SIGTERM with 100 streams in flight, each held by the upstream after
// its first event: readiness fails at once while every stream goes on;
// after the drain delay the listener closes (a new connection is
// refused) and the streams still run; released, every one of them ends
// whole — its last event and [DONE] — the process exits 0 within the
// shutdown timeout having logged that every in-flight request finished,
// and Redis holds all 100 requests with the tokens their streams
// reported.
func TestSIGTERMDrainsStreamsInFlight(t *testing.T) {
	const (
		streams         = 100
		drainDelay      = 3 * time.Second
		shutdownTimeout = 20 * time.Second
		key             = "sk-drain-alice"
	)
	rlAwaitHeadroom(t, 24*time.Hour, time.Minute)
	rs := redisproc.Start(t)
	bin := buildGatewayBinary(t)
	up := &heldUpstream{
		mock:    mockupstream.New(mockupstream.Options{Models: []string{rlModel}, Chunks: rlChunks, RecordLimit: -1}),
		held:    make(chan struct{}, streams),
		release: make(chan struct{}),
	}
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(up.release) }) }
	srv := httptest.NewServer(up)
	t.Cleanup(srv.Close)
	t.Cleanup(release)

	cfg := map[string]interface{}{
		"providers": map[string]interface{}{"mock": rlProvider(srv.URL, rlModel)},
		"groups": map[string]interface{}{"team": map[string]interface{}{"providers": []string{},
			"limits": map[string]interface{}{"tokensPerDay": 1000000000}}},
		"users": map[string]interface{}{"inline": []map[string]interface{}{rlUser("alice", "team", key, nil)}},
		"redis": map[string]interface{}{"address": rs.Addr, "failOpen": false},
		// 100 requests arriving at once must not find the body-admission
		// slots (default 64 here) full: this test is about the shutdown.
		"maxInFlightBodyRequests": 2 * streams,
	}
	raw, err := json.Marshal(cfg)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "config.json")
	require.NoError(t, os.WriteFile(path, raw, 0o600))
	gw, err := gwproc.Start(gwproc.Config{
		Binary: bin,
		Args: []string{"-config", path, "-listen", "{addr}",
			"-drain-delay", drainDelay.String(), "-shutdown-timeout", shutdownTimeout.String()},
		Env: []string{"DO_NOT_TRACK=1"},
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		release()
		_ = gw.Kill()
		if t.Failed() {
			t.Logf("gateway output:\n%s", gw.Logs())
		}
	})

	client := rlHTTPClient()
	body := rlChatBody(rlModel, "hold on", true, true)
	results := make([]heldStream, streams)
	firsts := make(chan struct{}, streams)
	var ended atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < streams; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			defer ended.Add(1)
			res := &results[i]
			req, err := http.NewRequest(http.MethodPost, gw.URL+"/v1/chat/completions", bytes.NewReader(body))
			if err != nil {
				res.err = err
				return
			}
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				res.err = err
				firsts <- struct{}{}
				return
			}
			defer resp.Body.Close()
			res.status = resp.StatusCode
			br := bufio.NewReader(resp.Body)
			var got bytes.Buffer
			for {
				line, err := br.ReadBytes('\n')
				got.Write(line)
				if bytes.HasPrefix(line, []byte("data: ")) || err != nil {
					break
				}
			}
			firsts <- struct{}{}
			rest, err := io.ReadAll(br)
			got.Write(rest)
			res.body, res.err, res.ended = got.Bytes(), err, time.Now()
		}(i)
	}
	awaitN := func(ch chan struct{}, n int, what string) {
		deadline := time.After(30 * time.Second)
		for i := 0; i < n; i++ {
			select {
			case <-ch:
			case <-deadline:
				t.Fatalf("%s: %d of %d within 30 s", what, i, n)
			}
		}
	}
	awaitN(up.held, streams, "streams held by the upstream after their first event")
	awaitN(firsts, streams, "first events at the clients")
	require.Zero(t, ended.Load(), "a stream ended before the upstream released it: %+v", results)

	require.NoError(t, gw.Signal(syscall.SIGTERM))
	signalled := time.Now()
	probe := &http.Client{Timeout: 2 * time.Second}
	rtEventually(t, drainDelay, 20*time.Millisecond, "readiness failing during the drain delay", func() bool {
		resp, err := probe.Get(gw.URL + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable
	})
	assert.Zero(t, ended.Load(), "readiness fails first: no stream has ended yet")

	rtEventually(t, drainDelay+10*time.Second, 20*time.Millisecond, "the listener to close after the drain delay", func() bool {
		return strings.Contains(gw.Logs(), "stopped accepting connections")
	})
	nc, err := net.DialTimeout("tcp", gw.Addr, 2*time.Second)
	if err == nil {
		nc.Close()
	}
	assert.Error(t, err, "a new connection after the drain must be refused")
	assert.Zero(t, ended.Load(), "the streams outlive the listener")
	assert.False(t, gw.Exited(), "the process waits for its streams")

	release()
	wg.Wait()
	select {
	case <-gw.Done():
	case <-time.After(shutdownTimeout + 10*time.Second):
		t.Fatalf("the process did not exit within the shutdown timeout (%v) after its streams ended", shutdownTimeout)
	}
	exited := time.Since(signalled)
	assert.NoError(t, gw.ExitErr(), "exit status")
	logs := gw.Logs()
	assert.Contains(t, logs, "shutdown: all in-flight requests finished")
	assert.NotContains(t, logs, "elapsed with requests still in flight")
	t.Logf("SIGTERM to exit: %v (drain delay %v); last stream ended %v after the signal",
		exited.Round(time.Millisecond), drainDelay, lastEnd(results).Sub(signalled).Round(time.Millisecond))

	var prompt, completion int64
	whole := 0
	for i, r := range results {
		if !assert.NoError(t, r.err, "stream %d", i) || !assert.Equal(t, http.StatusOK, r.status, "stream %d", i) {
			continue
		}
		rr := rlResult{status: r.status, body: r.body, header: http.Header{"Content-Type": {"text/event-stream"}}}
		if !assert.True(t, streamComplete(rr), "stream %d was cut:\n%s", i, r.body) {
			continue
		}
		whole++
		u := rlReportedUsage(t, r.body, true)
		if assert.NotNil(t, u, "stream %d reported no usage", i) {
			prompt += u.PromptTokens
			completion += u.CompletionTokens
		}
	}
	assert.Equal(t, streams, whole, "streams ended whole")

	// Every stream accounted, though the process is gone.
	rd := rlDialRedis(t, rs.Addr)
	now := time.Now()
	reqs, _ := rd.get(rlKey("user", "alice", "req", "day", now))
	tokin, _ := rd.get(rlKey("user", "alice", "tokin", "day", now))
	tokout, _ := rd.get(rlKey("user", "alice", "tokout", "day", now))
	assert.Equal(t, int64(streams), reqs, "requests counted in Redis")
	assert.Equal(t, prompt, tokin, "prompt tokens accounted = those the streams reported")
	assert.Equal(t, completion, tokout, "completion tokens accounted = those the streams reported")
	assert.Greater(t, completion, int64(0))
}

func lastEnd(rs []heldStream) time.Time {
	var last time.Time
	for _, r := range rs {
		if r.ended.After(last) {
			last = r.ended
		}
	}
	return last
}
