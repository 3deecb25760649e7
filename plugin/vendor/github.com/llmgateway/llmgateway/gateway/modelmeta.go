package gateway

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// modelMeta is what the gateway knows about one model: for display, and
// (maxOutput) for budget reservations. A zero context or maxOutput, or a
// cost with known == false, is unknown, never invented.
type modelMeta struct {
	context   int64
	maxOutput int64 // the most output tokens one response may carry
	input     metaCost
	output    metaCost
}

// metaCost is one price in micro-USD per 1,000,000 tokens.
type metaCost struct {
	micros int64
	known  bool
}

// builtinEntry is one row of the generated built-in table.
type builtinEntry struct {
	context   int64
	maxOutput int64
	input     metaCost
	output    metaCost
}

var (
	builtinOnce  sync.Once
	builtinTable map[string]builtinEntry
)

// builtinModels parses builtinModelTable once.
func builtinModels() map[string]builtinEntry {
	builtinOnce.Do(func() {
		builtinTable = parseModelTable(builtinModelTable)
	})
	return builtinTable
}

// parseModelTable reads "id\tcontext\tinput\toutput\tmaxOutput" lines
// (the generated table's five columns; a line of any other shape is
// skipped); "-" is unknown.
func parseModelTable(table string) map[string]builtinEntry {
	out := map[string]builtinEntry{}
	lines := strings.Split(table, "\n")
	for i := 0; i < len(lines); i++ {
		f := strings.Split(lines[i], "\t")
		if len(f) != 5 {
			continue
		}
		var e builtinEntry
		e.context = parseTokens(f[1])
		e.input = parseMetaCost(f[2])
		e.output = parseMetaCost(f[3])
		e.maxOutput = parseTokens(f[4])
		out[f[0]] = e
	}
	return out
}

// parseTokens reads a token count; 0 (unknown) for "-", a negative or a
// malformed field.
func parseTokens(field string) int64 {
	n, err := strconv.ParseInt(field, 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

func parseMetaCost(field string) metaCost {
	n, err := strconv.ParseInt(field, 10, 64)
	if err != nil || n < 0 {
		return metaCost{}
	}
	return metaCost{micros: n, known: true}
}

// compileModelMeta validates modelMeta entries.
func compileModelMeta(entries map[string]*ModelMetaConfig) (map[string]*ModelMetaConfig, error) {
	out := make(map[string]*ModelMetaConfig, len(entries))
	for key, m := range entries {
		field := fmt.Sprintf("modelMeta[%q]", key)
		if strings.TrimSpace(key) == "" {
			return nil, fmt.Errorf("config: %s: the model id is empty", field)
		}
		if m == nil {
			return nil, fmt.Errorf("config: %s: nil value", field)
		}
		if m.ContextTokens < 0 {
			return nil, fmt.Errorf("config: %s.contextTokens: %d must not be negative", field, m.ContextTokens)
		}
		if m.MaxOutputTokens < 0 {
			return nil, fmt.Errorf("config: %s.maxOutputTokens: %d must not be negative", field, m.MaxOutputTokens)
		}
		if m.InputCostPerMTokMicroUsd < 0 {
			return nil, fmt.Errorf("config: %s.inputCostPerMTokMicroUsd: %d must not be negative", field, m.InputCostPerMTokMicroUsd)
		}
		if m.OutputCostPerMTokMicroUsd < 0 {
			return nil, fmt.Errorf("config: %s.outputCostPerMTokMicroUsd: %d must not be negative", field, m.OutputCostPerMTokMicroUsd)
		}
		if m.Free && (m.InputCostPerMTokMicroUsd != 0 || m.OutputCostPerMTokMicroUsd != 0) {
			return nil, fmt.Errorf("config: %s.free: contradicts a non-zero cost", field)
		}
		out[key] = m
	}
	return out, nil
}

// metaLayer applies one modelMeta override over what is known so far:
// each field only where the layer sets it.
func metaLayer(known modelMeta, m *ModelMetaConfig) modelMeta {
	if m == nil {
		return known
	}
	if known.context == 0 && m.ContextTokens > 0 {
		known.context = m.ContextTokens
	}
	if known.maxOutput == 0 && m.MaxOutputTokens > 0 {
		known.maxOutput = m.MaxOutputTokens
	}
	if m.Free {
		if !known.input.known {
			known.input = metaCost{known: true}
		}
		if !known.output.known {
			known.output = metaCost{known: true}
		}
	}
	if !known.input.known && m.InputCostPerMTokMicroUsd > 0 {
		known.input = metaCost{micros: m.InputCostPerMTokMicroUsd, known: true}
	}
	if !known.output.known && m.OutputCostPerMTokMicroUsd > 0 {
		known.output = metaCost{micros: m.OutputCostPerMTokMicroUsd, known: true}
	}
	return known
}

// resolveMeta resolves a model's metadata, most specific layer first:
// context from modelMeta ("provider/model", then bare), the provider's
// discovery-captured context, the built-in table; the maximum output
// from modelMeta, then the built-in table (discovery does not report
// it); cost from modelMeta (or its free flag), a ":free" id suffix, the
// built-in table. An alias takes its own modelMeta entry's fields first
// and inherits the rest from its target.
func (r *modelRegistry) resolveMeta(route modelRoute) modelMeta {
	var m modelMeta
	if route.alias != "" {
		m = metaLayer(m, r.meta[route.alias])
	}
	m = metaLayer(m, r.meta[route.provider.name+"/"+route.model])
	m = metaLayer(m, r.meta[route.model])
	if m.context == 0 {
		m.context = r.contexts[route.provider.name][route.model]
	}
	if strings.HasSuffix(route.model, ":free") {
		if !m.input.known {
			m.input = metaCost{known: true}
		}
		if !m.output.known {
			m.output = metaCost{known: true}
		}
	}
	if b, ok := builtinModels()[route.model]; ok {
		if m.context == 0 {
			m.context = b.context
		}
		if m.maxOutput == 0 {
			m.maxOutput = b.maxOutput
		}
		if !m.input.known {
			m.input = b.input
		}
		if !m.output.known {
			m.output = b.output
		}
	}
	return m
}

// maxOutputTokens is the most output tokens the route's first candidate
// may produce in one response (0: unknown), for a budget reservation on a
// request that names no output cap. It is a field read: each registry
// snapshot resolves every candidate's value once (resolveMeta's
// maxOutput), the registry's route copies the first candidate's into the
// route (an alias's own modelMeta entry first), and a user's remembered
// route keeps it. g is the gateway whose registry built the route.
func maxOutputTokens(g *Gateway, route modelRoute) int64 {
	return route.maxOutput
}
