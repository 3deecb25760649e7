package integration_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmgateway/llmgateway/integration/gwproc"
	"github.com/llmgateway/llmgateway/integration/mockupstream"
)

// buildBinaryForConfigTests compiles cmd/llmgateway into a temp dir.
// badConfigProvider is the valid provider block shared by the YAML cases.
const badConfigProvider = "providers:\n  p: {type: openai, baseUrl: http://127.0.0.1:9}\n"

const dupSecret = "sk-dup-secret"

func TestBinaryRefusesBadConfig(t *testing.T) {
	bin := buildGatewayBinary(t)

	cases := []struct {
		name string
		ext  string // ".yaml" (default) or ".json"
		cfg  string
		want []string
	}{
		{
			name: "unknown top-level key",
			cfg:  badConfigProvider + "providerz: {}\n",
			want: []string{"providerz"},
		},
		{
			name: "unknown provider key",
			cfg:  "providers:\n  p: {type: openai, baseUrl: http://127.0.0.1:9, apiKeys: [a, b]}\n",
			want: []string{"apiKeys"},
		},
		{
			name: "unsupported provider type",
			cfg:  "providers:\n  p: {type: azure, baseUrl: http://127.0.0.1:9}\n",
			want: []string{"providers.p.type", "azure"},
		},
		{
			name: "reserved provider name",
			cfg:  badConfigProvider + "  v1: {type: openai, baseUrl: http://127.0.0.1:9}\n",
			want: []string{"reserved"},
		},
		{
			name: "user with unknown group",
			cfg: badConfigProvider +
				"groups:\n  g: {providers: [p]}\n" +
				"users:\n  inline:\n    - {name: alice, group: nope, apiKey: sk-alice-1}\n",
			want: []string{`unknown group "nope"`},
		},
		{
			name: "duplicate user keys",
			cfg: badConfigProvider +
				"groups:\n  g: {providers: [p]}\n" +
				"users:\n  inline:\n" +
				"    - {name: alice, group: g, apiKey: " + dupSecret + "}\n" +
				"    - {name: bob, group: g, apiKey: " + dupSecret + "}\n",
			want: []string{"duplicate key"},
		},
		{
			name: "personal grant models without providers",
			cfg: badConfigProvider +
				"groups:\n  g: {providers: []}\n" +
				"users:\n  inline:\n    - {name: alice, group: g, apiKey: sk-alice-1, models: [m1]}\n",
			want: []string{"a personal grant needs providers"},
		},
		{
			name: "zero request timeout",
			cfg:  badConfigProvider + "requestTimeout: 0s\n",
			want: []string{"requestTimeout", "must be positive"},
		},
		{
			name: "breaker threshold out of range",
			cfg:  badConfigProvider + "breaker: {failureThreshold: 101}\n",
			want: []string{"breaker.failureThreshold"},
		},
		{
			name: "alias prefix names a provider",
			cfg:  badConfigProvider + "modelAliases: {\"p/fast\": m1}\n",
			want: []string{"names a configured provider"},
		},
		{
			name: "free model with a cost",
			cfg:  badConfigProvider + "modelMeta: {m: {free: true, inputCostPerMTokMicroUsd: 5}}\n",
			want: []string{"contradicts a non-zero cost"},
		},
		{
			name: "missing users file",
			cfg:  badConfigProvider + "users: {file: /nonexistent/users.json}\n",
			want: []string{"users.file"},
		},
		{
			name: "json unknown key",
			ext:  ".json",
			cfg:  `{"providers": {"p": {"type": "openai", "baseUrl": "http://127.0.0.1:9"}}, "passthroughUnknwn": true}`,
			want: []string{"passthroughUnknwn"},
		},
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ext := tc.ext
			if ext == "" {
				ext = ".yaml"
			}
			path := filepath.Join(t.TempDir(), "config"+ext)
			require.NoError(t, os.WriteFile(path, []byte(tc.cfg), 0o600))

			addr, err := gwproc.FreeAddr()
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "-config", path, "-listen", addr)
			cmd.Env = append(os.Environ(), "LLMGW_DRAIN_DELAY=0s", "LLMGW_SHUTDOWN_TIMEOUT=2s")
			var stdout, stderr bytes.Buffer
			cmd.Stdout = &stdout
			cmd.Stderr = &stderr
			runErr := cmd.Run()

			require.NoError(t, ctx.Err(), "gateway did not exit within 20s on a bad config; stderr:\n%s", stderr.String())
			var exitErr *exec.ExitError
			require.True(t, errors.As(runErr, &exitErr),
				"expected a non-zero exit, got %v; stdout:\n%s\nstderr:\n%s", runErr, stdout.String(), stderr.String())
			assert.NotEqual(t, 0, exitErr.ExitCode())

			msg := stderr.String()
			t.Logf("exit %d, stderr: %s", exitErr.ExitCode(), strings.TrimSpace(msg))
			assert.Contains(t, msg, "llmgateway: ", "stderr should carry the llmgateway: prefix")
			for _, w := range tc.want {
				assert.Contains(t, msg, w, "stderr:\n%s", msg)
			}
			assert.NotContains(t, msg, dupSecret, "a user key leaked into stderr")
			assert.NotContains(t, stdout.String(), dupSecret, "a user key leaked into stdout")
		})
	}
}

func writeUsersFile(t *testing.T, path, key string) {
	t.Helper()
	raw, err := json.Marshal(map[string]interface{}{
		"users": []map[string]interface{}{{"name": "alice", "group": "g", "apiKey": key}},
	})
	require.NoError(t, err)
	// Write to a temp file and rename, so the gateway never reads a
	// half-written file.
	tmp := path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, raw, 0o600))
	require.NoError(t, os.Rename(tmp, path))
}

func TestBinaryUsersFileEditUnderTraffic(t *testing.T) {
	bin := buildGatewayBinary(t)

	mock := mockupstream.New(mockupstream.Options{Models: []string{"m1"}})
	up := httptest.NewServer(mock)
	t.Cleanup(up.Close)

	dir := t.TempDir()
	usersPath := filepath.Join(dir, "users.json")
	writeUsersFile(t, usersPath, "sk-file-v1")

	cfg := map[string]interface{}{
		"providers": map[string]interface{}{
			"mock": map[string]interface{}{"type": "openai", "baseUrl": up.URL, "apiKey": "sk-upstream", "models": []string{"m1"}},
		},
		"groups": map[string]interface{}{"g": map[string]interface{}{"providers": []string{}}},
		"users":  map[string]interface{}{"file": usersPath},
	}
	gw := startGateway(t, bin, cfg)

	client := &http.Client{Timeout: 5 * time.Second}
	models := func(key string) (int, string) {
		req, err := http.NewRequest(http.MethodGet, gw.URL+"/v1/models", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}

	code, body := models("sk-file-v1")
	require.Equal(t, http.StatusOK, code, "v1 key before the edit: %s", body)
	assert.Contains(t, body, "m1")
	code, body = models("sk-file-v2")
	require.Equal(t, http.StatusUnauthorized, code, "v2 key before the edit: %s", body)

	writeUsersFile(t, usersPath, "sk-file-v2")
	later := time.Now().Add(time.Second)
	require.NoError(t, os.Chtimes(usersPath, later, later))
	edited := time.Now()

	deadline := edited.Add(20 * time.Second)
	var lastCode int
	var lastBody string
	reloaded := false
	for attempts := 0; time.Now().Before(deadline) && attempts < 200; attempts++ {
		lastCode, lastBody = models("sk-file-v2")
		if lastCode == http.StatusOK {
			reloaded = true
			break
		}
		require.Equal(t, http.StatusUnauthorized, lastCode, "unexpected status while waiting for the reload: %s", lastBody)
		time.Sleep(200 * time.Millisecond)
	}
	require.True(t, reloaded,
		"the gateway did not pick up the edited users file within 20s under traffic (last status %d: %s)", lastCode, lastBody)
	t.Logf("users file edit took effect after %v", time.Since(edited).Round(100*time.Millisecond))
	assert.Contains(t, lastBody, "m1")

	code, body = models("sk-file-v1")
	assert.Equal(t, http.StatusUnauthorized, code, "the old key still works after the reload: %s", body)
	assert.NotContains(t, gw.Logs(), "sk-file-v1", "a user key leaked into the gateway log")
	assert.NotContains(t, gw.Logs(), "sk-file-v2", "a user key leaked into the gateway log")
}
