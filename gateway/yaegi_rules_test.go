package gateway

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// TestNoNamedResults fails on any function declaration or function
// literal with named results in a non-test file of any package of the
// core. Under Yaegi v0.16.1 named results are not reliably zeroed between
// calls: a named result appended to and returned bare keeps the previous
// call's value, a bug the compiled tests never see. Test files are
// exempt: they are not part of what Traefik interprets.
func TestNoNamedResults(t *testing.T) {
	eachCoreSourceNode(t, func(fset *token.FileSet, n ast.Node) {
		var ft *ast.FuncType
		if d, ok := n.(*ast.FuncDecl); ok {
			ft = d.Type
		} else if l, ok := n.(*ast.FuncLit); ok {
			ft = l.Type
		}
		if ft != nil && hasNamedResults(ft) {
			t.Errorf("%s: function with named results (Yaegi may keep their values between calls)", fset.Position(ft.Pos()))
		}
	})
}

// eachCoreSourceNode calls visit on every AST node of every non-test
// file of every package of the core.
func eachCoreSourceNode(t *testing.T, visit func(fset *token.FileSet, n ast.Node)) {
	files := coreGoFiles(t, ".")
	fset := token.NewFileSet()
	for i := 0; i < len(files); i++ {
		if strings.HasSuffix(files[i], "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, files[i], nil, 0)
		if err != nil {
			t.Fatalf("%s: %v", files[i], err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			visit(fset, n)
			return true
		})
	}
}

// hasNamedResults reports whether ft names any of its results.
func hasNamedResults(ft *ast.FuncType) bool {
	if ft.Results == nil {
		return false
	}
	for i := 0; i < len(ft.Results.List); i++ {
		if len(ft.Results.List[i].Names) > 0 {
			return true
		}
	}
	return false
}

// TestNoSelectStatements fails on a select statement in a non-test file
// of any package of the core. Yaegi v0.16.1 builds one
// []reflect.SelectCase per select statement and every execution fills
// it in: concurrent runs of one statement exchange channels and sent
// values (internal/chans has the operations the core needs, built per
// call).
func TestNoSelectStatements(t *testing.T) {
	eachCoreSourceNode(t, func(fset *token.FileSet, n ast.Node) {
		if s, ok := n.(*ast.SelectStmt); ok {
			t.Errorf("%s: select statement (under Yaegi concurrent runs of it share their cases; use internal/chans)", fset.Position(s.Pos()))
		}
	})
}

// TestNoNilInMultiValueAssignment fails on `a, b = x, nil` (or :=) in a
// non-test file of the core: Yaegi v0.16.1 panics on it at run time
// ("reflect: New(nil)"), in whichever request first runs the line — the
// compiled build never notices. Assign the nil on a line of its own.
func TestNoNilInMultiValueAssignment(t *testing.T) {
	eachCoreSourceNode(t, func(fset *token.FileSet, n ast.Node) {
		a, ok := n.(*ast.AssignStmt)
		if !ok || len(a.Rhs) < 2 {
			return
		}
		for i := 0; i < len(a.Rhs); i++ {
			if id, ok := a.Rhs[i].(*ast.Ident); ok && id.Name == "nil" {
				t.Errorf("%s: nil among the values of a multi-value assignment (Yaegi panics on it)", fset.Position(a.Pos()))
			}
		}
	})
}

// TestNoMultiValueCaseInTaglessSwitch fails on `switch { case a, b: }`
// in a non-test file of the core: under Yaegi v0.16.1 such a case
// matches on its first expression only (b true, a false falls through).
// Write `case a || b:`. A tagged switch (`switch x { case 1, 2: }`) is
// interpreted correctly.
func TestNoMultiValueCaseInTaglessSwitch(t *testing.T) {
	eachCoreSourceNode(t, func(fset *token.FileSet, n ast.Node) {
		s, ok := n.(*ast.SwitchStmt)
		if !ok || s.Tag != nil {
			return
		}
		for i := 0; i < len(s.Body.List); i++ {
			if cc, ok := s.Body.List[i].(*ast.CaseClause); ok && len(cc.List) > 1 {
				t.Errorf("%s: a case with several expressions in a tagless switch (Yaegi matches the first only; use ||)", fset.Position(cc.Pos()))
			}
		}
	})
}

// TestNoForInitWithoutConditionOrPost fails on `for i := x; ; { … }`
// in a non-test file of the core: under Yaegi v0.16.1 a loop with an
// init statement but neither a condition nor a post statement starts
// every turn with the init's value (assignments to i in the body are
// lost), so a loop that should advance spins forever. Declare i before
// a plain `for {`.
func TestNoForInitWithoutConditionOrPost(t *testing.T) {
	eachCoreSourceNode(t, func(fset *token.FileSet, n ast.Node) {
		if f, ok := n.(*ast.ForStmt); ok && f.Init != nil && f.Cond == nil && f.Post == nil {
			t.Errorf("%s: a for loop with an init statement but no condition or post statement (Yaegi resets its variable every turn)", fset.Position(f.Pos()))
		}
	})
}

// TestFuncLiteralsNameTheirParameters fails on a function literal with an
// unnamed parameter (`func(int) { … }`) in a non-test file of the core:
// under Yaegi v0.16.1 such a closure that calls a method of a compiled
// type on a captured variable panics when called ("reflect.Set: value of
// type int is not assignable to type func(*bytes.Reader, []uint8)"):
// the argument lands in the captured variable's slot. Name it, `_` will
// do.
func TestFuncLiteralsNameTheirParameters(t *testing.T) {
	eachCoreSourceNode(t, func(fset *token.FileSet, n ast.Node) {
		l, ok := n.(*ast.FuncLit)
		if !ok {
			return
		}
		for i := 0; i < len(l.Type.Params.List); i++ {
			if len(l.Type.Params.List[i].Names) == 0 {
				t.Errorf("%s: function literal with an unnamed parameter (Yaegi may pass it into a captured variable; name it, `_` will do)", fset.Position(l.Pos()))
			}
		}
	})
}
