package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// DevVersion is the version every build from source carries: a checkout,
// a local build and every test run. A process with this version never
// sends the anonymous usage ping.
const DevVersion = "0.0.0-dev"

// Version is the gateway's release version. Release builds stamp it with
//
//	-ldflags "-X github.com/llmgateway/llmgateway/gateway.Version=1.2.3"
//
// and every other build keeps the DevVersion sentinel "0.0.0-dev".
var Version = "0.0.0-dev"

// telemetryOptOutVars are the environment variables that disable the
// usage ping, in the order TelemetryOptOut reports them.
var telemetryOptOutVars = []string{"DO_NOT_TRACK", "OSS_TELEMETRY_DISABLED", "TRAEFIK_LLMGATEWAY_DISABLE_TELEMETRY"}

// telemetryState is what reportLoaded reads; tests swap it under
// telemetryMu. Production never changes it after package initialisation.
var (
	telemetryMu sync.Mutex
	// telemetryOnce makes the ping once per process however many gateways
	// (routes, config reloads) are constructed.
	telemetryOnce = new(sync.Once)
	// telemetryEndpoint receives the "loaded" ping. It is the project's
	// usage-count collector; the request carries only the three-field
	// payload of telemetryPayload.
	telemetryEndpoint = "https://telemetry.llmgateway.dev/v1/loaded"
	// telemetryTimeout bounds the whole ping: connect, send and response.
	telemetryTimeout = 2 * time.Second
	// telemetryGetenv reads the opt-out variables.
	telemetryGetenv = os.Getenv
	// telemetryInFlight counts running pings, so tests can wait for one.
	telemetryInFlight sync.WaitGroup
)

// telemetryPayload is the whole body of the ping: nothing else is sent.
type telemetryPayload struct {
	Project string `json:"project"`
	Version string `json:"version"`
	TS      int64  `json:"ts"`
}

// TelemetryOptOut returns the name of the first telemetry opt-out variable
// that is set (DO_NOT_TRACK, OSS_TELEMETRY_DISABLED or
// TRAEFIK_LLMGATEWAY_DISABLE_TELEMETRY), or "" when none is. A variable
// counts as set when its value is non-empty and not "0" or "false" (in
// any case). A nil getenv reads the process environment.
func TelemetryOptOut(getenv func(string) string) string {
	if getenv == nil {
		getenv = os.Getenv
	}
	for i := 0; i < len(telemetryOptOutVars); i++ {
		name := telemetryOptOutVars[i]
		v := strings.TrimSpace(getenv(name))
		if v == "" || v == "0" || strings.EqualFold(v, "false") {
			continue
		}
		return name
	}
	return ""
}

// telemetryDecision says whether a process with this version and
// environment sends the ping, and why.
func telemetryDecision(version string, getenv func(string) string) (bool, string) {
	if version == "" || version == DevVersion {
		return false, "development build " + DevVersion
	}
	if name := TelemetryOptOut(getenv); name != "" {
		return false, "disabled by " + name
	}
	return true, "release build " + version
}

// reportLoaded sends the anonymous "loaded" ping, at most once per
// process, after a gateway was constructed successfully. It never blocks:
// the request runs in its own goroutine with a 2 s timeout, is never
// retried, and every error (and panic) is swallowed.
func reportLoaded() {
	telemetryMu.Lock()
	once := telemetryOnce
	version := Version
	endpoint := telemetryEndpoint
	timeout := telemetryTimeout
	getenv := telemetryGetenv
	telemetryMu.Unlock()

	once.Do(func() {
		send, _ := telemetryDecision(version, getenv)
		if !send {
			return
		}
		telemetryInFlight.Add(1)
		go func() {
			defer func() { _ = recover() }()
			defer telemetryInFlight.Done()
			postLoaded(endpoint, version, timeout)
		}()
	})
}

// postLoaded performs one ping and ignores its outcome.
func postLoaded(endpoint, version string, timeout time.Duration) {
	body, err := json.Marshal(telemetryPayload{Project: "llmgateway", Version: version, TS: time.Now().Unix()})
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return
	}
	req.Header.Set("Content-Type", "application/json")
	client := &http.Client{}
	client.Timeout = timeout
	resp, err := client.Do(req)
	if err != nil {
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	_ = resp.Body.Close()
}
