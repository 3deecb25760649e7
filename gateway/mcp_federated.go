package gateway

import (
	"net/http"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// serveFederatedMCP is POST /mcp, the federated MCP endpoint. Not built
// yet: 501.
func (g *Gateway) serveFederatedMCP(w http.ResponseWriter, r *http.Request, tr *requestTrace) {
	defaultFormat.writeError(w, apierr.New(http.StatusNotImplemented, "api_error", "not_implemented", "the federated MCP endpoint is not built yet"))
}
