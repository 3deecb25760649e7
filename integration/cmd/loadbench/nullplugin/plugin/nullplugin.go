// Package llmgateway is loadbench's null plugin: laid out like the
// repository (the manifest at the root, this package under plugin/) and
// installed under the real plugin's module path in its own Traefik, it
// measures what a
// Yaegi-interpreted middleware costs when it does nothing but hand the
// request to the next handler — the floor any interpreted plugin pays.
package llmgateway

import (
	"context"
	"net/http"
)

// Config accepts (and ignores) whatever the middleware is configured with.
type Config map[string]interface{}

// CreateConfig returns an empty configuration for Traefik to fill.
func CreateConfig() *Config {
	c := Config{}
	return &c
}

// New returns a handler that passes every request to next.
func New(ctx context.Context, next http.Handler, config *Config, name string) (http.Handler, error) {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r)
	}), nil
}
