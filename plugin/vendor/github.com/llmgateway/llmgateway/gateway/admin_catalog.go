package gateway

import (
	"sort"
	"strings"
)

// GET /admin/api/catalog and GET /admin/api/consumers: the on-demand
// directory answers. Neither reads the counter store: catalog is the
// live registry snapshot with each model's billing price (pricer.resolve,
// what a real request is charged) beside its display metadata; consumers
// is every active user and configured group, each group's access
// resolved against the catalog with the very check requests pass
// (userRuntime.canUse). No key, digest or users-file content is in
// either: a user is its name, groups, source, personal grant and admin
// flag; the users file is its configured path.

// adminCatalogAnswer is GET /admin/api/catalog.
type adminCatalogAnswer struct {
	Providers []adminCatalogProvider `json:"providers"`
	Aliases   []adminAlias           `json:"aliases"`
}

// adminCatalogProvider is one configured provider's catalog, sorted by
// model id.
type adminCatalogProvider struct {
	Name   string              `json:"name"`
	Type   string              `json:"type"`
	Models []adminCatalogModel `json:"models"`
}

// adminCatalogModel is one model of the catalog: id is the canonical
// provider/model (what the usage routes name), model the provider's own
// id. The prices are billing's, per 1,000,000 tokens in micro-USD,
// absent when unpriced; contextWindow is the display metadata's.
// displayFree marks a ":free" id that billing has no price for (shown
// as free, billed as unpriced). aliases are the aliases with this model
// among their candidates (never null).
type adminCatalogModel struct {
	ID                    string   `json:"id"`
	Model                 string   `json:"model"`
	ContextWindow         *int64   `json:"contextWindow,omitempty"`
	InputPerMTokMicroUsd  *int64   `json:"inputPerMTokMicroUsd,omitempty"`
	OutputPerMTokMicroUsd *int64   `json:"outputPerMTokMicroUsd,omitempty"`
	PriceSource           string   `json:"priceSource"`
	DisplayFree           bool     `json:"displayFree"`
	Aliases               []string `json:"aliases"`
}

func (g *Gateway) adminCatalog() (interface{}, *apiError) {
	r := g.models()
	aliases := aliasesByCandidate(r)
	out := adminCatalogAnswer{Providers: make([]adminCatalogProvider, 0, len(r.names)), Aliases: adminAliasTable(r)}
	for i := 0; i < len(r.names); i++ {
		p := r.providers[r.names[i]]
		ids := r.models[p.name]
		entry := adminCatalogProvider{Name: p.name, Type: p.kind, Models: make([]adminCatalogModel, 0, len(ids))}
		for j := 0; j < len(ids); j++ {
			entry.Models = append(entry.Models, g.catalogModel(r, p, ids[j], aliases))
		}
		out.Providers = append(out.Providers, entry)
	}
	return out, nil
}

func (g *Gateway) catalogModel(r *modelRegistry, p *providerRuntime, model string, aliases map[string][]string) adminCatalogModel {
	id := p.name + "/" + model
	price, source := g.pricer.resolve(p.name, model)
	m := adminCatalogModel{ID: id, Model: model, PriceSource: source,
		DisplayFree: source == priceSourceUnpriced && strings.HasSuffix(model, ":free"), Aliases: aliases[id]}
	if m.Aliases == nil {
		m.Aliases = []string{}
	}
	if c := r.resolveMeta(modelRoute{provider: p, model: model}).context; c > 0 {
		m.ContextWindow = int64Ptr(c)
	}
	if source != priceSourceUnpriced {
		m.InputPerMTokMicroUsd = int64Ptr(price.inputPerMTokMicroUSD)
		m.OutputPerMTokMicroUsd = int64Ptr(price.outputPerMTokMicroUSD)
	}
	return m
}

// aliasesByCandidate maps each canonical provider/model to the aliases
// whose route reaches it (as one of its candidates), sorted.
func aliasesByCandidate(r *modelRegistry) map[string][]string {
	out := map[string][]string{}
	for i := 0; i < len(r.aliasNames); i++ {
		route, ok := r.aliasRoutes[r.aliasNames[i]]
		if !ok {
			continue
		}
		for j := 0; j < len(route.candidates); j++ {
			name := route.candidates[j].provider.name + "/" + route.candidates[j].model
			if !stringIn(out[name], r.aliasNames[i]) {
				out[name] = append(out[name], r.aliasNames[i])
			}
		}
	}
	return out
}

// adminConsumersAnswer is GET /admin/api/consumers.
type adminConsumersAnswer struct {
	Users     []adminConsumer      `json:"users"`
	Groups    []adminConsumerGroup `json:"groups"`
	UsersFile string               `json:"usersFile,omitempty"`
}

// adminConsumer is one active user: group is the primary group, groups
// every member group (primary first); providers/models its personal
// grant, absent when it has none.
type adminConsumer struct {
	Name      string   `json:"name"`
	Group     string   `json:"group"`
	Groups    []string `json:"groups"`
	Source    string   `json:"source"`
	Providers []string `json:"providers,omitempty"`
	Models    []string `json:"models,omitempty"`
	Admin     bool     `json:"admin"`
}

// adminConsumerGroup is one configured group: its access lists as
// configured (each absent when empty, i.e. unrestricted), then what they
// resolve to on the live catalog.
type adminConsumerGroup struct {
	Name             string                      `json:"name"`
	Members          int                         `json:"members"`
	Providers        []string                    `json:"providers,omitempty"`
	Models           []string                    `json:"models,omitempty"`
	McpServers       []string                    `json:"mcpServers,omitempty"`
	Agents           []string                    `json:"agents,omitempty"`
	PassthroughPaths []string                    `json:"passthroughPaths,omitempty"`
	AllowedProviders []string                    `json:"allowedProviders"`
	ModelAccess      map[string]adminModelAccess `json:"modelAccess"`
}

// adminModelAccess is how many of a provider's catalogued models a group
// may use.
type adminModelAccess struct {
	Allowed int `json:"allowed"`
	Total   int `json:"total"`
}

func (g *Gateway) adminConsumers() (interface{}, *apiError) {
	out := adminConsumersAnswer{Users: []adminConsumer{}, Groups: []adminConsumerGroup{}, UsersFile: g.cfg.usersFile}
	members := map[string]int{}
	if as := g.users.current(); as != nil {
		for i := 0; i < len(as.users); i++ {
			out.Users = append(out.Users, consumerOf(as.users[i]))
			for j := 0; j < len(as.users[i].user.groups); j++ {
				members[as.users[i].user.groups[j]]++
			}
		}
	}
	sort.Slice(out.Users, func(i, j int) bool { return out.Users[i].Name < out.Users[j].Name })
	r := g.models()
	names := sortedGroupNames(g.cfg.groups)
	for i := 0; i < len(names); i++ {
		gr := g.cfg.groups[names[i]]
		entry := adminConsumerGroup{Name: names[i], Members: members[names[i]], Providers: gr.providers, Models: gr.models,
			McpServers: gr.mcpServers, Agents: gr.agents, PassthroughPaths: gr.passthroughPaths}
		entry.AllowedProviders, entry.ModelAccess = groupAccess(r, gr)
		out.Groups = append(out.Groups, entry)
	}
	return out, nil
}

// consumerOf is a user's row; source comes from where it was compiled
// ("users.inline[i]" or "users.file[i]").
func consumerOf(cu compiledUser) adminConsumer {
	u := cu.user
	c := adminConsumer{Name: u.name, Group: u.primary.group, Groups: append([]string{}, u.groups...), Source: "inline", Admin: u.admin}
	if strings.HasPrefix(cu.field, "users.file") {
		c.Source = "file"
	}
	for i := 0; i < len(u.grants); i++ {
		if u.grants[i].personal {
			c.Providers, c.Models = u.grants[i].providers, u.grants[i].models
		}
	}
	return c
}

// groupAccess resolves a group's grant on the catalog: the providers it
// may reach at all (allowsProvider) and, per provider, how many of its
// models the request path's own check admits for a member of this group
// alone.
func groupAccess(r *modelRegistry, gr *grant) ([]string, map[string]adminModelAccess) {
	member := &userRuntime{grants: []*grant{gr}, primary: gr}
	providers := []string{}
	access := make(map[string]adminModelAccess, len(r.names))
	for i := 0; i < len(r.names); i++ {
		name := r.names[i]
		ids := r.models[name]
		a := adminModelAccess{Total: len(ids)}
		for j := 0; j < len(ids); j++ {
			if member.canUse(name, ids[j]) {
				a.Allowed++
			}
		}
		if gr.allowsProvider(name) {
			providers = append(providers, name)
		}
		access[name] = a
	}
	return providers, access
}
