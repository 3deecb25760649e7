package gateway

import (
	"io"
	"net/http"
)

// Options carries the host's settings that are not part of Config.
type Options struct {
	// Name tags every log line as "llmgw[Name]". Default "gateway".
	Name string
	// LogOutput receives the gateway's log lines. Default os.Stderr.
	LogOutput io.Writer
}

// Gateway is the LLM gateway as an http.Handler. Build one with New.
type Gateway struct {
	next http.Handler
}

// New validates cfg, compiles it and returns the gateway wrapping next.
func New(next http.Handler, cfg *Config, opts Options) (*Gateway, error) {
	return &Gateway{next: next}, nil
}

// ServeHTTP answers the gateway's routes.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	http.Error(w, "not implemented", http.StatusNotImplemented)
}

// Close releases the gateway's background resources.
func (g *Gateway) Close() error { return nil }
