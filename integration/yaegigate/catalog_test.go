package yaegigate_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/llmgateway/llmgateway/integration/catalog"
	"github.com/llmgateway/llmgateway/integration/traefikproc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/traefik/traefik/v3/pkg/plugins"
)

// catalogVersion is the plugin version the catalog checks install (any
// vX.Y.Z: Traefik only needs a non-empty version and the registry
// serves the archive under it).
const catalogVersion = "v0.0.1"

// catalogArchiveOnce builds the archive once per test binary.
var catalogArchiveOnce struct {
	sync.Once
	tree    string
	archive []byte
	err     error
}

// catalogArchive is the GitHub-style zip of the working tree (what a
// commit of it would hold; HEAD's tree on a clean checkout).
func catalogArchive(t *testing.T) (string, []byte) {
	t.Helper()
	root := repoRoot(t)
	if _, err := os.Stat(filepath.Join(root, ".git")); err != nil {
		t.Skipf("catalog check needs a git checkout (no %s/.git): %v", root, err)
	}
	c := &catalogArchiveOnce
	c.Do(func() {
		c.tree, c.err = catalog.WorkTree(root)
		if c.err == nil {
			c.archive, c.err = catalog.Archive(root, c.tree)
		}
	})
	require.NoError(t, c.err)
	return c.tree, c.archive
}

// TestCatalogRepositoryRules applies the catalog crawler's rules to the
// repository root: go.mod, .traefik.yml, tags.
func TestCatalogRepositoryRules(t *testing.T) {
	root := repoRoot(t)
	for _, err := range catalog.CheckLayout(root) {
		t.Error(err)
	}
	if _, err := os.Stat(filepath.Join(root, ".git")); err == nil {
		assert.NoError(t, catalog.CheckTags(root))
	}
}

// TestCatalogRulesCatchMistakes proves CheckLayout fails on each mistake
// the catalog would reject.
func TestCatalogRulesCatchMistakes(t *testing.T) {
	root := repoRoot(t)
	manifest, err := os.ReadFile(filepath.Join(root, ".traefik.yml"))
	require.NoError(t, err)
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	cases := map[string]struct {
		manifest, gomod string
		want            string
	}{
		"import outside the module":  {manifest: strings.Replace(string(manifest), "import: github.com/llmgateway/llmgateway/plugin", "import: github.com/other/repo/plugin", 1), want: "does not start with the module"},
		"requirement in root go.mod": {gomod: string(gomod) + "\nrequire github.com/traefik/yaegi v0.16.1\n", want: "requirements"},
		"module not a repository":    {gomod: "module github.com/llmgateway/llmgateway/plugin\n\ngo 1.20\n", want: "not github.com/<owner>/<repo>"},
		"misspelt manifest key":      {manifest: strings.Replace(string(manifest), "testData:", "testdata:", 1), want: "testdata"},
		"missing icon":               {manifest: strings.Replace(string(manifest), "iconPath: .assets/icon.png", "iconPath: .assets/none.png", 1), want: "iconPath"},
		"wrong basePkg":              {manifest: strings.Replace(string(manifest), "basePkg: llmgateway", "basePkg: gateway", 1), want: "basePkg"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, traefikproc.InstallPlugin(root, dir))
			tree := filepath.Join(dir, "src", filepath.FromSlash(catalog.Module))
			if c.manifest != "" {
				require.NoError(t, os.WriteFile(filepath.Join(tree, ".traefik.yml"), []byte(c.manifest), 0o644))
			}
			if c.gomod != "" {
				require.NoError(t, os.WriteFile(filepath.Join(tree, "go.mod"), []byte(c.gomod), 0o644))
			}
			errs := catalog.CheckLayout(tree)
			require.NotEmpty(t, errs, "CheckLayout accepted the mistake")
			var all []string
			for _, e := range errs {
				all = append(all, e.Error())
			}
			assert.Contains(t, strings.Join(all, "\n"), c.want)
		})
	}
	assert.Error(t, checkTagsOf(t, "plugin/v1.0.0"), "a module tag must be refused")
	assert.NoError(t, checkTagsOf(t, "v1.2.3"))
}

// checkTagsOf runs CheckTags on a scratch repository holding one tag.
func checkTagsOf(t *testing.T, tag string) error {
	t.Helper()
	dir := t.TempDir()
	for _, args := range [][]string{
		{"init", "-q"},
		{"-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "--allow-empty", "-m", "x"},
		{"tag", tag},
	} {
		cmd := gitCmd(dir, args...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	return catalog.CheckTags(dir)
}

// TestCatalogArchive is the catalog's path end to end, in process: the
// GitHub-style archive of the tree is unpacked by Traefik's own
// plugins.Manager (hash validated), the unpacked tree passes the rules,
// the crawler's analysis (Yaegi import, CreateConfig, testData, New
// within 10 s) succeeds and serves, and Traefik's plugins.Builder builds
// the middleware from the remote-plugin install.
func TestCatalogArchive(t *testing.T) {
	tree, archive := catalogArchive(t)
	names, err := catalog.ZipNames(archive)
	require.NoError(t, err)
	prefix := catalog.ArchivePrefix(tree) + "/"
	have := map[string]bool{}
	for _, n := range names {
		require.True(t, strings.HasPrefix(n, prefix), "archive entry %q outside %q", n, prefix)
		have[strings.TrimPrefix(n, prefix)] = true
		assert.NotContains(t, n, "node_modules/", "archive must not carry node_modules")
	}
	for _, want := range []string{".traefik.yml", "go.mod", ".assets/icon.png", "plugin/llmgateway.go", "plugin/vendor/modules.txt", "plugin/vendor/github.com/llmgateway/llmgateway/gateway/gateway.go"} {
		assert.True(t, have[want], "archive lacks %s", want)
	}
	t.Logf("archive of tree %s: %d entries, %d KiB", tree[:12], len(names), len(archive)/1024)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	storage := t.TempDir()
	mgr, err := catalog.Install(ctx, storage, catalogVersion, archive)
	require.NoError(t, err, "Traefik's plugins.Manager")
	installed := filepath.Join(mgr.GoPath(), "src", filepath.FromSlash(catalog.Module))
	for _, err := range catalog.CheckLayout(installed) {
		t.Error("unpacked archive:", err)
	}

	m, err := mgr.ReadManifest(catalog.Module)
	require.NoError(t, err)
	h, a, err := catalog.Analyze(mgr.GoPath(), m)
	require.NoError(t, err)
	t.Logf("crawler analysis: import %s, CreateConfig+testData+New %s, CPU time %s", a.Import.Round(1e6), a.New.Round(1e6), a.CPU.Round(1e6))
	assertServesTestData(t, h)

	descs := map[string]plugins.Descriptor{pluginAlias: {ModuleName: catalog.Module, Version: catalogVersion}}
	builder, err := plugins.NewBuilder(mgr, descs, nil)
	require.NoError(t, err, "Traefik's plugins.Builder over the remote install")
	constructor, err := builder.Build(pluginAlias, traefikConfig(t, m.TestData), "llm@file")
	require.NoError(t, err)
	built, err := constructor(ctx, &nextHandler{})
	require.NoError(t, err)
	assertServesTestData(t, built)
}

// assertServesTestData lists the models of the manifest's testData
// through h with its user's key.
func assertServesTestData(t *testing.T, h http.Handler) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/v1/models", nil)
	req.Header.Set("Authorization", "Bearer sk-llmgw-catalog-alice")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &list))
	var ids []string
	for _, d := range list.Data {
		ids = append(ids, d.ID)
	}
	assert.Subset(t, ids, []string{"gpt-5-mini", "claude-sonnet-4-5", "gemini-2.5-flash"})

	req = httptest.NewRequest(http.MethodGet, "/v1/models", nil)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	assert.Equal(t, http.StatusUnauthorized, rec.Code)
}

// TestRealTraefikCatalog installs the plugin in a real Traefik v3.6.12
// the way a catalog user does — experimental.plugins with moduleName and
// version — with Traefik downloading the archive over HTTPS from a
// loopback stand-in for the registry, validating its hash and unpacking
// it itself; then the gateway scenarios run through it.
func TestRealTraefikCatalog(t *testing.T) {
	bin := traefikBinary(t)
	_, archive := catalogArchive(t)
	reg, err := catalog.StartRegistry(t.TempDir(), catalogVersion, archive)
	require.NoError(t, err)
	defer reg.Close()

	up := newFixtureUpstream(t)
	dummyHits := &nextHandler{}
	dummy := httptest.NewServer(dummyHits)
	defer dummy.Close()

	work := t.TempDir()
	p, err := traefikproc.Start(traefikproc.Config{
		Binary:      bin,
		WorkDir:     work,
		Catalog:     &traefikproc.CatalogPlugin{Version: catalogVersion, Env: reg.Env()},
		DynamicYAML: dynamicConfigYAML(t, gatewayConfig(up.URL()), dummy.URL),
		ReadyPath:   "/v1/models",
		ReadyHeader: http.Header{"Authorization": {"Bearer " + userKey}},
	})
	require.NoError(t, err, "traefik start-up with the catalog plugin")
	t.Cleanup(func() {
		_ = p.Stop()
		if t.Failed() {
			t.Logf("traefik output:\n%s", p.Logs())
		}
	})

	assert.Equal(t, int64(1), reg.Downloads(), "Traefik downloads the archive once")
	assert.Equal(t, int64(1), reg.Validations(), "Traefik validates the archive's hash")
	assert.Empty(t, reg.Refused(), "Traefik asked the proxy for another host")
	_, err = os.Stat(filepath.Join(work, "plugins-storage", "archives", filepath.FromSlash(catalog.Module), catalogVersion+".zip"))
	assert.NoError(t, err, "the archive in Traefik's plugins-storage")

	runGatewayScenarios(t, p.URL, up, dummyHits)
	assert.Zero(t, dummyHits.hits.Load(), "the gateway's routes must not reach the router's service")
}

// gitCmd is git in dir.
func gitCmd(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	return cmd
}
