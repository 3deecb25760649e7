package gateway

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func init() {
	// No test may reach the real collector: even a test that stamps a
	// release Version without overriding the endpoint stays on loopback
	// (port 9 on 127.0.0.1 refuses the connection).
	telemetryEndpoint = "http://127.0.0.1:9/telemetry-disabled-in-tests"
}

// setTelemetryForTest swaps the telemetry state, with a fresh sync.Once,
// and restores it when the test ends.
func setTelemetryForTest(t *testing.T, version, endpoint string, timeout time.Duration, env map[string]string) {
	t.Helper()
	telemetryMu.Lock()
	oldOnce, oldVersion, oldEndpoint, oldTimeout, oldGetenv := telemetryOnce, Version, telemetryEndpoint, telemetryTimeout, telemetryGetenv
	telemetryOnce = new(sync.Once)
	Version = version
	telemetryEndpoint = endpoint
	telemetryTimeout = timeout
	telemetryGetenv = func(name string) string { return env[name] }
	telemetryMu.Unlock()
	t.Cleanup(func() {
		telemetryMu.Lock()
		telemetryOnce, Version, telemetryEndpoint, telemetryTimeout, telemetryGetenv = oldOnce, oldVersion, oldEndpoint, oldTimeout, oldGetenv
		telemetryMu.Unlock()
	})
}

// waitTelemetry waits (boundedly) for every started ping to finish.
func waitTelemetry(t *testing.T, bound time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer func() { _ = recover() }()
		telemetryInFlight.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(bound):
		t.Fatalf("telemetry ping still running after %s", bound)
	}
}

// pingRecorder is a loopback collector that records every request body.
type pingRecorder struct {
	mu     sync.Mutex
	bodies []string
	paths  []string
	ctypes []string
}

func (p *pingRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	p.mu.Lock()
	p.bodies = append(p.bodies, string(body))
	p.paths = append(p.paths, r.Method+" "+r.URL.Path)
	p.ctypes = append(p.ctypes, r.Header.Get("Content-Type"))
	p.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (p *pingRecorder) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.bodies)
}

func TestTelemetryOptOut(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"none set", map[string]string{}, ""},
		{"DO_NOT_TRACK", map[string]string{"DO_NOT_TRACK": "1"}, "DO_NOT_TRACK"},
		{"OSS_TELEMETRY_DISABLED", map[string]string{"OSS_TELEMETRY_DISABLED": "true"}, "OSS_TELEMETRY_DISABLED"},
		{"project variable", map[string]string{"TRAEFIK_LLMGATEWAY_DISABLE_TELEMETRY": "yes"}, "TRAEFIK_LLMGATEWAY_DISABLE_TELEMETRY"},
		{"zero is not set", map[string]string{"DO_NOT_TRACK": "0"}, ""},
		{"false is not set", map[string]string{"DO_NOT_TRACK": "FALSE", "OSS_TELEMETRY_DISABLED": "false"}, ""},
		{"blank is not set", map[string]string{"DO_NOT_TRACK": "  "}, ""},
		{"first set wins", map[string]string{"DO_NOT_TRACK": "0", "OSS_TELEMETRY_DISABLED": "1", "TRAEFIK_LLMGATEWAY_DISABLE_TELEMETRY": "1"}, "OSS_TELEMETRY_DISABLED"},
	}
	for _, tc := range cases {
		tc := tc
		t.Run(tc.name, func(t *testing.T) {
			got := TelemetryOptOut(func(name string) string { return tc.env[name] })
			if got != tc.want {
				t.Fatalf("TelemetryOptOut = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTelemetryDecision(t *testing.T) {
	noEnv := func(string) string { return "" }
	cases := []struct {
		name       string
		version    string
		env        map[string]string
		wantSend   bool
		wantReason string
	}{
		{"dev version never sends", DevVersion, nil, false, "development build"},
		{"empty version never sends", "", nil, false, "development build"},
		{"dev version with opt-out", DevVersion, map[string]string{"DO_NOT_TRACK": "1"}, false, "development build"},
		{"release sends", "1.2.3", nil, true, "release build 1.2.3"},
		{"DO_NOT_TRACK suppresses", "1.2.3", map[string]string{"DO_NOT_TRACK": "1"}, false, "DO_NOT_TRACK"},
		{"OSS_TELEMETRY_DISABLED suppresses", "1.2.3", map[string]string{"OSS_TELEMETRY_DISABLED": "1"}, false, "OSS_TELEMETRY_DISABLED"},
		{"project variable suppresses", "1.2.3", map[string]string{"TRAEFIK_LLMGATEWAY_DISABLE_TELEMETRY": "1"}, false, "TRAEFIK_LLMGATEWAY_DISABLE_TELEMETRY"},
		{"opt-out set to 0 still sends", "1.2.3", map[string]string{"DO_NOT_TRACK": "0"}, true, "release build"},
	}
	for _, tc := range cases {
		tc := tc
		t.Run(tc.name, func(t *testing.T) {
			getenv := noEnv
			if tc.env != nil {
				getenv = func(name string) string { return tc.env[name] }
			}
			send, reason := telemetryDecision(tc.version, getenv)
			if send != tc.wantSend {
				t.Fatalf("send = %v, want %v (reason %q)", send, tc.wantSend, reason)
			}
			if !strings.Contains(reason, tc.wantReason) {
				t.Fatalf("reason = %q, want it to contain %q", reason, tc.wantReason)
			}
		})
	}
}

func TestTelemetryReleaseSendsOnceWithExactPayload(t *testing.T) {
	rec := &pingRecorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	setTelemetryForTest(t, "1.2.3", srv.URL+"/v1/loaded", 5*time.Second, nil)

	before := time.Now().Unix()
	reportLoaded()
	reportLoaded()
	waitTelemetry(t, 10*time.Second)
	after := time.Now().Unix()

	if rec.count() != 1 {
		t.Fatalf("collector received %d pings, want exactly 1", rec.count())
	}
	if rec.paths[0] != "POST /v1/loaded" {
		t.Fatalf("request = %q, want POST /v1/loaded", rec.paths[0])
	}
	if rec.ctypes[0] != "application/json" {
		t.Fatalf("Content-Type = %q, want application/json", rec.ctypes[0])
	}
	var payload map[string]interface{}
	if err := json.Unmarshal([]byte(rec.bodies[0]), &payload); err != nil {
		t.Fatalf("payload %q is not JSON: %v", rec.bodies[0], err)
	}
	if len(payload) != 3 {
		t.Fatalf("payload has %d fields, want exactly 3: %s", len(payload), rec.bodies[0])
	}
	if payload["project"] != "llmgateway" || payload["version"] != "1.2.3" {
		t.Fatalf("payload = %s, want project llmgateway and version 1.2.3", rec.bodies[0])
	}
	ts, ok := payload["ts"].(float64)
	if !ok || int64(ts) < before || int64(ts) > after || ts != float64(int64(ts)) {
		t.Fatalf("ts = %v, want integer unix seconds in [%d, %d]", payload["ts"], before, after)
	}
	if !strings.HasPrefix(rec.bodies[0], `{"project":"llmgateway","version":"1.2.3","ts":`) {
		t.Fatalf("payload = %s, want fields in the order project, version, ts", rec.bodies[0])
	}
}

func TestTelemetryDevVersionNeverSends(t *testing.T) {
	rec := &pingRecorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	setTelemetryForTest(t, DevVersion, srv.URL, 5*time.Second, nil)

	reportLoaded()
	waitTelemetry(t, 10*time.Second)
	if rec.count() != 0 {
		t.Fatalf("dev build sent %d pings, want none", rec.count())
	}
}

func TestTelemetryOptOutSuppressesPing(t *testing.T) {
	for i := 0; i < len(telemetryOptOutVars); i++ {
		name := telemetryOptOutVars[i]
		t.Run(name, func(t *testing.T) {
			rec := &pingRecorder{}
			srv := httptest.NewServer(rec)
			defer srv.Close()
			setTelemetryForTest(t, "1.2.3", srv.URL, 5*time.Second, map[string]string{name: "1"})

			reportLoaded()
			waitTelemetry(t, 10*time.Second)
			if rec.count() != 0 {
				t.Fatalf("%s=1 still sent %d pings", name, rec.count())
			}
		})
	}
}

func TestTelemetryHangingEndpointNeverBlocks(t *testing.T) {
	release := make(chan struct{})
	arrived := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case arrived <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	// A long timeout: if reportLoaded waited for the request, the bounded
	// wait below would fail long before the ping gave up.
	setTelemetryForTest(t, "1.2.3", srv.URL, time.Minute, nil)

	returned := make(chan struct{})
	go func() {
		defer func() { _ = recover() }()
		reportLoaded()
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("reportLoaded blocked on a hanging endpoint")
	}
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("the ping never reached the loopback collector")
	}
}

func TestTelemetryTimeoutAbandonsHangingEndpoint(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	setTelemetryForTest(t, "1.2.3", srv.URL, 100*time.Millisecond, nil)

	reportLoaded()
	// The ping gives up after its timeout; it does not wait for the server.
	waitTelemetry(t, 10*time.Second)
}

func TestTelemetryUnreachableEndpointIsSwallowed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // nothing listens there now: the connection is refused
	setTelemetryForTest(t, "1.2.3", "http://"+addr+"/v1/loaded", 5*time.Second, nil)

	reportLoaded()
	waitTelemetry(t, 10*time.Second)
}
