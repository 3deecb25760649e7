package redisproc

import (
	"bufio"
	"net"
	"reflect"
	"testing"
	"time"
)

// The proxy's turn count is what the gateway's round-trip test relies
// on: one write of a pipeline + one read of all replies is one turn;
// command-by-command is one turn per command.
func TestProxyCountsTurns(t *testing.T) {
	s := Start(t)
	p, err := StartProxy(s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)

	nc, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(nc)

	// One pipelined turn of three commands.
	var pipe []byte
	pipe = append(pipe, EncodeCommand("INCRBY", "k", "5")...)
	pipe = append(pipe, EncodeCommand("EXPIRE", "k", "60")...)
	pipe = append(pipe, EncodeCommand("MGET", "k", "missing")...)
	if _, err := nc.Write(pipe); err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := 0; i < 3; i++ {
		v, err := ReadValue(br)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, v.String())
	}
	if want := []string{"5", "1", `["5" (nil)]`}; !reflect.DeepEqual(got, want) {
		t.Fatalf("replies %q, want %q", got, want)
	}
	// Two turns of one command each.
	for _, cmd := range [][]string{{"GET", "k"}, {"PING"}} {
		if _, err := nc.Write(EncodeCommand(cmd...)); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadValue(br); err != nil {
			t.Fatal(err)
		}
	}
	turns := p.Turns()
	if len(turns) != 3 {
		t.Fatalf("%d turns, want 3: %+v", len(turns), turns)
	}
	wantCmds := []int{3, 1, 1}
	for i, tr := range turns {
		if len(tr.Commands) != wantCmds[i] || tr.Replies != wantCmds[i] || tr.Pending != 0 || tr.Conn != 0 {
			t.Errorf("turn %d = %+v, want %d commands and replies, nothing pending", i, tr, wantCmds[i])
		}
	}
	if !reflect.DeepEqual(turns[0].Commands[2], []string{"MGET", "k", "missing"}) {
		t.Errorf("turn 0 commands %q", turns[0].Commands)
	}
}

func TestServerRestartKeepsPort(t *testing.T) {
	s := Start(t)
	c, err := Dial(s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Int("INCRBY", "x", "2"); err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if s.Running() || Ping(s.Addr) == nil {
		t.Fatal("server still answers after Stop")
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	c, err = Dial(s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// No persistence: the restarted server starts empty.
	if v, ok, err := c.Int("GET", "x"); err != nil || ok || v != 0 {
		t.Fatalf("GET x after restart = %d %v %v, want missing", v, ok, err)
	}
}

// With Options.Password the server refuses a client that has not sent
// AUTH, answers one that has, and keeps the password across Restart.
func TestServerPassword(t *testing.T) {
	s := StartWith(t, Options{Password: "pw-redisproc-test"})
	if err := Ping(s.Addr); err == nil {
		t.Fatal("PING without AUTH answered")
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := PingAuth(s.Addr, "pw-redisproc-test"); err != nil {
		t.Fatal(err)
	}
	if err := PingAuth(s.Addr, "wrong-password"); err == nil {
		t.Fatal("a wrong password was accepted")
	}
}

func TestParsers(t *testing.T) {
	b := append(EncodeCommand("SET", "k", "a\r\nb"), "*2\r\n$3\r\nGE"...)
	args, used, err := ParseCommand(b)
	if err != nil || !reflect.DeepEqual(args, []string{"SET", "k", "a\r\nb"}) {
		t.Fatalf("ParseCommand = %q %d %v", args, used, err)
	}
	if args, used, err := ParseCommand(b[used:]); err != nil || used != 0 || args != nil {
		t.Fatalf("incomplete command parsed: %q %d %v", args, used, err)
	}
	replies := "*3\r\n$1\r\na\r\n$-1\r\n:7\r\n+OK\r\n-ERR x\r\n"
	n1, err := SkipReply([]byte(replies))
	if err != nil || n1 != len("*3\r\n$1\r\na\r\n$-1\r\n:7\r\n") {
		t.Fatalf("SkipReply = %d %v", n1, err)
	}
	if n, err := SkipReply([]byte("*2\r\n:1\r\n")); n != 0 || err != nil {
		t.Fatalf("incomplete array: %d %v", n, err)
	}
}
