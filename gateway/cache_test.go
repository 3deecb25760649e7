package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
	"sync"
	"testing"
	"time"
)

func cacheTestBool(b bool) *bool { return &b }

func TestCompileCache(t *testing.T) {
	cases := []struct {
		name     string
		cc       *CacheConfig
		redis    bool
		want     cacheSettings
		warnings []string
		err      string
	}{
		{name: "nil block", cc: nil, redis: true,
			want: cacheSettings{enabled: false, ttl: 5 * time.Minute, maxBodyBytes: 1048576}},
		{name: "disabled block", cc: &CacheConfig{}, redis: true,
			want: cacheSettings{enabled: false, ttl: 5 * time.Minute, maxBodyBytes: 1048576}},
		{name: "enabled defaults", cc: &CacheConfig{Enabled: true}, redis: true,
			want: cacheSettings{enabled: true, ttl: 5 * time.Minute, maxBodyBytes: 1048576}},
		{name: "enabled explicit", cc: &CacheConfig{Enabled: true, TTL: "90s", MaxBodyBytes: 4096}, redis: true,
			want: cacheSettings{enabled: true, ttl: 90 * time.Second, maxBodyBytes: 4096}},
		{name: "max body at the 8 MiB limit", cc: &CacheConfig{Enabled: true, MaxBodyBytes: 8388608}, redis: true,
			want: cacheSettings{enabled: true, ttl: 5 * time.Minute, maxBodyBytes: 8388608}},
		{name: "ttl 0s floored with a warning", cc: &CacheConfig{Enabled: true, TTL: "0s"}, redis: true,
			want:     cacheSettings{enabled: true, ttl: time.Second, maxBodyBytes: 1048576},
			warnings: []string{`cache.ttl: "0s" is not positive; entries are stored for 1s (set cache.enabled: false to turn the cache off)`}},
		{name: "ttl negative floored with a warning", cc: &CacheConfig{Enabled: true, TTL: "-5m"}, redis: true,
			want:     cacheSettings{enabled: true, ttl: time.Second, maxBodyBytes: 1048576},
			warnings: []string{`cache.ttl: "-5m" is not positive; entries are stored for 1s (set cache.enabled: false to turn the cache off)`}},
		{name: "ttl sub-second floored silently", cc: &CacheConfig{Enabled: true, TTL: "200ms"}, redis: true,
			want: cacheSettings{enabled: true, ttl: time.Second, maxBodyBytes: 1048576}},
		{name: "ttl 0 while disabled: no warning", cc: &CacheConfig{TTL: "0"}, redis: true,
			want: cacheSettings{enabled: false, ttl: time.Second, maxBodyBytes: 1048576}},
		{name: "enabled without redis", cc: &CacheConfig{Enabled: true, TTL: "1m"}, redis: false,
			want:     cacheSettings{enabled: false, ttl: time.Minute, maxBodyBytes: 1048576},
			warnings: []string{"cache.enabled requires redis; the response cache stays off"}},
		{name: "enabled without redis, ttl 0: one warning", cc: &CacheConfig{Enabled: true, TTL: "0s"}, redis: false,
			want:     cacheSettings{enabled: false, ttl: time.Second, maxBodyBytes: 1048576},
			warnings: []string{"cache.enabled requires redis; the response cache stays off"}},
		{name: "malformed ttl", cc: &CacheConfig{Enabled: true, TTL: "5 minutes"}, redis: true,
			err: `config: cache.ttl: "5 minutes" is not a Go duration (e.g. "30s", "5m")`},
		{name: "malformed ttl while disabled", cc: &CacheConfig{TTL: "soon"}, redis: false,
			err: `config: cache.ttl: "soon" is not a Go duration (e.g. "30s", "5m")`},
		{name: "max body above 8 MiB", cc: &CacheConfig{Enabled: true, MaxBodyBytes: 8388609}, redis: true,
			err: "config: cache.maxBodyBytes: 8388609 is above the maximum of 8388608 (8 MiB)"},
		{name: "max body above 8 MiB while disabled", cc: &CacheConfig{MaxBodyBytes: 9000000}, redis: true,
			err: "config: cache.maxBodyBytes: 9000000 is above the maximum of 8388608 (8 MiB)"},
		{name: "negative max body", cc: &CacheConfig{Enabled: true, MaxBodyBytes: -1}, redis: true,
			err: "config: cache.maxBodyBytes: -1 must not be negative"},
	}
	for i := 0; i < len(cases); i++ {
		tc := cases[i]
		got, warnings, err := compileCache(tc.cc, tc.redis)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%s: error = %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: unexpected error %v", tc.name, err)
			continue
		}
		if got != tc.want {
			t.Errorf("%s: settings = %+v, want %+v", tc.name, got, tc.want)
		}
		if strings.Join(warnings, "|") != strings.Join(tc.warnings, "|") || len(warnings) != len(tc.warnings) {
			t.Errorf("%s: warnings = %q, want %q", tc.name, warnings, tc.warnings)
		}
	}
}

func TestCompileGroupCache(t *testing.T) {
	on := cacheSettings{enabled: true, ttl: 5 * time.Minute, maxBodyBytes: 1048576}
	// Block enabled, Redis missing: compileCache turned it off.
	noRedis := cacheSettings{enabled: false, ttl: 5 * time.Minute, maxBodyBytes: 1048576}
	off := cacheSettings{enabled: false, ttl: 5 * time.Minute, maxBodyBytes: 1048576}
	cases := []struct {
		name    string
		gc      *GroupConfig
		global  cacheSettings
		block   bool
		enabled bool
		ttl     time.Duration
		err     string
	}{
		{name: "nil group config", gc: nil, global: on, block: true, enabled: true, ttl: 5 * time.Minute},
		{name: "inherit on", gc: &GroupConfig{}, global: on, block: true, enabled: true, ttl: 5 * time.Minute},
		{name: "inherit off", gc: &GroupConfig{}, global: off, block: false, enabled: false, ttl: 5 * time.Minute},
		{name: "false opts out", gc: &GroupConfig{Cache: cacheTestBool(false)}, global: on, block: true, enabled: false, ttl: 5 * time.Minute},
		{name: "false without block is fine", gc: &GroupConfig{Cache: cacheTestBool(false)}, global: off, block: false, enabled: false, ttl: 5 * time.Minute},
		{name: "true with block", gc: &GroupConfig{Cache: cacheTestBool(true)}, global: on, block: true, enabled: true, ttl: 5 * time.Minute},
		{name: "true with block but no redis stays off", gc: &GroupConfig{Cache: cacheTestBool(true)}, global: noRedis, block: true, enabled: false, ttl: 5 * time.Minute},
		{name: "true without block", gc: &GroupConfig{Cache: cacheTestBool(true)}, global: off, block: false,
			err: "config: groups.team-a.cache: true requires the top-level cache block to be enabled"},
		{name: "cacheTTL override", gc: &GroupConfig{CacheTTL: "30s"}, global: on, block: true, enabled: true, ttl: 30 * time.Second},
		{name: "cacheTTL with opt-out", gc: &GroupConfig{Cache: cacheTestBool(false), CacheTTL: "1h"}, global: on, block: true, enabled: false, ttl: time.Hour},
		{name: "cacheTTL sub-second floored", gc: &GroupConfig{CacheTTL: "10ms"}, global: on, block: true, enabled: true, ttl: time.Second},
		{name: "cacheTTL malformed", gc: &GroupConfig{CacheTTL: "30"}, global: on, block: true,
			err: `config: groups.team-a.cacheTTL: "30" is not a Go duration (e.g. "30s", "5m")`},
		{name: "cacheTTL zero", gc: &GroupConfig{CacheTTL: "0s"}, global: on, block: true,
			err: `config: groups.team-a.cacheTTL: "0s" must be a positive duration`},
		{name: "cacheTTL negative", gc: &GroupConfig{CacheTTL: "-1m"}, global: on, block: true,
			err: `config: groups.team-a.cacheTTL: "-1m" must be a positive duration`},
		{name: "cacheTTL without block", gc: &GroupConfig{CacheTTL: "30s"}, global: off, block: false,
			err: `config: groups.team-a.cacheTTL: "30s" requires the top-level cache block to be enabled`},
	}
	for i := 0; i < len(cases); i++ {
		tc := cases[i]
		enabled, ttl, err := compileGroupCache("team-a", tc.gc, tc.global, tc.block)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%s: error = %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: unexpected error %v", tc.name, err)
			continue
		}
		if enabled != tc.enabled || ttl != tc.ttl {
			t.Errorf("%s: got (%v, %v), want (%v, %v)", tc.name, enabled, ttl, tc.enabled, tc.ttl)
		}
	}
}

func cacheTestKey(t *testing.T, provider, upstream, requested, endpoint, body string) string {
	t.Helper()
	key, ok := cacheKey(provider, upstream, requested, endpoint, []byte(body))
	if !ok {
		t.Fatalf("cacheKey(%q) not cacheable", body)
	}
	return key
}

func TestCacheKeyCanonical(t *testing.T) {
	base := cacheTestKey(t, "ant", "claude-x", "claude-x", "chat",
		`{"model":"claude-x","messages":[{"role":"user","content":"hi"}],"temperature":0.5}`)
	if !strings.HasPrefix(base, "llmgw:cache:") || len(base) != len("llmgw:cache:")+64 {
		t.Fatalf("key %q: want llmgw:cache: + 64 hex digits", base)
	}
	if strings.Trim(base[len("llmgw:cache:"):], "0123456789abcdef") != "" {
		t.Fatalf("key %q is not lowercase hex", base)
	}
	same := []string{
		// key order and whitespace
		"{ \"temperature\" : 0.5,\n\t\"messages\":[ {\"content\":\"hi\",\"role\":\"user\"} ],\"model\":\"claude-x\" }",
		// user and stream_options removed
		`{"model":"claude-x","user":"alice","messages":[{"role":"user","content":"hi"}],"temperature":0.5}`,
		`{"model":"claude-x","messages":[{"role":"user","content":"hi"}],"temperature":0.5,"stream_options":{"include_usage":true},"user":"bob"}`,
		// escapes that decode to the same string
		`{"model":"claude-x","messages":[{"role":"user","content":"\u0068i"}],"temperature":0.5}`,
		// trailing whitespace after the object
		"{\"model\":\"claude-x\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"temperature\":0.5}\n\n",
	}
	for i := 0; i < len(same); i++ {
		if got := cacheTestKey(t, "ant", "claude-x", "claude-x", "chat", same[i]); got != base {
			t.Errorf("body %d: key %s, want %s", i, got, base)
		}
	}
	// A pinned value (checked independently: SHA-256 over each field
	// prefixed by its 8-byte big-endian length): the derivation must not
	// drift between releases, since replicas on different versions share
	// entries.
	const pinned = "llmgw:cache:67e3461afb53de5aa77c9baa1a62aaa07eeb1e53e0916740ab083e92d3099d07"
	if got := cacheTestKey(t, "p", "m", "m", "embeddings", "{\"user\":\"u\", \"model\":\"m\",\"input\":\"a\"}"); got != pinned {
		t.Fatalf("pinned key %q, want %q", got, pinned)
	}
}

func TestCacheKeyDistinct(t *testing.T) {
	body := `{"model":"claude-x","messages":[{"role":"user","content":"hi"}],"temperature":0.5}`
	base := cacheTestKey(t, "ant", "claude-x", "claude-x", "chat", body)
	type variant struct {
		name                                    string
		provider, upstream, requested, endpoint string
		body                                    string
	}
	variants := []variant{
		{"provider", "ant2", "claude-x", "claude-x", "chat", body},
		{"upstream model", "ant", "claude-y", "claude-x", "chat", body},
		{"requested model alias form", "ant", "claude-x", "ant/claude-x", "chat", body},
		{"endpoint", "ant", "claude-x", "claude-x", "embeddings", body},
		{"field boundary shift 1", "antc", "laude-x", "claude-x", "chat", body},
		{"field boundary shift 2", "ant", "claude-xclaude-x", "", "chat", body},
		{"other value", "ant", "claude-x", "claude-x", "chat", `{"model":"claude-x","messages":[{"role":"user","content":"hi"}],"temperature":0.6}`},
		{"number text 0.50", "ant", "claude-x", "claude-x", "chat", `{"model":"claude-x","messages":[{"role":"user","content":"hi"}],"temperature":0.50}`},
		{"extra field", "ant", "claude-x", "claude-x", "chat", `{"model":"claude-x","messages":[{"role":"user","content":"hi"}],"temperature":0.5,"n":1}`},
		{"nested user kept", "ant", "claude-x", "claude-x", "chat", `{"model":"claude-x","messages":[{"role":"user","content":"hi","user":"x"}],"temperature":0.5}`},
		{"content case", "ant", "claude-x", "claude-x", "chat", `{"model":"claude-x","messages":[{"role":"user","content":"Hi"}],"temperature":0.5}`},
		{"stream flag", "ant", "claude-x", "claude-x", "chat", `{"model":"claude-x","messages":[{"role":"user","content":"hi"}],"temperature":0.5,"stream":false}`},
	}
	seen := map[string]string{base: "base"}
	for i := 0; i < len(variants); i++ {
		v := variants[i]
		got := cacheTestKey(t, v.provider, v.upstream, v.requested, v.endpoint, v.body)
		if prev, dup := seen[got]; dup {
			t.Errorf("%s: key collides with %s", v.name, prev)
		}
		seen[got] = v.name
	}
	// Numbers keep their text: 1 and 1.0 are different keys.
	one := cacheTestKey(t, "p", "m", "m", "chat", `{"n":1}`)
	oneDot := cacheTestKey(t, "p", "m", "m", "chat", `{"n":1.0}`)
	if one == oneDot {
		t.Error(`{"n":1} and {"n":1.0} share a key; json.Number text should be kept`)
	}
	// Large integers are not rounded through float64.
	big1 := cacheTestKey(t, "p", "m", "m", "chat", `{"seed":9007199254740993}`)
	big2 := cacheTestKey(t, "p", "m", "m", "chat", `{"seed":9007199254740992}`)
	if big1 == big2 {
		t.Error("seeds 2^53+1 and 2^53 share a key")
	}
}

func TestCacheKeyNotCacheable(t *testing.T) {
	bodies := []string{
		``,
		`   `,
		`[]`,
		`"x"`,
		`42`,
		`null`,
		`{"model":"m"`,
		`{"model":"m"} {"model":"n"}`,
		`{"model":"m"}x`,
		"{\"model\":\"m\xff\"}",
		`{"model":"\ud800"}`,
		`{"model":"m","messages":[{"content":"\ufffd"}]}`,
	}
	for i := 0; i < len(bodies); i++ {
		if key, ok := cacheKey("p", "m", "m", "chat", []byte(bodies[i])); ok {
			t.Errorf("body %q: cacheable with key %s, want not cacheable", bodies[i], key)
		}
	}
	if _, ok := cacheKey("p", "m", "m", "images", []byte(`{"model":"m"}`)); ok {
		t.Error("endpoint images accepted; only chat and embeddings are cacheable")
	}
	// A valid surrogate pair (Python's ensure_ascii emoji) stays cacheable.
	if _, ok := cacheKey("p", "m", "m", "chat", []byte(`{"content":"\ud83d\ude00"}`)); !ok {
		t.Error("escaped surrogate pair not cacheable")
	}
}

// cacheTestStore is an in-memory store.Blob that can be made to fail.
type cacheTestStore struct {
	mu     sync.Mutex
	values map[string][]byte
	ttls   map[string]time.Duration
	fail   error
	sets   int
	gets   int
}

func newCacheTestStore() *cacheTestStore {
	return &cacheTestStore{values: map[string][]byte{}, ttls: map[string]time.Duration{}}
}

func (s *cacheTestStore) GetBlob(ctx context.Context, key string) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gets++
	if s.fail != nil {
		return nil, false, s.fail
	}
	v, ok := s.values[key]
	if !ok {
		return nil, false, nil
	}
	out := make([]byte, len(v))
	copy(out, v)
	return out, true, nil
}

func (s *cacheTestStore) GetBlobRenew(ctx context.Context, key string, ttl time.Duration) ([]byte, bool, error) {
	return s.GetBlob(ctx, key)
}

func (s *cacheTestStore) SetBlob(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sets++
	if s.fail != nil {
		return s.fail
	}
	v := make([]byte, len(value))
	copy(v, value)
	s.values[key] = v
	s.ttls[key] = ttl
	return nil
}

func (s *cacheTestStore) setFail(err error) {
	s.mu.Lock()
	s.fail = err
	s.mu.Unlock()
}

// cacheTestLog is a goroutine-safe log sink.
type cacheTestLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *cacheTestLog) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *cacheTestLog) lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := strings.TrimRight(b.buf.String(), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func TestResponseCacheHitMiss(t *testing.T) {
	store := newCacheTestStore()
	logs := &cacheTestLog{}
	c := newResponseCache(store, newLogger("t", logs), 64)
	ctx := context.Background()
	if _, body, ok := c.lookup(ctx, "k1"); ok || body != nil {
		t.Fatalf("empty store: lookup = %q, %v; want miss", body, ok)
	}
	c.save(ctx, "k1", "", []byte(`{"id":"x"}`), 2*time.Minute)
	_, body, ok := c.lookup(ctx, "k1")
	if !ok || string(body) != `{"id":"x"}` {
		t.Fatalf("lookup after save = %q, %v", body, ok)
	}
	if store.ttls["k1"] != 2*time.Minute {
		t.Errorf("stored ttl %v, want 2m", store.ttls["k1"])
	}
	if want := "llmgw-cache/1 10 "; !strings.HasPrefix(string(store.values["k1"]), want) {
		t.Errorf("stored value %q, want prefix %q", store.values["k1"], want)
	}
	// Content-Type round trip.
	c.save(ctx, "k2", "application/json; charset=utf-8", []byte(`{"a":1}`), time.Minute)
	ct, body2, ok2 := c.lookup(ctx, "k2")
	if !ok2 || ct != "application/json; charset=utf-8" || string(body2) != `{"a":1}` {
		t.Fatalf("lookupTyped = %q, %q, %v", ct, body2, ok2)
	}
	ct, _, ok2 = c.lookup(ctx, "k1")
	if !ok2 || ct != "" {
		t.Errorf("untyped entry: content type %q, %v; want \"\", true", ct, ok2)
	}
	// A header-injecting Content-Type is dropped, the body still stored.
	c.save(ctx, "k3", "text/plain\r\nX-Evil: 1", []byte(`{}`), time.Minute)
	ct, body3, ok3 := c.lookup(ctx, "k3")
	if !ok3 || ct != "" || string(body3) != `{}` {
		t.Errorf("control-char content type: got %q, %q, %v", ct, body3, ok3)
	}
	// Empty body round-trips.
	c.save(ctx, "k4", "", []byte{}, time.Minute)
	if _, body4, ok4 := c.lookup(ctx, "k4"); !ok4 || len(body4) != 0 {
		t.Errorf("empty body: %q, %v", body4, ok4)
	}
	// The store's TTL floor.
	c.save(ctx, "k5", "", []byte("x"), 0)
	if store.ttls["k5"] != time.Second {
		t.Errorf("ttl 0 stored as %v, want 1s", store.ttls["k5"])
	}
	c.save(ctx, "k6", "", []byte("x"), -time.Hour)
	if store.ttls["k6"] != time.Second {
		t.Errorf("negative ttl stored as %v, want 1s", store.ttls["k6"])
	}
	if l := logs.lines(); len(l) != 0 {
		t.Errorf("unexpected log lines %q", l)
	}
}

func TestResponseCacheOversized(t *testing.T) {
	store := newCacheTestStore()
	c := newResponseCache(store, newLogger("t", &cacheTestLog{}), 8)
	ctx := context.Background()
	c.save(ctx, "at-limit", "", []byte("12345678"), time.Minute)
	c.save(ctx, "over", "", []byte("123456789"), time.Minute)
	if store.sets != 1 {
		t.Fatalf("SetBlob calls = %d, want 1 (the oversized body must not reach the store)", store.sets)
	}
	if _, _, ok := c.lookup(ctx, "at-limit"); !ok {
		t.Error("body at the limit not cached")
	}
	if _, _, ok := c.lookup(ctx, "over"); ok {
		t.Error("oversized body cached")
	}
	// An oversized value already in the store (another replica with a
	// larger limit) is a miss here.
	store.values["big"] = encodeCacheValue("", []byte("0123456789"))
	if _, _, ok := c.lookup(ctx, "big"); ok {
		t.Error("stored value above this replica's limit served")
	}
	// maxBodyBytes <= 0 means the 1 MiB default.
	d := newResponseCache(store, nil, 0)
	if d.maxBodyBytes != 1048576 {
		t.Errorf("default maxBodyBytes %d", d.maxBodyBytes)
	}
}

func TestResponseCacheCorrupted(t *testing.T) {
	store := newCacheTestStore()
	logs := &cacheTestLog{}
	c := newResponseCache(store, newLogger("t", logs), 1024)
	ctx := context.Background()
	good := encodeCacheValue("application/json", []byte(`{"id":"x"}`))
	store.values["good"] = good
	if _, _, ok := c.lookup(ctx, "good"); !ok {
		t.Fatal("well-formed value missed")
	}
	flipped := append([]byte(nil), good...)
	flipped[len(flipped)-2] ^= 0x01
	corrupt := map[string][]byte{
		"empty":         {},
		"raw body":      []byte(`{"id":"x"}`),
		"no newline":    []byte("llmgw-cache/1 10 00000000 application/json"),
		"truncated":     good[:len(good)-1],
		"extra byte":    append(append([]byte(nil), good...), 'x'),
		"flipped bit":   flipped,
		"other version": append([]byte("llmgw-cache/2"), good[len("llmgw-cache/1"):]...),
		"bad length":    []byte("llmgw-cache/1 x 00000000 \n"),
		"short crc":     []byte("llmgw-cache/1 0 0000000 \n"),
		"missing field": []byte("llmgw-cache/1 0\n"),
		"wrong length":  []byte("llmgw-cache/1 3 " + fmt.Sprintf("%08x", crc32.ChecksumIEEE([]byte("ab"))) + " \nab"),
		"cr in type":    append([]byte("llmgw-cache/1 0 00000000 a\r\n"), []byte{}...),
	}
	for name, v := range corrupt {
		store.values[name] = v
		if _, body, ok := c.lookup(ctx, name); ok {
			t.Errorf("%s: corrupted value served as %q", name, body)
		}
	}
	if l := logs.lines(); len(l) != 0 {
		t.Errorf("corruption logged as store error: %q", l)
	}
}

func TestResponseCacheStoreErrors(t *testing.T) {
	store := newCacheTestStore()
	logs := &cacheTestLog{}
	clock := &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	c := newResponseCache(store, newLogger("t", logs), 1024)
	c.now = clock.Now
	ctx := context.Background()
	c.save(ctx, "k", "", []byte("v"), time.Minute)
	store.setFail(errors.New("dial tcp 10.0.0.1:6379: connection refused"))

	if _, _, ok := c.lookup(ctx, "k"); ok {
		t.Fatal("store error served as a hit")
	}
	c.save(ctx, "k2", "", []byte("v"), time.Minute) // no-op, no panic
	clock.Add(29 * time.Second)
	if _, _, ok := c.lookup(ctx, "k"); ok {
		t.Fatal("store error served as a hit")
	}
	l := logs.lines()
	if len(l) != 1 {
		t.Fatalf("log lines within 30s = %d, want 1: %q", len(l), l)
	}
	if !strings.Contains(l[0], "WARN response cache: store read failed, treated as a miss: dial tcp 10.0.0.1:6379: connection refused") ||
		strings.Contains(l[0], "more store errors") {
		t.Errorf("first line %q", l[0])
	}
	clock.Add(time.Second) // 30s after the first line
	c.save(ctx, "k3", "", []byte("v"), time.Minute)
	l = logs.lines()
	if len(l) != 2 {
		t.Fatalf("log lines after 30s = %d, want 2: %q", len(l), l)
	}
	if !strings.Contains(l[1], "store write failed, treated as a miss: dial tcp 10.0.0.1:6379: connection refused (2 more store errors since the previous report)") {
		t.Errorf("second line %q", l[1])
	}
	// Recovery: the store works again and serves what it holds.
	store.setFail(nil)
	if _, body, ok := c.lookup(ctx, "k"); !ok || string(body) != "v" {
		t.Errorf("after recovery lookup = %q, %v", body, ok)
	}
	// A cancelled request context is the client leaving, not a store
	// fault: still a miss, never logged.
	store.setFail(context.Canceled)
	cctx, cancel := context.WithCancel(context.Background())
	cancel()
	clock.Add(time.Hour)
	if _, _, ok := c.lookup(cctx, "k"); ok {
		t.Error("error on a cancelled context served as a hit")
	}
	if l = logs.lines(); len(l) != 2 {
		t.Errorf("cancelled-context error logged: %q", l)
	}
	// A nil logger or a nil cache never panics.
	n := newResponseCache(store, nil, 0)
	n.save(ctx, "x", "", []byte("v"), time.Minute)
	if _, _, ok := n.lookup(ctx, "x"); ok {
		t.Error("nil-logger cache: hit on a failing store")
	}
	var nilCache *responseCache
	nilCache.save(ctx, "x", "", []byte("v"), time.Minute)
	if _, _, ok := nilCache.lookup(ctx, "x"); ok {
		t.Error("nil cache hit")
	}
}

func TestResponseCacheStoreErrorsConcurrent(t *testing.T) {
	store := newCacheTestStore()
	store.setFail(errors.New("boom"))
	logs := &cacheTestLog{}
	clock := &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	c := newResponseCache(store, newLogger("t", logs), 1024)
	c.now = clock.Now
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("panic: %v", r)
				}
			}()
			for j := 0; j < 20; j++ {
				_, _, _ = c.lookup(context.Background(), "k")
				c.save(context.Background(), "k", "", []byte("v"), time.Minute)
			}
		}()
	}
	wg.Wait()
	if l := logs.lines(); len(l) != 1 {
		t.Fatalf("concurrent errors logged %d lines, want 1: %q", len(l), l)
	}
	clock.Add(31 * time.Second)
	_, _, _ = c.lookup(context.Background(), "k")
	l := logs.lines()
	if len(l) != 2 || !strings.Contains(l[1], "(639 more store errors since the previous report)") {
		t.Fatalf("after 31s: %q", l)
	}
}
