// Package mockupstream is a deterministic upstream for tests and
// benchmarks that speaks three wire formats on one server, chosen by path:
//
//   - OpenAI: GET /v1/models, GET /v1/models/{id}, POST /v1/chat/completions
//     (openai_chat.go: plain and streaming), POST /v1/embeddings
//     (openai_embeddings.go) and the Responses API's
//     POST /v1/responses (responses.go: plain and streaming, the full
//     event sequence Codex CLI needs, function calls).
//   - Anthropic (anthropic.go): POST /v1/messages (plain and streaming;
//     any query string, such as Claude Code's ?beta=true, is accepted and
//     recorded), POST /v1/messages/count_tokens, and GET /v1/models[/{id}]
//     in the Anthropic shape when the request carries an
//     anthropic-version header. Requires x-api-key and anthropic-version.
//     Messages with role "system" are accepted under the anthropic-beta
//     SystemMessagesBeta, as Claude Code sends them.
//   - Gemini v1beta (gemini.go): GET /v1beta/models[/{m}], POST
//     /v1beta/models/{m}:generateContent, :streamGenerateContent (?alt=sse
//     or a JSON array), :countTokens, :embedContent, :batchEmbedContents
//     and Imagen's :predict. Requires x-goog-api-key (or ?key=).
//
// Each dialect answers errors in its own envelope. The mock records the
// requests it receives and injects failures on request headers:
//
//	X-Mock-Status: 429         answer with an error envelope and that status
//	X-Mock-Retry-After: 2      with X-Mock-Status, also send Retry-After
//	X-Mock-Delay: 2s           wait that long before answering (any route; ends early, unanswered, when the client goes away)
//	X-Mock-Chunk-Delay: 300ms  delay between SSE events (overrides Options.ChunkDelay)
//	X-Mock-Chunks: 3           number of content chunks (overrides Options.Chunks)
//	X-Mock-Stall-After: 2      stream 2 events, then stall until the client goes away
//	X-Mock-Error-After: 2      stream 2 events, then send the dialect's error event and end
//	X-Mock-Truncate-After: 2   stream 2 events, then end the response without error or terminator
//	X-Mock-Tool-Call: 1        (Anthropic, Gemini, Responses) answer with a tool call of the request's first tool
//	X-Mock-SSE-CRLF: 1         end SSE lines with \r\n instead of \n
//	X-Mock-Echo-Credentials: 1 answer an error quoting the request's credentials (echo.go)
//
// A gateway in front of the mock usually does not forward such headers, so
// the same knobs can ride in the URL: leading path segment pairs
// "/x-mock-<name>/<value>" are removed from the path and applied as the
// header "X-Mock-<Name>: <value>" (a provider baseUrl of
// http://host/x-mock-error-after/3 makes every request to it fail after 3
// events). Recorded requests show the stripped path and the applied headers.
//
// Options.ToolTurn (toolturn.go) scripts a tool call and the answer to
// its result on the Anthropic, OpenAI chat, Responses and Gemini routes,
// decided from each request alone, so that an agent (Claude Code, Codex
// CLI) can run a whole tool turn against the mock, directly or through a
// translating gateway.
//
// Replies are deterministic: ChunkText and ReplyText give the exact assistant
// text, and the reply carries Chunks completion tokens.
package mockupstream

import (
	"encoding/json"
	"hash/fnv"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Request headers understood by the mock.
const (
	HeaderStatus     = "X-Mock-Status"
	HeaderRetryAfter = "X-Mock-Retry-After"
	// HeaderDelay holds every route's answer back for a Go duration
	// after the request was recorded (so Total already counts it): a
	// slow upstream, or one that keeps a request open for as long as a
	// test needs. A client that goes away ends the wait; the request is
	// then left unanswered.
	HeaderDelay      = "X-Mock-Delay"
	HeaderChunkDelay = "X-Mock-Chunk-Delay"
	HeaderChunks     = "X-Mock-Chunks"
	HeaderStallAfter = "X-Mock-Stall-After"
	HeaderErrorAfter = "X-Mock-Error-After"
	// HeaderTruncateAfter ends the stream cleanly (no error, no
	// terminator) after that many events, like a dropped upstream.
	HeaderTruncateAfter = "X-Mock-Truncate-After"
	HeaderToolCall      = "X-Mock-Tool-Call"
	HeaderSSECRLF       = "X-Mock-SSE-CRLF"
)

// PathKnobPrefix starts a path segment that carries a knob (see the
// package documentation).
const PathKnobPrefix = "/x-mock-"

// DefaultCreated is the fixed "created" timestamp of every object the mock
// returns unless Options.Created is set.
const DefaultCreated int64 = 1735689600

// DefaultModels is the model list served when Options.Models is empty.
var DefaultModels = []string{"gpt-5-mini", "gpt-4o-mini", "text-embedding-3-small"}

// Options configures a Server. The zero value is usable.
type Options struct {
	// Models is the list GET /v1/models returns. Empty means DefaultModels.
	Models []string
	// StrictModels makes chat and embeddings requests for a model not in
	// Models fail with 404 model_not_found. Default: any model is echoed.
	StrictModels bool
	// Chunks is the number of content chunks of a streamed reply (and the
	// number of pieces of the non-streamed reply). Zero means 5.
	Chunks int
	// ChunkDelay is the pause between two SSE events. Default 0.
	ChunkDelay time.Duration
	// Dimensions is the embedding vector length when the request has no
	// "dimensions" field. Zero means 8.
	Dimensions int
	// RecordLimit is how many received requests Requests keeps (the most
	// recent ones). Zero means 64; negative disables recording.
	RecordLimit int
	// Created is the "created" timestamp in responses. Zero means
	// DefaultCreated.
	Created int64
	// AnthropicModels is the Anthropic model list (GET /v1/models with an
	// anthropic-version header). Empty means DefaultAnthropicModels.
	// StrictModels applies to it for /v1/messages.
	AnthropicModels []string
	// GeminiModels is the Gemini model list (GET /v1beta/models). Empty
	// means DefaultGeminiModels. StrictModels applies to it.
	GeminiModels []string
	// AnthropicAPIKey, when set, is the only x-api-key the Anthropic
	// routes accept (401 authentication_error otherwise). Default: any
	// non-empty key.
	AnthropicAPIKey string
	// GeminiAPIKey, when set, is the only key the Gemini routes accept
	// (400 API_KEY_INVALID otherwise). Default: any non-empty key.
	GeminiAPIKey string
	// OpenAIAPIKey, when set, is the only key the OpenAI routes (models,
	// chat, embeddings, responses) accept as Authorization: Bearer (401
	// invalid_api_key otherwise). Default: no check.
	OpenAIAPIKey string
	// ToolTurn, when set, scripts a tool call and the answer to its
	// result on the Anthropic Messages, OpenAI chat, Responses and Gemini
	// generateContent routes (see ToolTurn). Default: none.
	ToolTurn *ToolTurn
}

// Recorded is one request as the mock received it.
type Recorded struct {
	// Method is the HTTP method.
	Method string
	// Path is the URL path.
	Path string
	// RawQuery is the URL query string without '?'.
	RawQuery string
	// Header is a copy of the request headers.
	Header http.Header
	// Body is the raw request body, byte for byte.
	Body []byte
}

// Server is the mock upstream; it is an http.Handler. Build one with New.
type Server struct {
	opts    Options
	created string
	seq     atomic.Int64
	// turnInput is Options.ToolTurn.Input compacted; "" when it is not a
	// JSON object.
	turnInput string

	mu       sync.Mutex
	recorded []Recorded
	total    int64
}

// New returns a Server configured by opts.
func New(opts Options) *Server {
	if len(opts.Models) == 0 {
		opts.Models = append([]string(nil), DefaultModels...)
	}
	if opts.Chunks <= 0 {
		opts.Chunks = 5
	}
	if opts.Dimensions <= 0 {
		opts.Dimensions = 8
	}
	if opts.RecordLimit == 0 {
		opts.RecordLimit = 64
	}
	if opts.Created == 0 {
		opts.Created = DefaultCreated
	}
	if len(opts.AnthropicModels) == 0 {
		opts.AnthropicModels = append([]string(nil), DefaultAnthropicModels...)
	}
	if len(opts.GeminiModels) == 0 {
		opts.GeminiModels = append([]string(nil), DefaultGeminiModels...)
	}
	s := &Server{opts: opts, created: strconv.FormatInt(opts.Created, 10)}
	if opts.ToolTurn != nil {
		turn := *opts.ToolTurn
		s.opts.ToolTurn = &turn
		s.turnInput = compactToolInput(turn.Input)
	}
	return s
}

// Requests returns a copy of the recorded requests, oldest first.
func (s *Server) Requests() []Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Recorded, len(s.recorded))
	copy(out, s.recorded)
	return out
}

// LastRequest returns the most recently recorded request.
func (s *Server) LastRequest() (Recorded, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.recorded) == 0 {
		return Recorded{}, false
	}
	return s.recorded[len(s.recorded)-1], true
}

// Total returns how many requests the server has received, recorded or not.
func (s *Server) Total() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// Reset forgets the recorded requests and zeroes Total.
func (s *Server) Reset() {
	s.mu.Lock()
	s.recorded = nil
	s.total = 0
	s.mu.Unlock()
}

// ChunkText is the content of streamed content chunk i (0-based).
func ChunkText(i int) string {
	if i == 0 {
		return "Hello from mock"
	}
	return " part " + strconv.Itoa(i)
}

// ReplyText is the whole assistant reply made of n chunks.
func ReplyText(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteString(ChunkText(i))
	}
	return b.String()
}

// Vector is the deterministic embedding of input with dims components,
// each in [-1, 1).
func Vector(input string, dims int) []float32 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(input)) // a hash.Hash never returns an error
	x := h.Sum64()
	v := make([]float32, dims)
	for i := range v {
		// xorshift64 keeps the sequence deterministic per input.
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		v[i] = float32(int64(x%2000)-1000) / 1000
	}
	return v
}

// ServeHTTP answers the OpenAI, Anthropic and Gemini routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	if err != nil {
		writeError(w, http.StatusBadRequest, "mock: reading request body: "+err.Error(), "")
		return
	}
	applyPathKnobs(r)
	s.record(r, body)
	seq := strconv.FormatInt(s.seq.Add(1), 10)
	w.Header().Set("X-Request-Id", "req_mock_"+seq)
	if !s.delay(w, r, seq) {
		return
	}
	if r.Header.Get(HeaderEchoCredentials) != "" {
		serveEchoCredentials(w, r, seq)
		return
	}

	switch {
	case isAnthropic(r):
		s.serveAnthropic(w, r, body, seq)
		return
	case isGemini(r):
		s.serveGemini(w, r, body, seq)
		return
	}

	if key := s.opts.OpenAIAPIKey; key != "" && r.Header.Get("Authorization") != "Bearer "+key {
		writeError(w, http.StatusUnauthorized, "Incorrect API key provided.", "invalid_api_key")
		return
	}
	if v := r.Header.Get(HeaderStatus); v != "" {
		code, err := strconv.Atoi(v)
		if err != nil || code < 200 || code > 599 {
			writeError(w, http.StatusBadRequest, "mock: bad "+HeaderStatus+" header", "")
			return
		}
		if ra := r.Header.Get(HeaderRetryAfter); ra != "" {
			w.Header().Set("Retry-After", ra)
		}
		writeError(w, code, "mock: injected status "+v, "")
		return
	}

	path := r.URL.Path
	switch {
	case path == "/v1/models":
		if !allowMethod(w, r, http.MethodGet) {
			return
		}
		s.serveModels(w)
	case strings.HasPrefix(path, "/v1/models/"):
		if !allowMethod(w, r, http.MethodGet) {
			return
		}
		s.serveModel(w, strings.TrimPrefix(path, "/v1/models/"))
	case path == "/v1/chat/completions":
		if !allowMethod(w, r, http.MethodPost) {
			return
		}
		s.serveChat(w, r, body, "chatcmpl-mock-"+seq)
	case path == "/v1/embeddings":
		if !allowMethod(w, r, http.MethodPost) {
			return
		}
		s.serveEmbeddings(w, body)
	case path == "/v1/responses":
		if !allowMethod(w, r, http.MethodPost) {
			return
		}
		s.serveResponses(w, r, body, seq)
	default:
		writeError(w, http.StatusNotFound, "mock: unknown URL "+r.Method+" "+path, "unknown_url")
	}
}

// applyPathKnobs moves leading "/x-mock-<name>/<value>" segment pairs of
// the path into X-Mock-<Name> request headers.
func applyPathKnobs(r *http.Request) {
	path := r.URL.Path
	changed := false
	for strings.HasPrefix(strings.ToLower(path), PathKnobPrefix) {
		rest := path[1:]
		i := strings.IndexByte(rest, '/')
		if i < 0 {
			break
		}
		name := rest[:i]
		rest = rest[i+1:]
		value := rest
		if j := strings.IndexByte(rest, '/'); j >= 0 {
			value, rest = rest[:j], rest[j:]
		} else {
			rest = "/"
		}
		r.Header.Set(name, value)
		path = rest
		changed = true
	}
	if changed {
		r.URL.Path = path
		r.URL.RawPath = ""
	}
}

// delay waits out the X-Mock-Delay of r. It reports false when the
// request is done: the header was malformed (answered with a 400 in the
// request's dialect) or the client went away during the wait.
func (s *Server) delay(w http.ResponseWriter, r *http.Request, seq string) bool {
	v := r.Header.Get(HeaderDelay)
	if v == "" {
		return true
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		msg := "mock: bad " + HeaderDelay + " header"
		switch {
		case isAnthropic(r):
			writeJSON(w, http.StatusBadRequest, anthropicErrorEnvelope(http.StatusBadRequest, msg, "req_mock_"+seq))
		case isGemini(r):
			writeJSON(w, http.StatusBadRequest, geminiErrorEnvelope(http.StatusBadRequest, msg))
		default:
			writeError(w, http.StatusBadRequest, msg, "")
		}
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

func (s *Server) record(r *http.Request, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total++
	if s.opts.RecordLimit < 0 {
		return
	}
	if len(s.recorded) >= s.opts.RecordLimit {
		n := copy(s.recorded, s.recorded[1:])
		s.recorded = s.recorded[:n]
	}
	s.recorded = append(s.recorded, Recorded{
		Method:   r.Method,
		Path:     r.URL.Path,
		RawQuery: r.URL.RawQuery,
		Header:   r.Header.Clone(),
		Body:     body,
	})
}

func allowMethod(w http.ResponseWriter, r *http.Request, method string) bool {
	if r.Method == method {
		return true
	}
	w.Header().Set("Allow", method)
	writeError(w, http.StatusMethodNotAllowed, "mock: method "+r.Method+" not allowed", "method_not_allowed")
	return false
}

// errorType maps a status to the OpenAI error type and default code.
func errorType(status int) (string, string) {
	switch {
	case status == http.StatusUnauthorized:
		return "invalid_request_error", "invalid_api_key"
	case status == http.StatusForbidden:
		return "permission_error", ""
	case status == http.StatusNotFound:
		return "invalid_request_error", "model_not_found"
	case status == http.StatusTooManyRequests:
		return "requests", "rate_limit_exceeded"
	case status >= 500:
		return "server_error", ""
	default:
		return "invalid_request_error", ""
	}
}

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func errorEnvelope(status int, msg, code string) []byte {
	typ, def := errorType(status)
	if code == "" {
		code = def
	}
	e := errorBody{Error: errorDetail{Message: msg, Type: typ}}
	if code != "" {
		e.Error.Code = &code
	}
	b, _ := json.Marshal(e)
	return b
}

func writeError(w http.ResponseWriter, status int, msg, code string) {
	writeJSON(w, status, errorEnvelope(status, msg, code))
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body) // a client gone mid-reply is the client's failure to see
}

type modelObject struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

func (s *Server) serveModels(w http.ResponseWriter) {
	list := struct {
		Object string        `json:"object"`
		Data   []modelObject `json:"data"`
	}{Object: "list", Data: make([]modelObject, 0, len(s.opts.Models))}
	for _, id := range s.opts.Models {
		list.Data = append(list.Data, modelObject{ID: id, Object: "model", Created: s.opts.Created, OwnedBy: "mock"})
	}
	b, _ := json.Marshal(list)
	writeJSON(w, http.StatusOK, b)
}

func (s *Server) serveModel(w http.ResponseWriter, id string) {
	if !s.knownModel(id) {
		writeError(w, http.StatusNotFound, "The model '"+id+"' does not exist", "model_not_found")
		return
	}
	b, _ := json.Marshal(modelObject{ID: id, Object: "model", Created: s.opts.Created, OwnedBy: "mock"})
	writeJSON(w, http.StatusOK, b)
}

func (s *Server) knownModel(id string) bool {
	for _, m := range s.opts.Models {
		if m == id {
			return true
		}
	}
	return false
}
