package tcpproxy

import (
	"bufio"
	"net"
	"testing"
	"time"
)

// echoServer answers every line with the same line.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadBytes('\n')
					if err != nil {
						return
					}
					if _, err := c.Write(line); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// The server's replies come back in order, each at least the delay after
// it was sent; with the delay back at zero the connection keeps working.
func TestDelayedRepliesInOrder(t *testing.T) {
	p, err := Start(echoServer(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	r := bufio.NewReader(c)

	const delay = 150 * time.Millisecond
	p.SetDelay(delay)
	if got := p.Delay(); got != delay {
		t.Fatalf("Delay() = %v, want %v", got, delay)
	}
	sent := time.Now()
	for _, line := range []string{"one\n", "two\n", "three\n"} {
		if _, err := c.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"one\n", "two\n", "three\n"} {
		got, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("reply %q, want %q", got, want)
		}
	}
	if elapsed := time.Since(sent); elapsed < delay {
		t.Fatalf("the replies arrived %v after the requests, before the %v delay", elapsed, delay)
	}

	p.SetDelay(0)
	if _, err := c.Write([]byte("four\n")); err != nil {
		t.Fatal(err)
	}
	if got, err := r.ReadString('\n'); err != nil || got != "four\n" {
		t.Fatalf("after the delay was lifted: %q, %v", got, err)
	}
}

// Close drops what is still held back and ends the client's connection.
func TestCloseDropsHeldReplies(t *testing.T) {
	p, err := Start(echoServer(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p.SetDelay(time.Hour)
	if _, err := c.Write([]byte("held\n")); err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	go func() {
		p.Close()
		close(closed)
	}()
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	buf := make([]byte, 16)
	n, err := c.Read(buf)
	if err == nil {
		t.Fatalf("read %q from a closed proxy, want an error", buf[:n])
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the client's connection stayed open after Close")
	}
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("Close did not return")
	}
}
