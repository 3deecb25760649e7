package integration_test

import (
	"context"
	"encoding/json"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	paerserfile "github.com/traefik/paerser/file"
	"github.com/traefik/traefik/v3/pkg/config/dynamic"
	"github.com/traefik/traefik/v3/pkg/plugins"
	"github.com/traefik/traefik/v3/pkg/provider/file"
	"github.com/traefik/traefik/v3/pkg/safe"

	"github.com/llmgateway/llmgateway/gateway"
)

// traefikStaticFile mirrors the top-level keys of Traefik's static
// configuration that the compose examples use, with Traefik's own types
// below them (its file provider and plugin descriptors). Traefik's
// pkg/config/static would compile every provider Traefik has into this
// test; paerser, which decodes the mirror exactly as Traefik decodes its
// static file, refuses any key the mirror lacks.
type traefikStaticFile struct {
	EntryPoints map[string]*struct {
		Address string
	}
	Providers *struct {
		File *file.Provider
	}
	Experimental *struct {
		Plugins      map[string]plugins.Descriptor
		LocalPlugins map[string]plugins.LocalDescriptor
	}
	Log *struct {
		Level string
	}
}

// loadCompose loads examples/<name> with compose-go as `docker compose`
// does from the examples directory: schema validation, interpolation with
// only env (never the test's own environment, so ${VAR:-default} takes the
// default), normalization, resolved paths and consistency checks.
func loadCompose(t *testing.T, name string, env map[string]string) *types.Project {
	t.Helper()
	var environment []string
	for k, v := range env {
		environment = append(environment, k+"="+v)
	}
	opts, err := cli.NewProjectOptions([]string{filepath.Join(examplesDir(t), name)},
		cli.WithWorkingDirectory(examplesDir(t)),
		cli.WithEnv(environment),
		cli.WithInterpolation(true),
		cli.WithNormalization(true),
		cli.WithResolvedPaths(true),
		cli.WithConsistency(true),
	)
	require.NoError(t, err)
	project, err := opts.LoadProject(context.Background())
	require.NoError(t, err, name)
	return project
}

func serviceNames(p *types.Project) []string {
	names := make([]string, 0, len(p.Services))
	for name := range p.Services {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// bindSource returns the host path bind-mounted read-only at target.
func bindSource(t *testing.T, svc types.ServiceConfig, target string) string {
	t.Helper()
	for _, v := range svc.Volumes {
		if v.Target == target {
			require.Equal(t, types.VolumeTypeBind, v.Type, "%s: %s is a bind mount", svc.Name, target)
			require.True(t, v.ReadOnly, "%s: %s is mounted read-only", svc.Name, target)
			return v.Source
		}
	}
	t.Fatalf("%s: nothing is mounted at %s", svc.Name, target)
	return ""
}

// hostPath maps a path inside a service's container to the host path of
// the bind mount holding it (the longest mount target that contains it).
func hostPath(t *testing.T, svc types.ServiceConfig, containerPath string) string {
	t.Helper()
	var best *types.ServiceVolumeConfig
	for i := range svc.Volumes {
		v := &svc.Volumes[i]
		if v.Type != types.VolumeTypeBind {
			continue
		}
		if (containerPath == v.Target || strings.HasPrefix(containerPath, v.Target+"/")) && (best == nil || len(v.Target) > len(best.Target)) {
			best = v
		}
	}
	require.NotNil(t, best, "%s: no bind mount holds %s", svc.Name, containerPath)
	return filepath.Join(best.Source, filepath.FromSlash(strings.TrimPrefix(containerPath, best.Target)))
}

// readMounted reads the host file behind a path inside a container.
func readMounted(t *testing.T, svc types.ServiceConfig, containerPath string) string {
	t.Helper()
	data, err := os.ReadFile(hostPath(t, svc, containerPath))
	require.NoError(t, err, "%s: %s", svc.Name, containerPath)
	return string(data)
}

// serviceEnv is a service's resolved environment.
func serviceEnv(svc types.ServiceConfig) map[string]string {
	out := map[string]string{}
	for k, v := range svc.Environment {
		if v != nil {
			out[k] = *v
		}
	}
	return out
}

// decodeTraefikStatic decodes a Traefik static configuration file with
// paerser, as Traefik does.
func decodeTraefikStatic(t *testing.T, hostFile string) *traefikStaticFile {
	t.Helper()
	static := &traefikStaticFile{}
	require.NoError(t, paerserfile.Decode(hostFile, static), hostFile)
	require.NotNil(t, static.Providers)
	require.NotNil(t, static.Providers.File)
	return static
}

// loadTraefikDirectory builds the dynamic configuration Traefik's file
// provider reads from a directory.
func loadTraefikDirectory(t *testing.T, dir string) *dynamic.Configuration {
	t.Helper()
	info, err := os.Stat(dir)
	require.NoError(t, err)
	require.True(t, info.IsDir(), "%s is a directory", dir)
	pool := safe.NewPool(context.Background())
	defer pool.Stop()
	messages := make(chan dynamic.Message, 1)
	provider := &file.Provider{Directory: dir}
	require.NoError(t, provider.Init())
	require.NoError(t, provider.Provide(messages, pool), "Traefik's file provider on %s", dir)
	msg := <-messages
	require.NotNil(t, msg.Configuration.HTTP)
	return msg.Configuration
}

// checkTraefikStatic checks the Traefik service's static file and returns
// it with the dynamic configuration of the directory it watches: the
// entry point listens on the container port compose publishes, and the
// dynamic configuration is a watched directory mounted from the host.
func checkTraefikStatic(t *testing.T, traefik types.ServiceConfig) (*traefikStaticFile, *dynamic.Configuration) {
	t.Helper()
	assert.Equal(t, "traefik:v3.6.12", traefik.Image)
	static := decodeTraefikStatic(t, bindSource(t, traefik, "/etc/traefik/traefik.yml"))
	require.Len(t, traefik.Ports, 1)
	web := static.EntryPoints["web"]
	require.NotNil(t, web, "entry point web")
	_, port, err := net.SplitHostPort(web.Address)
	require.NoError(t, err)
	assert.Equal(t, port, strconv.FormatUint(uint64(traefik.Ports[0].Target), 10), "the entry point listens on the published container port")
	fp := static.Providers.File
	assert.Empty(t, fp.Filename, "a directory, not a single file")
	assert.True(t, fp.Watch)
	require.NotEmpty(t, fp.Directory)
	return static, loadTraefikDirectory(t, bindSource(t, traefik, fp.Directory))
}

// upstreamService requires a URL's or address's host to be a compose
// service and returns it with the port.
func upstreamService(t *testing.T, p *types.Project, hostport string) (types.ServiceConfig, string) {
	t.Helper()
	host, port, err := net.SplitHostPort(hostport)
	require.NoError(t, err, hostport)
	svc, ok := p.Services[host]
	require.True(t, ok, "%s is not a compose service", host)
	return svc, port
}

// checkMockUpstream requires the mock's service to run the repository's
// mock on the port the gateway's providers use, behind a healthcheck.
func checkMockUpstream(t *testing.T, p *types.Project, cfg *gateway.Config) {
	t.Helper()
	for name, prov := range cfg.Providers {
		u, err := url.Parse(prov.BaseURL)
		require.NoError(t, err, "provider %s", name)
		svc, port := upstreamService(t, p, u.Host)
		require.Equal(t, "mockupstream", svc.Name, "provider %s", name)
		require.Equal(t, []string{"go", "run", "./cmd/mockupstream", "-listen", ":" + port}, []string(svc.Command))
	}
	mock := p.Services["mockupstream"]
	assert.Equal(t, "golang:1.26", mock.Image)
	assert.Equal(t, repoRoot(t), bindSource(t, mock, "/src"))
	info, err := os.Stat(hostPath(t, mock, path.Join(mock.WorkingDir, "cmd", "mockupstream", "main.go")))
	require.NoError(t, err, "the mock's source is at the mounted working directory")
	assert.False(t, info.IsDir())
	require.NotNil(t, mock.HealthCheck)
	assert.Contains(t, strings.Join(mock.HealthCheck.Test, " "), "http://127.0.0.1:9099/")
	redisSvc, redisPort := upstreamService(t, p, cfg.Redis.Address)
	assert.Equal(t, "redis", redisSvc.Name)
	assert.Equal(t, "6379", redisPort)
}

// composePluginConfig loads examples/docker-compose.yml's middleware: the
// project, the Traefik service, the plugin block and its decoded config.
func composePluginConfig(t *testing.T, env map[string]string) (*types.Project, types.ServiceConfig, *traefikStaticFile, map[string]interface{}, *gateway.Config) {
	t.Helper()
	p := loadCompose(t, "docker-compose.yml", env)
	traefik, ok := p.Services["traefik"]
	require.True(t, ok)
	static, dyn := checkTraefikStatic(t, traefik)
	mw := dyn.HTTP.Middlewares["llm"]
	require.NotNil(t, mw, "middleware llm")
	block, ok := mw.Plugin[examplePluginName]
	require.True(t, ok, "middleware llm: plugin %s", examplePluginName)
	cfg, err := gateway.ConfigFromMap(block)
	require.NoError(t, err)

	router := dyn.HTTP.Routers["llm"]
	require.NotNil(t, router)
	assert.Equal(t, []string{"web"}, router.EntryPoints)
	assert.Equal(t, []string{"llm"}, router.Middlewares)
	assert.Equal(t, "noop@internal", router.Service, "Traefik's built-in service stands behind the middleware")
	assert.Equal(t, "PathPrefix(`/`)", router.Rule)
	return p, traefik, static, block, cfg
}

// TestExampleComposePlugin loads examples/docker-compose.yml with
// compose-go and checks Traefik with the repository as a local plugin:
// the plugin mount where Traefik's local-plugin loader looks, the static
// and dynamic files decoded by Traefik's own decoders, the middleware's
// block decoded by the gateway and built, and Redis and the mock wired
// to what the config names.
func TestExampleComposePlugin(t *testing.T) {
	p, traefik, static, block, cfg := composePluginConfig(t, nil)
	assert.Equal(t, []string{"mockupstream", "redis", "traefik"}, serviceNames(p))

	require.NotNil(t, static.Experimental)
	assert.Empty(t, static.Experimental.Plugins, "the compose example loads the checkout, not the catalog")
	local, ok := static.Experimental.LocalPlugins[examplePluginName]
	require.True(t, ok)
	assert.Equal(t, examplePluginModule, local.ModuleName)
	// Traefik reads local plugins from ./plugins-local/src/<moduleName>,
	// relative to its working directory: / in the traefik image.
	pluginSource := bindSource(t, traefik, "/plugins-local/src/"+local.ModuleName)
	assert.Equal(t, repoRoot(t), pluginSource)
	_, err := os.Stat(filepath.Join(pluginSource, "plugin", "go.mod"))
	require.NoError(t, err, "the mounted repository holds the plugin module")

	assert.Equal(t, "service_started", p.Services["traefik"].DependsOn["redis"].Condition)
	assert.Equal(t, "service_healthy", p.Services["traefik"].DependsOn["mockupstream"].Condition)
	checkMockUpstream(t, p, cfg)

	env := serviceEnv(traefik)
	assert.Equal(t, "mock-anthropic-key", env["ANTHROPIC_API_KEY"], "the default applies without the variable")
	usersFile := readMounted(t, traefik, cfg.Users.File)
	gw := buildExampleGateway(t, exampleGateway{cfg: cfg, document: block, env: env, usersFile: usersFile})
	requireModels(t, gw, usersFileKey(t, usersFile, "demo"), "gpt-5-mini", "claude-sonnet-4-5", "gemini-2.5-flash")

	t.Run("interpolation", func(t *testing.T) {
		p := loadCompose(t, "docker-compose.yml", map[string]string{"LLMGW_HTTP_PORT": "9000", "ANTHROPIC_API_KEY": "sk-ant-real"})
		traefik := p.Services["traefik"]
		require.Len(t, traefik.Ports, 1)
		assert.Equal(t, "9000", traefik.Ports[0].Published)
		assert.Equal(t, "sk-ant-real", serviceEnv(traefik)["ANTHROPIC_API_KEY"])
	})
}

// TestExampleComposeBinary loads examples/docker-compose.binary.yml: the
// image built from the root Containerfile, Traefik routing to it through a
// ServersTransport without a response-header deadline and away from the
// probe paths, a stop grace period covering the binary's shutdown, and a
// config that decodes (as the binary does), builds, and equals the plugin
// form's block.
func TestExampleComposeBinary(t *testing.T) {
	p := loadCompose(t, "docker-compose.binary.yml", nil)
	assert.Equal(t, []string{"llmgateway", "mockupstream", "redis", "traefik"}, serviceNames(p))

	gw := p.Services["llmgateway"]
	require.NotNil(t, gw.Build)
	assert.Equal(t, repoRoot(t), gw.Build.Context)
	assert.Equal(t, "Containerfile", gw.Build.Dockerfile)
	env := serviceEnv(gw)
	settings := parseBinarySettings(t, gw.Command, env)
	require.NotNil(t, gw.StopGracePeriod)
	assert.GreaterOrEqual(t, time.Duration(*gw.StopGracePeriod), settings.shutdownTimeout+settings.drainDelay,
		"stop_grace_period covers -drain-delay + -shutdown-timeout")

	traefik := p.Services["traefik"]
	assert.Contains(t, traefik.DependsOn, "llmgateway")
	static, dyn := checkTraefikStatic(t, traefik)
	assert.Nil(t, static.Experimental, "the binary needs no plugin")
	router := dyn.HTTP.Routers["llm"]
	require.NotNil(t, router)
	assert.Empty(t, router.Middlewares)
	svc := dyn.HTTP.Services[router.Service]
	require.NotNil(t, svc, "service %s", router.Service)
	require.NotNil(t, svc.LoadBalancer)
	require.Len(t, svc.LoadBalancer.Servers, 1)
	u, err := url.Parse(svc.LoadBalancer.Servers[0].URL)
	require.NoError(t, err)
	upstream, port := upstreamService(t, p, u.Host)
	assert.Equal(t, "llmgateway", upstream.Name)
	_, listenPort, err := net.SplitHostPort(settings.listen)
	require.NoError(t, err)
	assert.Equal(t, listenPort, port)
	st := dyn.HTTP.ServersTransports[svc.LoadBalancer.ServersTransport]
	require.NotNil(t, st, "serversTransport %q", svc.LoadBalancer.ServersTransport)
	require.NotNil(t, st.ForwardingTimeouts)
	assert.Zero(t, st.ForwardingTimeouts.ResponseHeaderTimeout, "no response-header deadline on a long generation")
	requireRuleExcludes(t, router.Rule, settings.healthPath, settings.readyPath)

	// The extended services are the plugin file's.
	main := loadCompose(t, "docker-compose.yml", nil)
	for _, name := range []string{"redis", "mockupstream"} {
		assert.Equal(t, main.Services[name].Image, p.Services[name].Image, name)
		assert.Equal(t, main.Services[name].Command, p.Services[name].Command, name)
		assert.Equal(t, main.Services[name].Volumes, p.Services[name].Volumes, name)
	}

	cfg, doc := decodeBinaryConfig(t, readMounted(t, gw, settings.config))
	checkMockUpstream(t, p, cfg)
	_, _, _, _, pluginCfg := composePluginConfig(t, nil)
	pluginJSON, err := json.Marshal(pluginCfg)
	require.NoError(t, err)
	binaryJSON, err := json.Marshal(cfg)
	require.NoError(t, err)
	assert.JSONEq(t, string(pluginJSON), string(binaryJSON), "compose/binary/config/config.yaml is the plugin block hoisted")

	usersFile := readMounted(t, gw, cfg.Users.File)
	built := buildExampleGateway(t, exampleGateway{cfg: cfg, document: doc, env: env, usersFile: usersFile})
	requireModels(t, built, usersFileKey(t, usersFile, "demo"), "gpt-5-mini", "claude-sonnet-4-5", "gemini-2.5-flash")
}

// TestExampleTraefikStaticIsStrict shows the static-file mirror refuses a
// key it does not know, as Traefik does.
func TestExampleTraefikStaticIsStrict(t *testing.T) {
	path := filepath.Join(t.TempDir(), "traefik.yml")
	require.NoError(t, os.WriteFile(path, []byte("experimental:\n  localPlugin:\n    llmgateway: {moduleName: x}\n"), 0o600))
	err := paerserfile.Decode(path, &traefikStaticFile{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "localPlugin")
}
