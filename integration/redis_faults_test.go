package integration_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmgateway/llmgateway/integration/gwproc"
	"github.com/llmgateway/llmgateway/integration/mockupstream"
	"github.com/llmgateway/llmgateway/integration/redisproc"
)

// Redis outages: stopped, restarted and hung, with failOpen true and false.

// rlOutage runs traffic from 4 workers through one gateway while its
// Redis is stopped (SIGTERM, or SIGKILL) and restarted on the same port.
type rlOutage struct {
	t        *testing.T
	rs       *redisproc.Server
	gw       *gwproc.Process
	key      string
	body     []byte
	client   *http.Client
	samples  []rlResult
	downAt   time.Time // SIGTERM sent
	downFrom time.Time // the process has exited
	upAt     time.Time // restart begun
	upFrom   time.Time // the new process answers PING
	probes   map[string]rlResult
	// kill stops Redis with SIGKILL instead of SIGTERM.
	kill bool
	// streamBody, when set, is what half of the workers send (a
	// streaming chat request) instead of body.
	streamBody []byte
}

// outageSetup varies the outage environment; the zero value is the
// SIGTERM outage of the tests below.
type outageSetup struct {
	failOpen *bool
	// kill: SIGKILL instead of SIGTERM.
	kill bool
	// redis: extra server flags (persistence).
	redis redisproc.Options
	// streamEvery > 0: half of the workers stream, the upstream pausing
	// this long between events, so streams are in flight at the kill.
	streamEvery time.Duration
	// reservationTTL: the gateway's, when set.
	reservationTTL string
}

func startOutageEnv(t *testing.T, failOpen *bool) *rlOutage {
	t.Helper()
	return startOutageEnvWith(t, outageSetup{failOpen: failOpen})
}

func startOutageEnvWith(t *testing.T, setup outageSetup) *rlOutage {
	t.Helper()
	rs := redisproc.StartWith(t, setup.redis)
	bin := buildGatewayBinary(t)
	mock := mockupstream.New(mockupstream.Options{Models: []string{rlModel}, Chunks: rlChunks, RecordLimit: -1, ChunkDelay: setup.streamEvery})
	up := httptest.NewServer(mock)
	t.Cleanup(up.Close)
	upURL := up.URL
	redis := map[string]interface{}{"address": rs.Addr}
	if setup.failOpen != nil {
		redis["failOpen"] = *setup.failOpen
	}
	const key = "sk-outage-alice"
	cfg := map[string]interface{}{
		"providers": map[string]interface{}{"mock": rlProvider(upURL, rlModel)},
		"groups": map[string]interface{}{
			"team": map[string]interface{}{"providers": []string{}, "limits": map[string]interface{}{
				"requestsPerMinute": 1000000, "tokensPerDay": 1000000000,
			}},
		},
		"users": map[string]interface{}{"inline": []map[string]interface{}{rlUser("alice", "team", key, nil)}},
		"redis": redis,
	}
	if setup.reservationTTL != "" {
		cfg["reservationTTL"] = setup.reservationTTL
	}
	gw := startGateway(t, bin, cfg)
	o := &rlOutage{t: t, rs: rs, gw: gw, key: key, kill: setup.kill,
		body: rlChatBody(rlModel, "keep going", false, false), client: rlHTTPClient(), probes: map[string]rlResult{}}
	if setup.streamEvery > 0 {
		o.streamBody = rlChatBody(rlModel, "keep streaming", true, false)
	}
	return o
}

func (o *rlOutage) chat() rlResult {
	return rlDo(o.client, http.MethodPost, o.gw.URL+"/v1/chat/completions", o.key, o.body)
}

func (o *rlOutage) stream() rlResult {
	return rlDo(o.client, http.MethodPost, o.gw.URL+"/v1/chat/completions", o.key, o.streamBody)
}

// run sends traffic for ~0.7 s, stops Redis, keeps sending for ~1.5 s
// (probing the non-metered routes meanwhile), restarts Redis on the same
// port and keeps sending for ~1.5 s more.
func (o *rlOutage) run() {
	t := o.t
	first := o.chat()
	require.Equal(t, http.StatusOK, first.status, "before the outage: %s", first)

	var mu sync.Mutex
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		send := o.chat
		if o.streamBody != nil && w%2 == 1 {
			send = o.stream
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				r := send()
				mu.Lock()
				o.samples = append(o.samples, r)
				mu.Unlock()
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	time.Sleep(700 * time.Millisecond)
	o.downAt = time.Now()
	if o.kill {
		o.rs.Kill()
	} else {
		require.NoError(t, o.rs.Stop())
	}
	o.downFrom = time.Now()
	time.Sleep(300 * time.Millisecond)
	o.probes["healthz"] = rlDo(o.client, http.MethodGet, o.gw.URL+"/healthz", "", nil)
	o.probes["readyz"] = rlDo(o.client, http.MethodGet, o.gw.URL+"/readyz", "", nil)
	o.probes["models"] = rlDo(o.client, http.MethodGet, o.gw.URL+"/v1/models", o.key, nil)
	time.Sleep(1200 * time.Millisecond)
	o.upAt = time.Now()
	require.NoError(t, o.rs.Restart())
	o.upFrom = time.Now()
	time.Sleep(1500 * time.Millisecond)
	close(stop)
	wg.Wait()
}

// phases splits the samples: before the stop, entirely inside the
// outage, after the restart, and straddling a transition.
func (o *rlOutage) phases() (before, down, after, straddle []rlResult) {
	for _, r := range o.samples {
		switch {
		case r.end.Before(o.downAt):
			before = append(before, r)
		case r.start.After(o.downFrom) && r.end.Before(o.upAt):
			down = append(down, r)
		case r.start.After(o.upFrom):
			after = append(after, r)
		default:
			straddle = append(straddle, r)
		}
	}
	return
}

// assertCountingResumed checks that the restarted (empty) Redis holds
// the requests sent after the restart, and that it keeps counting: 5
// more requests add exactly 5.
func (o *rlOutage) assertCountingResumed(after []rlResult) {
	t := o.t
	rd := rlDialRedis(t, o.rs.Addr)
	rlAwaitHeadroom(t, 24*time.Hour, 10*time.Second)
	now := time.Now()
	k := rlKey("user", "alice", "req", "day", now)
	v1, _ := rd.get(k)
	assert.GreaterOrEqual(t, v1, int64(len(after)), "%s after the restart: every request sent after it is counted in Redis", k)
	assert.Greater(t, v1, int64(0), "%s: counting did not resume in Redis", k)
	g1, _ := rd.get(rlKey("group", "team", "req", "day", now))
	for i := 0; i < 5; i++ {
		r := o.chat()
		require.Equal(t, http.StatusOK, r.status, "%s", r)
	}
	v2, _ := rd.get(k)
	g2, _ := rd.get(rlKey("group", "team", "req", "day", now))
	assert.Equal(t, v1+5, v2, "%s: 5 more requests", k)
	assert.Equal(t, g1+5, g2, "group team req day: 5 more requests")
	tok, _ := rd.get(rlKey("user", "alice", "tokin", "day", now))
	assert.Greater(t, tok, int64(0), "tokens accounted in Redis after the restart")
	t.Logf("after the restart Redis counted %d requests for alice (%d sent after the restart was confirmed), then %d", v1, len(after), v2)
}

// storeErrorLines counts the rate-limited "limits store error" lines.
func (o *rlOutage) storeErrorLines() []string {
	var out []string
	for _, line := range strings.Split(o.gw.Logs(), "\n") {
		if strings.Contains(line, "limits store error") {
			out = append(out, line)
		}
	}
	return out
}

// isStoreUnavailable: r is the fail-closed answer to a store error, 503
// limits_store_unavailable with Retry-After: 1.
func isStoreUnavailable(r rlResult) bool {
	if r.err != nil || r.status != http.StatusServiceUnavailable {
		return false
	}
	var e rlEnvelope
	if json.Unmarshal(r.body, &e) != nil {
		return false
	}
	return e.Error.Code == "limits_store_unavailable" && e.Error.Type == "server_error" && r.header.Get("Retry-After") == "1"
}

func maxLatency(rs []rlResult) time.Duration {
	var m time.Duration
	for _, r := range rs {
		if d := r.end.Sub(r.start); d > m {
			m = d
		}
	}
	return m
}

// failOpen: true (the default): no request notices the outage; the
// limiter counts in process meanwhile and goes back to Redis after.
func TestRedisOutageFailOpen(t *testing.T) {
	o := startOutageEnv(t, nil) // failOpen omitted: defaults to true
	o.run()
	before, down, after, straddle := o.phases()
	t.Logf("samples: %d before, %d during the outage (%v), %d straddling, %d after; slowest during the outage %v",
		len(before), len(down), o.upAt.Sub(o.downFrom).Round(time.Millisecond), len(straddle), len(after), maxLatency(down).Round(time.Millisecond))
	require.GreaterOrEqual(t, len(down), 10, "too little traffic during the outage to prove anything")
	require.GreaterOrEqual(t, len(after), 10, "too little traffic after the restart")
	failed := 0
	for _, r := range o.samples {
		if r.err != nil || r.status != http.StatusOK {
			failed++
			if failed <= 5 {
				t.Errorf("request failed with failOpen: %s", r)
			}
		}
	}
	assert.Equal(t, 0, failed, "failed requests out of %d", len(o.samples))
	for name, r := range o.probes {
		assert.Equal(t, http.StatusOK, r.status, "%s during the outage: %s", name, r)
	}
	lines := o.storeErrorLines()
	// One outage, shorter than 30 s: logged exactly once.
	if assert.Len(t, lines, 1, "limits store error lines:\n%s", strings.Join(lines, "\n")) {
		assert.Contains(t, lines[0], "counting in process until it recovers")
	}
	o.assertCountingResumed(after)
}

// failOpen: false: while Redis is down metered requests get 503
// limits_store_unavailable with Retry-After; the probes and the model
// list keep answering; after the restart requests succeed again.
func TestRedisOutageFailClosed(t *testing.T) {
	failOpen := false
	o := startOutageEnv(t, &failOpen)
	o.run()
	before, down, after, straddle := o.phases()
	t.Logf("samples: %d before, %d during the outage (%v), %d straddling, %d after; slowest during the outage %v",
		len(before), len(down), o.upAt.Sub(o.downFrom).Round(time.Millisecond), len(straddle), len(after), maxLatency(down).Round(time.Millisecond))
	require.GreaterOrEqual(t, len(down), 10, "too little traffic during the outage to prove anything")
	require.GreaterOrEqual(t, len(after), 10, "too little traffic after the restart")

	is503 := isStoreUnavailable
	for i, r := range before {
		assert.Equal(t, http.StatusOK, r.status, "before the outage, request %d: %s", i, r)
	}
	for i, r := range down {
		assert.True(t, is503(r), "during the outage, request %d: want 503 limits_store_unavailable with Retry-After: 1, got %s (Retry-After %q)", i, r, r.header.Get("Retry-After"))
	}
	n503 := 0
	for i, r := range straddle {
		if is503(r) {
			n503++
			continue
		}
		assert.Equal(t, http.StatusOK, r.status, "straddling request %d: want 200 or the 503 envelope, got %s", i, r)
	}
	for i, r := range after {
		assert.Equal(t, http.StatusOK, r.status, "after the restart, request %d: %s", i, r)
	}
	t.Logf("straddling requests: %d answered 503, %d answered 200", n503, len(straddle)-n503)

	// Nothing else breaks: the probes and the (unmetered) model list.
	assert.Equal(t, http.StatusOK, o.probes["healthz"].status, "healthz: %s", o.probes["healthz"])
	assert.Equal(t, http.StatusOK, o.probes["readyz"].status, "readyz: %s", o.probes["readyz"])
	models := o.probes["models"]
	if assert.Equal(t, http.StatusOK, models.status, "GET /v1/models during the outage: %s", models) {
		assert.Contains(t, string(models.body), `"`+rlModel+`"`)
	}
	if r := o.probes["models"]; r.status == http.StatusOK {
		assert.Empty(t, r.header.Get("Retry-After"))
	}

	lines := o.storeErrorLines()
	if assert.Len(t, lines, 1, "limits store error lines:\n%s", strings.Join(lines, "\n")) {
		assert.Contains(t, lines[0], "requests get 503")
	}
	o.assertCountingResumed(after)

	// A restart while the gateway is idle (a Redis upgrade, a failover):
	// its pooled connections are all dead, and the first request to
	// find one must not fail — the client redials once when a pooled
	// connection fails before any reply byte arrives.
	burst := make([]rlResult, 4)
	var wg sync.WaitGroup
	for i := range burst {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			burst[i] = o.chat()
		}(i)
	}
	wg.Wait() // several pooled connections now
	for i, r := range burst {
		require.Equal(t, http.StatusOK, r.status, "burst %d: %s", i, r)
	}
	require.NoError(t, o.rs.Stop())
	require.NoError(t, o.rs.Restart())
	for i := 0; i < 8; i++ {
		r := o.chat()
		assert.Equal(t, http.StatusOK, r.status, "request %d after an idle restart: %s", i, r)
	}
}

// A Redis that stops answering without closing its connections (here:
// SIGSTOP) makes exchanges time out with commands written and replies
// still to come. failOpen keeps serving (slowly: each store call waits
// for the client's 2 s I/O timeout), and once Redis answers again the
// limiter must be exact again: a timed-out connection must never be
// reused, or its late replies would be read as the answers to a later
// request's commands. Exactness is checked on a requestsPerDay limit:
// with v requests already counted in Redis, exactly limit-v more succeed.
func TestRedisHungFailOpen(t *testing.T) {
	const (
		key      = "sk-hung-user"
		perDay   = 60
		inFlight = 4
	)
	rs := redisproc.Start(t)
	bin := buildGatewayBinary(t)
	_, upURL := rlMock(t, rlModel)
	cfg := map[string]interface{}{
		"providers": map[string]interface{}{"mock": rlProvider(upURL, rlModel)},
		"groups":    map[string]interface{}{"team": map[string]interface{}{"providers": []string{}}},
		"users": map[string]interface{}{"inline": []map[string]interface{}{
			rlUser("hung", "team", key, map[string]interface{}{"limits": map[string]interface{}{"requestsPerDay": perDay}}),
		}},
		"redis": map[string]interface{}{"address": rs.Addr},
	}
	gw := startGateway(t, bin, cfg)
	client := rlHTTPClient()
	body := rlChatBody(rlModel, "are you there", false, false)
	chat := func() rlResult { return rlDo(client, http.MethodPost, gw.URL+"/v1/chat/completions", key, body) }
	burst := func(n int) []rlResult {
		out := make([]rlResult, n)
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				out[i] = chat()
			}(i)
		}
		wg.Wait()
		return out
	}
	rlAwaitHeadroom(t, 24*time.Hour, time.Minute)
	at := time.Now()
	// Open several pooled connections.
	for i, r := range burst(inFlight) {
		require.Equal(t, http.StatusOK, r.status, "warm-up %d: %s", i, r)
	}

	require.NoError(t, rs.Signal(syscall.SIGSTOP))
	stopped := true
	t.Cleanup(func() {
		if stopped {
			_ = rs.Signal(syscall.SIGCONT)
		}
	})
	hung := make(chan []rlResult)
	go func() { hung <- burst(inFlight) }()
	// Past the client's 2 s I/O timeout: the first exchanges have failed
	// with their commands sent and unanswered.
	time.Sleep(2500 * time.Millisecond)
	require.NoError(t, rs.Signal(syscall.SIGCONT))
	stopped = false
	results := <-hung
	for i, r := range results {
		require.NoError(t, r.err, "request %d while Redis hung", i)
		assert.Equal(t, http.StatusOK, r.status, "request %d while Redis hung: %s", i, r)
	}
	t.Logf("%d concurrent requests while Redis hung: slowest %v", inFlight, maxLatency(results).Round(time.Millisecond))
	time.Sleep(300 * time.Millisecond) // Redis drains what it was sent meanwhile

	rd := rlDialRedis(t, rs.Addr)
	dayKey := rlKey("user", "hung", "req", "day", at)
	counted, _ := rd.get(dayKey)
	require.Less(t, counted, int64(perDay-10), "%s", dayKey)
	successes := 0
	var refused rlResult
	for i := 0; i < perDay+1; i++ {
		r := chat()
		require.NoError(t, r.err)
		if r.status != http.StatusOK {
			refused = r
			break
		}
		successes++
	}
	assert.Equal(t, int(perDay-counted), successes, "successes after the hang with %d of %d requests counted in Redis", counted, perDay)
	if assert.Equal(t, http.StatusTooManyRequests, refused.status, "%s", refused) {
		e := rlParseEnvelope(t, refused.body)
		assert.Equal(t, `user "hung" is over its requestsPerDay limit (60 requests)`, e.Error.Message)
	}
	final, _ := rd.get(dayKey)
	assert.Equal(t, int64(perDay+1), final, "%s after the refusal", dayKey)
}

// --- 4. accounting lands in Redis ---
