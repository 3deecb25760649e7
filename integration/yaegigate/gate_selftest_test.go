package yaegigate_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStreamGateDetectsBuffering proves the streaming assertion can fail:
// through a front end that buffers the whole response, event 1 must be
// reported as arriving after the upstream resumed; through one that
// relays and flushes, before.
func TestStreamGateDetectsBuffering(t *testing.T) {
	up := newFixtureUpstream(t)
	target, err := url.Parse(up.URL())
	require.NoError(t, err)

	t.Run("buffering front is caught", func(t *testing.T) {
		proxy := httputil.NewSingleHostReverseProxy(target)
		buffering := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rec := httptest.NewRecorder()
			proxy.ServeHTTP(rec, r)
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
		})
		front := httptest.NewServer(buffering)
		defer front.Close()
		// A short fallback: the buffering front holds event 1 until the
		// upstream gives up waiting and finishes.
		out := readGatedStream(t, newScenarioClient(front.URL), up, 200*time.Millisecond)
		assert.Equal(t, streamPieces(), out.contents)
		assert.True(t, out.timedOut, "the upstream should have waited in vain")
		assert.False(t, out.firstEarly, "a buffered stream must be detected")
	})

	t.Run("flushing front passes", func(t *testing.T) {
		front := httptest.NewServer(httputil.NewSingleHostReverseProxy(target))
		defer front.Close()
		out := readGatedStream(t, newScenarioClient(front.URL), up, streamGateFallback)
		assert.Equal(t, streamPieces(), out.contents)
		assert.False(t, out.timedOut)
		assert.True(t, out.firstEarly)
	})
}
