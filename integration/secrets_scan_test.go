package integration_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmgateway/llmgateway/integration/gwproc"
	"github.com/llmgateway/llmgateway/integration/mockupstream"
	"github.com/llmgateway/llmgateway/integration/redisproc"
)

// The secrets scan (README "Hardening"): the real binary, at debug log
// level with the access log on, in front of a real redis-server that
// requires a password, the mock upstream (OpenAI, Anthropic and Gemini
// providers, each with an echoing twin that quotes the credential it
// was sent back in its error), an MCP server and two A2A agents with
// credentials of their own. Every route is driven — successes and the
// error paths — with keys in every secret form, and every answer's body
// and headers, and every line the process wrote by the time it exited
// on SIGTERM, are scanned for any 8 characters of any secret and for
// any 12 characters of a user key's digest (hex, base64) or of a Basic
// credential. The secrets are random per run.

// ssSecrets are one run's sentinels.
type ssSecrets struct {
	openAI, anthropic, gemini string // provider keys: literal, env:, file:
	ada, eve, fay, cap        string // inline users: literal (admin), env:, file:, literal (limited)
	gus, hal                  string // users-file users: literal, env:
	redis                     string // the Redis password, env:
	mcpLit, mcpEnv, mcpFile   string // the MCP server's headers
	agentLit, agentEnv        string // the agent's headers
	agentFile, agentPass      string // the agent's file: header, the other agent's URL password
}

func newSSSecrets(t *testing.T) ssSecrets {
	return ssSecrets{
		openAI: ssRandom(t, "sk-"), anthropic: ssRandom(t, "sk-ant-"), gemini: ssRandom(t, "AIza"),
		ada: ssRandom(t, "sk-"), eve: ssRandom(t, "sk-"), fay: ssRandom(t, "sk-"), cap: ssRandom(t, "sk-"),
		gus: ssRandom(t, "sk-"), hal: ssRandom(t, "sk-"),
		redis:  ssRandom(t, "rp-"),
		mcpLit: ssRandom(t, "tok-"), mcpEnv: ssRandom(t, "tok-"), mcpFile: ssRandom(t, "tok-"),
		agentLit: ssRandom(t, "tok-"), agentEnv: ssRandom(t, "tok-"), agentFile: ssRandom(t, "tok-"), agentPass: ssRandom(t, "pw-"),
	}
}

// register puts every secret into the scanner.
func (s ssSecrets) register(sc *leakScanner) {
	for name, v := range map[string]string{
		"openai provider key (literal)": s.openAI, "anthropic provider key (env:)": s.anthropic, "gemini provider key (file:)": s.gemini,
		"redis password (env:)": s.redis,
		"mcp header (literal)":  s.mcpLit, "mcp header (env:)": s.mcpEnv, "mcp header (file:)": s.mcpFile,
		"agent header (literal)": s.agentLit, "agent header (env:)": s.agentEnv, "agent header (file:)": s.agentFile,
		"agent URL password": s.agentPass,
	} {
		sc.secret(name, v)
	}
	for name, v := range map[string]string{
		"user ada key (literal)": s.ada, "user eve key (env:)": s.eve, "user fay key (file:)": s.fay, "user cap key (literal)": s.cap,
		"users-file gus key (literal)": s.gus, "users-file hal key (env:)": s.hal,
	} {
		sc.userKey(name, v)
	}
	sc.encodedForm("agent Basic credential", ssBasic("agent", s.agentPass))
}

// ssCase is one request and what must come back.
type ssCase struct {
	name   string
	method string // default POST with a body, GET without
	path   string
	key    string // the credential sent ("" none)
	// keyHeader carries key: "" is Authorization: Bearer.
	keyHeader string
	header    map[string]string
	body      string
	ctype     string // default application/json with a body
	status    int
	// want is a piece of the body that proves the route did its work.
	want string
	// access: the request's access log line must be in the output.
	access bool
}

// ssEnv is the running gateway and what the scan collected.
type ssEnv struct {
	t       *testing.T
	gw      *gwproc.Process
	client  *http.Client
	scanner *leakScanner
	mu      sync.Mutex
	// accessIDs are the request ids whose access lines must be logged;
	// keyedIDs those of requests that presented a key (each must be in
	// some log line: its authentication is logged).
	accessIDs map[string]string
	keyedIDs  map[string]string
	requests  int
}

// run sends c, scans its answer and checks its status and body.
func (e *ssEnv) run(c ssCase) string {
	e.t.Helper()
	status, body := e.send(c)
	if !assert.Equal(e.t, c.status, status, "%s (%s): %s", c.name, c.path, ssExcerpt([]byte(body))) {
		return body
	}
	if c.want != "" {
		assert.Contains(e.t, body, c.want, "%s: the answer lacks what the route should have produced", c.name)
	}
	return body
}

// send sends c and scans its answer: the status and the body.
func (e *ssEnv) send(c ssCase) (int, string) {
	t := e.t
	t.Helper()
	method := c.method
	if method == "" {
		method = http.MethodGet
		if c.body != "" {
			method = http.MethodPost
		}
	}
	req, err := http.NewRequest(method, e.gw.URL+c.path, strings.NewReader(c.body))
	require.NoError(t, err, c.name)
	if c.body != "" {
		ct := c.ctype
		if ct == "" {
			ct = "application/json"
		}
		req.Header.Set("Content-Type", ct)
	}
	if c.key != "" {
		switch c.keyHeader {
		case "":
			req.Header.Set("Authorization", "Bearer "+c.key)
		default:
			req.Header.Set(c.keyHeader, c.key)
		}
	}
	for k, v := range c.header {
		req.Header.Set(k, v)
	}
	resp, err := e.client.Do(req)
	require.NoError(t, err, c.name)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err, c.name)
	e.scanner.scanHeaders(c.name, resp.Header)
	e.scanner.scan("body", c.name+" body", string(body))
	e.mu.Lock()
	e.requests++
	id := resp.Header.Get("X-Request-Id")
	if c.access {
		assert.NotEmpty(t, id, "%s: no X-Request-Id", c.name)
		e.accessIDs[id] = c.name
	}
	if c.key != "" && id != "" {
		e.keyedIDs[id] = c.name
	}
	e.mu.Unlock()
	return resp.StatusCode, string(body)
}

func ssExcerpt(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "…"
	}
	return string(b)
}

// ssOutput collects the process's whole output.
type ssOutput struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *ssOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(p)
}

func (o *ssOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

func TestSecretsScanEverySurface(t *testing.T) {
	sec := newSSSecrets(t)
	scanner := newLeakScanner()
	sec.register(scanner)

	rs := redisproc.StartWith(t, redisproc.Options{Password: sec.redis})
	bin := buildGatewayBinary(t)
	mock := mockupstream.New(mockupstream.Options{Chunks: 3})
	up := httptest.NewServer(ssUpstream(mock))
	t.Cleanup(up.Close)
	mcpCheck := &ssHeaderCheck{want: map[string]string{"X-Tool-Token": sec.mcpEnv, "X-Tool-File": sec.mcpFile, "Authorization": "Bearer " + sec.mcpLit}}
	mcpSrv := ssMCPServer(t, mcpCheck)
	helperCheck := &ssHeaderCheck{want: map[string]string{"X-Agent-Token": sec.agentEnv, "X-Agent-File": sec.agentFile, "X-Agent-Lit": sec.agentLit}}
	basicCheck := &ssHeaderCheck{want: map[string]string{"Authorization": "Basic " + ssBasic("agent", sec.agentPass)}}
	agents := ssA2AAgent(t, map[string]*ssHeaderCheck{"/helper": helperCheck, "/basic": basicCheck})

	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	gemKey := file("gemini.key", sec.gemini+"\n")
	fayKey := file("fay.key", "  "+sec.fay+"\n")
	mcpToken := file("mcp.token", sec.mcpFile+"\n")
	agentToken := file("agent.token", sec.agentFile)
	usersFile := file("users.json", `{"users": [
  {"name": "gus", "group": "all", "apiKey": "`+sec.gus+`"},
  {"name": "hal", "group": "all", "apiKey": "env:LLMGW_SS_HAL_KEY"}
]}`)
	agentURL := strings.Replace(agents.URL, "http://", "http://agent:"+sec.agentPass+"@", 1) + "/basic"
	provider := func(typ, knobs, key string, models ...string) map[string]interface{} {
		return map[string]interface{}{"type": typ, "baseUrl": up.URL + knobs, "apiKey": key, "models": models}
	}
	const echo = "/x-mock-echo-credentials/1"
	cfg := map[string]interface{}{
		"accessLog":      true,
		"requestTimeout": "20s",
		"redis":          map[string]interface{}{"address": rs.Addr, "password": "env:LLMGW_SS_REDIS_PASSWORD", "failOpen": false},
		"admin":          map[string]interface{}{"enabled": true, "stats": map[string]interface{}{"userModel": true, "latency": true}},
		"metrics":        map[string]interface{}{"enabled": true, "modelLabel": true},
		"providers": map[string]interface{}{
			"oai":     provider("openai", "", sec.openAI, "gpt-4o-mini", "text-embedding-3-small", "gpt-image-1", "tts-1", "whisper-1"),
			"ant":     provider("anthropic", "", "env:LLMGW_SS_ANT_KEY", "claude-sonnet-4-5"),
			"gem":     provider("gemini", "", "file:"+gemKey, "gemini-2.5-flash", "gemini-embedding-001", "imagen-4.0-generate-001"),
			"oaiecho": provider("openai", echo, sec.openAI, "echo-gpt", "echo-embed", "echo-image", "echo-tts", "echo-whisper"),
			"antecho": provider("anthropic", echo, "env:LLMGW_SS_ANT_KEY", "echo-claude"),
			"gemecho": provider("gemini", echo, "file:"+gemKey, "echo-gemini"),
		},
		"groups": map[string]interface{}{
			"all":     map[string]interface{}{},
			"limited": map[string]interface{}{"providers": []string{"oai"}, "models": []string{"gpt-4o-mini"}, "mcpServers": []string{"none"}, "agents": []string{"none"}},
		},
		"users": map[string]interface{}{
			"inline": []interface{}{
				map[string]interface{}{"name": "ada", "group": "all", "apiKey": sec.ada, "admin": true},
				map[string]interface{}{"name": "eve", "group": "limited", "apiKey": "env:LLMGW_SS_EVE_KEY"},
				map[string]interface{}{"name": "fay", "group": "all", "apiKey": "file:" + fayKey},
				map[string]interface{}{"name": "cap", "group": "all", "apiKey": sec.cap, "limits": map[string]interface{}{"requestsPerMinute": 1}},
			},
			"file": usersFile,
		},
		"mcpServers": map[string]interface{}{
			"tools": map[string]interface{}{"url": mcpSrv.URL + "/mcp", "headers": map[string]string{
				"Authorization": "Bearer " + sec.mcpLit, "X-Tool-Token": "env:LLMGW_SS_MCP_TOKEN", "X-Tool-File": "file:" + mcpToken}},
		},
		"agents": map[string]interface{}{
			"helper": map[string]interface{}{"url": agents.URL + "/helper", "headers": map[string]string{
				"X-Agent-Lit": sec.agentLit, "X-Agent-Token": "env:LLMGW_SS_AGENT_TOKEN", "X-Agent-File": "file:" + agentToken}},
			"basic": map[string]interface{}{"url": agentURL},
		},
	}
	raw, err := json.MarshalIndent(cfg, "", "  ")
	require.NoError(t, err)
	cfgPath := file("config.json", string(raw))

	out := &ssOutput{}
	gw, err := gwproc.Start(gwproc.Config{
		Binary: bin,
		Args:   []string{"-config", cfgPath, "-listen", "{addr}", "-log-level", "debug", "-name", "scan"},
		Env: []string{"LLMGW_DRAIN_DELAY=0s", "LLMGW_SHUTDOWN_TIMEOUT=5s", "DO_NOT_TRACK=1",
			"LLMGW_SS_ANT_KEY=" + sec.anthropic, "LLMGW_SS_EVE_KEY=" + sec.eve, "LLMGW_SS_HAL_KEY=" + sec.hal,
			"LLMGW_SS_REDIS_PASSWORD=" + sec.redis, "LLMGW_SS_MCP_TOKEN=" + sec.mcpEnv, "LLMGW_SS_AGENT_TOKEN=" + sec.agentEnv},
		Output: out,
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = gw.Stop()
		if t.Failed() {
			t.Logf("gateway output:\n%s", out.String())
		}
	})
	env := &ssEnv{t: t, gw: gw, scanner: scanner, accessIDs: map[string]string{}, keyedIDs: map[string]string{}, client: &http.Client{
		Timeout:       30 * time.Second,
		Transport:     &http.Transport{DisableCompression: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}

	for _, c := range ssCases(t, sec) {
		env.run(c)
	}
	ssAdminAndLimits(t, env, sec)

	// Redis was reached with the password: counting is in it (failOpen
	// is off, so a refused AUTH would have been a 503 everywhere).
	rc, err := redisproc.Dial(rs.Addr)
	require.NoError(t, err)
	v, err := rc.Do("AUTH", sec.redis)
	require.NoError(t, err)
	require.NoError(t, v.Err())
	keys, err := rc.Strings("KEYS", "llmgw:*")
	require.NoError(t, err)
	_ = rc.Close()
	assert.NotEmpty(t, keys, "the gateway wrote no counter into Redis")

	// Every fake received the credentials configured for it (what the
	// answers must not show was really sent).
	for name, c := range map[string]*ssHeaderCheck{"mcp server": mcpCheck, "agent helper": helperCheck, "agent basic": basicCheck} {
		seen, bad := c.result()
		assert.NotZero(t, seen, "%s was never reached", name)
		assert.Empty(t, bad, "%s got requests without its configured credentials", name)
	}

	// The whole output, once the process has exited cleanly.
	require.NoError(t, gw.Stop())
	require.NoError(t, gw.ExitErr(), "the gateway did not exit cleanly on SIGTERM")
	lines := scanner.scanLog("gateway output", out.String())
	ssCheckLog(t, env, lines)

	findings, counts := scanner.report()
	for _, f := range findings {
		t.Errorf("LEAK %s", f)
	}
	t.Logf("scanned %d requests: %d bodies, %d header lines, %d log lines; %d findings",
		env.requests, counts["body"], counts["header"], counts["log line"], len(findings))
}

// ssCheckLog checks that the output is the log of this traffic: the
// debug settings line, one access line per request that must have one,
// an auth-failure line per refused key.
func ssCheckLog(t *testing.T, env *ssEnv, lines []string) {
	access, authFailed, debug := 0, 0, 0
	logged := map[string]bool{}
	idRe := regexp.MustCompile(`request_id=([0-9a-f]+)`)
	for _, l := range lines {
		switch {
		case strings.Contains(l, " access "):
			access++
			if m := idRe.FindStringSubmatch(l); m != nil {
				logged[m[1]] = true
			}
		case strings.Contains(l, " auth failed "):
			authFailed++
		case strings.Contains(l, " DEBUG settings: "):
			debug++
		}
	}
	assert.NotZero(t, debug, "no debug settings line: was -log-level debug in effect?")
	assert.GreaterOrEqual(t, authFailed, 10, "auth failure lines")
	assert.GreaterOrEqual(t, access, len(env.accessIDs), "access lines")
	for id, name := range env.accessIDs {
		assert.True(t, logged[id], "no access line for %s (request id %s)", name, id)
	}
	all := strings.Join(lines, "\n")
	for id, name := range env.keyedIDs {
		assert.True(t, strings.Contains(all, "request_id="+id), "no log line for %s (request id %s)", name, id)
	}
	t.Logf("output: %d lines, %d access lines, %d auth failures", len(lines), access, authFailed)
}

// The checker itself reports what it must: a window cut from the middle
// of a key (the way a log might print "sk-ab…wxyz"), its prefix and
// suffix, a digest in each encoding and cut short, a Basic credential —
// and nothing in a text holding none of them.
func TestSecretsScanCheckerReports(t *testing.T) {
	key := ssRandom(t, "sk-")
	user := ssRandom(t, "sk-")
	sc := newLeakScanner()
	sc.secret("provider key", key)
	sc.userKey("user key", user)
	sc.encodedForm("basic", ssBasic("u", key))
	for _, leaked := range []string{
		key, key[:ssKeyWindow], key[len(key)-ssKeyWindow:], key[5 : 5+ssKeyWindow],
		"Bearer " + user, "key=" + user[3:11] + "...",
	} {
		assert.Len(t, sc.check("t", "the log said "+leaked+" there"), 1, "%q not reported", leaked)
	}
	for _, d := range ssDigestForms(user) {
		assert.Len(t, sc.check("t", `{"digest":"`+d+`"}`), 1, "digest %q not reported", d)
		assert.Len(t, sc.check("t", "id="+d[10:10+ssDigestWindow]), 1, "digest window of %q not reported", d)
	}
	assert.Len(t, sc.check("t", "Authorization: Basic "+ssBasic("u", key)), 1, "the Basic credential")
	assert.Empty(t, sc.check("t", "request_id=0af7651916cd43dd8448eb211c80319c sk-"+key[3:3+ssKeyWindow-4]+" "+key[:ssKeyWindow-1]))

	// scan keeps the findings and counts the texts.
	sc.scan("body", "one", "clean")
	sc.scan("body", "two", "with "+key[2:12])
	findings, counts := sc.report()
	require.Len(t, findings, 1)
	assert.Contains(t, findings[0], "two: provider key")
	assert.Equal(t, 2, counts["body"])
}

// ssCases is every route with its successes and error paths (the
// admin API and the limit refusal are ssAdminAndLimits').
func ssCases(t *testing.T, s ssSecrets) []ssCase {
	chat := func(model string, stream bool) string {
		return `{"model":"` + model + `","messages":[{"role":"user","content":"hello there"}],"stream":` + boolJSON(stream) + `}`
	}
	msgs := func(model string, stream bool) string {
		return `{"model":"` + model + `","max_tokens":64,"messages":[{"role":"user","content":"hello there"}],"stream":` + boolJSON(stream) + `}`
	}
	responses := func(model string, stream bool) string {
		return `{"model":"` + model + `","input":"hello there","stream":` + boolJSON(stream) + `}`
	}
	rpc := func(id, method, params string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":` + params + `}`
	}
	big := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"` + strings.Repeat("x", 4<<20) + `"}]}`
	audio, audioType := ssMultipart(t, "whisper-1")
	echoAudio, echoAudioType := ssMultipart(t, "echo-whisper")
	const hello = "Hello from mock"
	const countTokens = `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"hello there"}]}`
	xak, av := "X-Api-Key", map[string]string{"Anthropic-Version": "2023-06-01"}
	m := func(c ssCase) ssCase { c.access = true; return c }
	return []ssCase{
		// The model listings.
		{name: "models", path: "/v1/models", key: s.ada, status: 200, want: `"gpt-4o-mini"`},
		{name: "models_anthropic_shape", path: "/v1/models", key: s.fay, keyHeader: xak, header: av, status: 200, want: `"claude-sonnet-4-5"`},
		{name: "models_one", path: "/v1/models/gpt-4o-mini", key: s.gus, status: 200, want: `"gpt-4o-mini"`},
		{name: "models_no_key", path: "/v1/models", status: 401},
		{name: "models_provider_key", path: "/v1/models", key: s.openAI, status: 401},
		{name: "models_anthropic_provider_key", path: "/v1/models", key: s.anthropic, keyHeader: xak, header: av, status: 401},

		// Chat: same shape, streamed, translated to Anthropic and Gemini.
		m(ssCase{name: "chat", path: "/v1/chat/completions", key: s.ada, body: chat("gpt-4o-mini", false), status: 200, want: hello}),
		m(ssCase{name: "chat_stream_env_user", path: "/v1/chat/completions", key: s.eve, body: chat("gpt-4o-mini", true), status: 200, want: "[DONE]"}),
		m(ssCase{name: "chat_to_anthropic_file_user", path: "/v1/chat/completions", key: s.fay, body: chat("claude-sonnet-4-5", false), status: 200, want: hello}),
		m(ssCase{name: "chat_stream_to_anthropic", path: "/v1/chat/completions", key: s.gus, body: chat("claude-sonnet-4-5", true), status: 200, want: "[DONE]"}),
		m(ssCase{name: "chat_to_gemini_users_file_env", path: "/v1/chat/completions", key: s.hal, body: chat("gemini-2.5-flash", false), status: 200, want: hello}),
		m(ssCase{name: "chat_stream_to_gemini", path: "/v1/chat/completions", key: s.ada, keyHeader: xak, body: chat("gemini-2.5-flash", true), status: 200, want: "[DONE]"}),
		m(ssCase{name: "chat_no_key", path: "/v1/chat/completions", body: chat("gpt-4o-mini", false), status: 401}),
		m(ssCase{name: "chat_openai_key_as_user_key", path: "/v1/chat/completions", key: s.openAI, body: chat("gpt-4o-mini", false), status: 401}),
		m(ssCase{name: "chat_gemini_key_as_user_key", path: "/v1/chat/completions", key: s.gemini, keyHeader: xak, body: chat("gpt-4o-mini", false), status: 401}),
		m(ssCase{name: "chat_forbidden_model", path: "/v1/chat/completions", key: s.eve, body: chat("text-embedding-3-small", false), status: 403}),
		m(ssCase{name: "chat_forbidden_provider", path: "/v1/chat/completions", key: s.eve, body: chat("ant/claude-sonnet-4-5", false), status: 403}),
		m(ssCase{name: "chat_malformed", path: "/v1/chat/completions", key: s.ada, body: `{"model":"gpt-4o-mini",`, status: 400}),
		m(ssCase{name: "chat_oversized", path: "/v1/chat/completions", key: s.ada, body: big, status: 413}),
		m(ssCase{name: "chat_unknown_model", path: "/v1/chat/completions", key: s.ada, body: chat("no-such-model", false), status: 404}),
		m(ssCase{name: "chat_upstream_echoes_openai_key", path: "/v1/chat/completions", key: s.ada, body: chat("echo-gpt", false), status: 502}),
		m(ssCase{name: "chat_stream_upstream_echoes_openai_key", path: "/v1/chat/completions", key: s.fay, body: chat("echo-gpt", true), status: 502}),
		m(ssCase{name: "chat_upstream_echoes_anthropic_key", path: "/v1/chat/completions", key: s.ada, body: chat("echo-claude", false), status: 502}),
		m(ssCase{name: "chat_upstream_echoes_gemini_key", path: "/v1/chat/completions", key: s.ada, body: chat("echo-gemini", true), status: 502}),

		// Embeddings, images, speech, transcriptions.
		m(ssCase{name: "embeddings", path: "/v1/embeddings", key: s.ada, body: `{"model":"text-embedding-3-small","input":"hi"}`, status: 200, want: `"embedding"`}),
		m(ssCase{name: "embeddings_gemini", path: "/v1/embeddings", key: s.fay, body: `{"model":"gemini-embedding-001","input":"hi"}`, status: 200, want: `"embedding"`}),
		m(ssCase{name: "embeddings_echo", path: "/v1/embeddings", key: s.ada, body: `{"model":"echo-embed","input":"hi"}`, status: 502}),
		m(ssCase{name: "embeddings_malformed", path: "/v1/embeddings", key: s.ada, body: `[]`, status: 400}),
		m(ssCase{name: "images", path: "/v1/images/generations", key: s.ada, body: `{"model":"gpt-image-1","prompt":"a cat"}`, status: 200, want: "b64_json"}),
		m(ssCase{name: "images_gemini", path: "/v1/images/generations", key: s.gus, body: `{"model":"imagen-4.0-generate-001","prompt":"a cat"}`, status: 200, want: "b64_json"}),
		m(ssCase{name: "images_echo", path: "/v1/images/generations", key: s.ada, body: `{"model":"echo-image","prompt":"a cat"}`, status: 502}),
		m(ssCase{name: "speech", path: "/v1/audio/speech", key: s.ada, body: `{"model":"tts-1","input":"hi","voice":"alloy"}`, status: 200, want: "fake-mp3-bytes"}),
		m(ssCase{name: "speech_echo", path: "/v1/audio/speech", key: s.ada, body: `{"model":"echo-tts","input":"hi","voice":"alloy"}`, status: 502}),
		m(ssCase{name: "speech_not_supported", path: "/v1/audio/speech", key: s.ada, body: `{"model":"gemini-2.5-flash","input":"hi"}`, status: 501}),
		m(ssCase{name: "transcriptions", path: "/v1/audio/transcriptions", key: s.fay, body: string(audio), ctype: audioType, status: 200, want: "fake transcriber"}),
		m(ssCase{name: "transcriptions_echo", path: "/v1/audio/transcriptions", key: s.ada, body: string(echoAudio), ctype: echoAudioType, status: 502}),
		m(ssCase{name: "transcriptions_malformed", path: "/v1/audio/transcriptions", key: s.ada, body: "not multipart", ctype: "multipart/form-data; boundary=x", status: 400}),

		// Anthropic Messages.
		m(ssCase{name: "messages", path: "/v1/messages", key: s.fay, keyHeader: xak, header: av, body: msgs("claude-sonnet-4-5", false), status: 200, want: hello}),
		m(ssCase{name: "messages_stream", path: "/v1/messages", key: s.ada, keyHeader: xak, header: av, body: msgs("claude-sonnet-4-5", true), status: 200, want: "message_stop"}),
		m(ssCase{name: "messages_to_openai", path: "/v1/messages", key: s.hal, keyHeader: xak, body: msgs("gpt-4o-mini", false), status: 200, want: hello}),
		m(ssCase{name: "messages_stream_to_gemini", path: "/v1/messages", key: s.gus, body: msgs("gemini-2.5-flash", true), status: 200, want: "message_stop"}),
		m(ssCase{name: "messages_no_key", path: "/v1/messages", header: av, body: msgs("claude-sonnet-4-5", false), status: 401}),
		m(ssCase{name: "messages_anthropic_key_as_user_key", path: "/v1/messages", key: s.anthropic, keyHeader: xak, header: av, body: msgs("claude-sonnet-4-5", false), status: 401}),
		m(ssCase{name: "messages_forbidden", path: "/v1/messages", key: s.eve, keyHeader: xak, body: msgs("claude-sonnet-4-5", false), status: 403}),
		m(ssCase{name: "messages_malformed", path: "/v1/messages", key: s.fay, keyHeader: xak, body: `{"model":`, status: 400}),
		m(ssCase{name: "messages_unknown_model", path: "/v1/messages", key: s.fay, keyHeader: xak, body: msgs("claude-nothing", false), status: 404}),
		m(ssCase{name: "messages_echo", path: "/v1/messages", key: s.fay, keyHeader: xak, body: msgs("echo-claude", false), status: 502}),
		m(ssCase{name: "messages_stream_echo_openai", path: "/v1/messages", key: s.fay, keyHeader: xak, body: msgs("echo-gpt", true), status: 502}),
		{name: "count_tokens", path: "/v1/messages/count_tokens", key: s.fay, keyHeader: xak, header: av, body: countTokens, status: 200, want: "input_tokens"},
		{name: "count_tokens_provider_key", path: "/v1/messages/count_tokens", key: s.anthropic, keyHeader: xak, body: countTokens, status: 401},

		// OpenAI Responses.
		m(ssCase{name: "responses", path: "/v1/responses", key: s.ada, body: responses("gpt-4o-mini", false), status: 200, want: hello}),
		m(ssCase{name: "responses_stream", path: "/v1/responses", key: s.gus, body: responses("gpt-4o-mini", true), status: 200, want: "response.completed"}),
		m(ssCase{name: "responses_stream_to_anthropic", path: "/v1/responses", key: s.fay, body: responses("claude-sonnet-4-5", true), status: 200, want: "response.completed"}),
		m(ssCase{name: "responses_provider_key", path: "/v1/responses", key: s.openAI, body: responses("gpt-4o-mini", false), status: 401}),
		m(ssCase{name: "responses_echo", path: "/v1/responses", key: s.ada, body: responses("echo-gpt", false), status: 502}),
		m(ssCase{name: "responses_malformed", path: "/v1/responses", key: s.ada, body: `{"model":"gpt-4o-mini","input":`, status: 400}),

		// The Ollama API.
		{name: "ollama_tags", path: "/api/tags", key: s.ada, status: 200, want: `"gpt-4o-mini"`},
		{name: "ollama_tags_provider_key", path: "/api/tags", key: s.openAI, status: 401},
		{name: "ollama_show", path: "/api/show", key: s.fay, body: `{"model":"gpt-4o-mini"}`, status: 200, want: "llmgw"},
		m(ssCase{name: "ollama_chat", path: "/api/chat", key: s.ada, body: `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"stream":false}`, status: 200, want: hello}),
		m(ssCase{name: "ollama_chat_stream_to_anthropic", path: "/api/chat", key: s.gus, body: `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"hi"}]}`, status: 200, want: `"done":true`}),
		m(ssCase{name: "ollama_generate", path: "/api/generate", key: s.hal, body: `{"model":"gemini-2.5-flash","prompt":"hi","stream":false}`, status: 200, want: hello}),
		m(ssCase{name: "ollama_embed", path: "/api/embed", key: s.ada, body: `{"model":"text-embedding-3-small","input":"hi"}`, status: 200, want: "embeddings"}),
		m(ssCase{name: "ollama_chat_echo", path: "/api/chat", key: s.ada, body: `{"model":"echo-gpt","messages":[{"role":"user","content":"hi"}],"stream":false}`, status: 502}),
		m(ssCase{name: "ollama_chat_no_key", path: "/api/chat", body: `{"model":"gpt-4o-mini","messages":[]}`, status: 401}),

		// Native passthrough, and upstreams echoing the key the gateway
		// injected (the answer is relayed, the key redacted).
		m(ssCase{name: "passthrough_openai", path: "/oai/v1/chat/completions", key: s.ada, body: chat("gpt-4o-mini", false), status: 200, want: hello}),
		m(ssCase{name: "passthrough_openai_stream", path: "/oai/v1/chat/completions", key: s.fay, body: chat("gpt-4o-mini", true), status: 200, want: "[DONE]"}),
		m(ssCase{name: "passthrough_anthropic", path: "/ant/v1/messages", key: s.fay, keyHeader: xak, header: av, body: msgs("claude-sonnet-4-5", false), status: 200, want: hello}),
		m(ssCase{name: "passthrough_gemini", path: "/gem/v1beta/models/gemini-2.5-flash:generateContent", key: s.hal,
			body: `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, status: 200, want: hello}),
		m(ssCase{name: "passthrough_openai_echo", path: "/oaiecho/v1/chat/completions", key: s.ada, body: chat("echo-gpt", false), status: 401, want: "[REDACTED]"}),
		m(ssCase{name: "passthrough_anthropic_echo", path: "/antecho/v1/messages", key: s.ada, body: msgs("echo-claude", false), status: 401, want: "[REDACTED]"}),
		m(ssCase{name: "passthrough_gemini_echo", path: "/gemecho/v1beta/models/echo-gemini:generateContent", key: s.ada,
			body: `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, status: 401, want: "[REDACTED]"}),
		m(ssCase{name: "passthrough_models_echo", method: "GET", path: "/oaiecho/v1/models", key: s.gus, status: 401, want: "[REDACTED]"}),
		m(ssCase{name: "passthrough_no_key", path: "/oai/v1/chat/completions", body: chat("gpt-4o-mini", false), status: 401}),
		m(ssCase{name: "passthrough_provider_key", path: "/ant/v1/messages", key: s.anthropic, keyHeader: xak, body: msgs("claude-sonnet-4-5", false), status: 401}),
		m(ssCase{name: "passthrough_forbidden_provider", path: "/ant/v1/messages", key: s.eve, body: msgs("claude-sonnet-4-5", false), status: 403}),
		m(ssCase{name: "passthrough_forbidden_model", path: "/oai/v1/chat/completions", key: s.eve, body: chat("tts-1", false), status: 403}),

		// The MCP and A2A registry.
		{name: "mcp_servers", path: "/v1/mcp/servers", key: s.ada, status: 200, want: `"tools"`},
		{name: "mcp_servers_limited", path: "/v1/mcp/servers", key: s.eve, status: 200, want: `"servers":[]`},
		{name: "agents", path: "/v1/agents", key: s.fay, status: 200, want: `"basic"`},
		{name: "agents_no_key", path: "/v1/agents", status: 401},

		// The per-target proxy; the fakes' error answers quote every
		// credential they were sent.
		m(ssCase{name: "mcp_proxy_initialize", path: "/mcp/tools/", key: s.ada, header: map[string]string{"Accept": "application/json, text/event-stream"},
			body: rpc("1", "initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"scan","version":"1"}}`), status: 200, want: "scan-tools"}),
		m(ssCase{name: "mcp_proxy_error_echo", path: "/mcp/tools/fail", key: s.fay, body: `{}`, status: 500, want: "[REDACTED]"}),
		m(ssCase{name: "mcp_proxy_forbidden", path: "/mcp/tools/", key: s.eve, body: `{}`, status: 403}),
		m(ssCase{name: "mcp_proxy_provider_key", path: "/mcp/tools/", key: s.openAI, body: `{}`, status: 401}),
		m(ssCase{name: "mcp_proxy_unknown", path: "/mcp/nope/", key: s.ada, body: `{}`, status: 404}),
		m(ssCase{name: "a2a_card", path: "/a2a/helper/.well-known/agent-card.json", key: s.ada, status: 200, want: "/a2a/helper/rpc"}),
		m(ssCase{name: "a2a_send", path: "/a2a/helper/rpc", key: s.gus,
			body: rpc(`"r1"`, "message/send", `{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi"}]}}`), status: 200, want: "task-1"}),
		m(ssCase{name: "a2a_error_echo", path: "/a2a/helper/fail", key: s.ada, body: `{}`, status: 500, want: "[REDACTED]"}),
		m(ssCase{name: "a2a_basic_card", path: "/a2a/basic/.well-known/agent-card.json", key: s.hal, status: 200, want: "/a2a/basic/rpc"}),
		m(ssCase{name: "a2a_basic_error_echo", path: "/a2a/basic/fail", key: s.ada, body: `{}`, status: 500, want: "[REDACTED]"}),
		m(ssCase{name: "a2a_forbidden", path: "/a2a/helper/rpc", key: s.eve, body: `{}`, status: 403}),

		// Federated POST /mcp.
		m(ssCase{name: "mcp_initialize", path: "/mcp", key: s.ada,
			body: rpc("1", "initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"scan","version":"1"}}`), status: 200, want: "llmgateway"}),
		m(ssCase{name: "mcp_tools_list", path: "/mcp", key: s.fay, body: rpc("2", "tools/list", `{}`), status: 200, want: "tools_echo"}),
		m(ssCase{name: "mcp_tools_call", path: "/mcp", key: s.gus, body: rpc("3", "tools/call", `{"name":"tools_echo","arguments":{"text":"hi"}}`), status: 200, want: "echo: hi"}),
		m(ssCase{name: "mcp_tools_call_error_echo", path: "/mcp", key: s.ada, body: rpc("4", "tools/call", `{"name":"tools_leak","arguments":{}}`), status: 200, want: "[REDACTED]"}),
		m(ssCase{name: "mcp_tools_list_limited", path: "/mcp", key: s.eve, body: rpc("5", "tools/list", `{}`), status: 200, want: `"tools":[]`}),
		m(ssCase{name: "mcp_malformed", path: "/mcp", key: s.ada, body: `{"jsonrpc":`, status: 400}),
		m(ssCase{name: "mcp_provider_key", path: "/mcp", key: s.gemini, body: rpc("6", "tools/list", `{}`), status: 401}),
		m(ssCase{name: "mcp_oversized", path: "/mcp", key: s.ada, body: `{"jsonrpc":"2.0","id":8,"method":"ping","params":{"pad":"` + strings.Repeat("x", 4<<20) + `"}}`, status: 413}),
		{name: "mcp_get", method: "GET", path: "/mcp", key: s.ada, status: 405},

		// What matches no route, and the Ollama routes that need no key.
		{name: "unknown_route", path: "/v1/nothing", status: 404},
		{name: "ollama_root", path: "/", status: 200, want: "Ollama is running"},
		{name: "ollama_version", path: "/api/version", status: 200, want: "version"},

		// The binary's probes.
		{name: "healthz", path: "/healthz", status: 200},
		{name: "readyz", path: "/readyz", status: 200},
	}
}

func boolJSON(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// ssAdminRoutes is one valid request of every admin JSON route (README
// "Admin API").
var ssAdminRoutes = []string{
	"overview", "usage", "catalog", "consumers", "config", "events", "targets",
	"usage/history?scope=total&metric=req&window=day",
	"usage/series?scope=total&scope=user:ada&metric=tokin&window=hour&span=3",
	"usage/models?metric=req&window=day&detail=1",
	"usage/totals?kind=user",
	"usage/totals?kind=usermodel&user=ada",
	"usage/totals?kind=targetcaller",
	"performance?kind=provider&window=day",
	"performance?kind=model&window=hour",
}

// ssAdminAndLimits drives the admin API, its page and an asset,
// /metrics, and a limit refusal, after the traffic above.
func ssAdminAndLimits(t *testing.T, env *ssEnv, s ssSecrets) {
	for _, route := range ssAdminRoutes {
		env.run(ssCase{name: "admin_" + route, path: "/admin/api/" + route, key: s.ada, status: 200, want: "{"})
	}
	config := env.run(ssCase{name: "admin_config_references", path: "/admin/api/config", key: s.ada, status: 200, want: `"[redacted]"`})
	for _, ref := range []string{`"env:LLMGW_SS_ANT_KEY"`, `"env:LLMGW_SS_REDIS_PASSWORD"`, `"file:`} {
		assert.Contains(t, config, ref, "the config view lacks the reference %s", ref)
	}
	env.run(ssCase{name: "admin_non_admin", path: "/admin/api/usage", key: s.fay, status: 403})
	env.run(ssCase{name: "admin_provider_key", path: "/admin/api/config", key: s.openAI, status: 401})
	env.run(ssCase{name: "admin_no_key", path: "/admin/api/overview", status: 401})
	env.run(ssCase{name: "admin_bad_parameter", path: "/admin/api/usage/history?scope=total&metric=nope&window=day", key: s.ada, status: 400})
	page := env.run(ssCase{name: "admin_page", path: "/admin", status: 200, want: "/admin/assets/"})
	asset := regexp.MustCompile(`/admin/assets/[A-Za-z0-9._-]+`).FindString(page)
	require.NotEmpty(t, asset, "the admin page names no asset")
	env.run(ssCase{name: "admin_asset", path: asset, status: 200})
	env.run(ssCase{name: "metrics", path: "/metrics", key: s.ada, status: 200, want: "llmgateway_"})
	env.run(ssCase{name: "metrics_no_key", path: "/metrics", status: 401})
	env.run(ssCase{name: "metrics_non_admin", path: "/metrics", key: s.hal, status: 403})

	// A limit refusal: cap may send one request a minute. A minute that
	// turns between two requests lets one more through, never two more.
	statuses := []int{}
	for i := 0; i < 3 && (len(statuses) == 0 || statuses[len(statuses)-1] != 429); i++ {
		status, _ := env.send(ssCase{name: "limit_cap", path: "/v1/chat/completions", key: s.cap, access: true,
			body: `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`})
		statuses = append(statuses, status)
	}
	assert.Equal(t, 200, statuses[0], "cap's first request")
	assert.Equal(t, 429, statuses[len(statuses)-1], "no limit refusal: %v", statuses)
}
