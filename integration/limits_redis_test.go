package integration_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
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

// Limits, accounting and the response cache against a real redis-server
// and the real gateway binary (README "Limits and accounting"). Every
// test starts its own redis-server on a free loopback port (no
// persistence) and skips when redis-server is not installed, unless
// LLMGW_REQUIRE_REDIS=1 (CI), which turns the skip into a failure.

const (
	rlModel  = "gpt-5-mini"
	rlChunks = 3 // completion tokens of every mock reply
	// rlInputPerM / rlOutputPerM price the mock models in USD per 1M
	// tokens so that cost in micro-USD is exactly 1000×prompt +
	// 2000×completion.
	rlInputPerM  = 1000
	rlOutputPerM = 2000
)

// --- helpers ---

// rlHTTPClient allows many concurrent keep-alive connections.
func rlHTTPClient() *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConns: 512, MaxIdleConnsPerHost: 256, IdleConnTimeout: 30 * time.Second,
	}}
}

// rlResult is one HTTP exchange, body read to the end.
type rlResult struct {
	status     int
	header     http.Header
	body       []byte
	err        error
	start, end time.Time
}

func rlDo(c *http.Client, method, url, key string, body []byte) rlResult {
	res := rlResult{start: time.Now()}
	defer func() { res.end = time.Now() }()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		res.err = err
		res.end = time.Now()
		return res
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		res.err = err
		res.end = time.Now()
		return res
	}
	defer resp.Body.Close()
	res.status, res.header = resp.StatusCode, resp.Header
	res.body, res.err = io.ReadAll(resp.Body)
	res.end = time.Now()
	return res
}

func (r rlResult) String() string {
	if r.err != nil {
		return "error: " + r.err.Error()
	}
	return fmt.Sprintf("%d %s", r.status, bytes.TrimSpace(r.body))
}

// rlChatBody is a chat request with one user message.
func rlChatBody(model, content string, stream, includeUsage bool) []byte {
	m := map[string]interface{}{
		"model":    model,
		"messages": []map[string]string{{"role": "user", "content": content}},
	}
	if stream {
		m["stream"] = true
		if includeUsage {
			m["stream_options"] = map[string]bool{"include_usage": true}
		}
	}
	b, _ := json.Marshal(m)
	return b
}

type rlEnvelope struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    string  `json:"code"`
	} `json:"error"`
}

func rlParseEnvelope(t *testing.T, body []byte) rlEnvelope {
	t.Helper()
	var e rlEnvelope
	require.NoError(t, json.Unmarshal(body, &e), "not an error envelope: %s", body)
	return e
}

// rlUsage is the usage a response reported: the JSON body's, or the
// last non-null usage of an event stream.
type rlUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
}

func rlReportedUsage(t *testing.T, body []byte, stream bool) *rlUsage {
	t.Helper()
	var doc struct {
		Usage *rlUsage `json:"usage"`
	}
	if !stream {
		require.NoError(t, json.Unmarshal(body, &doc), "%s", body)
		return doc.Usage
	}
	var last *rlUsage
	sc := bufio.NewScanner(bytes.NewReader(body))
	sawDone := false
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "data: ") {
			continue
		}
		data := strings.TrimPrefix(line, "data: ")
		if data == "[DONE]" {
			sawDone = true
			continue
		}
		doc.Usage = nil
		require.NoError(t, json.Unmarshal([]byte(data), &doc), "%s", data)
		if doc.Usage != nil {
			last = doc.Usage
		}
	}
	require.True(t, sawDone, "stream without [DONE]:\n%s", body)
	return last
}

// rlBucketLayouts mirror the gateway's fixed UTC windows.
var rlBucketLayouts = map[string]string{"min": "200601021504", "hour": "2006010215", "day": "20060102", "month": "200601"}

// rlKey is the gateway's counter key llmgw:{kind}:{id}:{metric}:{window}:{bucket}.
func rlKey(kind, id, metric, window string, at time.Time) string {
	layout, ok := rlBucketLayouts[window]
	if !ok {
		panic("unknown window " + window)
	}
	return "llmgw:" + kind + ":" + id + ":" + metric + ":" + window + ":" + at.UTC().Format(layout)
}

// rlAwaitHeadroom makes sure at least need is left in the current fixed
// UTC window of length window (a minute or a day), sleeping into the next
// window otherwise. The gateway's windows are calendar-aligned UTC
// buckets, not sliding: requests on both sides of a boundary land in
// different counters, so a test that counts a burst must keep the whole
// burst inside one bucket.
func rlAwaitHeadroom(t *testing.T, window, need time.Duration) {
	t.Helper()
	now := time.Now().UTC()
	end := now.Truncate(window).Add(window)
	if left := end.Sub(now); left < need {
		wait := left + 250*time.Millisecond
		t.Logf("only %v left in the current UTC %v window: waiting %v for the next one", left.Round(time.Millisecond), window, wait.Round(time.Millisecond))
		time.Sleep(wait)
	}
}

// rlRedis is a direct connection to the test's redis-server.
type rlRedis struct {
	t *testing.T
	c *redisproc.Conn
}

func rlDialRedis(t *testing.T, addr string) *rlRedis {
	t.Helper()
	c, err := redisproc.Dial(addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return &rlRedis{t: t, c: c}
}

// get reads a counter; a missing key is 0, false.
func (r *rlRedis) get(key string) (int64, bool) {
	r.t.Helper()
	v, ok, err := r.c.Int("GET", key)
	require.NoError(r.t, err, "GET %s", key)
	return v, ok
}

func (r *rlRedis) ttl(key string) int64 {
	r.t.Helper()
	v, _, err := r.c.Int("TTL", key)
	require.NoError(r.t, err, "TTL %s", key)
	return v
}

func (r *rlRedis) keys(pattern string) []string {
	r.t.Helper()
	keys, err := r.c.Strings("KEYS", pattern)
	require.NoError(r.t, err)
	sort.Strings(keys)
	return keys
}

// commandsProcessed is INFO stats total_commands_processed.
func (r *rlRedis) commandsProcessed() int64 {
	r.t.Helper()
	v, err := r.c.Do("INFO", "stats")
	require.NoError(r.t, err)
	for _, line := range strings.Split(v.Str, "\r\n") {
		if rest, ok := strings.CutPrefix(line, "total_commands_processed:"); ok {
			n, err := strconv.ParseInt(rest, 10, 64)
			require.NoError(r.t, err)
			return n
		}
	}
	r.t.Fatalf("INFO stats has no total_commands_processed:\n%s", v.Str)
	return 0
}

// rlMock is the OpenAI mock behind an httptest server.
func rlMock(t *testing.T, models ...string) (*mockupstream.Server, string) {
	t.Helper()
	m := mockupstream.New(mockupstream.Options{Models: models, Chunks: rlChunks, RecordLimit: -1})
	up := httptest.NewServer(m)
	t.Cleanup(up.Close)
	return m, up.URL
}

func rlProvider(url string, models ...string) map[string]interface{} {
	return map[string]interface{}{"type": "openai", "baseUrl": url, "apiKey": "sk-upstream", "models": models}
}

func rlPricing(models ...string) map[string]interface{} {
	p := map[string]interface{}{}
	for _, m := range models {
		p[m] = map[string]interface{}{"inputPerM": rlInputPerM, "outputPerM": rlOutputPerM}
	}
	return p
}

func rlCost(prompt, completion int64) int64 {
	return prompt*rlInputPerM + completion*rlOutputPerM
}

func rlUser(name, group, key string, extra map[string]interface{}) map[string]interface{} {
	u := map[string]interface{}{"name": name, "group": group, "apiKey": key}
	for k, v := range extra {
		u[k] = v
	}
	return u
}

// --- 1. cross-replica exactness ---

// Two gateway processes share one Redis and a group limit of 50 requests
// per minute; 200 concurrent requests split between them get exactly 50
// successes: the check-and-count is one atomic INCRBY per scope in Redis,
// so the replicas cannot both admit the 50th request.
func TestRedisLimitExactAcrossReplicas(t *testing.T) {
	const (
		limit = 50
		fired = 200
		key   = "sk-replicas-alice"
	)
	rs := redisproc.Start(t)
	bin := buildGatewayBinary(t)
	mock, upURL := rlMock(t, rlModel)
	cfg := map[string]interface{}{
		"providers": map[string]interface{}{"mock": rlProvider(upURL, rlModel)},
		"groups": map[string]interface{}{
			"team": map[string]interface{}{"providers": []string{}, "limits": map[string]interface{}{"requestsPerMinute": limit}},
		},
		"users": map[string]interface{}{"inline": []map[string]interface{}{rlUser("alice", "team", key, nil)}},
		"redis": map[string]interface{}{"address": rs.Addr},
	}
	replicas := []string{startGateway(t, bin, cfg).URL, startGateway(t, bin, cfg).URL}
	client := rlHTTPClient()
	body := rlChatBody(rlModel, "count me", false, false)

	// A burst straddling a minute boundary would be counted in two
	// buckets (up to 2×limit successes, correctly): keep it in one.
	rlAwaitHeadroom(t, time.Minute, 15*time.Second)
	before := time.Now().UTC()
	results := make([]rlResult, fired)
	gate := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < fired; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-gate
			results[i] = rlDo(client, http.MethodPost, replicas[i%2]+"/v1/chat/completions", key, body)
		}(i)
	}
	close(gate)
	wg.Wait()
	after := time.Now().UTC()
	require.Equal(t, before.Truncate(time.Minute), after.Truncate(time.Minute),
		"the burst crossed a minute boundary (%v .. %v)", before, after)

	okPer := [2]int{}
	rejectedPer := [2]int{}
	wantMsg := `group "team" is over its requestsPerMinute limit (50 requests)`
	for i, r := range results {
		require.NoError(t, r.err, "request %d", i)
		switch r.status {
		case http.StatusOK:
			okPer[i%2]++
		case http.StatusTooManyRequests:
			rejectedPer[i%2]++
			e := rlParseEnvelope(t, r.body)
			assert.Equal(t, "rate_limit_error", e.Error.Type, "request %d", i)
			assert.Equal(t, "rate_limit_exceeded", e.Error.Code, "request %d", i)
			assert.Equal(t, wantMsg, e.Error.Message, "request %d", i)
			ra, err := strconv.Atoi(r.header.Get("Retry-After"))
			if assert.NoError(t, err, "request %d: Retry-After %q", i, r.header.Get("Retry-After")) {
				// Seconds to the end of the current UTC minute.
				assert.True(t, ra >= 1 && ra <= 60, "request %d: Retry-After %d", i, ra)
				left := int(after.Truncate(time.Minute).Add(time.Minute).Sub(before).Seconds()) + 1
				assert.LessOrEqual(t, ra, left, "request %d: Retry-After beyond the minute's end", i)
			}
		default:
			t.Errorf("request %d: unexpected %s", i, r)
		}
	}
	ok := okPer[0] + okPer[1]
	t.Logf("%d requests over 2 replicas: %d ok (%d + %d), %d rejected (%d + %d), burst took %v",
		fired, ok, okPer[0], okPer[1], rejectedPer[0]+rejectedPer[1], rejectedPer[0], rejectedPer[1], after.Sub(before).Round(time.Millisecond))
	assert.Equal(t, limit, ok, "successes")
	assert.Equal(t, fired-limit, rejectedPer[0]+rejectedPer[1], "rejections")
	assert.Equal(t, int64(limit), mock.Total(), "only admitted requests reach the upstream")

	// Every request was counted once, refused or not, in every scope.
	rd := rlDialRedis(t, rs.Addr)
	for _, scope := range [][2]string{{"user", "alice"}, {"group", "team"}, {"total", "all"}} {
		for _, w := range []string{"min", "day"} {
			k := rlKey(scope[0], scope[1], "req", w, before)
			v, _ := rd.get(k)
			assert.Equal(t, int64(fired), v, "%s:%s req %s", scope[0], scope[1], w)
			if w == "min" {
				// Retention 2 min: the minute outlives its window, briefly.
				ttl := rd.ttl(k)
				assert.True(t, ttl > 60 && ttl <= 120, "%s TTL %d, want (60, 120]", k, ttl)
			}
		}
	}
	// Refusals are counted off the request path, at most 64 writes in
	// flight per replica, the rest dropped (README): some, never more
	// than the refusals.
	time.Sleep(300 * time.Millisecond)
	rej, _ := rd.get(rlKey("group", "team", "rej", "min", before))
	totalRej, _ := rd.get(rlKey("total", "all", "rej", "min", before))
	userRej, userRejExists := rd.get(rlKey("user", "alice", "rej", "min", before))
	assert.True(t, rej > 0 && rej <= fired-limit, "group team rej %d", rej)
	assert.Equal(t, rej, totalRej, "total rej follows the refusing scope's")
	assert.False(t, userRejExists, "the user scope did not refuse anything (rej %d)", userRej)
	t.Logf("refusals counted in Redis: %d of %d (the async writer drops what exceeds 64 writes in flight)", rej, fired-limit)
}

// --- 2 and 3. Redis going away and coming back ---

// rlOutage runs traffic from 4 workers through one gateway while its
// Redis is stopped (SIGTERM) and restarted on the same port.
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
}

func startOutageEnv(t *testing.T, failOpen *bool) *rlOutage {
	t.Helper()
	rs := redisproc.Start(t)
	bin := buildGatewayBinary(t)
	_, upURL := rlMock(t, rlModel)
	redis := map[string]interface{}{"address": rs.Addr}
	if failOpen != nil {
		redis["failOpen"] = *failOpen
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
	gw := startGateway(t, bin, cfg)
	return &rlOutage{t: t, rs: rs, gw: gw, key: key,
		body: rlChatBody(rlModel, "keep going", false, false), client: rlHTTPClient(), probes: map[string]rlResult{}}
}

func (o *rlOutage) chat() rlResult {
	return rlDo(o.client, http.MethodPost, o.gw.URL+"/v1/chat/completions", o.key, o.body)
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
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				r := o.chat()
				mu.Lock()
				o.samples = append(o.samples, r)
				mu.Unlock()
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	time.Sleep(700 * time.Millisecond)
	o.downAt = time.Now()
	require.NoError(t, o.rs.Stop())
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

	is503 := func(r rlResult) bool {
		if r.err != nil || r.status != http.StatusServiceUnavailable {
			return false
		}
		var e rlEnvelope
		if json.Unmarshal(r.body, &e) != nil {
			return false
		}
		return e.Error.Code == "limits_store_unavailable" && e.Error.Type == "server_error" && r.header.Get("Retry-After") == "1"
	}
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

// usageStripper serves the mock with the "usage" member removed from
// non-streaming JSON answers: the gateway must then estimate the prompt
// tokens as ceil(request bytes / 4).
func usageStripper(m *mockupstream.Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		m.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		var doc map[string]json.RawMessage
		if strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") && json.Unmarshal(body, &doc) == nil {
			if _, ok := doc["usage"]; ok {
				delete(doc, "usage")
				body, _ = json.Marshal(doc)
			}
		}
		for k, vs := range rec.Header() {
			w.Header()[k] = vs
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(rec.Code)
		_, _ = w.Write(body)
	})
}

// Usage lands in Redis exactly, per scope and window, and the budgets
// read it back: acct's group has a token budget of exactly what acct's
// requests use, est has a cost budget of exactly its one request's cost,
// so the next request of each is refused — token and cost checks read
// the counters the accounting wrote.
func TestRedisAccounting(t *testing.T) {
	rs := redisproc.Start(t)
	bin := buildGatewayBinary(t)
	mock, upURL := rlMock(t, rlModel, "bare-model")
	bare := httptest.NewServer(usageStripper(mock))
	t.Cleanup(bare.Close)
	const (
		acctKey = "sk-acct"
		estKey  = "sk-est"
		// acct's requests below use 16 prompt + 12 completion tokens.
		acctTokens = 28
	)
	estBody := rlChatBody("bare-model", "estimate my prompt tokens from the request size", false, false)
	estIn := int64((len(estBody) + 3) / 4) // ceil(request bytes / 4)
	estCost := rlCost(estIn, 0)
	cfg := map[string]interface{}{
		"providers": map[string]interface{}{
			"mock": rlProvider(upURL, rlModel),
			"bare": rlProvider(bare.URL, "bare-model"),
		},
		"groups": map[string]interface{}{
			"g1": map[string]interface{}{"providers": []string{}, "limits": map[string]interface{}{"tokensPerDay": acctTokens}},
			"g2": map[string]interface{}{"providers": []string{}},
		},
		"users": map[string]interface{}{"inline": []map[string]interface{}{
			rlUser("acct", "g1", acctKey, nil),
			rlUser("est", "g2", estKey, map[string]interface{}{"limits": map[string]interface{}{"costPerDayUSD": float64(estCost) / 1e6}}),
		}},
		"redis":   map[string]interface{}{"address": rs.Addr},
		"pricing": rlPricing(rlModel, "bare-model"),
	}
	gw := startGateway(t, bin, cfg)
	client := rlHTTPClient()
	// Day and month sums: keep the whole test inside one UTC day.
	rlAwaitHeadroom(t, 24*time.Hour, 30*time.Second)
	at := time.Now()

	cases := []struct {
		name          string
		content       string
		stream, usage bool  // usage: stream_options.include_usage
		wantPrompt    int64 // the mock counts words
	}{
		// A stream without usage counts the request and no tokens.
		{"stream without usage", "no usage here please", true, false, 0},
		{"plain 1", "one two three", false, false, 3},
		{"plain 2", "four five six seven eight nine ten", false, false, 7},
		{"stream with usage 1", "alpha beta", true, true, 2},
		{"stream with usage 2", "w x y z", true, true, 4},
	}
	var wantIn, wantOut int64
	for _, c := range cases {
		r := rlDo(client, http.MethodPost, gw.URL+"/v1/chat/completions", acctKey, rlChatBody(rlModel, c.content, c.stream, c.usage))
		require.NoError(t, r.err, c.name)
		require.Equal(t, http.StatusOK, r.status, "%s: %s", c.name, r)
		u := rlReportedUsage(t, r.body, c.stream)
		if c.stream && !c.usage {
			require.Nil(t, u, "%s: usage reported", c.name)
			continue
		}
		require.NotNil(t, u, "%s: no usage in the response", c.name)
		require.Equal(t, rlUsage{PromptTokens: c.wantPrompt, CompletionTokens: rlChunks}, *u, c.name)
		wantIn += u.PromptTokens
		wantOut += u.CompletionTokens
	}
	require.Equal(t, int64(16), wantIn)
	require.Equal(t, int64(4*rlChunks), wantOut)
	require.Equal(t, int64(acctTokens), wantIn+wantOut)

	// The estimated request: the upstream answers without usage.
	r := rlDo(client, http.MethodPost, gw.URL+"/v1/chat/completions", estKey, estBody)
	require.Equal(t, http.StatusOK, r.status, "%s", r)
	require.Nil(t, rlReportedUsage(t, r.body, false), "the stripper left usage in the answer")

	// Both budgets are used up now: the next request of each is refused,
	// Retry-After pointing at the next UTC midnight.
	refusals := []struct {
		key, model, msg string
	}{
		{acctKey, rlModel, `group "g1" is over its tokensPerDay limit (28 tokens)`},
		{estKey, "bare-model", fmt.Sprintf(`user "est" is over its costPerDayUSD limit ($%s cost)`, strconv.FormatFloat(float64(estCost)/1e6, 'f', -1, 64))},
	}
	for _, ref := range refusals {
		r := rlDo(client, http.MethodPost, gw.URL+"/v1/chat/completions", ref.key, rlChatBody(ref.model, "one more", false, false))
		require.Equal(t, http.StatusTooManyRequests, r.status, "%s", r)
		e := rlParseEnvelope(t, r.body)
		assert.Equal(t, "rate_limit_exceeded", e.Error.Code)
		assert.Equal(t, ref.msg, e.Error.Message)
		ra, err := strconv.ParseInt(r.header.Get("Retry-After"), 10, 64)
		require.NoError(t, err, "Retry-After %q", r.header.Get("Retry-After"))
		midnight := at.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
		toMidnight := int64(midnight.Sub(r.start).Seconds())
		assert.True(t, ra >= toMidnight-2 && ra <= toMidnight+2, "Retry-After %d, want about %d (to the next UTC midnight)", ra, toMidnight)
	}
	assert.Equal(t, int64(6), mock.Total(), "the refused requests never reached an upstream")

	rd := rlDialRedis(t, rs.Addr)
	type want struct {
		kind, id           string
		req, in, out, cost int64
	}
	acctCost := rlCost(wantIn, wantOut)
	// Requests count the refused ones too (counted before evaluation).
	wants := []want{
		{"user", "acct", 6, wantIn, wantOut, acctCost},
		{"group", "g1", 6, wantIn, wantOut, acctCost},
		{"user", "est", 2, estIn, 0, estCost},
		{"group", "g2", 2, estIn, 0, estCost},
		{"total", "all", 8, wantIn + estIn, wantOut, acctCost + estCost},
	}
	windowTTL := map[string]int64{"hour": 48 * 3600, "day": 35 * 24 * 3600, "month": 400 * 24 * 3600}
	for _, w := range wants {
		for _, win := range []string{"hour", "day", "month"} {
			metrics := []struct {
				name string
				want int64
			}{{"req", w.req}, {"tokin", w.in}, {"tokout", w.out}, {"cost", w.cost}}
			for _, m := range metrics {
				key := rlKey(w.kind, w.id, m.name, win, at)
				got, exists := rd.get(key)
				assert.Equal(t, m.want, got, key)
				if m.want == 0 {
					// Nothing to add is never written (no zero INCRBY).
					assert.False(t, exists, "%s exists", key)
					continue
				}
				ttl := rd.ttl(key)
				assert.True(t, ttl > windowTTL[win]-120 && ttl <= windowTTL[win], "%s TTL %d, want about %d", key, ttl, windowTTL[win])
			}
		}
	}
	// The refusals are counted for the refusing scope and total (off the
	// request path: give the writes a moment).
	time.Sleep(200 * time.Millisecond)
	for _, k := range []struct {
		kind, id string
		want     int64
	}{{"group", "g1", 1}, {"user", "est", 1}, {"total", "all", 2}, {"user", "acct", 0}, {"group", "g2", 0}} {
		got, _ := rd.get(rlKey(k.kind, k.id, "rej", "day", at))
		assert.Equal(t, k.want, got, "%s:%s rej day", k.kind, k.id)
	}
	t.Logf("acct: tokin %d, tokout %d, cost %d micro-USD; est: tokin %d (estimated from %d request bytes), no tokout, cost %d micro-USD",
		wantIn, wantOut, acctCost, estIn, len(estBody), estCost)
}

// --- 5. the response cache through Redis ---

func TestRedisResponseCache(t *testing.T) {
	rs := redisproc.Start(t)
	bin := buildGatewayBinary(t)
	mock, upURL := rlMock(t, rlModel)
	const key = "sk-cache-user"
	cfg := map[string]interface{}{
		"providers": map[string]interface{}{"mock": rlProvider(upURL, rlModel)},
		"groups":    map[string]interface{}{"c": map[string]interface{}{"providers": []string{}}},
		"users":     map[string]interface{}{"inline": []map[string]interface{}{rlUser("cacher", "c", key, nil)}},
		"redis":     map[string]interface{}{"address": rs.Addr},
		"cache":     map[string]interface{}{"enabled": true, "ttl": "90s"},
	}
	gw := startGateway(t, bin, cfg)
	client := rlHTTPClient()
	rd := rlDialRedis(t, rs.Addr)
	rlAwaitHeadroom(t, 24*time.Hour, 30*time.Second)
	at := time.Now()
	body := rlChatBody(rlModel, "cache this answer please", false, false)

	first := rlDo(client, http.MethodPost, gw.URL+"/v1/chat/completions", key, body)
	require.Equal(t, http.StatusOK, first.status, "%s", first)
	assert.Equal(t, "miss", first.header.Get("X-Llmgw-Cache"))

	// The entry is written after the answer went out (README: a 200 is
	// stored once written to the client), so wait for it rather than race.
	var keys []string
	deadline := time.Now().Add(3 * time.Second)
	for {
		keys = rd.keys("llmgw:cache:*")
		if len(keys) > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	require.Len(t, keys, 1, "cache keys in Redis")

	second := rlDo(client, http.MethodPost, gw.URL+"/v1/chat/completions", key, body)
	require.Equal(t, http.StatusOK, second.status, "%s", second)
	assert.Equal(t, "hit", second.header.Get("X-Llmgw-Cache"))
	assert.Equal(t, string(first.body), string(second.body), "a hit replays the stored body")
	assert.Equal(t, int64(1), mock.Total(), "the upstream saw one call")

	ttl := rd.ttl(keys[0])
	assert.True(t, ttl >= 85 && ttl <= 90, "cache entry TTL %d s, want close to the configured 90 s", ttl)
	assert.Regexp(t, "^llmgw:cache:[0-9a-f]{64}$", keys[0])
	v, err := redisGet(rd, keys[0])
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(v, "llmgw-cache/1 "), "stored value %.60q", v)
	assert.True(t, strings.HasSuffix(v, string(first.body)), "the stored value ends with the upstream body")

	// A hit counts the request, not tokens (README).
	req, _ := rd.get(rlKey("user", "cacher", "req", "day", at))
	tokin, _ := rd.get(rlKey("user", "cacher", "tokin", "day", at))
	assert.Equal(t, int64(2), req, "requests counted (miss + hit)")
	assert.Equal(t, int64(4), tokin, "prompt tokens of the one upstream call")
	t.Logf("cache key %s, TTL %d s", keys[0], ttl)
}

func redisGet(rd *rlRedis, key string) (string, error) {
	v, err := rd.c.Do("GET", key)
	if err != nil {
		return "", err
	}
	return v.Str, v.Err()
}

// --- 6. round trips per metered request ---

// How the round trips are counted: the gateway talks to Redis through
// redisproc.Proxy, a TCP proxy that records request/response turns per
// connection. A turn starts with the first byte the client sends after
// the server last answered, so one pipelined write followed by the read
// of all its replies is one turn — one network round trip — however many
// commands it carries; the proxy parses both directions and reports a
// turn that began with replies still outstanding (Pending), which would
// make the count ambiguous. Each turn is then classified by the key
// families it touches: req counters (+ the budget MGET) = check-and-count,
// tokin/tokout/cost counters = accounting, llmgw:prov/llmgw:provmodel =
// the asynchronous provider success-rate write every upstream attempt
// makes (which is off the request path and accounted separately). A
// cross-check with Redis's own total_commands_processed proves the proxy
// saw every command.
func TestRedisRoundTripsPerRequest(t *testing.T) {
	rs := redisproc.Start(t)
	proxy, err := redisproc.StartProxy(rs.Addr)
	require.NoError(t, err)
	t.Cleanup(proxy.Close)
	bin := buildGatewayBinary(t)
	_, upURL := rlMock(t, rlModel)
	const (
		multiKey = "sk-rt-multi"
		soloKey  = "sk-rt-solo"
		perUser  = 6 // 4 plain + 2 streaming
	)
	big := 1000000000
	cfg := map[string]interface{}{
		"providers": map[string]interface{}{"mock": rlProvider(upURL, rlModel)},
		"groups": map[string]interface{}{
			"g1":   map[string]interface{}{"providers": []string{}, "limits": map[string]interface{}{"requestsPerMinute": big, "tokensPerDay": big}},
			"g2":   map[string]interface{}{"providers": []string{}, "limits": map[string]interface{}{"requestsPerDay": big, "costPerDayUSD": 1000000}},
			"g3":   map[string]interface{}{"providers": []string{}, "limits": map[string]interface{}{"tokensPerMonth": big, "costPerMonthUSD": 1000000}},
			"solo": map[string]interface{}{"providers": []string{}},
		},
		"users": map[string]interface{}{"inline": []map[string]interface{}{
			// 5 scopes, all enforced: user, g1, g2, g3 (+ total).
			rlUser("multi", "g1", multiKey, map[string]interface{}{"groups": []string{"g2", "g3"},
				"limits": map[string]interface{}{"requestsPerMinute": big}}),
			// 3 scopes, none enforced: user, solo (+ total).
			rlUser("solo", "solo", soloKey, nil),
		}},
		"redis":   map[string]interface{}{"address": proxy.Addr},
		"pricing": rlPricing(rlModel),
	}
	gw := startGateway(t, bin, cfg)
	client := rlHTTPClient()
	rd := rlDialRedis(t, rs.Addr)
	cmdsBefore := rd.commandsProcessed()

	// Sequential requests, so each user's turns must alternate
	// check, account, check, account...
	for i := 0; i < perUser; i++ {
		stream := i >= 4
		for _, key := range []string{multiKey, soloKey} {
			r := rlDo(client, http.MethodPost, gw.URL+"/v1/chat/completions", key, rlChatBody(rlModel, "round trip "+strconv.Itoa(i), stream, stream))
			require.Equal(t, http.StatusOK, r.status, "%s", r)
		}
	}
	// The success-rate writes are asynchronous: wait for all of them.
	attempts := 2 * perUser
	var turns []redisproc.Turn
	deadline := time.Now().Add(5 * time.Second)
	for {
		turns = proxy.Turns()
		prov := 0
		for _, tr := range turns {
			if k, _, _ := classifyTurn(tr); k == "prov" {
				prov++
			}
		}
		if prov >= attempts || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // anything late would show up now
	turns = proxy.Turns()

	counts := map[string]int{}
	sequence := map[string][]string{}
	sentCommands := 0
	for _, tr := range turns {
		sentCommands += len(tr.Commands)
		assert.Equal(t, 0, tr.Pending, "turn %d began with %d replies outstanding", tr.Seq, tr.Pending)
		assert.Equal(t, len(tr.Commands), tr.Replies, "turn %d: replies", tr.Seq)
		kind, user, err := classifyTurn(tr)
		if !assert.NoError(t, err, "turn %d", tr.Seq) {
			continue
		}
		counts[kind+"/"+user]++
		if user != "" {
			sequence[user] = append(sequence[user], kind)
		}
		scopes, incrs, mgets := turnShape(tr)
		switch kind + "/" + user {
		case "check/multi":
			assert.Equal(t, []string{"group:g1", "group:g2", "group:g3", "total:all", "user:multi"}, scopes, "turn %d", tr.Seq)
			assert.Equal(t, 5*4, incrs, "check turn %d: 5 scopes × 4 windows", tr.Seq)
			assert.Equal(t, 1, mgets, "check turn %d: one MGET of the budgets", tr.Seq)
		case "check/solo":
			assert.Equal(t, []string{"group:solo", "total:all", "user:solo"}, scopes, "turn %d", tr.Seq)
			assert.Equal(t, 3*4, incrs, "check turn %d: 3 scopes × 4 windows", tr.Seq)
			assert.Equal(t, 0, mgets, "check turn %d: no budgets, no MGET", tr.Seq)
		case "account/multi":
			assert.Equal(t, 5*3*3, incrs, "account turn %d: 5 scopes × tokin/tokout/cost × hour/day/month", tr.Seq)
		case "account/solo":
			assert.Equal(t, 3*3*3, incrs, "account turn %d: 3 scopes × tokin/tokout/cost × hour/day/month", tr.Seq)
		case "prov/":
			assert.Equal(t, 4, incrs, "success-rate turn %d: attempt × min/day × provider and provider/model", tr.Seq)
		}
	}
	t.Logf("Redis turns seen by the proxy: %v (%d commands in %d turns)", counts, sentCommands, len(turns))
	assert.Equal(t, map[string]int{
		"check/multi": perUser, "account/multi": perUser,
		"check/solo": perUser, "account/solo": perUser,
		"prov/": attempts,
	}, counts, "turns by kind/user")
	for _, user := range []string{"multi", "solo"} {
		var want []string
		for i := 0; i < perUser; i++ {
			want = append(want, "check", "account")
		}
		assert.Equal(t, want, sequence[user], "%s: one check-and-count then one accounting round trip per request", user)
	}
	// Per metered request on the request path: exactly 2 round trips.
	for _, user := range []string{"multi", "solo"} {
		perRequest := float64(counts["check/"+user]+counts["account/"+user]) / perUser
		assert.Equal(t, 2.0, perRequest, "%s: round trips per request", user)
	}
	// The proxy saw every command Redis processed (INFO counts itself on
	// the next call: +1 for the first INFO).
	cmdsAfter := rd.commandsProcessed()
	assert.Equal(t, int64(sentCommands)+1, cmdsAfter-cmdsBefore, "commands Redis processed vs commands the proxy saw")
	_ = gw
}

// classifyTurn names a turn by the key families of its commands:
// "check" (req counters, + MGET), "account" (tokin/tokout/cost counters),
// "prov" (provider success rates), "rej", "cache"; user is the user
// scope's id when the turn carries one.
func classifyTurn(tr redisproc.Turn) (kind, user string, err error) {
	kinds := map[string]bool{}
	for _, cmd := range tr.Commands {
		if len(cmd) < 2 {
			return "", "", fmt.Errorf("command %q has no key", cmd)
		}
		name := strings.ToUpper(cmd[0])
		keys := cmd[1:2]
		if name == "MGET" {
			keys = cmd[1:]
		}
		for _, k := range keys {
			parts := strings.Split(k, ":")
			switch {
			case len(parts) >= 2 && (parts[1] == "prov" || parts[1] == "provmodel"):
				kinds["prov"] = true
			case len(parts) >= 2 && parts[1] == "cache":
				kinds["cache"] = true
			case len(parts) == 6 && parts[0] == "llmgw":
				if parts[1] == "user" {
					user = parts[2]
				}
				switch {
				case name == "MGET":
					// The budgets read by the check.
				case parts[3] == "req":
					kinds["check"] = true
				case parts[3] == "rej":
					kinds["rej"] = true
				case parts[3] == "tokin" || parts[3] == "tokout" || parts[3] == "cost":
					kinds["account"] = true
				default:
					return "", "", fmt.Errorf("unknown metric in %q", k)
				}
			default:
				return "", "", fmt.Errorf("unknown key %q", k)
			}
		}
	}
	if len(kinds) != 1 {
		return "", "", fmt.Errorf("turn mixes %v: %q", kinds, tr.Commands)
	}
	for k := range kinds {
		kind = k
	}
	return kind, user, nil
}

// turnShape is the sorted scopes ("kind:id") a turn's INCRBYs touch, the
// number of INCRBYs (each must be followed by the EXPIRE of its key) and
// the number of MGETs.
func turnShape(tr redisproc.Turn) (scopes []string, incrs, mgets int) {
	seen := map[string]bool{}
	for i, cmd := range tr.Commands {
		switch strings.ToUpper(cmd[0]) {
		case "INCRBY":
			incrs++
			if i+1 >= len(tr.Commands) || tr.Commands[i+1][0] != "EXPIRE" || tr.Commands[i+1][1] != cmd[1] {
				incrs = -1000 // an INCRBY without its EXPIRE: fail loudly
			}
			parts := strings.Split(cmd[1], ":")
			if len(parts) == 6 {
				seen[parts[1]+":"+parts[2]] = true
			}
		case "MGET":
			mgets++
		}
	}
	for s := range seen {
		scopes = append(scopes, s)
	}
	sort.Strings(scopes)
	return scopes, incrs, mgets
}
