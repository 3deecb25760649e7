package gateway

import (
	"context"
	"net/url"
	"sort"
	"strings"
	"time"
)

// GET /admin/api/usage/totals: the entities of one kind ranked by their
// totals over a span of window buckets.
//
//	user         users (group= narrows to one group's members): the
//	             limits' own llmgw:user counters
//	group        configured groups: llmgw:group counters
//	usermodel    one user's models (user=): the umodel family
//	modeluser    one model's users (model=): the umodel family
//	targetcaller MCP servers and A2A agents × their callers (ids
//	             mcp/{target}/{caller}, agent/{target}/{caller}): the
//	             llmgw:tcaller counters; target= (mcp/{name} or
//	             agent/{name}, a configured one: else 404) narrows to one
//	             target, omitted every configured target × every active
//	             user (capped by adminMaxKeysPerRequest like every
//	             parameterized read).
//
// usermodel and modeluser need admin.stats.userModel: off, they are a
// 404, decided only once every other parameter is known valid (an
// unknown user or model is its own 404 first).

// errUserModelOff is the 404 of the per-user-model kinds while
// admin.stats.userModel is off.
func errUserModelOff() *apiError {
	return errStatsOff("per-user-model statistics are not enabled (admin.stats.userModel)")
}

// adminTotalsAnswer is the usage/totals answer.
type adminTotalsAnswer struct {
	Kind      string           `json:"kind"`
	Window    string           `json:"window"`
	Span      int              `json:"span"`
	Offset    int              `json:"offset"`
	Metrics   []string         `json:"metrics"`
	Rows      []adminTotalsRow `json:"rows"`
	Truncated bool             `json:"truncated"`
}

// adminTotalsRow is one entity's totals, one per requested metric.
type adminTotalsRow struct {
	ID     string           `json:"id"`
	Values map[string]int64 `json:"values"`
}

// totalsRequest is a usage/totals request, validated.
type totalsRequest struct {
	kind    string
	w       *window
	span    int
	offset  int
	metrics []string
	limit   int
	group   string
	user    string
	model   string
	target  *targetRuntime // targetcaller's target=; nil: every target
}

// totalsKindWindows and totalsKindMetrics are what each kind accepts.
func totalsKindWindows(kind string) []string {
	if kind == "user" || kind == "group" {
		return []string{"hour", "day", "month"}
	}
	return []string{"day", "month"}
}

func totalsKindMetrics(kind string) []string {
	if kind == "targetcaller" {
		return []string{"req"}
	}
	return usageMetrics
}

// queryMetricList parses metrics: a comma list from allowed, each at
// most once; empty is every allowed metric.
func queryMetricList(q url.Values, allowed []string) ([]string, *apiError) {
	v, e := queryOne(q, "metrics")
	if e != nil {
		return nil, e
	}
	if v == "" {
		return append([]string{}, allowed...), nil
	}
	parts := strings.Split(v, ",")
	seen := map[string]bool{}
	for i := 0; i < len(parts); i++ {
		m := parts[i]
		if seen[m] {
			return nil, errAdminParam("metrics", v, "names "+m+" more than once")
		}
		seen[m] = true
		ok := false
		for j := 0; j < len(allowed); j++ {
			ok = ok || allowed[j] == m
		}
		if !ok {
			return nil, errAdminParam("metrics", v, "entries must be from "+strings.Join(allowed, ", "))
		}
	}
	return parts, nil
}

// queryOnlyFor parses a parameter that only kind (the request's kind is
// given) takes: given with another kind it is a 400.
func queryOnlyFor(q url.Values, name, only, kind string) (string, *apiError) {
	v, e := queryOne(q, name)
	if e != nil {
		return "", e
	}
	if v != "" && kind != only {
		return "", errAdminParam(name, v, "applies only to kind="+only)
	}
	return v, nil
}

// parseTotals validates every parameter of a usage/totals request, the
// entities it names included (unknown: 404); the userModel feature gate
// is the caller's, after it.
func (g *Gateway) parseTotals(q url.Values) (*totalsRequest, *apiError) {
	kind, e := queryOne(q, "kind")
	if e != nil {
		return nil, e
	}
	switch kind {
	case "user", "group", "usermodel", "modeluser", "targetcaller":
	default:
		return nil, errAdminParam("kind", kind, "must be one of user, group, usermodel, modeluser, targetcaller")
	}
	w, e := queryWindow(q, "day", totalsKindWindows(kind)...)
	if e != nil {
		return nil, e
	}
	span, offset, e := querySpanOffset(q, w, 1)
	if e != nil {
		return nil, e
	}
	metrics, e := queryMetricList(q, totalsKindMetrics(kind))
	if e != nil {
		return nil, e
	}
	limit, e := queryInt(q, "limit", 200, 1, 1000)
	if e != nil {
		return nil, e
	}
	r := &totalsRequest{kind: kind, w: w, span: span, offset: offset, metrics: metrics, limit: limit}
	if r.group, e = queryOnlyFor(q, "group", "user", kind); e != nil {
		return nil, e
	}
	if r.user, e = queryOnlyFor(q, "user", "usermodel", kind); e != nil {
		return nil, e
	}
	if r.model, e = queryOnlyFor(q, "model", "modeluser", kind); e != nil {
		return nil, e
	}
	target, e := queryOnlyFor(q, "target", "targetcaller", kind)
	if e != nil {
		return nil, e
	}
	if kind == "usermodel" && r.user == "" {
		return nil, errAdminParam("user", "", "is required with kind=usermodel")
	}
	if kind == "modeluser" && r.model == "" {
		return nil, errAdminParam("model", "", "is required with kind=modeluser")
	}
	if target != "" && !validTargetName(target) {
		return nil, errAdminParam("target", target, "must be mcp/{name} or agent/{name}")
	}
	if target != "" {
		kind, name := splitTargetParam(target)
		if r.target = g.target(kind, name); r.target == nil {
			what := "MCP server "
			if kind == targetAgent {
				what = "agent "
			}
			return nil, errAdminNotFound(what + quoteID(name) + " is not configured")
		}
	}
	if r.group != "" && g.cfg.groups[r.group] == nil {
		return nil, errAdminNotFound("group " + quoteID(r.group) + " is not configured")
	}
	if r.user != "" && g.adminUser(r.user) == nil {
		return nil, errAdminNotFound("user " + quoteID(r.user) + " is not an active user")
	}
	if r.model != "" && !g.inCatalog(r.model) {
		return nil, errAdminNotFound("model " + quoteID(r.model) + " is not in the catalog (ids are canonical provider/model)")
	}
	return r, nil
}

// quoteID quotes an id for a message.
func quoteID(id string) string { return "\"" + strings.ReplaceAll(id, "\"", "\\\"") + "\"" }

// splitTargetParam splits a valid target= value into its kind and name.
func splitTargetParam(v string) (string, string) {
	i := strings.IndexByte(v, '/')
	return v[:i], v[i+1:]
}

// targetCallerRows are targetcaller's ids and key prefixes: t's (or,
// t nil, every configured target's) callers among the active users.
func (g *Gateway) targetCallerRows(t *targetRuntime) ([]string, []string) {
	var targets []*targetRuntime
	if t != nil {
		targets = append(targets, t)
	} else {
		for _, kind := range []string{targetMCP, targetAgent} {
			names := g.targetNames(kind)
			for i := 0; i < len(names); i++ {
				targets = append(targets, g.target(kind, names[i]))
			}
		}
	}
	users := g.adminUserNames("")
	ids := make([]string, 0, len(targets)*len(users))
	prefixes := make([]string, 0, len(targets)*len(users))
	for i := 0; i < len(targets); i++ {
		for j := 0; j < len(users); j++ {
			ids = append(ids, targets[i].kind+"/"+targets[i].name+"/"+users[j])
			prefixes = append(prefixes, targetCallerPrefix(targets[i], users[j]))
		}
	}
	return ids, prefixes
}

// validTargetName reports whether t is mcp/{name} or agent/{name}.
func validTargetName(t string) bool {
	for _, p := range []string{"mcp/", "agent/"} {
		if strings.HasPrefix(t, p) && len(t) > len(p) && !strings.Contains(t[len(p):], "/") {
			return true
		}
	}
	return false
}

func (g *Gateway) adminUsageTotals(ctx context.Context, q url.Values) (interface{}, *apiError) {
	r, e := g.parseTotals(q)
	if e != nil {
		return nil, e
	}
	if (r.kind == "usermodel" || r.kind == "modeluser") && !g.cfg.admin.userModel {
		return nil, errUserModelOff()
	}
	var ids, prefixes []string
	switch r.kind {
	case "user":
		ids = g.adminUserNames(r.group)
		prefixes = scopePrefixes("user", ids)
	case "group":
		ids = g.groupNames()
		prefixes = scopePrefixes("group", ids)
	case "usermodel":
		if ids, e = g.modelsWithRecentUse(ctx, r); e != nil {
			return nil, e
		}
		for i := 0; i < len(ids); i++ {
			prefixes = append(prefixes, userModelStatsPrefix(r.user, ids[i]))
		}
	case "modeluser":
		ids = g.adminUserNames("")
		for i := 0; i < len(ids); i++ {
			prefixes = append(prefixes, userModelStatsPrefix(ids[i], r.model))
		}
	case "targetcaller":
		ids, prefixes = g.targetCallerRows(r.target)
	}
	rows, e := g.readTotals(ctx, r, ids, prefixes)
	if e != nil {
		return nil, e
	}
	first := r.metrics[0]
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i].Values[first], rows[j].Values[first]
		if a != b {
			return a > b
		}
		return rows[i].ID < rows[j].ID
	})
	out := adminTotalsAnswer{Kind: r.kind, Window: r.w.name, Span: r.span, Offset: r.offset, Metrics: r.metrics, Rows: rows}
	if len(rows) > r.limit {
		out.Rows = rows[:r.limit]
		out.Truncated = true
	}
	return out, nil
}

// readTotals reads every requested metric over the span for each
// entity (ids[i] with key prefix prefixes[i]) and keeps the rows with
// any non-zero value; never nil.
func (g *Gateway) readTotals(ctx context.Context, r *totalsRequest, ids, prefixes []string) ([]adminTotalsRow, *apiError) {
	labels := bucketLabels(r.w, g.limiter.now(), r.span, r.offset)
	per := len(r.metrics) * len(labels)
	keys := make([]string, 0, len(ids)*per)
	for i := 0; i < len(prefixes); i++ {
		for m := 0; m < len(r.metrics); m++ {
			for j := 0; j < len(labels); j++ {
				keys = append(keys, statsKey(prefixes[i], r.metrics[m], r.w, labels[j]))
			}
		}
	}
	values, e := g.adminRead(ctx, keys)
	if e != nil {
		return nil, e
	}
	rows := []adminTotalsRow{}
	for i := 0; i < len(ids); i++ {
		row := adminTotalsRow{ID: ids[i], Values: make(map[string]int64, len(r.metrics))}
		nonZero := false
		for m := 0; m < len(r.metrics); m++ {
			at := i*per + m*len(labels)
			v := sumValues(values[at : at+len(labels)])
			row.Values[r.metrics[m]] = v
			nonZero = nonZero || v != 0
		}
		if nonZero {
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// modelsWithRecentUse is the catalog narrowed, in one read of the model
// request counters over the month buckets covering the request's span,
// to the models anyone used then: the only models the user's own
// counters can be non-zero for.
func (g *Gateway) modelsWithRecentUse(ctx context.Context, r *totalsRequest) ([]string, *apiError) {
	months := coveringMonths(bucketTimes(r.w, g.limiter.now(), r.span, r.offset))
	ids := g.catalogIDs()
	keys := make([]string, 0, len(ids)*len(months))
	for i := 0; i < len(ids); i++ {
		p := modelStatsPrefix(ids[i])
		for j := 0; j < len(months); j++ {
			keys = append(keys, statsKey(p, "req", monthWindow, months[j]))
		}
	}
	values, e := g.adminRead(ctx, keys)
	if e != nil {
		return nil, e
	}
	var out []string
	for i := 0; i < len(ids); i++ {
		if sumValues(values[i*len(months):(i+1)*len(months)]) != 0 {
			out = append(out, ids[i])
		}
	}
	return out, nil
}

// coveringMonths are the month buckets holding the bucket starts t
// (oldest first, each once).
func coveringMonths(t []time.Time) []string {
	var out []string
	for i := 0; i < len(t); i++ {
		m := monthWindow.bucket(t[i])
		if len(out) == 0 || out[len(out)-1] != m {
			out = append(out, m)
		}
	}
	return out
}

// scopePrefixes are the key prefixes of kind's scopes ids.
func scopePrefixes(kind string, ids []string) []string {
	out := make([]string, len(ids))
	for i := 0; i < len(ids); i++ {
		out[i] = scopePrefix(kind, ids[i])
	}
	return out
}

// adminUserNames are the active users' names, sorted, each once; with
// group, only that group's members.
func (g *Gateway) adminUserNames(group string) []string {
	as := g.users.current()
	var out []string
	if as == nil {
		return out
	}
	seen := map[string]bool{}
	for i := 0; i < len(as.users); i++ {
		u := as.users[i].user
		if seen[u.name] || group != "" && !memberOf(u, group) {
			continue
		}
		seen[u.name] = true
		out = append(out, u.name)
	}
	sort.Strings(out)
	return out
}

// memberOf reports whether u belongs to group.
func memberOf(u *userRuntime, group string) bool {
	for i := 0; i < len(u.groups); i++ {
		if u.groups[i] == group {
			return true
		}
	}
	return false
}

// groupNames are the configured groups' names, sorted.
func (g *Gateway) groupNames() []string {
	out := make([]string, 0, len(g.cfg.groups))
	for name := range g.cfg.groups {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}
