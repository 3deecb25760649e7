package gateway

import (
	"context"
	"sort"
	"strings"
	"time"
)

// GET /admin/api/overview and GET /admin/api/usage: the dashboard's two
// polled answers. overview is the deployment at a glance (providers with
// their success rates and discovery health, groups, aliases, the store,
// cache and retry settings in force, identity, warnings, features and
// the catalog's price sources); usage is every user's, group's and the
// total scope's current-window counters beside their limits. Both read
// the counter store in one batched read (readCounters: a fixed number of
// keys per configured entity, not capped). overview still
// answers when that read fails — its counter fields are then absent and
// countersUnavailable is true — while usage answers 503: a table of
// zeros would read as "no traffic".

// adminOverviewAnswer is GET /admin/api/overview.
type adminOverviewAnswer struct {
	Version         string              `json:"version"`
	Replica         string              `json:"replica"`
	Instance        string              `json:"instance"`
	Providers       []adminProvider     `json:"providers"`
	Groups          []adminGroupSummary `json:"groups"`
	Aliases         []adminAlias        `json:"aliases"`
	Redis           adminRedisStatus    `json:"redis"`
	Cache           adminCacheStatus    `json:"cache"`
	Retry           adminRetryStatus    `json:"retry"`
	Features        adminFeatures       `json:"features"`
	Pricing         adminPricingCounts  `json:"pricing"`
	Warnings        []string            `json:"warnings"`
	WarningsDropped int                 `json:"warningsDropped,omitempty"`
	// CountersUnavailable: the counter read failed (the store is down);
	// every provider's
	// attempts/failures fields and modelRates are then absent.
	CountersUnavailable bool `json:"countersUnavailable,omitempty"`
}

// adminProvider is one provider of the overview. The four counters and
// modelRates are pointers: absent when the counters could not be read.
type adminProvider struct {
	Name             string                     `json:"name"`
	Type             string                     `json:"type"`
	BaseURL          string                     `json:"baseUrl"`
	ModelCount       int                        `json:"modelCount"`
	DiscoveryEnabled bool                       `json:"discoveryEnabled"`
	LastRefresh      time.Time                  `json:"lastRefresh"`
	HealthState      string                     `json:"healthState"`
	OpenUntil        time.Time                  `json:"openUntil"`
	AttemptsDay      *int64                     `json:"attemptsDay,omitempty"`
	FailuresDay      *int64                     `json:"failuresDay,omitempty"`
	AttemptsMinute   *int64                     `json:"attemptsMinute,omitempty"`
	FailuresMinute   *int64                     `json:"failuresMinute,omitempty"`
	ModelRates       *map[string]adminModelRate `json:"modelRates,omitempty"`
	ModelMeta        map[string]adminModelMeta  `json:"modelMeta"`
}

// adminModelRate is one model's success-rate counters today.
type adminModelRate struct {
	AttemptsDay int64 `json:"attemptsDay"`
	FailuresDay int64 `json:"failuresDay"`
}

// adminModelMeta is a model's resolved display metadata (resolveMeta):
// each field absent when unknown; a known zero price is shown.
type adminModelMeta struct {
	ContextWindow         *int64 `json:"contextWindow,omitempty"`
	InputPerMTokMicroUsd  *int64 `json:"inputPerMTokMicroUsd,omitempty"`
	OutputPerMTokMicroUsd *int64 `json:"outputPerMTokMicroUsd,omitempty"`
}

// adminAlias is one modelAliases entry: target is the first (priority)
// target, targets all of them; provider is the provider its first
// resolved candidate is on (absent while no target resolves).
type adminAlias struct {
	Alias     string         `json:"alias"`
	Target    string         `json:"target"`
	Targets   []string       `json:"targets"`
	Strategy  string         `json:"strategy,omitempty"`
	Weights   []int          `json:"weights,omitempty"`
	Provider  string         `json:"provider,omitempty"`
	ModelMeta adminModelMeta `json:"modelMeta"`
}

// adminGroupSummary is one configured group of the overview.
type adminGroupSummary struct {
	Name    string       `json:"name"`
	Members int          `json:"members"`
	Limits  *adminLimits `json:"limits"`
}

// adminLimits is a configured limits block (a zero field is unlimited
// and left out), costs in micro-USD like the usage counters.
type adminLimits struct {
	RequestsPerMinute    int64 `json:"requestsPerMinute,omitempty"`
	RequestsPerDay       int64 `json:"requestsPerDay,omitempty"`
	TokensPerDay         int64 `json:"tokensPerDay,omitempty"`
	TokensPerMonth       int64 `json:"tokensPerMonth,omitempty"`
	CostPerDayMicroUsd   int64 `json:"costPerDayMicroUsd,omitempty"`
	CostPerMonthMicroUsd int64 `json:"costPerMonthMicroUsd,omitempty"`
}

// adminRedisStatus: reachable is this answer's own counter read through
// Redis (absent without Redis, or when no read was made).
type adminRedisStatus struct {
	Configured bool   `json:"configured"`
	Address    string `json:"address,omitempty"`
	FailOpen   *bool  `json:"failOpen,omitempty"`
	Reachable  *bool  `json:"reachable,omitempty"`
}

type adminCacheStatus struct {
	Enabled      bool   `json:"enabled"`
	TTL          string `json:"ttl,omitempty"`
	MaxBodyBytes int64  `json:"maxBodyBytes,omitempty"`
}

// adminRetryStatus is the retry in force: attempts (retries after the
// first try) and backoff after defaulting, absent when retry is off.
type adminRetryStatus struct {
	Enabled  bool   `json:"enabled"`
	Attempts *int   `json:"attempts,omitempty"`
	Backoff  string `json:"backoff,omitempty"`
}

// adminPricingCounts counts the live catalog's ids by billing price
// source (pricer.resolve); the five sum to the catalog's size.
type adminPricingCounts struct {
	Override int `json:"override"`
	Builtin  int `json:"builtin"`
	LiteLLM  int `json:"litellm"`
	Free     int `json:"free"`
	Unpriced int `json:"unpriced"`
}

// Success-rate counter keys per provider (attempt and fail, day then
// minute) and per provider/model (attempt and fail, day).
const (
	overviewProviderKeys = 4
	overviewModelKeys    = 2
)

func (g *Gateway) adminOverview(ctx context.Context) (interface{}, *apiError) {
	r := g.models()
	out := adminOverviewAnswer{Version: Version, Replica: g.events.replica, Instance: g.events.instance,
		Groups: g.overviewGroups(), Aliases: adminAliasTable(r), Features: g.adminFeatures(),
		Pricing: g.pricingCounts(), Redis: g.redisStatus(), Cache: g.cacheStatus(), Retry: g.retryStatus()}
	out.Warnings, out.WarningsDropped = g.warnings.collected()
	out.Providers = make([]adminProvider, 0, len(r.names))
	for i := 0; i < len(r.names); i++ {
		out.Providers = append(out.Providers, g.overviewProvider(r, r.providers[r.names[i]]))
	}
	values, e := g.readCounters(ctx, overviewCounterKeys(r, g.limiter.now()))
	if g.redis != nil && (e == nil || e.Code == "store_unavailable") {
		reachable := e == nil
		out.Redis.Reachable = &reachable
	}
	if e != nil {
		out.CountersUnavailable = true
		return out, nil
	}
	at := 0
	for i := 0; i < len(out.Providers); i++ {
		p := &out.Providers[i]
		p.AttemptsDay, p.FailuresDay = int64Ptr(values[at]), int64Ptr(values[at+1])
		p.AttemptsMinute, p.FailuresMinute = int64Ptr(values[at+2]), int64Ptr(values[at+3])
		at += overviewProviderKeys
		ids := r.models[p.Name]
		rates := make(map[string]adminModelRate, len(ids))
		for j := 0; j < len(ids); j++ {
			rates[ids[j]] = adminModelRate{AttemptsDay: values[at], FailuresDay: values[at+1]}
			at += overviewModelKeys
		}
		p.ModelRates = &rates
	}
	return out, nil
}

// overviewCounterKeys are the success-rate keys the overview reads, in
// the order adminOverview consumes them.
func overviewCounterKeys(r *modelRegistry, now time.Time) []string {
	day, minute := dayWindow.bucket(now), minuteWindow.bucket(now)
	var keys []string
	for i := 0; i < len(r.names); i++ {
		p := provStatsPrefix(r.names[i])
		keys = append(keys, p+"attempt:day:"+day, p+"fail:day:"+day, p+"attempt:min:"+minute, p+"fail:min:"+minute)
		ids := r.models[r.names[i]]
		for j := 0; j < len(ids); j++ {
			m := provModelStatsPrefix(r.names[i] + "/" + ids[j])
			keys = append(keys, m+"attempt:day:"+day, m+"fail:day:"+day)
		}
	}
	return keys
}

// overviewProvider is a provider's entry without its counters.
func (g *Gateway) overviewProvider(r *modelRegistry, p *providerRuntime) adminProvider {
	ids := r.models[p.name]
	out := adminProvider{Name: p.name, Type: p.kind, BaseURL: stripURLSecrets(p.baseURL), ModelCount: len(ids),
		DiscoveryEnabled: p.discoveryInterval > 0, ModelMeta: make(map[string]adminModelMeta, len(ids))}
	out.LastRefresh, out.HealthState, out.OpenUntil = g.discovery.health(p.name)
	for j := 0; j < len(ids); j++ {
		out.ModelMeta[ids[j]] = metaAnswer(r.resolveMeta(modelRoute{provider: p, model: ids[j]}))
	}
	return out
}

// health is a provider's last successful refresh and its discovery
// breaker's state, with openUntil the zero time unless the breaker is
// open. A provider without discovery has no breaker: closed, never
// refreshed.
func (d *discoverer) health(provider string) (time.Time, string, time.Time) {
	for i := 0; i < len(d.states); i++ {
		s := d.states[i]
		if s.provider.name == provider {
			return s.health()
		}
	}
	return time.Time{}, breakerClosed, time.Time{}
}

func (s *discoveryState) health() (time.Time, string, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var until time.Time
	if s.breaker.state == breakerOpen {
		until = s.breaker.openUntil.UTC()
	}
	return s.lastSuccess.UTC(), s.breaker.state, until
}

// metaAnswer is m in the admin answers' shape.
func metaAnswer(m modelMeta) adminModelMeta {
	var out adminModelMeta
	if m.context > 0 {
		out.ContextWindow = int64Ptr(m.context)
	}
	if m.input.known {
		out.InputPerMTokMicroUsd = int64Ptr(m.input.micros)
	}
	if m.output.known {
		out.OutputPerMTokMicroUsd = int64Ptr(m.output.micros)
	}
	return out
}

func int64Ptr(v int64) *int64 { return &v }

// adminAliasTable is every configured alias, sorted by alias, with its
// resolved metadata: its route's when a target resolves, else only what
// the alias's own modelMeta entry says.
func adminAliasTable(r *modelRegistry) []adminAlias {
	out := make([]adminAlias, 0, len(r.aliasNames))
	for i := 0; i < len(r.aliasNames); i++ {
		name := r.aliasNames[i]
		spec := r.aliases[name]
		a := adminAlias{Alias: name, Target: spec.targets[0], Targets: append([]string{}, spec.targets...), Strategy: spec.strategy}
		if spec.strategy == "weighted" {
			a.Weights = append([]int{}, spec.weights...)
		}
		if route, ok := r.aliasRoutes[name]; ok {
			a.Provider = route.provider.name
			a.ModelMeta = metaAnswer(r.resolveMeta(route))
		} else {
			a.ModelMeta = metaAnswer(metaLayer(modelMeta{}, r.meta[name]))
		}
		out = append(out, a)
	}
	return out
}

// overviewGroups is every configured group, by name, with its active
// member count and limits.
func (g *Gateway) overviewGroups() []adminGroupSummary {
	members := map[string]int{}
	if as := g.users.current(); as != nil {
		for i := 0; i < len(as.users); i++ {
			groups := as.users[i].user.groups
			for j := 0; j < len(groups); j++ {
				members[groups[j]]++
			}
		}
	}
	names := sortedGroupNames(g.cfg.groups)
	out := make([]adminGroupSummary, 0, len(names))
	for i := 0; i < len(names); i++ {
		out = append(out, adminGroupSummary{Name: names[i], Members: members[names[i]], Limits: limitsAnswer(g.cfg.groups[names[i]].limits)})
	}
	return out
}

func sortedGroupNames(groups map[string]*grant) []string {
	names := make([]string, 0, len(groups))
	for name := range groups {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// limitsAnswer is l in the admin answers' shape; nil (no limits) stays nil.
func limitsAnswer(l *compiledLimits) *adminLimits {
	if l == nil {
		return nil
	}
	return &adminLimits{RequestsPerMinute: l.requestsPerMinute, RequestsPerDay: l.requestsPerDay,
		TokensPerDay: l.tokensPerDay, TokensPerMonth: l.tokensPerMonth,
		CostPerDayMicroUsd: l.costPerDayMicros, CostPerMonthMicroUsd: l.costPerMonthMicros}
}

func (g *Gateway) redisStatus() adminRedisStatus {
	rs := g.cfg.redis
	if rs == nil {
		return adminRedisStatus{}
	}
	failOpen := rs.failOpen
	return adminRedisStatus{Configured: true, Address: rs.conn.Address, FailOpen: &failOpen}
}

func (g *Gateway) cacheStatus() adminCacheStatus {
	if g.cache == nil {
		return adminCacheStatus{}
	}
	c := g.cfg.cache
	return adminCacheStatus{Enabled: true, TTL: c.ttl.String(), MaxBodyBytes: c.maxBodyBytes}
}

func (g *Gateway) retryStatus() adminRetryStatus {
	s := g.cfg.retry
	if s.retries == 0 {
		return adminRetryStatus{}
	}
	attempts := s.retries
	return adminRetryStatus{Enabled: true, Attempts: &attempts, Backoff: s.backoff.String()}
}

// pricingCounts classifies every id of the live catalog by the price
// source billing resolves it through.
func (g *Gateway) pricingCounts() adminPricingCounts {
	var out adminPricingCounts
	ids := g.catalogIDs()
	for i := 0; i < len(ids); i++ {
		k := strings.IndexByte(ids[i], '/')
		_, source := g.pricer.resolve(ids[i][:k], ids[i][k+1:])
		switch source {
		case priceSourceOverride:
			out.Override++
		case priceSourceBuiltin:
			out.Builtin++
		case priceSourceLiteLLM:
			out.LiteLLM++
		case priceSourceFree:
			out.Free++
		default:
			out.Unpriced++
		}
	}
	return out
}

// adminUsageAnswer is GET /admin/api/usage.
type adminUsageAnswer struct {
	Users  []adminUsageRow `json:"users"`
	Groups []adminUsageRow `json:"groups"`
	Total  adminUsageRow   `json:"total"`
}

// adminUsageRow is one scope's current-window counters and its limits
// (null when none). A group row also carries its access lists, each
// absent when unrestricted.
type adminUsageRow struct {
	Name                 string       `json:"name"`
	Providers            []string     `json:"providers,omitempty"`
	Models               []string     `json:"models,omitempty"`
	McpServers           []string     `json:"mcpServers,omitempty"`
	Agents               []string     `json:"agents,omitempty"`
	RequestsPerMinute    int64        `json:"requestsPerMinute"`
	RequestsPerDay       int64        `json:"requestsPerDay"`
	RejectionsPerDay     int64        `json:"rejectionsPerDay"`
	TokensInPerDay       int64        `json:"tokensInPerDay"`
	TokensOutPerDay      int64        `json:"tokensOutPerDay"`
	TokensInPerMonth     int64        `json:"tokensInPerMonth"`
	TokensOutPerMonth    int64        `json:"tokensOutPerMonth"`
	CostPerDayMicroUsd   int64        `json:"costPerDayMicroUsd"`
	CostPerMonthMicroUsd int64        `json:"costPerMonthMicroUsd"`
	LastSeen             int64        `json:"lastSeen"`
	Limits               *adminLimits `json:"limits"`
}

// usageScopeKeys is how many keys one usage row reads (usageKeys).
const usageScopeKeys = 10

// usageKeys are one scope's keys, in the order fillUsage reads them.
func usageKeys(keys []string, kind, id string, now time.Time) []string {
	p := scopePrefix(kind, id)
	minute, day, month := minuteWindow.bucket(now), dayWindow.bucket(now), monthWindow.bucket(now)
	return append(keys, p+"req:min:"+minute, p+"req:day:"+day, p+"rej:day:"+day,
		p+"tokin:day:"+day, p+"tokout:day:"+day, p+"tokin:month:"+month, p+"tokout:month:"+month,
		p+"cost:day:"+day, p+"cost:month:"+month, p+"seen")
}

// fillUsage sets row's counters from v (usageKeys' order).
func fillUsage(row *adminUsageRow, v []int64) {
	row.RequestsPerMinute, row.RequestsPerDay, row.RejectionsPerDay = v[0], v[1], v[2]
	row.TokensInPerDay, row.TokensOutPerDay = v[3], v[4]
	row.TokensInPerMonth, row.TokensOutPerMonth = v[5], v[6]
	row.CostPerDayMicroUsd, row.CostPerMonthMicroUsd = v[7], v[8]
	row.LastSeen = v[9]
}

func (g *Gateway) adminUsage(ctx context.Context) (interface{}, *apiError) {
	now := g.limiter.now()
	out := adminUsageAnswer{Users: []adminUsageRow{}, Groups: []adminUsageRow{}, Total: adminUsageRow{Name: "total"}}
	var keys []string
	if as := g.users.current(); as != nil {
		users := make([]*userRuntime, 0, len(as.users))
		for i := 0; i < len(as.users); i++ {
			users = append(users, as.users[i].user)
		}
		sort.Slice(users, func(i, j int) bool { return users[i].name < users[j].name })
		for i := 0; i < len(users); i++ {
			out.Users = append(out.Users, adminUsageRow{Name: users[i].name, Limits: limitsAnswer(users[i].scopes[0].limits)})
			keys = usageKeys(keys, "user", users[i].name, now)
		}
	}
	names := sortedGroupNames(g.cfg.groups)
	for i := 0; i < len(names); i++ {
		gr := g.cfg.groups[names[i]]
		out.Groups = append(out.Groups, adminUsageRow{Name: names[i], Providers: gr.providers, Models: gr.models,
			McpServers: gr.mcpServers, Agents: gr.agents, Limits: limitsAnswer(gr.limits)})
		keys = usageKeys(keys, "group", names[i], now)
	}
	keys = usageKeys(keys, "total", "all", now)
	values, e := g.readCounters(ctx, keys)
	if e != nil {
		return nil, e
	}
	at := 0
	for i := 0; i < len(out.Users); i++ {
		fillUsage(&out.Users[i], values[at:at+usageScopeKeys])
		at += usageScopeKeys
	}
	for i := 0; i < len(out.Groups); i++ {
		fillUsage(&out.Groups[i], values[at:at+usageScopeKeys])
		at += usageScopeKeys
	}
	fillUsage(&out.Total, values[at:at+usageScopeKeys])
	return out, nil
}
