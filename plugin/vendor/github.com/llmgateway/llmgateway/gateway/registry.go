package gateway

import "strings"

// modelRegistry answers "which provider serves this model id".
//
// A "provider/model" id resolves directly when the prefix names a
// configured provider; any other id (even one containing "/") is bare. A
// bare id goes to the first provider, in sorted name order, that lists
// it.
type modelRegistry struct {
	providers map[string]*providerRuntime
	names     []string // sorted
	bareOwner map[string]*providerRuntime
}

func newModelRegistry(c *compiledConfig, log *logger) *modelRegistry {
	r := &modelRegistry{providers: c.providers, names: c.providerNames, bareOwner: map[string]*providerRuntime{}}
	for i := 0; i < len(r.names); i++ {
		p := r.providers[r.names[i]]
		for j := 0; j < len(p.models); j++ {
			m := p.models[j]
			if owner, taken := r.bareOwner[m]; taken {
				log.warnf("model %q is served by providers %q and %q: the bare id routes to %q; use %q to reach the other", m, owner.name, p.name, owner.name, p.name+"/"+m)
				continue
			}
			r.bareOwner[m] = p
		}
	}
	return r
}

// resolve maps a client model id to a provider and that provider's own
// model id. ok is false when no configured provider knows the id.
func (r *modelRegistry) resolve(id string) (p *providerRuntime, upstreamModel string, ok bool) {
	if i := strings.IndexByte(id, '/'); i > 0 {
		if prefixed, found := r.providers[id[:i]]; found {
			rest := id[i+1:]
			if prefixed.modelSet[rest] {
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
	id       string
	provider *providerRuntime
	model    string // the provider's own id
}

// entries lists every id a client may send: each bare id (under the
// provider that wins it) and every "provider/model" form.
func (r *modelRegistry) entries() []modelEntry {
	var out []modelEntry
	for i := 0; i < len(r.names); i++ {
		p := r.providers[r.names[i]]
		for j := 0; j < len(p.models); j++ {
			m := p.models[j]
			if r.bareOwner[m] == p {
				out = append(out, modelEntry{id: m, provider: p, model: m})
			}
			out = append(out, modelEntry{id: p.name + "/" + m, provider: p, model: m})
		}
	}
	return out
}
