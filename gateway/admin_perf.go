package gateway

import (
	"context"
	"net/url"
	"strconv"
	"strings"
)

// GET /admin/api/performance: provider or model availability (attempts
// and failures; for providers also timeouts and failovers) and, with
// admin.stats.latency, latency percentiles from the ld/lt histograms,
// summed over a span of hour or day buckets — one row per id, or with
// series=1 one point per bucket for a single id.
//
// What the figures count:
//
//	attempts, failures  every upstream attempt of the provider (or
//	                    provider/model), and those that failed by the
//	                    provider's fault (the success-rate counters)
//	timeouts, failovers providers only: attempts that ended in the
//	                    gateway's timeout, and failed candidates a
//	                    request moved on from
//	count               the total-latency (ld) samples: requests the
//	                    upstream answered (cache hits and failures are
//	                    not timed); 0 with latency off
//	p50Ms, p95Ms, p99Ms total latency percentiles, with count > 0
//	ttfbP50Ms, ttfbP95Ms time-to-first-byte percentiles, when the span
//	                    holds ttfb (lt) samples
//	overflow            a reported percentile landed in the overflow
//	                    bucket (past 600 s) and reads 600000
//
// An id that names no configured provider (kind=provider) or no model
// of the catalog (kind=model, canonical provider/model) is a 404: a
// typo must not read as an idle entity.

// perfMaxIDs is the most entities one performance read reports.
const perfMaxIDs = 50

// perfProviderMetrics and perfModelMetrics are the availability counters
// of each kind, in the order rows read them.
var (
	perfProviderMetrics = []string{"attempt", "fail", "timeout", "fover"}
	perfModelMetrics    = []string{"attempt", "fail"}
)

// adminPerfAnswer is the performance answer. Rows is never null (empty
// with series=1); Buckets and Points are present with series=1 only.
type adminPerfAnswer struct {
	Kind           string             `json:"kind"`
	Window         string             `json:"window"`
	Span           int                `json:"span"`
	Offset         int                `json:"offset"`
	LatencyEnabled bool               `json:"latencyEnabled"`
	Rows           []adminPerfFigures `json:"rows"`
	Buckets        []string           `json:"buckets,omitempty"`
	Points         []adminPerfFigures `json:"points,omitempty"`
}

// adminPerfFigures is one row (ID set) or one series point (Bucket
// set). Timeouts and Failovers are set for kind=provider; the
// percentiles only when latency is on and there are samples.
type adminPerfFigures struct {
	ID        string `json:"id,omitempty"`
	Bucket    string `json:"bucket,omitempty"`
	Attempts  int64  `json:"attempts"`
	Failures  int64  `json:"failures"`
	Timeouts  *int64 `json:"timeouts,omitempty"`
	Failovers *int64 `json:"failovers,omitempty"`
	Count     int64  `json:"count"`
	P50Ms     *int64 `json:"p50Ms,omitempty"`
	P95Ms     *int64 `json:"p95Ms,omitempty"`
	P99Ms     *int64 `json:"p99Ms,omitempty"`
	TtfbP50Ms *int64 `json:"ttfbP50Ms,omitempty"`
	TtfbP95Ms *int64 `json:"ttfbP95Ms,omitempty"`
	Overflow  bool   `json:"overflow,omitempty"`
}

// histogramPercentile is the percent-th percentile (1-100) of a latency
// histogram, counts[i] being the samples of bucket i of
// latencyBucketBounds (the last, past every bound, the overflow), in
// milliseconds: the rank percent × total / 100 is located in the bucket
// whose cumulative count first reaches it and interpolated linearly
// between that bucket's lower and upper bound (rounded to the nearest
// millisecond; integer arithmetic, so the answer is exact and
// repeatable). ok is false when counts hold no sample. A rank in the
// overflow bucket has no upper bound: it reads the largest bound with
// overflow true.
func histogramPercentile(counts []int64, percent int64) (int64, bool, bool) {
	total := sumValues(counts)
	if total <= 0 || percent <= 0 {
		return 0, false, false
	}
	rank := percent * total // the rank × 100
	var before int64
	for i := 0; i < len(counts); i++ {
		c := counts[i]
		if c <= 0 || (before+c)*100 < rank {
			before += c
			continue
		}
		if i >= len(latencyBucketBounds) {
			break
		}
		var lower int64
		if i > 0 {
			lower = latencyBucketBounds[i-1].Milliseconds()
		}
		width := latencyBucketBounds[i].Milliseconds() - lower
		num := width * (rank - before*100)
		den := c * 100
		return lower + (num+den/2)/den, true, false
	}
	return latencyBucketBounds[len(latencyBucketBounds)-1].Milliseconds(), true, true
}

// perfRequest is a validated performance request.
type perfRequest struct {
	kind   string
	w      *window
	span   int
	offset int
	ids    []string
	series bool
}

// querySeries parses series: "" or "0" off, "1" on.
func querySeries(q url.Values) (bool, *apiError) {
	v, e := queryOne(q, "series")
	if e != nil {
		return false, e
	}
	switch v {
	case "", "0":
		return false, nil
	case "1":
		return true, nil
	}
	return false, errAdminParam("series", v, "must be 0 or 1")
}

// queryIDs parses the repeated id parameter: at most perfMaxIDs, none
// empty, none twice.
func queryIDs(q url.Values) ([]string, *apiError) {
	ids := q["id"]
	if len(ids) > perfMaxIDs {
		return nil, errAdminParam("id", strconv.Itoa(len(ids))+" ids", "is given more than "+strconv.Itoa(perfMaxIDs)+" times")
	}
	seen := map[string]bool{}
	for i := 0; i < len(ids); i++ {
		if ids[i] == "" {
			return nil, errAdminParam("id", "", "must not be empty")
		}
		if seen[ids[i]] {
			return nil, errAdminParam("id", ids[i], "is given more than once")
		}
		seen[ids[i]] = true
	}
	return append([]string{}, ids...), nil
}

// parsePerf validates every parameter, then that each id names a
// configured provider or a catalog model (404 otherwise).
func (g *Gateway) parsePerf(q url.Values) (*perfRequest, *apiError) {
	kind, e := queryOne(q, "kind")
	if e != nil {
		return nil, e
	}
	if kind != "provider" && kind != "model" {
		return nil, errAdminParam("kind", kind, "must be one of provider, model")
	}
	w, e := queryWindow(q, "", "hour", "day")
	if e != nil {
		return nil, e
	}
	span, offset, e := querySpanOffset(q, w, 1)
	if e != nil {
		return nil, e
	}
	ids, e := queryIDs(q)
	if e != nil {
		return nil, e
	}
	series, e := querySeries(q)
	if e != nil {
		return nil, e
	}
	if series && len(ids) != 1 {
		return nil, errAdminParam("id", strings.Join(ids, ","), "must name exactly one entity with series=1")
	}
	for i := 0; i < len(ids); i++ {
		if kind == "provider" && g.cfg.providers[ids[i]] == nil {
			return nil, errAdminNotFound("provider " + quoteID(ids[i]) + " is not configured")
		}
		if kind == "model" && !g.inCatalog(ids[i]) {
			return nil, errAdminNotFound("model " + quoteID(ids[i]) + " is not in the catalog (ids are canonical provider/model)")
		}
	}
	return &perfRequest{kind: kind, w: w, span: span, offset: offset, ids: ids, series: series}, nil
}

func (g *Gateway) adminPerformance(ctx context.Context, q url.Values) (interface{}, *apiError) {
	r, e := g.parsePerf(q)
	if e != nil {
		return nil, e
	}
	if len(r.ids) == 0 {
		if r.kind == "provider" {
			r.ids = append([]string{}, g.cfg.providerNames...)
		} else if r.ids, e = g.topModelsByRequests(ctx, r); e != nil {
			return nil, e
		}
	}
	latency := g.cfg.admin.latency
	labels := bucketLabels(r.w, g.limiter.now(), r.span, r.offset)
	metrics := perfModelMetrics
	if r.kind == "provider" {
		metrics = perfProviderMetrics
	}
	// Per id, per bucket: the availability counters, then (latency on)
	// ld00..ld13 and lt00..lt13.
	per := len(metrics)
	if latency {
		per += 2 * len(latencyBucketNames)
	}
	keys := make([]string, 0, len(r.ids)*len(labels)*per)
	for i := 0; i < len(r.ids); i++ {
		// A model's success rates are provmodel counters, its
		// histograms model counters; a provider's are both prov.
		avail := provStatsPrefix(r.ids[i])
		hist := avail
		if r.kind == "model" {
			avail = provModelStatsPrefix(r.ids[i])
			hist = modelStatsPrefix(r.ids[i])
		}
		for j := 0; j < len(labels); j++ {
			for m := 0; m < len(metrics); m++ {
				keys = append(keys, statsKey(avail, metrics[m], r.w, labels[j]))
			}
			if latency {
				for _, family := range []string{"ld", "lt"} {
					for b := 0; b < len(latencyBucketNames); b++ {
						keys = append(keys, statsKey(hist, family+latencyBucketNames[b], r.w, labels[j]))
					}
				}
			}
		}
	}
	values, e := g.adminRead(ctx, keys)
	if e != nil {
		return nil, e
	}
	out := adminPerfAnswer{Kind: r.kind, Window: r.w.name, Span: r.span, Offset: r.offset, LatencyEnabled: latency,
		Rows: []adminPerfFigures{}}
	provider := r.kind == "provider"
	if r.series {
		out.Buckets = labels
		out.Points = make([]adminPerfFigures, len(labels))
		for j := 0; j < len(labels); j++ {
			f := perfFigures(values[j*per:(j+1)*per], 1, per, len(metrics), latency, provider)
			f.Bucket = labels[j]
			out.Points[j] = f
		}
		return out, nil
	}
	for i := 0; i < len(r.ids); i++ {
		block := values[i*len(labels)*per : (i+1)*len(labels)*per]
		f := perfFigures(block, len(labels), per, len(metrics), latency, provider)
		f.ID = r.ids[i]
		out.Rows = append(out.Rows, f)
	}
	return out, nil
}

// perfFigures sums n buckets of per values each (nMetrics availability
// counters, then the ld and lt histograms when latency) into figures.
func perfFigures(values []int64, n, per, nMetrics int, latency, provider bool) adminPerfFigures {
	sums := make([]int64, per)
	for j := 0; j < n; j++ {
		for k := 0; k < per; k++ {
			sums[k] += values[j*per+k]
		}
	}
	f := adminPerfFigures{Attempts: sums[0], Failures: sums[1]}
	if provider {
		timeouts := sums[2]
		failovers := sums[3]
		f.Timeouts = &timeouts
		f.Failovers = &failovers
	}
	if !latency {
		return f
	}
	nb := len(latencyBucketNames)
	ld := sums[nMetrics : nMetrics+nb]
	lt := sums[nMetrics+nb : nMetrics+2*nb]
	f.Count = sumValues(ld)
	f.P50Ms = percentileField(ld, 50, &f.Overflow)
	f.P95Ms = percentileField(ld, 95, &f.Overflow)
	f.P99Ms = percentileField(ld, 99, &f.Overflow)
	f.TtfbP50Ms = percentileField(lt, 50, &f.Overflow)
	f.TtfbP95Ms = percentileField(lt, 95, &f.Overflow)
	return f
}

// percentileField is histogramPercentile as an optional field (nil: no
// samples); an overflow sets *overflow.
func percentileField(counts []int64, percent int64, overflow *bool) *int64 {
	ms, ok, over := histogramPercentile(counts, percent)
	if !ok {
		return nil
	}
	if over {
		*overflow = true
	}
	return &ms
}

// topModelsByRequests is kind=model's default: the perfMaxIDs catalog
// models with the most requests over the span (those with any), most
// first, ties by id.
func (g *Gateway) topModelsByRequests(ctx context.Context, r *perfRequest) ([]string, *apiError) {
	usage, e := g.readModelMetric(ctx, g.catalogIDs(), "req", r.w, r.span, r.offset)
	if e != nil {
		return nil, e
	}
	rankModels(usage, false)
	if len(usage) > perfMaxIDs {
		usage = usage[:perfMaxIDs]
	}
	ids := make([]string, len(usage))
	for i := 0; i < len(usage); i++ {
		ids[i] = usage[i].id
	}
	return ids, nil
}
