package gateway

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Shared fixtures for the table-driven suites: a standard configuration
// around one fake openai upstream, request helpers that can set any
// header or send a chunked body, and envelope assertions.

const (
	testProviderKey = "sk-prov-unified-0001"
	testAliceKey    = "sk-alice-0001"
	testBobKey      = "sk-bob-0001"
)

// standardConfig serves one openai provider "mock" (models m1, m2) at
// upstreamURL. alice (group all) may use everything; bob (group m1only)
// only m1.
func standardConfig(upstreamURL string) string {
	return `{
  "providers": {"mock": {"type": "openai", "baseUrl": "` + upstreamURL + `", "apiKey": "` + testProviderKey + `", "models": ["m1", "m2"]}},
  "groups": {"all": {}, "m1only": {"models": ["m1"]}},
  "users": {"inline": [
    {"name": "alice", "group": "all", "apiKey": "` + testAliceKey + `"},
    {"name": "bob", "group": "m1only", "apiKey": "` + testBobKey + `"}
  ]}
}`
}

// testRequest describes one client request.
type testRequest struct {
	method  string
	path    string // may carry a query and raw escapes; sent verbatim
	headers map[string]string
	body    string
	chunked bool // hide the length so the body goes out chunked
}

// send performs req against base and returns the response with its body
// read in full.
func send(t *testing.T, base string, req testRequest) (*http.Response, string) {
	t.Helper()
	var rd io.Reader
	if req.body != "" {
		rd = strings.NewReader(req.body)
		if req.chunked {
			rd = io.MultiReader(rd)
		}
	}
	method := req.method
	if method == "" {
		method = http.MethodPost
	}
	hr, err := http.NewRequest(method, base+req.path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if req.chunked {
		hr.ContentLength = -1
	}
	for k, v := range req.headers {
		hr.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatalf("%s %s: %v", method, req.path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, req.path, err)
	}
	return resp, string(data)
}

// bearer returns the headers of a JSON request authenticated with key.
func bearer(key string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json"}
}

// envelopeDetail is the decoded "error" member of the OpenAI envelope.
type envelopeDetail struct {
	Message  string          `json:"message"`
	Type     string          `json:"type"`
	Param    *string         `json:"param"`
	Code     string          `json:"code"`
	Upstream json.RawMessage `json:"upstream"`
}

// decodeEnvelope checks body is exactly the OpenAI error envelope
// (message, type, param, code, optional upstream) and returns its detail.
func decodeEnvelope(t *testing.T, body string) envelopeDetail {
	t.Helper()
	var raw map[string]map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &raw); err != nil {
		t.Fatalf("body is not an error envelope: %v: %s", err, body)
	}
	if len(raw) != 1 || raw["error"] == nil {
		t.Fatalf("envelope must hold exactly one \"error\" member: %s", body)
	}
	for _, k := range []string{"message", "type", "param", "code"} {
		if _, ok := raw["error"][k]; !ok {
			t.Fatalf("envelope lacks error.%s: %s", k, body)
		}
	}
	var env struct {
		Error envelopeDetail `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &env); err != nil {
		t.Fatalf("decode envelope: %v: %s", err, body)
	}
	if env.Error.Message == "" {
		t.Fatalf("envelope has an empty message: %s", body)
	}
	return env.Error
}

// expectEnvelope asserts status, JSON content type and the envelope's
// type and code, and returns the detail.
func expectEnvelope(t *testing.T, resp *http.Response, body string, status int, kind, code string) envelopeDetail {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("status = %d, want %d; body %s", resp.StatusCode, status, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type = %q, want application/json", ct)
	}
	d := decodeEnvelope(t, body)
	if d.Type != kind || d.Code != code {
		t.Fatalf("envelope type/code = %q/%q, want %q/%q; body %s", d.Type, d.Code, kind, code, body)
	}
	return d
}

// okJSON is an upstream handler answering a fixed JSON body.
func okJSON(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
	}
}

// newGatewayFromConfig builds a gateway directly (no server) for tests
// that only need construction.
func newGatewayFromConfig(t *testing.T, configJSON string) (*Gateway, error) {
	t.Helper()
	cfg, err := DecodeConfigJSON([]byte(configJSON))
	if err != nil {
		return nil, err
	}
	g, err := New(nil, cfg, Options{Name: "test", LogOutput: io.Discard})
	if g != nil {
		t.Cleanup(func() { _ = g.Close() })
	}
	return g, err
}

// sendDeclaredLength sends only the head of a POST declaring a body of
// declared bytes, then reads the answer: a gateway must refuse an
// oversized declared length before reading any of the body. (Sending the
// real body races the server's early close against the client's writes.)
func sendDeclaredLength(t *testing.T, base, path string, headers map[string]string, declared int64) (*http.Response, string) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	head := "POST " + path + " HTTP/1.1\r\nHost: gateway\r\nContent-Length: " + strconv.FormatInt(declared, 10) + "\r\n"
	for k, v := range headers {
		head += k + ": " + v + "\r\n"
	}
	if _, err := io.WriteString(conn, head+"\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(data)
}

// setenv sets an environment variable for the duration of the test so
// that the gateway's os.Getenv sees it both compiled and under `yaegi
// test`, whose interpreted os package keeps its own copy of the
// environment (Traefik seeds that copy from the process environment when
// it loads the plugin).
func setenv(t *testing.T, key, value string) {
	t.Helper()
	prev, had := os.LookupEnv(key)
	t.Setenv(key, value)
	_ = os.Setenv(key, value)
	t.Cleanup(func() {
		if had {
			_ = os.Setenv(key, prev)
			return
		}
		_ = os.Unsetenv(key)
	})
}
