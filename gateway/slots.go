package gateway

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"

	"github.com/llmgateway/llmgateway/gateway/internal/chans"
)

// Per-provider concurrency (providers.X.maxConcurrent): at most that
// many upstream requests in flight per provider in this process, each
// holding its slot from the attempt until the exchange is done (a
// stream's slot until its relay ends). A request over the cap waits in a
// bounded queue for at most the queue timeout; when it cannot get a
// slot the call stage moves to the next candidate, or answers 429
// provider_saturated when there is none.

const defaultQueueTimeout = time.Second

// codeSaturated is the error code of a provider at its concurrency cap.
const codeSaturated = "provider_saturated"

// maxProviderSlots bounds maxConcurrent and maxQueue.
const maxProviderSlots = 10000

// providerSlots is one provider's semaphore and wait queue.
type providerSlots struct {
	sem      chan struct{}
	queued   atomic.Int64
	maxQueue int64
	timeout  time.Duration
}

// compileSlots validates a provider's concurrency keys; nil when
// maxConcurrent is unset.
func compileSlots(field string, pc *ProviderConfig) (*providerSlots, error) {
	if pc.MaxConcurrent == 0 {
		if pc.MaxQueue != nil || pc.QueueTimeout != "" {
			return nil, fmt.Errorf("config: %s: maxQueue and queueTimeout need maxConcurrent", field)
		}
		return nil, nil
	}
	if pc.MaxConcurrent < 1 || pc.MaxConcurrent > maxProviderSlots {
		return nil, fmt.Errorf("config: %s.maxConcurrent: %d is out of range (1-%d)", field, pc.MaxConcurrent, maxProviderSlots)
	}
	s := &providerSlots{sem: make(chan struct{}, pc.MaxConcurrent), maxQueue: int64(pc.MaxConcurrent)}
	if pc.MaxQueue != nil {
		if *pc.MaxQueue < 0 || *pc.MaxQueue > maxProviderSlots {
			return nil, fmt.Errorf("config: %s.maxQueue: %d is out of range (0-%d)", field, *pc.MaxQueue, maxProviderSlots)
		}
		s.maxQueue = int64(*pc.MaxQueue)
	}
	var err error
	if s.timeout, err = parseTimeout(field+".queueTimeout", pc.QueueTimeout, defaultQueueTimeout); err != nil {
		return nil, err
	}
	return s, nil
}

// acquire takes a slot, waiting in the queue when there is room in it;
// false when the queue is full, the wait timed out or ctx ended.
func (s *providerSlots) acquire(ctx context.Context) bool {
	if chans.TrySendUnit(s.sem) {
		return true
	}
	if s.queued.Add(1) > s.maxQueue {
		s.queued.Add(-1)
		return false
	}
	defer s.queued.Add(-1)
	t := time.NewTimer(s.timeout)
	defer t.Stop()
	i, _, _ := chans.Wait(chans.Send(s.sem, struct{}{}), chans.Recv(t.C), chans.Recv(ctx.Done()))
	return i == 0
}

// release gives a slot back.
func (s *providerSlots) release() { <-s.sem }

// errSaturated is the 429 of a provider whose slots and queue are full.
func errSaturated(p *providerRuntime, s *providerSlots) *apiError {
	e := apierr.New(http.StatusTooManyRequests, "rate_limit_error", codeSaturated,
		fmt.Sprintf("provider %q is at its concurrency limit (%d requests in flight) and no slot freed up within %s; retry shortly", p.name, cap(s.sem), s.timeout))
	e.RetryAfter = "1"
	return e
}
