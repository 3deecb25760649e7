package yaegigate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/llmgateway/llmgateway/integration/catalog"
	"github.com/llmgateway/llmgateway/integration/logbuf"
	"github.com/stretchr/testify/require"
	"github.com/traefik/yaegi/interp"
	"github.com/traefik/yaegi/stdlib"
)

// interpretedPlugin is the plugin loaded by Yaegi the way Traefik loads it.
type interpretedPlugin struct {
	fnNew          reflect.Value
	fnCreateConfig reflect.Value
	output         *logbuf.Buffer
}

// loadInterpreted imports the plugin from source in a temp GOPATH with
// Yaegi v0.16.1 and the standard library symbols only.
func loadInterpreted(t *testing.T) *interpretedPlugin {
	t.Helper()
	m := readManifest(t)
	gopath := t.TempDir()
	installPlugin(t, gopath)

	out := &logbuf.Buffer{}
	i := interp.New(interp.Options{GoPath: gopath, Stdout: out, Stderr: out})
	require.NoError(t, i.Use(stdlib.Symbols))

	// The catalog's bound, held to CPU time (see catalog.NewTimeout);
	// the wall clock only catches a hang.
	ctx, cancel := context.WithTimeout(context.Background(), catalog.HangTimeout)
	defer cancel()
	start, cpu0 := time.Now(), catalog.CPUTime()
	_, err := i.EvalWithContext(ctx, fmt.Sprintf("import %q", m.Import))
	require.NoError(t, err, "yaegi import of %s (output: %s)", m.Import, out.String())
	cpu := catalog.CPUTime() - cpu0
	t.Logf("yaegi imported %s in %s (%s of CPU time)", m.Import, time.Since(start).Round(time.Millisecond), cpu.Round(time.Millisecond))
	require.LessOrEqual(t, cpu, catalog.NewTimeout, "the import's CPU time is over the catalog's bound")

	basePkg := m.BasePkg
	if basePkg == "" {
		basePkg = strings.ReplaceAll(m.Import[strings.LastIndex(m.Import, "/")+1:], "-", "_")
	}
	fnNew, err := i.Eval(basePkg + ".New")
	require.NoError(t, err, "eval %s.New", basePkg)
	fnCreateConfig, err := i.Eval(basePkg + ".CreateConfig")
	require.NoError(t, err, "eval %s.CreateConfig", basePkg)
	return &interpretedPlugin{fnNew: fnNew, fnCreateConfig: fnCreateConfig, output: out}
}

// build decodes a Traefik-shaped configuration into CreateConfig's result
// exactly as Traefik's Yaegi middleware builder does (mapstructure with
// weakly typed input and the comma-splitting hook), then calls New.
func (p *interpretedPlugin) build(ctx context.Context, next http.Handler, config map[string]interface{}, name string) (http.Handler, error) {
	return catalog.Build(ctx, p.fnCreateConfig, p.fnNew, config, next, name)
}

// traefikConfig turns a JSON-like config into Traefik's delivered shape.
func traefikConfig(t *testing.T, cfg map[string]interface{}) map[string]interface{} {
	t.Helper()
	// Round-trip through JSON so every number is a json.Number, as a
	// document would give, then stringify like paerser.
	data, err := json.Marshal(cfg)
	require.NoError(t, err)
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var raw map[string]interface{}
	require.NoError(t, dec.Decode(&raw))
	shaped, ok := traefikShape(raw).(map[string]interface{})
	require.True(t, ok, "config must not be empty")
	return shaped
}

// TestYaegiInterpreterManifestTestData is the catalog analyzer's check:
// import within its bound, decode testData as Traefik does, call New.
func TestYaegiInterpreterManifestTestData(t *testing.T) {
	p := loadInterpreted(t)
	m := readManifest(t)
	shaped, ok := traefikShape(m.TestData).(map[string]interface{})
	require.True(t, ok)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	done := make(chan error, 1)
	cpu0 := catalog.CPUTime()
	go func() {
		_, err := p.build(ctx, &nextHandler{}, shaped, "llmgateway-testdata")
		done <- err
	}()
	select {
	case err := <-done:
		require.NoError(t, err, "New with the manifest's testData (interpreter output: %s)", p.output.String())
		require.LessOrEqual(t, catalog.CPUTime()-cpu0, catalog.NewTimeout, "New's CPU time is over the catalog's bound")
	case <-time.After(catalog.HangTimeout):
		t.Fatalf("New with the manifest's testData did not return within %s (hung)", catalog.HangTimeout)
	}
}

// TestYaegiInterpreterServes serves the interpreted middleware behind a
// real HTTP server and runs the gateway scenarios through it.
func TestYaegiInterpreterServes(t *testing.T) {
	p := loadInterpreted(t)
	up := newFixtureUpstream(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	next := &nextHandler{}
	h, err := p.build(ctx, next, traefikConfig(t, gatewayConfig(up.URL())), "llmgateway-interp")
	require.NoError(t, err, "New (interpreter output: %s)", p.output.String())

	front := httptest.NewServer(h)
	defer front.Close()
	runGatewayScenarios(t, front.URL, up, next)
	if t.Failed() {
		t.Logf("interpreter output:\n%s", p.output.String())
	}
}

// TestYaegiInterpreterRefusesUnknownKey checks that a misspelled key is an
// error from New, not silently ignored.
func TestYaegiInterpreterRefusesUnknownKey(t *testing.T) {
	p := loadInterpreted(t)
	cfg := gatewayConfig("http://127.0.0.1:9")
	cfg["providerz"] = map[string]interface{}{"x": "y"}
	_, err := p.build(context.Background(), &nextHandler{}, traefikConfig(t, cfg), "llmgateway-unknown")
	require.Error(t, err)
	require.Contains(t, err.Error(), "providerz")
}
