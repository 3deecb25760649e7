package gateway

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// usersFileFixture is a gateway whose users come from inline config and a
// users file, with a controllable clock.
type usersFileFixture struct {
	t     *testing.T
	path  string
	g     *Gateway
	srv   *httptest.Server
	logs  *syncBuffer
	clock time.Time
	mtime time.Time
}

func newUsersFileFixture(t *testing.T, inline, file string) *usersFileFixture {
	t.Helper()
	up := okUpstream(t)
	f := &usersFileFixture{t: t, path: filepath.Join(t.TempDir(), "users.json"), mtime: time.Unix(1700000000, 0)}
	f.write(file)
	cfg, err := DecodeConfigJSON([]byte(`{"providers":{"p":{"type":"openai","baseUrl":"` + up.URL + `","models":["m1"]}},
		"groups":{"g":{},"h":{}},"users":{"file":"` + f.path + `","inline":` + inline + `}}`))
	if err != nil {
		t.Fatal(err)
	}
	f.logs = &syncBuffer{}
	f.g, err = New(nil, cfg, Options{LogOutput: f.logs})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	f.clock = time.Now()
	f.g.users.now = func() time.Time { return f.clock }
	f.srv = httptest.NewServer(f.g)
	t.Cleanup(func() { f.srv.Close() })
	return f
}

// write replaces the file and gives it a new, distinct mtime.
func (f *usersFileFixture) write(content string) {
	f.t.Helper()
	if err := os.WriteFile(f.path, []byte(content), 0o600); err != nil {
		f.t.Fatal(err)
	}
	f.mtime = f.mtime.Add(time.Minute)
	if err := os.Chtimes(f.path, f.mtime, f.mtime); err != nil {
		f.t.Fatal(err)
	}
}

func (f *usersFileFixture) status(key string) int {
	f.t.Helper()
	status, _, _ := do(f.t, "GET", f.srv.URL+"/v1/models", key, "")
	return status
}

func (f *usersFileFixture) expect(key string, want int) {
	f.t.Helper()
	if got := f.status(key); got != want {
		f.t.Fatalf("key %s: status %d, want %d (logs: %s)", key, got, want, f.logs)
	}
}

func TestUsersFileMergedOverInline(t *testing.T) {
	f := newUsersFileFixture(t,
		`[{"name":"alice","group":"g","apiKey":"sk-inline-alice"},{"name":"bob","group":"g","apiKey":"sk-inline-bob"}]`,
		`{"users":[{"name":"alice","group":"h","apiKey":"sk-file-alice"},{"name":"carol","group":"g","apiKey":"sk-file-carol"}]}`)
	f.expect("sk-inline-alice", 401) // replaced by the file's alice
	f.expect("sk-file-alice", 200)
	f.expect("sk-inline-bob", 200)
	f.expect("sk-file-carol", 200)
}

func TestUsersFileHotReload(t *testing.T) {
	f := newUsersFileFixture(t, `[]`, `{"users":[{"name":"alice","group":"g","apiKey":"sk-v1"}]}`)
	f.expect("sk-v1", 200)

	f.write(`{"users":[{"name":"alice","group":"g","apiKey":"sk-v2"}]}`)
	f.clock = f.clock.Add(usersFileCheckInterval - time.Second)
	f.expect("sk-v2", 401) // inside the check interval: not looked at yet
	f.expect("sk-v1", 200)

	f.clock = f.clock.Add(time.Second)
	f.expect("sk-v2", 200) // this request's check reloads first
	f.expect("sk-v1", 401)
	if !strings.Contains(f.logs.String(), "users file "+f.path+" reloaded: 1 users") {
		t.Fatalf("reload not logged: %s", f.logs)
	}
}

func TestUsersFileBadEditKeepsLastGood(t *testing.T) {
	bad := map[string]string{
		"malformed":     `{"users":[`,
		"unknown_group": `{"users":[{"name":"alice","group":"nope","apiKey":"sk-v2"}]}`,
		"duplicate_key": `{"users":[{"name":"alice","group":"g","apiKey":"sk-v2"},{"name":"bob","group":"g","apiKey":"sk-v2"}]}`,
		"unknown_key":   `{"users":[{"name":"alice","group":"g","apiKey":"sk-v2","grop":"g"}]}`,
		"no_users_list": `{}`,
		"empty_file":    ``,
	}
	for name, content := range bad {
		t.Run(name, func(t *testing.T) {
			f := newUsersFileFixture(t, `[]`, `{"users":[{"name":"alice","group":"g","apiKey":"sk-v1"}]}`)
			f.write(content)
			f.clock = f.clock.Add(usersFileCheckInterval)
			f.expect("sk-v1", 200)
			f.expect("sk-v2", 401)
			if !strings.Contains(f.logs.String(), "users file not reloaded, keeping the previous 1 users") {
				t.Fatalf("failed reload not logged: %s", f.logs)
			}
			if strings.Contains(f.logs.String(), "sk-v") {
				t.Fatalf("log leaks a key: %s", f.logs)
			}
			// Fixing the file is picked up on the next check.
			f.write(`{"users":[{"name":"alice","group":"g","apiKey":"sk-v3"}]}`)
			f.clock = f.clock.Add(usersFileCheckInterval)
			f.expect("sk-v3", 200)
		})
	}
}

func TestUsersFileDeletedKeepsLastGood(t *testing.T) {
	f := newUsersFileFixture(t, `[]`, `{"users":[{"name":"alice","group":"g","apiKey":"sk-v1"}]}`)
	if err := os.Remove(f.path); err != nil {
		t.Fatal(err)
	}
	f.clock = f.clock.Add(usersFileCheckInterval)
	f.expect("sk-v1", 200)
	if !strings.Contains(f.logs.String(), "no such file") {
		t.Fatalf("missing file not logged: %s", f.logs)
	}
}

// File users' env: keys re-resolve on every reload; inline users' keys
// were resolved once, at construction.
func TestUsersFileReResolvesSecrets(t *testing.T) {
	setenv(t, "LLMGW_TEST_FILE_USER", "sk-env-1")
	setenv(t, "LLMGW_TEST_INLINE_USER", "sk-inline-1")
	f := newUsersFileFixture(t, `[{"name":"bob","group":"g","apiKey":"env:LLMGW_TEST_INLINE_USER"}]`,
		`{"users":[{"name":"alice","group":"g","apiKey":"env:LLMGW_TEST_FILE_USER"}]}`)
	f.expect("sk-env-1", 200)
	setenv(t, "LLMGW_TEST_FILE_USER", "sk-env-2")
	setenv(t, "LLMGW_TEST_INLINE_USER", "sk-inline-2")
	f.write(`{"users":[{"name":"alice","group":"g","apiKey":"env:LLMGW_TEST_FILE_USER"}]}`)
	f.clock = f.clock.Add(usersFileCheckInterval)
	f.expect("sk-env-2", 200)
	f.expect("sk-env-1", 401)
	f.expect("sk-inline-1", 200)
	f.expect("sk-inline-2", 401)
}

// A reload already running is skipped, not waited for.
func TestUsersFileReloadInProgressIsSkipped(t *testing.T) {
	f := newUsersFileFixture(t, `[]`, `{"users":[{"name":"alice","group":"g","apiKey":"sk-v1"}]}`)
	f.write(`{"users":[{"name":"alice","group":"g","apiKey":"sk-v2"}]}`)
	f.clock = f.clock.Add(usersFileCheckInterval)
	f.g.users.reloading.Store(true) // another request is reloading
	f.expect("sk-v1", 200)
	f.expect("sk-v2", 401)
	f.g.users.reloading.Store(false)
	f.expect("sk-v2", 200)
}

func TestUsersFileConstructionErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name, path, inline, want string
	}{
		{"missing", filepath.Join(dir, "absent.json"), `[]`, "config: users.file: cannot read " + filepath.Join(dir, "absent.json") + ": no such file"},
		{"malformed", write("bad.json", `{"users":`), `[]`, "is not a valid users file"},
		{"unknown_group", write("group.json", `{"users":[{"name":"x","group":"nope","apiKey":"sk-1"}]}`), `[]`, `users.file[0] (x): unknown group "nope"`},
		{"key_shared_with_inline", write("dup.json", `{"users":[{"name":"x","group":"g","apiKey":"sk-same"}]}`),
			`[{"name":"y","group":"g","apiKey":"sk-same"}]`, `users.file[0] (x).apiKey: duplicate key (user "y" has the same key)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newGatewayFromConfig(t, `{"providers":{"p":{"type":"openai"}},"groups":{"g":{}},
				"users":{"file":"`+tc.path+`","inline":`+tc.inline+`}}`)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "sk-same") {
				t.Fatalf("error leaks a key: %v", err)
			}
		})
	}
}

// TestUsersFileReloadsOnContentChangeAlone: a key rotated to one of the
// same length, with the file's mtime put back (as some tools do), is
// still picked up at the next check, by the content's hash.
func TestUsersFileReloadsOnContentChangeAlone(t *testing.T) {
	f := newUsersFileFixture(t, `[]`, `{"users":[{"name":"alice","group":"g","apiKey":"sk-v1"}]}`)
	f.expect("sk-v1", 200)
	before, err := os.Stat(f.path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.path, []byte(`{"users":[{"name":"alice","group":"g","apiKey":"sk-v2"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(f.path, before.ModTime(), before.ModTime()); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(f.path)
	if err != nil || !after.ModTime().Equal(before.ModTime()) || after.Size() != before.Size() {
		t.Fatalf("the fixture did not keep mtime and size: %v %v", after, err)
	}
	f.clock = f.clock.Add(usersFileCheckInterval)
	f.expect("sk-v2", 200)
	f.expect("sk-v1", 401)
	// An unchanged file is not reloaded (nor logged) again.
	f.clock = f.clock.Add(usersFileCheckInterval)
	f.expect("sk-v2", 200)
	if n := strings.Count(f.logs.String(), "reloaded"); n != 1 {
		t.Fatalf("reloaded %d times, want 1:\n%s", n, f.logs)
	}
}
