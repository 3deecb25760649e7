package redisproc

import (
	"net"
	"sync"
)

// Proxy is a TCP proxy in front of a Redis server that records, per client
// connection, every request/response turn: a turn starts with the first
// byte the client sends after the server last sent something (or after
// connecting) and holds every command the client sends until the server
// answers. A client that writes a whole pipeline and then reads all its
// replies — one network round trip — makes exactly one turn, however
// many commands the pipeline holds; a client that waits for a reply
// before sending the next command makes one turn per command.
//
// Replies are parsed too and attributed to the commands in order, so a
// turn that began while earlier commands were still unanswered (a
// pipeline split across turns, which would make the count ambiguous) is
// visible as Turn.Pending > 0.
type Proxy struct {
	// Addr is the proxy's listen address (point the client here).
	Addr string

	target string
	ln     net.Listener
	wg     sync.WaitGroup

	mu     sync.Mutex
	turns  []*Turn
	conns  []net.Conn
	nconn  int
	closed bool
}

// Turn is one request/response exchange on one client connection.
type Turn struct {
	// Conn numbers the client connection (0, 1, ... in accept order).
	Conn int
	// Seq orders turns across connections by their first byte.
	Seq int
	// Commands are the commands the client sent in this turn.
	Commands [][]string
	// Replies counts the replies the server sent to these commands.
	Replies int
	// Pending is how many earlier commands on the connection were still
	// unanswered when the turn began (0 for a clean round trip).
	Pending int
}

// StartProxy listens on a free loopback port and forwards every
// connection to target.
func StartProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target, ln: ln}
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Turns returns a copy of the turns recorded so far, in Seq order.
func (p *Proxy) Turns() []Turn {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Turn, len(p.turns))
	for i, t := range p.turns {
		out[i] = *t
		out[i].Commands = append([][]string(nil), t.Commands...)
	}
	return out
}

// Reset forgets the recorded turns (connections stay open).
func (p *Proxy) Reset() {
	p.mu.Lock()
	p.turns = nil
	p.mu.Unlock()
}

// Close stops accepting, closes every proxied connection and waits for
// the forwarding goroutines.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	conns := append([]net.Conn(nil), p.conns...)
	p.mu.Unlock()
	_ = p.ln.Close()
	for _, c := range conns {
		_ = c.Close()
	}
	p.wg.Wait()
}

func (p *Proxy) acceptLoop() {
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
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			_ = client.Close()
			_ = server.Close()
			return
		}
		id := p.nconn
		p.nconn++
		p.conns = append(p.conns, client, server)
		p.mu.Unlock()
		st := &connState{p: p, id: id, serverSpoke: true}
		p.wg.Add(2)
		go st.pump(client, server, true)
		go st.pump(server, client, false)
	}
}

// connState tracks one proxied connection; guarded by Proxy.mu.
type connState struct {
	p  *Proxy
	id int
	// serverSpoke is true when the server sent something after the
	// client's last bytes: the client's next byte starts a new turn.
	serverSpoke bool
	cur         *Turn
	fromClient  []byte  // unparsed client bytes
	fromServer  []byte  // unparsed server bytes
	waiting     []*Turn // one entry per unanswered command, in order
}

// pump copies src to dst, recording what passes.
func (st *connState) pump(src, dst net.Conn, fromClient bool) {
	defer st.p.wg.Done()
	defer func() {
		_ = src.Close()
		_ = dst.Close()
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			st.observe(buf[:n], fromClient)
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF or a closed connection: tear down both sides
		}
	}
}

func (st *connState) observe(b []byte, fromClient bool) {
	p := st.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if !fromClient {
		st.serverSpoke = true
		st.fromServer = append(st.fromServer, b...)
		for len(st.fromServer) > 0 {
			used, err := SkipReply(st.fromServer)
			if err != nil || used == 0 {
				return
			}
			st.fromServer = st.fromServer[used:]
			if len(st.waiting) > 0 {
				st.waiting[0].Replies++
				st.waiting = st.waiting[1:]
			}
		}
		return
	}
	if st.serverSpoke || st.cur == nil {
		st.cur = &Turn{Conn: st.id, Seq: len(p.turns), Pending: len(st.waiting)}
		p.turns = append(p.turns, st.cur)
		st.serverSpoke = false
	}
	st.fromClient = append(st.fromClient, b...)
	for len(st.fromClient) > 0 {
		args, used, err := ParseCommand(st.fromClient)
		if err != nil || used == 0 {
			return
		}
		st.fromClient = st.fromClient[used:]
		st.cur.Commands = append(st.cur.Commands, args)
		st.waiting = append(st.waiting, st.cur)
	}
}
