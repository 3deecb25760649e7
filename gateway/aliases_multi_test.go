package gateway

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// multiAliasConfig: providers alpha (shared, a1) and beta (shared, onlyb)
// at aURL and bURL; groups all, bonly (provider beta) and byname (provider
// beta, models team/*).
func multiAliasConfig(aURL, bURL, extra, aliases string) string {
	return `{` + extra + `"providers":{
		"alpha":{"type":"openai","baseUrl":"` + aURL + `","models":["shared","a1"]},
		"beta":{"type":"openai","baseUrl":"` + bURL + `","models":["shared","onlyb"]}},
		"modelAliases":` + aliases + `,
		"groups":{"all":{},"bonly":{"providers":["beta"]},"byname":{"providers":["beta"],"models":["team/*"]}},
		"users":{"inline":[
			{"name":"all","group":"all","apiKey":"sk-multi-all"},
			{"name":"bonly","group":"bonly","apiKey":"sk-multi-bonly"},
			{"name":"byname","group":"byname","apiKey":"sk-multi-byname"}]}}`
}

// specString renders a compiled alias for comparison.
func specString(s *aliasSpec) string {
	if s == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%q %q %v", s.targets, s.strategy, s.weights)
}

// candString renders candidates as provider/model*weight.
func candString(cands []candidate) string {
	parts := make([]string, len(cands))
	for i := 0; i < len(cands); i++ {
		parts[i] = fmt.Sprintf("%s/%s*%d", cands[i].provider.name, cands[i].model, cands[i].weight)
	}
	return strings.Join(parts, " ")
}

func compileAliasesOf(t *testing.T, cfg *Config) map[string]*aliasSpec {
	t.Helper()
	c, err := compileConfig(cfg)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return c.aliases
}

// multiAliasShapes is every JSON shape, and what each compiles to.
const multiAliasShapes = `{
	"plain": "a1",
	"commas": "a1,onlyb",
	"list": ["shared", "beta/onlyb"],
	"one": ["a1"],
	"obj": {"targets": ["a1", "onlyb"]},
	"rr": {"targets": ["shared"], "strategy": "round-robin"},
	"w": {"targets": ["a1", "onlyb", "shared"], "strategy": "weighted", "weights": [3, 1, 1000]},
	"wdefault": {"targets": ["a1", "onlyb"], "strategy": "weighted"},
	"Cased": {"Targets": ["a1"], "STRATEGY": "least-cost"},
	"nulls": {"targets": ["a1"], "strategy": null, "weights": null}}`

var multiAliasWant = map[string]string{
	"plain":    `["a1"] "" [1]`,
	"commas":   `["a1,onlyb"] "" [1]`, // a top-level string is one target, never split
	"list":     `["shared" "beta/onlyb"] "" [1 1]`,
	"one":      `["a1"] "" [1]`,
	"obj":      `["a1" "onlyb"] "" [1 1]`,
	"rr":       `["shared"] "round-robin" [1]`,
	"w":        `["a1" "onlyb" "shared"] "weighted" [3 1 1000]`,
	"wdefault": `["a1" "onlyb"] "weighted" [1 1]`,
	"Cased":    `["a1"] "least-cost" [1]`,
	"nulls":    `["a1"] "" [1]`,
}

func checkAliasSpecs(t *testing.T, got map[string]*aliasSpec, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d aliases compiled, want %d", len(got), len(want))
	}
	for name, w := range want {
		if s := specString(got[name]); s != w {
			t.Errorf("%s: compiled %s, want %s", name, s, w)
		}
	}
}

func TestModelAliasShapesDecode(t *testing.T) {
	doc := multiAliasConfig("http://127.0.0.1:1", "http://127.0.0.1:2", "", multiAliasShapes)
	cfg, err := DecodeConfigJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	checkAliasSpecs(t, compileAliasesOf(t, cfg), multiAliasWant)
	// The generic map a host decodes from the same JSON.
	fromMap, err := ConfigFromMap(mapFromJSON(t, doc))
	if err != nil {
		t.Fatal(err)
	}
	checkAliasSpecs(t, compileAliasesOf(t, fromMap), multiAliasWant)
}

// The Traefik form: every scalar a string, a list as a comma-separated
// string inside the object form.
func TestModelAliasShapesTraefikForm(t *testing.T) {
	raw := mapFromJSON(t, multiAliasConfig("http://127.0.0.1:1", "http://127.0.0.1:2", "", `{}`))
	raw["modelAliases"] = map[string]interface{}{
		"plain":    "a1",
		"commas":   "a1,onlyb",
		"list":     []interface{}{"shared", "beta/onlyb"},
		"one":      []interface{}{"a1"},
		"obj":      map[string]interface{}{"targets": "a1, onlyb"},
		"rr":       map[string]interface{}{"targets": "shared", "strategy": "round-robin"},
		"w":        map[string]interface{}{"targets": "a1,onlyb,shared", "strategy": "weighted", "weights": "3, 1,1000"},
		"wdefault": map[string]interface{}{"targets": []interface{}{"a1", "onlyb"}, "strategy": "weighted", "weights": ""},
		"Cased":    map[string]interface{}{"Targets": []interface{}{"a1"}, "STRATEGY": "least-cost"},
		"nulls":    map[string]interface{}{"targets": []interface{}{"a1"}, "strategy": "", "weights": []interface{}{}},
	}
	cfg, err := ConfigFromMap(raw)
	if err != nil {
		t.Fatal(err)
	}
	checkAliasSpecs(t, compileAliasesOf(t, cfg), multiAliasWant)
	raw["modelAliases"] = map[string]interface{}{
		"w": map[string]interface{}{"targets": []interface{}{"a1", "onlyb"}, "strategy": "weighted", "weights": []interface{}{"2", "7"}},
	}
	if cfg, err = ConfigFromMap(raw); err != nil {
		t.Fatal(err)
	}
	checkAliasSpecs(t, compileAliasesOf(t, cfg), map[string]string{"w": `["a1" "onlyb"] "weighted" [2 7]`})
	raw["modelAliases"] = ""
	if cfg, err = ConfigFromMap(raw); err != nil {
		t.Fatal(err)
	}
	checkAliasSpecs(t, compileAliasesOf(t, cfg), map[string]string{})
}

// The Go library form: AliasConfig, *AliasConfig, []string, and the
// decoded forms.
func TestModelAliasShapesLibraryForm(t *testing.T) {
	cfg, err := DecodeConfigJSON([]byte(multiAliasConfig("http://127.0.0.1:1", "http://127.0.0.1:2", "", `{}`)))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ModelAliases = map[string]interface{}{
		"value":   AliasConfig{Targets: []string{"a1", "onlyb"}, Strategy: "weighted", Weights: []int{4, 6}},
		"pointer": &AliasConfig{Targets: []string{"shared"}, Strategy: "least-latency"},
		"strings": []string{"onlyb", "a1"},
		"ifaces":  []interface{}{"a1"},
		"plain":   "alpha/a1",
		"map":     map[string]interface{}{"targets": []string{"a1", "onlyb"}, "strategy": "weighted", "weights": []int{1, 2}},
		"floats":  map[string]interface{}{"targets": []interface{}{"a1", "onlyb"}, "strategy": "weighted", "weights": []interface{}{2.0, 5.0}},
	}
	checkAliasSpecs(t, compileAliasesOf(t, cfg), map[string]string{
		"value":   `["a1" "onlyb"] "weighted" [4 6]`,
		"pointer": `["shared"] "least-latency" [1]`,
		"strings": `["onlyb" "a1"] "" [1 1]`,
		"ifaces":  `["a1"] "" [1]`,
		"plain":   `["alpha/a1"] "" [1]`,
		"map":     `["a1" "onlyb"] "weighted" [1 2]`,
		"floats":  `["a1" "onlyb"] "weighted" [2 5]`,
	})
	// The library form survives a JSON round trip (the binary's path).
	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	again, err := DecodeConfigJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	if s := specString(compileAliasesOf(t, again)["pointer"]); s != `["shared"] "least-latency" [1]` {
		t.Fatalf("round trip: %s", s)
	}
}

func TestModelAliasRefusals(t *testing.T) {
	cases := []struct{ name, aliases, want string }{
		{"unknown_key", `{"fast":{"targets":["a1"],"weight":[1]}}`, `config: modelAliases["fast"]: unknown config key "weight"`},
		{"same_key_twice", `{"fast":{"targets":["a1"],"Targets":["onlyb"]}}`, `config: modelAliases["fast"]: config keys "Targets" and "targets" are the same key`},
		{"object_without_targets", `{"fast":{"strategy":"priority"}}`, `config: modelAliases["fast"]: targets is required`},
		{"object_empty_targets", `{"fast":{"targets":[]}}`, `config: modelAliases["fast"]: targets is required`},
		{"empty_list", `{"fast":[]}`, `config: modelAliases["fast"]: the list of targets is empty`},
		{"null", `{"fast":null}`, `config: modelAliases["fast"]: the target is empty`},
		{"empty_string", `{"fast":""}`, `config: modelAliases["fast"]: the target is empty`},
		{"number", `{"fast":3}`, `config: modelAliases["fast"]: expected a target id, a list of target ids or an object {targets, strategy, weights}, got a number`},
		{"boolean", `{"fast":true}`, `config: modelAliases["fast"]: expected a target id, a list of target ids or an object {targets, strategy, weights}, got a boolean`},
		{"empty_target_in_list", `{"fast":["a1"," "]}`, `config: modelAliases["fast"][1]: the target is empty`},
		{"empty_target_in_object", `{"fast":{"targets":["a1",""]}}`, `config: modelAliases["fast"].targets[1]: the target is empty`},
		{"number_in_list", `{"fast":["a1",3]}`, `config: modelAliases["fast"][1]: expected a target id (a string), got a number`},
		{"object_in_object_targets", `{"fast":{"targets":[{"x":1}]}}`, `config: modelAliases["fast"].targets[0]: expected a target id (a string), got an object`},
		{"targets_not_a_list", `{"fast":{"targets":5}}`, `config: modelAliases["fast"].targets: expected a list of target ids, got a number`},
		{"chain_in_list", `{"fast":["a1","quick"],"quick":"onlyb"}`, `config: modelAliases["fast"][1]: the target "quick" is itself an alias (alias chains are not allowed)`},
		{"chain_in_object", `{"fast":{"targets":["quick"]},"quick":"onlyb"}`, `config: modelAliases["fast"].targets[0]: the target "quick" is itself an alias`},
		{"duplicate_target", `{"fast":["a1","onlyb","a1"]}`, `config: modelAliases["fast"][2]: the target "a1" is listed twice`},
		{"duplicate_in_object", `{"fast":{"targets":["beta/onlyb","beta/onlyb"]}}`, `config: modelAliases["fast"].targets[1]: the target "beta/onlyb" is listed twice`},
		{"unknown_strategy", `{"fast":{"targets":["a1"],"strategy":"random"}}`, `config: modelAliases["fast"].strategy: unknown strategy "random" (one of priority, round-robin, weighted, least-latency, least-cost)`},
		{"strategy_case", `{"fast":{"targets":["a1"],"strategy":"Weighted"}}`, `config: modelAliases["fast"].strategy: unknown strategy "Weighted"`},
		{"strategy_not_string", `{"fast":{"targets":["a1"],"strategy":1}}`, `config: modelAliases["fast"].strategy: expected a string, got a number`},
		{"weights_without_strategy", `{"fast":{"targets":["a1","onlyb"],"weights":[1,2]}}`, `config: modelAliases["fast"].weights: weights are only allowed with strategy "weighted"`},
		{"weights_with_priority", `{"fast":{"targets":["a1","onlyb"],"strategy":"priority","weights":[1,2]}}`, `config: modelAliases["fast"].weights: weights are only allowed with strategy "weighted"`},
		{"weights_short", `{"fast":{"targets":["a1","onlyb"],"strategy":"weighted","weights":[1]}}`, `config: modelAliases["fast"].weights: 1 weights for 2 targets (one per target)`},
		{"weights_long", `{"fast":{"targets":["a1"],"strategy":"weighted","weights":[1,2]}}`, `config: modelAliases["fast"].weights: 2 weights for 1 targets`},
		{"weight_zero", `{"fast":{"targets":["a1"],"strategy":"weighted","weights":[0]}}`, `config: modelAliases["fast"].weights[0]: 0 is out of range (1-1000)`},
		{"weight_too_big", `{"fast":{"targets":["a1","onlyb"],"strategy":"weighted","weights":[1,1001]}}`, `config: modelAliases["fast"].weights[1]: 1001 is out of range (1-1000)`},
		{"weight_negative", `{"fast":{"targets":["a1"],"strategy":"weighted","weights":[-3]}}`, `config: modelAliases["fast"].weights[0]: -3 is out of range (1-1000)`},
		{"weight_fraction", `{"fast":{"targets":["a1"],"strategy":"weighted","weights":[1.5]}}`, `config: modelAliases["fast"].weights[0]: 1.5 is not an integer`},
		{"weight_word", `{"fast":{"targets":["a1"],"strategy":"weighted","weights":["x"]}}`, `config: modelAliases["fast"].weights[0]: "x" is not an integer`},
		{"weight_bool", `{"fast":{"targets":["a1"],"strategy":"weighted","weights":[true]}}`, `config: modelAliases["fast"].weights[0]: expected an integer, got a boolean`},
		{"weights_not_a_list", `{"fast":{"targets":["a1"],"strategy":"weighted","weights":true}}`, `config: modelAliases["fast"].weights: expected a list of integers, got a boolean`},
		{"shadowed_multi", `{"beta/fast":["onlyb","a1"]}`, `config: modelAliases["beta/fast"]: the prefix "beta" names a configured provider`},
		{"equals_model_object", `{"a1":{"targets":["onlyb"]}}`, `config: modelAliases["a1"]: provider "alpha" already serves a model with this id`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newGatewayFromConfig(t, multiAliasConfig("http://127.0.0.1:1", "http://127.0.0.1:2", "", tc.aliases))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// Refusals of the Go library form and of Traefik's strings.
func TestModelAliasRefusalsOtherForms(t *testing.T) {
	cases := []struct {
		name  string
		value interface{}
		want  string
	}{
		{"empty_value", AliasConfig{}, `config: modelAliases["fast"]: targets is required`},
		{"nil_pointer", (*AliasConfig)(nil), `config: modelAliases["fast"]: the target is empty`},
		{"weights_without_weighted", AliasConfig{Targets: []string{"a1"}, Weights: []int{5}}, `config: modelAliases["fast"].weights: weights are only allowed with strategy "weighted"`},
		{"weight_range", &AliasConfig{Targets: []string{"a1"}, Strategy: "weighted", Weights: []int{0}}, `config: modelAliases["fast"].weights[0]: 0 is out of range (1-1000)`},
		{"empty_strings", []string{}, `config: modelAliases["fast"]: the list of targets is empty`},
		{"duplicate_strings", []string{"a1", "a1"}, `config: modelAliases["fast"][1]: the target "a1" is listed twice`},
		{"int", 42, `config: modelAliases["fast"]: expected a target id, a list of target ids or an object {targets, strategy, weights}, got a number`},
		{"ints", []int{1}, `config: modelAliases["fast"]: expected a target id, a list of target ids or an object {targets, strategy, weights}, got []int`},
		{"traefik_weights", map[string]interface{}{"targets": "a1,onlyb", "strategy": "weighted", "weights": "3,x"}, `config: modelAliases["fast"].weights[1]: "x" is not an integer`},
		{"traefik_empty_targets", map[string]interface{}{"targets": "", "strategy": "priority"}, `config: modelAliases["fast"]: targets is required`},
		{"traefik_empty_item", map[string]interface{}{"targets": "a1,,onlyb"}, `config: modelAliases["fast"].targets[1]: the target is empty`},
	}
	base, err := DecodeConfigJSON([]byte(multiAliasConfig("http://127.0.0.1:1", "http://127.0.0.1:2", "", `{}`)))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := *base
			cfg.ModelAliases = map[string]interface{}{"fast": tc.value}
			_, err := compileConfig(&cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
	raw := mapFromJSON(t, multiAliasConfig("http://127.0.0.1:1", "http://127.0.0.1:2", "", `{}`))
	raw["modelAliases"] = map[string]interface{}{"fast": map[string]interface{}{"targets": "a1", "weight": "2"}}
	cfg, err := ConfigFromMap(raw)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := compileConfig(cfg); err == nil || err.Error() != `config: modelAliases["fast"]: unknown config key "weight"` {
		t.Fatalf("Traefik form, unknown key: %v", err)
	}
}

func TestModelAliasMultiCandidates(t *testing.T) {
	g, err := newGatewayFromConfig(t, multiAliasConfig("http://127.0.0.1:1", "http://127.0.0.1:2",
		`"modelMeta":{"pri":{"maxOutputTokens":1234}},`, `{
		"pri": ["shared", "beta/onlyb", "beta/shared", "ghost", "alpha/a1"],
		"w": {"targets": ["beta/onlyb", "shared"], "strategy": "weighted", "weights": [5, 2]},
		"rr": {"targets": ["shared"], "strategy": "round-robin"},
		"heavy": {"targets": ["shared"], "strategy": "weighted", "weights": [7]},
		"ghostfirst": ["ghost", "nowhere/x", "onlyb"],
		"plain": "shared",
		"none": ["ghost", "nowhere/x"]}`))
	if err != nil {
		t.Fatal(err)
	}
	r := g.models()
	cases := []struct{ id, strategy, cands string }{
		{"pri", "", "alpha/shared*1 beta/shared*1 beta/onlyb*1 alpha/a1*1"},
		{"w", "weighted", "beta/onlyb*5 alpha/shared*2 beta/shared*2"},
		{"rr", "round-robin", "alpha/shared*1 beta/shared*1"},
		{"heavy", "weighted", "alpha/shared*7 beta/shared*7"},
		{"ghostfirst", "", "beta/onlyb*1"},
		{"plain", "", "alpha/shared*1 beta/shared*1"},
	}
	for _, tc := range cases {
		route, e := r.route(tc.id)
		if e != nil {
			t.Fatalf("%s: %v", tc.id, e)
		}
		if got := candString(route.candidates); got != tc.cands {
			t.Errorf("%s: candidates %s, want %s", tc.id, got, tc.cands)
		}
		first := route.candidates[0]
		if route.alias != tc.id || route.strategy != tc.strategy || route.provider != first.provider || route.model != first.model {
			t.Errorf("%s: route alias %q strategy %q first %s/%s", tc.id, route.alias, route.strategy, route.provider.name, route.model)
		}
		if tc.id != "pri" && route.maxOutput != first.maxOutput {
			t.Errorf("%s: maxOutput %d, first candidate's %d", tc.id, route.maxOutput, first.maxOutput)
		}
		// Built once per snapshot: every request shares the same list.
		again, _ := r.route(tc.id)
		if &again.candidates[0] != &route.candidates[0] {
			t.Errorf("%s: candidates rebuilt per request", tc.id)
		}
	}
	if route, _ := r.route("pri"); route.maxOutput != 1234 {
		t.Errorf("pri: the alias's modelMeta maxOutputTokens is not applied: %d", route.maxOutput)
	}
	// A one-target alias of weight 1 shares its target's list; the
	// registry's own lists keep weight 1.
	plain, _ := r.route("plain")
	bare, _ := r.route("shared")
	if &plain.candidates[0] != &bare.candidates[0] || bare.alias != "" || bare.strategy != "" {
		t.Error("a plain alias does not resolve exactly as its target")
	}
	if got := candString(bare.candidates); got != "alpha/shared*1 beta/shared*1" {
		t.Errorf("bare shared: %s", got)
	}
	if direct, _ := r.route("beta/onlyb"); candString(direct.candidates) != "beta/onlyb*1" {
		t.Errorf("direct beta/onlyb: %s", candString(direct.candidates))
	}
	_, e := r.route("none")
	if e == nil || e.Status != http.StatusNotFound ||
		e.Message != `model alias "none" points at "ghost", "nowhere/x", none of which a configured provider serves` {
		t.Fatalf("none: %+v", e)
	}
}

func TestModelAliasMultiGrants(t *testing.T) {
	g, err := newGatewayFromConfig(t, multiAliasConfig("http://127.0.0.1:1", "http://127.0.0.1:2", "", `{
		"afirst": ["shared", "beta/onlyb"],
		"bfirst": ["beta/onlyb", "shared", "alpha/a1"],
		"team/mix": ["beta/onlyb", "shared", "a1"]}`))
	if err != nil {
		t.Fatal(err)
	}
	users := map[string]*userRuntime{}
	set := g.users.current()
	for i := 0; i < len(set.users); i++ {
		users[set.users[i].user.name] = set.users[i].user
	}
	cases := []struct {
		user, id string
		status   int
		cands    string
	}{
		{"all", "bfirst", 0, "beta/onlyb*1 alpha/shared*1 beta/shared*1 alpha/a1*1"},
		{"bonly", "bfirst", 0, "beta/onlyb*1 beta/shared*1"},
		{"bonly", "afirst", http.StatusForbidden, ""}, // the first candidate must be usable
		{"byname", "team/mix", 0, "beta/onlyb*1 beta/shared*1"},
		{"byname", "bfirst", http.StatusForbidden, ""},
	}
	for _, tc := range cases {
		route, e := resolveForUser(g.models(), users[tc.user], tc.id)
		if tc.status != 0 {
			if e == nil || e.Status != tc.status {
				t.Errorf("%s %s: %v, want %d", tc.user, tc.id, e, tc.status)
			}
			continue
		}
		if e != nil {
			t.Errorf("%s %s: %v", tc.user, tc.id, e)
			continue
		}
		if got := candString(route.candidates); got != tc.cands {
			t.Errorf("%s %s: candidates %s, want %s", tc.user, tc.id, got, tc.cands)
		}
	}
	// The shared list is not modified by the drop.
	if route, _ := g.models().route("bfirst"); len(route.candidates) != 4 {
		t.Fatalf("bfirst's shared candidates changed: %s", candString(route.candidates))
	}
}

// Through HTTP: the first target serves, and with failover a failing
// first target moves to the next.
func TestModelAliasMultiServes(t *testing.T) {
	a := okUpstream(t)
	b := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"error":{"message":"down"}}`)
	})
	aliases := `{"multi": ["beta/onlyb", "alpha/a1"], "none": ["ghost", "nowhere/x"]}`
	off, _ := newTestGateway(t, multiAliasConfig(a.URL, b.URL, "", aliases), nil)
	if status, _, body := do(t, "POST", off.URL+"/v1/chat/completions", "sk-multi-all", `{"model":"multi","x":1}`); status != 503 || b.count() != 1 || a.count() != 0 {
		t.Fatalf("failover off: %d %s (a %d, b %d calls)", status, body, a.count(), b.count())
	}
	on, _ := newTestGateway(t, multiAliasConfig(a.URL, b.URL, `"failover":{"enabled":true},`, aliases), nil)
	status, _, body := do(t, "POST", on.URL+"/v1/chat/completions", "sk-multi-all", `{"model":"multi","x":1}`)
	if status != 200 || b.count() != 2 || a.count() != 1 {
		t.Fatalf("failover on: %d %s (a %d, b %d calls)", status, body, a.count(), b.count())
	}
	if got := string(a.last(t).body); got != `{"model":"a1","x":1}` {
		t.Fatalf("second target got %s", got)
	}
	status, _, body = do(t, "POST", on.URL+"/v1/chat/completions", "sk-multi-all", `{"model":"none"}`)
	if status != 404 || !strings.Contains(body, `model alias \"none\" points at \"ghost\", \"nowhere/x\"`) {
		t.Fatalf("unresolved: %d %s", status, body)
	}
}

func TestModelAliasMultiListing(t *testing.T) {
	srv, _ := newTestGateway(t, multiAliasConfig("http://127.0.0.1:1", "http://127.0.0.1:2", "", `{
		"pri": ["shared", "beta/onlyb"],
		"ghostfirst": ["ghost", "beta/onlyb"],
		"none": ["ghost", "nowhere/x"],
		"team/mix": ["alpha/a1", "beta/onlyb"]}`), nil)
	list := func(key string) (map[string]string, map[string]int) {
		status, _, body := do(t, "GET", srv.URL+"/v1/models", key, "")
		if status != 200 {
			t.Fatalf("status %d: %s", status, body)
		}
		var l modelList
		if err := json.Unmarshal([]byte(body), &l); err != nil {
			t.Fatal(err)
		}
		owners, counts := map[string]string{}, map[string]int{}
		for i := 0; i < len(l.Data); i++ {
			owners[l.Data[i].ID] = l.Data[i].OwnedBy
			counts[l.Data[i].ID]++
		}
		return owners, counts
	}
	owners, counts := list("sk-multi-all")
	want := map[string]string{"pri": "alpha", "ghostfirst": "beta", "team/mix": "alpha"}
	for id, owner := range want {
		if owners[id] != owner || counts[id] != 1 {
			t.Errorf("%s: listed %d times, owned by %q; want once, by %q", id, counts[id], owners[id], owner)
		}
	}
	if _, listed := owners["none"]; listed {
		t.Error("an alias none of whose targets resolves is listed")
	}
	// bonly (provider beta) may not use pri's or team/mix's first candidate.
	owners, _ = list("sk-multi-bonly")
	if owners["ghostfirst"] != "beta" || owners["pri"] != "" || owners["team/mix"] != "" {
		t.Errorf("bonly sees %v", owners)
	}
}
