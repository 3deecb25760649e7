package yaegigate_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/llmgateway/llmgateway/integration/redisproc"
	"github.com/llmgateway/llmgateway/integration/traefikproc"
)

// Fault matrix, the plugin form: Traefik's dynamic configuration
// rewritten 10 times under sustained traffic, in a real Traefik v3.6.12
// watching its file provider. Traefik builds new middleware instances on
// every change and swaps them in while requests run on the old ones.
// Two middlewares use the plugin: "llm-redis" keeps its counters in
// Redis, "llm-mem" in process (README "Stores": in the plugin form the
// in-process counters belong to the middleware's name, so a rebuilt
// instance counts on where the old one left off).

const (
	reloadRevisions = 10
	memHost         = "mem.test" // routed to llm-mem; any other host to llm-redis
)

// reloadPluginConfig is revision rev of a middleware's configuration: the
// model list carries "rev-<rev>", so a client sees when it is applied.
func reloadPluginConfig(upstreamURL, redisAddr string, rev int) map[string]interface{} {
	cfg := map[string]interface{}{
		"providers": map[string]interface{}{
			"mock": map[string]interface{}{
				"type": "openai", "baseUrl": upstreamURL,
				"models": []interface{}{upstreamModel, fmt.Sprintf("rev-%d", rev)},
			},
		},
		"groups": map[string]interface{}{"default": map[string]interface{}{"providers": []interface{}{}}},
		"users": map[string]interface{}{"inline": []interface{}{
			map[string]interface{}{"name": "alice", "group": "default", "apiKey": userKey, "admin": true},
		}},
		"admin": map[string]interface{}{"enabled": true},
	}
	if redisAddr != "" {
		cfg["redis"] = map[string]interface{}{"address": redisAddr, "failOpen": false}
	}
	return cfg
}

// reloadDynamicYAML is revision rev of the whole dynamic configuration.
func reloadDynamicYAML(t *testing.T, upstreamURL, redisAddr, service string, rev int) []byte {
	t.Helper()
	router := func(rule string, priority int, mw string) map[string]interface{} {
		return map[string]interface{}{"rule": rule, "priority": priority, "entryPoints": []interface{}{traefikproc.EntryPoint},
			"middlewares": []interface{}{mw}, "service": "dummy"}
	}
	httpCfg := map[string]interface{}{
		"middlewares": map[string]interface{}{
			"llm-redis": map[string]interface{}{"plugin": map[string]interface{}{pluginAlias: reloadPluginConfig(upstreamURL, redisAddr, rev)}},
			"llm-mem":   map[string]interface{}{"plugin": map[string]interface{}{pluginAlias: reloadPluginConfig(upstreamURL, "", rev)}},
		},
		"routers": map[string]interface{}{
			"llm-redis": router("PathPrefix(`/`)", 10, "llm-redis"),
			"llm-mem":   router("Host(`"+memHost+"`)", 100, "llm-mem"),
		},
		"services": map[string]interface{}{
			"dummy": map[string]interface{}{"loadBalancer": map[string]interface{}{
				"servers": []interface{}{map[string]interface{}{"url": service}},
			}},
		},
	}
	data, err := yaml.Marshal(map[string]interface{}{"http": httpCfg})
	require.NoError(t, err)
	return data
}

// reloadResult is one request of the traffic.
type reloadResult struct {
	host, what string
	status     int
	body       []byte
	err        error
}

func (r reloadResult) ok() bool {
	if r.err != nil || r.status != http.StatusOK {
		return false
	}
	if r.what == "stream" {
		return bytes.HasSuffix(r.body, []byte("data: [DONE]\n\n")) && bytes.Contains(r.body, []byte(`"finish_reason":"stop"`))
	}
	return bytes.Contains(r.body, []byte(`"finish_reason":"stop"`))
}

func (r reloadResult) String() string {
	if r.err != nil {
		return r.host + " " + r.what + ": " + r.err.Error()
	}
	return fmt.Sprintf("%s %s: %d %s", r.host, r.what, r.status, bytes.TrimSpace(r.body))
}

// reloadDo sends one request to Traefik for host ("" for the default
// router).
func reloadDo(c *http.Client, base, host, method, path string, body []byte) reloadResult {
	res := reloadResult{host: host}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		res.err = err
		return res
	}
	if host != "" {
		req.Host = host
	}
	req.Header.Set("Authorization", "Bearer "+userKey)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		res.err = err
		return res
	}
	defer resp.Body.Close()
	res.status = resp.StatusCode
	res.body, res.err = io.ReadAll(resp.Body)
	return res
}

// TestRealTraefikReloadUnderTraffic rewrites the dynamic configuration
// 10 times while 4 clients send chats and streams through both
// middlewares: every request answers 200 (a stream ends with [DONE]),
// each revision becomes visible in the model list, and afterwards both
// middlewares' admin usage — Redis-backed and in process — counts
// exactly the requests sent to it.
func TestRealTraefikReloadUnderTraffic(t *testing.T) {
	bin := traefikBinary(t)
	now := time.Now().UTC()
	if left := now.Truncate(24 * time.Hour).Add(24 * time.Hour).Sub(now); left < 2*time.Minute {
		time.Sleep(left + time.Second) // the day's counters must not roll over mid-test
	}
	rs := redisproc.Start(t)
	up := newFixtureUpstream(t)
	dummyHits := &nextHandler{}
	dummy := httptest.NewServer(dummyHits)
	defer dummy.Close()

	workDir := t.TempDir()
	start := time.Now()
	p, err := traefikproc.Start(traefikproc.Config{
		Binary:      bin,
		WorkDir:     workDir,
		PluginDir:   pluginDir(t),
		DynamicYAML: reloadDynamicYAML(t, up.URL(), rs.Addr, dummy.URL, 0),
		Watch:       true,
		Throttle:    100 * time.Millisecond,
		ReadyPath:   "/v1/models",
		ReadyHeader: http.Header{"Authorization": {"Bearer " + userKey}},
	})
	require.NoError(t, err, "traefik start-up")
	t.Cleanup(func() {
		_ = p.Stop()
		if t.Failed() {
			t.Logf("traefik output:\n%s", p.Logs())
		}
	})
	t.Logf("traefik %s ready on %s after %s", traefikproc.Version, p.URL, time.Since(start).Round(time.Millisecond))

	client := &http.Client{Timeout: requestTimeout, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	chat := func(stream bool) []byte {
		m := map[string]interface{}{"model": upstreamModel, "messages": []interface{}{
			map[string]interface{}{"role": "user", "content": "through every reload"}}}
		if stream {
			m["stream"] = true
		}
		b, _ := json.Marshal(m)
		return b
	}
	hasRevision := func(host string, rev int) bool {
		r := reloadDo(client, p.URL, host, http.MethodGet, "/v1/models", nil)
		return r.err == nil && r.status == http.StatusOK && strings.Contains(string(r.body), fmt.Sprintf(`"rev-%d"`, rev))
	}
	require.True(t, hasRevision("", 0) && hasRevision(memHost, 0), "revision 0 before the traffic")

	var mu sync.Mutex
	var results []reloadResult
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, host := range []string{"", memHost} {
		for _, what := range []string{"chat", "stream"} {
			wg.Add(1)
			go func(host, what string) {
				defer wg.Done()
				body := chat(what == "stream")
				for {
					select {
					case <-stop:
						return
					default:
					}
					r := reloadDo(client, p.URL, host, http.MethodPost, "/v1/chat/completions", body)
					r.what = what
					mu.Lock()
					results = append(results, r)
					mu.Unlock()
				}
			}(host, what)
		}
	}
	stopTraffic := func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	}
	t.Cleanup(stopTraffic)
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(results)
	}
	// awaitTraffic waits for n more requests (a bounded poll).
	awaitTraffic := func(n int, what string) {
		want := count() + n
		deadline := time.Now().Add(30 * time.Second)
		for count() < want {
			require.True(t, time.Now().Before(deadline), "%s: traffic stalled at %d requests", what, count())
			time.Sleep(10 * time.Millisecond)
		}
	}

	awaitTraffic(20, "before the first rewrite")
	applied := make([]time.Duration, 0, reloadRevisions)
	for rev := 1; rev <= reloadRevisions; rev++ {
		written := time.Now()
		require.NoError(t, traefikproc.WriteDynamic(workDir, reloadDynamicYAML(t, up.URL(), rs.Addr, dummy.URL, rev)))
		deadline := written.Add(30 * time.Second)
		for !hasRevision("", rev) || !hasRevision(memHost, rev) {
			require.True(t, time.Now().Before(deadline), "revision %d not applied within 30 s", rev)
			time.Sleep(20 * time.Millisecond)
		}
		applied = append(applied, time.Since(written).Round(time.Millisecond))
		// Traffic on the new instances before the next rewrite.
		awaitTraffic(8, fmt.Sprintf("after revision %d", rev))
	}
	stopTraffic()
	t.Logf("%d rewrites applied after %v; %d requests", reloadRevisions, applied, len(results))

	sent := map[string]int64{}
	failed := 0
	for _, r := range results {
		if !r.ok() {
			failed++
			if failed <= 5 {
				t.Errorf("request across the reloads failed: %s", r)
			}
		}
		sent[r.host]++
	}
	assert.Zero(t, failed, "non-200 or cut answers out of %d", len(results))

	// Counters survive the rebuilds: each middleware's admin usage (its
	// current instance) counts every request sent to it. Settling may end
	// a moment after the client has the answer: a bounded poll.
	usage := func(host string) (int64, string) {
		r := reloadDo(client, p.URL, host, http.MethodGet, "/admin/api/usage", nil)
		if r.err != nil || r.status != http.StatusOK {
			return -1, r.String()
		}
		var u struct {
			Users []struct {
				Name           string `json:"name"`
				RequestsPerDay int64  `json:"requestsPerDay"`
			} `json:"users"`
		}
		if err := json.Unmarshal(r.body, &u); err != nil {
			return -1, r.String()
		}
		for _, row := range u.Users {
			if row.Name == "alice" {
				return row.RequestsPerDay, r.String()
			}
		}
		return -1, r.String()
	}
	for _, host := range []string{"", memHost} {
		var got int64
		var raw string
		deadline := time.Now().Add(5 * time.Second)
		for {
			got, raw = usage(host)
			if got == sent[host] || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		name := map[string]string{"": "llm-redis", memHost: "llm-mem"}[host]
		assert.Equal(t, sent[host], got, "%s: requests counted across %d rebuilds (admin usage: %s)", name, reloadRevisions, raw)
	}
	conn, err := redisproc.Dial(rs.Addr)
	require.NoError(t, err)
	defer conn.Close()
	n, _, err := conn.Int("GET", "llmgw:user:alice:req:day:"+time.Now().UTC().Format("20060102"))
	require.NoError(t, err)
	assert.Equal(t, sent[""], n, "llm-redis: the day's counter in Redis")
	assert.Zero(t, dummyHits.hits.Load(), "the gateway's routes must not reach the router's service")
}
