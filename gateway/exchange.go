package gateway

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
)

// outbound is one upstream request of an adapter call, sendable more
// than once (retry).
type outbound struct {
	provider    *providerRuntime
	model       string // the upstream model id, for the success rates
	method      string
	url         string
	body        []byte
	contentType string
	accept      string
	header      http.Header // extra headers, e.g. anthropic-beta
	// readWhole makes the body read part of the attempt (non-streaming
	// calls): a connection that dies mid-body can then be retried too.
	// A streaming call's attempt ends at the response headers.
	readWhole bool
}

// exchange is an upstream's 2xx answer. The caller must call done.
type exchange struct {
	resp *http.Response
	body io.Reader // the response body, feeding the watchdog
	data []byte    // the whole body, when readWhole
	wd   *watchdog
}

func (x *exchange) done() {
	_ = x.resp.Body.Close()
	x.wd.stop()
}

// send performs o with the configured retry: transient failures
// (connection errors, 429, 5xx) are retried on the same provider before
// any byte reaches the client; a stall (the progress timeout), a client
// cancellation, a non-429 4xx or an oversized body never are. A failed
// attempt's body is drained and discarded, never parsed for usage.
func (g *Gateway) send(r *http.Request, o *outbound) (*exchange, *apiError) {
	p := o.provider
	retries := g.cfg.retry.retries
	for attempt := 0; ; attempt++ {
		x, e, status, transient := g.attempt(r, o)
		if e == nil {
			return x, nil
		}
		if !transient || attempt >= retries || r.Context().Err() != nil {
			return nil, e
		}
		wait := g.cfg.retry.retryWait(attempt+1, status, e.retryAfter)
		g.log.infof("retrying provider %q in %s (retry %d of %d): %s", p.name, wait, attempt+1, retries, e.Error())
		if !sleepCtx(r.Context(), wait) {
			return nil, upstreamFailure(p.name, nil, r.Context(), r.Context().Err())
		}
	}
}

// attempt makes one try. It returns the failure's status (0 for a
// connection error) and whether the failure is transient.
func (g *Gateway) attempt(r *http.Request, o *outbound) (*exchange, *apiError, int, bool) {
	p := o.provider
	ctx, wd := startWatchdog(r.Context(), p.timeout)
	req, err := http.NewRequestWithContext(ctx, o.method, o.url, bytes.NewReader(o.body))
	if err != nil {
		wd.stop()
		e := newError(http.StatusBadGateway, "server_error", "upstream_error",
			"could not build the request to provider \""+p.name+"\"")
		e.cause = err
		return nil, e, 0, false
	}
	if o.contentType != "" {
		req.Header.Set("Content-Type", o.contentType)
	}
	if o.accept != "" {
		req.Header.Set("Accept", o.accept)
	}
	for k, vs := range o.header {
		for i := 0; i < len(vs); i++ {
			req.Header.Add(k, vs[i])
		}
	}
	p.injectAuth(req.Header)
	resp, err := g.transport.RoundTrip(req)
	if err != nil {
		wd.stop()
		g.limiter.recordAttempt(p.name, o.model, attemptFailed(0, err, wd.stalled(), r.Context().Err() != nil))
		e := upstreamFailure(p.name, wd, r.Context(), err)
		return nil, e, 0, e.code == "upstream_error"
	}
	wd.progress()
	body := &progressReader{r: resp.Body, wd: wd}
	if !o.readWhole || resp.StatusCode < 200 || resp.StatusCode > 299 {
		g.limiter.recordAttempt(p.name, o.model, attemptFailed(resp.StatusCode, nil, false, false))
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		e := upstreamHTTPError(p, resp, body)
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		_ = resp.Body.Close()
		wd.stop()
		return nil, e, resp.StatusCode, transientStatus(resp.StatusCode)
	}
	x := &exchange{resp: resp, body: body, wd: wd}
	if !o.readWhole {
		return x, nil, 0, false
	}
	data, tooBig, err := readCapped(body, maxUpstreamResponseBytes)
	g.limiter.recordAttempt(p.name, o.model, attemptFailed(0, err, wd.stalled(), r.Context().Err() != nil))
	if err != nil {
		x.done()
		e := upstreamFailure(p.name, wd, r.Context(), err)
		return nil, e, 0, e.code == "upstream_error"
	}
	if tooBig {
		x.done()
		return nil, errUpstreamTooLarge(p.name), 0, false
	}
	x.data = data
	return x, nil, 0, false
}

func errUpstreamTooLarge(provider string) *apiError {
	return newError(http.StatusBadGateway, "server_error", "upstream_response_too_large",
		"provider \""+provider+"\" sent a response over the "+formatBytes(maxUpstreamResponseBytes)+" limit")
}

// writeJSONResponse writes a complete JSON answer.
func writeJSONResponse(w http.ResponseWriter, status int, data []byte) {
	h := w.Header()
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "application/json")
	}
	h.Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(status)
	_, _ = w.Write(data)
}
