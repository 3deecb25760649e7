package gateway

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSlowUploadsCannotStarveOthers: 100 clients trickle request bodies
// (most stall after a few bytes, some keep sending a byte at a time) and
// take every body-admission slot. Each is cut with a 408 once its upload
// has not delivered a chunk within the stall timeout, and a normal
// client, refused with 503 while the slots are held, is served again.
func TestSlowUploadsCannotStarveOthers(t *testing.T) {
	up := newFakeUpstream(t, okJSON(`{"id":"ok"}`))
	g, srv, _ := serveTestGateway(t, timeoutConfig(up.URL, "", ""), nil, func(g *Gateway) {
		g.admission.stall = 300 * time.Millisecond
	})
	addr := strings.TrimPrefix(srv.URL, "http://")
	const tricklers = 100
	results := make(chan string, tricklers)
	for i := 0; i < tricklers; i++ {
		steady := i%10 == 0 // a byte every 20 ms: progress, but no chunk
		go func() {
			answer := "the trickler panicked"
			defer func() {
				_ = recover()
				results <- answer
			}()
			answer = trickleUpload(addr, steady)
		}()
	}
	// Every slot taken (the self-tuned count, at most 100 here).
	deadline := time.Now().Add(10 * time.Second)
	for g.admission.inUse.Load() < g.admission.max {
		if time.Now().After(deadline) {
			t.Fatalf("the tricklers took %d of %d slots", g.admission.inUse.Load(), g.admission.max)
		}
		time.Sleep(5 * time.Millisecond)
	}
	body := `{"model":"m1","messages":[{"role":"user","content":"hi"}]}`
	if status, _, got := do(t, "POST", srv.URL+"/v1/chat/completions", testAliceKey, body); status != http.StatusServiceUnavailable {
		t.Fatalf("with every slot held: %d %s, want 503", status, got)
	}
	served := false
	for !served {
		if time.Now().After(deadline) {
			t.Fatal("a normal client was not served while the tricklers kept trickling")
		}
		status, _, got := do(t, "POST", srv.URL+"/v1/chat/completions", testAliceKey, body)
		switch status {
		case http.StatusOK:
			served = true
		case http.StatusServiceUnavailable:
			time.Sleep(20 * time.Millisecond)
		default:
			t.Fatalf("normal client: %d %s", status, got)
		}
	}
	for i := 0; i < tricklers; i++ {
		select {
		case got := <-results:
			if !strings.HasPrefix(got, "HTTP/1.1 408") && !strings.HasPrefix(got, "HTTP/1.1 503") {
				t.Fatalf("a trickler got %q, want a 408 (or a 503 when it found no slot)", got)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("only %d of %d tricklers were answered", i, tricklers)
		}
	}
}

// trickleUpload sends a chat request whose 2,000-byte body never completes —
// a few bytes, then nothing (or, steady, a byte every 20 ms until the
// connection closes) — and returns the response's status line.
func trickleUpload(addr string, steady bool) string {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return "dial: " + err.Error()
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(20 * time.Second))
	head := "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + testAliceKey +
		"\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(2000) + "\r\n\r\n{\"model\":"
	if _, err := nc.Write([]byte(head)); err != nil {
		return "write: " + err.Error()
	}
	if steady {
		go func() {
			defer func() { _ = recover() }()
			for i := 0; i < 1000; i++ {
				time.Sleep(20 * time.Millisecond)
				if _, err := nc.Write([]byte(" ")); err != nil {
					return // answered and closed
				}
			}
		}()
	}
	line, err := bufio.NewReader(nc).ReadString('\n')
	if err != nil {
		return "read: " + err.Error()
	}
	return line
}

// plainWriter hides every optional interface of the writer it wraps, as
// Traefik's writer does for the plugin: no read deadline can be set
// through it. (Explicit methods: Yaegi cannot build a struct embedding
// an interface.)
type plainWriter struct{ w http.ResponseWriter }

func (p plainWriter) Header() http.Header         { return p.w.Header() }
func (p plainWriter) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p plainWriter) WriteHeader(status int)      { p.w.WriteHeader(status) }

// TestSlowUploadsEvictedWithoutReadDeadlines: where the writer cannot
// set a read deadline (the Traefik plugin form), 100 stalled uploads
// still cannot starve other users — each stalled read's slot is evicted
// after the stall timeout — and an upload that resumes after its
// eviction gets the 408. Closing the stalled connections ends every
// read and leaves no slot taken.
func TestSlowUploadsEvictedWithoutReadDeadlines(t *testing.T) {
	up := newFakeUpstream(t, okJSON(`{"id":"ok"}`))
	cfg, err := DecodeConfigJSON([]byte(timeoutConfig(up.URL, "", "")))
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(nil, cfg, Options{Name: "test", LogOutput: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	g.admission.stall = 300 * time.Millisecond
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := http.NewResponseController(plainWriter{w}).SetReadDeadline(time.Now()); err == nil {
			panic("plainWriter set a read deadline")
		}
		g.ServeHTTP(plainWriter{w}, r)
	}))
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	head := "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + testAliceKey +
		"\r\nContent-Type: application/json\r\nContent-Length: 2000\r\n\r\n{\"model\":"
	const tricklers = 100
	conns := make([]net.Conn, 0, tricklers)
	defer func() {
		for i := 0; i < len(conns); i++ {
			conns[i].Close()
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	// The upload that will resume: it holds a slot before the others
	// come.
	for len(conns) < tricklers {
		if len(conns) == 1 {
			for g.admission.inUse.Load() < 1 {
				if time.Now().After(deadline) {
					t.Fatal("the first upload never took a slot")
				}
				time.Sleep(2 * time.Millisecond)
			}
		}
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, nc)
		if _, err := nc.Write([]byte(head)); err != nil {
			t.Fatal(err)
		}
	}
	// More stalled uploads than slots: without eviction every slot stays
	// taken and a normal client gets 503 until the uploads give up.
	if g.admission.max >= int64(tricklers) {
		t.Fatalf("%d slots: the test needs fewer than %d", g.admission.max, tricklers)
	}
	body := `{"model":"m1","messages":[{"role":"user","content":"hi"}]}`
	client := &http.Client{Timeout: 5 * time.Second}
	for {
		s, got, err := postChat(client, srv.URL, testAliceKey, body)
		if err == nil && s == http.StatusOK {
			break
		}
		if err != nil || s != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("normal client beside stalled uploads: %d %v %s", s, err, got)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Every stalled upload's slot is evicted (the first one's included),
	// while their reads still wait.
	for g.admission.inUse.Load() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d slots still held by stalled uploads", g.admission.inUse.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The first upload resumes after its eviction: 408.
	late := conns[0]
	_ = late.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := late.Write([]byte(`"m1"` + strings.Repeat(" ", 2000-len(`{"model":"m1"`)-1) + `}`)); err != nil {
		t.Fatal(err)
	}
	status, err := bufio.NewReader(late).ReadString('\n')
	if err != nil || !strings.HasPrefix(status, "HTTP/1.1 408") {
		t.Fatalf("resumed upload after eviction: %q %v, want a 408", status, err)
	}
	// Every stalled read ends when its client goes; no slot stays taken.
	for i := 0; i < len(conns); i++ {
		conns[i].Close()
	}
	for g.admission.inUse.Load() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d slots still taken after every stalled client left", g.admission.inUse.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The body-admission semaphore never hands out more than its slots,
// refuses a take when all are held, and is back at zero once every
// holder gave its slot back — a release twice (holder and eviction)
// counting once.
func TestBodySlotsBounded(t *testing.T) {
	b := newBodyAdmission(3)
	held := []*bodySlot{takeBodySlot(b), takeBodySlot(b), takeBodySlot(b)}
	for i, s := range held {
		if s == nil {
			t.Fatalf("take %d of 3 refused", i+1)
		}
	}
	if takeBodySlot(b) != nil {
		t.Fatal("a fourth slot was handed out")
	}
	evictSlot(held[0])
	releaseSlot(held[0]) // the holder's own release after the eviction
	if got := b.inUse.Load(); got != 2 {
		t.Fatalf("%d slots in use after one eviction and its release, want 2", got)
	}
	releaseSlot(held[1])
	releaseSlot(held[2])

	var wg sync.WaitGroup
	var over atomic.Int64
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				s := takeBodySlot(b)
				if s == nil {
					continue
				}
				if n := b.inUse.Load(); n > b.max {
					over.Store(n)
				}
				releaseSlot(s)
			}
		}()
	}
	wg.Wait()
	if n := over.Load(); n != 0 {
		t.Fatalf("%d slots were in use at once, bound %d", n, b.max)
	}
	if got := b.inUse.Load(); got != 0 {
		t.Fatalf("%d slots in use after every holder left", got)
	}
}
