package gateway

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// grantsConfig: providers alpha (a1, a2) and beta (m1, m2), both at up.
func grantsConfig(upURL, groups, users string) string {
	return `{"providers":{
		"alpha":{"type":"openai","baseUrl":"` + upURL + `","models":["a1","a2"]},
		"beta":{"type":"openai","baseUrl":"` + upURL + `","models":["m1","m2"]}},
		"groups":` + groups + `,"users":{"inline":` + users + `}}`
}

func okUpstream(t *testing.T) *fakeUpstream {
	return newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	})
}

// The spec's passthroughPaths counter-example: group a allows beta with
// model m1 on any path, group b allows beta on v1/chat/completions with
// any model. Joined, they must still deny /beta/v1/files with model m2:
// a allows the path but not the model, b the model but not the path.
func TestPassthroughPathsCoupledToOneGrant(t *testing.T) {
	up := okUpstream(t)
	srv, _ := newTestGateway(t, grantsConfig(up.URL,
		`{"a":{"providers":["beta"],"models":["m1"]},"b":{"providers":["beta"],"passthroughPaths":["v1/chat/completions"]}}`,
		`[{"name":"u","group":"a","groups":["b"],"apiKey":"sk-grant-u"}]`), nil)
	cases := []struct {
		name, path, body string
		status           int
	}{
		{"path_from_a_model_from_b_denied", "/beta/v1/files", `{"model":"m2"}`, 403},
		{"grant_a_alone", "/beta/v1/files", `{"model":"m1"}`, 200},
		{"grant_b_alone", "/beta/v1/chat/completions", `{"model":"m2"}`, 200},
		{"no_grant_for_provider", "/alpha/v1/chat/completions", `{"model":"a1"}`, 403},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, _, body := do(t, "POST", srv.URL+tc.path, "sk-grant-u", tc.body)
			if status != tc.status {
				t.Fatalf("status %d, want %d: %s", status, tc.status, body)
			}
		})
	}
}

// A personal grant adds access as its own grant: it never lends its
// provider to a group's model list, or the reverse.
func TestPersonalGrant(t *testing.T) {
	up := okUpstream(t)
	srv, _ := newTestGateway(t, grantsConfig(up.URL,
		`{"g":{"providers":["alpha"],"models":["a1"],"passthroughPaths":["v1/chat/completions"]}}`,
		`[{"name":"carol","group":"g","apiKey":"sk-grant-carol","providers":["beta"],"models":["m1"]}]`), nil)
	unified := []struct {
		model  string
		status int
	}{
		{"a1", 200},       // the group's grant
		{"beta/m1", 200},  // the personal grant
		{"m1", 200},       // bare id of the personal grant's model
		{"beta/m2", 403},  // personal provider, model outside its list
		{"alpha/a2", 403}, // group provider, model outside its list
	}
	for _, tc := range unified {
		t.Run("chat_"+tc.model, func(t *testing.T) {
			status, _, body := do(t, "POST", srv.URL+"/v1/chat/completions", "sk-grant-carol", `{"model":"`+tc.model+`"}`)
			if status != tc.status {
				t.Fatalf("status %d, want %d: %s", status, tc.status, body)
			}
		})
	}
	t.Run("models_list", func(t *testing.T) {
		status, _, body := do(t, "GET", srv.URL+"/v1/models", "sk-grant-carol", "")
		if status != 200 {
			t.Fatalf("status %d: %s", status, body)
		}
		var list modelList
		if err := json.Unmarshal([]byte(body), &list); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for i := 0; i < len(list.Data); i++ {
			ids = append(ids, list.Data[i].ID)
		}
		if got := strings.Join(ids, ","); got != "a1,alpha/a1,m1,beta/m1" {
			t.Fatalf("listed %s", got)
		}
	})
	// The personal grant borrows the primary group's passthroughPaths.
	passthrough := []struct {
		path   string
		status int
	}{
		{"/beta/v1/chat/completions", 200},
		{"/beta/v1/files", 403},
	}
	for _, tc := range passthrough {
		t.Run("passthrough"+strings.ReplaceAll(tc.path, "/", "_"), func(t *testing.T) {
			status, _, body := do(t, "POST", srv.URL+tc.path, "sk-grant-carol", `{"model":"m1"}`)
			if status != tc.status {
				t.Fatalf("status %d, want %d: %s", status, tc.status, body)
			}
		})
	}
}

func TestPersonalGrantConfigErrors(t *testing.T) {
	cases := []struct {
		name, users, want string
	}{
		{"models_without_providers", `[{"name":"dave","group":"g","apiKey":"sk-1","models":["m1"]}]`, `users.inline[0] (dave).models: a personal grant needs providers`},
		{"bad_provider_glob", `[{"name":"dave","group":"g","apiKey":"sk-1","providers":["["]}]`, `users.inline[0] (dave).providers[0]: malformed pattern "["`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newGatewayFromConfig(t, grantsConfig("http://127.0.0.1:9", `{"g":{}}`, tc.users))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
			if strings.Count(err.Error(), "config:") != 1 {
				t.Fatalf("error %q repeats its prefix", err)
			}
		})
	}
	_, err := newGatewayFromConfig(t, grantsConfig("http://127.0.0.1:9", `{"g":{"passthroughPaths":["v1/[x"]}}`, `[]`))
	if err == nil || !strings.Contains(err.Error(), `groups.g.passthroughPaths[0]: malformed pattern "v1/[x"`) {
		t.Fatalf("bad passthroughPaths glob: %v", err)
	}
}

// Traefik delivers the new lists like every other: as []interface{} or
// as "" for an empty one.
func TestConfigFromMapGrants(t *testing.T) {
	raw := map[string]interface{}{
		"providers": map[string]interface{}{"beta": map[string]interface{}{"type": "openai", "models": []interface{}{"m1"}}},
		"groups":    map[string]interface{}{"g": map[string]interface{}{"passthroughPaths": []interface{}{"v1/*"}, "models": ""}},
		"users": map[string]interface{}{"inline": []interface{}{map[string]interface{}{
			"name": "u", "group": "g", "apiKey": "sk-1", "providers": []interface{}{"beta"}, "models": "m1,m2"}}},
	}
	cfg, err := ConfigFromMap(raw)
	if err != nil {
		t.Fatal(err)
	}
	u := cfg.Users.Inline[0]
	if len(u.Providers) != 1 || strings.Join(u.Models, "|") != "m1|m2" || strings.Join(cfg.Groups["g"].PassthroughPaths, "|") != "v1/*" {
		t.Fatalf("decoded %+v / %+v", u, cfg.Groups["g"])
	}
}

// The spec's warning: passthroughPaths ["*"] is not allow-all, because
// path.Match's "*" does not cross "/".
func TestPassthroughPathsStarDoesNotCrossSlash(t *testing.T) {
	up := okUpstream(t)
	srv, _ := newTestGateway(t, grantsConfig(up.URL, `{"g":{"passthroughPaths":["*"]}}`,
		`[{"name":"u","group":"g","apiKey":"sk-star"}]`), nil)
	if status, _, body := do(t, "GET", srv.URL+"/beta/models", "sk-star", ""); status != 200 {
		t.Fatalf("single segment: %d %s", status, body)
	}
	if status, _, body := do(t, "GET", srv.URL+"/beta/v1/files", "sk-star", ""); status != 403 {
		t.Fatalf("multi-segment path under [\"*\"]: %d %s", status, body)
	}
}
