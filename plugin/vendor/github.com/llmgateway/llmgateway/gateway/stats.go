package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/store"
	"github.com/llmgateway/llmgateway/gateway/internal/translate"
)

// Statistics counters: what the admin API and /metrics read. They are
// written only with admin.enabled (nothing at all otherwise), from the
// request record, in the request's accounting round trip (the usage
// write, or the settlement of its reservation) — never a round trip of
// their own on the request path. A request that has nothing to account
// and no reservation (a cache hit, a failure, a media answer without a
// budget) hands them to the background batch that already writes the
// provider success rates (limits.go, about once a second; in process,
// without Redis, they are applied at once).
//
// Key families (every bucket is a UTC calendar bucket: hour 2006010215,
// day 20060102, month 200601; TTLs are the windows' retention: hour 48 h,
// day 35 d, month 400 d — the in-process store caps them as memoryTTL
// says). {id} is a scope id, {model} a canonical provider/model, each
// with ':' written %3A.
//
// Always on with admin:
//
//	llmgw:{user|group|total}:{id}:{req|tokin|tokout|cost|rej}:{min|hour|day|month}:{b}
//	    the limits' own counters (limits.go), written with or without
//	    admin; rej is the rejection round trip's, counted in every scope of
//	    the refused request (user, each group, total).
//	llmgw:{user|group|total}:{id}:seen
//	    unix seconds of the scope's latest admitted request (SET, last
//	    write wins), TTL 400 d. One key per scope.
//	llmgw:model:{model}:{req|tokin|tokout|cost}:{hour|day|month}:{b}
//	    per model that served the request (upstream answer, or the cache
//	    entry of that candidate): req always, the others when non-zero.
//	llmgw:model:{model}:r402:{hour|day}:{b}, llmgw:total:all:r402:{hour|day}:{b}
//	    402 model_unpriced refusals (the model that needed a price).
//	llmgw:total:all:{chit|cmiss}:{hour|day}:{b}, llmgw:model:{model}:chit:day:{b}
//	    response-cache hits and misses (only when the cache is configured).
//	llmgw:total:all:csave:{hour|day}:{b}, llmgw:model:{model}:csave:day:{b}
//	    micro-USD a cache hit saved: the cached answer's usage at its
//	    model's price.
//	llmgw:prov:{provider}:{attempt|fail}:{min|hour|day}:{b}
//	llmgw:provmodel:{model}:{attempt|fail}:{min|hour|day}:{b}
//	    the success rates (limits.go); admin adds the hour window.
//	llmgw:prov:{provider}:timeout:{hour|day}:{b}
//	    candidates whose attempt ended in the gateway's timeout
//	    (upstream_timeout: a stall before or during the answer).
//	llmgw:prov:{provider}:fover:{hour|day}:{b}
//	    failovers away from the provider (a failed candidate the request
//	    moved on from).
//
// Opt-in (admin.stats):
//
//	userModel: llmgw:umodel:{user}:{model}:{req|tokin|tokout|cost}:{day|month}:{b}
//	latency:   llmgw:{prov:{provider}|model:{model}}:{ld|lt}{00..13}:{hour|day}:{b}
//	    histograms of total latency (ld) and time to first byte (lt) of
//	    requests an upstream answered: bucket NN is the first of
//	    latencyBucketBounds the value is at most, 13 the overflow.
//
// Keys per request: S seen keys (S = the user's scopes: user, groups,
// total), up to 12 model keys, 2-6 cache keys, 2 per timeout and per
// failover, plus up to 8 userModel and 8 latency keys when opted in.
// Keys in total, per bucket: scopes × 5 metrics; models served × 4 (+ 5
// day, 1 hour for r402); providers × 4 (+ provider/models × 2); with
// userModel users × models used × 4; with latency (providers + models) ×
// 28. The model families accept at most maxStatsModels distinct ids per
// process (a passthrough body can name any model): an id past that is
// not counted per model.

// latencyBucketBounds are the latency histograms' upper bounds: 13 of
// them from 0.1 s to 600 s, plus an overflow bucket (index 13).
var latencyBucketBounds = []time.Duration{
	100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2500 * time.Millisecond, 5 * time.Second, 10 * time.Second,
	20 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute,
	5 * time.Minute, 10 * time.Minute,
}

// latencyBucketNames are the histogram buckets' metric suffixes.
var latencyBucketNames = []string{"00", "01", "02", "03", "04", "05", "06", "07", "08", "09", "10", "11", "12", "13"}

// maxStatsModels bounds the distinct model ids the model families count.
const maxStatsModels = 4096

// Default and range of adminMaxKeysPerRequest.
const (
	defaultAdminMaxKeys = 10000
	minAdminMaxKeys     = 100
	maxAdminMaxKeys     = 1000000
)

// adminSettings is the compiled admin block.
type adminSettings struct {
	enabled   bool
	userModel bool
	latency   bool
	// maxKeys is adminMaxKeysPerRequest (for the admin routes).
	maxKeys int
}

func compileAdmin(ac *AdminConfig, maxKeys int) (adminSettings, error) {
	s := adminSettings{maxKeys: defaultAdminMaxKeys}
	if maxKeys < 0 || maxKeys > 0 && (maxKeys < minAdminMaxKeys || maxKeys > maxAdminMaxKeys) {
		return s, fmt.Errorf("config: adminMaxKeysPerRequest: %d must be between %d and %d (0: the default, %d)",
			maxKeys, minAdminMaxKeys, maxAdminMaxKeys, defaultAdminMaxKeys)
	}
	if maxKeys > 0 {
		s.maxKeys = maxKeys
	}
	if ac == nil || !ac.Enabled {
		return s, nil
	}
	s.enabled = true
	if ac.Stats != nil {
		s.userModel = ac.Stats.UserModel
		s.latency = ac.Stats.Latency
	}
	return s, nil
}

// statsWriter builds a request's statistics increments; nil on a
// gateway without admin.
type statsWriter struct {
	userModel bool
	latency   bool
	cache     bool // the response cache is configured
	models    sync.Map
	modelN    atomic.Int64
	provs     sync.Map
	total     *statsPrefix // llmgw:total:all:
}

// statsPrefix is one model's, provider's or the total scope's keys for
// the current minute, rebuilt when the minute changes.
type statsPrefix struct {
	prefix string
	keys   atomic.Value // *statsKeys
}

// statsKeys are a prefix's keys for one UTC minute. served is req,
// tokin, tokout, cost × hour, day, month (req's Delta 1, the others 0):
// a template that is copied.
type statsKeys struct {
	minute  int64
	served  []store.Incr
	chitDay string
	csDay   string
	r402    [2]string // hour, day
	chit    [2]string // hour, day (total)
	cmiss   [2]string
	csave   [2]string
	timeout [2]string // hour, day (provider)
	fover   [2]string
	ld      []string // 14 buckets × hour, day
	lt      []string
}

func newStatsWriter(a adminSettings, cache bool) *statsWriter {
	if !a.enabled {
		return nil
	}
	return &statsWriter{userModel: a.userModel, latency: a.latency, cache: cache,
		total: &statsPrefix{prefix: scopePrefix("total", "all")}}
}

// statsID escapes a key component (as scopePrefix does).
func statsID(id string) string { return strings.ReplaceAll(id, ":", "%3A") }

// modelPrefix is the keys of provider/model (nil past maxStatsModels).
func (w *statsWriter) modelPrefix(provider, model string) *statsPrefix {
	id := provider + "/" + model
	if v, ok := w.models.Load(id); ok {
		return v.(*statsPrefix)
	}
	if w.modelN.Add(1) > maxStatsModels {
		w.modelN.Add(-1)
		return nil
	}
	p := &statsPrefix{prefix: "llmgw:model:" + statsID(id) + ":"}
	v, loaded := w.models.LoadOrStore(id, p)
	if loaded {
		w.modelN.Add(-1)
	}
	return v.(*statsPrefix)
}

// provPrefix is the keys of a provider (configured names: bounded).
func (w *statsWriter) provPrefix(provider string) *statsPrefix {
	if v, ok := w.provs.Load(provider); ok {
		return v.(*statsPrefix)
	}
	v, _ := w.provs.LoadOrStore(provider, &statsPrefix{prefix: provStatsPrefix(provider)})
	return v.(*statsPrefix)
}

// keysAt is p's keys for the minute (built once per minute).
func keysAt(p *statsPrefix, now time.Time, minute int64, latency bool) *statsKeys {
	if k, ok := p.keys.Load().(*statsKeys); ok && k.minute == minute {
		return k
	}
	k := buildStatsKeys(p.prefix, now, minute, latency)
	p.keys.Store(k)
	return k
}

func buildStatsKeys(prefix string, now time.Time, minute int64, latency bool) *statsKeys {
	b := bucketsAt(now)
	k := &statsKeys{minute: minute}
	metrics := []string{"req", "tokin", "tokout", "cost"}
	k.served = make([]store.Incr, 0, len(metrics)*len(usageWindows))
	for m := 0; m < len(metrics); m++ {
		for j := 0; j < len(usageWindows); j++ {
			w := usageWindows[j]
			in := store.Incr{Key: prefix + metrics[m] + ":" + w.name + ":" + b.of(w), TTL: w.ttl}
			if m == 0 {
				in.Delta = 1
			}
			k.served = append(k.served, in)
		}
	}
	hour, day := ":hour:"+b.hour, ":day:"+b.day
	k.chitDay, k.csDay = prefix+"chit"+day, prefix+"csave"+day
	k.r402[0], k.r402[1] = prefix+"r402"+hour, prefix+"r402"+day
	k.chit[0], k.chit[1] = prefix+"chit"+hour, prefix+"chit"+day
	k.cmiss[0], k.cmiss[1] = prefix+"cmiss"+hour, prefix+"cmiss"+day
	k.csave[0], k.csave[1] = prefix+"csave"+hour, prefix+"csave"+day
	k.timeout[0], k.timeout[1] = prefix+"timeout"+hour, prefix+"timeout"+day
	k.fover[0], k.fover[1] = prefix+"fover"+hour, prefix+"fover"+day
	if latency {
		k.ld = make([]string, 0, 2*len(latencyBucketNames))
		k.lt = make([]string, 0, 2*len(latencyBucketNames))
		for i := 0; i < len(latencyBucketNames); i++ {
			n := latencyBucketNames[i]
			k.ld = append(k.ld, prefix+"ld"+n+hour, prefix+"ld"+n+day)
			k.lt = append(k.lt, prefix+"lt"+n+hour, prefix+"lt"+n+day)
		}
	}
	return k
}

// latencyBucket is the histogram bucket of d (13: overflow).
func latencyBucket(d time.Duration) int {
	i := 0
	for i < len(latencyBucketBounds) && d > latencyBucketBounds[i] {
		i++
	}
	return i
}

// statsFacts is what the statistics of one request are built from,
// gathered by the account and record stages.
type statsFacts struct {
	served  bool // an upstream answered (the account stage ran with a 2xx)
	usage   translate.Usage
	cost    int64
	latency time.Duration
	ttfb    time.Duration // 0: no first byte
}

// statsIncrs is the request's statistics increments (nil when there are
// none, and on a gateway without admin).
func statsIncrs(c *call, f *statsFacts) []store.Incr {
	w := c.g.stats
	if w == nil {
		return nil
	}
	now := c.g.limiter.now()
	sec := now.Unix() // the floored Unix minute, computed inline
	minute := sec / 60
	if sec%60 < 0 {
		minute--
	}
	rec := &c.rec
	incrs := make([]store.Incr, 0, 24)
	if c.admitted && c.user != nil {
		seen := rec.start.Unix()
		for i := 0; i < len(c.user.scopes); i++ {
			s := &c.user.scopes[i]
			p := s.prefix
			if p == "" {
				p = scopePrefix(s.kind, s.id)
			}
			incrs = append(incrs, store.Incr{Key: p + "seen", Delta: seen, TTL: monthWindow.ttl, Set: true})
		}
	}
	hit := rec.cache == "hit"
	if (f.served || hit) && rec.model != "" {
		incrs = servedIncrs(c, w, f, incrs, now, minute, hit)
	}
	if rec.errorCode != "" || len(rec.tried) > 1 || hit && len(rec.tried) > 0 {
		incrs = failureIncrs(c, w, incrs, now, minute)
	}
	if w.cache && rec.cache != "" {
		incrs = cacheIncrs(c, w, incrs, now, minute, hit)
	}
	if len(incrs) == 0 {
		return nil
	}
	return incrs
}

// servedIncrs appends the model (and opt-in user-model and latency)
// counters of a request a model served.
func servedIncrs(c *call, w *statsWriter, f *statsFacts, incrs []store.Incr, now time.Time, minute int64, hit bool) []store.Incr {
	rec := &c.rec
	mp := w.modelPrefix(rec.provider, rec.model)
	if mp == nil {
		return incrs
	}
	mk := keysAt(mp, now, minute, w.latency)
	tin, tout, cost := f.usage.PromptTokens, f.usage.CompletionTokens, f.cost
	incrs = append(incrs, mk.served[0], mk.served[1], mk.served[2])
	incrs = appendDelta(incrs, mk.served[3:6], tin)
	incrs = appendDelta(incrs, mk.served[6:9], tout)
	incrs = appendDelta(incrs, mk.served[9:12], cost)
	if w.userModel && rec.user != "" {
		incrs = userModelIncrs(incrs, now, rec.user, rec.provider+"/"+rec.model, tin, tout, cost)
	}
	if w.latency && f.served && !hit {
		pk := keysAt(w.provPrefix(rec.provider), now, minute, true)
		i := 2 * latencyBucket(f.latency)
		incrs = append(incrs,
			store.Incr{Key: pk.ld[i], Delta: 1, TTL: hourWindow.ttl}, store.Incr{Key: pk.ld[i+1], Delta: 1, TTL: dayWindow.ttl},
			store.Incr{Key: mk.ld[i], Delta: 1, TTL: hourWindow.ttl}, store.Incr{Key: mk.ld[i+1], Delta: 1, TTL: dayWindow.ttl})
		if f.ttfb > 0 {
			i = 2 * latencyBucket(f.ttfb)
			incrs = append(incrs,
				store.Incr{Key: pk.lt[i], Delta: 1, TTL: hourWindow.ttl}, store.Incr{Key: pk.lt[i+1], Delta: 1, TTL: dayWindow.ttl},
				store.Incr{Key: mk.lt[i], Delta: 1, TTL: hourWindow.ttl}, store.Incr{Key: mk.lt[i+1], Delta: 1, TTL: dayWindow.ttl})
		}
	}
	return incrs
}

// appendDelta appends the three window keys of t with delta d (nothing
// when d is 0).
func appendDelta(incrs []store.Incr, t []store.Incr, d int64) []store.Incr {
	if d <= 0 {
		return incrs
	}
	j := len(incrs)
	incrs = append(incrs, t...)
	for ; j < len(incrs); j++ {
		incrs[j].Delta = d
	}
	return incrs
}

// userModelIncrs appends the user × model counters (day, month).
func userModelIncrs(incrs []store.Incr, now time.Time, user, model string, tin, tout, cost int64) []store.Incr {
	prefix := "llmgw:umodel:" + statsID(user) + ":" + statsID(model) + ":"
	day, month := ":day:"+dayWindow.bucket(now), ":month:"+monthWindow.bucket(now)
	incrs = append(incrs, store.Incr{Key: prefix + "req" + day, Delta: 1, TTL: dayWindow.ttl},
		store.Incr{Key: prefix + "req" + month, Delta: 1, TTL: monthWindow.ttl})
	metrics := []string{"tokin", "tokout", "cost"}
	deltas := []int64{tin, tout, cost}
	for i := 0; i < len(metrics); i++ {
		if deltas[i] > 0 {
			incrs = append(incrs, store.Incr{Key: prefix + metrics[i] + day, Delta: deltas[i], TTL: dayWindow.ttl},
				store.Incr{Key: prefix + metrics[i] + month, Delta: deltas[i], TTL: monthWindow.ttl})
		}
	}
	return incrs
}

// failureIncrs appends the 402, timeout and failover counters.
func failureIncrs(c *call, w *statsWriter, incrs []store.Incr, now time.Time, minute int64) []store.Incr {
	rec := &c.rec
	if rec.errorCode == "model_unpriced" {
		tk := keysAt(w.total, now, minute, false)
		incrs = appendPair(incrs, tk.r402)
		if mp := w.modelPrefix(rec.provider, rec.model); mp != nil {
			incrs = appendPair(incrs, keysAt(mp, now, minute, w.latency).r402)
		}
	}
	tried := rec.tried
	last := len(tried) - 1
	for i := 0; i < len(tried); i++ {
		t := &tried[i]
		out := t.outcome
		timedOut := out == "upstream_timeout" || i == last && out == "served" && rec.errorCode == "upstream_timeout"
		moved := out != "served" && out != "skipped" && (i < last || rec.cache == "hit")
		if !timedOut && !moved {
			continue
		}
		pk := keysAt(w.provPrefix(candidateProvider(t.candidate)), now, minute, w.latency)
		if timedOut {
			incrs = appendPair(incrs, pk.timeout)
		}
		if moved {
			incrs = appendPair(incrs, pk.fover)
		}
	}
	if len(tried) == 0 && rec.errorCode == "upstream_timeout" && rec.provider != "" {
		incrs = appendPair(incrs, keysAt(w.provPrefix(rec.provider), now, minute, w.latency).timeout)
	}
	return incrs
}

// candidateProvider is the provider of a "provider/model" candidate name.
func candidateProvider(name string) string {
	if i := strings.IndexByte(name, '/'); i >= 0 {
		return name[:i]
	}
	return name
}

// appendPair appends hour and day keys k with Delta 1.
func appendPair(incrs []store.Incr, k [2]string) []store.Incr {
	return append(incrs, store.Incr{Key: k[0], Delta: 1, TTL: hourWindow.ttl}, store.Incr{Key: k[1], Delta: 1, TTL: dayWindow.ttl})
}

// cacheIncrs appends the response cache's hit/miss (and saved cost)
// counters.
func cacheIncrs(c *call, w *statsWriter, incrs []store.Incr, now time.Time, minute int64, hit bool) []store.Incr {
	tk := keysAt(w.total, now, minute, false)
	if !hit {
		return appendPair(incrs, tk.cmiss)
	}
	incrs = appendPair(incrs, tk.chit)
	var mk *statsKeys
	if mp := w.modelPrefix(c.rec.provider, c.rec.model); mp != nil {
		mk = keysAt(mp, now, minute, w.latency)
		incrs = append(incrs, store.Incr{Key: mk.chitDay, Delta: 1, TTL: dayWindow.ttl})
	}
	if c.saved > 0 {
		incrs = append(incrs, store.Incr{Key: tk.csave[0], Delta: c.saved, TTL: hourWindow.ttl},
			store.Incr{Key: tk.csave[1], Delta: c.saved, TTL: dayWindow.ttl})
		if mk != nil {
			incrs = append(incrs, store.Incr{Key: mk.csDay, Delta: c.saved, TTL: dayWindow.ttl})
		}
	}
	return incrs
}

// cachedUsage is the usage a cached answer reports, in the shapes the
// cacheable routes answer with (OpenAI, Anthropic and Responses usage,
// Ollama's counts).
type cachedUsage struct {
	Usage *struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
		InputTokens      int64 `json:"input_tokens"`
		OutputTokens     int64 `json:"output_tokens"`
	} `json:"usage"`
	PromptEvalCount int64 `json:"prompt_eval_count"`
	EvalCount       int64 `json:"eval_count"`
}

// savedByHit is what a cache hit saved: the cached answer's usage at
// the price of the model it came from (micro-USD; 0 when unknown).
func savedByHit(g *Gateway, provider, model string, body []byte) int64 {
	var cu cachedUsage
	if json.Unmarshal(body, &cu) != nil {
		return 0
	}
	u := translate.Usage{PromptTokens: cu.PromptEvalCount, CompletionTokens: cu.EvalCount}
	if cu.Usage != nil {
		u.PromptTokens = cu.Usage.PromptTokens + cu.Usage.InputTokens
		u.CompletionTokens = cu.Usage.CompletionTokens + cu.Usage.OutputTokens
	}
	if u.PromptTokens <= 0 && u.CompletionTokens <= 0 {
		return 0
	}
	return costOf(g, provider, model, u)
}

// writeStats writes statistics increments that ride no accounting round
// trip: in process at once, else in the background batch.
func writeStats(l *limiter, incrs []store.Incr) {
	if len(incrs) == 0 {
		return
	}
	if m, ok := l.counters.(*store.Memory); ok {
		_, _, _ = m.Apply(context.Background(), incrs, nil)
		return
	}
	l.async.addStats(incrs)
}
