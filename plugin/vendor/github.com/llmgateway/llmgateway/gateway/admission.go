package gateway

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
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

// bodyAdmission is the semaphore, a buffered channel of tokens, and the
// stall timeout of a body read under it (bodyStallTimeout; tests shorten
// it).
type bodyAdmission struct {
	slots chan struct{}
	stall time.Duration
}

func newBodyAdmission(n int) *bodyAdmission {
	return &bodyAdmission{slots: make(chan struct{}, n), stall: bodyStallTimeout}
}

// takeBodySlot takes a slot without waiting; false when every slot is
// busy (a 503). A plain function: the request path pays for every
// interpreted method call.
func takeBodySlot(b *bodyAdmission) bool {
	select {
	case b.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

// release gives a slot back.
func (b *bodyAdmission) release() { <-b.slots }

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
	if !takeBodySlot(g.admission) {
		return nil, errBodyCapacity()
	}
	// Given back by a defer even if a reader panics: a lost slot would
	// shrink the gateway's capacity for good.
	defer g.admission.release()
	body, e := readRequestBody(w, r, rt.maxBodyBytes, g.admission.stall)
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

// readRequestBody reads the whole body, refusing one over limit with
// 413, under the stall deadline (readTimedBody).
func readRequestBody(w http.ResponseWriter, r *http.Request, limit int64, stall time.Duration) ([]byte, *apiError) {
	if r.ContentLength > limit {
		return nil, errTooLarge(limit)
	}
	body, tooBig, e := readTimedBody(w, r.Body, r.ContentLength, limit, stall)
	if e != nil {
		return nil, e
	}
	if tooBig {
		return nil, errTooLarge(limit)
	}
	return body, nil
}

// readTimedBody reads a request body (declared bytes long, -1 when
// unknown) whole, or reports tooBig past limit. The read runs under a
// connection read deadline that every chunk of bodyChunk bytes pushes
// stall further (http.ResponseController; a writer that cannot set one
// reads without it), so a slow or stalled upload cannot hold its
// body-admission slot: it gets a 408. The deadline is cleared once the
// body is in. A read error is a 400.
func readTimedBody(w http.ResponseWriter, body io.Reader, declared, limit int64, stall time.Duration) ([]byte, bool, *apiError) {
	rc := http.NewResponseController(w)
	var data []byte
	var tooBig bool
	var err error
	if rc.SetReadDeadline(time.Now().Add(stall)) != nil {
		data, tooBig, err = readBodyUntimed(body, declared, limit)
	} else {
		data, tooBig, err = readChunks(body, declared, limit, rc, stall)
		if err != nil && isTimeout(err) {
			// The deadline stays expired: before it answers, net/http
			// would otherwise wait to discard the rest of the body from
			// the stalled client. The connection closes after the 408.
			return nil, false, errBodyStalled(stall)
		}
		_ = rc.SetReadDeadline(time.Time{})
	}
	if err != nil {
		return nil, false, apierr.BadRequest("unreadable_body", "could not read the request body")
	}
	return data, tooBig, nil
}

// readBodyUntimed is readTimedBody's read where no read deadline can be
// set (the host's writer does not support one).
func readBodyUntimed(body io.Reader, declared, limit int64) ([]byte, bool, error) {
	if declared >= 0 && declared <= limit {
		// A declared length (net/http never reads past it): one read into
		// a buffer of exactly that size.
		data := make([]byte, declared)
		if _, err := io.ReadFull(body, data); err != nil {
			return nil, false, err
		}
		return data, false, nil
	}
	return readCapped(body, limit)
}

// readChunks reads body (declared bytes long, -1 when unknown)
// bodyChunk at a time (each one compiled io.ReadFull), pushing the read
// deadline after each; tooBig over limit, never a truncated body.
func readChunks(body io.Reader, declared, limit int64, rc *http.ResponseController, stall time.Duration) ([]byte, bool, error) {
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
			_ = rc.SetReadDeadline(time.Now().Add(stall))
		}
	}
	if int64(len(buf)) > limit {
		return nil, true, nil
	}
	return buf, false, nil
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
