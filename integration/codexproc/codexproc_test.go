package codexproc

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fakeCodex writes an executable shell script standing in for codex.
func fakeCodex(t *testing.T, script string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "codex")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestConfig(t *testing.T) {
	got := Config(Options{BaseURL: "http://127.0.0.1:9/v1", StreamIdleTimeout: 3 * time.Second})
	want := `model = "gw-codex-model"
model_provider = "llmgw"
check_for_update_on_startup = false

[model_providers.llmgw]
name = "LLM gateway"
base_url = "http://127.0.0.1:9/v1"
env_key = "LLMGW_CODEX_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
stream_idle_timeout_ms = 3000

[features]
plugins = false
unbounded_connection_retries = false

[analytics]
enabled = false
`
	if got != want {
		t.Fatalf("config\n got:\n%s\nwant:\n%s", got, want)
	}
	if got := Config(Options{Model: `m"x`}); !strings.HasPrefix(got, `model = "m\"x"`+"\n") || !strings.Contains(got, "stream_idle_timeout_ms = 20000\n") {
		t.Fatalf("model quoting or default idle timeout:\n%s", got)
	}
}

func TestEnvironmentIsolated(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "leaked")
	t.Setenv("CODEX_HOME", "/leaked")
	t.Setenv("HTTPS_PROXY", "http://leaked:1")
	env := Environment(Options{APIKey: "sk-x", Home: "/h", Env: []string{"RUST_LOG=debug"}})
	for _, w := range []string{"HOME=/h", APIKeyEnv + "=sk-x", "NO_COLOR=1"} {
		if !contains(env, w) {
			t.Errorf("environment lacks %s: %q", w, env)
		}
	}
	for _, e := range env {
		for _, leak := range []string{"OPENAI_API_KEY=", "CODEX_HOME=", "HTTPS_PROXY="} {
			if strings.HasPrefix(e, leak) {
				t.Errorf("inherited %s", e)
			}
		}
	}
	if env[len(env)-1] != "RUST_LOG=debug" {
		t.Errorf("Options.Env does not come last: %q", env)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestRunArgsConfigAndExitCode(t *testing.T) {
	bin := fakeCodex(t, `printf 'args=%s|' "$*"; printf 'pwd=%s|home=%s|key=%s|' "$(pwd)" "$HOME" "$`+APIKeyEnv+`"
read line && printf 'stdin=%s|' "$line"
grep -c base_url "$HOME/.codex/config.toml"
echo oops >&2
exit 3
`)
	res := Run(t, bin, Options{BaseURL: "http://127.0.0.1:9/v1", APIKey: "sk-k", Prompt: "say hi", Args: []string{"--json"}, Timeout: 20 * time.Second})
	if res.ExitCode != 3 || res.TimedOut {
		t.Fatalf("want exit 3: %s", res)
	}
	want := "args=exec --skip-git-repo-check --ephemeral --dangerously-bypass-approvals-and-sandbox --color never --json say hi|pwd=" +
		res.Dir + "|home=" + res.Home + "|key=sk-k|1\n"
	if res.Stdout != want {
		t.Fatalf("stdout\n got %q\nwant %q", res.Stdout, want)
	}
	if res.Stderr != "oops\n" {
		t.Fatalf("stderr %q", res.Stderr)
	}
	raw, err := os.ReadFile(filepath.Join(res.Home, ".codex", "config.toml"))
	if err != nil || string(raw) != Config(Options{BaseURL: "http://127.0.0.1:9/v1"}) {
		t.Fatalf("config.toml %v:\n%s", err, raw)
	}
	entries, err := os.ReadDir(res.Dir)
	if err != nil || len(entries) != 0 {
		t.Fatalf("working dir not fresh: %v %v", entries, err)
	}
}

func TestRunTimeoutKillsTheGroup(t *testing.T) {
	bin := fakeCodex(t, "sleep 60 &\nsleep 60\n")
	start := time.Now()
	res := Run(t, bin, Options{Prompt: "x", Timeout: 300 * time.Millisecond})
	if !res.TimedOut || res.ExitCode != -1 {
		t.Fatalf("want a timeout: %s", res)
	}
	if took := time.Since(start); took > 4*time.Second {
		t.Fatalf("Run returned after %v, want soon after the 300ms deadline", took)
	}
}

func TestLookupChecksTheVersion(t *testing.T) {
	t.Setenv(BinEnv, fakeCodex(t, `echo "codex-cli `+Version+`"`))
	if _, err := Lookup(); err != nil {
		t.Fatalf("right version refused: %v", err)
	}
	t.Setenv(BinEnv, fakeCodex(t, `echo "codex-cli 0.1.0"`))
	if _, err := Lookup(); err == nil || !strings.Contains(err.Error(), `"codex-cli 0.1.0"`) {
		t.Fatalf("wrong version: %v", err)
	}
	t.Setenv(BinEnv, "")
	t.Setenv("LLMGW_CACHE", t.TempDir())
	if _, err := Lookup(); err == nil || !strings.Contains(err.Error(), "install-codex.sh") {
		t.Fatalf("no binary: %v", err)
	}
	cached, _ := CachedBinary()
	if !strings.HasSuffix(cached, "/codex-"+Version+"/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex") {
		t.Fatalf("cached path %q", cached)
	}
}

const sampleTrace = `4411 connect(3, {sa_family=AF_UNIX, sun_path="/var/run/nscd/socket"}, 110) = -1 ENOENT (No such file or directory)
4411 connect(39, {sa_family=AF_INET, sin_port=htons(41823), sin_addr=inet_addr("127.0.0.1")}, 16) = -1 EINPROGRESS (Operation now in progress)
4412 connect(5, {sa_family=AF_INET6, sin6_port=htons(443), sin6_flowinfo=htonl(0), inet_pton(AF_INET6, "2606:4700::1", &sin6_addr), sin6_scope_id=0}, 28 <unfinished ...>
4412 <... connect resumed>) = 0
4413 connect(7, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("10.0.0.53")}, 16) = 0
4414 connect(8, {sa_family=AF_INET6, sin6_port=htons(80), sin6_flowinfo=htonl(0), inet_pton(AF_INET6, "::1", &sin6_addr), sin6_scope_id=0}, 28) = 0
4415 connect(9, {sa_family=AF_UNSPEC, sa_data="\0\0\0\0"}, 16) = 0
4415 +++ exited with 0 +++
`

func TestParseConnects(t *testing.T) {
	got := ParseConnects(sampleTrace)
	type short struct {
		PID          int
		Family, Addr string
		Port         int
	}
	var brief []short
	for _, c := range got {
		brief = append(brief, short{c.PID, c.Family, c.Addr, c.Port})
	}
	want := []short{
		{4411, "AF_UNIX", "/var/run/nscd/socket", 0},
		{4411, "AF_INET", "127.0.0.1", 41823},
		{4412, "AF_INET6", "2606:4700::1", 443},
		{4413, "AF_INET", "10.0.0.53", 53},
		{4414, "AF_INET6", "::1", 80},
		{4415, "AF_UNSPEC", "", 0},
	}
	if !reflect.DeepEqual(brief, want) {
		t.Fatalf("parsed\n got %+v\nwant %+v", brief, want)
	}
	out := Outbound(got)
	if len(out) != 2 || out[0].Addr != "2606:4700::1" || out[1].Addr != "10.0.0.53" {
		t.Fatalf("outbound %+v", out)
	}
}

func TestRunTraceConnect(t *testing.T) {
	// A child's connects (bash's /dev/tcp, to closed loopback ports) show
	// up in the trace. Only loopback is dialled: Outbound's verdict on
	// other addresses is TestParseConnects' business.
	if _, err := os.Stat("/bin/bash"); err != nil {
		t.Skip("needs bash for /dev/tcp")
	}
	bin := fakeCodex(t, "")
	script := "#!/bin/bash\n(exec 3<>/dev/tcp/127.0.0.1/9) 2>/dev/null\n(exec 4<>/dev/tcp/::1/9) 2>/dev/null\nexit 0\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	res := Run(t, bin, Options{Prompt: "x", TraceConnect: true, Timeout: 30 * time.Second})
	if res.ExitCode != 0 {
		t.Fatalf("%s", res)
	}
	var v4, v6 bool
	for _, c := range res.Connects {
		v4 = v4 || (c.Family == "AF_INET" && c.Addr == "127.0.0.1" && c.Port == 9)
		v6 = v6 || (c.Family == "AF_INET6" && c.Addr == "::1" && c.Port == 9)
	}
	if !v4 || !v6 {
		t.Fatalf("trace missed a connect: %+v", res.Connects)
	}
	if out := Outbound(res.Connects); len(out) != 0 {
		t.Fatalf("outbound %+v", out)
	}
}
