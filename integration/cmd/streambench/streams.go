package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// streamClient opens streamed chat completions against one target and
// holds them open, each on its own connection, reading what arrives. It
// speaks HTTP/1.1 over raw connections with one goroutine and a small
// buffer per stream, so the load generator stays cheap next to the
// process it measures. Connections come from several loopback source
// addresses (127.0.0.2, 127.0.0.3, ...), each with its own range of
// ephemeral ports.
type streamClient struct {
	addr    string // host:port of the target
	request []byte // the whole HTTP request, headers and body
	sources []net.IP
	next    atomic.Uint32

	events atomic.Int64 // SSE events received by all streams
	failed atomic.Int64 // streams that ended while they should be held

	mu       sync.Mutex
	conns    []net.Conn
	closing  bool
	firstErr string
	wg       sync.WaitGroup
}

func newStreamClient(addr, apiKey, model string, promptBytes, sources int) *streamClient {
	prompt := "Count slowly, forever."
	for len(prompt) < promptBytes {
		prompt += " Lorem ipsum dolor sit amet."
	}
	body := []byte(`{"model":"` + model + `","stream":true,"messages":[{"role":"user","content":"` + prompt[:promptBytes] + `"}]}`)
	var req bytes.Buffer
	fmt.Fprintf(&req, "POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: %d\r\n\r\n",
		addr, apiKey, len(body))
	req.Write(body)
	c := &streamClient{addr: addr, request: req.Bytes()}
	for i := 0; i < sources; i++ {
		c.sources = append(c.sources, net.IPv4(127, 0, 0, byte(2+i)))
	}
	return c
}

// open returns the number of streams held open.
func (c *streamClient) open() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.conns)
}

// openMore opens n more streams, parallel at a time, each counted once
// its response headers and first event arrived. It stops at the first
// stream that fails to open.
func (c *streamClient) openMore(ctx context.Context, n, parallel int) error {
	var (
		wg      sync.WaitGroup
		left    atomic.Int64
		errOnce sync.Once
		openErr error
	)
	left.Store(int64(n))
	for w := 0; w < parallel; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && left.Add(-1) >= 0 {
				if err := c.openOne(); err != nil {
					errOnce.Do(func() { openErr = err })
					left.Store(0)
					return
				}
			}
		}()
	}
	wg.Wait()
	if openErr != nil {
		return openErr
	}
	return ctx.Err()
}

func (c *streamClient) openOne() error {
	src := c.sources[int(c.next.Add(1))%len(c.sources)]
	d := net.Dialer{Timeout: 10 * time.Second, LocalAddr: &net.TCPAddr{IP: src}}
	conn, err := d.Dial("tcp", c.addr)
	if err != nil {
		return fmt.Errorf("dial %s from %s: %v", c.addr, src, err)
	}
	fail := func(format string, args ...interface{}) error {
		conn.Close()
		return fmt.Errorf(format, args...)
	}
	_ = conn.SetDeadline(time.Now().Add(60 * time.Second))
	if _, err := conn.Write(c.request); err != nil {
		return fail("write request: %v", err)
	}
	br := bufio.NewReaderSize(conn, 1024)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return fail("read response: %v", err)
	}
	buf := make([]byte, 512)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		n, _ := io.ReadFull(resp.Body, buf)
		return fail("status %d, Content-Type %q: %q", resp.StatusCode, resp.Header.Get("Content-Type"), buf[:n])
	}
	n, err := resp.Body.Read(buf)
	if n == 0 || !bytes.Contains(buf[:n], []byte("data: ")) {
		return fail("first event: %q (%v)", buf[:n], err)
	}
	_ = conn.SetDeadline(time.Time{})
	c.events.Add(int64(bytes.Count(buf[:n], lf2)))

	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		conn.Close()
		return errors.New("client closing")
	}
	c.conns = append(c.conns, conn)
	c.wg.Add(1)
	c.mu.Unlock()
	go c.hold(resp.Body, buf)
	return nil
}

var lf2 = []byte("\n\n")

// hold reads one stream until its connection is closed.
func (c *streamClient) hold(body io.Reader, buf []byte) {
	defer c.wg.Done()
	for {
		n, err := body.Read(buf)
		if n > 0 {
			c.events.Add(int64(bytes.Count(buf[:n], lf2)))
		}
		if err != nil {
			c.mu.Lock()
			if !c.closing {
				c.failed.Add(1)
				if c.firstErr == "" {
					c.firstErr = "stream ended while held: " + err.Error()
				}
			}
			c.mu.Unlock()
			return
		}
	}
}

// firstError is the first held stream's failure, or "".
func (c *streamClient) firstError() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.firstErr
}

// closeAll closes every stream's connection and waits for the readers.
func (c *streamClient) closeAll() {
	c.mu.Lock()
	c.closing = true
	conns := c.conns
	c.conns = nil
	c.mu.Unlock()
	for _, conn := range conns {
		conn.Close()
	}
	c.wg.Wait()
}
