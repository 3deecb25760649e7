package integration_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"math/big"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// The secrets scan's machinery (secrets_scan_test.go drives the
// routes): per-run sentinel secrets, the checker that looks for any
// piece of them in a text, and the small fake servers the gateway
// talks to besides the mock upstream.

// ssKeyWindow is the length of the windows of a secret the checker
// looks for: any 8 consecutive characters of a key, token or password
// in an answer or a log line is a leak, so a prefix ("sk-Ab3dE…"), a
// suffix ("…wxyz" with its neighbours) or a middle of one is caught as
// surely as the whole. The random part of every sentinel makes a
// window turning up by chance practically impossible.
const ssKeyWindow = 8

// ssDigestWindow is the window of an encoded form (a user key's
// SHA-256 digest in hex or base64, a Basic credential): 12 characters,
// 48 bits and more, so that the hex request and trace ids every answer
// carries never match by chance, while a digest cut to 12 characters
// still does.
const ssDigestWindow = 12

const ssBase62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// ssRandom is prefix followed by 24 random base62 characters: no byte a
// JSON string, a URL or a header would escape, so the secret appears
// verbatim wherever it leaks.
func ssRandom(t testing.TB, prefix string) string {
	t.Helper()
	b := []byte(prefix)
	for i := 0; i < 24; i++ {
		n, err := rand.Int(rand.Reader, big.NewInt(int64(len(ssBase62))))
		require.NoError(t, err)
		b = append(b, ssBase62[n.Int64()])
	}
	return string(b)
}

// ssDigestForms are the hex (lower and upper case) and base64 (standard
// and URL alphabets, padded and raw) forms of the SHA-256 of key.
func ssDigestForms(key string) []string {
	sum := sha256.Sum256([]byte(key))
	h := hex.EncodeToString(sum[:])
	return []string{h, strings.ToUpper(h),
		base64.StdEncoding.EncodeToString(sum[:]), base64.RawStdEncoding.EncodeToString(sum[:]),
		base64.URLEncoding.EncodeToString(sum[:]), base64.RawURLEncoding.EncodeToString(sum[:])}
}

// ssBasic is the token of a Basic Authorization header.
func ssBasic(user, pass string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
}

// leakScanner finds pieces of known secrets in texts.
type leakScanner struct {
	keys    map[string]string // every ssKeyWindow window of a secret → its name
	encoded map[string]string // every ssDigestWindow window of an encoded form → its name
	names   []string

	mu       sync.Mutex
	findings []string
	// texts counts what was scanned, by kind ("body", "header", "log line").
	texts map[string]int
}

func newLeakScanner() *leakScanner {
	return &leakScanner{keys: map[string]string{}, encoded: map[string]string{}, texts: map[string]int{}}
}

// secret registers a key, token or password: each of its windows.
func (s *leakScanner) secret(name, value string) {
	s.names = append(s.names, name)
	addWindows(s.keys, name, value, ssKeyWindow)
}

// encodedForm registers an encoding of a secret (a digest, a Basic
// credential): each of its longer windows.
func (s *leakScanner) encodedForm(name, value string) {
	addWindows(s.encoded, name, value, ssDigestWindow)
}

// userKey registers a user's key and every form of its digest (what the
// gateway holds instead of the key).
func (s *leakScanner) userKey(name, key string) {
	s.secret(name, key)
	for _, d := range ssDigestForms(key) {
		s.encodedForm(name+" SHA-256 digest", d)
	}
}

func addWindows(m map[string]string, name, value string, n int) {
	if len(value) < n {
		panic("secret " + name + " is shorter than its window")
	}
	for i := 0; i+n <= len(value); i++ {
		m[value[i:i+n]] = name
	}
}

// check returns one finding per secret found in text (at its first
// place), naming where and showing the text around it.
func (s *leakScanner) check(where, text string) []string {
	var out []string
	seen := map[string]bool{}
	look := func(m map[string]string, n int) {
		for i := 0; i+n <= len(text); i++ {
			name, ok := m[text[i:i+n]]
			if !ok || seen[name] {
				continue
			}
			seen[name] = true
			lo, hi := max(0, i-60), min(len(text), i+n+60)
			out = append(out, where+": "+name+" at byte "+strconv.Itoa(i)+": …"+strconv.Quote(text[lo:hi])+"…")
		}
	}
	look(s.keys, ssKeyWindow)
	look(s.encoded, ssDigestWindow)
	return out
}

// scan checks text and keeps what it found; kind counts the text.
func (s *leakScanner) scan(kind, where, text string) {
	found := s.check(where, text)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.texts[kind]++
	s.findings = append(s.findings, found...)
}

// scanHeaders scans each header line of h ("Name: value").
func (s *leakScanner) scanHeaders(where string, h http.Header) {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		for _, v := range h[k] {
			s.scan("header", where+" header", k+": "+v)
		}
	}
}

// scanLog scans every line of a process's output; it returns the lines.
func (s *leakScanner) scanLog(where string, out string) []string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	for i, line := range lines {
		s.scan("log line", where+" line "+strconv.Itoa(i+1), line)
	}
	return lines
}

func (s *leakScanner) report() ([]string, map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	counts := map[string]int{}
	for k, v := range s.texts {
		counts[k] = v
	}
	return append([]string(nil), s.findings...), counts
}

// --- fake servers ---

// ssCredentialEcho is every credential header r carried, as
// "name=value" pairs: what the fakes' error answers quote back.
func ssCredentialEcho(r *http.Request) string {
	names := make([]string, 0, len(r.Header))
	for k := range r.Header {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, k := range names {
		switch k {
		case "Accept", "Accept-Encoding", "Content-Type", "Content-Length", "User-Agent", "Traceparent", "Tracestate", "X-Request-Id",
			"Mcp-Protocol-Version", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto":
			continue
		}
		v := strings.Join(r.Header[k], ",")
		b.WriteString(k + "=" + v + "; ")
		// A careless server quotes the token it refused without its
		// scheme, too.
		if i := strings.IndexByte(v, ' '); k == "Authorization" && i > 0 {
			b.WriteString("token=" + v[i+1:] + "; ")
		}
	}
	return b.String()
}

// ssEchoFailure answers 500 quoting the request's credentials in the
// body and in a header.
func ssEchoFailure(w http.ResponseWriter, r *http.Request) {
	echo := ssCredentialEcho(r)
	w.Header().Set("X-Echo", echo)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusInternalServerError)
	_, _ = io.WriteString(w, `{"error":"rejected: `+echo+`"}`)
}

// ssHeaderCheck counts the requests that reached a fake without the
// headers the gateway was configured to send it.
type ssHeaderCheck struct {
	want map[string]string
	mu   sync.Mutex
	seen int
	bad  []string
}

func (c *ssHeaderCheck) observe(r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen++
	for k, v := range c.want {
		if got := r.Header.Get(k); got != v {
			c.bad = append(c.bad, r.Method+" "+r.URL.Path+": "+k+"="+strconv.Quote(got))
		}
	}
}

func (c *ssHeaderCheck) result() (int, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen, append([]string(nil), c.bad...)
}

// ssMCPServer is a stateless MCP server answering JSON (what both the
// per-target proxy and the federated POST /mcp need): initialize, ping,
// tools/list with the tools "echo" and "leak", tools/call (echo answers;
// leak is a JSON-RPC error quoting the credentials the call carried),
// notifications (202), and under .../fail an HTTP 500 quoting them.
func ssMCPServer(t *testing.T, check *ssHeaderCheck) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		check.observe(r)
		if strings.HasSuffix(r.URL.Path, "/fail") {
			ssEchoFailure(w, r)
			return
		}
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"params"`
		}
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			http.Error(w, "bad JSON", http.StatusBadRequest)
			return
		}
		if len(m.ID) == 0 {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		reply := func(member string, v string) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"`+member+`":`+v+`}`)
		}
		switch m.Method {
		case "initialize":
			reply("result", `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"scan-tools","version":"1.0.0"}}`)
		case "ping":
			reply("result", `{}`)
		case "tools/list":
			reply("result", `{"tools":[`+
				`{"name":"echo","description":"echoes","inputSchema":{"type":"object","properties":{"text":{"type":"string"}}}},`+
				`{"name":"leak","description":"fails quoting its credentials","inputSchema":{"type":"object"}}]}`)
		case "tools/call":
			if m.Params.Name == "leak" {
				msg, _ := json.Marshal("refused: " + ssCredentialEcho(r))
				reply("error", `{"code":-32001,"message":`+string(msg)+`}`)
				return
			}
			var in struct {
				Text string `json:"text"`
			}
			_ = json.Unmarshal(m.Params.Arguments, &in)
			text, _ := json.Marshal("echo: " + in.Text)
			reply("result", `{"content":[{"type":"text","text":`+string(text)+`}],"isError":false}`)
		default:
			reply("error", `{"code":-32601,"message":"method not found"}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// ssA2AAgent is an A2A v0.3 agent, mountable under any path prefix:
// its card, message/send on .../rpc, and under .../fail an HTTP 500
// quoting the request's credentials. checks[prefix] observes the
// requests whose path starts with prefix.
func ssA2AAgent(t *testing.T, checks map[string]*ssHeaderCheck) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for prefix, c := range checks {
			if strings.HasPrefix(r.URL.Path, prefix) {
				c.observe(r)
			}
		}
		switch {
		case strings.HasSuffix(r.URL.Path, "/fail"):
			ssEchoFailure(w, r)
		case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/.well-known/agent-card.json"):
			base := "http://" + r.Host + strings.TrimSuffix(r.URL.Path, "/.well-known/agent-card.json")
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"protocolVersion":"0.3.0","name":"Scan agent","url":"`+base+`/rpc","preferredTransport":"JSONRPC",`+
				`"capabilities":{"streaming":false},"skills":[]}`)
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/rpc"):
			var req struct {
				ID json.RawMessage `json:"id"`
			}
			_ = json.NewDecoder(r.Body).Decode(&req)
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":{"kind":"task","id":"task-1","contextId":"ctx-1",`+
				`"status":{"state":"completed"},"artifacts":[{"artifactId":"a1","parts":[{"kind":"text","text":"done"}]}]}}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// ssUpstream is the mock upstream with the OpenAI media routes it does
// not serve answered here: images (one base64 PNG), speech (bytes of
// audio/mpeg) and transcriptions (multipart in, {"text"} out). A path
// that starts with a mock knob goes to the mock, which applies it.
func ssUpstream(mock http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/images/generations":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"created":1735689600,"data":[{"b64_json":"iVBORw0KGgo="}],"usage":{"input_tokens":4,"output_tokens":0,"total_tokens":4}}`)
		case "/v1/audio/speech":
			w.Header().Set("Content-Type", "audio/mpeg")
			_, _ = w.Write([]byte("ID3\x03\x00fake-mp3-bytes"))
		case "/v1/audio/transcriptions":
			if err := r.ParseMultipartForm(1 << 20); err != nil || r.FormValue("model") == "" {
				http.Error(w, `{"error":{"message":"bad multipart","type":"invalid_request_error"}}`, http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"text":"hello from the fake transcriber"}`)
		default:
			mock.ServeHTTP(w, r)
		}
	})
}

// ssMultipart is a transcription request body and its content type.
func ssMultipart(t *testing.T, model string) ([]byte, string) {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	require.NoError(t, mw.WriteField("model", model))
	fw, err := mw.CreateFormFile("file", "hello.wav")
	require.NoError(t, err)
	_, _ = fw.Write([]byte("RIFF\x24\x00\x00\x00WAVEfmt fake-audio"))
	require.NoError(t, mw.Close())
	return b.Bytes(), mw.FormDataContentType()
}
