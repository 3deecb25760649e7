package gateway

import (
	"fmt"
	"io"
	"net/http"
	"runtime"

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

// bodyAdmission is the semaphore; a buffered channel of tokens.
type bodyAdmission struct {
	slots chan struct{}
}

func newBodyAdmission(n int) *bodyAdmission {
	return &bodyAdmission{slots: make(chan struct{}, n)}
}

// release gives a slot back (readAdmitted takes it inline, without
// waiting: a full semaphore is a 503).
func (b *bodyAdmission) release() { <-b.slots }

func errBodyCapacity() *apiError {
	e := apierr.New(http.StatusServiceUnavailable, "server_error", "capacity",
		"the gateway is reading too many request bodies at once; retry shortly")
	e.RetryAfter = "1"
	return e
}

// readAdmitted reads the route's request body whole under a
// body-admission slot (413 over the route's cap) and reads what the
// pipeline needs from it: a JSON body through the route's wire format; a
// multipart body (transcriptions) by locating its single model field.
func readAdmitted(g *Gateway, r *http.Request, rt *route) (*jsonRequest, *apiError) {
	select {
	case g.admission.slots <- struct{}{}:
	default:
		return nil, errBodyCapacity()
	}
	// Given back by a defer even if a reader panics: a lost slot would
	// shrink the gateway's capacity for good.
	defer g.admission.release()
	body, e := readRequestBody(r, rt.maxBodyBytes)
	if e != nil {
		return nil, e
	}
	if rt.body == bodyMultipart {
		return multipartRequest(r.Header.Get("Content-Type"), body)
	}
	return rt.format.readRequest(body)
}

// readRequestBody reads the whole body, refusing one over limit with 413.
func readRequestBody(r *http.Request, limit int64) ([]byte, *apiError) {
	if r.ContentLength > limit {
		return nil, errTooLarge(limit)
	}
	if r.ContentLength >= 0 {
		// A declared length (net/http never reads past it): one read into
		// a buffer of exactly that size.
		body := make([]byte, r.ContentLength)
		if _, err := io.ReadFull(r.Body, body); err != nil {
			return nil, apierr.BadRequest("unreadable_body", "could not read the request body")
		}
		return body, nil
	}
	body, tooBig, err := readCapped(r.Body, limit)
	if err != nil {
		return nil, apierr.BadRequest("unreadable_body", "could not read the request body")
	}
	if tooBig {
		return nil, errTooLarge(limit)
	}
	return body, nil
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
