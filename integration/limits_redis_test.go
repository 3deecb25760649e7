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
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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

// rlCapped is body with max_tokens set.
func rlCapped(body []byte, maxTokens int) []byte {
	var m map[string]interface{}
	if err := json.Unmarshal(body, &m); err != nil {
		panic(err)
	}
	m["max_tokens"] = maxTokens
	b, _ := json.Marshal(m)
	return b
}

// rlReservation is what a request reserves: ceil(body bytes / 4) plus
// its max_tokens, in tokens and at the rlPricing prices.
func rlReservation(body []byte, maxTokens int) (tokens, cost int64) {
	prompt := int64((len(body) + 3) / 4)
	return prompt + int64(maxTokens), rlCost(prompt, int64(maxTokens))
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

// commandCalls is the calls of one command in INFO commandstats (0 when
// Redis has not run it).
func (r *rlRedis) commandCalls(name string) int64 {
	r.t.Helper()
	v, err := r.c.Do("INFO", "commandstats")
	require.NoError(r.t, err)
	prefix := "cmdstat_" + name + ":calls="
	for _, line := range strings.Split(v.Str, "\r\n") {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			n, err := strconv.ParseInt(strings.SplitN(rest, ",", 2)[0], 10, 64)
			require.NoError(r.t, err)
			return n
		}
	}
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
	body := rlChatBody(rlModel, "count me", false, false)

	// A burst straddling a minute boundary would be counted in two
	// buckets (up to 2×limit successes, correctly): keep it in one.
	rlAwaitHeadroom(t, time.Minute, 15*time.Second)
	before := time.Now().UTC()
	results := rsBurst(t, replicas, key, body, fired)
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
	assert.True(t, userRejExists, "a refusal counts in every scope of the request, the user's too")
	assert.Equal(t, rej, userRej, "the user's rej follows the refusing scope's")
	t.Logf("refusals counted in Redis: %d of %d (the async writer drops what exceeds 64 writes in flight)", rej, fired-limit)
}

// --- 2 and 3. Redis going away and coming back ---

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
// requests use plus one token less than the reservation of the request
// after them, est has a cost budget of its one request's cost plus,
// likewise, one micro-USD less than the next one's reservation, so the
// next request of each is refused — the admission reads the counters
// the accounting wrote, and no reservation is left behind.
func TestRedisAccounting(t *testing.T) {
	rs := redisproc.Start(t)
	bin := buildGatewayBinary(t)
	mock, upURL := rlMock(t, rlModel, "bare-model")
	bare := httptest.NewServer(usageStripper(mock))
	t.Cleanup(bare.Close)
	const (
		acctKey = "sk-acct"
		estKey  = "sk-est"
		// acct's requests below use 20 prompt + 15 completion tokens.
		acctTokens = 35
		// Each request's output cap; the refused ones ask for more.
		capTokens  = 20
		nextTokens = 1000
	)
	estBody := rlCapped(rlChatBody("bare-model", "estimate my prompt tokens from the request size", false, false), 1)
	estIn := int64((len(estBody) + 3) / 4) // ceil(request bytes / 4)
	estCost := rlCost(estIn, 0)
	acctNext := rlCapped(rlChatBody(rlModel, "one more", false, false), nextTokens)
	estNext := rlCapped(rlChatBody("bare-model", "one more", false, false), nextTokens)
	acctNextTokens, _ := rlReservation(acctNext, nextTokens)
	_, estNextCost := rlReservation(estNext, nextTokens)
	acctBudget := acctTokens + acctNextTokens - 1
	estBudget := estCost + estNextCost - 1
	cfg := map[string]interface{}{
		"providers": map[string]interface{}{
			"mock": rlProvider(upURL, rlModel),
			"bare": rlProvider(bare.URL, "bare-model"),
		},
		"groups": map[string]interface{}{
			"g1": map[string]interface{}{"providers": []string{}, "limits": map[string]interface{}{"tokensPerDay": acctBudget}},
			"g2": map[string]interface{}{"providers": []string{}},
		},
		"users": map[string]interface{}{"inline": []map[string]interface{}{
			rlUser("acct", "g1", acctKey, nil),
			rlUser("est", "g2", estKey, map[string]interface{}{"limits": map[string]interface{}{"costPerDayUSD": float64(estBudget) / 1e6}}),
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
		// A stream whose client did not ask for usage is accounted too:
		// the gateway asks the upstream for it, and the client sees none.
		{"stream without usage", "no usage here please", true, false, 4},
		{"plain 1", "one two three", false, false, 3},
		{"plain 2", "four five six seven eight nine ten", false, false, 7},
		{"stream with usage 1", "alpha beta", true, true, 2},
		{"stream with usage 2", "w x y z", true, true, 4},
	}
	var wantIn, wantOut int64
	for _, c := range cases {
		r := rlDo(client, http.MethodPost, gw.URL+"/v1/chat/completions", acctKey, rlCapped(rlChatBody(rlModel, c.content, c.stream, c.usage), capTokens))
		require.NoError(t, r.err, c.name)
		require.Equal(t, http.StatusOK, r.status, "%s: %s", c.name, r)
		u := rlReportedUsage(t, r.body, c.stream)
		if c.stream && !c.usage {
			require.Nil(t, u, "%s: usage reported", c.name)
			wantIn += c.wantPrompt
			wantOut += rlChunks
			continue
		}
		require.NotNil(t, u, "%s: no usage in the response", c.name)
		require.Equal(t, rlUsage{PromptTokens: c.wantPrompt, CompletionTokens: rlChunks}, *u, c.name)
		wantIn += u.PromptTokens
		wantOut += u.CompletionTokens
	}
	require.Equal(t, int64(20), wantIn)
	require.Equal(t, int64(5*rlChunks), wantOut)
	require.Equal(t, int64(acctTokens), wantIn+wantOut)

	// The estimated request: the upstream answers without usage.
	r := rlDo(client, http.MethodPost, gw.URL+"/v1/chat/completions", estKey, estBody)
	require.Equal(t, http.StatusOK, r.status, "%s", r)
	require.Nil(t, rlReportedUsage(t, r.body, false), "the stripper left usage in the answer")

	// Both budgets are used up now: the next request of each is refused,
	// Retry-After pointing at the next UTC midnight.
	usd := func(micros int64) string { return "$" + strconv.FormatFloat(float64(micros)/1e6, 'f', -1, 64) }
	refusals := []struct {
		key  string
		body []byte
		msg  string
	}{
		{acctKey, acctNext, fmt.Sprintf(`group "g1" is over its tokensPerDay limit (%d tokens): this request reserves up to %d (prompt estimate + output cap); 35 used, 0 reserved by requests in flight`,
			acctBudget, acctNextTokens)},
		{estKey, estNext, fmt.Sprintf(`user "est" is over its costPerDayUSD limit (%s cost): this request reserves up to %s (prompt estimate + output cap); %s used, $0 reserved by requests in flight`,
			usd(estBudget), usd(estNextCost), usd(estCost))},
	}
	for _, ref := range refusals {
		r := rlDo(client, http.MethodPost, gw.URL+"/v1/chat/completions", ref.key, ref.body)
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
	// The refusals are counted in every scope of the refused request:
	// its user, each of its groups and total (off the request path: give
	// the writes a moment).
	time.Sleep(200 * time.Millisecond)
	for _, k := range []struct {
		kind, id string
		want     int64
	}{{"group", "g1", 1}, {"user", "est", 1}, {"total", "all", 2}, {"user", "acct", 1}, {"group", "g2", 1}} {
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
