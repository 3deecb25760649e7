package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/llmgateway/llmgateway/gateway"
	"gopkg.in/yaml.v3"
)

// loadedConfig is a decoded config file plus the generic document it came
// from, which startup warnings inspect without depending on Config fields.
type loadedConfig struct {
	config   *gateway.Config
	document map[string]interface{}
}

// loadConfig reads the config file at path: JSON when the name ends in
// ".json", YAML otherwise. The top level is the plugin's config block.
// YAML is converted to a generic value, then to JSON, and decoded by
// gateway.DecodeConfigJSON, so an unknown key is refused (matched
// case-insensitively) exactly as for a JSON file. Errors never quote
// config values, which may be key material.
func loadConfig(path string) (*loadedConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read config file: %w", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("config file %s is empty", path)
	}
	var generic interface{}
	if strings.EqualFold(filepath.Ext(path), ".json") {
		if err := json.Unmarshal(data, &generic); err != nil {
			return nil, fmt.Errorf("config file %s is not valid JSON: %v", path, err)
		}
	} else {
		if generic, err = decodeYAML(data); err != nil {
			return nil, fmt.Errorf("config file %s: %v", path, err)
		}
		if data, err = json.Marshal(generic); err != nil {
			return nil, fmt.Errorf("config file %s: cannot convert YAML to JSON: %v", path, err)
		}
	}
	document, ok := generic.(map[string]interface{})
	if !ok {
		return nil, fmt.Errorf("config file %s: the top level must be a mapping of config keys, not %s", path, describe(generic))
	}
	cfg, err := gateway.DecodeConfigJSON(data)
	if err != nil {
		return nil, fmt.Errorf("config file %s: %v", path, err)
	}
	return &loadedConfig{config: cfg, document: document}, nil
}

// decodeYAML decodes a single YAML document into JSON-compatible generic
// values (maps with string keys, slices, scalars).
func decodeYAML(data []byte) (interface{}, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc interface{}
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("no YAML document")
		}
		return nil, fmt.Errorf("invalid YAML: %v", err)
	}
	var extra interface{}
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one YAML document (remove the extra '---')")
	}
	return jsonCompatible("", doc)
}

// jsonCompatible converts yaml.v3's generic values recursively: a mapping
// becomes map[string]interface{}; a mapping key that is not a string is
// an error naming its path. yaml.v3 produces map[string]interface{} when
// every key is a string and map[interface{}]interface{} otherwise.
func jsonCompatible(path string, v interface{}) (interface{}, error) {
	switch t := v.(type) {
	case map[string]interface{}:
		out := make(map[string]interface{}, len(t))
		for k, item := range t {
			converted, err := jsonCompatible(joinKey(path, k), item)
			if err != nil {
				return nil, err
			}
			out[k] = converted
		}
		return out, nil
	case map[interface{}]interface{}:
		out := make(map[string]interface{}, len(t))
		for k, item := range t {
			key, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("%s: mapping key %v is a %s, not a string (quote it)", displayKey(path), k, describe(k))
			}
			converted, err := jsonCompatible(joinKey(path, key), item)
			if err != nil {
				return nil, err
			}
			out[key] = converted
		}
		return out, nil
	case []interface{}:
		out := make([]interface{}, len(t))
		for i, item := range t {
			converted, err := jsonCompatible(fmt.Sprintf("%s[%d]", path, i), item)
			if err != nil {
				return nil, err
			}
			out[i] = converted
		}
		return out, nil
	}
	return v, nil
}

func joinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func displayKey(path string) string {
	if path == "" {
		return "top level"
	}
	return path
}

func describe(v interface{}) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case int, int64, uint64, float64:
		return "number"
	case []interface{}:
		return "list"
	case map[string]interface{}, map[interface{}]interface{}:
		return "mapping"
	}
	return fmt.Sprintf("%T", v)
}

// lookupFold returns m's value for key, matched case-insensitively the way
// the config decoder matches keys (an exact match wins).
func lookupFold(m map[string]interface{}, key string) (interface{}, bool) {
	if v, ok := m[key]; ok {
		return v, true
	}
	for k, v := range m {
		if strings.EqualFold(k, key) {
			return v, true
		}
	}
	return nil, false
}

// startupWarnings lists the config settings that behave differently, or
// not at all, in the standalone binary. Messages name keys, never values.
func startupWarnings(c *loadedConfig) []string {
	var warnings []string
	if c.config.PassthroughUnknown {
		warnings = append(warnings, "passthroughUnknown has no meaning in the standalone binary: there is no downstream behind it, so unknown routes get an OpenAI-shaped 404; route non-gateway paths in Traefik instead")
	}
	if len(c.config.TrustedProxies) == 0 {
		warnings = append(warnings, "trustedProxies is not set: failed-authentication throttling counts per TCP peer and never reads X-Forwarded-For; behind Traefik (or any proxy) every client has the proxy's address and shares one count — list the proxy in trustedProxies")
	}
	if metrics, ok := lookupFold(c.document, "metrics"); ok {
		if m, ok := metrics.(map[string]interface{}); ok {
			if cidrs, ok := lookupFold(m, "allowedCIDRs"); ok && nonEmpty(cidrs) {
				warnings = append(warnings, "metrics.allowedCIDRs is set: behind Traefik every request's remote address is Traefik's own pod IP, so the keyless-scrape allowlist admits anyone who can reach Traefik; drop metrics.allowedCIDRs from a binary config and require an admin key")
			}
		}
	}
	return warnings
}

func nonEmpty(v interface{}) bool {
	switch t := v.(type) {
	case nil:
		return false
	case string:
		return strings.TrimSpace(t) != ""
	case []interface{}:
		return len(t) > 0
	}
	return true
}
