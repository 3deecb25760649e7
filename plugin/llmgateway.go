// Package llmgateway is the Traefik middleware plugin shell around the
// gateway core. Traefik interprets it with Yaegi; it only adapts
// Traefik's plugin contract (CreateConfig, New) to gateway.New.
package llmgateway

import (
	"context"
	"net/http"

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
	go closeWhenDone(ctx, g)
	return g, nil
}

// closeWhenDone releases the gateway's background resources once Traefik
// replaces this middleware instance. In-flight requests are unaffected.
func closeWhenDone(ctx context.Context, g *gateway.Gateway) {
	defer func() { _ = recover() }()
	<-ctx.Done()
	_ = g.Close()
}
