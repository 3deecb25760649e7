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
	if !packages["."] || !packages[filepath.Join("internal", "store")] {
		t.Errorf("packages checked %v: want the root and internal/store at least", packages)
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
