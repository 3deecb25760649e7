package gateway

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// modelObject is one entry of GET /v1/models.
type modelObject struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
	// The context window under the three spellings clients read
	// (OpenRouter's context_length, vLLM's max_model_len); omitted when
	// unknown.
	ContextWindow *int64 `json:"context_window,omitempty"`
	ContextLength *int64 `json:"context_length,omitempty"`
	MaxModelLen   *int64 `json:"max_model_len,omitempty"`
	// Pricing is omitted when no price is known; a known zero is shown.
	Pricing *modelPricing `json:"pricing,omitempty"`
}

// modelPricing is USD per 1,000,000 tokens.
type modelPricing struct {
	InputPerMTokUSD  *float64 `json:"input_per_mtok_usd,omitempty"`
	OutputPerMTokUSD *float64 `json:"output_per_mtok_usd,omitempty"`
}

// modelList is the GET /v1/models response.
type modelList struct {
	Object string        `json:"object"`
	Data   []modelObject `json:"data"`
}

// serveModels answers GET /v1/models (every id the caller may use, bare
// and "provider/model") and GET /v1/models/{id}.
func (g *Gateway) serveModels(w http.ResponseWriter, r *http.Request, tr *requestTrace) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		defaultFormat.writeError(w, errMethodNotAllowed(r.Method, r.URL.Path, http.MethodGet))
		return
	}
	if r.Header.Get("Anthropic-Version") != "" {
		g.serveAnthropicModels(w, r, tr)
		return
	}
	user, e := authenticate(g, r, tr)
	if e != nil {
		defaultFormat.writeError(w, e)
		return
	}
	if id := strings.TrimPrefix(r.URL.Path, "/v1/models/"); id != r.URL.Path {
		g.serveOneModel(w, user, id)
		return
	}
	entries := g.models().entries()
	list := modelList{Object: "list", Data: make([]modelObject, 0, len(entries))}
	for i := 0; i < len(entries); i++ {
		e := entries[i]
		if user.canUseRoute(e.route) {
			list.Data = append(list.Data, g.modelObject(e.id, e.route))
		}
	}
	writeJSON(w, http.StatusOK, list)
}

func (g *Gateway) serveOneModel(w http.ResponseWriter, user *userRuntime, id string) {
	route, e := resolveModel(g, user, id)
	if e != nil {
		defaultFormat.writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, g.modelObject(id, route))
}

func (g *Gateway) modelObject(id string, route modelRoute) modelObject {
	obj := modelObject{ID: id, Object: "model", Created: g.started.Unix(), OwnedBy: route.provider.name}
	meta := g.models().resolveMeta(route)
	if meta.context > 0 {
		c := meta.context
		obj.ContextWindow, obj.ContextLength, obj.MaxModelLen = &c, &c, &c
	}
	if meta.input.known || meta.output.known {
		obj.Pricing = &modelPricing{InputPerMTokUSD: usdPerM(meta.input), OutputPerMTokUSD: usdPerM(meta.output)}
	}
	return obj
}

// usdPerM converts a known micro-USD price to USD; nil when unknown.
func usdPerM(c metaCost) *float64 {
	if !c.known {
		return nil
	}
	usd := float64(c.micros) / 1e6
	return &usd
}

// writeJSON writes v as a JSON response.
func writeJSON(w http.ResponseWriter, status int, v interface{}) {
	data, err := json.Marshal(v)
	if err != nil {
		defaultFormat.writeError(w, apierr.New(http.StatusInternalServerError, "server_error", "internal_error", "could not encode the response"))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(data, '\n'))
}

// anthropicModel is one entry of the Anthropic model listing.
type anthropicModel struct {
	Type        string `json:"type"`
	ID          string `json:"id"`
	DisplayName string `json:"display_name"`
	CreatedAt   string `json:"created_at"`
}

// anthropicModelList is the Anthropic GET /v1/models response.
type anthropicModelList struct {
	Data    []anthropicModel `json:"data"`
	HasMore bool             `json:"has_more"`
	FirstID *string          `json:"first_id"`
	LastID  *string          `json:"last_id"`
}

// serveAnthropicModels answers the model listing in Anthropic's shape,
// for a request that carries anthropic-version (the Anthropic SDKs,
// Claude Code's model picker): every id the caller may use, aliases
// included, paged by limit (1–1000, default 20), after_id and before_id
// as the Anthropic API pages; GET /v1/models/{id} is one entry. Errors
// are in the Anthropic envelope.
func (g *Gateway) serveAnthropicModels(w http.ResponseWriter, r *http.Request, tr *requestTrace) {
	user, e := authenticate(g, r, tr)
	if e != nil {
		anthropicFormat.writeError(w, e)
		return
	}
	created := g.started.UTC().Format("2006-01-02T15:04:05Z")
	if id := strings.TrimPrefix(r.URL.Path, "/v1/models/"); id != r.URL.Path {
		if _, e := resolveModel(g, user, id); e != nil {
			anthropicFormat.writeError(w, e)
			return
		}
		writeJSON(w, http.StatusOK, anthropicModel{Type: "model", ID: id, DisplayName: id, CreatedAt: created})
		return
	}
	q := r.URL.Query()
	limit := 20
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			anthropicFormat.writeError(w, apierr.BadRequest("invalid_limit", "limit: must be an integer from 1 to 1000"))
			return
		}
		limit = n
	}
	entries := g.models().entries()
	var ids []string
	for i := 0; i < len(entries); i++ {
		if user.canUseRoute(entries[i].route) {
			ids = append(ids, entries[i].id)
		}
	}
	from, to := 0, len(ids)
	if after := q.Get("after_id"); after != "" {
		from = indexOfID(ids, after) + 1
		if from == 0 {
			from = len(ids)
		}
	}
	if before := q.Get("before_id"); before != "" {
		if k := indexOfID(ids, before); k >= 0 {
			to = k
		}
		if q.Get("after_id") == "" && to-limit > from {
			from = to - limit
		}
	}
	if from > to {
		from = to
	}
	end := to
	if end-from > limit {
		end = from + limit
	}
	// has_more: more entries past the page in the direction paged (before
	// it when paging with before_id alone).
	more := end < len(ids)
	if q.Get("before_id") != "" && q.Get("after_id") == "" {
		more = from > 0
	}
	list := anthropicModelList{Data: make([]anthropicModel, 0, end-from), HasMore: more}
	for i := from; i < end; i++ {
		list.Data = append(list.Data, anthropicModel{Type: "model", ID: ids[i], DisplayName: ids[i], CreatedAt: created})
	}
	if len(list.Data) > 0 {
		first, last := list.Data[0].ID, list.Data[len(list.Data)-1].ID
		list.FirstID, list.LastID = &first, &last
	}
	writeJSON(w, http.StatusOK, list)
}

// indexOfID is the index of s in list, -1 when absent.
func indexOfID(list []string, s string) int {
	for i := 0; i < len(list); i++ {
		if list[i] == s {
			return i
		}
	}
	return -1
}
