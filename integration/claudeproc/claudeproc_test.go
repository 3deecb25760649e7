package claudeproc

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeClaude writes an executable shell script standing in for claude.
func fakeClaude(t *testing.T, script string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestEnvironmentIsolated(t *testing.T) {
	t.Setenv("ANTHROPIC_MODEL", "leaked-model")
	t.Setenv("CLAUDE_CODE_USE_BEDROCK", "1")
	env := Environment(Options{BaseURL: "http://127.0.0.1:1", APIKey: "sk-x", Home: "/h", Env: []string{"CLAUDE_CODE_MAX_RETRIES=0"}})
	want := []string{
		"HOME=/h", "ANTHROPIC_BASE_URL=http://127.0.0.1:1", "ANTHROPIC_API_KEY=sk-x",
		"DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"CLAUDE_CODE_MAX_RETRIES=2",
	}
	for _, w := range want {
		if !containsString(env, w) {
			t.Errorf("environment lacks %s: %q", w, env)
		}
	}
	for _, e := range env {
		if strings.HasPrefix(e, "ANTHROPIC_MODEL=") || strings.HasPrefix(e, "CLAUDE_CODE_USE_BEDROCK=") {
			t.Errorf("inherited %s", e)
		}
	}
	if env[len(env)-1] != "CLAUDE_CODE_MAX_RETRIES=0" {
		t.Errorf("Options.Env does not come last: %q", env)
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestRunArgsDirsAndExitCode(t *testing.T) {
	bin := fakeClaude(t, `printf 'args=%s|' "$*"; printf 'pwd=%s|home=%s|url=%s|key=%s' "$(pwd)" "$HOME" "$ANTHROPIC_BASE_URL" "$ANTHROPIC_API_KEY"
echo oops >&2
exit 3
`)
	res := Run(t, bin, Options{BaseURL: "http://127.0.0.1:9", APIKey: "sk-k", Prompt: "say hi", Args: []string{"--model", "m1"}, Timeout: 20 * time.Second})
	if res.ExitCode != 3 || res.TimedOut {
		t.Fatalf("want exit 3: %s", res)
	}
	want := "args=--model m1 -p say hi|pwd=" + res.Dir + "|home=" + res.Home + "|url=http://127.0.0.1:9|key=sk-k"
	if res.Stdout != want {
		t.Fatalf("stdout\n got %q\nwant %q", res.Stdout, want)
	}
	if res.Stderr != "oops\n" {
		t.Fatalf("stderr %q", res.Stderr)
	}
	if res.Dir == res.Home || filepath.Base(res.Dir) != "work" || filepath.Base(res.Home) != "home" {
		t.Fatalf("dirs %q %q", res.Dir, res.Home)
	}
	entries, err := os.ReadDir(res.Dir)
	if err != nil || len(entries) != 0 {
		t.Fatalf("working dir not fresh: %v %v", entries, err)
	}
}

func TestRunTimeoutKillsTheGroup(t *testing.T) {
	// A child that keeps stdout open would hold Run past the deadline
	// unless the whole process group is killed.
	bin := fakeClaude(t, "sleep 60 &\nsleep 60\n")
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
	t.Setenv(BinEnv, fakeClaude(t, `echo "`+Version+` (Claude Code)"`))
	if _, err := Lookup(); err != nil {
		t.Fatalf("right version refused: %v", err)
	}
	t.Setenv(BinEnv, fakeClaude(t, `echo "1.0.0 (Claude Code)"`))
	if _, err := Lookup(); err == nil || !strings.Contains(err.Error(), `"1.0.0 (Claude Code)"`) {
		t.Fatalf("wrong version: %v", err)
	}
	t.Setenv(BinEnv, "")
	t.Setenv("LLMGW_CACHE", t.TempDir())
	if _, err := Lookup(); err == nil || !strings.Contains(err.Error(), "install-claude-code.sh") {
		t.Fatalf("no binary: %v", err)
	}
	cached, _ := CachedBinary()
	if !strings.HasSuffix(cached, "/claude-code-"+Version+"/node_modules/@anthropic-ai/claude-code-linux-x64/claude") {
		t.Fatalf("cached path %q", cached)
	}
}

func TestRecorderRecordsAndStreams(t *testing.T) {
	release := make(chan struct{})
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.Error(w, "no", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "event: one\ndata: {}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
		_, _ = io.WriteString(w, "event: two\ndata: {}\n\n")
	}))
	t.Cleanup(target.Close)
	defer close(release)
	rec := NewRecorder(t, target.URL)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", rec.URL+"/v1/messages?beta=true", strings.NewReader(`{"stream": true}`))
	req.Header.Set("X-Api-Key", "sk-k")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// The first event must arrive while the target still holds the rest.
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != "event: one\n" {
		t.Fatalf("first line %q %v", line, err)
	}

	resp2, err := http.Post(rec.URL+"/missing", "application/json", strings.NewReader(`{"stream":false}`))
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()

	ex := rec.Exchanges()
	if len(ex) != 2 {
		t.Fatalf("%d exchanges", len(ex))
	}
	if ex[0].Method != "POST" || ex[0].Path != "/v1/messages" || ex[0].RawQuery != "beta=true" || ex[0].Status != 200 ||
		string(ex[0].Body) != `{"stream": true}` || !ex[0].Stream() || ex[0].Header.Get("X-Api-Key") != "sk-k" {
		t.Fatalf("exchange 0: %+v", ex[0])
	}
	if ex[1].Path != "/missing" || ex[1].Status != 404 || ex[1].Stream() {
		t.Fatalf("exchange 1: %+v", ex[1])
	}
}
