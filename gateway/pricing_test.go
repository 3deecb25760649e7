package gateway

import (
	"fmt"
	"math"
	"math/big"
	"strings"
	"sync"
	"testing"

	"github.com/llmgateway/llmgateway/gateway/internal/translate"
)

func TestCompilePricingRejectsBadValues(t *testing.T) {
	cases := []struct {
		name string
		in   map[string]*ModelPricing
		want string
	}{
		{"negative input", map[string]*ModelPricing{"gpt-x": {InputPerM: -1, OutputPerM: 1}},
			`config: pricing["gpt-x"].inputPerM: -1 must be a finite, non-negative USD price`},
		{"negative output", map[string]*ModelPricing{"oai/gpt-x": {InputPerM: 1, OutputPerM: -0.5}},
			`config: pricing["oai/gpt-x"].outputPerM: -0.5 must be a finite, non-negative USD price`},
		{"NaN input", map[string]*ModelPricing{"m": {InputPerM: math.NaN()}},
			`config: pricing["m"].inputPerM: NaN must be a finite, non-negative USD price`},
		{"+Inf output", map[string]*ModelPricing{"m": {OutputPerM: math.Inf(1)}},
			`config: pricing["m"].outputPerM: +Inf must be a finite, non-negative USD price`},
		{"-Inf input", map[string]*ModelPricing{"m": {InputPerM: math.Inf(-1)}},
			`config: pricing["m"].inputPerM: -Inf must be a finite, non-negative USD price`},
		{"absurdly large", map[string]*ModelPricing{"m": {InputPerM: 1, OutputPerM: 1000000.5}},
			`config: pricing["m"].outputPerM: 1.0000005e+06 must be a finite, non-negative USD price of at most`},
		{"per-token price rounds to zero", map[string]*ModelPricing{"m": {InputPerM: 2.5e-7, OutputPerM: 1}},
			`config: pricing["m"].inputPerM: 2.5e-07 rounds to 0 micro-USD per 1,000,000 tokens`},
		{"nil entry", map[string]*ModelPricing{"m": nil},
			`config: pricing["m"]: nil value`},
		{"empty key", map[string]*ModelPricing{"": {InputPerM: 1}},
			`config: pricing[""]: the model id is empty`},
		{"blank key", map[string]*ModelPricing{"  ": {InputPerM: 1}},
			`config: pricing["  "]: the model id is empty`},
		{"padded key", map[string]*ModelPricing{"gpt-4o ": {InputPerM: 1}},
			`config: pricing["gpt-4o "]: the model id has leading or trailing spaces`},
		{"empty provider", map[string]*ModelPricing{"/gpt-4o": {InputPerM: 1}},
			`config: pricing["/gpt-4o"]: the model id has an empty provider or model part`},
		{"empty model", map[string]*ModelPricing{"oai/": {InputPerM: 1}},
			`config: pricing["oai/"]: the model id has an empty provider or model part`},
		{"first bad key in order", map[string]*ModelPricing{"b": {InputPerM: -2}, "a": {InputPerM: -1}, "ok": {InputPerM: 1}},
			`config: pricing["a"].inputPerM: -1 `},
	}
	for _, tc := range cases {
		got, err := compilePricing(tc.in)
		if err == nil {
			t.Errorf("%s: accepted %v", tc.name, got)
			continue
		}
		if !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: error %q, want prefix %q", tc.name, err, tc.want)
		}
	}
}

func TestCompilePricingConvertsToMicros(t *testing.T) {
	cases := []struct {
		usd  float64
		want int64
	}{
		{0, 0},
		{0.15, 150000},
		{0.075, 75000},
		{0.1 + 0.2, 300000}, // float noise rounds away
		{1.1, 1100000},
		{2.675, 2675000},
		{3, 3000000},
		{4.9e-7, -1}, // positive but rounds to 0: rejected
		{5e-7, 1},    // half a micro-USD rounds up
		{1.5e-6, 2},
		{1000000, 1000000000000}, // the cap itself is allowed
	}
	for _, tc := range cases {
		got, err := compilePricing(map[string]*ModelPricing{"oai/m": {InputPerM: tc.usd, OutputPerM: tc.usd}, "m": {}})
		if tc.want < 0 {
			if err == nil {
				t.Errorf("%v: accepted as %v", tc.usd, got["oai/m"])
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", tc.usd, err)
			continue
		}
		if p := got["oai/m"]; p.inputPerMTokMicroUSD != tc.want || p.outputPerMTokMicroUSD != tc.want {
			t.Errorf("%v USD/M: got %+v, want %d", tc.usd, p, tc.want)
		}
		if p, ok := got["m"]; !ok || p != (modelPrice{}) {
			t.Errorf("an all-zero entry must be kept as a known zero price, got %+v %v", p, ok)
		}
	}
	if got, err := compilePricing(nil); err != nil || len(got) != 0 {
		t.Fatalf("nil pricing: %v %v", got, err)
	}
}

// testPricer is a pricer over small, fixed curated and generated tables so
// the resolution order is observable whatever the real tables say.
func testPricer(t *testing.T, pricing map[string]*ModelPricing, meta map[string]*ModelMetaConfig) *pricer {
	t.Helper()
	overrides, err := compilePricing(pricing)
	if err != nil {
		t.Fatal(err)
	}
	p := newPricer(overrides, meta, nil)
	p.curated = map[string]modelPrice{
		"cur":       {3000000, 15000000},
		"both":      {2000000, 8000000},
		"oai/qcur":  {7000000, 7000000},
		"qcur":      {6000000, 6000000},
		"shadowed":  {1000000, 1000000},
		"free-meta": {1000000, 1000000},
	}
	p.generated = map[string]builtinEntry{
		"gen":       {input: metaCost{micros: 250000, known: true}, output: metaCost{micros: 2000000, known: true}},
		"both":      {input: metaCost{micros: 1, known: true}, output: metaCost{micros: 1, known: true}},
		"oai/gen2":  {input: metaCost{micros: 9, known: true}, output: metaCost{micros: 9, known: true}},
		"half":      {input: metaCost{micros: 100, known: true}},
		"nothing":   {context: 1000},
		"absurd":    {input: metaCost{micros: maxPriceMicrosPerM + 1, known: true}, output: metaCost{micros: 1, known: true}},
		"zero":      {input: metaCost{known: true}, output: metaCost{known: true}},
		"shadowed":  {input: metaCost{micros: 5, known: true}, output: metaCost{micros: 5, known: true}},
		"m:free":    {},
		"free-meta": {input: metaCost{micros: 5, known: true}, output: metaCost{micros: 5, known: true}},
	}
	return p
}

func TestPricerResolutionOrder(t *testing.T) {
	p := testPricer(t, map[string]*ModelPricing{
		"oai/shadowed":  {InputPerM: 10, OutputPerM: 20},
		"shadowed":      {InputPerM: 1.5, OutputPerM: 2.5},
		"free-q":        {InputPerM: 4, OutputPerM: 4},
		"free-meta":     {InputPerM: 4, OutputPerM: 4},
		"oai/nowhere":   {InputPerM: 0, OutputPerM: 0},
		"ant/bare/with": {InputPerM: 8, OutputPerM: 8},
	}, map[string]*ModelMetaConfig{
		"oai/free-q": {Free: true},
		"free-meta":  {Free: true},
		"oai/cur":    {InputCostPerMTokMicroUsd: 1, OutputCostPerMTokMicroUsd: 1}, // display only
		"ctx-only":   {ContextTokens: 5},
		"nil-entry":  nil,
	})
	cases := []struct {
		provider, model string
		src             string
		in, out         int64
	}{
		{"oai", "shadowed", priceSourceOverride, 10000000, 20000000}, // provider/model override
		{"other", "shadowed", priceSourceOverride, 1500000, 2500000}, // bare override beats curated and generated
		{"", "shadowed", priceSourceOverride, 1500000, 2500000},      // no provider: bare lookups only
		{"oai", "free-q", priceSourceFree, 0, 0},                     // provider/model free beats an override
		{"other", "free-q", priceSourceOverride, 4000000, 4000000},   // the free flag is per provider/model
		{"any", "free-meta", priceSourceFree, 0, 0},                  // bare free beats override, curated, generated
		{"oai", "nowhere", priceSourceOverride, 0, 0},                // a zero override is a known price
		{"other", "nowhere", priceSourceUnpriced, 0, 0},              // ...for that provider only
		{"ant", "bare/with", priceSourceOverride, 8000000, 8000000},  // a model id containing "/"
		{"oai", "cur", priceSourceBuiltin, 3000000, 15000000},        // modelMeta costs never bill
		{"oai", "qcur", priceSourceBuiltin, 7000000, 7000000},        // curated provider/model first
		{"ant", "qcur", priceSourceBuiltin, 6000000, 6000000},        // then curated bare
		{"oai", "both", priceSourceBuiltin, 2000000, 8000000},        // curated beats generated
		{"oai", "gen", priceSourceLiteLLM, 250000, 2000000},          // generated, bare id
		{"oai", "gen2", priceSourceUnpriced, 0, 0},                   // the generated table is bare-keyed only
		{"oai", "zero", priceSourceLiteLLM, 0, 0},                    // a known zero row is priced
		{"oai", "half", priceSourceUnpriced, 0, 0},                   // one unknown price: unpriced
		{"oai", "nothing", priceSourceUnpriced, 0, 0},                // context only
		{"oai", "absurd", priceSourceUnpriced, 0, 0},                 // bad generated data is not a price
		{"oai", "m:free", priceSourceUnpriced, 0, 0},                 // ":free" suffix is display-only
		{"oai", "ctx-only", priceSourceUnpriced, 0, 0},               // modelMeta without free
		{"oai", "nil-entry", priceSourceUnpriced, 0, 0},              // nil meta entry ignored
		{"oai", "unknown-model", priceSourceUnpriced, 0, 0},
	}
	for _, tc := range cases {
		pr, src := p.resolve(tc.provider, tc.model)
		if src != tc.src || pr.inputPerMTokMicroUSD != tc.in || pr.outputPerMTokMicroUSD != tc.out {
			t.Errorf("%s/%s: %s %+v, want %s {%d %d}", tc.provider, tc.model, src, pr, tc.src, tc.in, tc.out)
		}
		pr2, ok := p.price(tc.provider, tc.model)
		if pr2 != pr || ok != (tc.src != priceSourceUnpriced) {
			t.Errorf("%s/%s: price() = %+v %v disagrees with resolve", tc.provider, tc.model, pr2, ok)
		}
	}
	// The failover cost guard's view skips the free flag.
	if pr, src := p.listPrice("any", "free-meta"); src != priceSourceOverride || pr.inputPerMTokMicroUSD != 4000000 {
		t.Fatalf("listPrice(free-meta) = %s %+v", src, pr)
	}
}

// The real tables: a curated model, a model only the generated table
// knows, and one it lists without a price.
func TestPricingBuiltinTables(t *testing.T) {
	p := newPricer(nil, nil, nil)
	if pr, src := p.resolve("openai", "gpt-4o"); src != priceSourceBuiltin || pr.inputPerMTokMicroUSD != 2500000 || pr.outputPerMTokMicroUSD != 10000000 {
		t.Errorf("gpt-4o: %s %+v", src, pr)
	}
	generatedOnly := []string{"gpt-4-turbo", "claude-3-opus-20240229", "gemini-1.5-pro", "grok-4", "deepseek-chat"}
	for _, m := range generatedOnly {
		if _, curated := curatedPricing[m]; curated {
			t.Fatalf("%s is curated; pick a generated-only model", m)
		}
		pr, src := p.resolve("x", m)
		if src != priceSourceLiteLLM || pr.inputPerMTokMicroUSD <= 0 || pr.outputPerMTokMicroUSD <= 0 {
			t.Errorf("%s: %s %+v, want a non-zero generated price", m, src, pr)
		}
	}
	if _, ok := p.price("x", "qwen-flash"); ok { // listed with "-" prices
		t.Error("qwen-flash has no price in the generated table")
	}
}

func TestCuratedPricingIsSane(t *testing.T) {
	if len(curatedPricing) < 20 {
		t.Fatalf("curated table has %d entries", len(curatedPricing))
	}
	for id, pr := range curatedPricing {
		embedding := strings.Contains(id, "embedding")
		if strings.TrimSpace(id) != id || id == "" ||
			pr.inputPerMTokMicroUSD <= 0 || pr.inputPerMTokMicroUSD > maxPriceMicrosPerM ||
			pr.outputPerMTokMicroUSD < 0 || pr.outputPerMTokMicroUSD > maxPriceMicrosPerM ||
			(pr.outputPerMTokMicroUSD == 0) != embedding {
			t.Errorf("curated %q: %+v", id, pr)
		}
	}
}

// refCost is the exact half-up rounded cost, computed with big integers.
func refCost(pr modelPrice, u translate.Usage) int64 {
	sum := new(big.Int).Mul(big.NewInt(u.PromptTokens), big.NewInt(pr.inputPerMTokMicroUSD))
	sum.Add(sum, new(big.Int).Mul(big.NewInt(u.CompletionTokens), big.NewInt(pr.outputPerMTokMicroUSD)))
	sum.Add(sum, big.NewInt(500000))
	sum.Quo(sum, big.NewInt(1000000))
	if !sum.IsInt64() {
		return math.MaxInt64
	}
	return sum.Int64()
}

func TestPricingCostArithmetic(t *testing.T) {
	cases := []struct {
		name string
		pr   modelPrice
		u    translate.Usage
		want int64
	}{
		{"typical", modelPrice{3000000, 15000000}, translate.Usage{PromptTokens: 1000, CompletionTokens: 500}, 10500},
		{"one token below half", modelPrice{499999, 0}, translate.Usage{PromptTokens: 1}, 0},
		{"one token at half rounds up", modelPrice{500000, 0}, translate.Usage{PromptTokens: 1}, 1},
		{"remainders add before rounding", modelPrice{300000, 200000}, translate.Usage{PromptTokens: 1, CompletionTokens: 1}, 1},
		{"remainders below half", modelPrice{250000, 240000}, translate.Usage{PromptTokens: 1, CompletionTokens: 1}, 0},
		{"remainders carry a whole micro", modelPrice{700000, 800000}, translate.Usage{PromptTokens: 1, CompletionTokens: 1}, 2},
		{"zero price", modelPrice{}, translate.Usage{PromptTokens: 1000000, CompletionTokens: 1000000}, 0},
		{"no tokens", modelPrice{3000000, 15000000}, translate.Usage{}, 0},
		{"negative tokens count as zero", modelPrice{3000000, 15000000}, translate.Usage{PromptTokens: -5, CompletionTokens: 1000000}, 15000000},
		{"1e9 tokens at the price cap", modelPrice{maxPriceMicrosPerM, maxPriceMicrosPerM}, translate.Usage{PromptTokens: 1000000000, CompletionTokens: 1000000000}, 2000000000000000},
		{"large, non-round", modelPrice{999999999999, 123456789}, translate.Usage{PromptTokens: 999999999, CompletionTokens: 7654321987}, -1},
		{"huge tokens, exact", modelPrice{maxPriceMicrosPerM, 1}, translate.Usage{PromptTokens: 9000000000000, CompletionTokens: 1}, 9000000000000000000},
		{"overflow saturates", modelPrice{maxPriceMicrosPerM, 0}, translate.Usage{PromptTokens: math.MaxInt64}, math.MaxInt64},
		{"sum overflow saturates", modelPrice{maxPriceMicrosPerM, maxPriceMicrosPerM}, translate.Usage{PromptTokens: 9000000000000, CompletionTokens: 9000000000000}, math.MaxInt64},
		{"price beyond the cap saturates, never wraps", modelPrice{math.MaxInt64, 0}, translate.Usage{PromptTokens: 3}, math.MaxInt64},
	}
	for _, tc := range cases {
		want := tc.want
		if want < 0 {
			want = refCost(tc.pr, tc.u)
		}
		if got := costMicros(tc.pr, tc.u); got != want {
			t.Errorf("%s: %d, want %d", tc.name, got, want)
		}
		if tc.u.PromptTokens >= 0 && tc.pr.inputPerMTokMicroUSD <= maxPriceMicrosPerM {
			if ref := refCost(tc.pr, tc.u); ref != want {
				t.Errorf("%s: reference %d disagrees with %d", tc.name, ref, want)
			}
		}
	}
	// A sweep against the big-integer reference.
	prices := []int64{0, 1, 7, 150000, 499999, 500001, 2500000, 15000000, 999999999, 123456789012, maxPriceMicrosPerM}
	tokens := []int64{0, 1, 2, 999, 1000, 499999, 500000, 999999, 1000000, 1000001, 123456789, 4000000000, 999999999999}
	for i := 0; i < len(prices); i++ {
		for j := 0; j < len(tokens); j++ {
			pr := modelPrice{prices[i], prices[len(prices)-1-i]}
			u := translate.Usage{PromptTokens: tokens[j], CompletionTokens: tokens[len(tokens)-1-j]}
			if got, want := costMicros(pr, u), refCost(pr, u); got != want {
				t.Errorf("%+v %d/%d: %d, want %d", pr, u.PromptTokens, u.CompletionTokens, got, want)
			}
		}
	}
	// Both counts under a million (costMicros' one-product path) in every
	// pairing, and the split it stands in for, against the reference.
	for i := 0; i < len(prices); i++ {
		for k := 0; k < len(prices); k++ {
			pr := modelPrice{prices[i], prices[k]}
			for j := 0; j < len(tokens) && tokens[j] < 1000000; j++ {
				for l := 0; l < len(tokens) && tokens[l] < 1000000; l++ {
					u := translate.Usage{PromptTokens: tokens[j], CompletionTokens: tokens[l]}
					want := refCost(pr, u)
					if got := costMicros(pr, u); got != want {
						t.Errorf("%+v %d/%d: %d, want %d", pr, u.PromptTokens, u.CompletionTokens, got, want)
					}
					if got := costMicrosSplit(pr, u); got != want {
						t.Errorf("split %+v %d/%d: %d, want %d", pr, u.PromptTokens, u.CompletionTokens, got, want)
					}
				}
			}
		}
	}
}

func TestPricerCostWarnsOncePerUnpricedModel(t *testing.T) {
	logs := &syncBuffer{}
	w := &warningLog{log: newLogger("t", logs)}
	overrides, err := compilePricing(map[string]*ModelPricing{"priced": {InputPerM: 3, OutputPerM: 15}})
	if err != nil {
		t.Fatal(err)
	}
	p := newPricer(overrides, map[string]*ModelMetaConfig{"gratis": {Free: true}}, w)
	u := translate.Usage{PromptTokens: 1000, CompletionTokens: 500}
	if c, ok := p.cost("oai", "priced", u); c != 10500 || !ok {
		t.Fatalf("priced: %d %v", c, ok)
	}
	if c, ok := p.cost("oai", "gratis", u); c != 0 || !ok {
		t.Fatalf("free: %d %v", c, ok)
	}
	for i := 0; i < 3; i++ {
		if c, ok := p.cost("oai", "mystery\nINJECTED", u); c != 0 || ok {
			t.Fatalf("unpriced: %d %v", c, ok)
		}
	}
	if c, ok := p.cost("other", "mystery\nINJECTED", u); c != 0 || ok {
		t.Fatalf("unpriced: %d %v", c, ok)
	}
	out := logs.String()
	if n := strings.Count(out, "has no known price"); n != 2 {
		t.Fatalf("%d unpriced warnings, want 2 (one per provider/model):\n%s", n, out)
	}
	if !strings.Contains(out, `model "oai/mystery\nINJECTED" has no known price`) || strings.Contains(out, "\nINJECTED") {
		t.Fatalf("the model name must be quoted:\n%s", out)
	}
	if items, _ := w.snapshot(); len(items) != 2 {
		t.Fatalf("kept warnings %q", items)
	}
	// A very long name is truncated, and its truncation deduplicates.
	long := strings.Repeat("x", 10000)
	p.warnUnpriced(long)
	p.warnUnpriced(long + "y")
	if n := strings.Count(logs.String(), "has no known price"); n != 3 || strings.Contains(logs.String(), strings.Repeat("x", maxUnpricedNameBytes+1)) {
		t.Fatalf("long names: %d warnings", n)
	}
}

func TestPricingUnpricedWarningsCappedConcurrently(t *testing.T) {
	logs := &syncBuffer{}
	p := newPricer(nil, nil, &warningLog{log: newLogger("t", logs)})
	const names = 300
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < names; i++ {
				n := (i*7 + g*37) % names // each goroutine in its own order
				if c, ok := p.cost("prov", fmt.Sprintf("unpriced-model-%03d", n), translate.Usage{PromptTokens: 10}); c != 0 || ok {
					t.Errorf("cost %d %v", c, ok)
				}
			}
		}(g)
	}
	wg.Wait()
	out := logs.String()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	per, summary := 0, 0
	seen := map[string]bool{}
	for i := 0; i < len(lines); i++ {
		switch {
		case strings.Contains(lines[i], "has no known price"):
			per++
			start := strings.Index(lines[i], `"prov/`)
			seen[lines[i][start:start+len(`"prov/unpriced-model-000"`)]] = true
		case strings.Contains(lines[i], "further unpriced models are not logged"):
			summary++
		default:
			t.Errorf("unexpected line %q", lines[i])
		}
	}
	if per != maxUnpricedWarnings || len(seen) != maxUnpricedWarnings || summary != 1 {
		t.Fatalf("%d per-model warnings (%d distinct), %d summaries; want %d, %d, 1", per, len(seen), summary, maxUnpricedWarnings, maxUnpricedWarnings)
	}
	// Later calls stay silent, for new and already-warned names alike.
	p.warnUnpriced("prov/brand-new")
	p.warnUnpriced("prov/unpriced-model-000")
	if logs.String() != out {
		t.Fatal("a warning was logged past the cap")
	}
}
