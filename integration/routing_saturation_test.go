package integration_test

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmgateway/llmgateway/integration/mockupstream"
)

// Per-provider concurrency through the binary: providers.X.maxConcurrent
// slots, maxQueue waiting requests (default maxConcurrent, 0 none) for at
// most queueTimeout (default 1s). A full provider is skipped for the next
// candidate with failover, else refused with 429 provider_saturated and
// Retry-After. pa's requests are held on a channel, so "pa is busy" is a
// fact the test controls, not a timing.

// rtSaturated starts pa (with the given concurrency settings) and pb,
// holds pa's requests, and sends one request that takes pa's only slot.
// It returns when that request is inside pa; release lets it finish,
// and first delivers its result.
func rtSaturated(t *testing.T, failover bool, pa map[string]interface{}) (a, b *rtProvider, base string, release func(), first <-chan rlResult) {
	t.Helper()
	a = rtNewProvider(t, "pa", mockupstream.Options{})
	b = rtNewProvider(t, "pb", mockupstream.Options{})
	var extra map[string]interface{}
	if failover {
		extra = map[string]interface{}{"failover": rtFailoverOn}
	}
	cfg := rtConfig(rtProviders{a, b}, extra)
	for k, v := range pa {
		cfg["providers"].(map[string]interface{})["pa"].(map[string]interface{})[k] = v
	}
	base = rtStart(t, cfg).URL
	release = a.holdRequests()
	t.Cleanup(release)
	done := make(chan rlResult, 1)
	go func() { done <- rtPost(t, base, rtChat(rtModel, "holds the slot", false)) }()
	select {
	case <-a.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the first request never reached pa")
	}
	return a, b, base, release, done
}

// rtAwait is the result of a request started in the background.
func rtAwait(t *testing.T, ch <-chan rlResult) rlResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(15 * time.Second):
		t.Fatal("request did not finish")
		return rlResult{}
	}
}

func TestRoutingSaturation(t *testing.T) {
	t.Parallel()
	t.Run("no_queue_refused_429", func(t *testing.T) {
		t.Parallel()
		pa, pb, base, release, first := rtSaturated(t, false, map[string]interface{}{"maxConcurrent": 1, "maxQueue": 0})
		res := rtPost(t, base, rtChat(rtModel, "no slot", false))
		require.NoError(t, res.err)
		assert.Equal(t, http.StatusTooManyRequests, res.status, "%s", res)
		if res.status == http.StatusTooManyRequests {
			assert.Equal(t, "provider_saturated", rtErrorCode(t, res.body))
			assert.Equal(t, "1", res.header.Get("Retry-After"))
		}
		assert.Less(t, res.end.Sub(res.start), 900*time.Millisecond, "no queue: refused at once")
		assert.Equal(t, int64(1), pa.total(), "the refused request never reached pa")
		assert.Equal(t, int64(0), pb.total(), "failover off")
		release()
		assert.Equal(t, http.StatusOK, rtAwait(t, first).status)
		// The slot is free again.
		rtOK(t, base, rtModel)
		assert.Equal(t, int64(2), pa.total())
	})
	t.Run("no_queue_fails_over", func(t *testing.T) {
		t.Parallel()
		pa, pb, base, release, first := rtSaturated(t, true, map[string]interface{}{"maxConcurrent": 1, "maxQueue": 0})
		rtOK(t, base, rtModel)
		assert.Equal(t, int64(1), pa.total())
		assert.Equal(t, int64(1), pb.total(), "the next candidate served")
		release()
		assert.Equal(t, http.StatusOK, rtAwait(t, first).status)
	})
	t.Run("queue_times_out", func(t *testing.T) {
		t.Parallel()
		pa, pb, base, release, first := rtSaturated(t, false, map[string]interface{}{"maxConcurrent": 1, "maxQueue": 1, "queueTimeout": "300ms"})
		res := rtPost(t, base, rtChat(rtModel, "queued", false))
		require.NoError(t, res.err)
		assert.Equal(t, http.StatusTooManyRequests, res.status, "%s", res)
		if res.status == http.StatusTooManyRequests {
			assert.Equal(t, "provider_saturated", rtErrorCode(t, res.body))
		}
		assert.GreaterOrEqual(t, res.end.Sub(res.start), 290*time.Millisecond, "it waited its queueTimeout")
		assert.Less(t, res.end.Sub(res.start), 3*time.Second)
		assert.Equal(t, int64(1), pa.total())
		assert.Equal(t, int64(0), pb.total())
		release()
		assert.Equal(t, http.StatusOK, rtAwait(t, first).status)
	})
	t.Run("queue_served_when_the_slot_frees", func(t *testing.T) {
		t.Parallel()
		pa, pb, base, release, first := rtSaturated(t, false, map[string]interface{}{"maxConcurrent": 1, "maxQueue": 1, "queueTimeout": "10s"})
		second := make(chan rlResult, 1)
		go func() { second <- rtPost(t, base, rtChat(rtModel, "queued", false)) }()
		// Whatever the second request does before the slot frees, it
		// must not be answered: it waits in the queue.
		select {
		case r := <-second:
			t.Fatalf("answered while pa's only slot was taken: %s", r)
		case <-pa.entered:
			t.Fatal("the second request reached pa while its only slot was taken")
		case <-time.After(500 * time.Millisecond):
		}
		release()
		assert.Equal(t, http.StatusOK, rtAwait(t, first).status)
		res := rtAwait(t, second)
		assert.Equal(t, http.StatusOK, res.status, "%s", res)
		assert.Equal(t, int64(2), pa.total(), "pa served the queued request")
		assert.Equal(t, int64(0), pb.total())
	})
	t.Run("queue_full_fails_over", func(t *testing.T) {
		t.Parallel()
		// Default maxQueue = maxConcurrent = 1, queueTimeout 300ms:
		// with failover on, a request that would wait past it moves to
		// pb.
		pa, pb, base, release, first := rtSaturated(t, true, map[string]interface{}{"maxConcurrent": 1, "queueTimeout": "300ms"})
		res := rtOK(t, base, rtModel)
		assert.Equal(t, int64(1), pa.total())
		assert.Equal(t, int64(1), pb.total(), "pb served")
		assert.Less(t, res.end.Sub(res.start), 3*time.Second)
		release()
		assert.Equal(t, http.StatusOK, rtAwait(t, first).status)
	})
	t.Run("stream_holds_its_slot_until_the_relay_ends", func(t *testing.T) {
		t.Parallel()
		// pa streams 3 chunks 250 ms apart; its only slot is held while
		// the client reads them.
		pa := rtNewProvider(t, "pa", mockupstream.Options{}, "chunk-delay", "250ms")
		cfg := rtConfig(rtProviders{pa}, nil)
		cfg["providers"].(map[string]interface{})["pa"].(map[string]interface{})["maxConcurrent"] = 1
		cfg["providers"].(map[string]interface{})["pa"].(map[string]interface{})["maxQueue"] = 0
		base := rtStart(t, cfg).URL
		req, err := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", bytes.NewReader(rtChat(rtModel, "long stream", true)))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+rtUserKey)
		resp, err := rtClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		line, err := bufio.NewReader(resp.Body).ReadString('\n')
		require.NoError(t, err, "the stream's first event")
		require.Contains(t, line, "data:")

		res := rtPost(t, base, rtChat(rtModel, "while streaming", false))
		require.NoError(t, res.err)
		assert.Equal(t, http.StatusTooManyRequests, res.status, "the stream holds the slot: %s", res)
		_, err = io.Copy(io.Discard, resp.Body)
		require.NoError(t, err)
		resp.Body.Close()
		// The relay ended: the slot is free (the gateway may release it
		// a moment after the client read the last byte).
		rtEventually(t, 5*time.Second, 20*time.Millisecond, "the slot freed after the stream", func() bool {
			r := rtPost(t, base, rtChat(rtModel, "after the stream", false))
			return r.err == nil && r.status == http.StatusOK
		})
	})
}
