package gateway

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
	"github.com/llmgateway/llmgateway/gateway/internal/sse"
)

// This file is the one place that maps an upstream failure to what the
// client sees and what the pipeline may do about it: every upstream-side
// error the call stage meets is classified here, and retry, failover and
// the provider success rates read the class's row instead of deciding
// on their own. The classes are apierr.Class, so that the translators
// can classify the errors they raise; their policy is here.

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
var failureTable = [apierr.ClassCount]failurePolicy{
	apierr.ClassNone:         {name: "none"},
	apierr.ClassConnect:      {name: "connect", status: http.StatusBadGateway, code: "upstream_error", retry: true, failover: true, providerFault: true},
	apierr.ClassStall:        {name: "stall", status: http.StatusBadGateway, code: "upstream_timeout", failover: true, providerFault: true},
	apierr.ClassClientCancel: {name: "client_cancel", status: 499, code: "client_closed_request"},
	apierr.ClassBadRequest:   {name: "bad_request", code: "upstream_error"},
	apierr.ClassRefused:      {name: "refused", code: "upstream_error", failover: true},
	apierr.ClassCredential:   {name: "credential", status: http.StatusBadGateway, code: "upstream_error", failover: true},
	apierr.ClassRateLimited:  {name: "rate_limited", code: "upstream_error", retry: true, failover: true, providerFault: true},
	apierr.ClassServer:       {name: "server", code: "upstream_error", retry: true, failover: true, providerFault: true},
	apierr.ClassUnexpectedStatus: {name: "unexpected_status", status: http.StatusBadGateway, code: "upstream_error", failover: true,
		providerFault: false},
	apierr.ClassOversize:    {name: "oversize", status: http.StatusBadGateway, code: "upstream_response_too_large"},
	apierr.ClassTruncated:   {name: "truncated", status: http.StatusBadGateway, code: "upstream_stream_truncated"},
	apierr.ClassInterrupted: {name: "interrupted", status: http.StatusBadGateway, code: "upstream_stream_interrupted"},
	apierr.ClassBadResponse: {name: "bad_response", status: http.StatusBadGateway, code: "upstream_bad_response"},
}

// policy is e's row of the failure table (the ClassNone row for the
// gateway's own errors).
func policy(e *apiError) *failurePolicy {
	return &failureTable[e.Class]
}

// upstreamFailure builds the error for class with message, taking status
// and code from the table.
func upstreamFailure(class apierr.Class, message string, cause error) *apiError {
	row := &failureTable[class]
	e := apierr.New(row.status, "server_error", row.code, message)
	e.Class = class
	e.Cause = cause
	return e
}

// exchangeFailure classifies an exchange that produced no usable answer
// (a transport error, or a failed body read): a stall names the timeout,
// a client cancellation is reported as such (499, written to nobody),
// anything else is a connection failure.
func exchangeFailure(provider string, wd *watchdog, clientCtx context.Context, err error) *apiError {
	switch {
	case wd != nil && wd.stalled():
		return upstreamFailure(apierr.ClassStall, "upstream progress stalled for "+wd.timeout.String()+" (provider \""+provider+"\")", err)
	case clientCtx.Err() != nil:
		return upstreamFailure(apierr.ClassClientCancel, "client closed the request", err)
	}
	return upstreamFailure(apierr.ClassConnect, "provider \""+provider+"\" could not be reached", err)
}

// statusClass classifies a non-2xx upstream answer.
func statusClass(p *providerRuntime, status int, body []byte) apierr.Class {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden || providerRefusedKey(p, status, body):
		return apierr.ClassCredential
	case status == http.StatusTooManyRequests:
		return apierr.ClassRateLimited
	case status == http.StatusBadRequest:
		return apierr.ClassBadRequest
	case status >= 400 && status < 500:
		return apierr.ClassRefused
	case status >= 500:
		return apierr.ClassServer
	}
	return apierr.ClassUnexpectedStatus
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
	e.Kind = "invalid_request_error"
	switch class {
	case apierr.ClassCredential:
		e.Kind = "server_error"
	case apierr.ClassRateLimited:
		e.Kind = "rate_limit_error"
		e.Status = resp.StatusCode
	case apierr.ClassServer:
		e.Kind = "server_error"
		e.Status = resp.StatusCode
	case apierr.ClassUnexpectedStatus:
		e.Kind = "server_error"
	default:
		e.Status = resp.StatusCode
	}
	e.Upstream = apierr.EmbedUpstream(data)
	e.RetryAfter = resp.Header.Get("Retry-After")
	return e
}

// providerRefusedKey recognises a refusal of the gateway's own provider
// credential that does not come as 401/403: Gemini answers a bad key with
// 400 INVALID_ARGUMENT, reason API_KEY_INVALID.
func providerRefusedKey(p *providerRuntime, status int, body []byte) bool {
	return p.kind == providerGemini && status == http.StatusBadRequest && bytes.Contains(body, []byte("API_KEY_INVALID"))
}

func errUpstreamTooLarge(provider string) *apiError {
	return upstreamFailure(apierr.ClassOversize, "provider \""+provider+"\" sent a response over the "+formatBytes(maxUpstreamResponseBytes)+" limit", nil)
}

func errStreamOverLimit(provider string) *apiError {
	return upstreamFailure(apierr.ClassOversize, "stream from provider \""+provider+"\" exceeded the "+formatBytes(maxUpstreamResponseBytes)+" limit", nil)
}

func errStreamTruncated(provider, how string) *apiError {
	return upstreamFailure(apierr.ClassTruncated, "stream from provider \""+provider+"\" "+how, nil)
}

func errBadUpstreamResponse(provider, what string) *apiError {
	return upstreamFailure(apierr.ClassBadResponse, "provider \""+provider+"\" "+what, nil)
}

// streamReadFailure classifies an upstream event stream that could not
// be read to its end, after its headers: cut inside an event, over the
// size cap, stalled, or interrupted.
func streamReadFailure(provider string, wd *watchdog, clientCtx context.Context, err error) *apiError {
	switch {
	case err == io.EOF:
		return errStreamTruncated(provider, "ended inside an event")
	case err == sse.ErrTooLarge:
		return errStreamOverLimit(provider)
	case wd.stalled():
		return exchangeFailure(provider, wd, clientCtx, err)
	}
	return upstreamFailure(apierr.ClassInterrupted, "stream from provider \""+provider+"\" was interrupted", err)
}

// attributed names the provider in an upstream-side error a translator
// raised (the translators know the provider's type, not its name), and
// classifies it as a bad response when the translator did not.
func attributed(p *providerRuntime, e *apiError) *apiError {
	if e == nil || e.Status < 500 {
		return e
	}
	e.Message = "provider \"" + p.name + "\": " + e.Message
	if e.Class == apierr.ClassNone {
		e.Class = apierr.ClassBadResponse
		if e.Code == "upstream_stream_truncated" {
			e.Class = apierr.ClassTruncated
		}
	}
	return e
}

// attemptFailed classifies an attempt for the success rates: a
// connection error, 429, 5xx or a stall is the provider's failure; a
// client cancellation or any other answer is not.
func attemptFailed(e *apiError) bool {
	return e != nil && policy(e).providerFault
}
