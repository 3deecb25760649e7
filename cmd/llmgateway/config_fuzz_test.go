package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/llmgateway/llmgateway/gateway"
)

// FuzzLoadConfig drives the binary's config loader over YAML and JSON
// files. An error names the file and never quotes a value of the
// document (values may be key material; keys may be quoted); a loaded
// config survives a JSON round trip through gateway.DecodeConfigJSON, a
// YAML file loads to the same config as its JSON form, and the startup
// warnings quote no value either.
func FuzzLoadConfig(f *testing.F) {
	seeds := []string{yamlConfig, jsonConfig,
		"providers:\n  p: {type: openai, apiKey: sk-fuzz-secret-000001}\nusers:\n  inline:\n    - {name: u, group: g, apiKey: sk-fuzz-secret-000002}\ngroups: {g: {}}\n",
		"providers:\n  p:\n    type: openai\n    apiKey: sk-fuzz-secret-000003\n    bogus: sk-fuzz-secret-000004\n",
		"providers: {p: {type: openai, passthrough: sk-fuzz-secret-000005}}\n",
		"requestTimeout: sk-fuzz-secret-000006\n",
		"a: &x [1, 2]\nb: *x\n",
		"1: x\n",
		"metrics: {allowedCIDRs: [10.0.0.0/8]}\npassthroughUnknown: true\n",
		"---\nproviders: {}\n---\n",
		"providers: {p: {type: openai, requestTimeout: .inf}}\n",
		"[1, 2]\n",
	}
	if data, err := os.ReadFile(filepath.Join("..", "..", "examples", "quickstart.yaml")); err == nil {
		seeds = append(seeds, string(data))
	}
	for i := 0; i < len(seeds); i++ {
		f.Add([]byte(seeds[i]), strings.HasPrefix(seeds[i], "{"))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, asJSON bool) {
		name := "config.yaml"
		if asJSON {
			name = "config.json"
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		loaded, err := loadConfig(path)
		values := documentValues(data, asJSON)
		if err != nil {
			if loaded != nil || !strings.HasPrefix(err.Error(), "config file ") {
				t.Fatalf("error %q with %v", err, loaded)
			}
			if v := quotedValue(err.Error(), values); v != "" {
				t.Fatalf("the error quotes the value %q: %v", v, err)
			}
			return
		}
		if loaded.config == nil || loaded.document == nil {
			t.Fatal("loaded without a config or a document")
		}
		warnings := startupWarnings(loaded)
		if v := quotedValue(strings.Join(warnings, "\n"), values); v != "" {
			t.Fatalf("a startup warning quotes the value %q: %v", v, warnings)
		}
		again, err := json.Marshal(loaded.config)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := gateway.DecodeConfigJSON(again)
		if err != nil || !reflect.DeepEqual(cfg, loaded.config) {
			t.Fatalf("round trip: %v\n%s", err, again)
		}
		if asJSON {
			return
		}
		asDoc, err := json.Marshal(loaded.document)
		if err != nil {
			t.Fatal(err)
		}
		jsonPath := filepath.Join(dir, "same.json")
		if err := os.WriteFile(jsonPath, asDoc, 0o600); err != nil {
			t.Fatal(err)
		}
		fromJSON, err := loadConfig(jsonPath)
		if err != nil || !reflect.DeepEqual(fromJSON.config, loaded.config) {
			t.Fatalf("the YAML loads differently from its JSON form %s: %v", asDoc, err)
		}
	})
}

// secretMark is in every secret of the seeds: the values checked for
// echoes are the ones holding it (a value like "openai" may rightly
// appear in a message as a word of its own).
const secretMark = "sk-fuzz"

// documentValues lists the document's string values holding secretMark
// that no key contains (a key may rightly be named in an error), nil when
// the document does not decode.
func documentValues(data []byte, asJSON bool) []string {
	var doc interface{}
	if asJSON {
		if json.Unmarshal(data, &doc) != nil {
			return nil
		}
	} else {
		v, err := decodeYAML(data)
		if err != nil {
			return nil
		}
		doc = v
	}
	var keys, values []string
	walkDocument(doc, &keys, &values)
	var out []string
	for i := 0; i < len(values); i++ {
		inKey := false
		for j := 0; j < len(keys) && !inKey; j++ {
			inKey = strings.Contains(keys[j], values[i])
		}
		if !inKey && strings.Contains(values[i], secretMark) {
			out = append(out, values[i])
		}
	}
	return out
}

func walkDocument(v interface{}, keys, values *[]string) {
	switch t := v.(type) {
	case map[string]interface{}:
		for k, item := range t {
			*keys = append(*keys, k)
			walkDocument(item, keys, values)
		}
	case []interface{}:
		for i := 0; i < len(t); i++ {
			walkDocument(t[i], keys, values)
		}
	case string:
		*values = append(*values, t)
	}
}

// quotedValue is the first of values that text contains ("" for none).
func quotedValue(text string, values []string) string {
	for i := 0; i < len(values); i++ {
		if strings.Contains(text, values[i]) {
			return values[i]
		}
	}
	return ""
}
