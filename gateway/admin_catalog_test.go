package gateway

import (
	"bufio"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/redistest"
)

func TestAdminCatalogFleet(t *testing.T) {
	f := newAdminFleet(t, ``)
	var ans adminCatalogAnswer
	body := f.getJSON(t, "catalog", &ans)
	checkGolden(t, "catalog", f.stable(body))
	models := map[string]adminCatalogModel{}
	for _, p := range ans.Providers {
		for _, m := range p.Models {
			models[m.ID] = m
		}
	}
	// Billing's view, model by model: the source, the price only when
	// priced, display-free only for an unpriced ":free" id.
	for _, tc := range []struct {
		id, source  string
		in, out     int64 // -1: absent
		displayFree bool
		context     int64 // 0: absent
		aliases     string
	}{
		{"p/m1", priceSourceOverride, 2000000, 4000000, false, 8000, "fast"},
		{"p/m2", priceSourceUnpriced, -1, -1, false, 0, "multi"},
		{"p/gpt-4o", priceSourceBuiltin, 2500000, 10000000, false, 128000, ""},
		{"p/MiniMax-M2", priceSourceLiteLLM, 300000, 1200000, false, 200000, ""},
		{"p/gift", priceSourceFree, 0, 0, false, 0, ""},
		{"p/tiny:free", priceSourceUnpriced, -1, -1, true, 0, ""},
		{"zbad/m1", priceSourceOverride, 2000000, 4000000, false, 0, "fast,multi"},
		{"d/disc-1", priceSourceUnpriced, -1, -1, false, 32768, ""},
	} {
		m, ok := models[tc.id]
		if !ok {
			t.Fatalf("%s is not in the catalog: %s", tc.id, body)
		}
		if m.PriceSource != tc.source || m.DisplayFree != tc.displayFree || strings.Join(m.Aliases, ",") != tc.aliases || m.Aliases == nil {
			t.Fatalf("%s: %+v", tc.id, m)
		}
		if tc.in < 0 && (m.InputPerMTokMicroUsd != nil || m.OutputPerMTokMicroUsd != nil) ||
			tc.in >= 0 && (m.InputPerMTokMicroUsd == nil || *m.InputPerMTokMicroUsd != tc.in || *m.OutputPerMTokMicroUsd != tc.out) {
			t.Fatalf("%s prices: %+v", tc.id, m)
		}
		if tc.context == 0 && m.ContextWindow != nil || tc.context > 0 && (m.ContextWindow == nil || *m.ContextWindow != tc.context) {
			t.Fatalf("%s context: %+v", tc.id, m)
		}
	}
	// The alias table is overview's.
	var ov adminOverviewAnswer
	f.getJSON(t, "overview", &ov)
	a, _ := json.Marshal(ans.Aliases)
	b, _ := json.Marshal(ov.Aliases)
	if string(a) != string(b) || len(ans.Aliases) != 3 {
		t.Fatalf("aliases differ:\n%s\n%s", a, b)
	}
}

func TestAdminConsumersFleet(t *testing.T) {
	f := newAdminFleet(t, ``)
	var ans adminConsumersAnswer
	body := f.getJSON(t, "consumers", &ans)
	checkGolden(t, "consumers", f.stable(body), "usersFile")
	if ans.UsersFile != f.usersFile {
		t.Fatalf("usersFile %q, want %q", ans.UsersFile, f.usersFile)
	}
	users := map[string]adminConsumer{}
	for _, u := range ans.Users {
		users[u.Name] = u
	}
	if u := users["erin"]; u.Source != "file" || strings.Join(u.Providers, ",") != "d" || strings.Join(u.Models, ",") != "disc-*" || u.Admin {
		t.Fatalf("erin: %+v", u)
	}
	if u := users["carol"]; u.Source != "inline" || u.Group != "spenders" || strings.Join(u.Groups, ",") != "spenders,all" || strings.Join(u.Providers, ",") != "q" || u.Models != nil {
		t.Fatalf("carol: %+v", u)
	}
	if u := users["alice"]; !u.Admin || u.Providers != nil {
		t.Fatalf("alice: %+v", u)
	}
	groups := map[string]adminConsumerGroup{}
	for _, g := range ans.Groups {
		groups[g.Name] = g
	}
	tight := groups["tight"]
	if strings.Join(tight.AllowedProviders, ",") != "p" || tight.ModelAccess["p"] != (adminModelAccess{Allowed: 1, Total: 6}) ||
		tight.ModelAccess["zbad"] != (adminModelAccess{Allowed: 0, Total: 1}) || tight.ModelAccess["dfail"] != (adminModelAccess{}) {
		t.Fatalf("tight: %+v", tight)
	}
	if all := groups["all"]; len(all.AllowedProviders) != 5 || all.ModelAccess["p"] != (adminModelAccess{Allowed: 6, Total: 6}) || all.Providers != nil {
		t.Fatalf("all: %+v", all)
	}
	if s := groups["spenders"]; strings.Join(s.PassthroughPaths, ",") != "v1/files" || strings.Join(s.McpServers, ",") != "docs-*" {
		t.Fatalf("spenders: %+v", s)
	}
}

// modelAccess agrees with what the proxy enforces: for a member of one
// group alone, a model counts as allowed exactly when a real request for
// it is not refused as model_not_allowed.
func TestAdminConsumersAccessMatchesRequests(t *testing.T) {
	f := newAdminFleet(t, ``)
	var ans adminConsumersAnswer
	f.getJSON(t, "consumers", &ans)
	members := map[string]string{"all": testAliceKey, "tight": fleetBobKey, "idle": fleetDaveKey}
	for _, g := range ans.Groups {
		key, ok := members[g.Name]
		if !ok {
			continue
		}
		counted := map[string]int{}
		ids := f.g.catalogIDs()
		for _, id := range ids {
			status, _, body := do(t, "POST", f.base+"/v1/chat/completions", key, `{"model":"`+id+`","messages":[{"role":"user","content":"hi"}]}`)
			waitRecord(t, f.done)
			if !(status == 403 && strings.Contains(body, "model_not_allowed")) {
				counted[id[:strings.IndexByte(id, '/')]]++
			}
		}
		for provider, a := range g.ModelAccess {
			if a.Allowed != counted[provider] {
				t.Fatalf("group %s, provider %s: modelAccess says %d allowed, requests found %d", g.Name, provider, a.Allowed, counted[provider])
			}
		}
	}
}

// redisWithPassword starts a redis-server that requires password.
func redisWithPassword(t *testing.T, password string) string {
	t.Helper()
	addr := redistest.Start(t)
	nc, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(2 * time.Second))
	cmd := "*4\r\n$6\r\nCONFIG\r\n$3\r\nSET\r\n$11\r\nrequirepass\r\n$" + strconv.Itoa(len(password)) + "\r\n" + password + "\r\n"
	if _, err := nc.Write([]byte(cmd)); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(nc).ReadString('\n'); err != nil || line != "+OK\r\n" {
		t.Fatalf("CONFIG SET requirepass: %q %v", line, err)
	}
	return addr
}

// No answer of the four routes carries a secret: a provider key, a
// user key or its SHA-256 (hex or base64), the Redis password, or a
// password in a baseUrl's userinfo.
func TestAdminRoutesNoSecrets(t *testing.T) {
	const (
		provKey    = "sk-SECRET-provider-literal-4411"
		userKeyA   = "sk-SECRET-user-alice-7733"
		userKeyB   = "sk-SECRET-user-bob-9955"
		redisPass  = "SECRET-redis-password-2288"
		infoSecret = "SECRET-userinfo-6600"
	)
	addr := redisWithPassword(t, redisPass)
	ok, _ := fleetUpstreams(t)
	withUser := strings.Replace(ok.URL, "http://", "http://ops:"+infoSecret+"@", 1)
	cfg := `{"admin": {"enabled": true}, "redis": {"address": "` + addr + `", "password": "` + redisPass + `"},
  "providers": {"p": {"type": "openai", "baseUrl": "` + withUser + `", "apiKey": "` + provKey + `", "models": ["m1"]}},
  "pricing": {"m1": {"inputPerM": 2, "outputPerM": 4}},
  "groups": {"all": {}},
  "users": {"inline": [
    {"name": "alice", "group": "all", "apiKey": "` + userKeyA + `", "admin": true},
    {"name": "bob", "group": "all", "apiKey": "` + userKeyB + `", "providers": ["p"]}]}}`
	_, base, done := statsGateway(t, cfg)
	for _, key := range []string{userKeyA, userKeyB} {
		if status, _, body := do(t, "POST", base+"/v1/chat/completions", key, m1Chat); status != 200 {
			t.Fatalf("%d %s", status, body)
		}
		waitRecord(t, done)
	}
	secrets := []string{provKey, userKeyA, userKeyB, redisPass, infoSecret}
	for _, key := range []string{userKeyA, userKeyB} {
		sum := sha256.Sum256([]byte(key))
		secrets = append(secrets, hex.EncodeToString(sum[:]), strings.ToUpper(hex.EncodeToString(sum[:])),
			base64.StdEncoding.EncodeToString(sum[:]), base64.RawStdEncoding.EncodeToString(sum[:]),
			base64.URLEncoding.EncodeToString(sum[:]), base64.RawURLEncoding.EncodeToString(sum[:]))
	}
	for _, route := range []string{"overview", "usage", "catalog", "consumers"} {
		status, _, body := getAdmin(t, base+"/admin/api/"+route, userKeyA)
		if status != 200 {
			t.Fatalf("%s: %d %s", route, status, body)
		}
		if route == "overview" && !strings.Contains(body, `"reachable":true`) {
			t.Fatalf("overview did not read through the password-protected Redis: %s", body)
		}
		if route == "usage" && !strings.Contains(body, `"requestsPerDay":2`) {
			t.Fatalf("usage did not read the traffic: %s", body)
		}
		for _, s := range secrets {
			if strings.Contains(body, s) {
				t.Fatalf("%s carries the secret %q: %s", route, s, body)
			}
		}
	}
}
