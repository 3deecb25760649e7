package gateway

import (
	"net/http"
	"sort"
	"strings"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// modelRegistry answers "which provider serves this model id". It is an
// immutable snapshot of every provider's known models (explicit models
// plus the last good discovered set); discovery builds a new one when a
// set changes.
//
// A "provider/model" id resolves directly when the prefix names a
// configured provider; any other id (even one containing "/") is bare.
//
// Candidate order: a bare id is served by every provider that knows it,
// in sorted provider-name order. The first is the id's owner (it gets
// the bare id in /v1/models, and serves every request while failover is
// off); the others are the candidates failover and load balancing may
// use. An explicit "provider/model" id has exactly one candidate. An
// alias has its targets' candidates, in target order, each (provider,
// model) once.
type modelRegistry struct {
	providers map[string]*providerRuntime
	names     []string                      // sorted
	models    map[string][]string           // provider -> sorted known ids
	bare      map[string][]*providerRuntime // bare id -> every provider that knows it, in candidate order
	// bareCandidates is bare as candidate lists, and direct is each
	// provider's known ids as one-candidate lists (provider -> model ->
	// list, for "provider/model" ids): built once per snapshot, with
	// each candidate's resolved metadata, and shared by every request
	// that routes the id: read-only.
	bareCandidates map[string][]candidate
	direct         map[string]map[string][]candidate
	aliases        map[string]*aliasSpec
	aliasNames     []string // sorted
	meta           map[string]*ModelMetaConfig
	contexts       map[string]map[string]int64 // provider -> model -> captured context
	listing        []modelEntry                // every listable id, built once per snapshot
	prices         *pricer                     // nil in tests: candidates carry no list price

	// aliasRoutes is each alias's route while at least one of its
	// targets resolves (built once per snapshot, shared read-only).
	aliasRoutes map[string]modelRoute
}

// newModelRegistry builds a snapshot from the configuration and the
// discovered sets (provider name -> ids). Collisions are warned about
// once per id over the gateway's lifetime.
func newModelRegistry(c *compiledConfig, found discoverySnapshot, warnings *warningLog, prices *pricer) *modelRegistry {
	discovered := found.models
	r := &modelRegistry{providers: c.providers, names: c.providerNames, bare: map[string][]*providerRuntime{},
		models: map[string][]string{}, direct: map[string]map[string][]candidate{}, aliases: c.aliases, aliasNames: c.aliasNames,
		meta: c.modelMeta, contexts: found.contexts, prices: prices}
	for i := 0; i < len(r.names); i++ {
		p := r.providers[r.names[i]]
		set := make(map[string]bool, len(p.models)+len(discovered[p.name]))
		all := append(append([]string{}, p.models...), discovered[p.name]...)
		var ids []string
		for j := 0; j < len(all); j++ {
			if !set[all[j]] {
				set[all[j]] = true
				ids = append(ids, all[j])
			}
		}
		sort.Strings(ids)
		r.models[p.name] = ids
		for j := 0; j < len(ids); j++ {
			m := ids[j]
			if owners := r.bare[m]; len(owners) > 0 {
				owner := owners[0]
				warnings.warnOnce("collision:"+m, "model %q is served by providers %q and %q: the bare id routes to %q; use %q to reach the other", m, owner.name, p.name, owner.name, p.name+"/"+m)
				r.bare[m] = append(owners, p)
				continue
			}
			r.bare[m] = []*providerRuntime{p}
			if _, isAlias := r.aliases[m]; isAlias {
				warnings.warnOnce("alias:"+m, "provider %q lists model %q, which is also a model alias: the alias wins", p.name, m)
			}
		}
	}
	for i := 0; i < len(r.names); i++ {
		p := r.providers[r.names[i]]
		ids := r.models[p.name]
		direct := make(map[string][]candidate, len(ids))
		for j := 0; j < len(ids); j++ {
			direct[ids[j]] = []candidate{r.newCandidate(p, ids[j])}
		}
		r.direct[p.name] = direct
	}
	r.bareCandidates = make(map[string][]candidate, len(r.bare))
	for id, owners := range r.bare {
		cands := make([]candidate, len(owners))
		for i := 0; i < len(owners); i++ {
			cands[i] = r.direct[owners[i].name][id][0]
		}
		r.bareCandidates[id] = cands
	}
	r.aliasRoutes = make(map[string]modelRoute, len(r.aliasNames))
	for i := 0; i < len(r.aliasNames); i++ {
		alias := r.aliasNames[i]
		if cands := r.aliasCandidates(r.aliases[alias]); len(cands) > 0 {
			r.aliasRoutes[alias] = aliasRoute(r, routeTo(cands), alias)
		}
	}
	r.listing = r.buildListing()
	return r
}

// modelRoute is where a client model id goes: its first candidate
// (provider, model) and every candidate in order (the first included).
// candidates may be the registry's own slice: never modify it in place.
type modelRoute struct {
	provider   *providerRuntime
	model      string // the provider's own id
	alias      string // the alias the client used; "" for a direct id
	strategy   string // the alias's own routing strategy; "" the global one
	maxOutput  int64  // the first candidate's maximum output tokens (the alias's modelMeta entry first); 0 unknown
	candidates []candidate
}

// candidate is one provider that can serve a request, with its own id
// for the model, that model's maximum output tokens (0 unknown) and its
// weight (1 unless an alias's weights set it).
type candidate struct {
	provider  *providerRuntime
	model     string
	maxOutput int64
	weight    int    // the weighted strategy's weight (0 or 1: one share)
	name      string // "provider/model", built once (routing's keys)
	// list and listSource are the candidate's list price as billing
	// resolves it without modelMeta (pricer.listPrice), resolved once:
	// the cost guard and least-cost read them.
	list       modelPrice
	listSource string
}

// newCandidate builds a snapshot's candidate for provider p's model,
// resolving its metadata once (r.meta and r.contexts must be set).
func (r *modelRegistry) newCandidate(p *providerRuntime, model string) candidate {
	c := candidate{provider: p, model: model, maxOutput: r.resolveMeta(modelRoute{provider: p, model: model}).maxOutput, weight: 1,
		name: p.name + "/" + model, listSource: priceSourceUnpriced}
	if r.prices != nil {
		c.list, c.listSource = r.prices.listPrice(p.name, model)
	}
	return c
}

// aliasCandidates is an alias's candidates: each target's, in target
// order, the first occurrence of a (provider, model) kept with its
// target's weight; targets no provider serves are skipped. One target of
// weight 1 shares its target's list.
func (r *modelRegistry) aliasCandidates(spec *aliasSpec) []candidate {
	if len(spec.targets) == 1 && spec.weights[0] == 1 {
		route, _ := r.resolve(spec.targets[0])
		return route.candidates
	}
	var out []candidate
	seen := map[string]bool{}
	for i := 0; i < len(spec.targets); i++ {
		route, ok := r.resolve(spec.targets[i])
		if !ok {
			continue
		}
		for j := 0; j < len(route.candidates); j++ {
			cand := route.candidates[j]
			key := cand.provider.name + "\x00" + cand.model
			if seen[key] {
				continue
			}
			seen[key] = true
			cand.weight = spec.weights[i]
			out = append(out, cand)
		}
	}
	return out
}

// route resolves a client model id: an exact alias first (its route was
// built with the snapshot), then "provider/model", then bare.
func (r *modelRegistry) route(id string) (modelRoute, *apiError) {
	if spec, isAlias := r.aliases[id]; isAlias {
		if route, ok := r.aliasRoutes[id]; ok {
			return route, nil
		}
		return modelRoute{}, aliasNotFound(id, spec)
	}
	route, ok := r.resolve(id)
	if !ok {
		return modelRoute{}, apierr.New(http.StatusNotFound, "invalid_request_error", "model_not_found",
			"model \""+id+"\" is not served by this gateway")
	}
	return route, nil
}

// resolve maps a (non-alias) model id to its candidates. ok is false
// when no configured provider knows the id.
func (r *modelRegistry) resolve(id string) (modelRoute, bool) {
	if i := strings.IndexByte(id, '/'); i > 0 {
		if cands := r.direct[id[:i]][id[i+1:]]; len(cands) > 0 {
			return routeTo(cands), true
		}
	}
	cands := r.bareCandidates[id]
	if len(cands) == 0 {
		return modelRoute{}, false
	}
	return routeTo(cands), true
}

// aliasNotFound is the 404 for an alias none of whose targets resolves.
func aliasNotFound(alias string, spec *aliasSpec) *apiError {
	if len(spec.targets) == 1 {
		return apierr.New(http.StatusNotFound, "invalid_request_error", "model_not_found",
			"model alias \""+alias+"\" points at \""+spec.targets[0]+"\", which no configured provider serves")
	}
	return apierr.New(http.StatusNotFound, "invalid_request_error", "model_not_found",
		"model alias \""+alias+"\" points at \""+strings.Join(spec.targets, "\", \"")+"\", none of which a configured provider serves")
}

// aliasRoute is target (the alias's resolved candidates) as reached
// through alias: it carries the alias's strategy, and the alias's own
// modelMeta entry overrides the first candidate's maximum output, as
// resolveMeta's alias layer does.
func aliasRoute(r *modelRegistry, target modelRoute, alias string) modelRoute {
	target.alias = alias
	target.strategy = r.aliases[alias].strategy
	if m := r.meta[alias]; m != nil && m.MaxOutputTokens > 0 {
		target.maxOutput = m.MaxOutputTokens
	}
	return target
}

// routeTo is the route whose candidates are cands (non-empty, a
// snapshot's own list).
func routeTo(cands []candidate) modelRoute {
	first := cands[0]
	return modelRoute{provider: first.provider, model: first.model, maxOutput: first.maxOutput, candidates: cands}
}

// modelEntry is one row of the model list.
type modelEntry struct {
	id    string
	route modelRoute
}

// entries lists every id a client may send: each bare id (under the
// provider that wins it), every "provider/model" form, then every alias
// with a target that resolves (sorted by alias, routed to its first
// candidate).
func (r *modelRegistry) entries() []modelEntry {
	return r.listing
}

// buildListing computes entries for the snapshot (it is immutable, so
// /v1/models never recomputes it).
func (r *modelRegistry) buildListing() []modelEntry {
	var out []modelEntry
	for i := 0; i < len(r.names); i++ {
		p := r.providers[r.names[i]]
		ids := r.models[p.name]
		for j := 0; j < len(ids); j++ {
			m := ids[j]
			route := routeTo(r.direct[p.name][m])
			if r.bare[m][0] == p {
				out = append(out, modelEntry{id: m, route: route})
			}
			out = append(out, modelEntry{id: p.name + "/" + m, route: route})
		}
	}
	for i := 0; i < len(r.aliasNames); i++ {
		alias := r.aliasNames[i]
		if route, ok := r.aliasRoutes[alias]; ok {
			out = append(out, modelEntry{id: alias, route: route})
		}
	}
	return out
}
