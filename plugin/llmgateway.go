// Package llmgateway is the Traefik middleware plugin shell around the
// gateway core. Traefik interprets it with Yaegi; it only adapts
// Traefik's plugin contract (CreateConfig, New) to gateway.New.
package llmgateway

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/llmgateway/llmgateway/gateway"
)

// Config is the middleware's dynamic configuration, exactly as Traefik
// decodes it: a generic map whose scalars are usually strings. It is a
// map rather than a struct so that gateway.ConfigFromMap can refuse an
// unknown key by name instead of Traefik silently dropping it.
type Config map[string]interface{}

// CreateConfig returns an empty configuration for Traefik to fill.
func CreateConfig() *Config {
	c := Config{}
	return &c
}

// New builds the gateway middleware. Traefik calls it for every router
// using the middleware and again on each configuration reload, cancelling
// ctx when the instance is replaced.
func New(ctx context.Context, next http.Handler, config *Config, name string) (http.Handler, error) {
	raw := map[string]interface{}{}
	if config != nil {
		raw = map[string]interface{}(*config)
	}
	cfg, err := gateway.ConfigFromMap(raw)
	if err != nil {
		return nil, err
	}
	// Traefik runs New again on every dynamic-configuration change: the
	// instances of one middleware name share their in-process counters,
	// so a reload does not reset the limits.
	g, err := gateway.New(next, cfg, gateway.Options{Name: name, SharedCounters: true})
	if err != nil {
		return nil, err
	}
	in := &instance{g: g}
	go in.closeWhenRetired(ctx, retireQuiet)
	return in, nil
}

// retireQuiet is how long a replaced instance must go without a new
// request, none in flight, before it is closed.
const retireQuiet = 30 * time.Second

// instance is one middleware instance: the gateway, and the counts its
// retirement waits on.
type instance struct {
	g        *gateway.Gateway
	started  atomic.Int64 // requests begun
	inFlight atomic.Int64
}

// ServeHTTP hands the request to the gateway, counting it.
func (in *instance) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	in.started.Add(1)
	in.inFlight.Add(1)
	defer in.inFlight.Add(-1)
	in.g.ServeHTTP(w, r)
}

// closeWhenRetired releases the gateway's background resources (its Redis
// connections among them) once Traefik has replaced this instance and
// stopped using it. Traefik cancels ctx when it starts building the next
// configuration, not when it switches to it: until the new instances are
// built and swapped in, requests still arrive here, and those in flight
// still need Redis to settle. So the instance is closed only after ctx is
// done and then quiet has passed with no request begun and none left in
// flight.
func (in *instance) closeWhenRetired(ctx context.Context, quiet time.Duration) {
	defer func() { _ = recover() }()
	<-ctx.Done()
	for {
		seen := in.started.Load()
		time.Sleep(quiet)
		if in.started.Load() == seen && in.inFlight.Load() == 0 {
			break
		}
	}
	_ = in.g.Close()
}
