// Package catalog checks the repository the way the Traefik Plugin
// Catalog and Traefik's remote-plugin installer see it: the rules the
// catalog's crawler applies to the repository root (go.mod, .traefik.yml,
// tags), the GitHub-style zip archive of a tree, and the install and
// analysis of that archive — unpacked by Traefik's own plugins.Manager and
// interpreted by Yaegi v0.16.1 the way the crawler does (import,
// CreateConfig, testData decoded with Traefik's decoder settings, New
// within 10 s).
package catalog

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/mitchellh/mapstructure"
	"github.com/traefik/traefik/v3/pkg/plugins"
	"github.com/traefik/yaegi/interp"
	"github.com/traefik/yaegi/stdlib"
	"golang.org/x/mod/modfile"
	"gopkg.in/yaml.v3"
)

// Module is the plugin's name in the catalog and in Traefik's static
// configuration: the repository root's module path.
const Module = "github.com/llmgateway/llmgateway"

// Owner and Repo are the GitHub repository Module names.
const (
	Owner = "llmgateway"
	Repo  = "llmgateway"
)

// NewTimeout is the crawler's bound on the import plus New. The crawler
// measures it on a quiet machine, where the wall clock and the CPU time
// agree; a test on a loaded CI machine would measure the load instead, so
// Analyze holds the work's CPU time to this bound (CPUTime) and the wall
// clock only to HangTimeout.
const NewTimeout = 10 * time.Second

// HangTimeout bounds the wall-clock time of the analysis: long enough for
// any load, short enough that a hang fails the test.
const HangTimeout = 2 * time.Minute

// CPUTime is the user plus system CPU time this process has used.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// maxIconBytes bounds the icon the manifest names.
const maxIconBytes = 256 << 10

var (
	rootModuleRE = regexp.MustCompile(`^github\.com/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$`)
	releaseTagRE = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$`)
)

// ReadManifest decodes root/.traefik.yml with Traefik's own Manifest type
// and decoder.
func ReadManifest(root string) (*plugins.Manifest, error) {
	data, err := os.ReadFile(filepath.Join(root, ".traefik.yml"))
	if err != nil {
		return nil, err
	}
	m := &plugins.Manifest{}
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(m); err != nil {
		return nil, fmt.Errorf(".traefik.yml: %w", err)
	}
	return m, nil
}

// catalogManifest is every key the catalog reads from .traefik.yml
// (Traefik's Manifest plus the catalog's icon and banner), decoded
// strictly so that a misspelt key fails instead of being ignored.
type catalogManifest struct {
	DisplayName   string                 `yaml:"displayName"`
	Type          string                 `yaml:"type"`
	Runtime       string                 `yaml:"runtime"`
	WasmPath      string                 `yaml:"wasmPath"`
	Import        string                 `yaml:"import"`
	BasePkg       string                 `yaml:"basePkg"`
	Compatibility string                 `yaml:"compatibility"`
	Summary       string                 `yaml:"summary"`
	IconPath      string                 `yaml:"iconPath"`
	BannerPath    string                 `yaml:"bannerPath"`
	UseUnsafe     bool                   `yaml:"useUnsafe"`
	TestData      map[string]interface{} `yaml:"testData"`
}

func readCatalogManifest(root string) (*catalogManifest, error) {
	data, err := os.ReadFile(filepath.Join(root, ".traefik.yml"))
	if err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	m := &catalogManifest{}
	if err := dec.Decode(m); err != nil {
		return nil, fmt.Errorf(".traefik.yml: %w", err)
	}
	return m, nil
}

// CheckLayout applies the crawler's rules to a tree laid out like the
// repository root (a checkout or an unpacked archive) and returns every
// violation: the root go.mod's module is github.com/<owner>/<repo> with no
// requirements; .traefik.yml is a Yaegi middleware whose import starts
// with that module and names a package of basePkg; displayName, summary
// and testData are set; the icon exists; the imported package vendors the
// core it needs.
func CheckLayout(root string) []error {
	var errs []error
	bad := func(format string, args ...interface{}) { errs = append(errs, fmt.Errorf(format, args...)) }

	modPath := ""
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		bad("root go.mod: %v", err)
	} else if mf, err := modfile.Parse("go.mod", data, nil); err != nil {
		bad("root go.mod: %v", err)
	} else {
		if mf.Module == nil {
			bad("root go.mod: no module line")
		} else {
			modPath = mf.Module.Mod.Path
			if !rootModuleRE.MatchString(modPath) {
				bad("root go.mod: module %q is not github.com/<owner>/<repo>", modPath)
			}
			if modPath != Module {
				bad("root go.mod: module %q, want %q", modPath, Module)
			}
		}
		if len(mf.Require) > 0 {
			bad("root go.mod: %d requirements; the root module must have none", len(mf.Require))
		}
	}

	if _, err := ReadManifest(root); err != nil {
		return append(errs, fmt.Errorf("manifest (Traefik's decoder): %w", err))
	}
	m, err := readCatalogManifest(root)
	if err != nil {
		return append(errs, fmt.Errorf("manifest: %w", err))
	}
	if m.Type != "middleware" {
		bad(".traefik.yml: type %q, want middleware", m.Type)
	}
	if m.Runtime != "" && m.Runtime != "yaegi" {
		bad(".traefik.yml: runtime %q, want yaegi", m.Runtime)
	}
	if m.DisplayName == "" || m.Summary == "" {
		bad(".traefik.yml: displayName and summary are required")
	}
	if m.TestData == nil {
		bad(".traefik.yml: testData is required")
	}
	if modPath != "" && !strings.HasPrefix(m.Import, modPath) {
		bad(".traefik.yml: import %q does not start with the module %q", m.Import, modPath)
	}
	if m.IconPath == "" {
		bad(".traefik.yml: iconPath is empty")
	} else if fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(m.IconPath))); err != nil {
		bad(".traefik.yml: iconPath: %v", err)
	} else if fi.Size() == 0 || fi.Size() > maxIconBytes {
		bad(".traefik.yml: icon %s is %d bytes (want 1..%d)", m.IconPath, fi.Size(), maxIconBytes)
	}

	rel := strings.TrimPrefix(strings.TrimPrefix(m.Import, modPath), "/")
	pkgDir := filepath.Join(root, filepath.FromSlash(rel))
	name, err := packageName(pkgDir)
	if err != nil {
		bad("import %s: %v", m.Import, err)
	} else if basePkg := m.BasePkg; basePkg != "" && basePkg != name {
		bad(".traefik.yml: basePkg %q but package %s is %q", basePkg, m.Import, name)
	}
	if _, err := os.Stat(filepath.Join(pkgDir, "vendor", "github.com", Owner, Repo, "gateway")); err != nil {
		bad("%s/vendor must hold the core (make vendor): %v", rel, err)
	}
	return errs
}

// packageName is the package clause of the non-test Go files in dir.
func packageName(dir string) (string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return "", err
	}
	name := ""
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.PackageClauseOnly)
		if err != nil {
			return "", err
		}
		if name != "" && af.Name.Name != name {
			return "", fmt.Errorf("two packages in %s: %s and %s", dir, name, af.Name.Name)
		}
		name = af.Name.Name
	}
	if name == "" {
		return "", fmt.Errorf("no Go files in %s", dir)
	}
	return name, nil
}

// CheckTags returns an error naming every tag of the repository that is
// not a plain vX.Y.Z: the catalog rejects a repository whose first page
// of tags holds one (a "plugin/v1.0.0" or "gateway/v1.0.0" module tag,
// say).
func CheckTags(repoRoot string) error {
	out, err := git(repoRoot, nil, "tag", "--list")
	if err != nil {
		return err
	}
	var badTags []string
	for _, tag := range strings.Fields(string(out)) {
		if !releaseTagRE.MatchString(tag) {
			badTags = append(badTags, tag)
		}
	}
	if len(badTags) > 0 {
		return fmt.Errorf("tags that are not vX.Y.Z (the catalog refuses the repository): %s", strings.Join(badTags, ", "))
	}
	return nil
}

// WorkTree returns the git tree of the working tree as a commit of it
// would record it (tracked and untracked files, .gitignore honoured),
// written with a temporary index so that neither the real index nor HEAD
// changes; on a clean checkout it is HEAD's tree.
func WorkTree(repoRoot string) (string, error) {
	indexPath, err := git(repoRoot, nil, "rev-parse", "--git-path", "index")
	if err != nil {
		return "", err
	}
	index := strings.TrimSpace(string(indexPath))
	if !filepath.IsAbs(index) {
		index = filepath.Join(repoRoot, index)
	}
	tmp, err := os.MkdirTemp("", "catalog-index-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	tmpIndex := filepath.Join(tmp, "index")
	if data, err := os.ReadFile(index); err == nil {
		if err := os.WriteFile(tmpIndex, data, 0o600); err != nil {
			return "", err
		}
	}
	env := []string{"GIT_INDEX_FILE=" + tmpIndex}
	if _, err := git(repoRoot, env, "add", "-A"); err != nil {
		return "", err
	}
	tree, err := git(repoRoot, env, "write-tree")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(tree)), nil
}

// ArchivePrefix is the top folder of GitHub's archive of a commit:
// <owner>-<repo>-<short sha>.
func ArchivePrefix(treeish string) string {
	short := treeish
	if len(short) > 7 {
		short = short[:7]
	}
	return Owner + "-" + Repo + "-" + short
}

// Archive is `git archive` of treeish as a zip under ArchivePrefix — the
// shape of the GitHub archive the catalog serves Traefik.
func Archive(repoRoot, treeish string) ([]byte, error) {
	return git(repoRoot, nil, "archive", "--format=zip", "--prefix="+ArchivePrefix(treeish)+"/", treeish)
}

// ZipNames lists an archive's file names.
func ZipNames(archive []byte) ([]string, error) {
	zr, err := zip.NewReader(bytes.NewReader(archive), int64(len(archive)))
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(zr.File))
	for _, f := range zr.File {
		names = append(names, f.Name)
	}
	return names, nil
}

// Hash is the archive hash Traefik computes and the registry validates:
// hex SHA-256.
func Hash(archive []byte) string {
	sum := sha256.Sum256(archive)
	return hex.EncodeToString(sum[:])
}

// Install unpacks archive as plugin Module@version with Traefik's own
// plugins.Manager under storage (Traefik's plugins-storage), through a
// downloader that hands it the archive instead of calling the registry.
// The manager's GoPath then holds src/<Module>/.
func Install(ctx context.Context, storage, version string, archive []byte) (*plugins.Manager, error) {
	dl := &archiveDownloader{archives: filepath.Join(storage, "archives"), archive: archive}
	mgr, err := plugins.NewManager(dl, plugins.ManagerOptions{Output: storage})
	if err != nil {
		return nil, err
	}
	if err := mgr.InstallPlugin(ctx, plugins.Descriptor{ModuleName: Module, Version: version}); err != nil {
		return nil, err
	}
	if !dl.checked {
		return nil, errors.New("the Traefik plugin manager did not validate the archive hash")
	}
	return mgr, nil
}

// archiveDownloader is a plugins.PluginDownloader that writes the given
// archive where Traefik's registry downloader would and validates the
// hash the manager computed against it.
type archiveDownloader struct {
	archives string
	archive  []byte
	checked  bool
}

func (d *archiveDownloader) Download(_ context.Context, name, version string) (string, error) {
	path := filepath.Join(d.archives, filepath.FromSlash(name), version+".zip")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(path, d.archive, 0o644); err != nil {
		return "", err
	}
	return Hash(d.archive), nil
}

func (d *archiveDownloader) Check(_ context.Context, name, version, hash string) error {
	if name != Module || hash != Hash(d.archive) {
		return fmt.Errorf("integrity check failed for %s@%s", name, version)
	}
	d.checked = true
	return nil
}

// Analysis is what the crawler-style check measured.
type Analysis struct {
	Import time.Duration // Yaegi import of the manifest's import
	New    time.Duration // CreateConfig, testData decoding and New
	CPU    time.Duration // the process's CPU time over both (held to NewTimeout)
}

// Analyze is the crawler's check of an installed plugin: interpret
// m.Import from gopath with Yaegi v0.16.1 and the standard library only,
// call CreateConfig, decode m.TestData into it the way Traefik's
// middleware builder decodes a configuration (mapstructure, weakly typed
// input, comma-splitting hook), and call New with a no-op next handler —
// the import and New within NewTimeout together (of CPU time; see
// NewTimeout). The handler is returned for a request smoke test.
func Analyze(gopath string, m *plugins.Manifest) (http.Handler, Analysis, error) {
	var a Analysis
	ctx, cancel := context.WithTimeout(context.Background(), HangTimeout)
	defer cancel()
	cpu0 := CPUTime()
	var out bytes.Buffer
	i := interp.New(interp.Options{GoPath: gopath, Stdout: &out, Stderr: &out})
	if err := i.Use(stdlib.Symbols); err != nil {
		return nil, a, err
	}
	start := time.Now()
	if _, err := i.EvalWithContext(ctx, fmt.Sprintf("import %q", m.Import)); err != nil {
		return nil, a, fmt.Errorf("yaegi import of %s: %w (output: %s)", m.Import, err, out.String())
	}
	a.Import = time.Since(start)
	basePkg := m.BasePkg
	if basePkg == "" {
		basePkg = strings.ReplaceAll(m.Import[strings.LastIndex(m.Import, "/")+1:], "-", "_")
	}
	fnCreate, err := i.EvalWithContext(ctx, basePkg+".CreateConfig")
	if err != nil {
		return nil, a, err
	}
	fnNew, err := i.EvalWithContext(ctx, basePkg+".New")
	if err != nil {
		return nil, a, err
	}

	type result struct {
		h   http.Handler
		err error
	}
	done := make(chan result, 1)
	start = time.Now()
	go func() {
		next := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
		h, err := Build(ctx, fnCreate, fnNew, m.TestData, next, "catalog-analysis")
		done <- result{h, err}
	}()
	select {
	case r := <-done:
		a.New = time.Since(start)
		a.CPU = CPUTime() - cpu0
		if r.err != nil {
			return nil, a, fmt.Errorf("calling New with testData: %w (output: %s)", r.err, out.String())
		}
		if a.CPU > NewTimeout {
			return nil, a, fmt.Errorf("import and New took %s of CPU time, over the catalog's %s", a.CPU.Round(time.Millisecond), NewTimeout)
		}
		return r.h, a, nil
	case <-ctx.Done():
		return nil, a, fmt.Errorf("import and New did not finish within %s (hung)", HangTimeout)
	}
}

// Build is what Traefik's Yaegi middleware builder does with a plugin's
// interpreted CreateConfig and New: CreateConfig, config decoded into its
// result (mapstructure, weakly typed input, the comma-splitting hook;
// an empty config decodes nothing), then New with next and name.
func Build(ctx context.Context, fnCreate, fnNew reflect.Value, config map[string]interface{}, next http.Handler, name string) (http.Handler, error) {
	results := fnCreate.Call(nil)
	if len(results) != 1 {
		return nil, fmt.Errorf("CreateConfig returned %d values", len(results))
	}
	vConfig := results[0]
	if len(config) > 0 {
		dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
			DecodeHook:       mapstructure.StringToSliceHookFunc(","),
			WeaklyTypedInput: true,
			Result:           vConfig.Interface(),
		})
		if err != nil {
			return nil, err
		}
		if err := dec.Decode(config); err != nil {
			return nil, fmt.Errorf("failed to decode configuration: %w", err)
		}
	}
	out := fnNew.Call([]reflect.Value{reflect.ValueOf(ctx), reflect.ValueOf(next), vConfig, reflect.ValueOf(name)})
	if len(out) != 2 {
		return nil, fmt.Errorf("the plugin's New returned %d values", len(out))
	}
	if e := out[1].Interface(); e != nil {
		err, ok := e.(error)
		if !ok {
			return nil, fmt.Errorf("the plugin's New returned a non-error %T", e)
		}
		return nil, err
	}
	h, ok := out[0].Interface().(http.Handler)
	if !ok {
		return nil, fmt.Errorf("the plugin's New returned %T, not an http.Handler", out[0].Interface())
	}
	return h, nil
}

// git runs git in dir with extra environment and returns its stdout.
func git(dir string, env []string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}
