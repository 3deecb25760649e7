package gateway

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// apiError is the gateway's one error type, apierr.Error. The alias
// keeps the pipeline's many signatures short; build values with
// apierr.New and apierr.BadRequest.
type apiError = apierr.Error

func errUnauthorized() *apiError {
	return apierr.New(http.StatusUnauthorized, "authentication_error", "invalid_api_key",
		"missing or invalid API key: send it as 'Authorization: Bearer <key>' or 'x-api-key: <key>'")
}

func errRouteNotFound(method, path string) *apiError {
	return apierr.New(http.StatusNotFound, "invalid_request_error", "not_found",
		"unknown route: "+method+" "+path)
}

func errMethodNotAllowed(method, path, allowed string) *apiError {
	return apierr.New(http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed",
		method+" is not allowed on "+path+" (use "+allowed+")")
}

func errTooLarge(limit int64) *apiError {
	return apierr.New(http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large",
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
	body := openAIErrorBody{Error: openAIErrorDetail{Message: e.Message, Type: e.Kind, Code: e.Code}}
	if withUpstream {
		body.Error.Upstream = e.Upstream
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
	writeErrorBody(w, e, openAIErrorJSON(e, true))
}

// writeErrorBody writes a complete error response: e's status and
// Retry-After, data (one line of JSON) as the body.
func writeErrorBody(w http.ResponseWriter, e *apiError, data []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(data)+1))
	if e.RetryAfter != "" {
		h.Set("Retry-After", e.RetryAfter)
	}
	w.WriteHeader(e.Status)
	_, _ = w.Write(append(data, '\n'))
}

func formatBytes(n int64) string {
	const mib = 1 << 20
	if n >= mib && n%mib == 0 {
		return strconv.FormatInt(n/mib, 10) + " MiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}
