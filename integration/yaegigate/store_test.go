package yaegigate_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sort"
	"testing"
	"time"

	"github.com/llmgateway/llmgateway/integration/redisproc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The gateway's store sub-package (gateway/internal/store: the Redis
// counter and blob stores over its RESP2 client, behind the guard) as the
// plugin form runs it: vendored, interpreted, reached from package gateway
// through the store's interfaces. A real redis-server holds the limiter's
// counters and the response cache's entries; the test reads both back
// from Redis itself.

// redisGatewayConfig is gatewayConfig with Redis, the response cache, a
// request limit of 3 a day on the user and a token budget, so every
// request is admitted by the reservation script and settled.
func redisGatewayConfig(upstreamURL, redisAddr string) map[string]interface{} {
	cfg := gatewayConfig(upstreamURL)
	cfg["redis"] = map[string]interface{}{"address": redisAddr, "failOpen": false}
	cfg["cache"] = map[string]interface{}{"enabled": true, "ttl": "90s"}
	users := cfg["users"].(map[string]interface{})["inline"].([]interface{})
	users[0].(map[string]interface{})["limits"] = map[string]interface{}{"requestsPerDay": 3, "tokensPerDay": 1000000}
	return cfg
}

// runRedisStoreScenario sends two identical chat requests (a cache miss,
// then a hit), a third different one, and a fourth the daily limit
// refuses; then it reads the counters and cache entries from Redis.
// failOpen is off, so a Redis the plugin cannot reach would answer 503,
// not count in process.
func runRedisStoreScenario(t *testing.T, front string, redis *redisproc.Server) {
	// A daily window must not roll over mid-scenario.
	now := time.Now().UTC()
	if untilMidnight := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC).Sub(now); untilMidnight < 30*time.Second {
		time.Sleep(untilMidnight + time.Second)
	}
	c := newScenarioClient(front)
	chat := func(content string) (*http.Response, []byte) {
		req := map[string]interface{}{
			"model":    upstreamModel,
			"messages": []interface{}{map[string]interface{}{"role": "user", "content": content}},
		}
		return c.do(t, http.MethodPost, "/v1/chat/completions", req, bearer(userKey))
	}

	resp, first := chat("cache me")
	require.Equal(t, http.StatusOK, resp.StatusCode, "body: %s", first)
	assert.Equal(t, "miss", resp.Header.Get("X-Llmgw-Cache"))
	resp, second := chat("cache me")
	require.Equal(t, http.StatusOK, resp.StatusCode, "body: %s", second)
	assert.Equal(t, "hit", resp.Header.Get("X-Llmgw-Cache"), "the second identical request must come from the Redis cache")
	assert.Equal(t, string(first), string(second))
	resp, body := chat("something else")
	require.Equal(t, http.StatusOK, resp.StatusCode, "body: %s", body)
	resp, body = chat("one too many")
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "body: %s", body)
	assert.Contains(t, string(body), "requestsPerDay")

	conn, err := redisproc.Dial(redis.Addr)
	require.NoError(t, err)
	defer conn.Close()
	keys, err := conn.Strings("KEYS", "llmgw:user:alice:req:day:*")
	require.NoError(t, err)
	require.Len(t, keys, 1, "the user's daily request counter in Redis")
	n, ok, err := conn.Int("GET", keys[0])
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, int64(4), n, "requests counted in Redis (the refused one included)")
	// Usage was accounted, and every reservation settled: none is left.
	tokin, err := conn.Strings("KEYS", "llmgw:user:alice:tokin:day:*")
	require.NoError(t, err)
	require.Len(t, tokin, 1, "the user's daily prompt tokens in Redis")
	n, _, err = conn.Int("GET", tokin[0])
	require.NoError(t, err)
	assert.Greater(t, n, int64(0), "prompt tokens accounted")
	held, err := conn.Strings("HMGET", "llmgw:user:alice:held", "t", "c")
	require.NoError(t, err)
	assert.Equal(t, []string{"0", "0"}, held, "tokens and cost still reserved after every request ended")
	live, _, err := conn.Int("ZCARD", "llmgw:user:alice:holds")
	require.NoError(t, err)
	assert.Equal(t, int64(0), live, "reservations left")
	var cached []string
	require.Eventually(t, func() bool {
		cached, err = conn.Strings("KEYS", "llmgw:cache:*")
		return err == nil && len(cached) == 2
	}, 10*time.Second, 10*time.Millisecond, "two cache entries in Redis, got %v (%v)", cached, err)
	sort.Strings(cached)
	ttl, _, err := conn.Int("TTL", cached[0])
	require.NoError(t, err)
	assert.True(t, ttl > 0 && ttl <= 90, "cache entry TTL %d, want (0, 90]", ttl)
}

// TestYaegiInterpreterRedisStore runs the Redis scenario through the
// interpreted plugin.
func TestYaegiInterpreterRedisStore(t *testing.T) {
	redis := redisproc.Start(t)
	p := loadInterpreted(t)
	up := newFixtureUpstream(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h, err := p.build(ctx, &nextHandler{}, traefikConfig(t, redisGatewayConfig(up.URL(), redis.Addr)), "llmgateway-redis")
	require.NoError(t, err, "New (interpreter output: %s)", p.output.String())
	front := httptest.NewServer(h)
	defer front.Close()
	runRedisStoreScenario(t, front.URL, redis)
	if t.Failed() {
		t.Logf("interpreter output:\n%s", p.output.String())
	}
}

// TestTraefikLoaderRedisStore runs the Redis scenario through the
// middleware built by Traefik's loader.
func TestTraefikLoaderRedisStore(t *testing.T) {
	redis := redisproc.Start(t)
	up := newFixtureUpstream(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h, err := loaderBuild(t, ctx, redisGatewayConfig(up.URL(), redis.Addr), &nextHandler{})
	require.NoError(t, err)
	front := httptest.NewServer(h)
	defer front.Close()
	runRedisStoreScenario(t, front.URL, redis)
}
