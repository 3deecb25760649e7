package gateway

import (
	"io"
	"net/http"
	"testing"
)

// twoProviderConfig serves the bare id "shared" from providers "a" and
// "b" (and "b" alone serves "onlyb"); bob's group may use provider b only.
func twoProviderConfig(aURL, bURL, extra string) string {
	return `{` + extra + `
  "providers": {
    "b": {"type": "openai", "baseUrl": "` + bURL + `", "apiKey": "kb", "models": ["shared", "onlyb"]},
    "a": {"type": "openai", "baseUrl": "` + aURL + `", "apiKey": "ka", "models": ["shared"]}},
  "groups": {"all": {}, "bonly": {"providers": ["b"]}},
  "users": {"inline": [
    {"name": "alice", "group": "all", "apiKey": "` + testAliceKey + `"},
    {"name": "bob", "group": "bonly", "apiKey": "` + testBobKey + `"}]}
}`
}

func TestCandidatesOrder(t *testing.T) {
	g, err := newGatewayFromConfig(t, twoProviderConfig("http://127.0.0.1:1", "http://127.0.0.1:2", ""))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	cases := []struct {
		id   string
		want []string // provider/model per candidate
	}{
		{"shared", []string{"a/shared", "b/shared"}}, // sorted provider names; the first owns the bare id
		{"b/shared", []string{"b/shared"}},           // explicit: one candidate
		{"onlyb", []string{"b/onlyb"}},
	}
	for _, tc := range cases {
		route, e := g.models().route(tc.id)
		if e != nil {
			t.Fatalf("%s: %v", tc.id, e)
		}
		var got []string
		for i := 0; i < len(route.candidates); i++ {
			got = append(got, route.candidates[i].provider.name+"/"+route.candidates[i].model)
		}
		if len(got) != len(tc.want) || route.provider != route.candidates[0].provider || route.model != route.candidates[0].model {
			t.Fatalf("%s: candidates %v (first %s/%s), want %v", tc.id, got, route.provider.name, route.model, tc.want)
		}
		for i := 0; i < len(got); i++ {
			if got[i] != tc.want[i] {
				t.Fatalf("%s: candidates %v, want %v", tc.id, got, tc.want)
			}
		}
	}
	// Authorization drops the candidates the caller may not use, and the
	// first must be usable.
	users := g.users.current()
	var alice, bob *userRuntime
	for i := 0; i < len(users.users); i++ {
		switch users.users[i].user.name {
		case "alice":
			alice = users.users[i].user
		case "bob":
			bob = users.users[i].user
		}
	}
	if route, e := resolveModel(g, alice, "shared"); e != nil || len(route.candidates) != 2 {
		t.Fatalf("alice: %+v %v", route.candidates, e)
	}
	if _, e := resolveModel(g, bob, "shared"); e == nil || e.Status != http.StatusForbidden {
		t.Fatalf("bob may not use the first candidate: %v", e)
	}
}

// With failover off, a failing first candidate is the answer: the other
// provider serving the same id is never called, and the attempt budget
// (first try + retries) is spent on the first.
func TestCallStageUsesFirstCandidateOnly(t *testing.T) {
	a := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"error":"down"}`)
	})
	b := newFakeUpstream(t, okJSON(chatOK))
	base, feed := recordingGateway(t, twoProviderConfig(a.URL, b.URL, `"retry": {"enabled": true, "attempts": 1, "backoff": "1ms"},`), nil)
	status, _, body := do(t, "POST", base+"/v1/chat/completions", testAliceKey, `{"model":"shared"}`)
	if status != http.StatusServiceUnavailable {
		t.Fatalf("status %d body %s", status, body)
	}
	if a.count() != 2 || b.count() != 0 {
		t.Fatalf("calls: a %d (want 2: try + retry), b %d (want 0)", a.count(), b.count())
	}
	rec := feed.next(t)
	if rec.provider != "a" || rec.attempts != 2 || rec.errorClass != "server" {
		t.Fatalf("record %+v", rec)
	}
}

// TestResolveModelRemembersPerUser: a user's resolution is remembered
// per registry snapshot (a new snapshot resolves afresh), only for ids
// the user may use, and at most maxUserRoutes of them.
func TestResolveModelRemembersPerUser(t *testing.T) {
	g, err := newGatewayFromConfig(t, twoProviderConfig("http://127.0.0.1:1", "http://127.0.0.1:2", ""))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	store, _ := g.users.store.Load().(*authStore)
	var alice, bob *userRuntime
	for i := 0; i < len(store.users); i++ {
		switch store.users[i].user.name {
		case "alice":
			alice = store.users[i].user
		case "bob":
			bob = store.users[i].user
		}
	}
	first, e := resolveModel(g, alice, "shared")
	if e != nil || first.provider.name != "a" || len(first.candidates) != 2 {
		t.Fatalf("alice shared: %+v %v", first, e)
	}
	v, ok := alice.routes.Load("shared")
	if !ok || v.(*userRoute).reg != g.models() {
		t.Fatal("the resolution was not remembered for the current snapshot")
	}
	// bob may use provider b only: "shared" is a's first, a 403, and a
	// refusal is not remembered; "onlyb" is.
	if _, e := resolveModel(g, bob, "shared"); e == nil || e.Status != http.StatusForbidden {
		t.Fatalf("bob shared: %v", e)
	}
	if _, ok := bob.routes.Load("shared"); ok {
		t.Fatal("a refusal was remembered")
	}
	if r, e := resolveModel(g, bob, "onlyb"); e != nil || r.provider.name != "b" {
		t.Fatalf("bob onlyb: %+v %v", r, e)
	}
	if _, ok := bob.routes.Load("onlyb"); !ok {
		t.Fatal("bob's onlyb was not remembered")
	}
	if _, e := resolveModel(g, alice, "nope"); e == nil || e.Status != http.StatusNotFound {
		t.Fatalf("unknown model: %v", e)
	}
	if _, ok := alice.routes.Load("nope"); ok {
		t.Fatal("an unknown id was remembered")
	}
	// A new snapshot: the remembered entry is stale and replaced.
	g.rebuildRegistry()
	if _, e := resolveModel(g, alice, "shared"); e != nil {
		t.Fatal(e.Error())
	}
	if v, _ := alice.routes.Load("shared"); v.(*userRoute).reg != g.models() {
		t.Fatal("a stale resolution was kept after the registry changed")
	}
	// The bound: past maxUserRoutes new ids are resolved, not remembered.
	alice.routeCount.Store(maxUserRoutes)
	if r, e := resolveModel(g, alice, "onlyb"); e != nil || r.provider.name != "b" {
		t.Fatalf("onlyb: %+v %v", r, e)
	}
	if _, ok := alice.routes.Load("onlyb"); ok {
		t.Fatal("remembered more than maxUserRoutes ids")
	}
}
