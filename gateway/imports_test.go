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

// TestStdlibOnly fails when any file of the core (tests included) imports
// a package outside the standard library, or when go.mod gains a
// requirement: Yaegi interprets this module inside Traefik from source.
func TestStdlibOnly(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files found: %v", err)
	}
	fset := token.NewFileSet()
	for i := 0; i < len(files); i++ {
		f, err := parser.ParseFile(fset, files[i], nil, parser.ImportsOnly)
		if err != nil {
			t.Fatalf("%s: %v", files[i], err)
		}
		for j := 0; j < len(f.Imports); j++ {
			p, _ := strconv.Unquote(f.Imports[j].Path.Value)
			first := strings.SplitN(p, "/", 2)[0]
			if strings.Contains(first, ".") && p != selfImportPath {
				t.Errorf("%s imports %q: the gateway core must stay standard-library only", files[i], p)
			}
		}
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
