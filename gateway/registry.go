package gateway

import (
	"net/http"
	"sort"
	"strings"
)

// modelRegistry answers "which provider serves this model id". It is an
// immutable snapshot of every provider's known models (explicit models
// plus the last good discovered set); discovery builds a new one when a
// set changes.
//
// A "provider/model" id resolves directly when the prefix names a
// configured provider; any other id (even one containing "/") is bare. A
// bare id goes to the first provider, in sorted name order, that knows
// it.
type modelRegistry struct {
	providers  map[string]*providerRuntime
	names      []string            // sorted
	models     map[string][]string // provider -> sorted known ids
	known      map[string]map[string]bool
	bareOwner  map[string]*providerRuntime
	aliases    map[string]string
	aliasNames []string // sorted
	meta       map[string]*ModelMetaConfig
	contexts   map[string]map[string]int64 // provider -> model -> captured context
	listing    []modelEntry                // every listable id, built once per snapshot
}

// newModelRegistry builds a snapshot from the configuration and the
// discovered sets (provider name -> ids). Collisions are warned about
// once per id over the gateway's lifetime.
func newModelRegistry(c *compiledConfig, found discoverySnapshot, warnings *warningLog) *modelRegistry {
	discovered := found.models
	r := &modelRegistry{providers: c.providers, names: c.providerNames, bareOwner: map[string]*providerRuntime{},
		models: map[string][]string{}, known: map[string]map[string]bool{}, aliases: c.aliases, aliasNames: c.aliasNames,
		meta: c.modelMeta, contexts: found.contexts}
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
		r.models[p.name], r.known[p.name] = ids, set
		for j := 0; j < len(ids); j++ {
			m := ids[j]
			if owner, taken := r.bareOwner[m]; taken {
				warnings.warnOnce("collision:"+m, "model %q is served by providers %q and %q: the bare id routes to %q; use %q to reach the other", m, owner.name, p.name, owner.name, p.name+"/"+m)
				continue
			}
			r.bareOwner[m] = p
			if _, isAlias := r.aliases[m]; isAlias {
				warnings.warnOnce("alias:"+m, "provider %q lists model %q, which is also a model alias: the alias wins", p.name, m)
			}
		}
	}
	r.listing = r.buildListing()
	return r
}

// modelRoute is where a client model id goes.
type modelRoute struct {
	provider *providerRuntime
	model    string // the provider's own id
	alias    string // the alias the client used; "" for a direct id
}

// route resolves a client model id: an exact alias first (its target then
// resolves like any other id, lazily), then "provider/model", then bare.
func (r *modelRegistry) route(id string) (modelRoute, *apiError) {
	if target, isAlias := r.aliases[id]; isAlias {
		p, model, ok := r.resolve(target)
		if !ok {
			return modelRoute{}, newError(http.StatusNotFound, "invalid_request_error", "model_not_found",
				"model alias \""+id+"\" points at \""+target+"\", which no configured provider serves")
		}
		return modelRoute{provider: p, model: model, alias: id}, nil
	}
	p, model, ok := r.resolve(id)
	if !ok {
		return modelRoute{}, newError(http.StatusNotFound, "invalid_request_error", "model_not_found",
			"model \""+id+"\" is not served by this gateway")
	}
	return modelRoute{provider: p, model: model}, nil
}

// resolve maps a (non-alias) model id to a provider and that provider's
// own model id. ok is false when no configured provider knows the id.
func (r *modelRegistry) resolve(id string) (p *providerRuntime, upstreamModel string, ok bool) {
	if i := strings.IndexByte(id, '/'); i > 0 {
		if prefixed, found := r.providers[id[:i]]; found {
			rest := id[i+1:]
			if r.known[prefixed.name][rest] {
				return prefixed, rest, true
			}
		}
	}
	if owner, found := r.bareOwner[id]; found {
		return owner, id, true
	}
	return nil, "", false
}

// modelEntry is one row of the model list.
type modelEntry struct {
	id    string
	route modelRoute
}

// entries lists every id a client may send: each bare id (under the
// provider that wins it), every "provider/model" form, then every alias
// whose target resolves (sorted by alias).
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
			if r.bareOwner[m] == p {
				out = append(out, modelEntry{id: m, route: modelRoute{provider: p, model: m}})
			}
			out = append(out, modelEntry{id: p.name + "/" + m, route: modelRoute{provider: p, model: m}})
		}
	}
	for i := 0; i < len(r.aliasNames); i++ {
		alias := r.aliasNames[i]
		if p, model, ok := r.resolve(r.aliases[alias]); ok {
			out = append(out, modelEntry{id: alias, route: modelRoute{provider: p, model: model, alias: alias}})
		}
	}
	return out
}
