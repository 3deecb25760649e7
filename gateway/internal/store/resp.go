package store

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/chans"
)

// A hand-rolled, stdlib-only RESP2 client (go-redis is not Yaegi-
// interpretable): a small connection pool and pipelined exchanges. Works
// against Redis, Valkey and Dragonfly. The wire format is resp_wire.go.

const (
	// respBufSize sizes each connection's reader. A reply line
	// (everything but a bulk payload) longer than this is a protocol error.
	respBufSize = 16 << 10

	respDefaultIOTimeout   = 2 * time.Second
	respDefaultDialTimeout = 2 * time.Second
)

// errRESPClosed is every call's error after close.
var errRESPClosed = errors.New("redis: client closed")

// respConfig configures a respClient. password is the resolved secret.
type respConfig struct {
	address, password      string
	db                     int
	tls                    bool
	poolSize               int
	dialTimeout, ioTimeout time.Duration
}

// respConn is one open connection with its reply buffer. Requests are
// encoded whole and written with one Write.
type respConn struct {
	nc net.Conn
	br *bufio.Reader
}

// respClient is a pooled RESP2 client. Construction never dials: the
// first exchange connects. At most poolSize connections are open at any
// time; idle ones are reused, and a caller finding every one busy waits
// for one (bounded by its ctx).
type respClient struct {
	cfg  respConfig
	host string // ServerName for TLS
	// tlsRoots overrides the system roots (tests only); nil verifies
	// against the host's trust store.
	tlsRoots *x509.CertPool

	// slots holds one token per open connection (idle or in use);
	// idle holds the open connections nobody is using.
	slots     chan struct{}
	idle      chan *respConn
	closed    chan struct{}
	closeOnce sync.Once

	// roundTrips counts pipeline calls: one write, one read of all
	// replies each.
	roundTrips atomic.Int64
}

// respAutoPoolSize is the self-tuned pool size: 2×GOMAXPROCS clamped to
// [4, 8]. An exchange is one short pipelined round trip, so a handful of
// connections covers many concurrent requests, and Redis itself is
// single-threaded per shard: more connections than this add contention,
// not throughput.
func respAutoPoolSize() int {
	n := 2 * runtime.GOMAXPROCS(0)
	if n < 4 {
		n = 4
	}
	if n > 8 {
		n = 8
	}
	return n
}

// newRESPClient returns a client for cfg without connecting. poolSize 0
// (or negative) self-tunes (respAutoPoolSize); above MaxPoolSize is
// clamped.
// Zero timeouts default to 2s.
func newRESPClient(cfg respConfig) *respClient {
	if cfg.poolSize <= 0 {
		cfg.poolSize = respAutoPoolSize()
	}
	if cfg.poolSize > MaxPoolSize {
		cfg.poolSize = MaxPoolSize
	}
	if cfg.ioTimeout <= 0 {
		cfg.ioTimeout = respDefaultIOTimeout
	}
	if cfg.dialTimeout <= 0 {
		cfg.dialTimeout = respDefaultDialTimeout
	}
	host, _, err := net.SplitHostPort(cfg.address)
	if err != nil {
		host = cfg.address
	}
	c := &respClient{cfg: cfg, host: host}
	c.slots = make(chan struct{}, cfg.poolSize)
	c.idle = make(chan *respConn, cfg.poolSize)
	c.closed = make(chan struct{})
	return c
}

// roundTripCount reports how many pipeline calls ran.
func (c *respClient) roundTripCount() int64 {
	return c.roundTrips.Load()
}

// close closes the idle connections; connections in use are closed when
// released. Later calls fail fast with errRESPClosed.
func (c *respClient) close() {
	c.closeOnce.Do(func() {
		close(c.closed)
	})
	c.drainIdle()
}

func (c *respClient) isClosed() bool {
	return chans.Closed(c.closed)
}

// drainIdle closes every idle connection.
func (c *respClient) drainIdle() {
	for {
		v, ok := chans.TryRecv(c.idle)
		if !ok {
			return
		}
		c.discard(v.(*respConn))
	}
}

// discard closes cn and frees its slot.
func (c *respClient) discard(cn *respConn) {
	_ = cn.nc.Close()
	chans.TryRecvUnit(c.slots)
}

// get returns an idle connection (reused true) or dials a new one when
// under the cap, waiting for either while ctx allows.
func (c *respClient) get(ctx context.Context) (*respConn, bool, error) {
	if c.isClosed() {
		return nil, false, errRESPClosed
	}
	if v, ok := chans.TryRecv(c.idle); ok {
		return v.(*respConn), true, nil
	}
	i, v, _ := chans.Wait(chans.Recv(c.idle), chans.Send(c.slots, struct{}{}), chans.Recv(c.closed), chans.Recv(ctx.Done()))
	switch i {
	case 0:
		return v.(*respConn), true, nil
	case 1:
		cn, err := c.dial(ctx)
		if err != nil {
			<-c.slots
			return nil, false, err
		}
		return cn, false, nil
	case 2:
		return nil, false, errRESPClosed
	}
	return nil, false, ctx.Err()
}

// dial opens, secures and prepares one connection: TLS when configured,
// then AUTH (when a password is set) and SELECT (when db != 0) in one
// pipelined round trip. db 0 is every connection's initial database, so
// SELECT 0 is skipped.
func (c *respClient) dial(ctx context.Context) (*respConn, error) {
	dctx, cancel := context.WithTimeout(ctx, c.cfg.dialTimeout)
	defer cancel()
	d := &net.Dialer{Timeout: c.cfg.dialTimeout}
	nc, err := d.DialContext(dctx, "tcp", c.cfg.address)
	if err != nil {
		if cerr := ctxDone(ctx); cerr != nil {
			return nil, cerr
		}
		return nil, c.scrub("redis: dial "+c.cfg.address, err)
	}
	if c.cfg.tls {
		tc := tls.Client(nc, &tls.Config{
			ServerName: c.host,
			RootCAs:    c.tlsRoots,
			MinVersion: tls.VersionTLS12,
		})
		if err := tc.HandshakeContext(dctx); err != nil {
			_ = nc.Close()
			if cerr := ctxDone(ctx); cerr != nil {
				return nil, cerr
			}
			return nil, c.scrub("redis: TLS handshake with "+c.cfg.address, err)
		}
		nc = tc
	}
	cn := &respConn{
		nc: nc,
		br: bufio.NewReaderSize(nc, respBufSize),
	}
	var setup [][]string
	if c.cfg.password != "" {
		setup = append(setup, []string{"AUTH", c.cfg.password})
	}
	if c.cfg.db != 0 {
		setup = append(setup, []string{"SELECT", strconv.Itoa(c.cfg.db)})
	}
	if len(setup) == 0 {
		return cn, nil
	}
	var req []byte
	for i := 0; i < len(setup); i++ {
		req = appendRESPCommand(req, setup[i])
	}
	bt := &respBatch{req: req, replies: make([]respValue, len(setup))}
	err = respExchange(dctx, c, cn, bt, nil)
	replies := bt.replies
	if err != nil {
		_ = nc.Close()
		if cerr := ctxDone(ctx); cerr != nil {
			return nil, cerr
		}
		return nil, c.scrub("redis: connection setup", err)
	}
	for i := 0; i < len(replies); i++ {
		if replies[i].kind == '-' {
			_ = nc.Close()
			return nil, c.scrub("redis: "+setup[i][0]+" failed", errors.New(replies[i].str))
		}
	}
	return cn, nil
}

// scrub wraps err under msg, redacting the password from its text.
func (c *respClient) scrub(msg string, err error) error {
	text := err.Error()
	if c.cfg.password != "" {
		text = strings.ReplaceAll(text, c.cfg.password, "[REDACTED]")
	}
	return &respError{msg: msg + ": " + text, cause: err}
}

// respError is a client error whose text is safe to log; Unwrap keeps
// errors.Is working for timeouts and the like.
type respError struct {
	msg   string
	cause error
}

func (e *respError) Error() string { return e.msg }
func (e *respError) Unwrap() error { return e.cause }

// pipeline writes every command in one write and reads exactly
// len(cmds) replies (see respDo).
func (c *respClient) pipeline(ctx context.Context, cmds [][]string) ([]respValue, error) {
	if len(cmds) == 0 {
		return nil, nil
	}
	var req []byte
	for i := 0; i < len(cmds); i++ {
		req = appendRESPCommand(req, cmds[i])
	}
	bt := &respBatch{req: req, replies: make([]respValue, len(cmds))}
	if err := respDo(ctx, c, bt); err != nil {
		return nil, err
	}
	return bt.replies, nil
}

// respDo runs bt on one of c's connections: its commands in one write,
// then every reply. An error reply is a value of kind '-'; a Go error
// means the exchange failed (I/O, protocol, timeout) and the connection
// was closed; when ctx ended first the error is ctx.Err() itself, so
// errors.Is(err, context.Canceled) holds compiled and interpreted. A
// pooled connection that fails before any reply byte arrives (typically
// closed by the server while idle) is retried once on another
// connection: semantics are at-least-once.
//
// This is the client's hot path under the interpreter, where a method
// call on our own types costs several microseconds and a select does
// not: it is a plain function, and the common paths of get and release
// (an idle connection taken, a healthy one put back) are inlined.
func respDo(ctx context.Context, c *respClient, bt *respBatch) error {
	c.roundTrips.Add(1)
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		// get, inlined: an idle connection when there is one.
		var cn *respConn
		reused := false
		if chans.Closed(c.closed) {
			return errRESPClosed
		}
		if v, ok := chans.TryRecv(c.idle); ok {
			cn = v.(*respConn)
			reused = true
		}
		if cn == nil {
			got, wasIdle, err := c.get(ctx)
			if err != nil {
				return err
			}
			cn = got
			reused = wasIdle
		}
		noReply := false
		err := respExchange(ctx, c, cn, bt, &noReply)
		if err == nil {
			// The healthy connection goes back to the idle pool.
			if chans.Closed(c.closed) {
				c.discard(cn)
				return nil
			}
			if !chans.TrySend(c.idle, cn) {
				// Cannot happen (idle has room for every slot); never leak.
				c.discard(cn)
			}
			if chans.Closed(c.closed) {
				c.drainIdle()
			}
			return nil
		}
		c.discard(cn)
		if cerr := ctxDone(ctx); cerr != nil {
			return cerr
		}
		if reused && noReply && attempt == 0 && !isTimeout(err) {
			// The server likely dropped its idle connections (restart,
			// idle timeout): the rest of the pool is stale too.
			c.drainIdle()
			continue
		}
		return c.scrub("redis", err)
	}
}

// ctxDone is ctx.Err(), or DeadlineExceeded as soon as ctx's deadline
// has passed (a connection deadline set from it can fire a hair before
// the context's own timer).
func ctxDone(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// respWatchBeyond is the shortest time to the deadline for which an
// exchange watches its context for cancellation.
const respWatchBeyond = 2 * time.Second

// respExchange runs one write-all/read-all round trip of bt on cn. The
// deadline is the earlier of ctx's and ioTimeout; cancelling ctx
// mid-exchange interrupts it unless the deadline is at most
// respWatchBeyond away (the deadline then ends it soon enough). When noReply is non-nil it reports whether
// the failure happened before any reply byte arrived.
func respExchange(ctx context.Context, c *respClient, cn *respConn, bt *respBatch, noReply *bool) error {
	deadline := time.Now().Add(c.cfg.ioTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := cn.nc.SetDeadline(deadline); err != nil {
		return err
	}
	// A cancellation watcher (a goroutine: ~20 µs interpreted) only when
	// the deadline is far: a near one already bounds the exchange, and the
	// limiter's calls come through the Guarded store's short timeout.
	if done := ctx.Done(); done != nil && time.Until(deadline) > respWatchBeyond {
		stop := make(chan struct{})
		exited := make(chan struct{})
		nc := cn.nc
		go func() {
			defer close(exited)
			defer func() { _ = recover() }()
			if i, _, _ := chans.Wait(chans.Recv(done), chans.Recv(stop)); i == 0 {
				// Unblock the reader/writer now; the caller closes nc.
				_ = nc.SetDeadline(time.Unix(1, 0))
			}
		}()
		// The watcher has exited before the connection can go back to
		// the pool, so it never touches a deadline set by a later user.
		defer func() {
			close(stop)
			<-exited
		}()
	}
	if _, err := cn.nc.Write(bt.req); err != nil {
		if noReply != nil {
			*noReply = true
		}
		return err
	}
	if _, err := cn.br.Peek(1); err != nil {
		if noReply != nil {
			*noReply = true
		}
		return err
	}
	return readRESPBatch(cn.br, bt)
}
