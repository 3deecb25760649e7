package integration_test

import (
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/llmgateway/llmgateway/gateway"
	"github.com/llmgateway/llmgateway/integration/logbuf"
)

// exampleGateway is a gateway configuration taken from an example, with
// what the process running it would see there.
type exampleGateway struct {
	cfg *gateway.Config
	// document is the generic configuration the config was decoded from;
	// its "env:NAME" secrets are looked up in env.
	document interface{}
	// env is the environment of the process that runs the gateway.
	env map[string]string
	// usersFile is the content of the file cfg.Users.File names.
	usersFile string
}

// secretRefs lists the names of the "env:NAME" and "file:PATH" secrets
// anywhere in a generic configuration.
func secretRefs(v interface{}, prefix string) []string {
	var out []string
	switch t := v.(type) {
	case string:
		if s := strings.TrimSpace(t); strings.HasPrefix(s, prefix) {
			out = append(out, strings.TrimPrefix(s, prefix))
		}
	case map[string]interface{}:
		for _, item := range t {
			out = append(out, secretRefs(item, prefix)...)
		}
	case []interface{}:
		for _, item := range t {
			out = append(out, secretRefs(item, prefix)...)
		}
	}
	sort.Strings(out)
	return out
}

// buildExampleGateway builds the example's gateway with gateway.New the
// way the plugin or the binary would, without leaving loopback: every
// env: secret is set from the example's environment (each must be
// there), the users file is written to a temp path, and each discovering
// provider's baseUrl is pointed at a loopback server listing one model,
// "discovered-<provider>". Nothing else is rewritten: New dials no
// upstream and no Redis.
func buildExampleGateway(t *testing.T, ex exampleGateway) *gateway.Gateway {
	t.Helper()
	require.Empty(t, secretRefs(ex.document, "file:"), "file: secrets are not resolved by this test")
	for _, name := range secretRefs(ex.document, "env:") {
		value, ok := ex.env[name]
		require.True(t, ok, "env:%s is not in the environment of the process that runs the gateway", name)
		require.NotEmpty(t, value, "env:%s is empty", name)
		t.Setenv(name, value)
	}
	if ex.cfg.Users != nil && ex.cfg.Users.File != "" {
		usersPath := filepath.Join(t.TempDir(), filepath.Base(ex.cfg.Users.File))
		require.NoError(t, os.WriteFile(usersPath, []byte(ex.usersFile), 0o600))
		ex.cfg.Users.File = usersPath
	}
	for name, p := range ex.cfg.Providers {
		if !p.Discovery {
			continue
		}
		require.Equal(t, "openai", p.Type, "provider %s: the discovery stub speaks only OpenAI's listing", name)
		model := "discovered-" + name
		stub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/v1/models" {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"`+model+`","object":"model","owned_by":"stub"}]}`)
		}))
		t.Cleanup(stub.Close)
		p.BaseURL = stub.URL
	}
	logs := &logbuf.Buffer{}
	gw, err := gateway.New(nil, ex.cfg, gateway.Options{Name: "example", LogOutput: logs})
	require.NoError(t, err, "gateway.New; log:\n%s", logs.String())
	t.Cleanup(func() {
		_ = gw.Close()
		if t.Failed() {
			t.Logf("gateway log:\n%s", logs.String())
		}
	})
	return gw
}

// usersFileKey returns the apiKey of the named user in a users file.
func usersFileKey(t *testing.T, content, user string) string {
	t.Helper()
	var doc struct {
		Users []struct {
			Name   string `json:"name"`
			APIKey string `json:"apiKey"`
		} `json:"users"`
	}
	require.NoError(t, json.Unmarshal([]byte(content), &doc))
	for _, u := range doc.Users {
		if u.Name == user {
			return u.APIKey
		}
	}
	t.Fatalf("no user %q in the users file", user)
	return ""
}

// requireModels asks the gateway for GET /v1/models with a key and
// requires every wanted id in the answer.
func requireModels(t *testing.T, gw http.Handler, apiKey string, want ...string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/v1/models", nil)
	req.Header.Set("Authorization", "Bearer "+apiKey)
	rec := httptest.NewRecorder()
	gw.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &list))
	ids := map[string]bool{}
	for _, m := range list.Data {
		ids[m.ID] = true
	}
	for _, id := range want {
		require.True(t, ids[id], "GET /v1/models lacks %s: %s", id, rec.Body.String())
	}
}

// decodeBinaryConfig decodes a config file the way cmd/llmgateway does:
// YAML (yaml.v3) to a generic value, then JSON, then the gateway's strict
// decoder.
func decodeBinaryConfig(t *testing.T, content string) (*gateway.Config, map[string]interface{}) {
	t.Helper()
	dec := yaml.NewDecoder(strings.NewReader(content))
	var doc map[string]interface{}
	require.NoError(t, dec.Decode(&doc))
	var extra interface{}
	require.ErrorIs(t, dec.Decode(&extra), io.EOF, "one YAML document")
	data, err := json.Marshal(doc)
	require.NoError(t, err)
	cfg, err := gateway.DecodeConfigJSON(data)
	require.NoError(t, err)
	return cfg, doc
}

// binarySettings are the standalone binary's flags that the examples
// depend on, as cmd/llmgateway parses them: an explicit flag beats its
// LLMGW_* variable, which beats the default.
type binarySettings struct {
	config, listen, healthPath, readyPath string
	shutdownTimeout, drainDelay           time.Duration
}

// parseBinarySettings reads the binary's command line and environment.
// The flag table mirrors cmd/llmgateway/settings.go (a main package
// cannot be imported); an unknown flag fails.
func parseBinarySettings(t *testing.T, args []string, env map[string]string) binarySettings {
	t.Helper()
	table := []struct{ flag, env, def string }{
		{"config", "LLMGW_CONFIG", "/etc/llmgateway/config.yaml"},
		{"listen", "LLMGW_LISTEN", ":8080"},
		{"name", "LLMGW_NAME", "gateway"},
		{"log-level", "LLMGW_LOG_LEVEL", "info"},
		{"shutdown-timeout", "LLMGW_SHUTDOWN_TIMEOUT", "30s"},
		{"drain-delay", "LLMGW_DRAIN_DELAY", "5s"},
		{"health-path", "LLMGW_HEALTH_PATH", "/healthz"},
		{"ready-path", "LLMGW_READY_PATH", "/readyz"},
	}
	fs := flag.NewFlagSet("llmgateway", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	values := map[string]*string{}
	for _, o := range table {
		values[o.flag] = fs.String(o.flag, o.def, "")
	}
	require.NoError(t, fs.Parse(args), "the binary's arguments")
	require.Zero(t, fs.NArg(), "the binary takes no positional arguments")
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	get := func(name string) string {
		for _, o := range table {
			if o.flag == name && !set[name] && env[o.env] != "" {
				return env[o.env]
			}
		}
		return *values[name]
	}
	duration := func(name string) time.Duration {
		d, err := time.ParseDuration(get(name))
		require.NoError(t, err, "-%s", name)
		return d
	}
	return binarySettings{
		config: get("config"), listen: get("listen"),
		healthPath: get("health-path"), readyPath: get("ready-path"),
		shutdownTimeout: duration("shutdown-timeout"), drainDelay: duration("drain-delay"),
	}
}

// requireRuleExcludes requires a Traefik router rule to refuse each
// path with a !Path(`...`) matcher. (Traefik's own rule parser,
// pkg/muxer/http, would bring ~430 more modules into go.sum through
// github.com/vulcand/predicate and an ambiguous old genproto.)
func requireRuleExcludes(t *testing.T, rule string, paths ...string) {
	t.Helper()
	for _, p := range paths {
		require.Contains(t, rule, "!Path(`"+p+"`)", "the rule keeps %s away from the gateway's public route", p)
	}
}

// warmFillBound is how long the gateway's discovery warm fill may take per
// provider with discovery: true (warmFillTimeout in gateway/discovery.go;
// the providers are fetched in turn).
const warmFillBound = 5 * time.Second

func discoveringProviders(cfg *gateway.Config) int {
	n := 0
	for _, p := range cfg.Providers {
		if p.Discovery {
			n++
		}
	}
	return n
}
