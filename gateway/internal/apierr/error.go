package apierr

import (
	"encoding/json"
	"net/http"
)

// Error is the gateway's one error type. Status, Kind, Code and Message
// are what a client sees; Upstream and RetryAfter travel with them when
// the failure came from a provider; Class and Cause are for the pipeline
// and the logs.
type Error struct {
	Status  int    // the HTTP status written to the client
	Kind    string // the envelope's "type", e.g. "invalid_request_error"
	Code    string // the envelope's "code", e.g. "model_not_found"
	Message string // safe to show the client
	// Upstream is a provider's own error body, embedded under
	// error.upstream (raw JSON when it is JSON, else a JSON string; see
	// EmbedUpstream).
	Upstream json.RawMessage
	// RetryAfter, when set, is sent as the Retry-After header.
	RetryAfter string
	// Class says which upstream failure this is (ClassNone for the
	// gateway's own refusals); the gateway's failure table maps it to
	// retry, failover and success-rate policy.
	Class Class
	Cause error // for logs only
}

// Error returns the client-safe message and, when present, the cause.
// It never includes the upstream body.
func (e *Error) Error() string {
	if e.Cause != nil {
		return e.Message + ": " + e.Cause.Error()
	}
	return e.Message
}

// New is an error with the given status, envelope type, code and
// client-safe message, of class ClassNone.
func New(status int, kind, code, message string) *Error {
	return &Error{Status: status, Kind: kind, Code: code, Message: message}
}

// BadRequest is a 400 invalid_request_error with code and message.
func BadRequest(code, message string) *Error {
	return New(http.StatusBadRequest, "invalid_request_error", code, message)
}

// EmbedUpstream returns a provider's error body as raw JSON when it is
// valid JSON, or as a JSON string otherwise, so it can sit in Upstream
// (under error.upstream). An empty body is nil.
func EmbedUpstream(body []byte) json.RawMessage {
	if len(body) == 0 {
		return nil
	}
	if json.Valid(body) {
		// A copy: the body may sit in a buffer its reader reuses.
		return append(json.RawMessage(nil), body...)
	}
	quoted, _ := json.Marshal(string(body))
	return json.RawMessage(quoted)
}
