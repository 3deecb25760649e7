// Package traefikproc runs a real Traefik v3.6.12 process on a loopback
// port, optionally with the llmgateway plugin as a local plugin, for the
// real-Traefik tests and the load benchmark.
//
// The work directory holds plugins-local/src/<PluginModule>/ (the plugin
// laid out as the repository root is: .traefik.yml, go.mod, .assets/ and
// plugin/ with its vendored core) and a file-provider directory with the
// caller's dynamic configuration. With Config.Catalog the plugin is
// declared under experimental.plugins instead and Traefik downloads it
// from the registry the caller's environment points at. The static
// configuration is passed as command-line flags so the listen address
// can be chosen at start-up (gwproc's "{addr}").
package traefikproc

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/llmgateway/llmgateway/integration/gwproc"
)

// Version is the Traefik release scripts/build-traefik.sh builds.
const Version = "v3.6.12"

// PluginModule is the plugin's module name in Traefik's static
// configuration (the repository root's module; its folder under
// plugins-local/src). The manifest's import is PluginModule + "/plugin".
const PluginModule = "github.com/llmgateway/llmgateway"

// PluginFiles are the repository paths a Traefik plugin install needs:
// the manifest and root go.mod the catalog reads, the icon, and the
// plugin package with its vendored core. InstallPlugin copies those of
// them that exist.
var PluginFiles = []string{".traefik.yml", "go.mod", ".assets", "plugin"}

// PluginAlias is the plugin's name in the static configuration (and the
// key under a middleware's "plugin").
const PluginAlias = "llmgateway"

// EntryPoint is the name of the one entry point.
const EntryPoint = "web"

// ReadyTimeout bounds start-up (plugin load included).
const ReadyTimeout = 90 * time.Second

// Binary returns the Traefik binary: $LLMGW_TRAEFIK_BIN, else the cached
// ${LLMGW_CACHE:-$HOME/.cache/llmgateway}/traefik-v3.6.12.
func Binary() (string, error) {
	if p := os.Getenv("LLMGW_TRAEFIK_BIN"); p != "" {
		return p, nil
	}
	cache := os.Getenv("LLMGW_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		cache = filepath.Join(home, ".cache", "llmgateway")
	}
	bin := filepath.Join(cache, "traefik-"+Version)
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("no Traefik binary at %s: run scripts/build-traefik.sh (make traefik-binary)", bin)
	}
	return bin, nil
}

// Config describes one Traefik process.
type Config struct {
	// Binary is the Traefik executable.
	Binary string
	// WorkDir is an empty directory Traefik runs in (and its HOME).
	WorkDir string
	// PluginDir is a folder laid out like the repository root (with
	// .traefik.yml and plugin/, vendored core included): PluginFiles of
	// it are installed as a local plugin. Empty: no local plugin.
	PluginDir string
	// Catalog, when set, declares the plugin under experimental.plugins
	// (moduleName PluginModule, Catalog.Version) so that Traefik
	// downloads and unpacks it the way it does from the Plugin Catalog.
	Catalog *CatalogPlugin
	// DynamicYAML is the file provider's configuration.
	DynamicYAML []byte
	// LogLevel is Traefik's log level. Default "INFO".
	LogLevel string
	// Bench makes the entry point fair for a load test: responding
	// timeouts unbounded (0). Access logs are never enabled.
	Bench bool
	// ReadyPath is polled (with ReadyHeader) until it answers 200.
	ReadyPath   string
	ReadyHeader http.Header
	// Watch makes the file provider watch its directory, so that a
	// dynamic configuration rewritten with WriteDynamic is applied while
	// Traefik runs. Default off: it is read once at start-up.
	Watch bool
	// Throttle is how long Traefik waits after applying one dynamic
	// configuration before it applies the next
	// (providers.providersThrottleDuration). 0: Traefik's default, 2 s.
	Throttle time.Duration
	// DebugAddr, when set, opens Traefik's API with its debug handlers
	// (/debug/pprof/...) on a "traefik" entry point at this address —
	// for profiling the process under load; never in tests.
	DebugAddr string
}

// CatalogPlugin is a plugin Traefik installs from a registry.
type CatalogPlugin struct {
	// Version is the plugin version Traefik asks the registry for.
	Version string
	// Env is added to Traefik's environment (e.g. the HTTPS_PROXY and
	// SSL_CERT_FILE that point Traefik's downloader at a local registry).
	Env []string
}

// Start lays out WorkDir, starts Traefik on a free loopback port and
// returns once ReadyPath answers 200 through the router.
func Start(c Config) (*gwproc.Process, error) {
	if c.Binary == "" || c.WorkDir == "" {
		return nil, errors.New("traefikproc: Binary and WorkDir are required")
	}
	if c.LogLevel == "" {
		c.LogLevel = "INFO"
	}
	dynDir := filepath.Join(c.WorkDir, "dynamic")
	if err := os.MkdirAll(dynDir, 0o755); err != nil {
		return nil, err
	}
	if err := WriteDynamic(c.WorkDir, c.DynamicYAML); err != nil {
		return nil, err
	}
	args := []string{
		"--global.checkNewVersion=false",
		"--global.sendAnonymousUsage=false",
		"--log.level=" + c.LogLevel,
		"--entryPoints." + EntryPoint + ".address={addr}",
		"--providers.file.directory=" + dynDir,
		"--providers.file.watch=" + strconv.FormatBool(c.Watch),
	}
	if c.Throttle > 0 {
		args = append(args, "--providers.providersThrottleDuration="+c.Throttle.String())
	}
	if c.Bench {
		for _, k := range []string{"readTimeout", "writeTimeout", "idleTimeout"} {
			args = append(args, "--entryPoints."+EntryPoint+".transport.respondingTimeouts."+k+"=0")
		}
	}
	if c.DebugAddr != "" {
		args = append(args, "--api.insecure=true", "--api.debug=true", "--entryPoints.traefik.address="+c.DebugAddr)
	}
	if c.PluginDir != "" {
		if err := InstallPlugin(c.PluginDir, filepath.Join(c.WorkDir, "plugins-local")); err != nil {
			return nil, err
		}
		args = append(args, "--experimental.localPlugins."+PluginAlias+".moduleName="+PluginModule)
	}
	env := []string{"HOME=" + c.WorkDir}
	if c.Catalog != nil {
		if c.PluginDir != "" {
			return nil, errors.New("traefikproc: PluginDir and Catalog are exclusive")
		}
		args = append(args,
			"--experimental.plugins."+PluginAlias+".moduleName="+PluginModule,
			"--experimental.plugins."+PluginAlias+".version="+c.Catalog.Version)
		env = append(env, c.Catalog.Env...)
	}
	return gwproc.Start(gwproc.Config{
		Binary:       c.Binary,
		Args:         args,
		Env:          env,
		Dir:          c.WorkDir,
		ReadyPath:    c.ReadyPath,
		ReadyHeader:  c.ReadyHeader,
		ReadyTimeout: ReadyTimeout,
	})
}

// WriteDynamic replaces the dynamic configuration of the Traefik process
// running in workDir (Config.WorkDir) in one step: the new file is written
// next to the watched directory and renamed into it, so the file provider
// never reads it half-written. Without Config.Watch, Traefik only reads it
// at start-up.
func WriteDynamic(workDir string, yaml []byte) error {
	tmp := filepath.Join(workDir, "dynamic.yml.tmp")
	if err := os.WriteFile(tmp, yaml, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(workDir, "dynamic", "dynamic.yml"))
}

// InstallPlugin copies PluginFiles of a folder laid out like the
// repository root to <gopath>/src/<PluginModule>/ (Yaegi's GOPATH,
// Traefik's plugins-local).
func InstallPlugin(pluginDir, gopath string) error {
	if _, err := os.Stat(filepath.Join(pluginDir, ".traefik.yml")); err != nil {
		return fmt.Errorf("plugin manifest: %v", err)
	}
	// A plugin that needs the core (its go.mod requires it) must vendor it.
	pkg := filepath.Join(pluginDir, "plugin")
	if mod, err := os.ReadFile(filepath.Join(pkg, "go.mod")); err == nil && strings.Contains(string(mod), "llmgateway/gateway") {
		if _, err := os.Stat(filepath.Join(pkg, "vendor", "github.com", "llmgateway", "llmgateway", "gateway")); err != nil {
			return fmt.Errorf("plugin/vendor must hold the core (run 'make vendor'): %v", err)
		}
	}
	dst := filepath.Join(gopath, "src", filepath.FromSlash(PluginModule))
	for _, name := range PluginFiles {
		src := filepath.Join(pluginDir, name)
		if _, err := os.Stat(src); os.IsNotExist(err) {
			continue
		}
		if err := CopyTree(src, filepath.Join(dst, name)); err != nil {
			return err
		}
	}
	return nil
}

// CopyTree copies the regular files and folders under src into dst (src
// may be a single file: it is copied to dst).
func CopyTree(src, dst string) error {
	return filepath.Walk(src, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}
