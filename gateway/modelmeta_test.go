package gateway

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// listModels returns /v1/models as id -> object.
func listModels(t *testing.T, url, key string) map[string]modelObject {
	t.Helper()
	status, _, body := do(t, "GET", url+"/v1/models", key, "")
	if status != 200 {
		t.Fatalf("models: %d %s", status, body)
	}
	var l modelList
	if err := json.Unmarshal([]byte(body), &l); err != nil {
		t.Fatal(err)
	}
	out := map[string]modelObject{}
	for i := 0; i < len(l.Data); i++ {
		out[l.Data[i].ID] = l.Data[i]
	}
	return out
}

func describeMeta(o modelObject) string {
	s := "context="
	if o.ContextWindow != nil {
		if o.ContextLength == nil || o.MaxModelLen == nil || *o.ContextLength != *o.ContextWindow || *o.MaxModelLen != *o.ContextWindow {
			return "context spellings disagree"
		}
		s += jsonText(*o.ContextWindow)
	} else {
		if o.ContextLength != nil || o.MaxModelLen != nil {
			return "context spellings disagree"
		}
		s += "?"
	}
	s += " pricing="
	if o.Pricing == nil {
		return s + "?"
	}
	in, out := "?", "?"
	if o.Pricing.InputPerMTokUSD != nil {
		in = jsonText(*o.Pricing.InputPerMTokUSD)
	}
	if o.Pricing.OutputPerMTokUSD != nil {
		out = jsonText(*o.Pricing.OutputPerMTokUSD)
	}
	return s + in + "/" + out
}

func jsonText(v interface{}) string {
	data, _ := json.Marshal(v)
	return string(data)
}

func TestModelMetadataLayers(t *testing.T) {
	srv, _ := newTestGateway(t, `{"providers":{
		"oai":{"type":"openai","baseUrl":"http://127.0.0.1:9","models":["gpt-5-mini","gpt-4o","local-x","vendor/m:free","custom"]},
		"other":{"type":"openai","baseUrl":"http://127.0.0.1:9","models":["custom"]}},
		"modelMeta":{
			"oai/gpt-4o":{"contextTokens":1000},
			"custom":{"contextTokens":32768,"inputCostPerMTokMicroUsd":500000},
			"oai/custom":{"free":true},
			"local-x":{"free":true},
			"team/fast":{"contextTokens":4096}},
		"modelAliases":{"team/fast":"oai/gpt-5-mini","team/plain":"gpt-5-mini"},
		"groups":{"g":{}},"users":{"inline":[{"name":"u","group":"g","apiKey":"sk-meta"}]}}`, nil)
	got := listModels(t, srv.URL, "sk-meta")
	want := map[string]string{
		"gpt-5-mini":        "context=272000 pricing=0.25/2", // built-in table
		"oai/gpt-4o":        "context=1000 pricing=2.5/10",   // context overridden per provider/model, cost built-in
		"local-x":           "context=? pricing=0/0",         // free: a known zero; context unknown
		"oai/vendor/m:free": "context=? pricing=0/0",         // the :free suffix
		"oai/custom":        "context=32768 pricing=0/0",     // free (provider/model) beats the bare entry's price
		"other/custom":      "context=32768 pricing=0.5/?",   // bare entry: input known, output unknown
		"team/fast":         "context=4096 pricing=0.25/2",   // alias's own context, target's cost
		"team/plain":        "context=272000 pricing=0.25/2", // alias inherits everything
	}
	for id, w := range want {
		o, ok := got[id]
		if !ok {
			t.Errorf("%s not listed", id)
			continue
		}
		if d := describeMeta(o); d != w {
			t.Errorf("%s: %s, want %s", id, d, w)
		}
	}
	status, _, body := do(t, "GET", srv.URL+"/v1/models/local-x", "sk-meta", "")
	if status != 200 || !strings.Contains(body, `"pricing":{"input_per_mtok_usd":0,"output_per_mtok_usd":0}`) || strings.Contains(body, "context") {
		t.Fatalf("one model: %d %s", status, body)
	}
}

func TestModelMetadataConfigErrors(t *testing.T) {
	cases := map[string]string{
		`"modelMeta":{"m":{"contextTokens":-1}}`:                                                `modelMeta["m"].contextTokens: -1 must not be negative`,
		`"modelMeta":{"m":{"maxOutputTokens":-2}}`:                                              `modelMeta["m"].maxOutputTokens: -2 must not be negative`,
		`"modelMeta":{"m":{"inputCostPerMTokMicroUsd":-5}}`:                                     `modelMeta["m"].inputCostPerMTokMicroUsd: -5 must not be negative`,
		`"modelMeta":{"m":{"free":true,"outputCostPerMTokMicroUsd":3}}`:                         `modelMeta["m"].free: contradicts a non-zero cost`,
		`"modelMeta":{"m":null}`:                                                                `modelMeta["m"]: nil value`,
		`"providers":{"p":{"type":"openai","discovery":true,"metadataPath":"api"}}`:             `providers.p.metadataPath: "api" must start with "/"`,
		`"providers":{"p":{"type":"openai","metadataPath":"/api/v0/models"}}`:                   `providers.p.metadataPath: only an openai-type provider with discovery: true reads it`,
		`"providers":{"p":{"type":"gemini","apiKey":"k","discovery":true,"metadataPath":"/x"}}`: `only an openai-type provider`,
	}
	for doc, want := range cases {
		if !strings.Contains(doc, `"providers"`) {
			doc = `"providers":{"p":{"type":"openai"}},` + doc
		}
		_, err := newGatewayFromConfig(t, "{"+doc+"}")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", doc, err, want)
		}
	}
}

// metadataPath captures LM Studio's context lengths, preferring
// loaded_context_length; a failed metadata fetch keeps the last capture.
func TestModelMetadataCapturedFromMetadataPath(t *testing.T) {
	metaStatus := 200
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			_, _ = w.Write([]byte(`{"data":[{"id":"qwen-local"},{"id":"llama-local"}]}`))
		case "/api/v0/models":
			w.WriteHeader(metaStatus)
			_, _ = w.Write([]byte(`{"data":[{"id":"qwen-local","max_context_length":131072,"loaded_context_length":32768},{"id":"llama-local","max_context_length":8192}]}`))
		}
	}))
	defer srv.Close()
	cfg, err := DecodeConfigJSON([]byte(`{"providers":{"studio":{"type":"openai","baseUrl":"` + srv.URL + `","discovery":true,"metadataPath":"/api/v0/models"}},
		"groups":{"g":{}},"users":{"inline":[{"name":"u","group":"g","apiKey":"sk-studio"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	g, err := New(nil, cfg, Options{LogOutput: logs})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	gw := httptest.NewServer(g)
	defer gw.Close()
	got := listModels(t, gw.URL, "sk-studio")
	if d := describeMeta(got["qwen-local"]); d != "context=32768 pricing=?" {
		t.Fatalf("qwen-local: %s", d)
	}
	if d := describeMeta(got["llama-local"]); d != "context=8192 pricing=?" {
		t.Fatalf("llama-local: %s", d)
	}
	// A refresh whose metadata fetch fails keeps the captured context.
	metaStatus = 500
	s := g.discovery.states[0]
	if !g.discovery.start(s, true) {
		t.Fatal("could not start a refresh")
	}
	g.discovery.run(s, s.provider.timeout)
	if d := describeMeta(listModels(t, gw.URL, "sk-studio")["qwen-local"]); d != "context=32768 pricing=?" {
		t.Fatalf("after a failed metadata fetch: %s", d)
	}
	if !strings.Contains(logs.String(), `model metadata for provider "studio" not captured: metadata listing answered HTTP 500`) {
		t.Fatalf("metadata failure not logged: %s", logs)
	}
}

func TestConfigFromMapModelMeta(t *testing.T) {
	cfg, err := ConfigFromMap(map[string]interface{}{
		"providers": map[string]interface{}{"p": map[string]interface{}{"type": "openai", "discovery": "true", "metadataPath": "/api/v0/models"}},
		"modelMeta": map[string]interface{}{"p/m": map[string]interface{}{"contextTokens": "524288", "maxOutputTokens": "8192", "free": "true"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if m := cfg.ModelMeta["p/m"]; m.ContextTokens != 524288 || m.MaxOutputTokens != 8192 || !m.Free || cfg.Providers["p"].MetadataPath != "/api/v0/models" {
		t.Fatalf("decoded %+v", *m)
	}
}

func TestModelMetaTableParse(t *testing.T) {
	table := parseModelTable("full\t200000\t3000000\t15000000\t64000\n" +
		"unknowns\t-\t-\t0\t-\n" +
		"four-columns\t1000\t1\t2\n" +
		"six-columns\t1000\t1\t2\t3\t4\n" +
		"\n")
	if len(table) != 2 {
		t.Fatalf("parsed %d rows, want 2 (only 5-column lines): %+v", len(table), table)
	}
	full := table["full"]
	if full.context != 200000 || full.maxOutput != 64000 || full.input != (metaCost{3000000, true}) || full.output != (metaCost{15000000, true}) {
		t.Fatalf("full: %+v", full)
	}
	u := table["unknowns"]
	if u.context != 0 || u.maxOutput != 0 || u.input.known || u.output != (metaCost{0, true}) {
		t.Fatalf("unknowns: %+v", u)
	}
}

// The generated table carries LiteLLM's max_output_tokens (values read
// from ../shared/data/litellm_model_prices.json); an embedding model has
// none.
func TestModelMetaBuiltinMaxOutput(t *testing.T) {
	want := map[string]int64{"claude-sonnet-4-5": 64000, "gpt-4o": 16384, "gemini-2.5-pro": 65535, "text-embedding-3-small": 0}
	for id, w := range want {
		e, ok := builtinModels()[id]
		if !ok {
			t.Errorf("%s: not in the built-in table", id)
			continue
		}
		if e.maxOutput != w {
			t.Errorf("%s: maxOutput %d, want %d", id, e.maxOutput, w)
		}
	}
}

// maxOutputTokens: modelMeta ("provider/model", then bare) before the
// built-in table, an alias's own entry before its target's; the same
// value resolveMeta reports, on every kind of route and after a user's
// route is remembered.
func TestModelMetaMaxOutputTokens(t *testing.T) {
	g, err := newGatewayFromConfig(t, `{"providers":{
		"oai":{"type":"openai","baseUrl":"http://127.0.0.1:9","models":["gpt-4o","gpt-5-mini","local-x","claude-sonnet-4-5"]},
		"ant":{"type":"anthropic","apiKey":"k","baseUrl":"http://127.0.0.1:9","models":["claude-sonnet-4-5"]}},
		"modelMeta":{
			"oai/gpt-5-mini":{"maxOutputTokens":1000},
			"local-x":{"maxOutputTokens":2048,"contextTokens":8192},
			"ant/claude-sonnet-4-5":{"contextTokens":100000},
			"team/capped":{"maxOutputTokens":512},
			"team/ctx":{"contextTokens":4096}},
		"modelAliases":{"team/capped":"gpt-4o","team/ctx":"oai/gpt-5-mini"},
		"groups":{"g":{}},"users":{"inline":[{"name":"u","group":"g","apiKey":"sk-max"}]}}`)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{
		"gpt-4o":                16384, // built-in
		"oai/gpt-4o":            16384,
		"gpt-5-mini":            1000, // provider/model override, reached bare
		"oai/gpt-5-mini":        1000,
		"local-x":               2048, // bare override; not in the table
		"oai/local-x":           2048,
		"ant/claude-sonnet-4-5": 64000, // a context override leaves the built-in max output
		"claude-sonnet-4-5":     64000, // bare: ant owns it (sorted provider names)
		"oai/claude-sonnet-4-5": 64000,
		"team/capped":           512,  // the alias's own entry beats the target's built-in 16384
		"team/ctx":              1000, // an alias entry without maxOutputTokens inherits its target's
	}
	reg := g.models()
	users := g.users.current()
	user := users.users[0].user
	for id, w := range want {
		route, e := reg.route(id)
		if e != nil {
			t.Fatalf("%s: %v", id, e)
		}
		if got := maxOutputTokens(g, route); got != w {
			t.Errorf("%s: maxOutputTokens %d, want %d", id, got, w)
		}
		if got := reg.resolveMeta(route).maxOutput; got != w {
			t.Errorf("%s: resolveMeta maxOutput %d, want %d", id, got, w)
		}
		for i := 0; i < 2; i++ { // the first resolution, then the remembered one
			r, e := resolveModel(g, user, id)
			if e != nil || maxOutputTokens(g, r) != w {
				t.Errorf("%s (user, pass %d): %d %v, want %d", id, i, maxOutputTokens(g, r), e, w)
			}
		}
	}
	entries := reg.entries()
	for i := 0; i < len(entries); i++ {
		e := entries[i]
		if w, ok := want[e.id]; ok && e.route.maxOutput != w {
			t.Errorf("listing %s: maxOutput %d, want %d", e.id, e.route.maxOutput, w)
		}
	}
}
