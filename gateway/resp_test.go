package gateway

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeRESP is an in-process RESP2 server: enough of AUTH, SELECT, PING,
// INCRBY, EXPIRE, MGET, GET and SET for the client and store tests. It
// records every command per connection and how many commands each Read
// delivered. Options are set before startFakeRESP.
type fakeRESP struct {
	password string        // AUTH required when set
	echoPass bool          // a failed AUTH echoes the password it got
	silent   bool          // never answer
	batch    int           // hold replies until this many commands are pending
	delay    time.Duration // sleep before each reply write
	breakOn  string        // first command with this name: partial reply, close
	tlsCfg   *tls.Config   // serve TLS
	// handler, when set, answers a command first (raw reply, handled).
	handler func(args []string) (string, bool)

	t        *testing.T
	ln       net.Listener
	addr     string
	accepted atomic.Int64 // connections accepted
	ended    atomic.Int64 // connections that saw EOF or an error

	mu    sync.Mutex
	conns []net.Conn
	logs  [][]string // per connection: "CMD arg ..."
	reads [][]int    // per connection: commands delivered by each Read
	data  map[string]string
	ttls  map[string]string
	broke bool
	wg    sync.WaitGroup

	pmu    sync.Mutex
	panics []string
}

func startFakeRESP(t *testing.T, f *fakeRESP) *fakeRESP {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if f.tlsCfg != nil {
		ln = tls.NewListener(ln, f.tlsCfg)
	}
	f.t = t
	f.ln = ln
	f.addr = ln.Addr().String()
	f.data = map[string]string{}
	f.ttls = map[string]string{}
	f.wg.Add(1)
	go f.acceptLoop()
	t.Cleanup(func() {
		_ = ln.Close()
		f.dropAll()
		done := make(chan struct{})
		go func() {
			defer func() { _ = recover() }()
			f.wg.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("fake RESP server goroutines did not stop")
		}
		f.pmu.Lock()
		defer f.pmu.Unlock()
		for i := 0; i < len(f.panics); i++ {
			t.Errorf("fake RESP server panicked: %s", f.panics[i])
		}
	})
	return f
}

// caught records a panic in one of the server's goroutines; the test
// fails at cleanup.
func (f *fakeRESP) caught(r interface{}) {
	if r == nil {
		return
	}
	f.pmu.Lock()
	f.panics = append(f.panics, fmt.Sprint(r))
	f.pmu.Unlock()
}

func (f *fakeRESP) acceptLoop() {
	defer f.wg.Done()
	defer func() { f.caught(recover()) }()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.accepted.Add(1)
		f.mu.Lock()
		id := len(f.conns)
		f.conns = append(f.conns, c)
		f.logs = append(f.logs, []string(nil))
		f.reads = append(f.reads, []int(nil))
		f.mu.Unlock()
		f.wg.Add(1)
		go f.serve(id, c)
	}
}

// dropAll closes every server-side connection.
func (f *fakeRESP) dropAll() {
	f.mu.Lock()
	conns := append([]net.Conn(nil), f.conns...)
	f.mu.Unlock()
	for i := 0; i < len(conns); i++ {
		_ = conns[i].Close()
	}
}

func (f *fakeRESP) serve(id int, c net.Conn) {
	defer f.wg.Done()
	defer func() { f.caught(recover()) }()
	defer func() { _ = c.Close() }()
	st := &fakeRESPConnState{db: "0", authed: f.password == ""}
	batch := f.batch
	if batch < 1 {
		batch = 1
	}
	var pending, out []byte
	held := 0
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			pending = append(pending, buf[:n]...)
			count := 0
			for {
				args, used, perr := parseFakeRESPCommand(pending)
				if perr != nil {
					f.ended.Add(1)
					return
				}
				if used == 0 {
					break
				}
				pending = pending[used:]
				count++
				f.mu.Lock()
				f.logs[id] = append(f.logs[id], strings.Join(args, " "))
				f.mu.Unlock()
				reply, hangUp := f.reply(st, args)
				if hangUp {
					_, _ = c.Write(append(out, reply...))
					f.ended.Add(1)
					return
				}
				out = append(out, reply...)
				held++
			}
			f.mu.Lock()
			f.reads[id] = append(f.reads[id], count)
			f.mu.Unlock()
			if f.silent {
				out = out[:0]
				held = 0
			} else if held >= batch {
				if f.delay > 0 {
					time.Sleep(f.delay)
				}
				if _, werr := c.Write(out); werr != nil {
					f.ended.Add(1)
					return
				}
				out = out[:0]
				held = 0
			}
		}
		if err != nil {
			f.ended.Add(1)
			return
		}
	}
}

type fakeRESPConnState struct {
	db     string
	authed bool
}

func fakeRESPBulk(s string) string {
	return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n"
}

// reply answers one command; hangUp closes the connection after it.
func (f *fakeRESP) reply(st *fakeRESPConnState, args []string) (string, bool) {
	if len(args) == 0 {
		return "-ERR empty command\r\n", false
	}
	name := strings.ToUpper(args[0])
	if f.breakOn != "" && name == f.breakOn {
		f.mu.Lock()
		first := !f.broke
		f.broke = true
		f.mu.Unlock()
		if first {
			return "$10\r\nabc", true
		}
	}
	if f.handler != nil {
		if r, ok := f.handler(args); ok {
			return r, false
		}
	}
	if name == "AUTH" {
		if f.password == "" {
			return "-ERR AUTH <password> called without any password configured for the default user\r\n", false
		}
		if len(args) == 2 && args[1] == f.password {
			st.authed = true
			return "+OK\r\n", false
		}
		if f.echoPass && len(args) == 2 {
			return "-WRONGPASS bad password " + args[1] + "\r\n", false
		}
		return "-WRONGPASS invalid username-password pair or user is disabled.\r\n", false
	}
	if !st.authed {
		return "-NOAUTH Authentication required.\r\n", false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch name {
	case "PING":
		return "+PONG\r\n", false
	case "SELECT":
		st.db = args[1]
		return "+OK\r\n", false
	case "INCRBY":
		key := st.db + "/" + args[1]
		cur := int64(0)
		if s, ok := f.data[key]; ok {
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return "-ERR value is not an integer or out of range\r\n", false
			}
			cur = v
		}
		d, err := strconv.ParseInt(args[2], 10, 64)
		if err != nil {
			return "-ERR value is not an integer or out of range\r\n", false
		}
		cur += d
		f.data[key] = strconv.FormatInt(cur, 10)
		return ":" + strconv.FormatInt(cur, 10) + "\r\n", false
	case "EXPIRE":
		key := st.db + "/" + args[1]
		if _, ok := f.data[key]; !ok {
			return ":0\r\n", false
		}
		f.ttls[key] = args[2]
		return ":1\r\n", false
	case "MGET":
		out := "*" + strconv.Itoa(len(args)-1) + "\r\n"
		for i := 1; i < len(args); i++ {
			if v, ok := f.data[st.db+"/"+args[i]]; ok {
				out += fakeRESPBulk(v)
			} else {
				out += "$-1\r\n"
			}
		}
		return out, false
	case "GET":
		if v, ok := f.data[st.db+"/"+args[1]]; ok {
			return fakeRESPBulk(v), false
		}
		return "$-1\r\n", false
	case "SET":
		key := st.db + "/" + args[1]
		f.data[key] = args[2]
		if len(args) == 5 && strings.ToUpper(args[3]) == "EX" {
			f.ttls[key] = args[4]
		}
		return "+OK\r\n", false
	}
	return "-ERR unknown command '" + args[0] + "'\r\n", false
}

// parseFakeCommand parses one client command (an array of bulk
// strings); used 0 means incomplete.
func parseFakeRESPCommand(b []byte) ([]string, int, error) {
	line := func(at int) (string, int, bool) {
		i := bytes.Index(b[at:], []byte("\r\n"))
		if i < 0 {
			return "", 0, false
		}
		return string(b[at : at+i]), at + i + 2, true
	}
	head, pos, ok := line(0)
	if !ok {
		return nil, 0, nil
	}
	if len(head) < 2 || head[0] != '*' {
		return nil, 0, errors.New("not an array")
	}
	n, err := strconv.Atoi(head[1:])
	if err != nil || n < 0 {
		return nil, 0, errors.New("bad array length")
	}
	args := make([]string, 0, n)
	for i := 0; i < n; i++ {
		h, next, ok := line(pos)
		if !ok {
			return nil, 0, nil
		}
		if len(h) < 2 || h[0] != '$' {
			return nil, 0, errors.New("not a bulk string")
		}
		l, err := strconv.Atoi(h[1:])
		if err != nil || l < 0 {
			return nil, 0, errors.New("bad bulk length")
		}
		if len(b) < next+l+2 {
			return nil, 0, nil
		}
		args = append(args, string(b[next:next+l]))
		pos = next + l + 2
	}
	return args, pos, nil
}

func (f *fakeRESP) connLog(i int) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i >= len(f.logs) {
		return nil
	}
	return append([]string(nil), f.logs[i]...)
}

func (f *fakeRESP) connReads(i int) []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i >= len(f.reads) {
		return nil
	}
	return append([]int(nil), f.reads[i]...)
}

func (f *fakeRESP) allCommands() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for i := 0; i < len(f.logs); i++ {
		out = append(out, f.logs[i]...)
	}
	return out
}

func (f *fakeRESP) value(db, key string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.data[db+"/"+key]
	return v, ok
}

func (f *fakeRESP) ttl(db, key string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ttls[db+"/"+key]
}

// waitFor polls cond for up to 10s.
func respWaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func testRESPClient(t *testing.T, cfg respConfig) *respClient {
	c := newRESPClient(cfg)
	t.Cleanup(c.close)
	return c
}

func mustRESPPipeline(t *testing.T, c *respClient, cmds ...[]string) []respValue {
	t.Helper()
	replies, err := c.pipeline(context.Background(), cmds)
	if err != nil {
		t.Fatalf("pipeline %v: %v", cmds, err)
	}
	if len(replies) != len(cmds) {
		t.Fatalf("pipeline %v: %d replies", cmds, len(replies))
	}
	return replies
}

func TestRESPLazyConnectAndPipelining(t *testing.T) {
	f := startFakeRESP(t, &fakeRESP{batch: 4})
	c := testRESPClient(t, respConfig{address: f.addr, poolSize: 2})
	time.Sleep(50 * time.Millisecond)
	if n := f.accepted.Load(); n != 0 {
		t.Fatalf("construction opened %d connections, want 0", n)
	}
	if n := c.roundTripCount(); n != 0 {
		t.Fatalf("roundTripCount = %d before any call", n)
	}
	// The fake answers only once all four commands have arrived: a client
	// waiting for each reply before the next write would hang.
	replies := mustRESPPipeline(t, c,
		[]string{"INCRBY", "a", "5"},
		[]string{"FOO", "bar"},
		[]string{"SET", "b", "x\r\ny\x00z"},
		[]string{"MGET", "a", "b", "missing"},
	)
	want := []respValue{
		{kind: ':', int: 5},
		{kind: '-', str: "ERR unknown command 'FOO'"},
		{kind: '+', str: "OK"},
		{kind: '*', array: []respValue{
			{kind: '$', str: "5"},
			{kind: '$', str: "x\r\ny\x00z"},
			{kind: '$', null: true},
		}},
	}
	if !reflect.DeepEqual(replies, want) {
		t.Fatalf("replies:\n got %#v\nwant %#v", replies, want)
	}
	if n := c.roundTripCount(); n != 1 {
		t.Fatalf("roundTripCount = %d, want 1", n)
	}
	replies = mustRESPPipeline(t, c,
		[]string{"INCRBY", "a", "-7"},
		[]string{"GET", "a"},
		[]string{"GET", "nope"},
		[]string{"PING"},
	)
	want = []respValue{
		{kind: ':', int: -2},
		{kind: '$', str: "-2"},
		{kind: '$', null: true},
		{kind: '+', str: "PONG"},
	}
	if !reflect.DeepEqual(replies, want) {
		t.Fatalf("replies:\n got %#v\nwant %#v", replies, want)
	}
	if n := c.roundTripCount(); n != 2 {
		t.Fatalf("roundTripCount = %d, want 2", n)
	}
	if n := f.accepted.Load(); n != 1 {
		t.Fatalf("%d connections, want 1 (reused)", n)
	}
	// No AUTH/SELECT without a password and with db 0; each pipeline
	// arrived in one write.
	if got := f.connReads(0); !reflect.DeepEqual(got, []int{4, 4}) {
		t.Fatalf("commands per read = %v, want [4 4]", got)
	}
	if got := f.connLog(0)[0]; got != "INCRBY a 5" {
		t.Fatalf("first command %q", got)
	}
	// An empty pipeline is no round trip.
	if r, err := c.pipeline(context.Background(), nil); err != nil || r != nil {
		t.Fatalf("empty pipeline: %v %v", r, err)
	}
	if n := c.roundTripCount(); n != 2 {
		t.Fatalf("roundTripCount = %d after an empty pipeline, want 2", n)
	}
}

func TestRESPAuthSelectPerConnection(t *testing.T) {
	f := startFakeRESP(t, &fakeRESP{password: "pw-Secret-1", delay: 2 * time.Millisecond})
	c := testRESPClient(t, respConfig{address: f.addr, password: "pw-Secret-1", db: 2, poolSize: 3})
	const workers = 50
	const calls = 4
	var wg sync.WaitGroup
	errs := make(chan error, workers*calls)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					errs <- errors.New("panic")
				}
			}()
			for i := 0; i < calls; i++ {
				replies, err := c.pipeline(context.Background(), [][]string{{"INCRBY", "n", "1"}, {"PING"}})
				if err != nil {
					errs <- err
					return
				}
				if replies[0].kind != ':' || replies[1].str != "PONG" {
					errs <- errors.New("bad replies")
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if v, _ := f.value("2", "n"); v != strconv.Itoa(workers*calls) {
		t.Fatalf("counter in db 2 = %q, want %d", v, workers*calls)
	}
	if _, ok := f.value("0", "n"); ok {
		t.Fatal("counter landed in db 0")
	}
	if n := c.roundTripCount(); n != workers*calls {
		t.Fatalf("roundTripCount = %d, want %d", n, workers*calls)
	}
	if n := f.accepted.Load(); n != 3 {
		t.Fatalf("%d connections, want exactly the pool size 3", n)
	}
	for i := 0; i < 3; i++ {
		log := f.connLog(i)
		if len(log) < 2 || log[0] != "AUTH pw-Secret-1" || log[1] != "SELECT 2" {
			t.Fatalf("connection %d starts %v, want AUTH then SELECT 2", i, log)
		}
		for j := 2; j < len(log); j++ {
			if strings.HasPrefix(log[j], "AUTH") || strings.HasPrefix(log[j], "SELECT") {
				t.Fatalf("connection %d sent %q again", i, log[j])
			}
		}
		// AUTH and SELECT went out together, in one write.
		if reads := f.connReads(i); len(reads) == 0 || reads[0] != 2 {
			t.Fatalf("connection %d commands per read %v, want AUTH+SELECT in the first", i, reads)
		}
	}
}

func TestRESPAuthFailure(t *testing.T) {
	f := startFakeRESP(t, &fakeRESP{password: "right", echoPass: true})
	const pw = "wrong-Pa55word-zzz"
	c := testRESPClient(t, respConfig{address: f.addr, password: pw, db: 1, poolSize: 1})
	// More calls than the pool has slots: a failed dial frees its slot.
	for i := 0; i < 3; i++ {
		_, err := c.pipeline(context.Background(), [][]string{{"PING"}})
		if err == nil {
			t.Fatal("AUTH failure did not fail the call")
		}
		msg := err.Error()
		if strings.Contains(msg, pw) {
			t.Fatalf("error leaks the password: %q", msg)
		}
		if !strings.Contains(msg, "AUTH failed") || !strings.Contains(msg, "WRONGPASS") {
			t.Fatalf("error %q does not name the AUTH failure", msg)
		}
	}
	if n := f.accepted.Load(); n != 3 {
		t.Fatalf("%d connections, want 3 (one per failed dial)", n)
	}
	respWaitFor(t, "failed connections to be closed", func() bool { return f.ended.Load() == 3 })
	// PING never reached the server.
	for _, cmd := range f.allCommands() {
		if cmd == "PING" {
			t.Fatal("a command was sent on an unauthenticated connection")
		}
	}

	// A SELECT error fails the dial too.
	f2 := startFakeRESP(t, &fakeRESP{handler: func(args []string) (string, bool) {
		if args[0] == "SELECT" {
			return "-ERR DB index is out of range\r\n", true
		}
		return "", false
	}})
	c2 := testRESPClient(t, respConfig{address: f2.addr, db: 99})
	_, err := c2.pipeline(context.Background(), [][]string{{"PING"}})
	if err == nil || !strings.Contains(err.Error(), "SELECT failed: ERR DB index is out of range") {
		t.Fatalf("SELECT error: %v", err)
	}
}

func TestRESPBrokenConnectionIsDiscarded(t *testing.T) {
	f := startFakeRESP(t, &fakeRESP{breakOn: "GET"})
	c := testRESPClient(t, respConfig{address: f.addr, poolSize: 2})
	mustRESPPipeline(t, c, []string{"SET", "k", "v"})
	// The reply breaks off mid-bulk on a pooled connection: bytes had
	// arrived, so the call fails rather than resend.
	_, err := c.pipeline(context.Background(), [][]string{{"GET", "k"}})
	if err == nil {
		t.Fatal("broken reply did not fail the call")
	}
	if len(c.idle) != 0 || len(c.slots) != 0 {
		t.Fatalf("broken connection kept: %d idle, %d slots taken", len(c.idle), len(c.slots))
	}
	gets := 0
	for _, cmd := range f.allCommands() {
		if cmd == "GET k" {
			gets++
		}
	}
	if gets != 1 {
		t.Fatalf("GET sent %d times, want 1", gets)
	}
	replies := mustRESPPipeline(t, c, []string{"GET", "k"})
	if replies[0].str != "v" {
		t.Fatalf("GET after redial = %#v", replies[0])
	}
	if n := f.accepted.Load(); n != 2 {
		t.Fatalf("%d connections, want 2 (the broken one redialed)", n)
	}
	if got := f.connLog(1); !reflect.DeepEqual(got, []string{"GET k"}) {
		t.Fatalf("second connection got %v", got)
	}
}

func TestRESPStalePooledConnectionRetried(t *testing.T) {
	f := startFakeRESP(t, &fakeRESP{})
	c := testRESPClient(t, respConfig{address: f.addr, poolSize: 2})
	mustRESPPipeline(t, c, []string{"INCRBY", "k", "1"})
	// The server drops its connections (restart, idle timeout) while the
	// client's sits in the pool.
	f.dropAll()
	respWaitFor(t, "the server to drop the connection", func() bool { return f.ended.Load() == 1 })
	replies := mustRESPPipeline(t, c, []string{"INCRBY", "k", "1"})
	if replies[0].int != 2 {
		t.Fatalf("INCRBY after a stale connection = %#v, want 2", replies[0])
	}
	if n := f.accepted.Load(); n != 2 {
		t.Fatalf("%d connections, want 2", n)
	}
	if n := c.roundTripCount(); n != 2 {
		t.Fatalf("roundTripCount = %d, want 2 (one per call)", n)
	}
}

func TestRESPContextAndTimeouts(t *testing.T) {
	f := startFakeRESP(t, &fakeRESP{silent: true})

	t.Run("deadline", func(t *testing.T) {
		c := testRESPClient(t, respConfig{address: f.addr, ioTimeout: time.Minute})
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := c.pipeline(ctx, [][]string{{"PING"}})
		if err != context.DeadlineExceeded {
			t.Fatalf("err = %v, want context.DeadlineExceeded", err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("took %v", d)
		}
		respWaitFor(t, "the timed-out connection to close", func() bool { return f.ended.Load() == 1 })
	})

	t.Run("cancel", func(t *testing.T) {
		c := testRESPClient(t, respConfig{address: f.addr, ioTimeout: time.Minute})
		ctx, cancel := context.WithCancel(context.Background())
		ended := f.ended.Load()
		go func() {
			defer func() { _ = recover() }()
			time.Sleep(200 * time.Millisecond)
			cancel()
		}()
		start := time.Now()
		_, err := c.pipeline(ctx, [][]string{{"PING"}})
		if err != context.Canceled {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("took %v", d)
		}
		// The interrupted connection is closed, not pooled.
		if len(c.idle) != 0 || len(c.slots) != 0 {
			t.Fatalf("cancelled connection kept: %d idle, %d slots taken", len(c.idle), len(c.slots))
		}
		respWaitFor(t, "the cancelled connection to close", func() bool { return f.ended.Load() == ended+1 })
		if _, err := c.pipeline(ctx, [][]string{{"PING"}}); err != context.Canceled {
			t.Fatalf("call with a cancelled ctx: %v", err)
		}
	})

	t.Run("ioTimeout", func(t *testing.T) {
		c := testRESPClient(t, respConfig{address: f.addr, ioTimeout: 200 * time.Millisecond})
		start := time.Now()
		_, err := c.pipeline(context.Background(), [][]string{{"PING"}})
		if err == nil || !strings.Contains(err.Error(), "timeout") {
			t.Fatalf("err = %v, want an i/o timeout", err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("took %v", d)
		}
		respWaitFor(t, "the timed-out connection to close", func() bool { return f.ended.Load() == 3 })
	})

	t.Run("waitForSlot", func(t *testing.T) {
		c := testRESPClient(t, respConfig{address: f.addr, poolSize: 1, ioTimeout: time.Minute})
		before := f.accepted.Load()
		holdCtx, release := context.WithCancel(context.Background())
		held := make(chan error, 1)
		go func() {
			defer func() { _ = recover() }()
			_, err := c.pipeline(holdCtx, [][]string{{"PING"}})
			held <- err
		}()
		respWaitFor(t, "the only connection to be busy", func() bool {
			return f.accepted.Load() == before+1 && len(f.connReads(int(before))) == 1
		})
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		_, err := c.pipeline(ctx, [][]string{{"PING"}})
		if err != context.DeadlineExceeded {
			t.Fatalf("err = %v, want context.DeadlineExceeded while waiting for the pool", err)
		}
		if n := f.accepted.Load(); n != before+1 {
			t.Fatalf("dialed beyond the pool cap: %d connections", n-before)
		}
		release()
		if err := <-held; err != context.Canceled {
			t.Fatalf("holder err = %v", err)
		}
	})

	t.Run("dialRefused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		_ = ln.Close()
		c := testRESPClient(t, respConfig{address: addr, password: "dial-Secret"})
		_, err = c.pipeline(context.Background(), [][]string{{"PING"}})
		if err == nil || !strings.Contains(err.Error(), "redis: dial "+addr) || strings.Contains(err.Error(), "dial-Secret") {
			t.Fatalf("dial error: %v", err)
		}
	})
}

func TestRESPClose(t *testing.T) {
	f := startFakeRESP(t, &fakeRESP{})
	c := newRESPClient(respConfig{address: f.addr})
	mustRESPPipeline(t, c, []string{"PING"})
	c.close()
	respWaitFor(t, "the idle connection to close", func() bool { return f.ended.Load() == 1 })
	start := time.Now()
	_, err := c.pipeline(context.Background(), [][]string{{"PING"}})
	if err != errRESPClosed {
		t.Fatalf("after close: %v", err)
	}
	if time.Since(start) > time.Second {
		t.Fatal("a closed client did not fail fast")
	}
	c.close() // idempotent
	if n := f.accepted.Load(); n != 1 {
		t.Fatalf("%d connections after close", n)
	}
}

func TestRESPPoolSizing(t *testing.T) {
	auto := respAutoPoolSize()
	if auto < 4 || auto > 8 {
		t.Fatalf("auto pool size %d outside [4, 8]", auto)
	}
	cases := []struct{ in, want int }{{0, auto}, {-3, auto}, {1, 1}, {17, 17}, {256, 256}, {1000, 256}}
	for _, tc := range cases {
		c := newRESPClient(respConfig{address: "127.0.0.1:1", poolSize: tc.in})
		if got := cap(c.slots); got != tc.want {
			t.Errorf("poolSize %d -> %d, want %d", tc.in, got, tc.want)
		}
		if c.cfg.ioTimeout != 2*time.Second || c.cfg.dialTimeout != 2*time.Second {
			t.Errorf("default timeouts %v %v", c.cfg.ioTimeout, c.cfg.dialTimeout)
		}
	}
}

// testCert returns a self-signed certificate for 127.0.0.1/localhost and
// a pool trusting it, plus the PEM-free DER pieces for callers that need
// files.
func respTestCert(t *testing.T) (tls.Certificate, *x509.CertPool, []byte, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "llmgw-test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:              []string{"localhost"},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(parsed)
	cert := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	return cert, pool, der, key
}

func TestRESPTLS(t *testing.T) {
	cert, pool, _, _ := respTestCert(t)
	f := startFakeRESP(t, &fakeRESP{
		password: "tls-Pass",
		tlsCfg:   &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
	})
	c := newRESPClient(respConfig{address: f.addr, password: "tls-Pass", db: 4, tls: true})
	c.tlsRoots = pool
	t.Cleanup(c.close)
	replies := mustRESPPipeline(t, c, []string{"INCRBY", "t", "3"})
	if replies[0].int != 3 {
		t.Fatalf("INCRBY over TLS = %#v", replies[0])
	}
	if got := f.connLog(0); !reflect.DeepEqual(got, []string{"AUTH tls-Pass", "SELECT 4", "INCRBY t 3"}) {
		t.Fatalf("commands over TLS: %v", got)
	}
	// The certificate is verified: an untrusted one fails the dial, and
	// nothing (no AUTH) is sent.
	c2 := testRESPClient(t, respConfig{address: f.addr, password: "tls-Pass", tls: true})
	_, err := c2.pipeline(context.Background(), [][]string{{"PING"}})
	if err == nil || !strings.Contains(err.Error(), "TLS handshake") || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("untrusted certificate: %v", err)
	}
	if strings.Contains(err.Error(), "tls-Pass") {
		t.Fatalf("error leaks the password: %v", err)
	}
	if n := len(f.connLog(1)); n != 0 {
		t.Fatalf("%d commands sent over an unverified connection", n)
	}
	// A plaintext client against the TLS server fails instead of hanging.
	c3 := testRESPClient(t, respConfig{address: f.addr, ioTimeout: 5 * time.Second})
	if _, err := c3.pipeline(context.Background(), [][]string{{"PING"}}); err == nil {
		t.Fatal("plaintext against TLS succeeded")
	}
}

func parseRESP(data string) (respValue, error) {
	return readRESPReply(bufio.NewReaderSize(strings.NewReader(data), respBufSize), 0)
}

func TestRESPReplyParser(t *testing.T) {
	nested := "*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n" // depth 8
	ok := []struct {
		in   string
		want respValue
	}{
		{"+OK\r\n", respValue{kind: '+', str: "OK"}},
		{"+\r\n", respValue{kind: '+'}},
		{"-ERR unknown command 'FOO'\r\n", respValue{kind: '-', str: "ERR unknown command 'FOO'"}},
		{":1000\r\n", respValue{kind: ':', int: 1000}},
		{":-9223372036854775808\r\n", respValue{kind: ':', int: -9223372036854775808}},
		{"$5\r\nhello\r\n", respValue{kind: '$', str: "hello"}},
		{"$0\r\n\r\n", respValue{kind: '$'}},
		{"$-1\r\n", respValue{kind: '$', null: true}},
		{"$4\r\na\r\nb\r\n", respValue{kind: '$', str: "a\r\nb"}},
		{"*0\r\n", respValue{kind: '*', array: []respValue{}}},
		{"*-1\r\n", respValue{kind: '*', null: true}},
		{"*2\r\n$3\r\nfoo\r\n:1\r\n", respValue{kind: '*', array: []respValue{{kind: '$', str: "foo"}, {kind: ':', int: 1}}}},
	}
	for _, tc := range ok {
		got, err := parseRESP(tc.in)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q:\n got %#v\nwant %#v", tc.in, got, tc.want)
		}
	}
	v, err := parseRESP(nested)
	if err != nil {
		t.Fatalf("depth 8: %v", err)
	}
	for i := 0; i < 8; i++ {
		if v.kind != '*' || len(v.array) != 1 {
			t.Fatalf("depth 8 level %d: %#v", i, v)
		}
		v = v.array[0]
	}
	if v.kind != ':' || v.int != 1 {
		t.Fatalf("depth 8 leaf: %#v", v)
	}
	bad := []string{
		"",
		"\r\n",
		"+OK\n",
		"+OK",
		":\r\n",
		":12a\r\n",
		":+5\r\n",
		":99999999999999999999\r\n",
		"$-2\r\n",
		"$67108865\r\n", // 64 MiB + 1
		"$60000000\r\nshort",
		"$5\r\nhello",
		"$5\r\nhelloXY",
		"$3\r\nhello\r\n",
		"*-2\r\n",
		"*1048577\r\n",
		"*3\r\n:1\r\n:2\r\n",
		"*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n", // depth 9
		"%1\r\n",
		"_\r\n",
		"+" + strings.Repeat("x", respBufSize) + "\r\n",
	}
	for _, in := range bad {
		if v, err := parseRESP(in); err == nil {
			t.Errorf("%.40q parsed as %#v, want an error", in, v)
		}
	}
}

// encodeRESPValue is the wire form of a reply (the parser's inverse).
func encodeRESPValue(v respValue) string {
	switch v.kind {
	case '+', '-':
		return string(v.kind) + v.str + "\r\n"
	case ':':
		return ":" + strconv.FormatInt(v.int, 10) + "\r\n"
	case '$':
		if v.null {
			return "$-1\r\n"
		}
		return fakeRESPBulk(v.str)
	case '*':
		if v.null {
			return "*-1\r\n"
		}
		out := "*" + strconv.Itoa(len(v.array)) + "\r\n"
		for i := 0; i < len(v.array); i++ {
			out += encodeRESPValue(v.array[i])
		}
		return out
	}
	return "?"
}

func respDepth(v respValue) int {
	d := 0
	for i := 0; i < len(v.array); i++ {
		if n := respDepth(v.array[i]); n > d {
			d = n
		}
	}
	if v.kind == '*' && !v.null {
		return d + 1
	}
	return d
}

func FuzzRESPReply(f *testing.F) {
	seeds := []string{
		"+OK\r\n", "-ERR x\r\n", ":1\r\n", ":-0\r\n", "$5\r\nhello\r\n", "$-1\r\n", "$0\r\n\r\n",
		"*2\r\n$3\r\nfoo\r\n:1\r\n", "*-1\r\n", "*0\r\n", "*1\r\n*1\r\n*0\r\n",
		"$67108864\r\n", "*1048576\r\n", "$3\r\nab", "+OK\r\n:2\r\n$1\r\nx\r\n",
		"*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		br := bufio.NewReaderSize(bytes.NewReader(data), respBufSize)
		for i := 0; i < 64; i++ {
			v, err := readRESPReply(br, 0)
			if err != nil {
				return
			}
			if d := respDepth(v); d > respMaxDepth {
				t.Fatalf("depth %d accepted", d)
			}
			// A parsed reply re-encodes to something that parses back to
			// the same value.
			again, err := parseRESP(encodeRESPValue(v))
			if err != nil {
				t.Fatalf("re-encoded %#v does not parse: %v", v, err)
			}
			if !reflect.DeepEqual(again, v) {
				t.Fatalf("round trip:\n got %#v\nwant %#v", again, v)
			}
		}
	})
}

func TestRESPCommandEncoding(t *testing.T) {
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	if err := writeRESPCommand(w, []string{"SET", "k", "", "a\r\nb"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n$4\r\na\r\nb\r\n"
	if buf.String() != want {
		t.Fatalf("encoded %q, want %q", buf.String(), want)
	}
	args, used, err := parseFakeRESPCommand(buf.Bytes())
	if err != nil || used != len(want) || !reflect.DeepEqual(args, []string{"SET", "k", "", "a\r\nb"}) {
		t.Fatalf("fake parse: %v %d %v", args, used, err)
	}
}
