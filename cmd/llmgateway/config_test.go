package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeFile writes content to name in a fresh temporary directory.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

const yamlConfig = `
providers:
  mock:
    type: openai
    baseUrl: http://127.0.0.1:9099
    models: [gpt-5-mini, text-embedding-3-small]
groups:
  default:
    providers: []
users:
  inline:
    - name: demo
      group: default
      apiKey: sk-test-yaml
requestTimeout: 90s
`

const jsonConfig = `{
  "providers": {"mock": {"type": "openai", "baseUrl": "http://127.0.0.1:9099", "models": ["gpt-5-mini"]}},
  "groups": {"default": {"providers": []}},
  "users": {"inline": [{"name": "demo", "group": "default", "apiKey": "sk-test-json"}]}
}`

func TestLoadConfigYAML(t *testing.T) {
	loaded, err := loadConfig(writeFile(t, "config.yaml", yamlConfig))
	require.NoError(t, err)
	cfg := loaded.config
	require.Contains(t, cfg.Providers, "mock")
	assert.Equal(t, "openai", cfg.Providers["mock"].Type)
	assert.Equal(t, "http://127.0.0.1:9099", cfg.Providers["mock"].BaseURL)
	assert.Equal(t, []string{"gpt-5-mini", "text-embedding-3-small"}, cfg.Providers["mock"].Models)
	require.Contains(t, cfg.Groups, "default")
	require.NotNil(t, cfg.Groups["default"])
	assert.Empty(t, cfg.Groups["default"].Providers)
	require.NotNil(t, cfg.Users)
	require.Len(t, cfg.Users.Inline, 1)
	assert.Equal(t, "demo", cfg.Users.Inline[0].Name)
	assert.Equal(t, "sk-test-yaml", cfg.Users.Inline[0].APIKey)
	assert.Equal(t, "90s", cfg.RequestTimeout)
	assert.False(t, cfg.PassthroughUnknown)
}

func TestLoadConfigJSON(t *testing.T) {
	loaded, err := loadConfig(writeFile(t, "config.json", jsonConfig))
	require.NoError(t, err)
	require.Contains(t, loaded.config.Providers, "mock")
	assert.Equal(t, []string{"gpt-5-mini"}, loaded.config.Providers["mock"].Models)
	require.Len(t, loaded.config.Users.Inline, 1)
	assert.Equal(t, "sk-test-json", loaded.config.Users.Inline[0].APIKey)
}

func TestLoadConfigJSONSyntaxIsAlsoYAML(t *testing.T) {
	// A JSON document in a .yaml file still loads: JSON is YAML.
	loaded, err := loadConfig(writeFile(t, "config.yaml", jsonConfig))
	require.NoError(t, err)
	assert.Contains(t, loaded.config.Providers, "mock")
}

func TestLoadConfigKeysMatchCaseInsensitively(t *testing.T) {
	yamlDoc := yamlConfig + "passthroughunknown: true\nREQUESTTIMEOUT: 2m\n"
	yamlDoc = replaceOnce(t, yamlDoc, "requestTimeout: 90s\n", "")
	loaded, err := loadConfig(writeFile(t, "config.yml", yamlDoc))
	require.NoError(t, err)
	assert.True(t, loaded.config.PassthroughUnknown)
	assert.Equal(t, "2m", loaded.config.RequestTimeout)

	jsonDoc := `{"Providers": {"mock": {"TYPE": "openai", "baseURL": "http://127.0.0.1:9099"}}, "passthroughunknown": true}`
	loaded, err = loadConfig(writeFile(t, "config.json", jsonDoc))
	require.NoError(t, err)
	assert.True(t, loaded.config.PassthroughUnknown)
	assert.Equal(t, "openai", loaded.config.Providers["mock"].Type)
	assert.Equal(t, "http://127.0.0.1:9099", loaded.config.Providers["mock"].BaseURL)
}

func TestLoadConfigRefusesUnknownKeys(t *testing.T) {
	cases := []struct {
		name    string
		file    string
		content string
		key     string
	}{
		{"yaml top level", "config.yaml", yamlConfig + "passthroughUnknwn: true\n", "passthroughUnknwn"},
		{"yaml nested", "config.yaml", replaceOnce(t, yamlConfig, "type: openai", "type: openai\n    apiKeys: [x]"), "apiKeys"},
		{"json top level", "config.json", `{"providers": {}, "alowedCIDRs": ["10.0.0.0/8"]}`, "alowedCIDRs"},
		{"json nested", "config.json", `{"providers": {"mock": {"type": "openai", "modles": ["a"]}}}`, "modles"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadConfig(writeFile(t, tc.file, tc.content))
			require.Error(t, err)
			assert.Contains(t, err.Error(), `unknown config key "`+tc.key+`"`)
			assert.Contains(t, err.Error(), tc.file)
		})
	}
}

func TestLoadConfigErrors(t *testing.T) {
	cases := []struct {
		name    string
		file    string
		content string
		want    string
	}{
		{"malformed yaml", "config.yaml", "providers:\n  mock: [unclosed\n", "invalid YAML"},
		{"tab indentation", "config.yaml", "providers:\n\tmock: {}\n", "invalid YAML"},
		{"two documents", "config.yaml", yamlConfig + "---\nproviders: {}\n", "more than one YAML document"},
		{"empty file", "config.yaml", "  \n", "is empty"},
		{"comment only", "config.yaml", "# nothing\n", "no YAML document"},
		{"top-level list", "config.yaml", "- a\n- b\n", "top level must be a mapping"},
		{"top-level scalar json", "config.json", `"providers"`, "top level must be a mapping"},
		{"non-string key", "config.yaml", "providers:\n  mock:\n    type: openai\n    models:\n      - 1: x\n", "providers.mock.models[0]: mapping key 1 is a number"},
		{"boolean key", "config.yaml", "providers:\n  true: {}\n", "providers: mapping key true is a boolean"},
		{"malformed json", "config.json", `{"providers": `, "not valid JSON"},
		{"wrong type", "config.json", `{"passthroughUnknown": "maybe"}`, "passthroughUnknown"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadConfig(writeFile(t, tc.file, tc.content))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}

	t.Run("missing file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "absent.yaml")
		_, err := loadConfig(path)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "cannot read config file")
		assert.Contains(t, err.Error(), path)
	})
}

func TestJSONCompatibleConvertsNestedMaps(t *testing.T) {
	in := map[interface{}]interface{}{
		"a": []interface{}{map[interface{}]interface{}{"b": 1}},
		"c": map[string]interface{}{"d": map[interface{}]interface{}{"e": "f"}},
	}
	out, err := jsonCompatible("", in)
	require.NoError(t, err)
	assert.Equal(t, map[string]interface{}{
		"a": []interface{}{map[string]interface{}{"b": 1}},
		"c": map[string]interface{}{"d": map[string]interface{}{"e": "f"}},
	}, out)
}

func TestStartupWarnings(t *testing.T) {
	trusted := "trustedProxies: [\"10.0.0.1\"]\n"
	loaded, err := loadConfig(writeFile(t, "config.yaml", yamlConfig+trusted))
	require.NoError(t, err)
	assert.Empty(t, startupWarnings(loaded))

	loaded, err = loadConfig(writeFile(t, "config.yaml", yamlConfig))
	require.NoError(t, err)
	warnings := startupWarnings(loaded)
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], "trustedProxies is not set")

	loaded, err = loadConfig(writeFile(t, "config.yaml", yamlConfig+trusted+"passthroughUnknown: true\n"))
	require.NoError(t, err)
	warnings = startupWarnings(loaded)
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], "passthroughUnknown has no meaning")

	// metrics.allowedCIDRs is checked on the document, so the warning
	// holds whatever the Config struct looks like.
	loaded.document["Metrics"] = map[string]interface{}{"allowedcidrs": []interface{}{"10.0.0.0/8"}}
	warnings = startupWarnings(loaded)
	require.Len(t, warnings, 2)
	assert.Contains(t, warnings[1], "metrics.allowedCIDRs")
	assert.NotContains(t, warnings[1], "10.0.0.0/8", "warnings name keys, never values")

	loaded.document["Metrics"] = map[string]interface{}{"allowedCIDRs": []interface{}{}}
	assert.Len(t, startupWarnings(loaded), 1, "an empty allowedCIDRs list is harmless")
}

func replaceOnce(t *testing.T, s, old, replacement string) string {
	t.Helper()
	i := strings.Index(s, old)
	require.GreaterOrEqual(t, i, 0, "%q not found", old)
	return s[:i] + replacement + s[i+len(old):]
}
