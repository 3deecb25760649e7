package gateway

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// selfImportPath is the core's own path (external example tests use it).
const selfImportPath = "github.com/llmgateway/llmgateway/gateway"

// coreGoFiles lists every .go file of the core: this directory and every
// package below it, skipping what the go tool skips (testdata, and
// directories starting with "." or "_").
func coreGoFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for i := 0; i < len(entries); i++ {
		name := entries[i].Name()
		path := filepath.Join(dir, name)
		if entries[i].IsDir() {
			if name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				continue
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				t.Errorf("%s is a nested module: the core is one module", path)
				continue
			}
			files = append(files, coreGoFiles(t, path)...)
			continue
		}
		if strings.HasSuffix(name, ".go") {
			files = append(files, path)
		}
	}
	return files
}

// TestStdlibOnly fails when any file of the core, in any of its packages
// (tests included), imports a package outside the standard library other
// than the core's own packages, or when go.mod gains a requirement: Yaegi
// interprets this module inside Traefik from source.
func TestStdlibOnly(t *testing.T) {
	files := coreGoFiles(t, ".")
	packages := map[string]bool{}
	fset := token.NewFileSet()
	for i := 0; i < len(files); i++ {
		packages[filepath.Dir(files[i])] = true
		f, err := parser.ParseFile(fset, files[i], nil, parser.ImportsOnly)
		if err != nil {
			t.Fatalf("%s: %v", files[i], err)
		}
		for j := 0; j < len(f.Imports); j++ {
			p, _ := strconv.Unquote(f.Imports[j].Path.Value)
			first := strings.SplitN(p, "/", 2)[0]
			own := p == selfImportPath || strings.HasPrefix(p, selfImportPath+"/")
			if strings.Contains(first, ".") && !own {
				t.Errorf("%s imports %q: the gateway core must stay standard-library only", files[i], p)
			}
		}
	}
	// The walk must have seen the sub-packages, or it checks nothing
	// there.
	leaves := []string{"apierr", "sse", "translate", "store"}
	for i := 0; i < len(leaves); i++ {
		if !packages[filepath.Join("internal", leaves[i])] {
			t.Errorf("packages checked %v: want internal/%s", packages, leaves[i])
		}
	}
	if !packages["."] {
		t.Errorf("packages checked %v: want the root", packages)
	}
	mod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(mod), "\n")
	for i := 0; i < len(lines); i++ {
		if strings.HasPrefix(strings.TrimSpace(lines[i]), "require") {
			t.Errorf("gateway/go.mod has a requirement (%q): the core must have none", lines[i])
		}
	}
}

// leafImports is which of the core's own packages each sub-package may
// import: the leaves know nothing of the pipeline (package gateway), and
// the error type, the SSE codec and the JSON scanner sit below the
// translators (the scanner knows nothing of the others); the store's
// tests start a redis-server through the test helper redistest.
var leafImports = map[string][]string{
	"internal/apierr":    nil,
	"internal/chans":     nil,
	"internal/jsonscan":  nil,
	"internal/redistest": nil,
	"internal/sse":       nil,
	"internal/store":     {"internal/chans", "internal/redistest"},
	"internal/translate": {"internal/apierr", "internal/jsonscan", "internal/sse"},
}

// TestLeafImports fails when a sub-package (tests included) imports one
// of the core's packages its row of leafImports does not list, or when a
// sub-package has no row.
func TestLeafImports(t *testing.T) {
	files := coreGoFiles(t, "internal")
	fset := token.NewFileSet()
	for i := 0; i < len(files); i++ {
		dir := filepath.ToSlash(filepath.Dir(files[i]))
		allowed, known := leafImports[dir]
		if !known {
			t.Errorf("%s: package %s has no row in leafImports", files[i], dir)
			continue
		}
		f, err := parser.ParseFile(fset, files[i], nil, parser.ImportsOnly)
		if err != nil {
			t.Fatalf("%s: %v", files[i], err)
		}
		for j := 0; j < len(f.Imports); j++ {
			p, _ := strconv.Unquote(f.Imports[j].Path.Value)
			if p != selfImportPath && !strings.HasPrefix(p, selfImportPath+"/") {
				continue
			}
			rel := strings.TrimPrefix(strings.TrimPrefix(p, selfImportPath), "/")
			ok := false
			for k := 0; k < len(allowed); k++ {
				ok = ok || allowed[k] == rel
			}
			if !ok {
				t.Errorf("%s imports %q: %s may import only %v of the core", files[i], p, dir, allowed)
			}
		}
	}
}
