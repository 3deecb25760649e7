package gateway

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// modelMeta is what the gateway knows about one model for display. A
// zero context or a cost with known == false is unknown, never invented.
type modelMeta struct {
	context int64
	input   metaCost
	output  metaCost
}

// metaCost is one price in micro-USD per 1,000,000 tokens.
type metaCost struct {
	micros int64
	known  bool
}

// builtinEntry is one row of the generated built-in table.
type builtinEntry struct {
	context int64
	input   metaCost
	output  metaCost
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

// parseModelTable reads "id\tcontext\tinput\toutput" lines; "-" is unknown.
func parseModelTable(table string) map[string]builtinEntry {
	out := map[string]builtinEntry{}
	lines := strings.Split(table, "\n")
	for i := 0; i < len(lines); i++ {
		f := strings.Split(lines[i], "\t")
		if len(f) != 4 {
			continue
		}
		var e builtinEntry
		e.context, _ = strconv.ParseInt(f[1], 10, 64)
		e.input = parseMetaCost(f[2])
		e.output = parseMetaCost(f[3])
		out[f[0]] = e
	}
	return out
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
// discovery-captured context, the built-in table; cost from modelMeta
// (or its free flag), a ":free" id suffix, the built-in table. An alias
// takes its own modelMeta entry's fields first and inherits the rest
// from its target.
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
		if !m.input.known {
			m.input = b.input
		}
		if !m.output.known {
			m.output = b.output
		}
	}
	return m
}
