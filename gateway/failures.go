package gateway

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
)

// This file is the one place that maps an upstream failure to what the
// client sees and what the pipeline may do about it: every upstream-side
// error the call stage meets is classified here, and retry, failover and
// the provider success rates read the class's row instead of deciding
// on their own.

// failureClass names what went wrong with an upstream exchange.
type failureClass int

const (
	failNone             failureClass = iota // not an upstream failure (the gateway's own refusal)
	failConnect                              // no answer: dial, TLS, reset, EOF before or inside the body
	failStall                                // the progress watchdog fired
	failClientCancel                         // the client went away first
	failBadRequest                           // the upstream answered 400
	failRefused                              // another 4xx (404, 409, 413, 422, …)
	failCredential                           // the upstream refused the gateway's own key (401/403, Gemini's API_KEY_INVALID)
	failRateLimited                          // 429
	failServer                               // 5xx
	failUnexpectedStatus                     // a non-2xx status outside 4xx/5xx
	failOversize                             // the answer passed the response size cap
	failTruncated                            // a stream ended without its terminator, or inside an event
	failInterrupted                          // a stream's read failed after its headers
	failBadResponse                          // the answer could not be understood (wrong content type, bad JSON)
	failureClassCount
)

// failurePolicy is one row of the failure table.
type failurePolicy struct {
	name string // for logs and request records
	// status is what the client gets; 0 passes the upstream's status on.
	status int
	code   string // the error envelope's "code"
	// retry: worth another attempt on the same provider (before any byte
	// reached the client).
	retry bool
	// failover: another candidate provider may be tried instead.
	failover bool
	// providerFault: counts against the provider's success rate. The rate
	// counts attempts, judged at the response headers (streams) or at the
	// end of the body (whole reads); what goes wrong later in a stream
	// (truncation, interruption, an answer the translator cannot read)
	// is the request's outcome, not the attempt's.
	providerFault bool
}

// failureTable is the policy of every failure class.
var failureTable = [failureClassCount]failurePolicy{
	failNone:         {name: "none"},
	failConnect:      {name: "connect", status: http.StatusBadGateway, code: "upstream_error", retry: true, failover: true, providerFault: true},
	failStall:        {name: "stall", status: http.StatusBadGateway, code: "upstream_timeout", failover: true, providerFault: true},
	failClientCancel: {name: "client_cancel", status: 499, code: "client_closed_request"},
	failBadRequest:   {name: "bad_request", code: "upstream_error"},
	failRefused:      {name: "refused", code: "upstream_error", failover: true},
	failCredential:   {name: "credential", status: http.StatusBadGateway, code: "upstream_error", failover: true},
	failRateLimited:  {name: "rate_limited", code: "upstream_error", retry: true, failover: true, providerFault: true},
	failServer:       {name: "server", code: "upstream_error", retry: true, failover: true, providerFault: true},
	failUnexpectedStatus: {name: "unexpected_status", status: http.StatusBadGateway, code: "upstream_error", failover: true,
		providerFault: false},
	failOversize:    {name: "oversize", status: http.StatusBadGateway, code: "upstream_response_too_large"},
	failTruncated:   {name: "truncated", status: http.StatusBadGateway, code: "upstream_stream_truncated"},
	failInterrupted: {name: "interrupted", status: http.StatusBadGateway, code: "upstream_stream_interrupted"},
	failBadResponse: {name: "bad_response", status: http.StatusBadGateway, code: "upstream_bad_response"},
}

// policy is e's row of the failure table (failNone for the gateway's own
// errors).
func (e *apiError) policy() *failurePolicy {
	return &failureTable[e.class]
}

// upstreamFailure builds the error for class with message, taking status
// and code from the table.
func upstreamFailure(class failureClass, message string, cause error) *apiError {
	row := &failureTable[class]
	e := newError(row.status, "server_error", row.code, message)
	e.class = class
	e.cause = cause
	return e
}

// exchangeFailure classifies an exchange that produced no usable answer
// (a transport error, or a failed body read): a stall names the timeout,
// a client cancellation is reported as such (499, written to nobody),
// anything else is a connection failure.
func exchangeFailure(provider string, wd *watchdog, clientCtx context.Context, err error) *apiError {
	switch {
	case wd != nil && wd.stalled():
		return upstreamFailure(failStall, "upstream progress stalled for "+wd.timeout.String()+" (provider \""+provider+"\")", err)
	case clientCtx.Err() != nil:
		return upstreamFailure(failClientCancel, "client closed the request", err)
	}
	return upstreamFailure(failConnect, "provider \""+provider+"\" could not be reached", err)
}

// statusClass classifies a non-2xx upstream answer.
func statusClass(p *providerRuntime, status int, body []byte) failureClass {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden || providerRefusedKey(p, status, body):
		return failCredential
	case status == http.StatusTooManyRequests:
		return failRateLimited
	case status == http.StatusBadRequest:
		return failBadRequest
	case status >= 400 && status < 500:
		return failRefused
	case status >= 500:
		return failServer
	}
	return failUnexpectedStatus
}

// upstreamHTTPError wraps a provider's non-2xx answer in the gateway's
// envelope with the provider body under error.upstream. The status passes
// through, except a refused gateway credential (a gateway fault: 502, not
// the caller's) and a non-error status outside 4xx/5xx (502).
func upstreamHTTPError(p *providerRuntime, resp *http.Response, body io.Reader) *apiError {
	data, _, _ := readCapped(body, 1<<20)
	data = redactSecret(data, p.apiKey)
	class := statusClass(p, resp.StatusCode, data)
	e := upstreamFailure(class, "provider \""+p.name+"\" returned HTTP "+strconv.Itoa(resp.StatusCode), nil)
	e.kind = "invalid_request_error"
	switch {
	case class == failCredential:
		e.kind = "server_error"
	case class == failRateLimited:
		e.kind = "rate_limit_error"
		e.status = resp.StatusCode
	case class == failServer:
		e.kind = "server_error"
		e.status = resp.StatusCode
	case class == failUnexpectedStatus:
		e.kind = "server_error"
	default:
		e.status = resp.StatusCode
	}
	e.upstream = embedUpstreamBody(data)
	e.retryAfter = resp.Header.Get("Retry-After")
	return e
}

// providerRefusedKey recognises a refusal of the gateway's own provider
// credential that does not come as 401/403: Gemini answers a bad key with
// 400 INVALID_ARGUMENT, reason API_KEY_INVALID.
func providerRefusedKey(p *providerRuntime, status int, body []byte) bool {
	return p.kind == providerGemini && status == http.StatusBadRequest && bytes.Contains(body, []byte("API_KEY_INVALID"))
}

func errUpstreamTooLarge(provider string) *apiError {
	return upstreamFailure(failOversize, "provider \""+provider+"\" sent a response over the "+formatBytes(maxUpstreamResponseBytes)+" limit", nil)
}

func errStreamOverLimit(provider string) *apiError {
	return upstreamFailure(failOversize, "stream from provider \""+provider+"\" exceeded the "+formatBytes(maxUpstreamResponseBytes)+" limit", nil)
}

func errStreamTruncated(provider, how string) *apiError {
	return upstreamFailure(failTruncated, "stream from provider \""+provider+"\" "+how, nil)
}

func errBadUpstreamResponse(provider, what string) *apiError {
	return upstreamFailure(failBadResponse, "provider \""+provider+"\" "+what, nil)
}

// streamReadFailure classifies an upstream event stream that could not
// be read to its end, after its headers: cut inside an event, over the
// size cap, stalled, or interrupted.
func streamReadFailure(provider string, wd *watchdog, clientCtx context.Context, err error) *apiError {
	switch {
	case err == io.EOF:
		return errStreamTruncated(provider, "ended inside an event")
	case err == errStreamTooLarge:
		return errStreamOverLimit(provider)
	case wd.stalled():
		return exchangeFailure(provider, wd, clientCtx, err)
	}
	return upstreamFailure(failInterrupted, "stream from provider \""+provider+"\" was interrupted", err)
}

// attributed names the provider in an upstream-side error a translator
// raised (the translators know the provider's type, not its name), and
// classifies it as a bad response when the translator did not.
func attributed(p *providerRuntime, e *apiError) *apiError {
	if e == nil || e.status < 500 {
		return e
	}
	e.message = "provider \"" + p.name + "\": " + e.message
	if e.class == failNone {
		e.class = failBadResponse
		if e.code == "upstream_stream_truncated" {
			e.class = failTruncated
		}
	}
	return e
}

// attemptFailed classifies an attempt for the success rates: a
// connection error, 429, 5xx or a stall is the provider's failure; a
// client cancellation or any other answer is not.
func attemptFailed(e *apiError) bool {
	return e != nil && e.policy().providerFault
}
