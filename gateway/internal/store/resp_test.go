package store

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

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
	// Construction never dials: every connection, open or being opened,
	// holds a pool slot, and none is taken.
	if n := len(c.slots); n != 0 {
		t.Fatalf("construction took %d pool slots, want 0", n)
	}
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
	// The fake holds every PING reply until the pool is full, so the
	// workers must open all three connections, whatever the scheduling.
	f := &fakeRESP{password: "pw-Secret-1"}
	f.handler = func(args []string) (string, bool) {
		if args[0] == "PING" {
			deadline := time.Now().Add(10 * time.Second)
			for f.accepted.Load() < 3 && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
		}
		return "", false
	}
	startFakeRESP(t, f)
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

// silentRESP is a fake server that reads commands and never answers.
func silentRESP(t *testing.T) *fakeRESP {
	return startFakeRESP(t, &fakeRESP{silent: true})
}

// commandArrived reports whether connection i of f has delivered a read.
func commandArrived(f *fakeRESP, i int) func() bool {
	return func() bool { return f.accepted.Load() > int64(i) && len(f.connReads(i)) > 0 }
}

// allClosed reports whether the server saw every connection it accepted
// end.
func allClosed(f *fakeRESP) func() bool {
	return func() bool { return f.ended.Load() == f.accepted.Load() }
}

// pipelineAsync runs one pipeline in a goroutine; its error arrives on
// the channel.
func pipelineAsync(c *respClient, ctx context.Context, cmds [][]string) chan error {
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- errors.New("panic")
			}
		}()
		_, err := c.pipeline(ctx, cmds)
		done <- err
	}()
	return done
}

// waitErr waits up to 10s for an error from pipelineAsync.
func waitErr(t *testing.T, what string, done chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not return", what)
		return nil
	}
}

func TestRESPContextAndTimeouts(t *testing.T) {
	t.Run("deadline", func(t *testing.T) {
		f := silentRESP(t)
		c := testRESPClient(t, respConfig{address: f.addr, ioTimeout: time.Minute})
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		_, err := c.pipeline(ctx, [][]string{{"PING"}})
		if err != context.DeadlineExceeded {
			t.Fatalf("err = %v, want context.DeadlineExceeded", err)
		}
		if len(c.idle) != 0 || len(c.slots) != 0 {
			t.Fatalf("timed-out connection kept: %d idle, %d slots taken", len(c.idle), len(c.slots))
		}
		respWaitFor(t, "the timed-out connection to close", allClosed(f))
	})

	t.Run("cancel", func(t *testing.T) {
		f := silentRESP(t)
		c := testRESPClient(t, respConfig{address: f.addr, ioTimeout: time.Minute})
		ctx, cancel := context.WithCancel(context.Background())
		done := pipelineAsync(c, ctx, [][]string{{"PING"}})
		// Cancel once the PING is on the wire: the client is blocked
		// reading the reply that never comes.
		respWaitFor(t, "the PING to reach the server", commandArrived(f, 0))
		cancel()
		if err := waitErr(t, "the cancelled pipeline", done); err != context.Canceled {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		// The interrupted connection is closed, not pooled.
		if len(c.idle) != 0 || len(c.slots) != 0 {
			t.Fatalf("cancelled connection kept: %d idle, %d slots taken", len(c.idle), len(c.slots))
		}
		respWaitFor(t, "the cancelled connection to close", func() bool { return f.accepted.Load() == 1 && f.ended.Load() == 1 })
		if _, err := c.pipeline(ctx, [][]string{{"PING"}}); err != context.Canceled {
			t.Fatalf("call with a cancelled ctx: %v", err)
		}
		if n := f.accepted.Load(); n != 1 {
			t.Fatalf("a call with a cancelled ctx dialed: %d connections", n)
		}
	})

	t.Run("ioTimeout", func(t *testing.T) {
		f := silentRESP(t)
		c := testRESPClient(t, respConfig{address: f.addr, ioTimeout: 200 * time.Millisecond})
		_, err := c.pipeline(context.Background(), [][]string{{"PING"}})
		if err == nil || !strings.Contains(err.Error(), "timeout") {
			t.Fatalf("err = %v, want an i/o timeout", err)
		}
		if n := f.accepted.Load(); n != 1 {
			t.Fatalf("%d connections, want 1: a timed-out exchange is not retried", n)
		}
		respWaitFor(t, "the timed-out connection to close", allClosed(f))
	})

	t.Run("waitForSlot", func(t *testing.T) {
		f := silentRESP(t)
		c := testRESPClient(t, respConfig{address: f.addr, poolSize: 1, ioTimeout: time.Minute})
		holdCtx, release := context.WithCancel(context.Background())
		held := pipelineAsync(c, holdCtx, [][]string{{"PING"}})
		respWaitFor(t, "the only connection to be busy", commandArrived(f, 0))
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		_, err := c.pipeline(ctx, [][]string{{"PING"}})
		if err != context.DeadlineExceeded {
			t.Fatalf("err = %v, want context.DeadlineExceeded while waiting for the pool", err)
		}
		if n := f.accepted.Load(); n != 1 {
			t.Fatalf("dialed beyond the pool cap: %d connections", n)
		}
		release()
		if err := waitErr(t, "the holder", held); err != context.Canceled {
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

// respTestCert returns a self-signed certificate for 127.0.0.1/localhost and
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
