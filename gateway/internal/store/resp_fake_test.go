package store

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeRESP: an in-process RESP2 server for the client tests; it records
// commands, how many arrived per read, and connections.

// fakeRESP is an in-process RESP2 server: enough of AUTH, SELECT, PING,
// INCRBY, EXPIRE, MGET, GET and SET for the client and store tests. It
// records every command per connection and how many commands each Read
// delivered. Options are set before startFakeRESP.
type fakeRESP struct {
	password string      // AUTH required when set
	echoPass bool        // a failed AUTH echoes the password it got
	silent   bool        // never answer
	batch    int         // hold replies until this many commands are pending
	breakOn  string      // first command with this name: partial reply, close
	tlsCfg   *tls.Config // serve TLS
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

// parseFakeRESPCommand parses one client command (an array of bulk
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

// respWaitFor polls cond for up to 10s, failing the test when it never
// holds.
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
