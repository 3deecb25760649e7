package gateway

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

func TestAuthentication(t *testing.T) {
	up := newFakeUpstream(t, okJSON(`{"id":"ok"}`))
	srv, logs := newTestGateway(t, standardConfig(up.URL), nil)
	cases := []struct {
		name    string
		headers map[string]string
		user    string // "" means 401
	}{
		{"bearer", map[string]string{"Authorization": "Bearer " + testAliceKey}, "alice"},
		{"bearer_lowercase_scheme", map[string]string{"Authorization": "bearer " + testAliceKey}, "alice"},
		{"bearer_extra_spaces", map[string]string{"Authorization": "Bearer    " + testAliceKey}, "alice"},
		{"x_api_key", map[string]string{"X-Api-Key": testBobKey}, "bob"},
		{"bearer_wins_over_x_api_key", map[string]string{"Authorization": "Bearer " + testAliceKey, "X-Api-Key": testBobKey}, "alice"},
		{"bearer_wins_even_when_wrong", map[string]string{"Authorization": "Bearer sk-wrong", "X-Api-Key": testBobKey}, ""},
		{"non_bearer_scheme_falls_back", map[string]string{"Authorization": "Basic Zm9vOmJhcg==", "X-Api-Key": testBobKey}, "bob"},
		{"none", map[string]string{}, ""},
		{"wrong_key", map[string]string{"Authorization": "Bearer sk-wrong"}, ""},
		{"prefix_of_key", map[string]string{"Authorization": "Bearer " + testAliceKey[:len(testAliceKey)-1]}, ""},
		{"key_with_suffix", map[string]string{"Authorization": "Bearer " + testAliceKey + "x"}, ""},
		{"scheme_without_key", map[string]string{"Authorization": "Bearer"}, ""},
		{"raw_key_without_scheme", map[string]string{"Authorization": testAliceKey}, ""},
		{"empty_x_api_key", map[string]string{"X-Api-Key": ""}, ""},
		{"provider_key_is_not_a_user_key", map[string]string{"Authorization": "Bearer " + testProviderKey}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(logs.String())
			resp, body := send(t, srv.URL, testRequest{method: "GET", path: "/v1/models/m1", headers: tc.headers})
			added := logs.String()[before:]
			if tc.user == "" {
				expectEnvelope(t, resp, body, 401, "authentication_error", "invalid_api_key")
				if !strings.Contains(added, "auth failed") {
					t.Fatalf("failed attempt not logged: %q", added)
				}
				return
			}
			if resp.StatusCode != 200 {
				t.Fatalf("status %d body %s", resp.StatusCode, body)
			}
			if !logNamesUser(added, tc.user) {
				t.Fatalf("success for %s not logged: %q", tc.user, added)
			}
		})
	}
	out := logs.String()
	for _, secret := range []string{testAliceKey, testBobKey, testProviderKey, "sk-wrong", "Zm9vOmJhcg==", testAliceKey[:len(testAliceKey)-1]} {
		if strings.Contains(out, secret) {
			t.Fatalf("log contains key material %q:\n%s", secret, out)
		}
	}
}

// Every attempt is logged with method, path and the remote address (on
// failure) or the resolved user name (on success).
func TestAuthAttemptLogging(t *testing.T) {
	up := newFakeUpstream(t, okJSON(`{"id":"ok"}`))
	srv, logs := newTestGateway(t, standardConfig(up.URL), nil)
	send(t, srv.URL, testRequest{method: "GET", path: "/v1/models?q=1", headers: bearer("sk-bad-attempt")})
	send(t, srv.URL, testRequest{method: "GET", path: "/v1/models", headers: bearer(testBobKey)})
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	var failed, ok string
	for _, l := range lines {
		if strings.Contains(l, "auth failed") {
			failed = l
		}
		if strings.Contains(l, "auth ok") {
			ok = l
		}
	}
	for _, want := range []string{"GET", "/v1/models", "127.0.0.1", "WARN"} {
		if !strings.Contains(failed, want) {
			t.Errorf("failed-attempt line %q lacks %q", failed, want)
		}
	}
	for _, want := range []string{"GET", "/v1/models"} {
		if !strings.Contains(ok, want) {
			t.Errorf("success line %q lacks %q", ok, want)
		}
	}
	if !logNamesUser(ok, "bob") {
		t.Errorf("success line %q does not name bob", ok)
	}
	if strings.Contains(logs.String(), "sk-bad-attempt") || strings.Contains(logs.String(), testBobKey) {
		t.Fatalf("key material logged: %s", logs)
	}
}

// Keys are held only as SHA-256 digests: nothing reachable from the auth
// store or the users carries the key itself.
func TestAuthStoreHoldsDigestsOnly(t *testing.T) {
	g, err := newGatewayFromConfig(t, standardConfig("http://127.0.0.1:9"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][sha256.Size]byte{"alice": sha256.Sum256([]byte(testAliceKey)), "bob": sha256.Sum256([]byte(testBobKey))}
	store := g.users.current()
	if len(store.users) != 2 {
		t.Fatalf("auth store has %d users", len(store.users))
	}
	for i := 0; i < len(store.users); i++ {
		u := store.users[i].user
		if store.users[i].digest != want[u.name] {
			t.Fatalf("digest of %s does not match SHA-256 of the key", u.name)
		}
		dump := fmt.Sprintf("%+v", u)
		if strings.Contains(dump, testAliceKey) || strings.Contains(dump, testBobKey) {
			t.Fatalf("user runtime holds key material: %s", dump)
		}
	}
	for k := range store.byDigest {
		if k == testAliceKey || k == testBobKey {
			t.Fatal("auth index keyed by the plain key")
		}
	}
	r, _ := http.NewRequest("GET", "/", nil)
	r.Header.Set("X-Api-Key", testBobKey)
	if u := identifyKey(store, r); u == nil || u.name != "bob" {
		t.Fatalf("identify returned %+v", u)
	}
}

func TestPresentedKey(t *testing.T) {
	cases := []struct {
		auth, xkey, want string
	}{
		{"Bearer abc", "", "abc"},
		{"BEARER abc", "", "abc"},
		{"Bearer  abc ", "", "abc"},
		{"Bearer ", "x", "x"},
		{"Token abc", "x", "x"},
		{"", " x ", "x"},
		{"Bearer abc", "x", "abc"},
		{"", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.auth+"|"+tc.xkey, func(t *testing.T) {
			r, _ := http.NewRequest("GET", "/", nil)
			r.Header["Authorization"] = []string{tc.auth}
			r.Header["X-Api-Key"] = []string{tc.xkey}
			if got := presentedKey(r); got != tc.want {
				t.Fatalf("presentedKey = %q, want %q", got, tc.want)
			}
		})
	}
}

// logNamesUser accepts the user name logged bare or quoted.
func logNamesUser(log, name string) bool {
	return strings.Contains(log, "user="+name) || strings.Contains(log, "user=\""+name+"\"")
}
