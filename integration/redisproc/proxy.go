package redisproc

import (
	"sync"

	"github.com/llmgateway/llmgateway/integration/tcpproxy"
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

	tcp *tcpproxy.Proxy

	mu    sync.Mutex
	turns []*Turn
	conns map[int]*connState
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
// connection to target (through integration/tcpproxy, observing).
func StartProxy(target string) (*Proxy, error) {
	p := &Proxy{conns: map[int]*connState{}}
	tcp, err := tcpproxy.Start(target, p.observe)
	if err != nil {
		return nil, err
	}
	p.tcp, p.Addr = tcp, tcp.Addr
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
func (p *Proxy) Close() { p.tcp.Close() }

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

// observe records a chunk of connection id's traffic.
func (p *Proxy) observe(id int, fromClient bool, b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.conns[id]
	if st == nil {
		st = &connState{p: p, id: id, serverSpoke: true}
		p.conns[id] = st
	}
	st.observe(b, fromClient)
}

// observe parses b; the caller holds Proxy.mu.
func (st *connState) observe(b []byte, fromClient bool) {
	p := st.p
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
