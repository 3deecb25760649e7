package gateway

import (
	"context"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// What every admin JSON route shares: parameter parsing with the seed's
// ranges, bucket labels, bounded counter reads (adminMaxKeysPerRequest
// is checked before any store read; a store error is a 503, never a
// zero), the features flags and the catalog.

// adminReadTimeout bounds one admin route's store reads.
const adminReadTimeout = 3 * time.Second

// adminReadChunk is the most keys one store read carries.
const adminReadChunk = 1000

// windowMaxSpan is each window's most buckets an admin read spans: its
// retention in the shared store.
func windowMaxSpan(w *window) int {
	switch w {
	case hourWindow:
		return 48
	case dayWindow:
		return 35
	case monthWindow:
		return 13
	}
	return 1
}

// windowByName is the admin routes' window vocabulary.
func windowByName(name string) *window {
	switch name {
	case "hour":
		return hourWindow
	case "day":
		return dayWindow
	case "month":
		return monthWindow
	}
	return nil
}

func errAdminParam(name, value, why string) *apiError {
	return apierr.New(http.StatusBadRequest, "invalid_request_error", "invalid_parameter",
		name+": "+strconv.Quote(value)+" "+why)
}

func errAdminNotFound(message string) *apiError {
	return apierr.New(http.StatusNotFound, "not_found_error", "not_found", message)
}

func errAdminStore() *apiError {
	return apierr.New(http.StatusServiceUnavailable, "api_error", "store_unavailable",
		"the counter store is unreachable; usage cannot be read (it is not zero)")
}

func errAdminTooManyKeys(n, max int) *apiError {
	return apierr.New(http.StatusBadRequest, "invalid_request_error", "too_many_keys",
		"this read would touch "+strconv.Itoa(n)+" counter keys, more than adminMaxKeysPerRequest ("+strconv.Itoa(max)+"); narrow the span or the scopes")
}

// errStatsOff is the feature-gated 404 of a statistics family.
func errStatsOff(message string) *apiError { return errAdminNotFound(message) }

// queryOne is the parameter's value; a parameter given twice is a 400
// (which one was meant is unknowable).
func queryOne(q url.Values, name string) (string, *apiError) {
	v := q[name]
	if len(v) > 1 {
		return "", errAdminParam(name, strings.Join(v, ","), "is given more than once")
	}
	if len(v) == 0 {
		return "", nil
	}
	return v[0], nil
}

// queryWindow parses window: def when empty, else one of allowed.
func queryWindow(q url.Values, def string, allowed ...string) (*window, *apiError) {
	v, e := queryOne(q, "window")
	if e != nil {
		return nil, e
	}
	if v == "" {
		v = def
	}
	for i := 0; i < len(allowed); i++ {
		if v == allowed[i] {
			return windowByName(v), nil
		}
	}
	return nil, errAdminParam("window", v, "must be one of "+strings.Join(allowed, ", "))
}

// queryInt parses an optional integer parameter in [min, max]; def when
// empty.
func queryInt(q url.Values, name string, def, min, max int) (int, *apiError) {
	v, e := queryOne(q, name)
	if e != nil {
		return 0, e
	}
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < min || n > max {
		return 0, errAdminParam(name, v, "must be an integer from "+strconv.Itoa(min)+" to "+strconv.Itoa(max))
	}
	return n, nil
}

// querySpanOffset parses span (defSpan when empty, 1 to the window's
// max) and offset (0 when empty, 0 to max - span).
func querySpanOffset(q url.Values, w *window, defSpan int) (int, int, *apiError) {
	max := windowMaxSpan(w)
	span, e := queryInt(q, "span", defSpan, 1, max)
	if e != nil {
		return 0, 0, e
	}
	offset, e := queryInt(q, "offset", 0, 0, max-span)
	if e != nil {
		return 0, 0, e
	}
	return span, offset, nil
}

// queryMetric parses a required metric from allowed.
func queryMetric(q url.Values, allowed ...string) (string, *apiError) {
	v, e := queryOne(q, "metric")
	if e != nil {
		return "", e
	}
	for i := 0; i < len(allowed); i++ {
		if v == allowed[i] {
			return v, nil
		}
	}
	return "", errAdminParam("metric", v, "must be one of "+strings.Join(allowed, ", "))
}

// bucketTimes are the starts of span buckets of w, oldest first, the
// last one offset steps before the bucket holding now.
func bucketTimes(w *window, now time.Time, span, offset int) []time.Time {
	start := w.start(now)
	out := make([]time.Time, span)
	for i := 0; i < span; i++ {
		out[i] = stepWindow(w, start, -(offset + span - 1 - i))
	}
	return out
}

// stepWindow is the start of the bucket n steps from the one starting at
// start (n may be negative).
func stepWindow(w *window, start time.Time, n int) time.Time {
	switch w {
	case minuteWindow:
		return start.Add(time.Duration(n) * time.Minute)
	case hourWindow:
		return start.Add(time.Duration(n) * time.Hour)
	case dayWindow:
		return start.AddDate(0, 0, n)
	}
	return start.AddDate(0, n, 0)
}

// bucketLabels are bucketTimes formatted as bucket ids.
func bucketLabels(w *window, now time.Time, span, offset int) []string {
	t := bucketTimes(w, now, span, offset)
	out := make([]string, len(t))
	for i := 0; i < len(t); i++ {
		out[i] = w.bucket(t[i])
	}
	return out
}

// coveringDays are the day buckets that make up the month buckets
// starting at months, oldest first, limited to the days the day window
// retains (35 back from now) and to no day after now.
func coveringDays(months []time.Time, now time.Time) []string {
	today := dayWindow.start(now)
	oldest := stepWindow(dayWindow, today, -(windowMaxSpan(dayWindow) - 1))
	var out []string
	for i := 0; i < len(months); i++ {
		end := stepWindow(monthWindow, months[i], 1)
		for d := months[i]; d.Before(end); d = d.AddDate(0, 0, 1) {
			if !d.Before(oldest) && !d.After(today) {
				out = append(out, dayWindow.bucket(d))
			}
		}
	}
	return out
}

// checkKeyCount is adminMaxKeysPerRequest: the 400 a read of n keys
// gets before anything is read.
func (g *Gateway) checkKeyCount(n int) *apiError {
	if max := g.cfg.admin.maxKeys; n > max {
		return errAdminTooManyKeys(n, max)
	}
	return nil
}

// adminRead reads keys (a missing key reads 0) from the counter store,
// in chunks, after checkKeyCount: the read of a route whose key count
// its parameters multiply. A store error is errAdminStore.
func (g *Gateway) adminRead(ctx context.Context, keys []string) ([]int64, *apiError) {
	if e := g.checkKeyCount(len(keys)); e != nil {
		return nil, e
	}
	return g.readCounters(ctx, keys)
}

// readCounters is adminRead without the cap: the reads of overview and
// usage, which take no parameters and read a fixed number of keys per
// configured entity (the dashboard's every-5-seconds poll must not turn
// into a 400 as a fleet grows). Chunked like every read.
func (g *Gateway) readCounters(ctx context.Context, keys []string) ([]int64, *apiError) {
	ctx, cancel := context.WithTimeout(ctx, adminReadTimeout)
	defer cancel()
	out := make([]int64, 0, len(keys))
	for start := 0; start < len(keys); start += adminReadChunk {
		end := start + adminReadChunk
		if end > len(keys) {
			end = len(keys)
		}
		_, values, err := g.limiter.counters.Apply(ctx, nil, keys[start:end])
		if err != nil || len(values) != end-start {
			return nil, errAdminStore()
		}
		out = append(out, values...)
	}
	return out, nil
}

// Key prefixes of the statistics families (stats.go).
func modelStatsPrefix(canonical string) string { return "llmgw:model:" + statsID(canonical) + ":" }
func provStatsPrefix(provider string) string   { return "llmgw:prov:" + statsID(provider) + ":" }
func provModelStatsPrefix(canonical string) string {
	return "llmgw:provmodel:" + statsID(canonical) + ":"
}
func userModelStatsPrefix(user, canonical string) string {
	return "llmgw:umodel:" + statsID(user) + ":" + statsID(canonical) + ":"
}

// statsKey is prefix's metric counter in window w's bucket.
func statsKey(prefix, metric string, w *window, bucket string) string {
	return prefix + metric + ":" + w.name + ":" + bucket
}

// adminFeatures says which statistics families this gateway exposes;
// every stats route and overview/config echo it.
type adminFeatures struct {
	UserModelStats bool `json:"userModelStats"`
	LatencyStats   bool `json:"latencyStats"`
	CacheStats     bool `json:"cacheStats"`
	LastSeen       bool `json:"lastSeen"`
	Failover       bool `json:"failover"`
}

func (g *Gateway) adminFeatures() adminFeatures {
	a := g.cfg.admin
	return adminFeatures{UserModelStats: a.userModel, LatencyStats: a.latency, CacheStats: g.cache != nil,
		LastSeen: a.enabled, Failover: g.cfg.failover.enabled}
}

// catalogIDs is every canonical provider/model id of the live registry,
// sorted.
func (g *Gateway) catalogIDs() []string {
	r := g.models()
	var out []string
	if r == nil {
		return out
	}
	for i := 0; i < len(r.names); i++ {
		ids := r.models[r.names[i]]
		for j := 0; j < len(ids); j++ {
			out = append(out, r.names[i]+"/"+ids[j])
		}
	}
	sort.Strings(out)
	return out
}

// inCatalog reports whether canonical is a provider/model of the live
// registry.
func (g *Gateway) inCatalog(canonical string) bool {
	r := g.models()
	i := strings.IndexByte(canonical, '/')
	if r == nil || i <= 0 {
		return false
	}
	p := r.providers[canonical[:i]]
	if p == nil {
		return false
	}
	ids := r.models[p.name]
	m := canonical[i+1:]
	k := sort.SearchStrings(ids, m)
	return k < len(ids) && ids[k] == m
}

// adminUser is the active user named name, or nil.
func (g *Gateway) adminUser(name string) *userRuntime {
	as := g.users.current()
	if as == nil {
		return nil
	}
	for i := 0; i < len(as.users); i++ {
		if as.users[i].user.name == name {
			return as.users[i].user
		}
	}
	return nil
}
