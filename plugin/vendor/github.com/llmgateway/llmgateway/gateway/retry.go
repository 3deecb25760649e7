package gateway

import (
	"context"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/chans"
)

// retrySettings is RetryConfig compiled. retries is 0 when retry is off.
type retrySettings struct {
	retries int           // retries after the first try (0-3)
	backoff time.Duration // base wait before the first retry
}

const (
	defaultRetryBackoff = 250 * time.Millisecond
	maxComputedBackoff  = 2 * time.Second  // cap on a wait the gateway computes
	maxRetryAfter       = 30 * time.Second // cap on a wait an upstream asks for
)

func compileRetry(rc *RetryConfig) (retrySettings, error) {
	if rc == nil || !rc.Enabled {
		// Validate what is written even when disabled: a typo should not
		// surface only on the day someone flips enabled.
		if rc != nil {
			if _, err := compileRetry(&RetryConfig{Enabled: true, Attempts: rc.Attempts, Backoff: rc.Backoff}); err != nil {
				return retrySettings{}, err
			}
		}
		return retrySettings{}, nil
	}
	s := retrySettings{retries: 1, backoff: defaultRetryBackoff}
	if rc.Attempts != 0 {
		if rc.Attempts < 1 || rc.Attempts > 3 {
			return s, fmt.Errorf("config: retry.attempts: %d is out of range (1-3 retries after the first try)", rc.Attempts)
		}
		s.retries = rc.Attempts
	}
	var err error
	if s.backoff, err = parseTimeout("retry.backoff", rc.Backoff, defaultRetryBackoff); err != nil {
		return s, err
	}
	return s, nil
}

// retryWait is how long to wait before retry number n (1-based) after an
// attempt that failed with status (0 for a connection error): a 429's
// whole-second Retry-After (≤30s), else backoff×2^(n-1) capped at 2s,
// with equal jitter (a random value in [d/2, d]).
func (s retrySettings) retryWait(n, status int, retryAfter string) time.Duration {
	if status == http.StatusTooManyRequests {
		if secs, err := strconv.Atoi(strings.TrimSpace(retryAfter)); err == nil && secs >= 0 {
			d := time.Duration(secs) * time.Second
			if secs > int(maxRetryAfter/time.Second) {
				d = maxRetryAfter
			}
			return d
		}
	}
	d := s.backoff
	for i := 1; i < n && d < maxComputedBackoff; i++ {
		d *= 2
	}
	if d > maxComputedBackoff {
		d = maxComputedBackoff
	}
	half := d / 2
	return half + time.Duration(rand.Int63n(int64(d-half)+1))
}

// sleepCtx waits d or until ctx ends, reporting whether the full wait
// elapsed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	i, _, _ := chans.Wait(chans.Recv(t.C), chans.Recv(ctx.Done()))
	return i == 0
}

// transientStatus is the retry classification for an upstream answer.
func transientStatus(status int) bool {
	return status == http.StatusTooManyRequests || status >= 500
}

// retryingTransport applies the retry policy to discovery's model
// listing: body-less GETs, safe to resend. A transient failure's body is
// drained and discarded.
type retryingTransport struct {
	rt       http.RoundTripper
	settings retrySettings
}

func (t *retryingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		resp, err := t.rt.RoundTrip(req)
		last := attempt >= t.settings.retries || req.Context().Err() != nil
		status, retryAfter := 0, ""
		switch {
		case err != nil:
			if last {
				return nil, err
			}
		case transientStatus(resp.StatusCode) && !last:
			status, retryAfter = resp.StatusCode, resp.Header.Get("Retry-After")
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
			_ = resp.Body.Close()
		default:
			return resp, nil
		}
		if !sleepCtx(req.Context(), t.settings.retryWait(attempt+1, status, retryAfter)) {
			return nil, req.Context().Err()
		}
	}
}
