package mockupstream

import (
	"net/http"
	"strings"
	"testing"
)

// The echo knob quotes back every credential a request carried, in each
// dialect's error envelope and in X-Mock-Echo, from a header or a path
// knob, with X-Mock-Status choosing the status.
func TestEchoCredentials(t *testing.T) {
	_, ts := newServer(t, Options{})
	for _, c := range []struct {
		name, method, path string
		headers            map[string]string
		status             int
		want               []string
	}{
		{"openai_header", "POST", "/v1/chat/completions", map[string]string{"Authorization": "Bearer sk-echo-1", HeaderEchoCredentials: "1"},
			401, []string{`"error":{"message":"mock: rejected credentials: authorization=Bearer sk-echo-1"`, `"type":"invalid_request_error"`}},
		{"openai_path_knob_status", "GET", "/x-mock-echo-credentials/1/x-mock-status/500/v1/models", map[string]string{"Authorization": "Bearer sk-echo-2"},
			500, []string{"authorization=Bearer sk-echo-2", `"type":"server_error"`}},
		{"anthropic", "POST", "/x-mock-echo-credentials/1/v1/messages", map[string]string{"X-Api-Key": "sk-ant-echo", AnthropicVersionHeader: "2023-06-01"},
			401, []string{`{"type":"error","error":{"type":"authentication_error","message":"mock: rejected credentials: x-api-key=sk-ant-echo"}`}},
		{"gemini_header_and_query", "POST", "/x-mock-echo-credentials/1/v1beta/models/gemini-2.5-flash:generateContent?key=AIza-q", map[string]string{"X-Goog-Api-Key": "AIza-h"},
			401, []string{`"message":"mock: rejected credentials: x-goog-api-key=AIza-h key=AIza-q"`, `"status":"UNAUTHENTICATED"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, body := do(t, c.method, ts.URL+c.path, `{}`, c.headers)
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.status, body)
			}
			for _, w := range c.want {
				if !strings.Contains(string(body), w) {
					t.Errorf("body lacks %s: %s", w, body)
				}
			}
			if echo := resp.Header.Get(EchoHeader); !strings.HasPrefix(echo, "mock: rejected credentials: ") || !strings.Contains(string(body), echo) {
				t.Errorf("%s %q does not match the body %s", EchoHeader, echo, body)
			}
		})
	}
	// Without the knob the same request is served.
	resp, body := do(t, "GET", ts.URL+"/v1/models", "", map[string]string{"Authorization": "Bearer sk-echo-3"})
	if resp.StatusCode != http.StatusOK || strings.Contains(string(body), "sk-echo-3") || resp.Header.Get(EchoHeader) != "" {
		t.Fatalf("without the knob: %d %v %s", resp.StatusCode, resp.Header, body)
	}
}
