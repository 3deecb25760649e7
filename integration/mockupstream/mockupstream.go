// Package mockupstream is a deterministic upstream for tests and
// benchmarks that speaks three wire formats on one server, chosen by path:
//
//   - OpenAI: GET /v1/models, GET /v1/models/{id}, POST /v1/chat/completions
//     (plain and streaming), POST /v1/embeddings and the Responses API's
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
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"io"
	"math"
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
	h.Write([]byte(input))
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
		r.Header.Set(http.CanonicalHeaderKey(name), value)
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
	w.Write(body)
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

// chatRequest is the part of a chat request the mock looks at.
type chatRequest struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Messages []chatMessage `json:"messages"`
	Tools    []struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

// chatMessage is the part of a chat message the mock looks at.
type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// chatReply is what a chat answer carries: content chunks and, for a
// tool call, its id, name and argument fragments.
type chatReply struct {
	content  []string
	toolID   string
	toolName string
	args     []string // argument fragments; they concatenate to the JSON object
}

// countWords counts whitespace-separated words in a message content: a
// string or an array of parts with "text".
func countWords(content json.RawMessage) int {
	content = bytes.TrimSpace(content)
	if len(content) == 0 {
		return 0
	}
	if content[0] == '"' {
		var s string
		if json.Unmarshal(content, &s) == nil {
			return len(strings.Fields(s))
		}
		return 0
	}
	if content[0] == '[' {
		var parts []struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(content, &parts) == nil {
			n := 0
			for _, p := range parts {
				n += len(strings.Fields(p.Text))
			}
			return n
		}
	}
	return 0
}

// streamParams are the per-request streaming knobs.
type streamParams struct {
	chunks        int
	delay         time.Duration
	stallAfter    int
	errorAfter    int
	truncateAfter int
	toolCall      bool // X-Mock-Tool-Call: 1
	crlf          bool // X-Mock-SSE-CRLF: 1
}

func (s *Server) params(r *http.Request) (streamParams, string) {
	p := streamParams{chunks: s.opts.Chunks, delay: s.opts.ChunkDelay, stallAfter: -1, errorAfter: -1, truncateAfter: -1}
	ints := []struct {
		header string
		dst    *int
	}{{HeaderChunks, &p.chunks}, {HeaderStallAfter, &p.stallAfter}, {HeaderErrorAfter, &p.errorAfter}, {HeaderTruncateAfter, &p.truncateAfter}}
	for _, field := range ints {
		if v := r.Header.Get(field.header); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return p, "mock: bad " + field.header + " header"
			}
			*field.dst = n
		}
	}
	if v := r.Header.Get(HeaderChunkDelay); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return p, "mock: bad " + HeaderChunkDelay + " header"
		}
		p.delay = d
	}
	p.toolCall = r.Header.Get(HeaderToolCall) == "1"
	p.crlf = r.Header.Get(HeaderSSECRLF) == "1"
	return p, ""
}

func (s *Server) serveChat(w http.ResponseWriter, r *http.Request, body []byte, id string) {
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "mock: invalid JSON body: "+err.Error(), "")
		return
	}
	if req.Model == "" {
		writeError(w, http.StatusBadRequest, "you must provide a model parameter", "")
		return
	}
	if len(req.Messages) == 0 {
		writeError(w, http.StatusBadRequest, "'messages' must be a non-empty array", "")
		return
	}
	if s.opts.StrictModels && !s.knownModel(req.Model) {
		writeError(w, http.StatusNotFound, "The model '"+req.Model+"' does not exist", "model_not_found")
		return
	}
	p, bad := s.params(r)
	if bad != "" {
		writeError(w, http.StatusBadRequest, bad, "")
		return
	}
	prompt := 0
	for _, m := range req.Messages {
		prompt += countWords(m.Content)
	}
	model, _ := json.Marshal(req.Model)
	reply := chatReply{content: replyChunks(p.chunks)}
	switch step, text := s.opts.ToolTurn.decide(chatTurnMessages(req), chatToolNames(req)); step {
	case turnCall:
		if s.turnInput == "" {
			writeError(w, http.StatusInternalServerError, "mock: Options.ToolTurn.Input is not a JSON object", "")
			return
		}
		reply = chatReply{content: []string{ToolTurnPreamble}, toolID: "call_mock_" + strings.TrimPrefix(id, "chatcmpl-mock-"),
			toolName: s.opts.ToolTurn.Name, args: splitPieces(s.turnInput, 3)}
	case turnAnswer:
		reply = chatReply{content: textChunks(text)}
	}

	if !req.Stream {
		s.writeChat(w, id, model, reply, prompt)
		return
	}
	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	s.stream(w, r, p, id, model, reply, includeUsage, prompt)
}

// replyChunks is the content of the usual reply: ChunkText(0..n-1).
func replyChunks(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = ChunkText(i)
	}
	return out
}

// completionTokens is the usage a reply reports: a token a chunk, or
// ToolOutputTokens for a tool call.
func (c chatReply) completionTokens() int {
	if c.toolName != "" {
		return ToolOutputTokens
	}
	return len(c.content)
}

// toolCallJSON is the tool_calls entry of a reply, with arguments args.
func (c chatReply) toolCallJSON(args string) string {
	return `{"id":` + string(jsonString(c.toolID)) + `,"type":"function","function":{"name":` + string(jsonString(c.toolName)) +
		`,"arguments":` + string(jsonString(args)) + `}}`
}

func (s *Server) writeChat(w http.ResponseWriter, id string, model []byte, reply chatReply, prompt int) {
	content, _ := json.Marshal(strings.Join(reply.content, ""))
	finish := "stop"
	b := make([]byte, 0, 512+len(content))
	b = append(b, `{"id":"`...)
	b = append(b, id...)
	b = append(b, `","object":"chat.completion","created":`...)
	b = append(b, s.created...)
	b = append(b, `,"model":`...)
	b = append(b, model...)
	b = append(b, `,"system_fingerprint":"fp_mock","choices":[{"index":0,"message":{"role":"assistant","content":`...)
	b = append(b, content...)
	if reply.toolName != "" {
		b = append(b, `,"tool_calls":[`...)
		b = append(b, reply.toolCallJSON(strings.Join(reply.args, ""))...)
		b = append(b, ']')
		finish = "tool_calls"
	}
	b = append(b, `,"refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"`...)
	b = append(b, finish...)
	b = append(b, `"}],"usage":`...)
	b = appendUsage(b, prompt, reply.completionTokens())
	b = append(b, '}')
	writeJSON(w, http.StatusOK, b)
}

func appendUsage(b []byte, prompt, completion int) []byte {
	b = append(b, `{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(completion), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt+completion), 10)
	b = append(b, '}')
	return b
}

// stream writes the SSE sequence: role chunk, content chunks, for a tool
// call its head and argument chunks, finish chunk, optional usage chunk,
// [DONE].
func (s *Server) stream(w http.ResponseWriter, r *http.Request, p streamParams, id string, model []byte, reply chatReply, includeUsage bool, prompt int) {
	rc := startSSE(w)

	prefix := make([]byte, 0, 128)
	prefix = append(prefix, `data: {"id":"`...)
	prefix = append(prefix, id...)
	prefix = append(prefix, `","object":"chat.completion.chunk","created":`...)
	prefix = append(prefix, s.created...)
	prefix = append(prefix, `,"model":`...)
	prefix = append(prefix, model...)
	prefix = append(prefix, `,"system_fingerprint":"fp_mock","choices":`...)
	usageNull := ""
	if includeUsage {
		usageNull = `,"usage":null`
	}

	events := make([][]byte, 0, len(reply.content)+len(reply.args)+5)
	choice := func(delta, finish string) []byte {
		e := append([]byte(nil), prefix...)
		e = append(e, `[{"index":0,"delta":`...)
		e = append(e, delta...)
		e = append(e, `,"logprobs":null,"finish_reason":`...)
		e = append(e, finish...)
		e = append(e, '}', ']')
		e = append(e, usageNull...)
		e = append(e, "}\n\n"...)
		return e
	}
	events = append(events, choice(`{"role":"assistant","content":""}`, "null"))
	for _, c := range reply.content {
		events = append(events, choice(`{"content":`+string(jsonString(c))+`}`, "null"))
	}
	finish := `"stop"`
	if reply.toolName != "" {
		events = append(events, choice(`{"tool_calls":[{"index":0,`+strings.TrimPrefix(reply.toolCallJSON(""), "{")+`]}`, "null"))
		for _, a := range reply.args {
			events = append(events, choice(`{"tool_calls":[{"index":0,"function":{"arguments":`+string(jsonString(a))+`}}]}`, "null"))
		}
		finish = `"tool_calls"`
	}
	events = append(events, choice(`{}`, finish))
	if includeUsage {
		e := append([]byte(nil), prefix...)
		e = append(e, `[],"usage":`...)
		e = appendUsage(e, prompt, reply.completionTokens())
		e = append(e, "}\n\n"...)
		events = append(events, e)
	}
	events = append(events, []byte("data: [DONE]\n\n"))

	env := errorEnvelope(http.StatusInternalServerError, "mock: injected mid-stream error", "")
	errEvent := append(append([]byte("data: "), env...), "\n\n"...)
	playEvents(w, r, rc, p, events, errEvent)
}

// startSSE writes the headers of an event stream and flushes them.
func startSSE(w http.ResponseWriter) *http.ResponseController {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	rc.Flush()
	return rc
}

// playEvents writes events one by one, flushing after each, honouring the
// delay, stall-after and error-after knobs of p. errEvent is what replaces
// event p.errorAfter. With p.crlf every "\n" is sent as "\r\n".
func playEvents(w http.ResponseWriter, r *http.Request, rc *http.ResponseController, p streamParams, events [][]byte, errEvent []byte) {
	write := func(e []byte) error {
		if p.crlf {
			e = bytes.ReplaceAll(e, []byte("\n"), []byte("\r\n"))
		}
		_, err := w.Write(e)
		return err
	}
	ctx := r.Context()
	for i, e := range events {
		if i == p.stallAfter {
			<-ctx.Done()
			return
		}
		if i == p.errorAfter {
			write(errEvent)
			rc.Flush()
			return
		}
		if i == p.truncateAfter {
			return
		}
		if i > 0 && p.delay > 0 {
			t := time.NewTimer(p.delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		if err := write(e); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
	if p.stallAfter >= len(events) {
		<-ctx.Done()
	}
}

// embeddingsRequest is the part of an embeddings request the mock reads.
type embeddingsRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     int             `json:"dimensions"`
}

// embeddingInputs splits an input (string, string[], int[], int[][]) into
// one key per vector and the token count.
func embeddingInputs(raw json.RawMessage) ([]string, int, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, 0, false
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, len(strings.Fields(one)), true
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil {
		n := 0
		for _, s := range many {
			n += len(strings.Fields(s))
		}
		return many, n, len(many) > 0
	}
	var tokens []int64
	if json.Unmarshal(raw, &tokens) == nil {
		return []string{string(raw)}, len(tokens), len(tokens) > 0
	}
	var tokenLists [][]int64
	if json.Unmarshal(raw, &tokenLists) == nil {
		out := make([]string, len(tokenLists))
		n := 0
		for i, t := range tokenLists {
			b, _ := json.Marshal(t)
			out[i] = string(b)
			n += len(t)
		}
		return out, n, len(out) > 0
	}
	return nil, 0, false
}

type embeddingObject struct {
	Object    string      `json:"object"`
	Index     int         `json:"index"`
	Embedding interface{} `json:"embedding"`
}

func (s *Server) serveEmbeddings(w http.ResponseWriter, body []byte) {
	var req embeddingsRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "mock: invalid JSON body: "+err.Error(), "")
		return
	}
	if req.Model == "" {
		writeError(w, http.StatusBadRequest, "you must provide a model parameter", "")
		return
	}
	if s.opts.StrictModels && !s.knownModel(req.Model) {
		writeError(w, http.StatusNotFound, "The model '"+req.Model+"' does not exist", "model_not_found")
		return
	}
	inputs, tokens, ok := embeddingInputs(req.Input)
	if !ok {
		writeError(w, http.StatusBadRequest, "'input' must be a string, an array of strings or of token arrays", "")
		return
	}
	if req.EncodingFormat != "" && req.EncodingFormat != "float" && req.EncodingFormat != "base64" {
		writeError(w, http.StatusBadRequest, "'encoding_format' must be 'float' or 'base64'", "")
		return
	}
	dims := s.opts.Dimensions
	if req.Dimensions > 0 {
		dims = req.Dimensions
	}
	data := make([]embeddingObject, len(inputs))
	for i, in := range inputs {
		v := Vector(in, dims)
		var emb interface{} = v
		if req.EncodingFormat == "base64" {
			buf := make([]byte, 4*len(v))
			for j, f := range v {
				binary.LittleEndian.PutUint32(buf[4*j:], math.Float32bits(f))
			}
			emb = base64.StdEncoding.EncodeToString(buf)
		}
		data[i] = embeddingObject{Object: "embedding", Index: i, Embedding: emb}
	}
	resp := struct {
		Object string            `json:"object"`
		Model  string            `json:"model"`
		Data   []embeddingObject `json:"data"`
		Usage  struct {
			PromptTokens int `json:"prompt_tokens"`
			TotalTokens  int `json:"total_tokens"`
		} `json:"usage"`
	}{Object: "list", Model: req.Model, Data: data}
	resp.Usage.PromptTokens = tokens
	resp.Usage.TotalTokens = tokens
	b, _ := json.Marshal(resp)
	writeJSON(w, http.StatusOK, b)
}
