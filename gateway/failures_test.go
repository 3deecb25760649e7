package gateway

import (
	"net/http"
	"strings"
	"testing"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// The failure table's policy, row by row: retry only what a second try
// can fix (connection errors, 429, 5xx); failover for everything except
// a 400 (every provider would refuse it alike), a cancelled client, an
// oversized answer and failures after the stream started.
func TestFailureTablePolicy(t *testing.T) {
	cases := []struct {
		class                          apierr.Class
		retry, failover, providerFault bool
	}{
		{apierr.ClassConnect, true, true, true},
		{apierr.ClassStall, false, true, true},
		{apierr.ClassClientCancel, false, false, false},
		{apierr.ClassBadRequest, false, false, false},
		{apierr.ClassRefused, false, true, false},
		{apierr.ClassCredential, false, true, false},
		{apierr.ClassRateLimited, true, true, true},
		{apierr.ClassServer, true, true, true},
		{apierr.ClassUnexpectedStatus, false, true, false},
		{apierr.ClassOversize, false, false, false},
		{apierr.ClassTruncated, false, false, false},
		{apierr.ClassInterrupted, false, false, false},
		{apierr.ClassBadResponse, false, false, false},
	}
	if len(cases) != int(apierr.ClassCount)-1 {
		t.Fatalf("%d cases for %d failure classes", len(cases), int(apierr.ClassCount)-1)
	}
	for _, tc := range cases {
		row := &failureTable[tc.class]
		if row.name == "" || row.code == "" || row.retry != tc.retry || row.failover != tc.failover || row.providerFault != tc.providerFault {
			t.Errorf("class %d: row %+v, want retry %v failover %v providerFault %v", tc.class, *row, tc.retry, tc.failover, tc.providerFault)
		}
	}
}

// Upstream statuses map to classes, and the envelope the client sees.
func TestUpstreamStatusClasses(t *testing.T) {
	openai := &providerRuntime{name: "o", kind: providerOpenAI}
	gemini := &providerRuntime{name: "g", kind: providerGemini}
	cases := []struct {
		p          *providerRuntime
		status     int
		body       string
		class      apierr.Class
		wantStatus int
		kind       string
	}{
		{openai, 400, `{}`, apierr.ClassBadRequest, 400, "invalid_request_error"},
		{openai, 404, `{}`, apierr.ClassRefused, 404, "invalid_request_error"},
		{openai, 422, `{}`, apierr.ClassRefused, 422, "invalid_request_error"},
		{openai, 401, `{}`, apierr.ClassCredential, 502, "server_error"},
		{openai, 403, `{}`, apierr.ClassCredential, 502, "server_error"},
		{gemini, 400, `{"error":{"details":[{"reason":"API_KEY_INVALID"}]}}`, apierr.ClassCredential, 502, "server_error"},
		{gemini, 400, `{"error":{"message":"bad"}}`, apierr.ClassBadRequest, 400, "invalid_request_error"},
		{openai, 429, `{}`, apierr.ClassRateLimited, 429, "rate_limit_error"},
		{openai, 500, `{}`, apierr.ClassServer, 500, "server_error"},
		{openai, 503, `{}`, apierr.ClassServer, 503, "server_error"},
		{openai, 302, ``, apierr.ClassUnexpectedStatus, 502, "server_error"},
	}
	for _, tc := range cases {
		resp := &http.Response{StatusCode: tc.status, Header: http.Header{"Retry-After": {"7"}}}
		e := upstreamHTTPError(tc.p, resp, strings.NewReader(tc.body))
		if e.Class != tc.class || e.Status != tc.wantStatus || e.Kind != tc.kind || e.Code != "upstream_error" || e.RetryAfter != "7" {
			t.Errorf("%s %d: %+v", tc.p.kind, tc.status, e)
		}
	}
}
