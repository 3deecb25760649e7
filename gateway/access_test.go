package gateway

import (
	"strings"
	"testing"
)

func TestGroupAccessLists(t *testing.T) {
	cases := []struct {
		name      string
		providers []string
		models    []string
		provider  string
		model     string
		want      bool
	}{
		{"empty_lists_allow_all", nil, nil, "p", "m", true},
		{"provider_listed", []string{"p"}, nil, "p", "m", true},
		{"provider_not_listed", []string{"q"}, nil, "p", "m", false},
		{"provider_glob", []string{"open*"}, nil, "openai", "m", true},
		{"model_bare", nil, []string{"gpt-4o"}, "p", "gpt-4o", true},
		{"model_prefixed_pattern", nil, []string{"p/gpt-4o"}, "p", "gpt-4o", true},
		{"model_prefixed_pattern_other_provider", nil, []string{"q/gpt-4o"}, "p", "gpt-4o", false},
		{"model_glob", nil, []string{"gpt-4*"}, "p", "gpt-4o-mini", true},
		{"model_glob_does_not_cross_slash", nil, []string{"*"}, "p", "org/model", false},
		{"model_provider_glob", nil, []string{"p/*"}, "p", "anything", true},
		{"model_not_listed", nil, []string{"gpt-4o"}, "p", "gpt-3.5", false},
		{"both_must_match", []string{"p"}, []string{"m1"}, "p", "m2", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := &grant{name: "group g", providers: tc.providers, models: tc.models}
			u := &userRuntime{name: "u", grants: []*grant{g}}
			if got := u.canUse(tc.provider, tc.model); got != tc.want {
				t.Fatalf("canUse(%q, %q) = %v, want %v", tc.provider, tc.model, got, tc.want)
			}
		})
	}
}

// A user in groups a and b is authorized only when one single group
// allows both the provider and the model.
func TestMultiGroupNeverCombinesGrants(t *testing.T) {
	a := &grant{name: "group a", providers: []string{"p1"}, models: []string{"m2"}}
	b := &grant{name: "group b", providers: []string{"p2"}, models: []string{"m1"}}
	u := &userRuntime{name: "u", grants: []*grant{a, b}}
	cases := []struct {
		provider, model string
		want            bool
	}{
		{"p1", "m2", true},
		{"p2", "m1", true},
		{"p1", "m1", false}, // provider from a, model from b
		{"p2", "m2", false}, // provider from b, model from a
	}
	for _, tc := range cases {
		if got := u.canUse(tc.provider, tc.model); got != tc.want {
			t.Errorf("canUse(%s, %s) = %v, want %v", tc.provider, tc.model, got, tc.want)
		}
	}
}

// The same counter-example end to end: p1 serves m1 and m2, p2 serves
// m1. The union of a and b would allow p1/m1; no single group does.
func TestMultiGroupEndToEnd(t *testing.T) {
	up := newFakeUpstream(t, okJSON(`{"id":"ok"}`))
	cfg := `{
  "providers": {
    "p1": {"type": "openai", "baseUrl": "` + up.URL + `", "apiKey": "sk-mg-1", "models": ["m1", "m2"]},
    "p2": {"type": "openai", "baseUrl": "` + up.URL + `", "apiKey": "sk-mg-2", "models": ["m1", "m3"]}
  },
  "groups": {"a": {"providers": ["p1"], "models": ["m2"]}, "b": {"providers": ["p2"], "models": ["m1"]}},
  "users": {"inline": [{"name": "u", "group": "a", "groups": ["b", "a"], "apiKey": "sk-mg-user"}]}
}`
	srv, _ := newTestGateway(t, cfg, nil)
	cases := []struct {
		model  string
		status int
	}{
		{"p1/m2", 200},
		{"m2", 200},
		{"p2/m1", 200},
		{"p1/m1", 403},
		{"m1", 403}, // bare m1 routes to p1 (sorted first)
		{"p2/m3", 403},
	}
	for _, tc := range cases {
		t.Run(tc.model, func(t *testing.T) {
			resp, body := send(t, srv.URL, testRequest{path: "/v1/chat/completions", body: `{"model":"` + tc.model + `"}`, headers: bearer("sk-mg-user")})
			if tc.status == 200 {
				if resp.StatusCode != 200 {
					t.Fatalf("status %d body %s", resp.StatusCode, body)
				}
				return
			}
			expectEnvelope(t, resp, body, tc.status, "permission_error", "model_not_allowed")
		})
	}
	resp, body := send(t, srv.URL, testRequest{method: "GET", path: "/v1/models", headers: bearer("sk-mg-user")})
	if resp.StatusCode != 200 {
		t.Fatalf("list status %d", resp.StatusCode)
	}
	for _, id := range []string{`"p1/m1"`, `"p2/m3"`, `"m3"`, `"m1"`} {
		if containsJSONString(body, id) {
			t.Errorf("model list offers %s: %s", id, body)
		}
	}
	for _, id := range []string{`"p1/m2"`, `"m2"`, `"p2/m1"`} {
		if !containsJSONString(body, id) {
			t.Errorf("model list lacks %s: %s", id, body)
		}
	}
}

func containsJSONString(body, quoted string) bool {
	return len(body) > 0 && indexOf(body, `"id":`+quoted) >= 0
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// A malformed mcpServers pattern is refused at construction.
func TestTargetListPatternsValidated(t *testing.T) {
	_, err := newGatewayFromConfig(t, `{"providers":{"p":{"type":"openai"}},"groups":{"g":{"mcpServers":["["]}}}`)
	if err == nil || !strings.Contains(err.Error(), `groups.g.mcpServers[0]: malformed pattern "["`) {
		t.Fatalf("bad mcpServers glob: %v", err)
	}
}
