package gateway

import (
	"context"
	"net/url"
	"sort"
	"strings"
)

// GET /admin/api/usage/models: the catalog's models ranked by one usage
// metric summed over a span of window buckets. Only models with usage
// are listed; detail=1 adds every usage total, the price source, the
// unpriced refusals and (with the response cache, day or month) the
// cache figures.

// usageModelsMaxPrefix is the longest prefix parameter, in bytes.
const usageModelsMaxPrefix = 256

// usageMetrics are the per-model (and per-scope) usage metrics, in the
// order detail mode reads them.
var usageMetrics = []string{"req", "tokin", "tokout", "cost"}

// adminModelsAnswer is the usage/models answer. Models holds
// []adminModelRow, or []adminModelDetail with detail=1; never null.
type adminModelsAnswer struct {
	Metric string      `json:"metric"`
	Window string      `json:"window"`
	Span   int         `json:"span"`
	Offset int         `json:"offset"`
	Models interface{} `json:"models"`
}

// adminModelRow is one ranked model.
type adminModelRow struct {
	ID    string `json:"id"`
	Value int64  `json:"value"`
}

// adminModelDetail is one ranked model with detail=1. CacheHits and
// CacheSavedMicroUsd are present only with the response cache and a day
// or month window (a model's cache counters have day buckets only).
type adminModelDetail struct {
	ID                 string `json:"id"`
	Value              int64  `json:"value"`
	Requests           int64  `json:"requests"`
	TokensIn           int64  `json:"tokensIn"`
	TokensOut          int64  `json:"tokensOut"`
	CostMicroUsd       int64  `json:"costMicroUsd"`
	Free               bool   `json:"free"`
	PriceSource        string `json:"priceSource"`
	R402               int64  `json:"r402"`
	CacheHits          *int64 `json:"cacheHits,omitempty"`
	CacheSavedMicroUsd *int64 `json:"cacheSavedMicroUsd,omitempty"`
}

// modelUsage is one model's sums while ranking.
type modelUsage struct {
	id     string
	value  int64
	totals [4]int64 // usageMetrics order
	r402   int64
	chit   int64
	csave  int64
}

// queryDetail parses detail: "", "0", "false" off; "1", "true" on.
func queryDetail(q url.Values) (bool, *apiError) {
	v, e := queryOne(q, "detail")
	if e != nil {
		return false, e
	}
	switch v {
	case "", "0", "false":
		return false, nil
	case "1", "true":
		return true, nil
	}
	return false, errAdminParam("detail", v, "must be 1, true, 0 or false")
}

// queryPrefix parses the catalog prefix (at most usageModelsMaxPrefix
// bytes; the message quotes its start only).
func queryPrefix(q url.Values) (string, *apiError) {
	v, e := queryOne(q, "prefix")
	if e != nil {
		return "", e
	}
	if len(v) > usageModelsMaxPrefix {
		return "", errAdminParam("prefix", v[:32]+"...", "is longer than 256 bytes")
	}
	return v, nil
}

// catalogWithPrefix is catalogIDs narrowed to the ids starting with
// prefix.
func (g *Gateway) catalogWithPrefix(prefix string) []string {
	ids := g.catalogIDs()
	if prefix == "" {
		return ids
	}
	out := make([]string, 0, len(ids))
	for i := 0; i < len(ids); i++ {
		if strings.HasPrefix(ids[i], prefix) {
			out = append(out, ids[i])
		}
	}
	return out
}

func (g *Gateway) adminUsageModels(ctx context.Context, q url.Values) (interface{}, *apiError) {
	metric, e := queryMetric(q, usageMetrics...)
	if e != nil {
		return nil, e
	}
	w, e := queryWindow(q, "", "hour", "day", "month")
	if e != nil {
		return nil, e
	}
	limit, e := queryInt(q, "limit", 20, 1, 100)
	if e != nil {
		return nil, e
	}
	span, offset, e := querySpanOffset(q, w, 1)
	if e != nil {
		return nil, e
	}
	prefix, e := queryPrefix(q)
	if e != nil {
		return nil, e
	}
	detail, e := queryDetail(q)
	if e != nil {
		return nil, e
	}
	ids := g.catalogWithPrefix(prefix)
	var usage []modelUsage
	if detail {
		usage, e = g.readModelDetail(ctx, ids, w, span, offset)
	} else {
		usage, e = g.readModelMetric(ctx, ids, metric, w, span, offset)
	}
	if e != nil {
		return nil, e
	}
	out := adminModelsAnswer{Metric: metric, Window: w.name, Span: span, Offset: offset}
	if !detail {
		rankModels(usage, false)
		if len(usage) > limit {
			usage = usage[:limit]
		}
		rows := make([]adminModelRow, len(usage))
		for i := 0; i < len(usage); i++ {
			rows[i] = adminModelRow{ID: usage[i].id, Value: usage[i].value}
		}
		out.Models = rows
		return out, nil
	}
	m := metricIndex(metric)
	for i := 0; i < len(usage); i++ {
		usage[i].value = usage[i].totals[m]
	}
	rankModels(usage, true)
	if len(usage) > limit {
		usage = usage[:limit]
	}
	cache := g.cache != nil && w != hourWindow
	rows := make([]adminModelDetail, len(usage))
	for i := 0; i < len(usage); i++ {
		rows[i] = g.modelDetailRow(&usage[i], cache)
	}
	out.Models = rows
	return out, nil
}

// metricIndex is metric's index in usageMetrics.
func metricIndex(metric string) int {
	for i := 0; i < len(usageMetrics); i++ {
		if usageMetrics[i] == metric {
			return i
		}
	}
	return 0
}

// rankModels sorts by value descending; in detail mode ties break on
// requests descending, then (always) on id ascending.
func rankModels(usage []modelUsage, detail bool) {
	sort.Slice(usage, func(i, j int) bool {
		a, b := &usage[i], &usage[j]
		if a.value != b.value {
			return a.value > b.value
		}
		if detail && a.totals[0] != b.totals[0] {
			return a.totals[0] > b.totals[0]
		}
		return a.id < b.id
	})
}

// readModelMetric sums one metric over the span for every id, keeping
// the non-zero ones.
func (g *Gateway) readModelMetric(ctx context.Context, ids []string, metric string, w *window, span, offset int) ([]modelUsage, *apiError) {
	labels := bucketLabels(w, g.limiter.now(), span, offset)
	keys := make([]string, 0, len(ids)*len(labels))
	for i := 0; i < len(ids); i++ {
		p := modelStatsPrefix(ids[i])
		for j := 0; j < len(labels); j++ {
			keys = append(keys, statsKey(p, metric, w, labels[j]))
		}
	}
	values, e := g.adminRead(ctx, keys)
	if e != nil {
		return nil, e
	}
	var out []modelUsage
	for i := 0; i < len(ids); i++ {
		v := sumValues(values[i*len(labels) : (i+1)*len(labels)])
		if v != 0 {
			out = append(out, modelUsage{id: ids[i], value: v})
		}
	}
	return out, nil
}

// sumValues is the sum of values.
func sumValues(values []int64) int64 {
	var n int64
	for i := 0; i < len(values); i++ {
		n += values[i]
	}
	return n
}

// readModelDetail reads, in one bounded read, every usage total over the
// span, the r402 counters (hour and day buckets exist; a month converts
// to its covering days) and, with the response cache on a day or month
// window, the day-only cache counters, for every id; it keeps the ids
// with any non-zero usage total.
func (g *Gateway) readModelDetail(ctx context.Context, ids []string, w *window, span, offset int) ([]modelUsage, *apiError) {
	now := g.limiter.now()
	labels := bucketLabels(w, now, span, offset)
	r402Window := w
	r402Labels := labels
	var days []string
	switch w {
	case monthWindow:
		days = coveringDays(bucketTimes(w, now, span, offset), now)
		r402Window = dayWindow
		r402Labels = days
	case dayWindow:
		days = labels
	}
	cache := g.cache != nil && w != hourWindow
	cacheN := 0
	if cache {
		cacheN = len(days)
	}
	per := len(usageMetrics)*len(labels) + len(r402Labels) + 2*cacheN
	keys := make([]string, 0, len(ids)*per)
	for i := 0; i < len(ids); i++ {
		p := modelStatsPrefix(ids[i])
		for m := 0; m < len(usageMetrics); m++ {
			for j := 0; j < len(labels); j++ {
				keys = append(keys, statsKey(p, usageMetrics[m], w, labels[j]))
			}
		}
		for j := 0; j < len(r402Labels); j++ {
			keys = append(keys, statsKey(p, "r402", r402Window, r402Labels[j]))
		}
		for j := 0; j < cacheN; j++ {
			keys = append(keys, statsKey(p, "chit", dayWindow, days[j]), statsKey(p, "csave", dayWindow, days[j]))
		}
	}
	values, e := g.adminRead(ctx, keys)
	if e != nil {
		return nil, e
	}
	var out []modelUsage
	for i := 0; i < len(ids); i++ {
		v := values[i*per : (i+1)*per]
		u := modelUsage{id: ids[i]}
		for m := 0; m < len(usageMetrics); m++ {
			u.totals[m] = sumValues(v[m*len(labels) : (m+1)*len(labels)])
		}
		if u.totals[0] == 0 && u.totals[1] == 0 && u.totals[2] == 0 && u.totals[3] == 0 {
			continue
		}
		at := len(usageMetrics) * len(labels)
		u.r402 = sumValues(v[at : at+len(r402Labels)])
		at += len(r402Labels)
		for j := 0; j < cacheN; j++ {
			u.chit += v[at+2*j]
			u.csave += v[at+2*j+1]
		}
		out = append(out, u)
	}
	return out, nil
}

// modelDetailRow is u's detail row; cache adds the cache figures.
func (g *Gateway) modelDetailRow(u *modelUsage, cache bool) adminModelDetail {
	row := adminModelDetail{ID: u.id, Value: u.value, Requests: u.totals[0], TokensIn: u.totals[1],
		TokensOut: u.totals[2], CostMicroUsd: u.totals[3], R402: u.r402}
	row.Free, row.PriceSource = g.modelPriceSource(u.id)
	if cache {
		hits := u.chit
		saved := u.csave
		row.CacheHits = &hits
		row.CacheSavedMicroUsd = &saved
	}
	return row
}

// modelPriceSource is whether a canonical provider/model is free (a
// modelMeta entry marks it free, or its resolved price is known and both
// per-1M prices are 0) and the layer billing resolves its price from.
func (g *Gateway) modelPriceSource(canonical string) (bool, string) {
	provider := canonical
	model := ""
	if i := strings.IndexByte(canonical, '/'); i >= 0 {
		provider = canonical[:i]
		model = canonical[i+1:]
	}
	pr, src := g.pricer.resolve(provider, model)
	free := src == priceSourceFree ||
		src != priceSourceUnpriced && pr.inputPerMTokMicroUSD == 0 && pr.outputPerMTokMicroUSD == 0
	return free, src
}
