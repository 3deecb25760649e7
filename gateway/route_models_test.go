package gateway

import (
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"testing"
)

// modelsConfig: providers "beta" (x, z) and "alpha" (x, y). The bare id
// x belongs to alpha, the sorted-first provider listing it.
func modelsConfig(alphaURL, betaURL string) string {
	return `{
  "providers": {
    "beta": {"type": "openai", "baseUrl": "` + betaURL + `", "apiKey": "sk-models-beta", "models": ["z", "x"]},
    "alpha": {"type": "openai", "baseUrl": "` + alphaURL + `", "apiKey": "sk-models-alpha", "models": ["y", "x"]}
  },
  "groups": {
    "all": {},
    "onlyx": {"models": ["x"]},
    "betaonly": {"providers": ["beta"]},
    "betaglob": {"models": ["beta/*"]},
    "nothing": {"providers": ["none"]}
  },
  "users": {"inline": [
    {"name": "all", "group": "all", "apiKey": "sk-m-all"},
    {"name": "onlyx", "group": "onlyx", "apiKey": "sk-m-onlyx"},
    {"name": "betaonly", "group": "betaonly", "apiKey": "sk-m-beta"},
    {"name": "betaglob", "group": "betaglob", "apiKey": "sk-m-betaglob"},
    {"name": "nothing", "group": "nothing", "apiKey": "sk-m-nothing"}
  ]}
}`
}

func TestModelsList(t *testing.T) {
	srv, _ := newTestGateway(t, modelsConfig("http://127.0.0.1:9", "http://127.0.0.1:9"), nil)
	cases := []struct {
		key  string
		want map[string]string // id -> owned_by
	}{
		{"sk-m-all", map[string]string{"x": "alpha", "y": "alpha", "alpha/x": "alpha", "alpha/y": "alpha", "z": "beta", "beta/x": "beta", "beta/z": "beta"}},
		{"sk-m-onlyx", map[string]string{"x": "alpha", "alpha/x": "alpha", "beta/x": "beta"}},
		// The bare x routes to alpha, which betaonly may not use.
		{"sk-m-beta", map[string]string{"z": "beta", "beta/x": "beta", "beta/z": "beta"}},
		{"sk-m-betaglob", map[string]string{"z": "beta", "beta/x": "beta", "beta/z": "beta"}},
		{"sk-m-nothing", map[string]string{}},
	}
	for _, tc := range cases {
		t.Run(tc.key, func(t *testing.T) {
			resp, body := send(t, srv.URL, testRequest{method: "GET", path: "/v1/models", headers: bearer(tc.key)})
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("status %d ct %q body %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
			}
			var list struct {
				Object string `json:"object"`
				Data   []struct {
					ID      string `json:"id"`
					Object  string `json:"object"`
					Created int64  `json:"created"`
					OwnedBy string `json:"owned_by"`
				} `json:"data"`
			}
			if err := json.Unmarshal([]byte(body), &list); err != nil {
				t.Fatal(err)
			}
			if list.Object != "list" || list.Data == nil {
				t.Fatalf("list shape: %s", body)
			}
			got := map[string]string{}
			for _, m := range list.Data {
				if m.Object != "model" || m.Created <= 0 {
					t.Fatalf("entry %+v", m)
				}
				if _, dup := got[m.ID]; dup {
					t.Fatalf("duplicate id %q", m.ID)
				}
				got[m.ID] = m.OwnedBy
			}
			if !sameStringMap(got, tc.want) {
				t.Fatalf("models %v, want %v", got, tc.want)
			}
		})
	}
}

func sameStringMap(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestModelsGetOne(t *testing.T) {
	srv, _ := newTestGateway(t, modelsConfig("http://127.0.0.1:9", "http://127.0.0.1:9"), nil)
	cases := []struct {
		name, key, id string
		status        int
		owner, code   string
	}{
		{"bare_sorted_first", "sk-m-all", "x", 200, "alpha", ""},
		{"prefixed_other_provider", "sk-m-all", "beta/x", 200, "beta", ""},
		{"prefixed", "sk-m-all", "alpha/y", 200, "alpha", ""},
		{"unknown", "sk-m-all", "nope", 404, "", "model_not_found"},
		{"unknown_prefixed", "sk-m-all", "alpha/z", 404, "", "model_not_found"},
		{"empty_id", "sk-m-all", "", 404, "", "model_not_found"},
		{"denied", "sk-m-onlyx", "y", 403, "", "model_not_allowed"},
		{"denied_bare_to_other_provider", "sk-m-beta", "x", 403, "", "model_not_allowed"},
		{"glob_prefixed_allows_bare", "sk-m-betaglob", "z", 200, "beta", ""},
		{"no_key", "", "x", 401, "", "invalid_api_key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			headers := map[string]string{}
			if tc.key != "" {
				headers = bearer(tc.key)
			}
			resp, body := send(t, srv.URL, testRequest{method: "GET", path: "/v1/models/" + tc.id, headers: headers})
			if tc.status != 200 {
				d := decodeEnvelope(t, body)
				if resp.StatusCode != tc.status || d.Code != tc.code {
					t.Fatalf("status %d body %s", resp.StatusCode, body)
				}
				return
			}
			var m modelObject
			if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &m) != nil {
				t.Fatalf("status %d body %s", resp.StatusCode, body)
			}
			if m.ID != tc.id || m.OwnedBy != tc.owner || m.Object != "model" {
				t.Fatalf("model %+v", m)
			}
		})
	}
}

// The bare id goes to the sorted-first provider; the prefixed form
// reaches the other one, with the model rewritten to the bare id.
func TestModelsBareIDRouting(t *testing.T) {
	alpha := newFakeUpstream(t, okJSON(`{"from":"alpha"}`))
	beta := newFakeUpstream(t, okJSON(`{"from":"beta"}`))
	srv, logs := newTestGateway(t, modelsConfig(alpha.URL, beta.URL), nil)
	cases := []struct {
		model, from, upstreamModel, key string
	}{
		{"x", "alpha", "x", "sk-models-alpha"},
		{"alpha/x", "alpha", "x", "sk-models-alpha"},
		{"beta/x", "beta", "x", "sk-models-beta"},
		{"z", "beta", "z", "sk-models-beta"},
	}
	for _, tc := range cases {
		t.Run(tc.model, func(t *testing.T) {
			resp, body := send(t, srv.URL, testRequest{path: "/v1/chat/completions", body: `{"model":"` + tc.model + `"}`, headers: bearer("sk-m-all")})
			if resp.StatusCode != 200 || body != `{"from":"`+tc.from+`"}` {
				t.Fatalf("status %d body %s", resp.StatusCode, body)
			}
			up := alpha
			if tc.from == "beta" {
				up = beta
			}
			got := up.last(t)
			if string(got.body) != `{"model":"`+tc.upstreamModel+`"}` || got.header.Get("Authorization") != "Bearer "+tc.key {
				t.Fatalf("upstream got body %s auth %q", got.body, got.header.Get("Authorization"))
			}
		})
	}
	if !strings.Contains(logs.String(), `"beta/x"`) {
		t.Errorf("the shadowed bare id is not reported in the log: %s", logs)
	}
}

func TestModelRegistryEntriesSorted(t *testing.T) {
	g, err := newGatewayFromConfig(t, modelsConfig("http://127.0.0.1:9", "http://127.0.0.1:9"))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	entries := g.models().entries()
	for i := 0; i < len(entries); i++ {
		ids = append(ids, entries[i].id)
	}
	want := []string{"x", "alpha/x", "y", "alpha/y", "beta/x", "z", "beta/z"}
	if strings.Join(ids, ",") != strings.Join(want, ",") {
		t.Fatalf("entries %v, want %v", ids, want)
	}
	if !sort.StringsAreSorted(g.cfg.providerNames) {
		t.Fatalf("provider names not sorted: %v", g.cfg.providerNames)
	}
}

func TestModelsHead(t *testing.T) {
	srv, _ := newTestGateway(t, modelsConfig("http://127.0.0.1:9", "http://127.0.0.1:9"), nil)
	resp, body := send(t, srv.URL, testRequest{method: http.MethodHead, path: "/v1/models", headers: bearer("sk-m-all")})
	if resp.StatusCode != 200 || body != "" {
		t.Fatalf("status %d body %q", resp.StatusCode, body)
	}
}
