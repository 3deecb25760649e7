package gateway

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

const fullConfigJSON = `{
  "passthroughUnknown": true,
  "requestTimeout": "45s",
  "providers": {
    "oai": {"type": "openai", "baseUrl": "http://127.0.0.1:9", "apiKey": "sk-decode", "models": ["m1", "m2"], "passthrough": false, "requestTimeout": "3s"},
    "ant": {"type": "anthropic", "apiKey": "sk-ant", "models": []}
  },
  "groups": {"all": {}, "some": {"providers": ["oai"], "models": ["m1", "oai/*"]}},
  "users": {"inline": [
    {"name": "alice", "group": "all", "groups": ["some"], "apiKey": "sk-u1", "admin": true},
    {"name": "bob", "group": "some", "apiKey": "sk-u2"}
  ]}
}`

func TestDecodeConfigJSON(t *testing.T) {
	cfg, err := DecodeConfigJSON([]byte(fullConfigJSON))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.PassthroughUnknown || cfg.RequestTimeout != "45s" || len(cfg.Providers) != 2 || len(cfg.Groups) != 2 || len(cfg.Users.Inline) != 2 {
		t.Fatalf("decoded %+v", cfg)
	}
	oai := cfg.Providers["oai"]
	if oai.Passthrough == nil || *oai.Passthrough || oai.RequestTimeout != "3s" || strings.Join(oai.Models, ",") != "m1,m2" {
		t.Fatalf("oai %+v", oai)
	}
	if !cfg.Users.Inline[0].Admin || strings.Join(cfg.Users.Inline[0].Groups, ",") != "some" {
		t.Fatalf("alice %+v", cfg.Users.Inline[0])
	}
}

func TestDecodeConfigJSONErrors(t *testing.T) {
	cases := []struct {
		name, doc string
		want      []string
	}{
		{"unknown_top_key", `{"providers":{},"rateLimits":{}}`, []string{"rateLimits"}},
		{"unknown_provider_key", `{"providers":{"p":{"type":"openai","apiKeys":"x"}}}`, []string{"apiKeys"}},
		{"unknown_group_key", `{"groups":{"g":{"model":["x"]}}}`, []string{`"model"`}},
		{"unknown_user_key", `{"users":{"inline":[{"name":"u","role":"x"}]}}`, []string{"role"}},
		{"unknown_users_key", `{"users":{"fiel":"/etc/users"}}`, []string{"fiel"}},
		{"trailing_data", `{"providers":{}} {}`, []string{"after"}},
		{"trailing_garbage", `{} x`, []string{"after"}},
		{"wrong_type", `{"passthroughUnknown":"yes"}`, []string{"passthroughUnknown"}},
		{"model_aliases_not_a_map", `{"modelAliases":["fast"]}`, []string{"modelAliases"}},
		{"not_an_object", `[]`, []string{"config"}},
		{"syntax", `{"providers":`, []string{"config"}},
		{"empty", ``, []string{"config"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := DecodeConfigJSON([]byte(tc.doc))
			if err == nil {
				t.Fatalf("accepted: %+v", cfg)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// mapFromJSON decodes doc the way a host hands ConfigFromMap a generic map.
func mapFromJSON(t *testing.T, doc string) map[string]interface{} {
	t.Helper()
	var m map[string]interface{}
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// ConfigFromMap of the generic form of a JSON document equals
// DecodeConfigJSON of the document.
func TestConfigFromMapMatchesJSON(t *testing.T) {
	want, err := DecodeConfigJSON([]byte(fullConfigJSON))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ConfigFromMap(mapFromJSON(t, fullConfigJSON))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(normalizeEmpty(got), normalizeEmpty(want)) {
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(want)
		t.Fatalf("ConfigFromMap %s\nDecodeConfigJSON %s", gj, wj)
	}
}

// normalizeEmpty turns empty slices into nil so [] and "" compare equal.
func normalizeEmpty(c *Config) *Config {
	for _, p := range c.Providers {
		if p != nil && len(p.Models) == 0 {
			p.Models = nil
		}
	}
	for _, g := range c.Groups {
		if g != nil {
			if len(g.Providers) == 0 {
				g.Providers = nil
			}
			if len(g.Models) == 0 {
				g.Models = nil
			}
		}
	}
	if c.Users != nil {
		for _, u := range c.Users.Inline {
			if u != nil && len(u.Groups) == 0 {
				u.Groups = nil
			}
		}
	}
	return c
}

// The Traefik form: every scalar a string, "" for an empty {} or [],
// comma-separated lists.
func TestConfigFromMapTraefikForm(t *testing.T) {
	raw := map[string]interface{}{
		"passthroughUnknown": "true",
		"requestTimeout":     "45s",
		"providers": map[string]interface{}{
			"oai": map[string]interface{}{"type": "openai", "baseUrl": "http://127.0.0.1:9", "apiKey": "sk-decode",
				"models": []interface{}{"m1", "m2"}, "passthrough": "false", "requestTimeout": "3s"},
			"ant": map[string]interface{}{"type": "anthropic", "apiKey": "sk-ant", "models": ""},
		},
		"groups": map[string]interface{}{
			"all":  "",
			"some": map[string]interface{}{"providers": "oai", "models": "m1, oai/*"},
		},
		"users": map[string]interface{}{"inline": []interface{}{
			map[string]interface{}{"name": "alice", "group": "all", "groups": []interface{}{"some"}, "apiKey": "sk-u1", "admin": "true"},
			map[string]interface{}{"name": "bob", "group": "some", "apiKey": "sk-u2", "admin": "false"},
		}},
	}
	got, err := ConfigFromMap(raw)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := DecodeConfigJSON([]byte(fullConfigJSON))
	if !reflect.DeepEqual(normalizeEmpty(got), normalizeEmpty(want)) {
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(want)
		t.Fatalf("got  %s\nwant %s", gj, wj)
	}
	if _, err := New(nil, got, Options{LogOutput: &syncBuffer{}}); err != nil {
		t.Fatalf("New on the Traefik form: %v", err)
	}
}

func TestConfigFromMapEmptyForms(t *testing.T) {
	cases := []struct {
		name string
		raw  map[string]interface{}
		want func(*Config) bool
	}{
		{"groups_empty_string", map[string]interface{}{"groups": ""}, func(c *Config) bool { return c.Groups != nil && len(c.Groups) == 0 }},
		{"users_empty_string", map[string]interface{}{"users": ""}, func(c *Config) bool { return c.Users != nil && len(c.Users.Inline) == 0 }},
		{"inline_empty_string", map[string]interface{}{"users": map[string]interface{}{"inline": ""}}, func(c *Config) bool { return c.Users != nil && len(c.Users.Inline) == 0 }},
		{"provider_empty_object", map[string]interface{}{"providers": map[string]interface{}{"p": ""}}, func(c *Config) bool { return c.Providers["p"] != nil && c.Providers["p"].Type == "" }},
		{"null_provider_kept_null", map[string]interface{}{"providers": map[string]interface{}{"p": nil}}, func(c *Config) bool { p, ok := c.Providers["p"]; return ok && p == nil }},
		{"bool_native", map[string]interface{}{"passthroughUnknown": true}, func(c *Config) bool { return c.PassthroughUnknown }},
		{"access_log_string", map[string]interface{}{"accessLog": "true"}, func(c *Config) bool { return c.AccessLog }},
		{"bool_string_spaces", map[string]interface{}{"passthroughUnknown": " TRUE "}, func(c *Config) bool { return c.PassthroughUnknown }},
		{"case_insensitive_key", map[string]interface{}{"PassthroughUnknown": "1"}, func(c *Config) bool { return c.PassthroughUnknown }},
		{"number_as_string_field", map[string]interface{}{"providers": map[string]interface{}{"p": map[string]interface{}{"apiKey": 12345.0}}}, func(c *Config) bool { return c.Providers["p"].APIKey == "12345" }},
		{"model_aliases_empty_string", map[string]interface{}{"modelAliases": ""}, func(c *Config) bool { return c.ModelAliases != nil && len(c.ModelAliases) == 0 }},
		{"model_alias_string_not_split", map[string]interface{}{"modelAliases": map[string]interface{}{"fast": "a, b"}}, func(c *Config) bool { return c.ModelAliases["fast"] == "a, b" }},
		{"model_alias_null_kept_null", map[string]interface{}{"modelAliases": map[string]interface{}{"fast": nil}}, func(c *Config) bool { v, ok := c.ModelAliases["fast"]; return ok && v == nil }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ConfigFromMap(tc.raw)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.want(c) {
				data, _ := json.Marshal(c)
				t.Fatalf("decoded %s", data)
			}
		})
	}
}

func TestConfigFromMapErrors(t *testing.T) {
	cases := []struct {
		name string
		raw  map[string]interface{}
		want []string
	}{
		{"unknown_top_key", map[string]interface{}{"bogus": "1"}, []string{`"bogus"`}},
		{"unknown_provider_key", map[string]interface{}{"providers": map[string]interface{}{"openai": map[string]interface{}{"apiKeys": "x"}}}, []string{"providers.openai", `"apiKeys"`}},
		{"unknown_group_key", map[string]interface{}{"groups": map[string]interface{}{"g": map[string]interface{}{"users": ""}}}, []string{"groups.g", `"users"`}},
		{"unknown_user_key", map[string]interface{}{"users": map[string]interface{}{"inline": []interface{}{map[string]interface{}{"name": "u", "key": "k"}}}}, []string{"users.inline[0]", `"key"`}},
		{"bad_bool", map[string]interface{}{"passthroughUnknown": "yes please"}, []string{"passthroughUnknown", `"yes please"`}},
		{"bad_passthrough_bool", map[string]interface{}{"providers": map[string]interface{}{"p": map[string]interface{}{"passthrough": "nah"}}}, []string{"providers.p.passthrough", `"nah"`}},
		{"object_for_string", map[string]interface{}{"requestTimeout": map[string]interface{}{}}, []string{"requestTimeout"}},
		{"list_for_map", map[string]interface{}{"providers": []interface{}{"a"}}, []string{"providers"}},
		{"list_for_model_aliases", map[string]interface{}{"modelAliases": []interface{}{"a"}}, []string{"modelAliases: expected a map"}},
		{"string_for_struct", map[string]interface{}{"users": "alice"}, []string{"users"}},
		{"number_for_list_item_struct", map[string]interface{}{"users": map[string]interface{}{"inline": []interface{}{1.0}}}, []string{"users.inline[0]"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ConfigFromMap(tc.raw)
			if err == nil {
				data, _ := json.Marshal(c)
				t.Fatalf("accepted: %s", data)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// A modelAliases value (an interface{} field) passes through ConfigFromMap
// as Traefik delivered it, strings included: the compile step reads each
// shape (aliases_multi_test.go).
func TestConfigFromMapModelAliasValues(t *testing.T) {
	cfg, err := ConfigFromMap(map[string]interface{}{"modelAliases": map[string]interface{}{
		"plain": "m1",
		"list":  []interface{}{"m1", "p/m2"},
		"obj":   map[string]interface{}{"targets": "m1,p/m2", "strategy": "weighted", "weights": []interface{}{"3", "1"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(cfg.ModelAliases)
	want := `{"list":["m1","p/m2"],"obj":{"strategy":"weighted","targets":"m1,p/m2","weights":["3","1"]},"plain":"m1"}`
	if string(got) != want {
		t.Fatalf("modelAliases decoded as %s, want %s", got, want)
	}
	doc, err := DecodeConfigJSON([]byte(`{"modelAliases":{"obj":{"targets":["m1"],"strategy":"weighted","weights":[2]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	obj, ok := doc.ModelAliases["obj"].(map[string]interface{})
	if !ok {
		t.Fatalf("the object form decoded as %T", doc.ModelAliases["obj"])
	}
	if w, ok := obj["weights"].([]interface{}); !ok || len(w) != 1 || w[0] != 2.0 {
		t.Fatalf("weights decoded as %#v", obj["weights"])
	}
}
