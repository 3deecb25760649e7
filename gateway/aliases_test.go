package gateway

import (
	"encoding/json"
	"strings"
	"testing"
)

// aliasConfig: providers alpha (a1, a2) and beta (m1, m2) at upURL.
func aliasConfig(upURL, aliases, groups string) string {
	return `{"providers":{
		"alpha":{"type":"openai","baseUrl":"` + upURL + `","models":["a1","a2"]},
		"beta":{"type":"openai","baseUrl":"` + upURL + `","models":["m1","m2"]}},
		"modelAliases":` + aliases + `,"groups":` + groups + `,
		"users":{"inline":[
			{"name":"all","group":"all","apiKey":"sk-alias-all"},
			{"name":"byalias","group":"byalias","apiKey":"sk-alias-name"},
			{"name":"bytarget","group":"bytarget","apiKey":"sk-alias-target"},
			{"name":"other","group":"other","apiKey":"sk-alias-other"},
			{"name":"wrongprovider","group":"wrongprovider","apiKey":"sk-alias-wrongprov"}]}}`
}

const aliasGroups = `{"all":{},
	"byalias":{"providers":["beta"],"models":["team/*"]},
	"bytarget":{"providers":["beta"],"models":["m1"]},
	"other":{"providers":["beta"],"models":["m2"]},
	"wrongprovider":{"providers":["alpha"],"models":["team/*"]}}`

func TestModelAliasConstructionErrors(t *testing.T) {
	cases := []struct{ name, aliases, want string }{
		{"empty_alias", `{"":"m1"}`, `modelAliases[""]: an alias must be non-empty`},
		{"control_char", `{"fa\u0007st":"m1"}`, `an alias must be non-empty and contain no control characters`},
		{"shadowed_by_provider_prefix", `{"beta/fast":"m1"}`, `modelAliases["beta/fast"]: the prefix "beta" names a configured provider`},
		{"equals_explicit_model", `{"a2":"m1"}`, `modelAliases["a2"]: provider "alpha" already serves a model with this id`},
		{"empty_target", `{"fast":" "}`, `modelAliases["fast"]: the target is empty`},
		{"chain", `{"fast":"quick","quick":"m1"}`, `is itself an alias`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newGatewayFromConfig(t, aliasConfig("http://127.0.0.1:9", tc.aliases, aliasGroups))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestModelAliasRouting(t *testing.T) {
	up := okUpstream(t)
	srv, _ := newTestGateway(t, aliasConfig(up.URL,
		`{"team/coding":"beta/m1","team/fast":"a1","team/ghost":"nowhere/none","solo":"m2"}`, aliasGroups), nil)
	cases := []struct {
		name, key, model string
		status           int
		upstreamModel    string
	}{
		{"prefixed_target", "sk-alias-all", "team/coding", 200, "m1"},
		{"bare_target", "sk-alias-all", "team/fast", 200, "a1"},
		{"authorized_by_alias_name", "sk-alias-name", "team/coding", 200, "m1"},
		{"authorized_by_target", "sk-alias-target", "team/coding", 200, "m1"},
		{"neither_alias_nor_target_allowed", "sk-alias-other", "team/coding", 403, ""},
		{"alias_name_but_provider_denied", "sk-alias-wrongprov", "team/coding", 403, ""},
		{"alias_outside_glob_target_outside_list", "sk-alias-name", "solo", 403, ""},
		{"unresolved_target", "sk-alias-all", "team/ghost", 404, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := up.count()
			status, _, body := do(t, "POST", srv.URL+"/v1/chat/completions", tc.key, `{"model":"`+tc.model+`","x":1}`)
			if status != tc.status {
				t.Fatalf("status %d, want %d: %s", status, tc.status, body)
			}
			if tc.status != 200 {
				if up.count() != before {
					t.Fatal("a refused request reached the upstream")
				}
				if tc.status == 404 && !strings.Contains(body, `model alias \"team/ghost\" points at \"nowhere/none\"`) {
					t.Fatalf("404 does not name alias and target: %s", body)
				}
				return
			}
			if got := string(up.last(t).body); got != `{"model":"`+tc.upstreamModel+`","x":1}` {
				t.Fatalf("upstream got %s", got)
			}
		})
	}
}

func TestModelAliasListing(t *testing.T) {
	up := okUpstream(t)
	srv, _ := newTestGateway(t, aliasConfig(up.URL,
		`{"team/coding":"beta/m1","team/fast":"a1","team/ghost":"nowhere/none"}`, aliasGroups), nil)
	list := func(key string) map[string]string {
		status, _, body := do(t, "GET", srv.URL+"/v1/models", key, "")
		if status != 200 {
			t.Fatalf("status %d: %s", status, body)
		}
		var l modelList
		if err := json.Unmarshal([]byte(body), &l); err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for i := 0; i < len(l.Data); i++ {
			out[l.Data[i].ID] = l.Data[i].OwnedBy
		}
		return out
	}
	all := list("sk-alias-all")
	if all["team/coding"] != "beta" || all["team/fast"] != "alpha" {
		t.Fatalf("aliases listed as %v", all)
	}
	if _, listed := all["team/ghost"]; listed {
		t.Fatal("an alias with an unresolved target is listed")
	}
	byName := list("sk-alias-name") // beta only, models team/*
	if byName["team/coding"] != "beta" || byName["team/fast"] != "" || len(byName) != 1 {
		t.Fatalf("alias-glob group sees %v", byName)
	}
	status, _, body := do(t, "GET", srv.URL+"/v1/models/team/coding", "sk-alias-target", "")
	if status != 200 || !strings.Contains(body, `"owned_by":"beta"`) {
		t.Fatalf("GET one alias: %d %s", status, body)
	}
}

func TestConfigFromMapAliases(t *testing.T) {
	cfg, err := ConfigFromMap(map[string]interface{}{
		"providers":    map[string]interface{}{"beta": map[string]interface{}{"type": "openai", "models": []interface{}{"m1"}}},
		"modelAliases": map[string]interface{}{"claude-opus-5-5": "beta/m1"},
	})
	if err != nil || cfg.ModelAliases["claude-opus-5-5"] != "beta/m1" {
		t.Fatalf("decoded %v, %v", cfg, err)
	}
}
