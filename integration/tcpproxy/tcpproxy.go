// Package tcpproxy is the one loopback TCP proxy of the integration
// tests. It forwards every connection it accepts to a target and can
// do two things on the way: show every chunk that passes to an observer
// (redisproc counts Redis round trips with it), and hold back what the
// server sends (a Redis on an overloaded host or a congested link).
//
// The client's bytes are forwarded at once; every chunk the server sends
// reaches the client Delay after the proxy read it, in order, so a reply
// queues behind the slow ones before it the way it would on a slow
// connection. The delay can change while connections are open: it applies
// to the chunks read after the change.
package tcpproxy

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Observer sees every chunk read from a connection, before it is
// forwarded: conn numbers the client connections in accept order (0, 1,
// ...), fromClient tells the direction. Chunks of one direction arrive in
// order, from one goroutine; the two directions of a connection arrive
// from two goroutines.
type Observer func(conn int, fromClient bool, b []byte)

// Proxy forwards every connection it accepts on Addr to its target.
type Proxy struct {
	// Addr is the loopback address to point the client at.
	Addr string

	target  string
	observe Observer
	ln      net.Listener
	delay   atomic.Int64 // nanoseconds
	done    chan struct{}
	wg      sync.WaitGroup

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	nconn  int
	closed bool
}

// Start listens on a free loopback port and forwards to target; observe
// may be nil.
func Start(target string, observe Observer) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target, observe: observe, ln: ln,
		done: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// SetDelay sets how long each server chunk is held back (0: none).
func (p *Proxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// Delay is the current delay.
func (p *Proxy) Delay() time.Duration { return time.Duration(p.delay.Load()) }

// Close stops accepting, closes every connection (dropping what was
// still held back) and waits for the forwarding goroutines.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	close(p.done)
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	_ = p.ln.Close()
	p.wg.Wait()
}

// track registers a connection pair for Close and numbers it; false when
// the proxy is closing.
func (p *Proxy) track(client, server net.Conn) (int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0, false
	}
	p.conns[client] = struct{}{}
	p.conns[server] = struct{}{}
	id := p.nconn
	p.nconn++
	return id, true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		id, ok := p.track(client, server)
		if !ok {
			_ = client.Close()
			_ = server.Close()
			return
		}
		p.wg.Add(2)
		go p.forward(id, client, server)
		go p.delayed(id, server, client)
	}
}

func (p *Proxy) seen(id int, fromClient bool, b []byte) {
	if p.observe != nil {
		p.observe(id, fromClient, b)
	}
}

// forward copies the client's bytes to the server as they come; when the
// client is done, both connections close (the server's replies still
// held back are dropped, as a closed socket would drop them).
func (p *Proxy) forward(id int, client, server net.Conn) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := client.Read(buf)
		if n > 0 {
			p.seen(id, true, buf[:n])
			if _, werr := server.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	p.untrack(client)
	p.untrack(server)
}

// chunk is server bytes and when they may go to the client.
type chunk struct {
	data []byte
	due  time.Time
}

// delayed reads the server's bytes, stamps each chunk with its due time
// and hands it to a writer that waits for it.
func (p *Proxy) delayed(id int, server, client net.Conn) {
	defer p.wg.Done()
	queue := make(chan chunk, 4096)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for c := range queue {
			if wait := time.Until(c.due); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-t.C:
				case <-p.done:
					t.Stop()
					return
				}
			}
			if _, err := client.Write(c.data); err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := server.Read(buf)
		if n > 0 {
			p.seen(id, false, buf[:n])
			c := chunk{data: append([]byte(nil), buf[:n]...), due: time.Now().Add(p.Delay())}
			select {
			case queue <- c:
			case <-writerDone:
				err = io.ErrClosedPipe
			}
		}
		if err != nil {
			break
		}
	}
	close(queue)
	<-writerDone
	p.untrack(server)
	p.untrack(client)
}
