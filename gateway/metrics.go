package gateway

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// The Prometheus endpoint (metrics.enabled): a hand-written text
// exposition (format 0.0.4) — the core is stdlib-only under Yaegi.
//
// Two sources:
//   - the store, read at scrape time (one batched read, chunked): the
//     scopes' day counters (requests, tokens, cost), the budgets' used
//     amounts, and the providers' (and, with modelLabel, the
//     provider/models') attempt and failure day counters. With Redis
//     these are the fleet's shared counters: the same figure on every
//     replica (aggregate with max()). A store error skips every one of
//     these families for that scrape, never a fabricated zero.
//   - the in-process book below, fed from the request record (one mutex,
//     a few adds per request): histograms by route, provider and status
//     class, requests in flight, cache hits and misses, failovers, and
//     the limits' rejections. Per replica (aggregate with sum()). Also
//     per replica, read from its own state: the providers' and the MCP
//     servers' and agents' health gauges (aggregate with min()).
//
// Cardinality: the request histograms have one series set per (route,
// provider, status class) seen — at most routes × (providers + 1) × 5;
// failovers one per provider; rejections one per scope (users + groups +
// total); the scopes' families one per configured scope; the model
// families (modelLabel) at most maxMetricsModelPairs provider/model
// pairs this process has tried.

// defaultMetricsPath is metrics.path's default.
const defaultMetricsPath = "/metrics"

// maxMetricsModelPairs bounds the provider/model pairs the model
// families report (a passthrough body or discovery can name any model).
const maxMetricsModelPairs = 1024

// metricsReadChunk is the most keys one store read of a scrape fetches.
const metricsReadChunk = 1000

// metricsReadTimeout bounds a scrape's store reads.
const metricsReadTimeout = 2 * time.Second

const metricsContentType = "text/plain; version=0.0.4; charset=utf-8"

// metricsReservedPrefixes are the route prefixes a metrics path at or
// under is warned about.
var metricsReservedPrefixes = []string{"/admin", "/v1", "/mcp", "/a2a"}

// latencyBoundsSec are the duration and time-to-first-byte histograms'
// bounds (latencyBucketBounds, in seconds); overheadBoundsSec the
// gateway's added latency's.
var (
	latencyBoundsSec  = []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600}
	overheadBoundsSec = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}
)

// metricsSettings is the compiled metrics block.
type metricsSettings struct {
	enabled    bool
	path       string
	cidrs      []*net.IPNet
	modelLabel bool
}

// compileMetrics validates the metrics block (also while disabled) and
// returns its construction warnings: a path that shadows a gateway route
// or sits under a reserved prefix.
func compileMetrics(mc *MetricsConfig, providers map[string]*providerRuntime) (metricsSettings, []string, error) {
	s := metricsSettings{path: defaultMetricsPath}
	if mc == nil {
		return s, nil, nil
	}
	s.enabled, s.modelLabel = mc.Enabled, mc.ModelLabel
	if mc.Path != "" {
		if !strings.HasPrefix(mc.Path, "/") || strings.ContainsAny(mc.Path, "?# \t\r\n") {
			return s, nil, fmt.Errorf("config: metrics.path: %q must start with \"/\" and hold no query, fragment or whitespace", mc.Path)
		}
		s.path = mc.Path
	}
	for i := 0; i < len(mc.AllowedCIDRs); i++ {
		_, n, err := net.ParseCIDR(strings.TrimSpace(mc.AllowedCIDRs[i]))
		if err != nil {
			return s, nil, fmt.Errorf("config: metrics.allowedCIDRs[%d]: %q is not a CIDR block (e.g. 10.42.0.0/16)", i, mc.AllowedCIDRs[i])
		}
		s.cidrs = append(s.cidrs, n)
	}
	var warnings []string
	if w := metricsPathWarning(s.path, providers); w != "" && s.enabled {
		warnings = append(warnings, w)
	}
	return s, warnings, nil
}

// metricsPathWarning is the warning for a metrics path that shadows a
// gateway route (the metrics route is matched first) or sits at or
// under a reserved prefix; "" for none.
func metricsPathWarning(p string, providers map[string]*providerRuntime) string {
	shadows := routesByPath[p] != nil || p == "/" || p == "/v1/models" || strings.HasPrefix(p, "/v1/models/") || strings.HasPrefix(p, "/api/")
	if !shadows {
		first := strings.TrimPrefix(p, "/")
		if i := strings.IndexByte(first, '/'); i >= 0 {
			first = first[:i]
		}
		shadows = providers[first] != nil
	}
	if shadows {
		return "metrics.path " + strconv.Quote(p) + " collides with a gateway route; the metrics endpoint is served there instead of it"
	}
	for i := 0; i < len(metricsReservedPrefixes); i++ {
		pre := metricsReservedPrefixes[i]
		if p == pre || strings.HasPrefix(p, pre+"/") {
			return "metrics.path " + strconv.Quote(p) + " is under the reserved prefix " + pre + "; a future route there may be shadowed"
		}
	}
	return ""
}

// histogram is one histogram series: per-bucket (not cumulative) counts,
// the last one the overflow, and the sum in seconds. Guarded by the
// book's mutex.
type histogram struct {
	counts []int64
	sum    float64
	n      int64
}

func observeHistogram(h *histogram, bounds []float64, v float64) {
	if h.counts == nil {
		h.counts = make([]int64, len(bounds)+1)
	}
	h.counts[sort.SearchFloat64s(bounds, v)]++
	h.sum += v
	h.n++
}

// requestSeries are the histograms of one (route, provider, status class).
type requestSeries struct {
	route, provider, class   string
	duration, ttfb, overhead histogram
}

// metricsBook is the in-process half of the metrics, fed from the
// request record and the limiter's refusals.
type metricsBook struct {
	settings metricsSettings
	inFlight atomic.Int64

	mu          sync.Mutex
	series      map[string]*requestSeries
	cacheHits   int64
	cacheMisses int64
	failovers   map[string]int64 // provider -> failovers away from it
	rejections  map[string]int64 // kind \x00 id -> refusals
	pairs       map[string]bool  // provider/model tried (modelLabel)
}

func newMetricsBook(s metricsSettings) *metricsBook {
	if !s.enabled {
		return nil
	}
	return &metricsBook{settings: s, series: map[string]*requestSeries{}, failovers: map[string]int64{},
		rejections: map[string]int64{}, pairs: map[string]bool{}}
}

// statusClasses are the status class labels, by status / 100.
var statusClasses = []string{"other", "1xx", "2xx", "3xx", "4xx", "5xx"}

func statusClassLabel(status int) string {
	c := status / 100
	if c < 1 || c > 5 {
		return "other"
	}
	return statusClasses[c]
}

// observeRecord feeds one request record to the book: the few adds a
// request costs (the rest waits for a scrape).
func observeRecord(m *metricsBook, rec *requestRecord) {
	class := statusClassLabel(rec.statusCode)
	key := rec.route + "\x00" + rec.provider + "\x00" + class
	m.mu.Lock()
	s := m.series[key]
	if s == nil {
		s = &requestSeries{route: rec.route, provider: rec.provider, class: class}
		m.series[key] = s
	}
	observeHistogram(&s.duration, latencyBoundsSec, rec.latency.Seconds())
	if !rec.firstByte.IsZero() {
		observeHistogram(&s.ttfb, latencyBoundsSec, rec.ttfb.Seconds())
	}
	if rec.attempts > 0 {
		over := rec.latency - rec.upstream
		if over < 0 {
			over = 0
		}
		observeHistogram(&s.overhead, overheadBoundsSec, over.Seconds())
	}
	switch rec.cache {
	case "hit":
		m.cacheHits++
	case "miss":
		m.cacheMisses++
	}
	m.mu.Unlock()
	if len(rec.tried) > 1 || rec.cache == "hit" && len(rec.tried) > 0 || m.settings.modelLabel && len(rec.tried) > 0 {
		observeTried(m, rec)
	}
}

// observeTried counts the failovers of a request that tried more than
// one candidate (the rule of the fover statistics: a failed candidate
// the request moved on from), and with modelLabel notes the pairs tried.
func observeTried(m *metricsBook, rec *requestRecord) {
	tried := rec.tried
	last := len(tried) - 1
	m.mu.Lock()
	for i := 0; i < len(tried); i++ {
		t := &tried[i]
		if t.outcome != "served" && t.outcome != "skipped" && (i < last || rec.cache == "hit") {
			m.failovers[candidateProvider(t.candidate)]++
		}
		if m.settings.modelLabel && t.attempts > 0 && !m.pairs[t.candidate] && len(m.pairs) < maxMetricsModelPairs {
			m.pairs[t.candidate] = true
		}
	}
	m.mu.Unlock()
}

// countMetricsRejection counts one refusal of scope s (the limiter calls
// it for the refusing scope and for total).
func countMetricsRejection(m *metricsBook, s *limitScope) {
	m.mu.Lock()
	m.rejections[s.kind+"\x00"+s.id]++
	m.mu.Unlock()
}

// metricsPeerAllowed reports whether the TCP peer (r.RemoteAddr) is in
// one of cidrs.
func metricsPeerAllowed(cidrs []*net.IPNet, remoteAddr string) bool {
	if len(cidrs) == 0 {
		return false
	}
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	return isTrustedProxy(host, cidrs) // the same address-in-list check
}

func errMetricsForbidden() *apiError {
	return apierr.New(http.StatusForbidden, "permission_error", "admin_required", "the metrics endpoint needs an admin key")
}

// serveMetrics is the metrics route: GET or HEAD, from an allowed peer
// or with an admin key (401 without a valid key, 403 with a non-admin
// one).
func (g *Gateway) serveMetrics(w http.ResponseWriter, r *http.Request) {
	tr := startTrace(w, r)
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		defaultFormat.writeError(w, errMethodNotAllowed(r.Method, r.URL.Path, http.MethodGet))
		return
	}
	if !metricsPeerAllowed(g.metrics.settings.cidrs, r.RemoteAddr) {
		user, e := authenticate(g, r, tr)
		if e != nil {
			defaultFormat.writeError(w, e)
			return
		}
		if !user.admin {
			defaultFormat.writeError(w, errMetricsForbidden())
			return
		}
	}
	g.maybeSweepTargets() // in the background: this scrape shows the state recorded so far
	body := renderMetrics(g, r.Context())
	h := w.Header()
	h.Set("Content-Type", metricsContentType)
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// metricsScope is one scope the store families report.
type metricsScope struct {
	kind, id string
	limits   *compiledLimits
	at       int // index of its first key in the read
}

// metricsScopes are the configured scopes: users (by name), their
// groups (by name), total.
func metricsScopes(g *Gateway) []metricsScope {
	as := g.users.current()
	var users, groups []metricsScope
	seen := map[string]bool{}
	if as != nil {
		for i := 0; i < len(as.users); i++ {
			u := as.users[i].user
			for j := 0; j < len(u.scopes); j++ {
				s := &u.scopes[j]
				if s.kind == "total" || seen[s.kind+"\x00"+s.id] {
					continue
				}
				seen[s.kind+"\x00"+s.id] = true
				ms := metricsScope{kind: s.kind, id: s.id, limits: s.limits}
				if s.kind == "user" {
					users = append(users, ms)
				} else {
					groups = append(groups, ms)
				}
			}
		}
	}
	sort.Slice(users, func(i, j int) bool { return users[i].id < users[j].id })
	sort.Slice(groups, func(i, j int) bool { return groups[i].id < groups[j].id })
	out := append(users, groups...)
	return append(out, metricsScope{kind: "total", id: "all"})
}

// storeFigures is what a scrape read from the store.
type storeFigures struct {
	scopes    []metricsScope
	pairs     []string
	providers []string
	values    []int64
	provAt    int // index of the first provider key
	pairAt    int
}

// readStoreFigures reads every store family's keys; nil on a store
// error (the families are then skipped).
func readStoreFigures(g *Gateway, ctx context.Context, pairs []string) *storeFigures {
	now := g.limiter.now()
	day, month, minute := dayWindow.bucket(now), monthWindow.bucket(now), minuteWindow.bucket(now)
	f := &storeFigures{scopes: metricsScopes(g), pairs: pairs, providers: g.cfg.providerNames}
	var keys []string
	for i := 0; i < len(f.scopes); i++ {
		s := &f.scopes[i]
		s.at = len(keys)
		p := scopePrefix(s.kind, s.id)
		keys = append(keys, p+"req:day:"+day, p+"tokin:day:"+day, p+"tokout:day:"+day, p+"cost:day:"+day)
		if s.limits != nil {
			keys = append(keys, p+"req:min:"+minute, p+"tokin:month:"+month, p+"tokout:month:"+month, p+"cost:month:"+month)
		}
	}
	f.provAt = len(keys)
	for i := 0; i < len(f.providers); i++ {
		p := provStatsPrefix(f.providers[i])
		keys = append(keys, p+"attempt:day:"+day, p+"fail:day:"+day)
	}
	f.pairAt = len(keys)
	for i := 0; i < len(pairs); i++ {
		p := provModelStatsPrefix(pairs[i])
		keys = append(keys, p+"attempt:day:"+day, p+"fail:day:"+day)
	}
	ctx, cancel := context.WithTimeout(ctx, metricsReadTimeout)
	defer cancel()
	for start := 0; start < len(keys); start += metricsReadChunk {
		end := start + metricsReadChunk
		if end > len(keys) {
			end = len(keys)
		}
		_, values, err := g.limiter.counters.Apply(ctx, nil, keys[start:end])
		if err != nil || len(values) != end-start {
			return nil
		}
		f.values = append(f.values, values...)
	}
	return f
}

// labelEscaper escapes a label value per the text exposition format.
var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// metricsWriter builds the exposition.
type metricsWriter struct {
	b bytes.Buffer
}

func (mw *metricsWriter) family(name, typ, help string) {
	mw.b.WriteString("# HELP " + name + " " + help + "\n# TYPE " + name + " " + typ + "\n")
}

// sample writes one sample; labels are name, value pairs.
func (mw *metricsWriter) sample(name string, labels []string, value string) {
	mw.b.WriteString(name)
	if len(labels) > 0 {
		mw.b.WriteByte('{')
		for i := 0; i+1 < len(labels); i += 2 {
			if i > 0 {
				mw.b.WriteByte(',')
			}
			mw.b.WriteString(labels[i] + "=\"" + labelEscaper.Replace(labels[i+1]) + "\"")
		}
		mw.b.WriteByte('}')
	}
	mw.b.WriteString(" " + value + "\n")
}

func fmtInt(v int64) string { return strconv.FormatInt(v, 10) }

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// histogramSamples writes one histogram series (cumulative buckets).
func (mw *metricsWriter) histogramSamples(name string, labels []string, bounds []float64, h *histogram) {
	var cum int64
	lb := make([]string, len(labels), len(labels)+2)
	copy(lb, labels)
	lb = append(lb, "le", "")
	for i := 0; i <= len(bounds); i++ {
		if i < len(h.counts) {
			cum += h.counts[i]
		}
		if i < len(bounds) {
			lb[len(lb)-1] = fmtFloat(bounds[i])
		} else {
			lb[len(lb)-1] = "+Inf"
		}
		mw.sample(name+"_bucket", lb, fmtInt(cum))
	}
	mw.sample(name+"_sum", labels, fmtFloat(h.sum))
	mw.sample(name+"_count", labels, fmtInt(h.n))
}

// bookSnapshot is a copy of the book taken under its mutex.
type bookSnapshot struct {
	series      []*requestSeries
	cacheHits   int64
	cacheMisses int64
	failovers   []string // provider, count pairs
	rejections  []string // kind\x00id, count pairs
	pairs       []string
}

func snapshotBook(m *metricsBook) *bookSnapshot {
	s := &bookSnapshot{}
	m.mu.Lock()
	for _, rs := range m.series {
		c := *rs
		c.duration.counts = append([]int64(nil), rs.duration.counts...)
		c.ttfb.counts = append([]int64(nil), rs.ttfb.counts...)
		c.overhead.counts = append([]int64(nil), rs.overhead.counts...)
		s.series = append(s.series, &c)
	}
	s.cacheHits, s.cacheMisses = m.cacheHits, m.cacheMisses
	for p, n := range m.failovers {
		s.failovers = append(s.failovers, p, fmtInt(n))
	}
	for k, n := range m.rejections {
		s.rejections = append(s.rejections, k, fmtInt(n))
	}
	for p := range m.pairs {
		s.pairs = append(s.pairs, p)
	}
	m.mu.Unlock()
	sort.Slice(s.series, func(i, j int) bool {
		a, b := s.series[i], s.series[j]
		if a.route != b.route {
			return a.route < b.route
		}
		if a.provider != b.provider {
			return a.provider < b.provider
		}
		return a.class < b.class
	})
	sortPairs(s.failovers)
	sortPairs(s.rejections)
	sort.Strings(s.pairs)
	return s
}

// sortPairs sorts a flat key, value list by key.
func sortPairs(kv []string) {
	n := len(kv) / 2
	idx := make([]int, n)
	for i := 0; i < n; i++ {
		idx[i] = i
	}
	sort.Slice(idx, func(i, j int) bool { return kv[2*idx[i]] < kv[2*idx[j]] })
	out := make([]string, 0, len(kv))
	for i := 0; i < n; i++ {
		out = append(out, kv[2*idx[i]], kv[2*idx[i]+1])
	}
	copy(kv, out)
}

// renderMetrics is the whole exposition.
func renderMetrics(g *Gateway, ctx context.Context) []byte {
	m := g.metrics
	snap := snapshotBook(m)
	mw := &metricsWriter{}
	if f := readStoreFigures(g, ctx, snap.pairs); f != nil {
		writeStoreFamilies(mw, f, m.settings.modelLabel)
	}
	writeHealth(mw, g)
	writeTargetHealth(mw, g)
	mw.family("llmgateway_rate_limit_rejections_total", "counter",
		"Requests a rate or budget limit refused, by the refusing scope and total; this process only (aggregate with sum()).")
	for i := 0; i+1 < len(snap.rejections); i += 2 {
		k := snap.rejections[i]
		sep := strings.IndexByte(k, 0)
		mw.sample("llmgateway_rate_limit_rejections_total", []string{"scope_kind", k[:sep], "scope_id", k[sep+1:]}, snap.rejections[i+1])
	}
	writeBookFamilies(mw, m, snap)
	return mw.b.Bytes()
}

func writeStoreFamilies(mw *metricsWriter, f *storeFigures, modelLabel bool) {
	v := f.values
	mw.family("llmgateway_requests_total", "counter",
		"Requests counted in the scope, today's UTC day (resets at UTC midnight). Shared with Redis: aggregate with max().")
	for i := 0; i < len(f.scopes); i++ {
		s := &f.scopes[i]
		mw.sample("llmgateway_requests_total", []string{"scope_kind", s.kind, "scope_id", s.id}, fmtInt(v[s.at]))
	}
	mw.family("llmgateway_tokens_total", "counter",
		"Tokens accounted in the scope by direction (input, output), today's UTC day. Shared with Redis: aggregate with max().")
	for i := 0; i < len(f.scopes); i++ {
		s := &f.scopes[i]
		mw.sample("llmgateway_tokens_total", []string{"scope_kind", s.kind, "scope_id", s.id, "direction", "input"}, fmtInt(v[s.at+1]))
		mw.sample("llmgateway_tokens_total", []string{"scope_kind", s.kind, "scope_id", s.id, "direction", "output"}, fmtInt(v[s.at+2]))
	}
	mw.family("llmgateway_cost_micro_usd_total", "counter",
		"Cost accounted in the scope in micro-USD, today's UTC day. Shared with Redis: aggregate with max().")
	for i := 0; i < len(f.scopes); i++ {
		s := &f.scopes[i]
		mw.sample("llmgateway_cost_micro_usd_total", []string{"scope_kind", s.kind, "scope_id", s.id}, fmtInt(v[s.at+3]))
	}
	mw.family("llmgateway_budget_consumed_ratio", "gauge",
		"Fraction of a configured limit used in its own window (above 1 means breached); only limits that are configured. Shared with Redis: aggregate with max().")
	for i := 0; i < len(f.scopes); i++ {
		writeBudgetRatios(mw, &f.scopes[i], v)
	}
	mw.family("llmgateway_provider_attempts_total", "counter",
		"Upstream attempts of the provider, today's UTC day. Shared with Redis: aggregate with max().")
	for i := 0; i < len(f.providers); i++ {
		mw.sample("llmgateway_provider_attempts_total", []string{"provider", f.providers[i]}, fmtInt(v[f.provAt+2*i]))
	}
	mw.family("llmgateway_provider_failures_total", "counter",
		"Upstream attempts of the provider that failed by its fault (connection error, 429, 5xx, stall), today's UTC day. Shared with Redis: aggregate with max().")
	for i := 0; i < len(f.providers); i++ {
		mw.sample("llmgateway_provider_failures_total", []string{"provider", f.providers[i]}, fmtInt(v[f.provAt+2*i+1]))
	}
	if !modelLabel {
		return
	}
	mw.family("llmgateway_provider_model_attempts_total", "counter",
		"Upstream attempts per provider and model (the pairs this process tried), today's UTC day. Shared with Redis: aggregate with max().")
	for i := 0; i < len(f.pairs); i++ {
		p, model := splitPair(f.pairs[i])
		mw.sample("llmgateway_provider_model_attempts_total", []string{"provider", p, "model", model}, fmtInt(v[f.pairAt+2*i]))
	}
	mw.family("llmgateway_provider_model_failures_total", "counter",
		"Failed upstream attempts per provider and model (the pairs this process tried), today's UTC day. Shared with Redis: aggregate with max().")
	for i := 0; i < len(f.pairs); i++ {
		p, model := splitPair(f.pairs[i])
		mw.sample("llmgateway_provider_model_failures_total", []string{"provider", p, "model", model}, fmtInt(v[f.pairAt+2*i+1]))
	}
}

func splitPair(pair string) (string, string) {
	i := strings.IndexByte(pair, '/')
	if i < 0 {
		return pair, ""
	}
	return pair[:i], pair[i+1:]
}

// writeBudgetRatios writes one scope's configured limits' ratios. Its
// keys: req, tokin, tokout, cost × day, then req × min, tokin, tokout,
// cost × month.
func writeBudgetRatios(mw *metricsWriter, s *metricsScope, v []int64) {
	lim := s.limits
	if lim == nil {
		return
	}
	a := s.at
	ratio := func(budget string, used, limit int64) {
		if limit > 0 {
			mw.sample("llmgateway_budget_consumed_ratio", []string{"scope_kind", s.kind, "scope_id", s.id, "budget", budget},
				fmtFloat(float64(used)/float64(limit)))
		}
	}
	ratio("requestsPerMinute", v[a+4], lim.requestsPerMinute)
	ratio("requestsPerDay", v[a], lim.requestsPerDay)
	ratio("tokensPerDay", v[a+1]+v[a+2], lim.tokensPerDay)
	ratio("tokensPerMonth", v[a+5]+v[a+6], lim.tokensPerMonth)
	ratio("costPerDayUSD", v[a+3], lim.costPerDayMicros)
	ratio("costPerMonthUSD", v[a+7], lim.costPerMonthMicros)
}

// writeHealth writes llmgateway_provider_healthy: 0 while the provider's
// discovery breaker or its request-path breaker is open, else 1.
func writeHealth(mw *metricsWriter, g *Gateway) {
	mw.family("llmgateway_provider_healthy", "gauge",
		"1 unless the provider's discovery or request-path circuit breaker is open; this process's own view (aggregate with min()).")
	open := map[string]bool{}
	now := time.Now()
	for i := 0; i < len(g.discovery.states); i++ {
		st := g.discovery.states[i]
		st.mu.Lock()
		if st.breaker != nil && st.breaker.state != breakerClosed {
			open[st.provider.name] = true
		}
		st.mu.Unlock()
	}
	if h := g.router.health; h != nil {
		h.mu.Lock()
		for name, b := range h.breakers {
			if b.state != breakerClosed && !b.usable(now) && strings.IndexByte(name, '/') < 0 {
				open[name] = true
			}
		}
		h.mu.Unlock()
	}
	names := g.cfg.providerNames
	for i := 0; i < len(names); i++ {
		v := "1"
		if open[names[i]] {
			v = "0"
		}
		mw.sample("llmgateway_provider_healthy", []string{"provider", names[i]}, v)
	}
}

// writeTargetHealth writes llmgateway_target_healthy: per MCP server
// (kind mcp) and agent (kind agent), 1 while healthy, 0 while unhealthy
// (failureThreshold failed observations in a row); a target whose state
// is unknown (never observed, or failing below the threshold before any
// success) has no sample — absent, not a fabricated 0 or 1.
func writeTargetHealth(mw *metricsWriter, g *Gateway) {
	mw.family("llmgateway_target_healthy", "gauge",
		"1 while the MCP server or agent is healthy, 0 once failureThreshold observations in a row failed; no sample while unknown; this process's own view (aggregate with min()).")
	kinds := []string{targetMCP, targetAgent}
	for k := 0; k < len(kinds); k++ {
		names := g.targetNames(kinds[k])
		for i := 0; i < len(names); i++ {
			switch g.target(kinds[k], names[i]).health.view().State {
			case targetHealthy:
				mw.sample("llmgateway_target_healthy", []string{"kind", kinds[k], "name", names[i]}, "1")
			case targetUnhealthy:
				mw.sample("llmgateway_target_healthy", []string{"kind", kinds[k], "name", names[i]}, "0")
			}
		}
	}
}

func writeBookFamilies(mw *metricsWriter, m *metricsBook, snap *bookSnapshot) {
	mw.family("llmgateway_requests_in_flight", "gauge", "Metered and passthrough requests being served by this process.")
	mw.sample("llmgateway_requests_in_flight", nil, fmtInt(m.inFlight.Load()))
	mw.family("llmgateway_request_duration_seconds", "histogram",
		"Time from a request's arrival to its end, by route, serving provider and status class; this process only.")
	for i := 0; i < len(snap.series); i++ {
		s := snap.series[i]
		mw.histogramSamples("llmgateway_request_duration_seconds", []string{"route", s.route, "provider", s.provider, "status_class", s.class}, latencyBoundsSec, &s.duration)
	}
	mw.family("llmgateway_time_to_first_byte_seconds", "histogram",
		"Time from a request's arrival to its response headers, by route, provider and status class; this process only.")
	for i := 0; i < len(snap.series); i++ {
		s := snap.series[i]
		if s.ttfb.n > 0 {
			mw.histogramSamples("llmgateway_time_to_first_byte_seconds", []string{"route", s.route, "provider", s.provider, "status_class", s.class}, latencyBoundsSec, &s.ttfb)
		}
	}
	mw.family("llmgateway_gateway_overhead_seconds", "histogram",
		"The gateway's added latency: request duration minus the time spent in upstream calls, for requests that made at least one; this process only.")
	for i := 0; i < len(snap.series); i++ {
		s := snap.series[i]
		if s.overhead.n > 0 {
			mw.histogramSamples("llmgateway_gateway_overhead_seconds", []string{"route", s.route, "provider", s.provider, "status_class", s.class}, overheadBoundsSec, &s.overhead)
		}
	}
	mw.family("llmgateway_cache_requests_total", "counter", "Response-cache lookups by result (hit, miss); this process only.")
	mw.sample("llmgateway_cache_requests_total", []string{"result", "hit"}, fmtInt(snap.cacheHits))
	mw.sample("llmgateway_cache_requests_total", []string{"result", "miss"}, fmtInt(snap.cacheMisses))
	mw.family("llmgateway_failovers_total", "counter", "Failovers away from a provider (a failed candidate a request moved on from); this process only.")
	for i := 0; i+1 < len(snap.failovers); i += 2 {
		mw.sample("llmgateway_failovers_total", []string{"provider", snap.failovers[i]}, snap.failovers[i+1])
	}
}
