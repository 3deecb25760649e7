package integration_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmgateway/llmgateway/integration/mockupstream"
)

// Fault matrix, the configuration: the users file corrupted, then
// half-written (an editor writing in place, caught mid-write), then
// completed, under traffic (README "users.file": a bad edit keeps the
// last good set and logs why once; the file is checked at most every
// 5 s). TestBinaryUsersFileEditUnderTraffic covers a clean edit.

const (
	ufAdminKey = "sk-uf-ops"
	ufBobKey   = "sk-uf-v1-bob"   // only in the first set
	ufCarolKey = "sk-uf-v2-carol" // only in the second
)

// ufSet is one users file: its users and their keys.
type ufSet map[string]string

var (
	ufFirst  = ufSet{"alice": "sk-uf-v1-alice", "bob": ufBobKey}
	ufSecond = ufSet{"alice": "sk-uf-v2-alice", "carol": ufCarolKey}
)

func (s ufSet) json(t *testing.T) []byte {
	t.Helper()
	var users []map[string]interface{}
	for _, name := range s.names() {
		users = append(users, map[string]interface{}{"name": name, "group": "g", "apiKey": s[name]})
	}
	raw, err := json.MarshalIndent(map[string]interface{}{"users": users}, "", "  ")
	require.NoError(t, err)
	return raw
}

func (s ufSet) names() []string {
	var out []string
	for n := range s {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// active is the set's users as the admin API lists them (the inline
// admin, "ops", included).
func (s ufSet) active() string {
	names := append([]string{"ops"}, s.names()...)
	sort.Strings(names)
	return strings.Join(names, ",")
}

// ufObservation is one request and the user set it saw.
type ufObservation struct {
	what       string // "usage", "bob", "carol"
	set        string // usage: the active users; else the status
	start, end time.Time
}

// ufWriteInPlace truncates path and writes data into it, as an editor
// that saves in place does (no rename: a reader can see it half-done).
func ufWriteInPlace(t *testing.T, path string, data []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0o600)
	require.NoError(t, err)
	_, err = f.Write(data)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

func ufAppend(t *testing.T, path string, data []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o600)
	require.NoError(t, err)
	_, err = f.Write(data)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// A corrupted users file, then one half-written, then the same file
// completed, each under traffic: while the file is bad every request
// sees the last good set, the gateway logs why once per distinct
// problem, and the completed edit is picked up at the next check. No
// request sees any set but the old or the new one, and once a request
// has seen the new one no later request sees the old.
func TestUsersFileCorruptAndHalfWritten(t *testing.T) {
	bin := buildGatewayBinary(t)
	mock := mockupstream.New(mockupstream.Options{Models: []string{"m1"}, RecordLimit: -1})
	up := httptest.NewServer(mock)
	t.Cleanup(up.Close)

	usersPath := filepath.Join(t.TempDir(), "users.json")
	require.NoError(t, os.WriteFile(usersPath, ufFirst.json(t), 0o600))
	cfg := map[string]interface{}{
		"providers": map[string]interface{}{"mock": rlProvider(up.URL, "m1")},
		"groups":    map[string]interface{}{"g": map[string]interface{}{"providers": []string{}}},
		"users": map[string]interface{}{
			"inline": []map[string]interface{}{{"name": "ops", "group": "g", "apiKey": ufAdminKey, "admin": true}},
			"file":   usersPath,
		},
		"admin":          map[string]interface{}{"enabled": true},
		"trustedProxies": []string{"127.0.0.1"},
	}
	gw := startGateway(t, bin, cfg)
	client := rlHTTPClient()

	var mu sync.Mutex
	var seen []ufObservation
	var probes atomic.Int64
	observe := func(what string) ufObservation {
		o := ufObservation{what: what, start: time.Now()}
		switch what {
		case "usage":
			r := rlDo(client, http.MethodGet, gw.URL+"/admin/api/usage", ufAdminKey, nil)
			o.set = "status " + http.StatusText(r.status)
			if r.err == nil && r.status == http.StatusOK {
				var u adUsage
				if json.Unmarshal(r.body, &u) == nil {
					var names []string
					for _, row := range u.Users {
						names = append(names, row.Name)
					}
					sort.Strings(names)
					o.set = strings.Join(names, ",")
				}
			} else if r.err != nil {
				o.set = r.err.Error()
			}
		case "bob", "carol":
			key := ufBobKey
			if what == "carol" {
				key = ufCarolKey
			}
			// The key that is not (or no longer) valid fails every time:
			// each probe comes from its own client address, so the
			// failed-authentication throttle (per client) never trips.
			req, err := http.NewRequest(http.MethodGet, gw.URL+"/v1/models", nil)
			if err != nil {
				o.set = err.Error()
				break
			}
			req.Header.Set("Authorization", "Bearer "+key)
			n := probes.Add(1)
			req.Header.Set("X-Forwarded-For", fmt.Sprintf("10.%d.%d.%d", n>>16&255, n>>8&255, n&255))
			resp, err := client.Do(req)
			if err != nil {
				o.set = err.Error()
				break
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			o.set = http.StatusText(resp.StatusCode)
		}
		o.end = time.Now()
		mu.Lock()
		seen = append(seen, o)
		mu.Unlock()
		return o
	}
	require.Equal(t, ufFirst.active(), observe("usage").set)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, what := range []string{"usage", "bob", "carol"} {
		wg.Add(1)
		go func(what string) {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				observe(what)
				time.Sleep(20 * time.Millisecond)
			}
		}(what)
	}
	stopTraffic := func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	}
	t.Cleanup(stopTraffic)

	// awaitLog waits (a bounded poll of the gateway's output) for a line
	// holding s; the file is checked at most every 5 s.
	awaitLog := func(s, what string) {
		rtEventually(t, 20*time.Second, 50*time.Millisecond, what, func() bool {
			return len(logLines(gw.Logs(), s)) > 0
		})
	}
	const notReloaded = "users file not reloaded, keeping the previous 3 users: " + "%s is not a valid users file: "

	// 1. Corrupted: the second set with a comma missing.
	second := ufSecond.json(t)
	corrupt := []byte(strings.Replace(string(second), `",`, `"`, 1))
	ufWriteInPlace(t, usersPath, corrupt)
	awaitLog(fmt.Sprintf(notReloaded, usersPath)+"invalid character", "the corrupted file refused")

	// 2. Half-written: the first half of the second set, then (once the
	// gateway has seen it) the rest.
	ufWriteInPlace(t, usersPath, second[:len(second)/2])
	awaitLog(fmt.Sprintf(notReloaded, usersPath)+"unexpected EOF", "the half-written file refused")
	ufAppend(t, usersPath, second[len(second)/2:])
	completed := time.Now()
	awaitLog("users file "+usersPath+" reloaded: 3 users", "the completed file loaded")
	loaded := time.Now()

	// The new set answers; a few more rounds of traffic, then stop.
	rtEventually(t, 5*time.Second, 20*time.Millisecond, "traffic after the reload", func() bool {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, o := range seen {
			if o.start.After(loaded) {
				n++
			}
		}
		return n >= 15
	})
	stopTraffic()

	// Every request saw the old set or the new one; until the completed
	// file was written (corrupt and half-written phases) the old one;
	// after the reload was logged, the new one; per client, never the
	// old after the new.
	want := map[string][2]string{
		"usage": {ufFirst.active(), ufSecond.active()},
		"bob":   {http.StatusText(http.StatusOK), http.StatusText(http.StatusUnauthorized)},
		"carol": {http.StatusText(http.StatusUnauthorized), http.StatusText(http.StatusOK)},
	}
	sawNew := map[string]bool{}
	counts := map[string]int{}
	for _, o := range seen {
		w := want[o.what]
		switch o.set {
		case w[0]:
			counts[o.what+" old"]++
			assert.False(t, sawNew[o.what], "%s saw the old set after the new one (request at %v)", o.what, o.start.Format(time.RFC3339Nano))
			assert.True(t, o.start.Before(loaded), "%s saw the old set after the reload was logged", o.what)
		case w[1]:
			counts[o.what+" new"]++
			sawNew[o.what] = true
			assert.True(t, o.end.After(completed), "%s saw the new set before the completed file was written", o.what)
		default:
			t.Errorf("%s saw neither set: %q (want %q or %q)", o.what, o.set, w[0], w[1])
		}
	}
	t.Logf("observations: %v; reload logged %v after the file was completed", counts, loaded.Sub(completed).Round(time.Millisecond))
	for what := range want {
		assert.True(t, sawNew[what], "%s never saw the new set", what)
		assert.Greater(t, counts[what+" old"], 0, "%s never saw the old set", what)
	}

	// Each problem logged once (a check that caught the file empty, mid
	// write, would add its own line), the reload once.
	logs := gw.Logs()
	refused := logLines(logs, "users file not reloaded")
	distinct := map[string]bool{}
	for _, line := range refused {
		msg := line[strings.Index(line, "users file not reloaded"):]
		assert.False(t, distinct[msg], "logged twice: %s", msg)
		distinct[msg] = true
	}
	assert.GreaterOrEqual(t, len(refused), 2, "%s", strings.Join(refused, "\n"))
	assert.Len(t, logLines(logs, "reloaded: 3 users"), 1)
	for _, set := range []ufSet{ufFirst, ufSecond} {
		for _, key := range set {
			assert.NotContains(t, logs, key, "a user key leaked into the gateway log")
		}
	}
}
