package gateway

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/llmgateway/llmgateway/gateway/internal/translate"
)

// Request-cost accounting: what a model costs per token, and what a
// request's usage costs. Everything is integer micro-USD (1 USD =
// 1,000,000) so budgets never drift with float rounding.
//
// A price resolves, first match wins:
//
//  1. a modelMeta entry with free: true ("provider/model", then bare):
//     a known zero that wins outright, over pricing overrides too (the
//     README's model metadata rule: free first, then pricing overrides,
//     then the built-in tables). Every other modelMeta
//     field is display-only and never read here; a ":free" id suffix is
//     display-only as well and does not make a model priced;
//  2. a configured pricing override, "provider/model" then bare;
//  3. the curated table below (curatedPricing), "provider/model" then bare;
//  4. the generated LiteLLM-synced table (modeltable_gen.go, parsed once
//     by builtinModels and shared with modelmeta.go), bare id only: it is
//     keyed by the upstream's own model id.
//
// None of them knowing the model makes it unpriced: it costs 0 and logs a
// warning once per model name (at most maxUnpricedWarnings names per
// pricer, then one summary warning).

// modelPrice is a price in micro-USD per 1,000,000 tokens.
type modelPrice struct {
	inputPerMTokMicroUSD  int64
	outputPerMTokMicroUSD int64
}

// Price sources, in the vocabulary the admin API uses.
const (
	priceSourceFree     = "free"
	priceSourceOverride = "override"
	priceSourceBuiltin  = "builtin" // the curated table
	priceSourceLiteLLM  = "litellm" // the generated table
	priceSourceUnpriced = "unpriced"
)

const (
	// microsPerUSD converts USD to micro-USD, and is also the token unit
	// prices are quoted in (per 1,000,000 tokens).
	microsPerUSD = 1000000
	// maxPriceUSDPerM bounds a configured price: anything above USD
	// 1,000,000 per 1M tokens is a typo, not a price.
	maxPriceUSDPerM = 1000000.0
	// maxPriceMicrosPerM is maxPriceUSDPerM in micro-USD (1e12). Every
	// price the pricer returns is at most this, which keeps cost
	// arithmetic exact (see costMicros).
	maxPriceMicrosPerM = 1000000000000
	// maxUnpricedWarnings caps the distinct unpriced model names a pricer
	// warns about; past it, one summary warning and then silence.
	maxUnpricedWarnings = 128
	// maxUnpricedNameBytes truncates a model name before it is logged or
	// remembered: a passthrough body can name any string.
	maxUnpricedNameBytes = 256
)

// curatedPricing is the curated built-in price table, keyed by the upstream's bare model id (a
// "provider/model" key would also be honored). It wins over the generated
// table.
//
// APPROXIMATE: list prices in USD per 1M tokens (standard tier, no
// batch, no long-context surcharge, cached input billed at the full input
// price) as each provider published them, recorded 2026-11 and
// cross-checked against the LiteLLM snapshot of 2026-02-24 that
// modeltable_gen.go is generated from. It is not kept in sync
// automatically: set a pricing override for billing-grade accuracy.
var curatedPricing = map[string]modelPrice{
	// OpenAI
	"gpt-5.2":                {1750000, 14000000},
	"gpt-5.1":                {1250000, 10000000},
	"gpt-5":                  {1250000, 10000000},
	"gpt-5-mini":             {250000, 2000000},
	"gpt-5-nano":             {50000, 400000},
	"gpt-4.1":                {2000000, 8000000},
	"gpt-4.1-mini":           {400000, 1600000},
	"gpt-4.1-nano":           {100000, 400000},
	"gpt-4o":                 {2500000, 10000000},
	"gpt-4o-mini":            {150000, 600000},
	"o3":                     {2000000, 8000000},
	"o3-mini":                {1100000, 4400000},
	"o4-mini":                {1100000, 4400000},
	"o1":                     {15000000, 60000000},
	"text-embedding-3-small": {20000, 0},
	"text-embedding-3-large": {130000, 0},
	"text-embedding-ada-002": {100000, 0},
	// Anthropic (aliases and their dated snapshots)
	"claude-opus-4-6":            {5000000, 25000000},
	"claude-opus-4-5":            {5000000, 25000000},
	"claude-opus-4-5-20251101":   {5000000, 25000000},
	"claude-opus-4-1":            {15000000, 75000000},
	"claude-opus-4-1-20250805":   {15000000, 75000000},
	"claude-opus-4-20250514":     {15000000, 75000000},
	"claude-sonnet-4-6":          {3000000, 15000000},
	"claude-sonnet-4-5":          {3000000, 15000000},
	"claude-sonnet-4-5-20250929": {3000000, 15000000},
	"claude-sonnet-4-20250514":   {3000000, 15000000},
	"claude-3-7-sonnet-20250219": {3000000, 15000000},
	"claude-haiku-4-5":           {1000000, 5000000},
	"claude-haiku-4-5-20251001":  {1000000, 5000000},
	"claude-3-5-haiku-20241022":  {800000, 4000000},
	"claude-3-haiku-20240307":    {250000, 1250000},
	// Google Gemini (prompts up to 200k tokens where the price is tiered)
	"gemini-3-pro-preview":   {2000000, 12000000},
	"gemini-3-flash-preview": {500000, 3000000},
	"gemini-2.5-pro":         {1250000, 10000000},
	"gemini-2.5-flash":       {300000, 2500000},
	"gemini-2.5-flash-lite":  {100000, 400000},
	"gemini-2.0-flash":       {100000, 400000},
	"gemini-2.0-flash-lite":  {75000, 300000},
	"gemini-embedding-001":   {150000, 0},
}

// compilePricing validates the configured pricing overrides and converts
// them to micro-USD. Keys are bare model ids or "provider/model"; an
// empty key, a nil entry, or a rate that is negative, NaN, ±Inf, above
// USD 1,000,000 per 1M tokens, or positive but rounding to 0 micro-USD is
// a construction error naming the field. Entries are checked in key
// order, so the error reported is deterministic.
func compilePricing(m map[string]*ModelPricing) (map[string]modelPrice, error) {
	out := make(map[string]modelPrice, len(m))
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i := 0; i < len(keys); i++ {
		key := keys[i]
		field := fmt.Sprintf("pricing[%q]", key)
		if strings.TrimSpace(key) == "" {
			return nil, fmt.Errorf("config: %s: the model id is empty", field)
		}
		if strings.TrimSpace(key) != key {
			return nil, fmt.Errorf("config: %s: the model id has leading or trailing spaces", field)
		}
		if strings.HasPrefix(key, "/") || strings.HasSuffix(key, "/") || strings.Contains(key, "//") {
			return nil, fmt.Errorf("config: %s: the model id has an empty provider or model part", field)
		}
		p := m[key]
		if p == nil {
			return nil, fmt.Errorf("config: %s: nil value", field)
		}
		in, err := usdPerMToMicros(field+".inputPerM", p.InputPerM)
		if err != nil {
			return nil, err
		}
		outPrice, err := usdPerMToMicros(field+".outputPerM", p.OutputPerM)
		if err != nil {
			return nil, err
		}
		out[key] = modelPrice{inputPerMTokMicroUSD: in, outputPerMTokMicroUSD: outPrice}
	}
	return out, nil
}

// usdPerMToMicros converts a configured USD-per-1M-tokens rate to
// micro-USD per 1M tokens, rounding to the nearest micro-USD (half away
// from zero: 0.0000005 → 1).
func usdPerMToMicros(field string, usd float64) (int64, error) {
	if math.IsNaN(usd) || math.IsInf(usd, 0) || usd < 0 {
		return 0, fmt.Errorf("config: %s: %v must be a finite, non-negative USD price", field, usd)
	}
	if usd > maxPriceUSDPerM {
		return 0, fmt.Errorf("config: %s: %v must be a finite, non-negative USD price of at most %v per 1,000,000 tokens", field, usd, maxPriceUSDPerM)
	}
	micros := int64(math.Round(usd * microsPerUSD))
	if usd > 0 && micros == 0 {
		// A non-zero price billed as 0 would silently defeat a cost budget;
		// the likely cause is a per-token price in a per-1M field.
		return 0, fmt.Errorf("config: %s: %v rounds to 0 micro-USD per 1,000,000 tokens (the field is USD per 1,000,000 tokens, not per token; use 0 for a free model)", field, usd)
	}
	return micros, nil
}

// pricer resolves model prices and request costs. It is safe for
// concurrent use; everything but the unpriced-warning bookkeeping is
// read-only after newPricer.
type pricer struct {
	overrides map[string]modelPrice
	free      map[string]bool // modelMeta keys marked free: true
	curated   map[string]modelPrice
	generated map[string]builtinEntry
	warnings  *warningLog

	memo      sync.Map // provider "\x00" model -> *priceMemo
	memoCount atomic.Int64

	mu         sync.Mutex
	unpriced   map[string]bool // distinct names warned about, at most maxUnpricedWarnings
	summarized bool            // the one summary warning went out
}

// newPricer builds a pricer from compilePricing's output and
// compileModelMeta's output (only each entry's Free flag is read; nil
// entries are ignored). warnings receives the unpriced-model warnings;
// nil logs nothing. Any argument may be nil.
func newPricer(overrides map[string]modelPrice, meta map[string]*ModelMetaConfig, warnings *warningLog) *pricer {
	p := &pricer{
		overrides: map[string]modelPrice{},
		free:      map[string]bool{},
		curated:   curatedPricing,
		generated: builtinModels(),
		warnings:  warnings,
		unpriced:  map[string]bool{},
	}
	for k, v := range overrides {
		p.overrides[k] = v
	}
	for k, m := range meta {
		if m != nil && m.Free {
			p.free[k] = true
		}
	}
	return p
}

// price returns the model's price and whether it is known (ok == false:
// unpriced). provider is the configured provider name, model the
// upstream model id (after alias resolution). A free model is known, at
// zero.
func (p *pricer) price(provider, model string) (modelPrice, bool) {
	e := resolveMemo(p, provider, model)
	return e.price, e.source != priceSourceUnpriced
}

// resolve is price with the layer that answered (a priceSource* value),
// remembered per provider and model: the layers never change after
// construction, and under Yaegi the lookups through them cost far more
// than one sync.Map load. At most maxPriceMemo pairs are remembered
// (passthrough models are whatever a client sent).
func (p *pricer) resolve(provider, model string) (modelPrice, string) {
	e := resolveMemo(p, provider, model)
	return e.price, e.source
}

// resolveMemo is resolve's remembered answer for provider and model (one
// not remembered past maxPriceMemo).
func resolveMemo(p *pricer, provider, model string) *priceMemo {
	key := provider + "\x00" + model
	if v, ok := p.memo.Load(key); ok {
		return v.(*priceMemo)
	}
	pr, src := p.resolveLayers(provider, model)
	e := &priceMemo{price: pr, source: src}
	if p.memoCount.Add(1) <= maxPriceMemo {
		p.memo.Store(key, e)
	}
	return e
}

// priceMemo is one remembered resolve answer. warned notes that cost has
// warned about its unpriced model (warnUnpriced keeps its own bound and
// dedup; this only spares a request the name and the lock).
type priceMemo struct {
	price  modelPrice
	source string
	warned atomic.Bool
}

const maxPriceMemo = 4096

// resolveLayers is resolve without the memory.
func (p *pricer) resolveLayers(provider, model string) (modelPrice, string) {
	if p.free[qualifiedModel(provider, model)] || p.free[model] {
		return modelPrice{}, priceSourceFree
	}
	return p.listPrice(provider, model)
}

// listPrice resolves through the price layers only, ignoring modelMeta's
// free flag (what the failover cost guard compares: it cannot see
// modelMeta).
func (p *pricer) listPrice(provider, model string) (modelPrice, string) {
	q := qualifiedModel(provider, model)
	if pr, ok := p.overrides[q]; ok && q != "" {
		return pr, priceSourceOverride
	}
	if pr, ok := p.overrides[model]; ok {
		return pr, priceSourceOverride
	}
	if pr, ok := p.curated[q]; ok && q != "" {
		return pr, priceSourceBuiltin
	}
	if pr, ok := p.curated[model]; ok {
		return pr, priceSourceBuiltin
	}
	if e, ok := p.generated[model]; ok && generatedPriced(e) {
		return modelPrice{inputPerMTokMicroUSD: e.input.micros, outputPerMTokMicroUSD: e.output.micros}, priceSourceLiteLLM
	}
	return modelPrice{}, priceSourceUnpriced
}

// generatedPriced: a generated row prices a model only when both of its
// prices are known and within maxPriceMicrosPerM (an unknown output price
// would under-bill; an absurd one is bad data).
func generatedPriced(e builtinEntry) bool {
	return e.input.known && e.output.known &&
		e.input.micros <= maxPriceMicrosPerM && e.output.micros <= maxPriceMicrosPerM
}

// qualifiedModel is "provider/model", or "" without a provider.
func qualifiedModel(provider, model string) string {
	if provider == "" {
		return ""
	}
	return provider + "/" + model
}

// cost is what usage u of the model costs, in micro-USD, and whether the
// model is priced. An unpriced model costs 0 and is warned about (see
// warnUnpriced). Cache creation and cache read tokens are part of
// promptTokens and billed at the input price: the gateway prices tokens ×
// price, without cache discounts or surcharges.
func (p *pricer) cost(provider, model string, u translate.Usage) (int64, bool) {
	e := resolveMemo(p, provider, model)
	if e.source == priceSourceUnpriced {
		if !e.warned.Load() {
			e.warned.Store(true)
			p.warnUnpricedModel(provider, model)
		}
		return 0, false
	}
	return costMicros(e.price, u), true
}

// warnUnpricedModel is cost's warning for a model without a price.
func (p *pricer) warnUnpricedModel(provider, model string) {
	name := model
	if provider != "" {
		name = provider + "/" + model
	}
	p.warnUnpriced(name)
}

// costMicros is (promptTokens×input + completionTokens×output) / 1,000,000
// in micro-USD, rounded half up, computed exactly in int64: each product
// is split as tokens = q×1e6 + r, so tokens×price/1e6 = q×price +
// r×price/1e6, where r×price < 1e6 × maxPriceMicrosPerM = 1e18 fits in an
// int64. The result is exact whenever it fits in an int64 (e.g. 1e9
// tokens at the USD 1,000,000/1M cap is 1e15 micro-USD, far inside);
// a result that would overflow saturates at math.MaxInt64, which
// exhausts any budget (fail-safe). Negative token counts count as 0.
//
// Counts under a million tokens at prices within maxPriceMicrosPerM (every
// request short of a million-token one) take one product each: both sum
// below 2e18, so the total rounds exactly as the split does.
func costMicros(pr modelPrice, u translate.Usage) int64 {
	in, out := pr.inputPerMTokMicroUSD, pr.outputPerMTokMicroUSD
	if u.PromptTokens < 0 || u.PromptTokens >= microsPerUSD || u.CompletionTokens < 0 || u.CompletionTokens >= microsPerUSD ||
		in < 0 || in > maxPriceMicrosPerM || out < 0 || out > maxPriceMicrosPerM {
		return costMicrosSplit(pr, u)
	}
	part := u.PromptTokens*in + u.CompletionTokens*out
	total := part / microsPerUSD
	if part%microsPerUSD >= microsPerUSD/2 {
		total++
	}
	return total
}

// costMicrosSplit is costMicros for any counts and prices.
func costMicrosSplit(pr modelPrice, u translate.Usage) int64 {
	inWhole, inRem, ok := tokenCost(u.PromptTokens, pr.inputPerMTokMicroUSD)
	if !ok {
		return math.MaxInt64
	}
	outWhole, outRem, ok2 := tokenCost(u.CompletionTokens, pr.outputPerMTokMicroUSD)
	if !ok2 {
		return math.MaxInt64
	}
	if inWhole > math.MaxInt64-outWhole {
		return math.MaxInt64
	}
	total := inWhole + outWhole
	rem := inRem + outRem // < 2e6
	carry := rem / microsPerUSD
	if rem%microsPerUSD >= microsPerUSD/2 {
		carry++
	}
	if total > math.MaxInt64-carry {
		return math.MaxInt64
	}
	return total + carry
}

// tokenCost splits tokens×perM/1e6 into its whole micro-USD and the
// remainder in millionths of a micro-USD (0 <= rem < 1e6). ok is false
// when the whole part overflows an int64.
func tokenCost(tokens, perM int64) (int64, int64, bool) {
	if tokens <= 0 || perM <= 0 {
		return 0, 0, true
	}
	q := tokens / microsPerUSD
	r := tokens % microsPerUSD
	if q > 0 && q > math.MaxInt64/perM {
		return 0, 0, false
	}
	whole := q * perM
	if r > math.MaxInt64/perM { // only for a perM beyond maxPriceMicrosPerM
		return 0, 0, false
	}
	part := r * perM
	partWhole := part / microsPerUSD
	if whole > math.MaxInt64-partWhole {
		return 0, 0, false
	}
	return whole + partWhole, part % microsPerUSD, true
}

// warnUnpriced warns that name has no known price: once per distinct name
// (truncated to maxUnpricedNameBytes), for at most maxUnpricedWarnings
// names over the pricer's lifetime, then one summary warning, then
// nothing. Safe for concurrent use.
func (p *pricer) warnUnpriced(name string) {
	if len(name) > maxUnpricedNameBytes {
		name = name[:maxUnpricedNameBytes]
	}
	p.mu.Lock()
	if p.unpriced[name] {
		p.mu.Unlock()
		return
	}
	if len(p.unpriced) >= maxUnpricedWarnings {
		summarize := !p.summarized
		p.summarized = true
		p.mu.Unlock()
		if summarize && p.warnings != nil {
			p.warnings.warnf("pricing: %d distinct unpriced models already logged; further unpriced models are not logged", maxUnpricedWarnings)
		}
		return
	}
	p.unpriced[name] = true
	p.mu.Unlock()
	if p.warnings != nil {
		p.warnings.warnf("pricing: model %q has no known price (no pricing override, built-in or LiteLLM table entry) and is billed as 0; add a pricing entry for it", name)
	}
}
