package gateway

import "path"

// A request is authorized by one single grant (a member group's own
// access lists), never by a provider from one grant combined with a
// model from another.

// allowsProvider reports whether the group's provider list admits name.
func (g *groupRuntime) allowsProvider(name string) bool {
	return matchesAny(g.providers, name)
}

// allowsModel reports whether the group's model list admits the model,
// checking both its bare and its "provider/model" form.
func (g *groupRuntime) allowsModel(provider, model string) bool {
	if len(g.models) == 0 {
		return true
	}
	return matchesAny(g.models, model) || matchesAny(g.models, provider+"/"+model)
}

// canUse reports whether some single member group allows both the
// provider and the model on it.
func (u *userRuntime) canUse(provider, model string) bool {
	for i := 0; i < len(u.groups); i++ {
		g := u.groups[i]
		if g.allowsProvider(provider) && g.allowsModel(provider, model) {
			return true
		}
	}
	return false
}

// providerGrants returns the member groups that allow the provider.
func (u *userRuntime) providerGrants(provider string) []*groupRuntime {
	var out []*groupRuntime
	for i := 0; i < len(u.groups); i++ {
		if u.groups[i].allowsProvider(provider) {
			out = append(out, u.groups[i])
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
