package gateway

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// Body admission: a small semaphore held only while a unified or media
// request reads and decodes its body, bounding the memory that
// adversarially shaped bodies can take at once. It is never held across
// the upstream call, so it does not cap concurrent requests.

const maxBodySlots = 10000

// compileBodySlots sizes the semaphore: configured (clamped to 10000) or
// 16×GOMAXPROCS with a floor of 64. A slot covers the whole body read,
// including a slow client's upload, so the default leaves room for
// ordinary concurrency (64 × the 4 MiB cap bounds the bodies held at once
// to 256 MiB; our decode is a validation pass that allocates no tree).
func compileBodySlots(configured int) (int, bool, error) {
	if configured < 0 {
		return 0, false, fmt.Errorf("config: maxInFlightBodyRequests: %d must not be negative (0 self-tunes)", configured)
	}
	if configured > maxBodySlots {
		return maxBodySlots, true, nil
	}
	if configured > 0 {
		return configured, false, nil
	}
	n := 16 * runtime.GOMAXPROCS(0)
	if n < 64 {
		n = 64
	}
	return n, false, nil
}

// bodyAdmission is the semaphore — a count of the slots in use, taken
// only below max (a compare-and-swap: no channel, whose non-blocking
// operations are reflect calls under Yaegi, ~14 µs a take and release)
// — and the stall timeout of a body read under it (bodyStallTimeout;
// tests shorten it).
type bodyAdmission struct {
	inUse atomic.Int64
	max   int64
	stall time.Duration
}

func newBodyAdmission(n int) *bodyAdmission {
	return &bodyAdmission{max: int64(n), stall: bodyStallTimeout}
}

// bodySlot is one taken slot. It is given back once: by its holder when
// the body is read (releaseSlot), or — where no read deadline can be set
// (the Traefik plugin form) — early, by the stall timer of a read that
// stopped making progress (the slot is then evicted, and the read ends
// in a 408 whenever it returns).
type bodySlot struct {
	b       *bodyAdmission
	given   atomic.Bool
	evicted atomic.Bool
}

// takeBodySlot takes a slot without waiting; nil when every slot is busy
// (a 503). A plain function: the request path pays for every
// interpreted method call. The loop only retries a compare-and-swap
// another take or release won; it never waits.
func takeBodySlot(b *bodyAdmission) *bodySlot {
	for {
		n := b.inUse.Load()
		if n >= b.max {
			return nil
		}
		if b.inUse.CompareAndSwap(n, n+1) {
			return &bodySlot{b: b}
		}
	}
}

// releaseSlot gives the slot back unless that was done already (by the
// holder, or by the stall timer's eviction).
func releaseSlot(s *bodySlot) {
	if s.given.CompareAndSwap(false, true) {
		s.b.inUse.Add(-1)
	}
}

// evictSlot gives a stalled read's slot back and marks it evicted.
func evictSlot(s *bodySlot) {
	s.evicted.Store(true)
	releaseSlot(s)
}

func errBodyCapacity() *apiError {
	e := apierr.New(http.StatusServiceUnavailable, "server_error", "capacity",
		"the gateway is reading too many request bodies at once; retry shortly")
	e.RetryAfter = "1"
	return e
}

// readAdmitted reads the route's request body whole under a
// body-admission slot (413 over the route's cap, 408 when the upload
// stalls) and reads what the pipeline needs from it: a JSON body through
// the route's wire format; a multipart body (transcriptions) by locating
// its single model field.
func readAdmitted(g *Gateway, w http.ResponseWriter, r *http.Request, rt *route) (*jsonRequest, *apiError) {
	slot := takeBodySlot(g.admission)
	if slot == nil {
		return nil, errBodyCapacity()
	}
	// Given back by a defer even if a reader panics: a lost slot would
	// shrink the gateway's capacity for good.
	defer releaseSlot(slot)
	body, e := readRequestBody(w, r, rt.maxBodyBytes, slot)
	if e != nil {
		return nil, e
	}
	if rt.body == bodyMultipart {
		return multipartRequest(r.Header.Get("Content-Type"), body)
	}
	return rt.format.readRequest(body)
}

// bodyChunk is how much of a request body must arrive within the stall
// timeout while a body-admission slot is held (bodyStallTimeout: 64 KiB
// per 5 s, i.e. an upload slower than ~13 KiB/s is cut).
const (
	bodyChunk        = 64 << 10
	bodyStallTimeout = 5 * time.Second
)

// readRequestBody reads the whole body under slot, refusing one over
// limit with 413, under the stall deadline (readTimedBody).
func readRequestBody(w http.ResponseWriter, r *http.Request, limit int64, slot *bodySlot) ([]byte, *apiError) {
	if r.ContentLength > limit {
		return nil, errTooLarge(limit)
	}
	body, tooBig, e := readTimedBody(w, r.Body, r.ContentLength, limit, slot)
	if e != nil {
		return nil, e
	}
	if tooBig {
		return nil, errTooLarge(limit)
	}
	return body, nil
}

// readTimedBody reads a request body (declared bytes long, -1 when
// unknown) whole under slot, or reports tooBig past limit. Every chunk of
// bodyChunk bytes must arrive within the slot's stall timeout, so a slow
// or stalled upload cannot hold its body-admission slot: it gets a 408.
// The timeout is a connection read deadline pushed after each chunk
// (http.ResponseController) and cleared once the body is in; where the
// host's writer cannot set one (the Traefik plugin form), a timer reset
// after each chunk evicts the slot instead — the stalled read keeps
// waiting (until the client sends more or goes, or the host's own read
// timeout), but without the slot, and ends in the 408. A read error is a
// 400.
func readTimedBody(w http.ResponseWriter, body io.Reader, declared, limit int64, slot *bodySlot) ([]byte, bool, *apiError) {
	stall := slot.b.stall
	rc := http.NewResponseController(w)
	var timer *time.Timer
	if rc.SetReadDeadline(time.Now().Add(stall)) != nil {
		rc = nil
		timer = time.AfterFunc(stall, func() { evictSlot(slot) })
	}
	var data []byte
	var tooBig bool
	var err error
	if declared >= 0 && declared <= bodyChunk && declared <= limit {
		data, err = readDeclared(body, declared)
	} else {
		data, tooBig, err = readChunks(body, declared, limit, rc, timer, stall)
	}
	if timer != nil {
		timer.Stop()
		if slot.evicted.Load() {
			return nil, false, errBodyStalled(stall)
		}
	}
	if err != nil && rc != nil && isTimeout(err) {
		// The deadline stays expired: before it answers, net/http would
		// otherwise wait to discard the rest of the body from the stalled
		// client. The connection closes after the 408.
		return nil, false, errBodyStalled(stall)
	}
	if rc != nil {
		_ = rc.SetReadDeadline(time.Time{})
	}
	if err != nil {
		return nil, false, apierr.BadRequest("unreadable_body", "could not read the request body")
	}
	return data, tooBig, nil
}

// readChunks reads body (declared bytes long, -1 when unknown)
// bodyChunk at a time (each one compiled io.ReadFull), pushing the stall
// timeout after each — the read deadline through rc, or the eviction
// timer; tooBig over limit, never a truncated body.
func readChunks(body io.Reader, declared, limit int64, rc *http.ResponseController, timer *time.Timer, stall time.Duration) ([]byte, bool, error) {
	size := declared
	if size < 0 {
		size = limit + 1 // undeclared: read up to one byte past the cap
	}
	buf := make([]byte, 0, initialBodyBuffer(size))
	for int64(len(buf)) < size {
		n := int64(bodyChunk)
		if rest := size - int64(len(buf)); rest < n {
			n = rest
		}
		if int64(cap(buf)-len(buf)) < n {
			grown := make([]byte, len(buf), 2*cap(buf)+int(n))
			copy(grown, buf)
			buf = grown
		}
		got, err := io.ReadFull(body, buf[len(buf):len(buf)+int(n)])
		buf = buf[:len(buf)+got]
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			if declared >= 0 {
				return nil, false, io.ErrUnexpectedEOF
			}
			break // an undeclared body ended
		}
		if err != nil {
			return nil, false, err
		}
		if int64(len(buf)) < size {
			if rc != nil {
				_ = rc.SetReadDeadline(time.Now().Add(stall))
			} else if timer != nil {
				timer.Reset(stall)
			}
		}
	}
	if int64(len(buf)) > limit {
		return nil, true, nil
	}
	return buf, false, nil
}

// readDeclared reads a body of declared length whole in one io.ReadFull
// (one compiled call, even under Yaegi); a body that ends short is
// io.ErrUnexpectedEOF. Request bodies up to one chunk and within the cap
// take it instead of readChunks (no deadline to push: readTimedBody set
// it for the whole read), and so do whole upstream answers of a
// declared length (readUpstreamBody).
func readDeclared(body io.Reader, declared int64) ([]byte, error) {
	buf := make([]byte, declared)
	if _, err := io.ReadFull(body, buf); err != nil {
		if err == io.EOF {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}

// initialBodyBuffer sizes the first buffer: a declared length whole, an
// undeclared one a chunk.
func initialBodyBuffer(size int64) int {
	if size <= bodyChunk {
		return int(size)
	}
	return bodyChunk
}

// isTimeout reports whether err (not nil) is a deadline's timeout. (A
// type assertion on a nil interface panics under Yaegi: callers check
// err first.)
func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// errBodyStalled is the 408 of an upload that stopped making progress.
func errBodyStalled(stall time.Duration) *apiError {
	return apierr.New(http.StatusRequestTimeout, "invalid_request_error", "request_body_stalled",
		"the request body arrived too slowly (less than 64 KiB in "+stall.String()+"); it was not read")
}

// multipartRequest finds a multipart body's single model field. The
// result is a jsonRequest in name only: raw is the multipart body, model
// its model field, and nothing in it may be spliced (withModel).
func multipartRequest(contentType string, body []byte) (*jsonRequest, *apiError) {
	model, e := transcriptionModel(contentType, body)
	if e != nil {
		return nil, e
	}
	return &jsonRequest{raw: body, model: model, modelStart: -1, maxTokensKeyStart: -1}, nil
}
