package gateway

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
	"github.com/llmgateway/llmgateway/gateway/internal/translate"
)

// outbound is one upstream request a backend prepared for one candidate,
// sendable more than once (retry), plus how its answer is read.
type outbound struct {
	provider    *providerRuntime
	model       string // the upstream model id, for the success rates
	method      string
	url         string
	body        []byte
	contentType string
	accept      string
	// stream: the answer is expected as an event stream (or, for binary,
	// a body relayed as it arrives); the attempt ends at the response
	// headers. Otherwise the whole body is read as part of the attempt,
	// so a connection that dies mid-body can be retried too.
	stream bool
	// binary: the answer is opaque bytes streamed to the client as they
	// arrive (audio/speech).
	binary bool
	// decode translates a whole 2xx answer to the hub shape and reads its
	// usage; nil relays the upstream's body and relayed headers as is.
	decode func(data []byte) ([]byte, translate.Usage, *apiError)
	// stripUsage: the gateway added stream_options.include_usage to the
	// body, so the relay takes the usage out of what the client sees.
	stripUsage bool
	// translator builds the stream translator for an event-stream answer;
	// nil relays the upstream's events as is (same wire shape).
	translator func() translate.StreamTranslator
	// headers are extra request headers, name and value pairs, set after
	// the provider's own (the client's allow-listed anthropic-version and
	// anthropic-beta on the Messages routes).
	headers []string
	// startModel, when set, replaces the model in a relayed Messages
	// stream's message_start (the client's model string, JSON-quoted).
	startModel []byte
	// local is an answer the gateway gives itself, without an upstream
	// call (count_tokens for a provider type without the endpoint).
	local []byte
}

// exchange is an upstream's 2xx answer. The caller must call done.
type exchange struct {
	resp *http.Response
	body io.Reader // the response body, feeding the watchdog
	data []byte    // the whole body, unless the outbound streams
	wd   *watchdog
	ttfb time.Duration // the attempt's time to response headers
	// slots is the provider's concurrency slot this exchange holds (nil:
	// none), given back by exchangeDone.
	slots *providerSlots
}

func exchangeDone(x *exchange) {
	_ = x.resp.Body.Close()
	x.wd.stop()
	if x.slots != nil {
		x.slots.release()
		x.slots = nil
	}
}

// sendUpstream is the call stage: it walks the request's candidates in
// the routing stage's order (c.cands: the first alone without failover)
// under one request-wide attempt budget, each candidate's outbound
// request prepared by its provider type's backend. A failure whose
// failure-table row allows retry is tried again on the same candidate
// after the retry wait; one whose row allows failover moves on to the
// next candidate; any other ends the walk. All of it happens before any
// byte reached the client. The budget is the candidates × (1 +
// retry.attempts), at most maxUpstreamAttempts; firstByteDeadline, when
// set, bounds the time the whole walk may take to the first response
// headers. A failed attempt's body is drained and discarded, never
// parsed for usage.
func sendUpstream(c *call) (*exchange, *outbound, *apiError) {
	cands := c.cands
	budget := len(cands) * (1 + c.g.cfg.retry.retries)
	if budget > c.g.cfg.maxAttempts {
		budget = c.g.cfg.maxAttempts
	}
	var last *apiError
	var lastOut *outbound
	for i := 0; i < len(cands) && c.rec.attempts < budget; i++ {
		cand := cands[i]
		if i > 0 && lookupCandidateCache(c, cand) {
			c.rec.provider, c.rec.model = cand.provider.name, cand.model
			return nil, nil, nil // answered from the cache (c.rec.cache)
		}
		prepare := backendFor(cand.provider.kind).ops[c.route.op]
		if prepare == nil {
			continue // this provider type has no such endpoint (resolve checked the first)
		}
		o, e := prepare(c, cand)
		if e != nil {
			// The request cannot be expressed for this provider type: the
			// client's mistake, whichever candidate it meets.
			return nil, nil, e
		}
		if o.local != nil {
			c.rec.provider, c.rec.model = o.provider.name, o.model
			return localExchange(o), o, nil
		}
		lastOne := i+1 == len(cands)
		x, e := tryRouted(c, cand, o, budget, lastOne)
		if e == nil && x != nil {
			noteServed(c, cand)
			return x, o, nil
		}
		if e == nil {
			continue // skipped: its half-open probe is already running
		}
		last, lastOut = e, o
		if !failOver(c, cands, i, e, lastOne, budget) {
			break
		}
	}
	if last == nil {
		// Every candidate was skipped (the walk forces its last one, so
		// only an attempt budget spent elsewhere gets here): never an
		// empty answer.
		last = errNoCandidate()
	}
	return nil, lastOut, last
}

// failOver is the walk's step after cands[i] failed with e: false when
// the walk ends there (the first-byte deadline passed, the failure is not
// one to fail over on, or the client left); else, when another candidate
// follows within the budget, the walk moves on to it (rebound) and the
// move is logged. Its own function: under Yaegi a call pays for the
// callee's whole body, and a served request need not pay for this.
func failOver(c *call, cands []candidate, i int, e *apiError, lastOne bool, budget int) bool {
	if c.deadline && !time.Now().Before(c.rec.start.Add(c.g.cfg.firstByteDeadline)) ||
		e.Code != codeSaturated && !policy(e).failover || c.r.Context().Err() != nil {
		return false
	}
	if !lastOne && c.rec.attempts < budget {
		rebound(c, cands, i)
		c.g.failoverLog.moved(c.g, cands[i], cands[i+1], e, c.trace)
	}
	return true
}

// errNoCandidate is the 503 of a walk that reached no candidate.
func errNoCandidate() *apiError {
	e := apierr.New(http.StatusServiceUnavailable, "server_error", "no_candidate_available",
		"no provider could take the request right now (every candidate is recovering); retry shortly")
	e.RetryAfter = "1"
	return e
}

// tryRouted is one candidate's turn in the walk: its health claim (a
// candidate whose probe another request is running is skipped — nil,
// nil — unless it is the last one), its concurrency slot, the attempts,
// and what the outcome teaches routing (breaker, latency) and the
// request record.
func tryRouted(c *call, cand candidate, o *outbound, budget int, lastOne bool) (*exchange, *apiError) {
	r := c.g.router
	if r.active && !r.health.begin(cand, lastOne || c.forceFirst) {
		c.rec.tried = append(c.rec.tried, triedCandidate{candidate: candidateName(cand), outcome: "skipped"})
		return nil, nil
	}
	before := c.rec.attempts
	var x *exchange
	var e *apiError
	if slots := cand.provider.slots; slots != nil && !slots.acquire(c.r.Context()) {
		e = errSaturated(cand.provider, slots)
		c.rec.provider, c.rec.model = cand.provider.name, cand.model
	} else {
		x, e = tryCandidate(c, o, budget)
		if slots != nil {
			if e != nil {
				slots.release()
			} else {
				x.slots = slots
			}
		}
	}
	if r.active {
		r.health.end(cand, e)
		if e == nil {
			r.latency.observe(candidateName(cand), x.ttfb)
		}
	}
	t := triedCandidate{candidate: candidateName(cand), attempts: c.rec.attempts - before, outcome: "served"}
	if e != nil {
		t.outcome = e.Code
	}
	c.rec.tried = append(c.rec.tried, t)
	return x, e
}

// tryCandidate makes attempts on one candidate while the request's
// attempt budget lasts and the failure table allows a retry.
func tryCandidate(c *call, o *outbound, budget int) (*exchange, *apiError) {
	g := c.g
	c.rec.provider, c.rec.model = o.provider.name, o.model
	var last *apiError
	for retry := 0; ; retry++ {
		if retry > 0 {
			if e := waitToRetry(c, o, retry, budget, last); e != nil {
				return nil, e
			}
		}
		first, e := firstByteWindow(c, o.provider)
		if e != nil {
			return nil, e
		}
		c.rec.attempts++
		sent := time.Now()
		x, e := attempt(g, c.r, o, first, c.trace, c.rec.attempts)
		c.rec.upstream += time.Since(sent)
		if e == nil {
			return x, nil
		}
		if err := c.r.Context().Err(); err != nil && e.Class != apierr.ClassClientCancel {
			// The client left while the upstream answered: nobody reads
			// that answer, and no retry is made for it.
			return nil, exchangeFailure(o.provider.name, nil, c.r.Context(), err)
		}
		if c.deadline && !time.Now().Before(c.rec.start.Add(g.cfg.firstByteDeadline)) {
			return nil, errFirstByteDeadline(g, c.rec.attempts)
		}
		if !policy(e).retry || retry >= g.cfg.retry.retries || c.rec.attempts >= budget {
			return nil, e
		}
		last = e
	}
}

// firstByteWindow is how long the next attempt may wait for its response
// headers: the provider's timeout, or less when firstByteDeadline leaves
// less; an error when it has passed.
func firstByteWindow(c *call, p *providerRuntime) (time.Duration, *apiError) {
	if !c.deadline {
		return p.timeout, nil
	}
	left := time.Until(c.rec.start.Add(c.g.cfg.firstByteDeadline))
	if left <= 0 {
		return 0, errFirstByteDeadline(c.g, c.rec.attempts)
	}
	if left < p.timeout {
		return left, nil
	}
	return p.timeout, nil
}

// errFirstByteDeadline is the 504 of a request no upstream answered
// within firstByteDeadline.
func errFirstByteDeadline(g *Gateway, attempts int) *apiError {
	e := apierr.New(http.StatusGatewayTimeout, "server_error", "upstream_timeout",
		"no upstream answered within firstByteDeadline ("+g.cfg.firstByteDeadline.String()+"; "+strconv.Itoa(attempts)+" attempts)")
	e.Class = apierr.ClassStall
	return e
}

// waitToRetry logs and sleeps the retry wait before retry number retry;
// an error when the client left meanwhile, or when the wait would pass
// firstByteDeadline.
func waitToRetry(c *call, o *outbound, retry, budget int, last *apiError) *apiError {
	g := c.g
	wait := g.cfg.retry.retryWait(retry, last.Status, last.RetryAfter)
	if c.deadline && time.Now().Add(wait).After(c.rec.start.Add(g.cfg.firstByteDeadline)) {
		return errFirstByteDeadline(g, c.rec.attempts)
	}
	g.log.infof("retrying provider %q in %s (retry %d of %d): %s%s", o.provider.name, wait, retry, budget-1, last.Error(), c.trace.logTail)
	if !sleepCtx(c.r.Context(), wait) {
		return exchangeFailure(o.provider.name, nil, c.r.Context(), c.r.Context().Err())
	}
	return nil
}

// attempt makes one try, the request's attempt number n: the request
// (with the trace context of a span of its own, and the client's
// tracestate), the response headers and, unless the outbound streams,
// the whole body. The failure paths are functions of their own: under
// Yaegi a call pays for every local of the callee, run or not, so the
// common path stays small.
func attempt(g *Gateway, r *http.Request, o *outbound, first time.Duration, t *requestTrace, n int) (*exchange, *apiError) {
	p := o.provider
	started := time.Now()
	ctx, wd := startWatchdogFirst(r.Context(), first, p.timeout)
	var req *http.Request
	var err error
	if len(o.body) > 0 && o.stream {
		req, err = heldBodyRequest(ctx, o)
	} else {
		req, err = http.NewRequestWithContext(ctx, o.method, o.url, bytes.NewReader(o.body))
	}
	if err != nil {
		wd.stop()
		return nil, errBuildRequest(p, err)
	}
	if p.jsonHeader != nil && o.contentType == "application/json" {
		req.Header = p.jsonHeader.Clone()
	} else {
		outboundHeader(p, req.Header, o.contentType)
	}
	if o.accept != "" {
		req.Header.Set("Accept", o.accept)
	}
	for i := 0; i+1 < len(o.headers); i += 2 {
		req.Header.Set(o.headers[i], o.headers[i+1])
	}
	req.Header.Set("Traceparent", attemptTraceparent(t, n))
	if t.state != "" {
		req.Header.Set("Tracestate", t.state)
	}
	resp, err := g.transport.RoundTrip(req)
	if err != nil {
		wd.stop()
		return nil, attemptFailure(g, o, wd, r, err)
	}
	wd.progress()
	x := &exchange{resp: resp, body: &progressReader{r: resp.Body, wd: wd}, wd: wd, ttfb: time.Since(started)}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, attemptRefused(g, o, x)
	}
	if o.stream {
		g.limiter.recordAttempt(p.name, o.model, false)
		return x, nil
	}
	data, tooBig, err := readUpstreamBody(resp.Body, wd, resp.ContentLength, maxUpstreamResponseBytes)
	if err != nil {
		exchangeDone(x)
		return nil, attemptFailure(g, o, wd, r, err)
	}
	g.limiter.recordAttempt(p.name, o.model, false)
	if tooBig {
		exchangeDone(x)
		return nil, errUpstreamTooLarge(p.name)
	}
	x.data = data
	return x, nil
}

// heldBodyRequest is the request of a streaming attempt with a body.
// Every attempt's body is a *bytes.Reader, which the transport writes
// with the headers in one piece (a reader of a type it does not know has
// the headers flushed on their own first: one more write to the
// upstream, and one more read there). A streaming request's reader lets
// go of its bytes once they are written: the transport holds the request until the answer ends,
// which for a stream can be many minutes (releaseRequestBodies drops the
// gateway's own references). The request's client trace resets the
// reader in WroteRequest, which the transport calls on the goroutine
// that read the body, after its last byte; GetBody makes a fresh reader
// for the transport's own retry of a request that a reused connection
// lost before it was written.
func heldBodyRequest(ctx context.Context, o *outbound) (*http.Request, error) {
	rd := bytes.NewReader(o.body)
	trace := &httptrace.ClientTrace{}
	trace.WroteRequest = func(_ httptrace.WroteRequestInfo) { rd.Reset(nil) }
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), o.method, o.url, nil)
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(rd)
	req.ContentLength = int64(len(o.body))
	req.GetBody = func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(o.body)), nil
	}
	return req, nil
}

// errBuildRequest is the gateway's own fault (a bad base URL): not
// retried.
func errBuildRequest(p *providerRuntime, err error) *apiError {
	e := apierr.New(http.StatusBadGateway, "server_error", "upstream_error", "could not build the request to provider \""+p.name+"\"")
	e.Cause = err
	return e
}

// outboundHeader sets a non-JSON (or hand-built provider's) request's
// content type and credential.
func outboundHeader(p *providerRuntime, h http.Header, contentType string) {
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	p.injectAuth(h)
}

// attemptFailure classifies a transport or body-read failure and counts
// it in the provider's success rates.
func attemptFailure(g *Gateway, o *outbound, wd *watchdog, r *http.Request, err error) *apiError {
	e := exchangeFailure(o.provider.name, wd, r.Context(), err)
	g.limiter.recordAttempt(o.provider.name, o.model, attemptFailed(e))
	return e
}

// attemptRefused reads a non-2xx answer into its error, counts it, and
// drains and releases the exchange.
func attemptRefused(g *Gateway, o *outbound, x *exchange) *apiError {
	e := upstreamHTTPError(o.provider, x.resp, x.body)
	g.limiter.recordAttempt(o.provider.name, o.model, attemptFailed(e))
	_, _ = io.Copy(io.Discard, io.LimitReader(x.resp.Body, 1<<20))
	exchangeDone(x)
	return e
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
