package gateway

import (
	"context"
	"net/url"
	"strconv"
	"strings"
)

// The usage time series: GET /admin/api/usage/history (one scope, one
// metric, {bucket, value} points) and GET /admin/api/usage/series (up to
// 100 scopes in one read, plain values aligned with shared bucket
// labels). Both read only counter families stats.go says are written,
// in the windows they are written in, and answer a 503 rather than zeros
// when the store is unreachable.

// maxSeriesScopes is the most scopes one series read may name.
const maxSeriesScopes = 100

// adminHistoryAnswer is usage/history's answer.
type adminHistoryAnswer struct {
	Scope  string         `json:"scope"`
	Metric string         `json:"metric"`
	Window string         `json:"window"`
	Points []historyPoint `json:"points"`
}

// historyPoint is one bucket of a history.
type historyPoint struct {
	Bucket string `json:"bucket"`
	Value  int64  `json:"value"`
}

// adminHistory is GET /admin/api/usage/history?scope=&metric=&window=
// [&span=]: span buckets (default and most: the window's retention)
// ending at the current one, oldest first. A malformed parameter is a
// 400; a user, group or model that does not exist a 404.
func (g *Gateway) adminHistory(ctx context.Context, q url.Values) (interface{}, *apiError) {
	scope, e := queryOne(q, "scope")
	if e != nil {
		return nil, e
	}
	kind, id, ok := parseScope(scope)
	if !ok || kind == "provider" || kind == "provmodel" || kind == "model" && !isCanonicalID(id) {
		return nil, errAdminParam("scope", scope, "must be user:{id}, group:{id}, model:{provider}/{model} or total")
	}
	metric, e := queryMetric(q, usageMetrics...)
	if e != nil {
		return nil, e
	}
	w, e := queryWindow(q, "", "hour", "day", "month")
	if e != nil {
		return nil, e
	}
	max := windowMaxSpan(w)
	span, e := queryInt(q, "span", max, 1, max)
	if e != nil {
		return nil, e
	}
	if !g.scopeExists(kind, id) {
		return nil, errAdminNotFound("scope " + strconv.Quote(scope) + " names " + scopeNotFoundWhat(kind))
	}
	now := g.limiter.now()
	labels := bucketLabels(w, now, span, 0)
	prefix := seriesPrefix(kind, id)
	keys := make([]string, len(labels))
	for i := 0; i < len(labels); i++ {
		keys[i] = statsKey(prefix, metric, w, labels[i])
	}
	values, e := g.adminRead(ctx, keys)
	if e != nil {
		return nil, e
	}
	out := adminHistoryAnswer{Scope: scope, Metric: metric, Window: w.name, Points: make([]historyPoint, len(labels))}
	for i := 0; i < len(labels); i++ {
		out.Points[i] = historyPoint{Bucket: labels[i], Value: values[i]}
	}
	return out, nil
}

// isCanonicalID reports whether id has the provider/model form.
func isCanonicalID(id string) bool {
	i := strings.IndexByte(id, '/')
	return i > 0 && i < len(id)-1
}

// scopeNotFoundWhat ends the 404 of a scope that names nothing.
func scopeNotFoundWhat(kind string) string {
	if kind == "model" {
		return "no model of the live catalog"
	}
	return "no configured " + kind
}

// parseScope splits a scope parameter into its kind and id: "total"
// (id "all"), or kind:id with a non-empty id and a kind of user, group,
// model, provider or provmodel. ok is false for anything else.
func parseScope(scope string) (string, string, bool) {
	if scope == "total" {
		return "total", "all", true
	}
	i := strings.IndexByte(scope, ':')
	if i <= 0 || i == len(scope)-1 {
		return "", "", false
	}
	kind, id := scope[:i], scope[i+1:]
	switch kind {
	case "user", "group", "model", "provider", "provmodel":
		return kind, id, true
	}
	return "", "", false
}

// scopeExists reports whether a parsed scope names a live entity: an
// active user, a configured group or provider, a provider/model of the
// live catalog.
func (g *Gateway) scopeExists(kind, id string) bool {
	switch kind {
	case "total":
		return true
	case "user":
		return g.adminUser(id) != nil
	case "group":
		return g.cfg.groups[id] != nil
	case "provider":
		return g.cfg.providers[id] != nil
	case "model", "provmodel":
		return g.inCatalog(id)
	}
	return false
}

// seriesPrefix is the counter key prefix of a parsed scope.
func seriesPrefix(kind, id string) string {
	switch kind {
	case "model":
		return modelStatsPrefix(id)
	case "provider":
		return provStatsPrefix(id)
	case "provmodel":
		return provModelStatsPrefix(id)
	}
	return scopePrefix(kind, id)
}

// seriesMetric is one metric a scope kind's counters keep, and the
// windows they keep it in (stats.go's key families).
type seriesMetric struct {
	name    string
	windows []string
}

var (
	anyWindow     = []string{"hour", "day", "month"}
	hourDayWindow = []string{"hour", "day"}
	dayOnlyWindow = []string{"day"}
)

// withUsageMetrics is req, tokin, tokout and cost in every window, then
// extra.
func withUsageMetrics(extra ...seriesMetric) []seriesMetric {
	out := []seriesMetric{{"req", anyWindow}, {"tokin", anyWindow}, {"tokout", anyWindow}, {"cost", anyWindow}}
	return append(out, extra...)
}

// seriesMetrics is the metric set of each scope kind of usage/series.
// The model family keeps r402 hourly too, but the series vocabulary
// offers it by day only.
var seriesMetrics = map[string][]seriesMetric{
	"user":  withUsageMetrics(seriesMetric{"rej", hourDayWindow}),
	"group": withUsageMetrics(seriesMetric{"rej", hourDayWindow}),
	"total": withUsageMetrics(seriesMetric{"rej", hourDayWindow}, seriesMetric{"chit", hourDayWindow},
		seriesMetric{"cmiss", hourDayWindow}, seriesMetric{"csave", hourDayWindow}, seriesMetric{"r402", hourDayWindow}),
	"model": withUsageMetrics(seriesMetric{"chit", dayOnlyWindow}, seriesMetric{"csave", dayOnlyWindow},
		seriesMetric{"r402", dayOnlyWindow}),
	"provider":  {{"attempt", hourDayWindow}, {"fail", hourDayWindow}, {"timeout", hourDayWindow}, {"fover", hourDayWindow}},
	"provmodel": {{"attempt", hourDayWindow}, {"fail", hourDayWindow}},
}

// seriesMetricNames is every metric of any scope kind, in a stable
// order (for the 400 of a metric no kind keeps).
var seriesMetricNames = []string{"req", "tokin", "tokout", "cost", "rej", "chit", "cmiss", "csave", "r402", "attempt", "fail", "timeout", "fover"}

// kindMetric is the entry of metric in kind's set, or nil.
func kindMetric(kind, metric string) *seriesMetric {
	set := seriesMetrics[kind]
	for i := 0; i < len(set); i++ {
		if set[i].name == metric {
			return &set[i]
		}
	}
	return nil
}

func metricNames(set []seriesMetric) string {
	names := make([]string, len(set))
	for i := 0; i < len(set); i++ {
		names[i] = set[i].name
	}
	return strings.Join(names, ", ")
}

// adminSeriesAnswer is usage/series' answer. Each series' points are
// plain values, one per entry of buckets.
type adminSeriesAnswer struct {
	Metric  string        `json:"metric"`
	Window  string        `json:"window"`
	Span    int           `json:"span"`
	Offset  int           `json:"offset"`
	Buckets []string      `json:"buckets"`
	Series  []scopeSeries `json:"series"`
	Unknown []string      `json:"unknown"`
}

// scopeSeries is one scope's values, aligned with the answer's buckets.
type scopeSeries struct {
	Scope  string  `json:"scope"`
	Points []int64 `json:"points"`
}

// seriesScope is one scope of a series request; kind is empty when the
// scope is not recognized.
type seriesScope struct {
	raw, kind, id string
}

// adminSeries is GET /admin/api/usage/series?scope=...&metric=&window=
// [&span=&offset=]. A scope that does not parse, or names nothing that
// exists, is listed in unknown; a metric (or window) that the kind of
// any recognized scope does not keep is a 400, so one request's scopes
// must share a metric. A repeated scope is answered once.
func (g *Gateway) adminSeries(ctx context.Context, q url.Values) (interface{}, *apiError) {
	raw := q["scope"]
	if len(raw) == 0 {
		return nil, errAdminParam("scope", "", "is required (1 to "+strconv.Itoa(maxSeriesScopes)+" of them)")
	}
	if len(raw) > maxSeriesScopes {
		return nil, errAdminParam("scope", strconv.Itoa(len(raw))+" scopes", "is more than "+strconv.Itoa(maxSeriesScopes))
	}
	metric, e := queryMetric(q, seriesMetricNames...)
	if e != nil {
		return nil, e
	}
	w, e := queryWindow(q, "", "hour", "day", "month")
	if e != nil {
		return nil, e
	}
	span, offset, e := querySpanOffset(q, w, 1)
	if e != nil {
		return nil, e
	}
	scopes, e := seriesScopes(raw, metric, w)
	if e != nil {
		return nil, e
	}
	var live []seriesScope
	unknown := []string{}
	for i := 0; i < len(scopes); i++ {
		if scopes[i].kind != "" && g.scopeExists(scopes[i].kind, scopes[i].id) {
			live = append(live, scopes[i])
		} else {
			unknown = append(unknown, scopes[i].raw)
		}
	}
	labels := bucketLabels(w, g.limiter.now(), span, offset)
	keys := make([]string, 0, len(live)*len(labels))
	for i := 0; i < len(live); i++ {
		prefix := seriesPrefix(live[i].kind, live[i].id)
		for j := 0; j < len(labels); j++ {
			keys = append(keys, statsKey(prefix, metric, w, labels[j]))
		}
	}
	values, e := g.adminRead(ctx, keys)
	if e != nil {
		return nil, e
	}
	out := adminSeriesAnswer{Metric: metric, Window: w.name, Span: span, Offset: offset, Buckets: labels,
		Series: make([]scopeSeries, len(live)), Unknown: unknown}
	for i := 0; i < len(live); i++ {
		out.Series[i] = scopeSeries{Scope: live[i].raw, Points: values[i*len(labels) : (i+1)*len(labels)]}
	}
	return out, nil
}

// seriesScopes parses raw, in order and without repeats; an
// unrecognized scope has no kind. Every recognized scope's kind must
// keep metric in window w, else the answer is a 400.
func seriesScopes(raw []string, metric string, w *window) ([]seriesScope, *apiError) {
	var scopes []seriesScope
	seen := map[string]bool{}
	for i := 0; i < len(raw); i++ {
		s := raw[i]
		if seen[s] {
			continue
		}
		seen[s] = true
		kind, id, ok := parseScope(s)
		if !ok {
			scopes = append(scopes, seriesScope{raw: s})
			continue
		}
		m := kindMetric(kind, metric)
		if m == nil {
			return nil, errAdminParam("metric", metric, "is an unknown metric for scope kind "+kind+
				" (scope "+strconv.Quote(s)+"; "+kind+" keeps "+metricNames(seriesMetrics[kind])+")")
		}
		if !hasString(m.windows, w.name) {
			return nil, errAdminParam("window", w.name, "is not kept for metric "+metric+" of scope kind "+kind+
				" (scope "+strconv.Quote(s)+"; it is kept by "+strings.Join(m.windows, ", ")+")")
		}
		scopes = append(scopes, seriesScope{raw: s, kind: kind, id: id})
	}
	return scopes, nil
}

func hasString(list []string, s string) bool {
	for i := 0; i < len(list); i++ {
		if list[i] == s {
			return true
		}
	}
	return false
}
