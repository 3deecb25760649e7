package gateway

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// apiError is the gateway's one error type: an HTTP status, a
// client-safe message and classification, and a log-only cause that is
// never written to a client.
type apiError struct {
	status  int
	kind    string // the envelope's "type", e.g. "invalid_request_error"
	code    string // the envelope's "code", e.g. "model_not_found"
	message string // safe to show the client
	// upstream is a provider's own error body, embedded under
	// error.upstream (raw JSON when it is JSON, else a JSON string).
	upstream json.RawMessage
	// retryAfter, when set, is sent as the Retry-After header.
	retryAfter string
	// class says which upstream failure this is (failNone for the
	// gateway's own refusals); failures.go maps it to retry, failover
	// and success-rate policy.
	class failureClass
	cause error // for logs only
}

// Error returns the client-safe message and, when present, the cause.
// It never includes the upstream body.
func (e *apiError) Error() string {
	if e.cause != nil {
		return e.message + ": " + e.cause.Error()
	}
	return e.message
}

func newError(status int, kind, code, message string) *apiError {
	return &apiError{status: status, kind: kind, code: code, message: message}
}

func errBadRequest(code, message string) *apiError {
	return newError(http.StatusBadRequest, "invalid_request_error", code, message)
}

func errUnauthorized() *apiError {
	return newError(http.StatusUnauthorized, "authentication_error", "invalid_api_key",
		"missing or invalid API key: send it as 'Authorization: Bearer <key>' or 'x-api-key: <key>'")
}

func errRouteNotFound(method, path string) *apiError {
	return newError(http.StatusNotFound, "invalid_request_error", "not_found",
		"unknown route: "+method+" "+path)
}

func errMethodNotAllowed(method, path, allowed string) *apiError {
	return newError(http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed",
		method+" is not allowed on "+path+" (use "+allowed+")")
}

func errTooLarge(limit int64) *apiError {
	return newError(http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large",
		"request body exceeds the "+formatBytes(limit)+" limit")
}

// openAIErrorBody is the wire shape of the OpenAI error envelope.
type openAIErrorBody struct {
	Error openAIErrorDetail `json:"error"`
}

type openAIErrorDetail struct {
	Message  string          `json:"message"`
	Type     string          `json:"type"`
	Param    *string         `json:"param"`
	Code     string          `json:"code"`
	Upstream json.RawMessage `json:"upstream,omitempty"`
}

// openAIErrorJSON encodes e in the OpenAI error envelope:
// {"error":{"message","type","param","code"[,"upstream"]}}. The upstream
// body is included only when withUpstream is set (complete responses,
// not mid-stream errors).
func openAIErrorJSON(e *apiError, withUpstream bool) []byte {
	body := openAIErrorBody{Error: openAIErrorDetail{Message: e.message, Type: e.kind, Code: e.code}}
	if withUpstream {
		body.Error.Upstream = e.upstream
	}
	data, err := json.Marshal(body)
	if err != nil {
		// Only reachable with a malformed upstream RawMessage; drop it.
		body.Error.Upstream = nil
		data, _ = json.Marshal(body)
	}
	return data
}

// writeOpenAIError writes e as a complete response in the OpenAI error
// envelope, with Retry-After when e carries one.
func writeOpenAIError(w http.ResponseWriter, e *apiError) {
	data := openAIErrorJSON(e, true)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(data)+1))
	if e.retryAfter != "" {
		h.Set("Retry-After", e.retryAfter)
	}
	w.WriteHeader(e.status)
	_, _ = w.Write(append(data, '\n'))
}

// embedUpstreamBody returns body as raw JSON when it is valid JSON, or
// as a JSON string otherwise, so it can sit under error.upstream.
func embedUpstreamBody(body []byte) json.RawMessage {
	if len(body) == 0 {
		return nil
	}
	if json.Valid(body) {
		return json.RawMessage(body)
	}
	quoted, _ := json.Marshal(string(body))
	return json.RawMessage(quoted)
}

func formatBytes(n int64) string {
	const mib = 1 << 20
	if n >= mib && n%mib == 0 {
		return strconv.FormatInt(n/mib, 10) + " MiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}
