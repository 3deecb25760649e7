package gateway

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// aliasSpec is one compiled modelAliases entry: its targets in priority
// order, its own routing strategy ("" = the global routing.strategy) and
// one weight per target (1 unless the alias gives weights).
type aliasSpec struct {
	targets  []string
	strategy string
	weights  []int
}

const maxAliasWeight = 1000

// aliasInput is a modelAliases value read into the object form, with the
// path its targets' errors name: "" for a plain string (its errors name
// the alias itself, as they always have), else the list's path.
type aliasInput struct {
	cfg         AliasConfig
	targetsPath string
}

// aliasValue reads one modelAliases value: a string (one target, never
// split), a list of target strings ([]string or []interface{}), an
// AliasConfig or *AliasConfig, or the object's decoded form
// (map[string]interface{}). A null is an empty target, as it was when
// values were strings.
func aliasValue(field string, value interface{}) (aliasInput, error) {
	switch v := value.(type) {
	case nil:
		return aliasInput{}, fmt.Errorf("%s: the target is empty", field)
	case string:
		return aliasInput{cfg: AliasConfig{Targets: []string{v}}}, nil
	case []string:
		if len(v) == 0 {
			return aliasInput{}, fmt.Errorf("%s: the list of targets is empty", field)
		}
		return aliasInput{cfg: AliasConfig{Targets: append([]string{}, v...)}, targetsPath: field}, nil
	case []interface{}:
		if len(v) == 0 {
			return aliasInput{}, fmt.Errorf("%s: the list of targets is empty", field)
		}
		targets, err := aliasTargetList(field, v)
		if err != nil {
			return aliasInput{}, err
		}
		return aliasInput{cfg: AliasConfig{Targets: targets}, targetsPath: field}, nil
	case AliasConfig:
		return aliasObjectInput(field, v)
	case *AliasConfig:
		if v == nil {
			return aliasInput{}, fmt.Errorf("%s: the target is empty", field)
		}
		return aliasObjectInput(field, *v)
	case map[string]interface{}:
		cfg, err := aliasObject(field, v)
		if err != nil {
			return aliasInput{}, err
		}
		return aliasObjectInput(field, cfg)
	}
	return aliasInput{}, fmt.Errorf("%s: expected a target id, a list of target ids or an object {targets, strategy, weights}, got %s", field, describeValue(value))
}

// aliasObjectInput is the object form, its targets required.
func aliasObjectInput(field string, cfg AliasConfig) (aliasInput, error) {
	if len(cfg.Targets) == 0 {
		return aliasInput{}, fmt.Errorf("%s: targets is required (a non-empty list of target ids)", field)
	}
	cfg.Targets = append([]string{}, cfg.Targets...)
	cfg.Weights = append([]int{}, cfg.Weights...)
	return aliasInput{cfg: cfg, targetsPath: field + ".targets"}, nil
}

// aliasObject reads the object form as JSON or Traefik delivers it: keys
// match case-insensitively (an unknown one is refused by name); targets
// may be a comma-separated string, weights too, and a weight may be a
// number or a numeric string.
func aliasObject(field string, m map[string]interface{}) (AliasConfig, error) {
	var cfg AliasConfig
	keys := make([]string, 0, len(m))
	for key := range m {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	seen := map[string]string{}
	for i := 0; i < len(keys); i++ {
		key := keys[i]
		name := ""
		if strings.EqualFold(key, "targets") || strings.EqualFold(key, "strategy") || strings.EqualFold(key, "weights") {
			name = strings.ToLower(key)
		}
		if name == "" {
			return cfg, fmt.Errorf("%s: unknown config key %q", field, key)
		}
		if prev, dup := seen[name]; dup {
			return cfg, fmt.Errorf("%s: config keys %q and %q are the same key", field, prev, key)
		}
		seen[name] = key
		v := m[key]
		var err error
		switch name {
		case "targets":
			cfg.Targets, err = aliasTargetList(field+".targets", v)
		case "strategy":
			if s, ok := v.(string); ok {
				cfg.Strategy = s
			} else if v != nil {
				err = fmt.Errorf("%s.strategy: expected a string, got %s", field, describeValue(v))
			}
		default:
			cfg.Weights, err = aliasWeightList(field+".weights", v)
		}
		if err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

// aliasTargetList reads a list of target ids: a list of strings, or (in
// the object form) a comma-separated string, "" being an empty list.
func aliasTargetList(path string, v interface{}) ([]string, error) {
	switch l := v.(type) {
	case nil:
		return nil, nil
	case string:
		return splitList(l), nil
	case []string:
		return append([]string{}, l...), nil
	case []interface{}:
		out := make([]string, len(l))
		for i := 0; i < len(l); i++ {
			s, ok := l[i].(string)
			if !ok {
				return nil, fmt.Errorf("%s[%d]: expected a target id (a string), got %s", path, i, describeValue(l[i]))
			}
			out[i] = s
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s: expected a list of target ids, got %s", path, describeValue(v))
}

// aliasWeightList reads the weights: a list of integers (JSON numbers,
// numeric strings) or a comma-separated string of them.
func aliasWeightList(path string, v interface{}) ([]int, error) {
	var items []interface{}
	switch l := v.(type) {
	case nil:
		return nil, nil
	case []int:
		return append([]int{}, l...), nil
	case string:
		parts := splitList(l)
		for i := 0; i < len(parts); i++ {
			items = append(items, parts[i])
		}
	case []interface{}:
		items = l
	default:
		return nil, fmt.Errorf("%s: expected a list of integers, got %s", path, describeValue(v))
	}
	out := make([]int, len(items))
	for i := 0; i < len(items); i++ {
		w, err := aliasWeight(fmt.Sprintf("%s[%d]", path, i), items[i])
		if err != nil {
			return nil, err
		}
		out[i] = w
	}
	return out, nil
}

// aliasWeight reads one weight, range-checked (1-1000).
func aliasWeight(path string, v interface{}) (int, error) {
	switch x := v.(type) {
	case float64:
		if x != math.Trunc(x) {
			return 0, fmt.Errorf("%s: %v is not an integer", path, x)
		}
		if x < 1 || x > maxAliasWeight {
			return 0, fmt.Errorf("%s: %v is out of range (1-%d)", path, x, maxAliasWeight)
		}
		return int(x), nil
	case int:
		return checkAliasWeight(path, x)
	case int64:
		if x < 1 || x > maxAliasWeight {
			return 0, fmt.Errorf("%s: %d is out of range (1-%d)", path, x, maxAliasWeight)
		}
		return int(x), nil
	case string:
		n, err := strconv.Atoi(strings.TrimSpace(x))
		if err != nil {
			return 0, fmt.Errorf("%s: %q is not an integer", path, x)
		}
		return checkAliasWeight(path, n)
	}
	return 0, fmt.Errorf("%s: expected an integer, got %s", path, describeValue(v))
}

func checkAliasWeight(path string, w int) (int, error) {
	if w < 1 || w > maxAliasWeight {
		return 0, fmt.Errorf("%s: %d is out of range (1-%d)", path, w, maxAliasWeight)
	}
	return w, nil
}

// splitList splits a comma-separated list, trimming each item; "" (or
// only spaces) is an empty list.
func splitList(s string) []string {
	if strings.TrimSpace(s) == "" {
		return []string{}
	}
	parts := strings.Split(s, ",")
	for i := 0; i < len(parts); i++ {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// compileAliasSpec validates a read value: every target non-empty, not
// an alias, listed once; a known strategy; weights only with "weighted",
// one per target, each 1-1000.
func compileAliasSpec(field string, in aliasInput, aliases map[string]interface{}) (*aliasSpec, error) {
	cfg := in.cfg
	spec := &aliasSpec{targets: cfg.Targets, strategy: cfg.Strategy, weights: make([]int, len(cfg.Targets))}
	for i := 0; i < len(cfg.Targets); i++ {
		target := cfg.Targets[i]
		path := field
		if in.targetsPath != "" {
			path = fmt.Sprintf("%s[%d]", in.targetsPath, i)
		}
		if strings.TrimSpace(target) == "" {
			return nil, fmt.Errorf("%s: the target is empty", path)
		}
		if _, chained := aliases[target]; chained {
			return nil, fmt.Errorf("%s: the target %q is itself an alias (alias chains are not allowed)", path, target)
		}
		for j := 0; j < i; j++ {
			if cfg.Targets[j] == target {
				return nil, fmt.Errorf("%s: the target %q is listed twice", path, target)
			}
		}
		spec.weights[i] = 1
	}
	if cfg.Strategy != "" && !strategies[cfg.Strategy] {
		return nil, fmt.Errorf("%s.strategy: unknown strategy %q (one of %s)", field, cfg.Strategy, strategyNames)
	}
	if len(cfg.Weights) == 0 {
		return spec, nil
	}
	if cfg.Strategy != "weighted" {
		return nil, fmt.Errorf("%s.weights: weights are only allowed with strategy \"weighted\"", field)
	}
	if len(cfg.Weights) != len(cfg.Targets) {
		return nil, fmt.Errorf("%s.weights: %d weights for %d targets (one per target)", field, len(cfg.Weights), len(cfg.Targets))
	}
	for i := 0; i < len(cfg.Weights); i++ {
		w, err := checkAliasWeight(fmt.Sprintf("%s.weights[%d]", field, i), cfg.Weights[i])
		if err != nil {
			return nil, err
		}
		spec.weights[i] = w
	}
	return spec, nil
}

func stringIn(list []string, s string) bool {
	for i := 0; i < len(list); i++ {
		if list[i] == s {
			return true
		}
	}
	return false
}
