package mockupstream

import (
	"net/http"
	"strconv"
	"strings"
)

// HeaderEchoCredentials (any non-empty value) makes every route answer
// with an error that quotes back the credentials the request carried —
// its Authorization, x-api-key and x-goog-api-key headers and a ?key=
// query parameter — in the error message of the request's dialect and
// in an X-Mock-Echo response header, the way a careless provider's "this
// key was rejected" answer does. The status is X-Mock-Status when that
// is a valid status, 401 otherwise. Secrets-leak tests put it in a
// provider's baseUrl (/x-mock-echo-credentials/1) to check that the
// gateway never hands a client the key it injected.
const HeaderEchoCredentials = "X-Mock-Echo-Credentials"

// EchoHeader is the response header the echo knob fills.
const EchoHeader = "X-Mock-Echo"

// echoedCredentials is the text the echo knob quotes: every credential
// the request carried, in a fixed order.
func echoedCredentials(r *http.Request) string {
	var b strings.Builder
	b.WriteString("rejected credentials:")
	for _, h := range []string{"Authorization", "X-Api-Key", "X-Goog-Api-Key"} {
		if v := r.Header.Get(h); v != "" {
			b.WriteString(" " + strings.ToLower(h) + "=" + v)
		}
	}
	if v := r.URL.Query().Get("key"); v != "" {
		b.WriteString(" key=" + v)
	}
	return b.String()
}

// serveEchoCredentials answers the echo knob's error in r's dialect.
func serveEchoCredentials(w http.ResponseWriter, r *http.Request, seq string) {
	status := http.StatusUnauthorized
	if code, err := strconv.Atoi(r.Header.Get(HeaderStatus)); err == nil && code >= 400 && code <= 599 {
		status = code
	}
	msg := "mock: " + echoedCredentials(r)
	w.Header().Set(EchoHeader, msg)
	switch {
	case isAnthropic(r):
		writeJSON(w, status, anthropicErrorEnvelope(status, msg, "req_mock_"+seq))
	case isGemini(r):
		writeJSON(w, status, geminiErrorEnvelope(status, msg))
	default:
		writeError(w, status, msg, "")
	}
}
