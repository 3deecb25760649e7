package store

import (
	"bufio"
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// --- against the in-process fake server ---

func testRedisStore(t *testing.T, addr string) *Redis {
	return &Redis{c: testRESPClient(t, respConfig{address: addr})}
}

func TestRedisStoreApplyCommands(t *testing.T) {
	f := startFakeRESP(t, &fakeRESP{})
	s := testRedisStore(t, f.addr)
	ctx := context.Background()
	incrs := []Incr{
		{Key: "a", Delta: 5, TTL: 60*time.Second + 500*time.Millisecond},
		{Key: "b", Delta: 1, TTL: 0},
		{Key: "a", Delta: 2, TTL: 2 * time.Minute},
	}
	iv, gv, err := s.Apply(ctx, incrs, []string{"a", "c", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(iv, []int64{5, 1, 7}) || !reflect.DeepEqual(gv, []int64{7, 0, 1}) {
		t.Fatalf("apply = %v %v, want [5 1 7] [7 0 1]", iv, gv)
	}
	want := []string{"INCRBY a 5", "EXPIRE a 61", "INCRBY b 1", "EXPIRE b 1", "INCRBY a 2", "EXPIRE a 120", "MGET a c b"}
	if got := f.connLog(0); !reflect.DeepEqual(got, want) {
		t.Fatalf("commands:\n got %q\nwant %q", got, want)
	}
	if got := f.connReads(0); !reflect.DeepEqual(got, []int{7}) {
		t.Fatalf("commands per read %v, want [7]: one pipelined write", got)
	}
	if n := s.c.roundTripCount(); n != 1 {
		t.Fatalf("roundTripCount = %d, want 1", n)
	}
	if f.ttl("0", "a") != "120" || f.ttl("0", "b") != "1" {
		t.Fatalf("ttls a=%q b=%q", f.ttl("0", "a"), f.ttl("0", "b"))
	}

	// Nothing to do: no round trip.
	iv, gv, err = s.Apply(ctx, nil, nil)
	if err != nil || iv != nil || gv != nil {
		t.Fatalf("empty apply = %v %v %v", iv, gv, err)
	}
	if n := s.c.roundTripCount(); n != 1 {
		t.Fatalf("roundTripCount = %d after an empty apply", n)
	}
	// Gets only: one MGET. Incrs only: no MGET.
	iv, gv, err = s.Apply(ctx, nil, []string{"b", "zz"})
	if err != nil || len(iv) != 0 || !reflect.DeepEqual(gv, []int64{1, 0}) {
		t.Fatalf("gets-only apply = %v %v %v", iv, gv, err)
	}
	iv, gv, err = s.Apply(ctx, []Incr{{Key: "n", Delta: -3, TTL: time.Nanosecond}}, nil)
	if err != nil || !reflect.DeepEqual(iv, []int64{-3}) || gv != nil {
		t.Fatalf("incrs-only apply = %v %v %v", iv, gv, err)
	}
	want = append(want, "MGET b zz", "INCRBY n -3", "EXPIRE n 1")
	if got := f.connLog(0); !reflect.DeepEqual(got, want) {
		t.Fatalf("commands:\n got %q\nwant %q", got, want)
	}
	if n := s.c.roundTripCount(); n != 3 {
		t.Fatalf("roundTripCount = %d, want 3", n)
	}
}

func TestRedisStoreErrorReplies(t *testing.T) {
	const secretValue = "not-a-number-VALUE"
	f := startFakeRESP(t, &fakeRESP{})
	s := testRedisStore(t, f.addr)
	ctx := context.Background()
	if err := s.SetBlob(ctx, "str", []byte(secretValue), time.Minute); err != nil {
		t.Fatal(err)
	}
	_, _, err := s.Apply(ctx, []Incr{{Key: "str", Delta: 1, TTL: time.Minute}}, nil)
	if err == nil || err.Error() != "redis: INCRBY: ERR value is not an integer or out of range" {
		t.Fatalf("INCRBY on a string: %v", err)
	}
	_, _, err = s.Apply(ctx, nil, []string{"ok", "str"})
	if err == nil || !strings.Contains(err.Error(), "MGET") || strings.Contains(err.Error(), secretValue) {
		t.Fatalf("MGET of a non-integer: %v", err)
	}

	cases := []struct {
		name, reply string
		call        func() error
		want        string
	}{
		{"EXPIRE", "-ERR boom\r\n", func() error {
			_, _, err := s.Apply(ctx, []Incr{{Key: "x", Delta: 1, TTL: time.Second}}, nil)
			return err
		}, "redis: EXPIRE: ERR boom"},
		{"INCRBY", "+OK\r\n", func() error {
			_, _, err := s.Apply(ctx, []Incr{{Key: "x", Delta: 1, TTL: time.Second}}, nil)
			return err
		}, "redis: INCRBY: unexpected reply type '+'"},
		{"MGET", ":1\r\n", func() error {
			_, _, err := s.Apply(ctx, nil, []string{"x"})
			return err
		}, "redis: MGET: unexpected reply shape"},
		{"MGET", "*1\r\n:5\r\n", func() error {
			_, _, err := s.Apply(ctx, nil, []string{"x"})
			return err
		}, "redis: MGET: unexpected element type ':'"},
		{"MGET", "*2\r\n$1\r\n1\r\n$1\r\n2\r\n", func() error {
			_, _, err := s.Apply(ctx, nil, []string{"x"})
			return err
		}, "redis: MGET: unexpected reply shape"},
		{"GET", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", func() error {
			_, _, err := s.GetBlob(ctx, "x")
			return err
		}, "redis: GET: WRONGTYPE Operation against a key holding the wrong kind of value"},
		{"GET", ":1\r\n", func() error {
			_, _, err := s.GetBlob(ctx, "x")
			return err
		}, "redis: GET: unexpected reply type ':'"},
		{"SET", "-OOM command not allowed when used memory > 'maxmemory'.\r\n", func() error {
			return s.SetBlob(ctx, "x", []byte("v"), time.Second)
		}, "redis: SET: OOM command not allowed when used memory > 'maxmemory'."},
		{"SET", "$-1\r\n", func() error {
			return s.SetBlob(ctx, "x", []byte("v"), time.Second)
		}, "redis: SET: unexpected reply type '$'"},
	}
	for _, tc := range cases {
		name, reply := tc.name, tc.reply
		f.mu.Lock()
		f.handler = func(args []string) (string, bool) {
			if args[0] == name {
				return reply, true
			}
			return "", false
		}
		f.mu.Unlock()
		err := tc.call()
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s replying %q: err = %v, want %q", name, reply, err, tc.want)
		}
	}
	f.mu.Lock()
	f.handler = nil
	f.mu.Unlock()
	// Error replies leave the connection usable: still one connection.
	if n := f.accepted.Load(); n != 1 {
		t.Fatalf("%d connections, want 1", n)
	}

	// A transport failure surfaces as the client's error.
	s.Close()
	if _, _, err := s.Apply(ctx, []Incr{{Key: "x", Delta: 1}}, []string{"x"}); err != errRESPClosed {
		t.Fatalf("apply on a closed client: %v", err)
	}
	if _, _, err := s.GetBlob(ctx, "x"); err != errRESPClosed {
		t.Fatalf("getBlob on a closed client: %v", err)
	}
	if err := s.SetBlob(ctx, "x", nil, time.Second); err != errRESPClosed {
		t.Fatalf("setBlob on a closed client: %v", err)
	}
}

func TestRedisStoreBlobsFake(t *testing.T) {
	f := startFakeRESP(t, &fakeRESP{})
	s := testRedisStore(t, f.addr)
	ctx := context.Background()
	value := []byte("\x00\r\nv$-1\r\n")
	if err := s.SetBlob(ctx, "k", value, 1500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if got := f.connLog(0); !reflect.DeepEqual(got, []string{"SET k " + string(value) + " EX 2"}) {
		t.Fatalf("commands %q", got)
	}
	got, ok, err := s.GetBlob(ctx, "k")
	if err != nil || !ok || !bytes.Equal(got, value) {
		t.Fatalf("getBlob = %q %v %v", got, ok, err)
	}
	got, ok, err = s.GetBlob(ctx, "missing")
	if err != nil || ok || got != nil {
		t.Fatalf("getBlob(missing) = %q %v %v", got, ok, err)
	}
	if err := s.SetBlob(ctx, "e", nil, -time.Second); err != nil {
		t.Fatal(err)
	}
	got, ok, err = s.GetBlob(ctx, "e")
	if err != nil || !ok || len(got) != 0 || f.ttl("0", "e") != "1" {
		t.Fatalf("empty blob = %q %v %v ttl %q", got, ok, err, f.ttl("0", "e"))
	}
}

func TestRedisTTLSeconds(t *testing.T) {
	cases := []struct {
		in   time.Duration
		want int64
	}{
		{0, 1}, {-5 * time.Second, 1}, {time.Nanosecond, 1}, {time.Second, 1},
		{time.Second + time.Millisecond, 2}, {2 * time.Minute, 120},
		{400 * 24 * time.Hour, 34560000},
	}
	for _, tc := range cases {
		if got := ttlSeconds(tc.in); got != tc.want {
			t.Errorf("ttlSeconds(%v) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestNewRedis(t *testing.T) {
	f := startFakeRESP(t, &fakeRESP{password: "settings-PW"})
	s := NewRedis(RedisSettings{Address: f.addr, Password: "settings-PW", DB: 5, PoolSize: 7})
	t.Cleanup(s.Close)
	if s.c.cfg.password != "settings-PW" || s.c.cfg.db != 5 || cap(s.c.slots) != 7 || s.c.cfg.tls {
		t.Fatalf("config %+v", s.c.cfg)
	}
	if s.c.cfg.dialTimeout != 2*time.Second || s.c.cfg.ioTimeout != 2*time.Second {
		t.Fatalf("timeouts: dial %v, i/o %v, want 2s each", s.c.cfg.dialTimeout, s.c.cfg.ioTimeout)
	}
	// Construction never dials: every connection, open or being opened,
	// holds a pool slot, and none is taken.
	if n := len(s.c.slots); n != 0 {
		t.Fatalf("construction took %d pool slots", n)
	}
	if n := f.accepted.Load(); n != 0 {
		t.Fatalf("construction dialed %d connections", n)
	}
	if _, _, err := s.Apply(context.Background(), []Incr{{Key: "k", Delta: 4, TTL: time.Minute}}, nil); err != nil {
		t.Fatal(err)
	}
	if got := f.connLog(0); !reflect.DeepEqual(got, []string{"AUTH settings-PW", "SELECT 5", "INCRBY k 4", "EXPIRE k 60"}) {
		t.Fatalf("commands %q", got)
	}
	if n := s.RoundTrips(); n != 1 {
		t.Fatalf("RoundTrips = %d, want 1 (AUTH and SELECT are part of the dial)", n)
	}
	s.Close()
	if _, _, err := s.Apply(context.Background(), nil, []string{"k"}); err != errRESPClosed {
		t.Fatalf("Apply after Close: %v", err)
	}
}

// --- against a real redis-server ---

// startRedis starts a throwaway redis-server on a free loopback port
// (no persistence, in a temp dir) with extra arguments appended, waits
// until it answers, and stops it on cleanup. Without redis-server on
// PATH the test is skipped, unless LLMGW_REQUIRE_REDIS=1 (CI).
func startRedis(t *testing.T, extra ...string) string {
	t.Helper()
	addr, log := launchRedis(t, func(port string) []string {
		return append([]string{"--port", port}, extra...)
	}, nil)
	if addr == "" {
		t.Fatalf("redis-server did not start:\n%s", log)
	}
	return addr
}

// redisServerPath finds redis-server on PATH. It is a hand-rolled
// exec.LookPath: os/exec is not among the interpreter's default symbols
// (yaegi loads it only with -unrestricted), os.StartProcess is.
func redisServerPath(t *testing.T) string {
	t.Helper()
	dirs := filepath.SplitList(os.Getenv("PATH"))
	for i := 0; i < len(dirs); i++ {
		if dirs[i] == "" {
			continue
		}
		p := filepath.Join(dirs[i], "redis-server")
		fi, err := os.Stat(p)
		if err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p
		}
	}
	if os.Getenv("LLMGW_REQUIRE_REDIS") == "1" {
		t.Fatal("LLMGW_REQUIRE_REDIS=1 but redis-server is not on PATH")
	}
	t.Skip("redis-server is not on PATH: skipping the real-Redis test (install redis-server, or set LLMGW_REQUIRE_REDIS=1 to fail instead)")
	return ""
}

func redisFreePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	_ = ln.Close()
	return port
}

// launchRedis starts redis-server with portArgs(port) and waits for it
// to answer (ready, when set, decides; by default a PING gets any reply).
// It returns "" and the server log when it never becomes ready.
func launchRedis(t *testing.T, portArgs func(port string) []string, ready func(addr string) bool) (string, string) {
	t.Helper()
	path := redisServerPath(t)
	dir := t.TempDir()
	logPath := filepath.Join(dir, "redis.log")
	if ready == nil {
		ready = redisAnswers
	}
	for attempt := 0; attempt < 3; attempt++ {
		port := redisFreePort(t)
		args := []string{"--save", "", "--appendonly", "no", "--bind", "127.0.0.1", "--dir", dir, "--logfile", logPath}
		args = append(args, portArgs(port)...)
		devNull, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		argv := append([]string{path}, args...)
		proc, err := os.StartProcess(path, argv, &os.ProcAttr{Dir: dir, Files: []*os.File{devNull, devNull, devNull}})
		_ = devNull.Close()
		if err != nil {
			t.Fatalf("starting redis-server: %v", err)
		}
		exited := make(chan struct{})
		go func() {
			defer close(exited)
			defer func() { _ = recover() }()
			_, _ = proc.Wait()
		}()
		stop := func() {
			_ = proc.Kill()
			<-exited
		}
		addr := "127.0.0.1:" + port
		deadline := time.Now().Add(15 * time.Second)
		up := false
		for !up && time.Now().Before(deadline) {
			select {
			case <-exited:
				deadline = time.Now() // died (port taken?): try another port
				continue
			default:
			}
			if ready(addr) {
				up = true
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if up {
			t.Cleanup(stop)
			return addr, ""
		}
		stop()
	}
	log, _ := os.ReadFile(logPath)
	return "", string(log)
}

// redisAnswers reports whether addr answers a PING (NOAUTH counts).
func redisAnswers(addr string) bool {
	nc, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(time.Second))
	if _, err := nc.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return false
	}
	v, err := readRESPReply(bufio.NewReader(nc), 0)
	return err == nil && (v.kind == '+' || v.kind == '-')
}

// redisRaw runs cmds on a separate, raw connection (its own AUTH/SELECT
// included in cmds) and returns the replies.
func redisRaw(t *testing.T, addr string, cmds ...[]string) []respValue {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	bw := bufio.NewWriter(nc)
	for i := 0; i < len(cmds); i++ {
		if err := writeRESPCommand(bw, cmds[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(nc)
	out := make([]respValue, 0, len(cmds))
	for i := 0; i < len(cmds); i++ {
		v, err := readRESPReply(br, 0)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

func wantRedisTTL(t *testing.T, what string, v respValue, lo, hi int64) {
	t.Helper()
	if v.kind != ':' || v.int < lo || v.int > hi {
		t.Errorf("TTL of %s = %#v, want %d..%d", what, v, lo, hi)
	}
}

func realRedisStore(t *testing.T, rs RedisSettings) *Redis {
	t.Helper()
	s := NewRedis(rs)
	t.Cleanup(s.Close)
	return s
}

func TestRedisRealApply(t *testing.T) {
	addr := startRedis(t)
	s := realRedisStore(t, RedisSettings{Address: addr})
	ctx := context.Background()
	incrs := []Incr{
		{Key: "llmgw:t:a", Delta: 5, TTL: 90 * time.Second},
		{Key: "llmgw:t:b", Delta: 2, TTL: 1500 * time.Millisecond},
	}
	iv, gv, err := s.Apply(ctx, incrs, []string{"llmgw:t:a", "llmgw:t:missing", "llmgw:t:b"})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(iv, []int64{5, 2}) || !reflect.DeepEqual(gv, []int64{5, 0, 2}) {
		t.Fatalf("apply = %v %v, want [5 2] [5 0 2]", iv, gv)
	}
	iv, gv, err = s.Apply(ctx, []Incr{{Key: "llmgw:t:a", Delta: -8, TTL: 90 * time.Second}}, []string{"llmgw:t:b"})
	if err != nil || !reflect.DeepEqual(iv, []int64{-3}) || !reflect.DeepEqual(gv, []int64{2}) {
		t.Fatalf("second apply = %v %v %v, want [-3] [2]", iv, gv, err)
	}
	r := redisRaw(t, addr,
		[]string{"TTL", "llmgw:t:a"},
		[]string{"TTL", "llmgw:t:b"},
		[]string{"EXISTS", "llmgw:t:missing"},
		[]string{"GET", "llmgw:t:a"},
	)
	wantRedisTTL(t, "a (90s)", r[0], 89, 90)
	wantRedisTTL(t, "b (1.5s -> 2s)", r[1], 1, 2)
	if r[2].int != 0 {
		t.Errorf("a read created the missing key")
	}
	if r[3].str != "-3" {
		t.Errorf("GET a = %#v", r[3])
	}
	// Missing keys only.
	iv, gv, err = s.Apply(ctx, nil, []string{"llmgw:t:m1", "llmgw:t:m2"})
	if err != nil || len(iv) != 0 || !reflect.DeepEqual(gv, []int64{0, 0}) {
		t.Fatalf("missing gets = %v %v %v", iv, gv, err)
	}
	// Server error replies surface, naming the command.
	redisRaw(t, addr, []string{"SET", "llmgw:t:str", "hello-VALUE"}, []string{"LPUSH", "llmgw:t:list", "x"})
	_, _, err = s.Apply(ctx, []Incr{{Key: "llmgw:t:str", Delta: 1, TTL: time.Minute}}, nil)
	if err == nil || err.Error() != "redis: INCRBY: ERR value is not an integer or out of range" {
		t.Fatalf("INCRBY on a string: %v", err)
	}
	_, _, err = s.Apply(ctx, nil, []string{"llmgw:t:str"})
	if err == nil || !strings.Contains(err.Error(), "MGET") || strings.Contains(err.Error(), "hello-VALUE") {
		t.Fatalf("MGET of a string: %v", err)
	}
	_, _, err = s.GetBlob(ctx, "llmgw:t:list")
	if err == nil || !strings.HasPrefix(err.Error(), "redis: GET: WRONGTYPE") {
		t.Fatalf("GET of a list: %v", err)
	}
	if n := s.c.roundTripCount(); n != 6 {
		t.Fatalf("roundTripCount = %d, want 6", n)
	}
}

func TestRedisRealBlobs(t *testing.T) {
	addr := startRedis(t)
	s := realRedisStore(t, RedisSettings{Address: addr})
	ctx := context.Background()
	// Larger than the reader's buffer and the bulk chunk, every byte value.
	big := make([]byte, 300<<10)
	for i := 0; i < len(big); i++ {
		big[i] = byte(i * 7)
	}
	if err := s.SetBlob(ctx, "llmgw:t:blob", big, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	got, ok, err := s.GetBlob(ctx, "llmgw:t:blob")
	if err != nil || !ok || !bytes.Equal(got, big) {
		t.Fatalf("getBlob: ok=%v err=%v equal=%v", ok, err, bytes.Equal(got, big))
	}
	if err := s.SetBlob(ctx, "llmgw:t:small", []byte("v1"), 1100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := s.SetBlob(ctx, "llmgw:t:small", []byte("v2\r\n"), 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	got, ok, err = s.GetBlob(ctx, "llmgw:t:small")
	if err != nil || !ok || string(got) != "v2\r\n" {
		t.Fatalf("getBlob(small) = %q %v %v", got, ok, err)
	}
	got, ok, err = s.GetBlob(ctx, "llmgw:t:nope")
	if err != nil || ok || got != nil {
		t.Fatalf("getBlob(missing) = %q %v %v", got, ok, err)
	}
	r := redisRaw(t, addr, []string{"TTL", "llmgw:t:blob"}, []string{"TTL", "llmgw:t:small"})
	wantRedisTTL(t, "blob (3s)", r[0], 2, 3)
	wantRedisTTL(t, "small (10m)", r[1], 599, 600)
}

func TestRedisRealAuthSelect(t *testing.T) {
	const pw = "real-Redis-pw-9"
	addr := startRedis(t, "--requirepass", pw)
	s := realRedisStore(t, RedisSettings{Address: addr, Password: pw, DB: 3})
	ctx := context.Background()
	iv, _, err := s.Apply(ctx, []Incr{{Key: "llmgw:t:db", Delta: 7, TTL: time.Minute}}, nil)
	if err != nil || !reflect.DeepEqual(iv, []int64{7}) {
		t.Fatalf("apply = %v %v", iv, err)
	}
	if err := s.SetBlob(ctx, "llmgw:t:blob", []byte("b"), time.Minute); err != nil {
		t.Fatal(err)
	}
	r := redisRaw(t, addr,
		[]string{"AUTH", pw},
		[]string{"SELECT", "3"},
		[]string{"GET", "llmgw:t:db"},
		[]string{"GET", "llmgw:t:blob"},
		[]string{"SELECT", "0"},
		[]string{"EXISTS", "llmgw:t:db", "llmgw:t:blob"},
	)
	if r[0].str != "OK" || r[2].str != "7" || r[3].str != "b" || r[5].kind != ':' || r[5].int != 0 {
		t.Fatalf("raw view: %#v", r)
	}

	wrong := realRedisStore(t, RedisSettings{Address: addr, Password: "wrong-Secret-42", DB: 3})
	_, _, err = wrong.Apply(ctx, []Incr{{Key: "x", Delta: 1}}, nil)
	if err == nil || !strings.Contains(err.Error(), "AUTH failed") || strings.Contains(err.Error(), "wrong-Secret-42") {
		t.Fatalf("wrong password: %v", err)
	}
	none := realRedisStore(t, RedisSettings{Address: addr})
	_, _, err = none.Apply(ctx, []Incr{{Key: "x", Delta: 1}}, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "redis: INCRBY: NOAUTH") {
		t.Fatalf("no password: %v", err)
	}
}

func TestRedisRealConcurrentApply(t *testing.T) {
	addr := startRedis(t)
	s := realRedisStore(t, RedisSettings{Address: addr, PoolSize: 4})
	const n = 100
	const key = "llmgw:t:concurrent"
	var wg sync.WaitGroup
	var mu sync.Mutex
	var incrVals []int64
	var failures []string
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					mu.Lock()
					failures = append(failures, "panic")
					mu.Unlock()
				}
			}()
			iv, gv, err := s.Apply(context.Background(), []Incr{{Key: key, Delta: 1, TTL: time.Minute}}, []string{key})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failures = append(failures, err.Error())
				return
			}
			if len(iv) != 1 || len(gv) != 1 || gv[0] < iv[0] {
				failures = append(failures, "inconsistent "+strconv.FormatInt(iv[0], 10)+" "+strconv.FormatInt(gv[0], 10))
				return
			}
			incrVals = append(incrVals, iv[0])
		}()
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d failures, first: %s", len(failures), failures[0])
	}
	sort.Slice(incrVals, func(i, j int) bool { return incrVals[i] < incrVals[j] })
	for i := 0; i < n; i++ {
		if incrVals[i] != int64(i+1) {
			t.Fatalf("post-increment values are not exactly 1..%d: %v", n, incrVals)
		}
	}
	r := redisRaw(t, addr, []string{"GET", key}, []string{"CLIENT", "LIST"})
	if r[0].str != strconv.Itoa(n) {
		t.Fatalf("total = %#v, want %d", r[0], n)
	}
	// The pool cap holds against the real server: 4 pooled + the raw one.
	if clients := strings.Count(r[1].str, "\n"); clients > 5 {
		t.Fatalf("%d client connections, want at most 5:\n%s", clients, r[1].str)
	}
	if c := s.c.roundTripCount(); c != n {
		t.Fatalf("roundTripCount = %d, want %d", c, n)
	}
}

func TestRedisRealTLS(t *testing.T) {
	_, pool, der, key := respTestCert(t)
	dir := t.TempDir()
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile := filepath.Join(dir, "cert.pem")
	keyFile := filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	ready := func(addr string) bool {
		c := newRESPClient(respConfig{address: addr, tls: true, dialTimeout: time.Second, ioTimeout: time.Second})
		c.tlsRoots = pool
		defer c.close()
		r, err := c.pipeline(context.Background(), [][]string{{"PING"}})
		return err == nil && r[0].str == "PONG"
	}
	addr, log := launchRedis(t, func(port string) []string {
		return []string{"--port", "0", "--tls-port", port, "--tls-cert-file", certFile, "--tls-key-file", keyFile,
			"--tls-ca-cert-file", certFile, "--tls-auth-clients", "no"}
	}, ready)
	if addr == "" {
		if os.Getenv("LLMGW_REQUIRE_REDIS") == "1" {
			t.Fatalf("redis-server with TLS did not start:\n%s", log)
		}
		t.Skipf("redis-server did not start with TLS (built without it?):\n%s", log)
	}
	s := realRedisStore(t, RedisSettings{Address: addr, TLS: true, DB: 2})
	s.c.tlsRoots = pool
	iv, gv, err := s.Apply(context.Background(), []Incr{{Key: "llmgw:t:tls", Delta: 11, TTL: time.Minute}}, []string{"llmgw:t:tls"})
	if err != nil || !reflect.DeepEqual(iv, []int64{11}) || !reflect.DeepEqual(gv, []int64{11}) {
		t.Fatalf("apply over TLS = %v %v %v", iv, gv, err)
	}
	// Verification is on: the system roots do not trust the test CA.
	untrusted := realRedisStore(t, RedisSettings{Address: addr, TLS: true})
	_, _, err = untrusted.Apply(context.Background(), []Incr{{Key: "x", Delta: 1}}, nil)
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("untrusted server certificate: %v", err)
	}
	if !strings.Contains(err.Error(), "unknown authority") {
		t.Fatalf("want an unknown-authority failure, got %v", err)
	}
}

func TestRedisRealSetIncr(t *testing.T) {
	addr := startRedis(t)
	s := realRedisStore(t, RedisSettings{Address: addr})
	ctx := context.Background()
	incrs := []Incr{
		{Key: "llmgw:t:n", Delta: 3, TTL: time.Minute},
		{Key: "llmgw:t:seen", Delta: 1700000000, TTL: 90 * time.Second, Set: true},
		{Key: "llmgw:t:n", Delta: 1, TTL: time.Minute},
	}
	iv, gv, err := s.Apply(ctx, incrs, []string{"llmgw:t:seen"})
	if err != nil || !reflect.DeepEqual(iv, []int64{3, 0, 4}) || !reflect.DeepEqual(gv, []int64{1700000000}) {
		t.Fatalf("apply = %v %v %v, want [3 0 4] [1700000000]", iv, gv, err)
	}
	r := redisRaw(t, addr, []string{"TTL", "llmgw:t:seen"})
	wantRedisTTL(t, "seen (90s)", r[0], 89, 90)
	// A settlement's prefix carries Sets too.
	err = s.Settle(ctx, &Settlement{Incrs: []Incr{{Key: "llmgw:t:seen", Delta: 1700000005, TTL: time.Minute, Set: true}},
		Budgets: []Budget{{Holds: "llmgw:t:holds", Sums: "llmgw:t:held"}}, Hold: Hold{Member: "x:1:1", Tokens: 1, Cost: 1, TTL: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	if _, gv, _ = s.Apply(ctx, nil, []string{"llmgw:t:seen"}); gv[0] != 1700000005 {
		t.Fatalf("seen after settle = %v", gv)
	}
	// The key stays a counter: INCRBY works on it.
	if _, _, err = s.Apply(ctx, []Incr{{Key: "llmgw:t:seen", Delta: 1, TTL: time.Minute}}, nil); err != nil {
		t.Fatalf("INCRBY on the set counter: %v", err)
	}
}
