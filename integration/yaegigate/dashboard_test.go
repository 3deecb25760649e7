package yaegigate_test

import (
	"context"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The admin dashboard served by the plugin: GET /admin and every asset
// it references, byte for byte what gateway/admin_assets_gen.go holds,
// with the admin CSP, nosniff and the caching rules — under the
// interpreter (Yaegi loads the assets as string constants) and through a
// real Traefik process (LLMGW_REAL_TRAEFIK=1).

// dashCSP is the admin CSP (gateway/admin.go).
const dashCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

// dashAsset is one generated asset.
type dashAsset struct{ contentType, body string }

// generatedDashboard is the page and the assets of
// gateway/admin_assets_gen.go, evaluated the way the compiler does.
func generatedDashboard(t *testing.T) (string, map[string]dashAsset) {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(repoRoot(t), "gateway", "admin_assets_gen.go"), nil, 0)
	require.NoError(t, err)
	consts := map[string]string{}
	assets := map[string]dashAsset{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			switch {
			case g.Tok == token.CONST:
				consts[v.Names[0].Name] = constant.StringVal(constant.MakeFromLiteral(v.Values[0].(*ast.BasicLit).Value, token.STRING, 0))
			case v.Names[0].Name == "adminAssets":
				for _, e := range v.Values[0].(*ast.CompositeLit).Elts {
					kv := e.(*ast.KeyValueExpr)
					name, err := strconv.Unquote(kv.Key.(*ast.BasicLit).Value)
					require.NoError(t, err)
					var a dashAsset
					for _, fe := range kv.Value.(*ast.CompositeLit).Elts {
						fkv := fe.(*ast.KeyValueExpr)
						switch fkv.Key.(*ast.Ident).Name {
						case "contentType":
							a.contentType, err = strconv.Unquote(fkv.Value.(*ast.BasicLit).Value)
							require.NoError(t, err)
						case "body":
							a.body = fkv.Value.(*ast.Ident).Name
						}
					}
					assets[name] = a
				}
			}
		}
	}
	for name, a := range assets {
		body, ok := consts[a.body]
		require.True(t, ok, "constant %s of %s", a.body, name)
		a.body = body
		assets[name] = a
	}
	require.NotEmpty(t, assets)
	require.NotEmpty(t, consts["adminIndexHTML"])
	return consts["adminIndexHTML"], assets
}

// runDashboardSmoke fetches the page and every asset it references
// through front.
func runDashboardSmoke(t *testing.T, front string) {
	index, assets := generatedDashboard(t)
	c := newScenarioClient(front)
	resp, body := c.do(t, http.MethodGet, "/admin", nil, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, "body: %s", body)
	assert.Equal(t, index, string(body), "GET /admin is the generated page")
	assert.Equal(t, dashCSP, resp.Header.Get("Content-Security-Policy"))
	assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
	assert.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	assert.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html"), resp.Header.Get("Content-Type"))

	refs := regexp.MustCompile(`/admin/assets/([^"'\s>?#]+)`).FindAllStringSubmatch(string(body), -1)
	sawJS := false
	for _, m := range refs {
		want, ok := assets[m[1]]
		require.True(t, ok, "the page references %s, which is not generated", m[0])
		resp, got := c.do(t, http.MethodGet, m[0], nil, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, m[0])
		assert.Equal(t, want.contentType, resp.Header.Get("Content-Type"), m[0])
		assert.Equal(t, "public, max-age=31536000, immutable", resp.Header.Get("Cache-Control"), m[0])
		assert.Equal(t, dashCSP, resp.Header.Get("Content-Security-Policy"), m[0])
		assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"), m[0])
		assert.True(t, want.body == string(got), "%s: %d bytes served, %d generated", m[0], len(got), len(want.body))
		sawJS = sawJS || strings.HasSuffix(m[1], ".js")
	}
	assert.True(t, sawJS, "the page references no script: %s", body)
	resp, body = c.do(t, http.MethodGet, "/admin/assets/index-00000000.js", nil, nil)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "%s", body)
	assert.Equal(t, dashCSP, resp.Header.Get("Content-Security-Policy"))
}

// TestYaegiInterpreterDashboard: the interpreted plugin serves the
// dashboard byte for byte.
func TestYaegiInterpreterDashboard(t *testing.T) {
	p := loadInterpreted(t)
	up := newFixtureUpstream(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h, err := p.build(ctx, &nextHandler{}, traefikConfig(t, gatewayConfig(up.URL())), "llmgateway-dashboard")
	require.NoError(t, err, "New (interpreter output: %s)", p.output.String())
	front := httptest.NewServer(h)
	defer front.Close()
	runDashboardSmoke(t, front.URL)
}

// TestRealTraefikDashboard: the same through a real Traefik process.
func TestRealTraefikDashboard(t *testing.T) {
	bin := traefikBinary(t)
	up := newFixtureUpstream(t)
	dummyHits := &nextHandler{}
	dummy := httptest.NewServer(dummyHits)
	defer dummy.Close()
	rt := startRealTraefik(t, bin, gatewayConfig(up.URL()), dummy.URL)
	runDashboardSmoke(t, rt.base)
	assert.Zero(t, dummyHits.hits.Load(), "the dashboard must not reach the router's service")
}
