package yaegigate_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/traefik/traefik/v3/pkg/config/dynamic"
	"github.com/traefik/traefik/v3/pkg/plugins"
	"github.com/traefik/traefik/v3/pkg/provider/file"
	"gopkg.in/yaml.v3"
)

// pluginAlias is the plugin's name in the static configuration.
const pluginAlias = "llmgateway"

// dynamicConfigYAML renders a file-provider dynamic configuration with one
// middleware "llm" using the plugin with pluginConfig, and (when service
// is not empty) a catch-all router through it to that service.
func dynamicConfigYAML(t *testing.T, pluginConfig map[string]interface{}, service string) []byte {
	t.Helper()
	httpCfg := map[string]interface{}{
		"middlewares": map[string]interface{}{
			"llm": map[string]interface{}{
				"plugin": map[string]interface{}{pluginAlias: pluginConfig},
			},
		},
	}
	if service != "" {
		httpCfg["routers"] = map[string]interface{}{
			"llm": map[string]interface{}{
				"rule":        "PathPrefix(`/`)",
				"entryPoints": []interface{}{"web"},
				"middlewares": []interface{}{"llm"},
				"service":     "dummy",
			},
		}
		httpCfg["services"] = map[string]interface{}{
			"dummy": map[string]interface{}{
				"loadBalancer": map[string]interface{}{
					"servers": []interface{}{map[string]interface{}{"url": service}},
				},
			},
		}
	}
	data, err := yaml.Marshal(map[string]interface{}{"http": httpCfg})
	require.NoError(t, err)
	return data
}

// decodeWithFileProvider writes a dynamic configuration to a .yml file and
// decodes it with Traefik's file provider (paerser), as Traefik does.
func decodeWithFileProvider(t *testing.T, dir string, content []byte) *dynamic.Configuration {
	t.Helper()
	path := filepath.Join(dir, "dynamic.yml")
	require.NoError(t, os.WriteFile(path, content, 0o644))
	conf, err := (&file.Provider{}).DecodeConfiguration(path)
	require.NoError(t, err, "file provider decoding of:\n%s", content)
	require.NotNil(t, conf.HTTP)
	return conf
}

// TestTraefikShapeMatchesPaerser pins traefikShape (used by the
// interpreter harness) to Traefik's own decoding of the manifest testData
// and of the scenario configuration.
func TestTraefikShapeMatchesPaerser(t *testing.T) {
	m := readManifest(t)
	cases := map[string]map[string]interface{}{
		"testData": m.TestData,
		"scenario": gatewayConfig("http://127.0.0.1:1234"),
		"scalars": {
			"passthroughUnknown": true,
			"requestTimeout":     "30s",
			"int":                8080,
			"float":              0.5,
			"emptyMap":           map[string]interface{}{},
		},
	}
	for name, cfg := range cases {
		t.Run(name, func(t *testing.T) {
			conf := decodeWithFileProvider(t, t.TempDir(), dynamicConfigYAML(t, cfg, ""))
			mw := conf.HTTP.Middlewares["llm"]
			require.NotNil(t, mw)
			got := map[string]interface{}(mw.Plugin[pluginAlias])
			require.Equal(t, traefikConfig(t, cfg), got)
		})
	}
}

// loaderBuild loads the plugin with Traefik's plugins.Builder from a
// plugins-local layout and builds the middleware "llm@file" from a
// dynamic configuration decoded by the file provider, the way Traefik's
// middleware builder does for a router (findPluginConfig, Build, then the
// constructor with the next handler).
func loaderBuild(t *testing.T, ctx context.Context, pluginConfig map[string]interface{}, next http.Handler) (http.Handler, error) {
	t.Helper()
	work := t.TempDir()
	installPlugin(t, filepath.Join(work, "plugins-local"))
	conf := decodeWithFileProvider(t, work, dynamicConfigYAML(t, pluginConfig, ""))
	mw := conf.HTTP.Middlewares["llm"]
	require.NotNil(t, mw, "middleware llm")
	require.Len(t, mw.Plugin, 1, "one plugin definition")
	rawConfig, ok := mw.Plugin[pluginAlias]
	require.True(t, ok, "plugin %q in the middleware", pluginAlias)

	// Traefik resolves local plugins relative to its working directory
	// ("./plugins-local/").
	t.Chdir(work)
	local := map[string]plugins.LocalDescriptor{pluginAlias: {ModuleName: pluginModule}}
	require.NoError(t, plugins.SetupLocalPlugins(local))
	start := time.Now()
	builder, err := plugins.NewBuilder(nil, nil, local)
	require.NoError(t, err, "Traefik's plugin builder")
	t.Logf("Traefik's builder loaded the plugin in %s", time.Since(start).Round(time.Millisecond))

	constructor, err := builder.Build(pluginAlias, rawConfig, "llm@file")
	if err != nil {
		return nil, err
	}
	return constructor(ctx, next)
}

// TestTraefikLoaderManifestTestData builds the middleware from the
// manifest's testData through Traefik's loader.
func TestTraefikLoaderManifestTestData(t *testing.T) {
	m := readManifest(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := loaderBuild(t, ctx, m.TestData, &nextHandler{})
	require.NoError(t, err)
}

// TestTraefikLoaderServes runs the gateway scenarios through the
// middleware built by Traefik's loader, behind a real HTTP server.
func TestTraefikLoaderServes(t *testing.T) {
	up := newFixtureUpstream(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	next := &nextHandler{}
	h, err := loaderBuild(t, ctx, gatewayConfig(up.URL()), next)
	require.NoError(t, err)

	front := httptest.NewServer(h)
	defer front.Close()
	runGatewayScenarios(t, front.URL, up, next)
}
