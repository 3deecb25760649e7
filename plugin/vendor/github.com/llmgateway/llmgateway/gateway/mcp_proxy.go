package gateway

import (
	"net/http"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// serveTargetProxy is the per-target proxy (/mcp/{name}/..., /a2a/{name}/...).
// Not built yet: 501.
func (g *Gateway) serveTargetProxy(w http.ResponseWriter, r *http.Request, kind, rest string, tr *requestTrace) {
	defaultFormat.writeError(w, apierr.New(http.StatusNotImplemented, "api_error", "not_implemented", "the "+kind+" target proxy is not built yet"))
}
