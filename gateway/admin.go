package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// The admin routes (admin.enabled; not registered otherwise): GET /admin
// and its hashed assets (admin_assets.go; unauthenticated: they carry no
// data) and the read-only JSON API under /admin/api/, gated
// as one: no valid key is a 401, a non-admin key a 403. Admin traffic
// never calls the limiter. Every admin response carries
// X-Content-Type-Options: nosniff, X-Frame-Options: DENY and adminCSP
// (whose frame-ancestors 'none' is XFO's successor); the JSON routes also
// Cache-Control: no-store. The routes: overview, usage, catalog,
// consumers (admin_overview.go, admin_catalog.go), config
// (admin_config.go), usage/history and usage/series (admin_history.go),
// usage/models (admin_models.go), usage/totals (admin_totals.go),
// performance (admin_perf.go), targets (admin_targets.go) and events
// (here).

// adminCSP is the one Content-Security-Policy of every admin response.
const adminCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

// isAdminPath reports whether p is under the admin routes.
func isAdminPath(p string) bool {
	return p == "/admin" || strings.HasPrefix(p, "/admin/")
}

// serveAdmin answers every admin path.
func (g *Gateway) serveAdmin(w http.ResponseWriter, r *http.Request) {
	tr := startTrace(w, r)
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", adminCSP)
	h.Set("X-Frame-Options", "DENY")
	p := r.URL.Path
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		defaultFormat.writeError(w, errMethodNotAllowed(r.Method, p, http.MethodGet))
		return
	}
	if serveAdminStatic(w, r) {
		return
	}
	if !strings.HasPrefix(p, "/admin/api/") {
		notFoundTraced(w, r)
		return
	}
	h.Set("Cache-Control", "no-store")
	user, e := authenticate(g, r, tr)
	if e != nil {
		defaultFormat.writeError(w, e)
		return
	}
	if !user.admin {
		defaultFormat.writeError(w, apierr.New(http.StatusForbidden, "permission_error", "admin_required", "the admin API needs an admin key"))
		return
	}
	answer, e := g.adminAnswer(strings.TrimPrefix(p, "/admin/api/"), r)
	if e != nil {
		defaultFormat.writeError(w, e)
		return
	}
	data, err := json.Marshal(answer)
	if err != nil {
		defaultFormat.writeError(w, apierr.New(http.StatusInternalServerError, "api_error", "internal_error", "the answer could not be encoded"))
		return
	}
	writeJSONResponse(w, http.StatusOK, data)
}

// adminAnswer is the answer of the JSON route under /admin/api/.
func (g *Gateway) adminAnswer(route string, r *http.Request) (interface{}, *apiError) {
	q := r.URL.Query()
	switch route {
	case "events":
		return g.adminEvents(r.Context(), q)
	case "usage/models":
		return g.adminUsageModels(r.Context(), q)
	case "usage/totals":
		return g.adminUsageTotals(r.Context(), q)
	case "performance":
		return g.adminPerformance(r.Context(), q)
	case "overview":
		return g.adminOverview(r.Context())
	case "usage":
		return g.adminUsage(r.Context())
	case "catalog":
		return g.adminCatalog()
	case "consumers":
		return g.adminConsumers()
	case "config":
		return g.adminConfig()
	case "targets":
		return g.adminTargets(r.Context())
	case "usage/history":
		return g.adminHistory(r.Context(), q)
	case "usage/series":
		return g.adminSeries(r.Context(), q)
	}
	return nil, errRouteNotFound(r.Method, r.URL.Path)
}

// notFoundTraced is notFound for a request whose ids are already set.
func notFoundTraced(w http.ResponseWriter, r *http.Request) {
	defaultFormat.writeError(w, errRouteNotFound(r.Method, r.URL.Path))
}

// adminEventsAnswer is the events route's answer.
type adminEventsAnswer struct {
	Events   []gatewayEvent `json:"events"`
	Source   string         `json:"source"`
	Replica  string         `json:"replica"`
	Capacity int            `json:"capacity"`
	Degraded bool           `json:"degraded"`
}

// serveAdminEvents is GET /admin/api/events?limit=N (1-200, default 50):
// the newest events, from the shared Redis list when Redis is configured
// and answers (source "redis"), else this replica's ring (source
// "replica"; degraded when Redis is configured but down or failed).
func (g *Gateway) adminEvents(ctx context.Context, q url.Values) (interface{}, *apiError) {
	limit, e := queryInt(q, "limit", 50, 1, eventRingSize)
	if e != nil {
		return nil, e
	}
	f := g.events
	out := adminEventsAnswer{Source: "replica", Replica: f.replica, Capacity: eventRingSize}
	if f.shared != nil {
		if events, err := listEvents(ctx, f.shared, limit); err == nil {
			out.Events, out.Source = events, "redis"
		} else {
			out.Degraded = true
		}
	}
	if out.Source == "replica" {
		out.Events = f.recent(limit)
	}
	if out.Events == nil {
		out.Events = []gatewayEvent{}
	}
	return out, nil
}

// listEvents reads the newest n shared events; an entry that does not
// decode is skipped.
func listEvents(ctx context.Context, l eventStore, n int) ([]gatewayEvent, error) {
	raw, err := l.ListRange(ctx, eventsKey, n)
	if err != nil {
		return nil, err
	}
	out := make([]gatewayEvent, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		var e gatewayEvent
		if json.Unmarshal([]byte(raw[i]), &e) == nil {
			out = append(out, e)
		}
	}
	return out, nil
}
