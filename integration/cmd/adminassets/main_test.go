package main

import (
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeDist lays out a dist/ with index.html and the assets.
func writeDist(t *testing.T, index string, assets map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "assets"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "index.html"), []byte(index), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, body := range assets {
		if err := os.WriteFile(filepath.Join(dir, "assets", name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const okIndex = `<!doctype html><html><head><link rel="icon" href="data:,">
<script type="module" crossorigin src="/admin/assets/index-AbCd1234.js"></script>
<link rel="stylesheet" href="/admin/assets/style-EfGh5678.css"></head><body><div id="app"></div></body></html>`

// Every byte survives: the generated constants, evaluated the way the
// compiler does, equal the files (raw literals for plain text, quoted
// ones for backquotes, CR, NUL, a BOM or invalid UTF-8); the output is
// gofmt-clean and the same on every run.
func TestGenerateRoundTrip(t *testing.T) {
	assets := map[string]string{
		"index-AbCd1234.js":  "let a=`x${1}`;\r\n\x00\uFEFF\xff\xfe end",
		"style-EfGh5678.css": "body{margin:0}\n/* é ü */\n",
		"logo-Zz99Yy88.png":  "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
	}
	dist := writeDist(t, okIndex, assets)
	src, n, err := generate(dist)
	if err != nil || n != 3 {
		t.Fatalf("generate: %d %v", n, err)
	}
	again, _, _ := generate(dist)
	if string(again) != string(src) {
		t.Fatal("two runs differ")
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "gen.go", src, parser.ParseComments)
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, src)
	}
	consts := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			lit := v.Values[0].(*ast.BasicLit)
			consts[v.Names[0].Name] = constant.StringVal(constant.MakeFromLiteral(lit.Value, token.STRING, 0))
		}
	}
	if consts["adminIndexHTML"] != okIndex {
		t.Fatalf("index: %q", consts["adminIndexHTML"])
	}
	for name, body := range assets {
		found := false
		for c, v := range consts {
			if strings.HasPrefix(c, "adminAsset") && strings.Contains(string(src), "// "+c+" is dist/assets/"+name+" ") {
				found = v == body
			}
		}
		if !found {
			t.Fatalf("%s did not round-trip", name)
		}
	}
	for _, want := range []string{`"logo-Zz99Yy88.png":`, `contentType: "image/png"`, `contentType: "text/javascript; charset=utf-8"`, "DO NOT EDIT"} {
		if !strings.Contains(string(src), want) {
			t.Fatalf("output lacks %s", want)
		}
	}
	if strings.Contains(string(src), "[]byte") {
		t.Fatal("output has a []byte literal")
	}
}

// A page the CSP would break, or that names a missing asset, and an
// unknown extension are refused.
func TestGenerateRefuses(t *testing.T) {
	js := map[string]string{"index-AbCd1234.js": "x", "style-EfGh5678.css": "y"}
	for _, c := range []struct {
		index  string
		assets map[string]string
		want   string
	}{
		{strings.Replace(okIndex, "<body>", "<body><script>alert(1)</script>", 1), js, "inline <script>"},
		{strings.Replace(okIndex, "<body>", "<body><style>p{}</style>", 1), js, "inline <style>"},
		{strings.Replace(okIndex, "<div id", `<div style="color:red" id`, 1), js, "style= attribute"},
		{strings.Replace(okIndex, "<div id", `<div onclick="x()" id`, 1), js, "event handler"},
		{strings.Replace(okIndex, `href="data:,"`, `href="https://cdn.example/x.css"`, 1), js, "another origin"},
		{okIndex, map[string]string{"index-AbCd1234.js": "x"}, "does not hold"},
		{okIndex, map[string]string{"index-AbCd1234.js": "x", "style-EfGh5678.css": "y", "a-12345678.xyz": "z"}, "no content type"},
		{`<html></html>`, js, "references no"},
	} {
		_, _, err := generate(writeDist(t, c.index, c.assets))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("want an error with %q, got %v", c.want, err)
		}
	}
}
