package gateway

import "path"

// A request is authorized by one single grant — a member group's own
// access lists, or the user's personal grant — never by a provider from
// one grant combined with a model (or a passthrough path) from another.

// allowsProvider reports whether the grant's provider list admits name.
func (g *grant) allowsProvider(name string) bool {
	return matchesAny(g.providers, name)
}

// allowsModel reports whether the grant's model list admits the model,
// checking both its bare and its "provider/model" form.
func (g *grant) allowsModel(provider, model string) bool {
	if len(g.models) == 0 {
		return true
	}
	return matchesAny(g.models, model) || matchesAny(g.models, provider+"/"+model)
}

// allowsPath reports whether the grant's passthroughPaths admit rest, the
// path after "/{provider}/".
func (g *grant) allowsPath(rest string) bool {
	return matchesAny(g.passthroughPaths, rest)
}

// canUse reports whether some single grant allows both the provider and
// the model on it (the unified routes' rule).
func (u *userRuntime) canUse(provider, model string) bool {
	for i := 0; i < len(u.grants); i++ {
		g := u.grants[i]
		if g.allowsProvider(provider) && g.allowsModel(provider, model) {
			return true
		}
	}
	return false
}

// canUseRoute applies canUse to a routed model; an alias is also usable
// through a grant whose models list names the alias itself (the grant
// must still allow the target's provider).
func (u *userRuntime) canUseRoute(route modelRoute) bool {
	if route.alias == "" {
		return u.canUse(route.provider.name, route.model)
	}
	for i := 0; i < len(u.grants); i++ {
		g := u.grants[i]
		if g.allowsProvider(route.provider.name) && (g.allowsModel(route.provider.name, route.model) || matchesAny(g.models, route.alias)) {
			return true
		}
	}
	return false
}

// passthroughGrants returns the grants that allow both the provider and
// the REST path: the only grants that may authorize a native passthrough
// request's model.
func (u *userRuntime) passthroughGrants(provider, rest string) []*grant {
	var out []*grant
	for i := 0; i < len(u.grants); i++ {
		g := u.grants[i]
		if g.allowsProvider(provider) && g.allowsPath(rest) {
			out = append(out, g)
		}
	}
	return out
}

// matchesAny is true for an empty pattern list (allow all) or when some
// pattern matches value.
func matchesAny(patterns []string, value string) bool {
	if len(patterns) == 0 {
		return true
	}
	for i := 0; i < len(patterns); i++ {
		if ok, _ := path.Match(patterns[i], value); ok {
			return true
		}
	}
	return false
}
