package mockupstream

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// DefaultGeminiModels is the Gemini model list served when
// Options.GeminiModels is empty: a chat model, an embedder and Imagen.
var DefaultGeminiModels = []string{"gemini-2.5-flash", "gemini-embedding-001", "imagen-4.0-generate-001"}

// GeminiThoughtsTokens is the thoughtsTokenCount of every generateContent
// reply; the API counts it outside candidatesTokenCount.
const GeminiThoughtsTokens = 2

// GeminiThoughtSignature is the opaque thoughtSignature the mock puts on
// a functionCall part (as Gemini 2.5+ does).
const GeminiThoughtSignature = "bW9jay10aG91Z2h0LXNpZ25hdHVyZQ=="

// GeminiDefaultSampleCount is Imagen's sampleCount when the request has
// none.
const GeminiDefaultSampleCount = 4

func isGemini(r *http.Request) bool {
	return r.URL.Path == "/v1beta" || strings.HasPrefix(r.URL.Path, "/v1beta/")
}

// geminiStatus maps an HTTP status to the google.rpc status name.
func geminiStatus(code int) string {
	switch code {
	case 400:
		return "INVALID_ARGUMENT"
	case 401:
		return "UNAUTHENTICATED"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "NOT_FOUND"
	case 409:
		return "ABORTED"
	case 429:
		return "RESOURCE_EXHAUSTED"
	case 499:
		return "CANCELLED"
	case 500:
		return "INTERNAL"
	case 501:
		return "NOT_IMPLEMENTED"
	case 503:
		return "UNAVAILABLE"
	case 504:
		return "DEADLINE_EXCEEDED"
	}
	if code >= 500 {
		return "UNKNOWN"
	}
	return "FAILED_PRECONDITION"
}

func geminiErrorEnvelope(code int, msg string, details ...interface{}) []byte {
	type errBody struct {
		Code    int           `json:"code"`
		Message string        `json:"message"`
		Status  string        `json:"status"`
		Details []interface{} `json:"details,omitempty"`
	}
	b, _ := json.Marshal(struct {
		Error errBody `json:"error"`
	}{errBody{code, msg, geminiStatus(code), details}})
	return b
}

// geminiStreamError is the mid-stream error payload.
var geminiStreamError = geminiErrorEnvelope(503, "The model is overloaded. Please try again later.")

func (s *Server) serveGemini(w http.ResponseWriter, r *http.Request, body []byte, seq string) {
	fail := func(code int, msg string, details ...interface{}) {
		writeJSON(w, code, geminiErrorEnvelope(code, msg, details...))
	}
	key := r.Header.Get("X-Goog-Api-Key")
	if key == "" {
		key = r.URL.Query().Get("key")
	}
	switch {
	case key == "":
		fail(http.StatusUnauthorized, "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.")
		return
	case s.opts.GeminiAPIKey != "" && key != s.opts.GeminiAPIKey:
		fail(http.StatusBadRequest, "API key not valid. Please pass a valid API key.", map[string]string{
			"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com",
		})
		return
	}
	if v := r.Header.Get(HeaderStatus); v != "" {
		code, err := strconv.Atoi(v)
		if err != nil || code < 200 || code > 599 {
			fail(http.StatusBadRequest, "mock: bad "+HeaderStatus+" header")
			return
		}
		if ra := r.Header.Get(HeaderRetryAfter); ra != "" {
			w.Header().Set("Retry-After", ra)
		}
		fail(code, "mock: injected status "+v)
		return
	}
	method := func(m string) bool {
		if r.Method == m {
			return true
		}
		w.Header().Set("Allow", m)
		fail(http.StatusMethodNotAllowed, "mock: method "+r.Method+" not allowed")
		return false
	}
	path := r.URL.Path
	if path == "/v1beta/models" {
		if method(http.MethodGet) {
			s.serveGeminiModels(w, r, fail)
		}
		return
	}
	rest := strings.TrimPrefix(path, "/v1beta/models/")
	if rest == path || rest == "" {
		fail(http.StatusNotFound, "mock: unknown URL "+r.Method+" "+path)
		return
	}
	model, action := rest, ""
	if i := strings.LastIndexByte(rest, ':'); i >= 0 {
		model, action = rest[:i], rest[i+1:]
	}
	if action == "" {
		if !method(http.MethodGet) {
			return
		}
		if !contains(s.opts.GeminiModels, model) {
			fail(http.StatusNotFound, "models/"+model+" is not found for API version v1beta")
			return
		}
		b, _ := json.Marshal(s.geminiModel(model))
		writeJSON(w, http.StatusOK, b)
		return
	}
	if !method(http.MethodPost) {
		return
	}
	if s.opts.StrictModels && (!contains(s.opts.GeminiModels, model) || !contains(geminiMethods(model), action)) {
		fail(http.StatusNotFound, "models/"+model+" is not found for API version v1beta, or is not supported for "+action+
			". Call ListModels to see the list of available models and their supported methods.")
		return
	}
	p, bad := s.params(r)
	if bad != "" {
		fail(http.StatusBadRequest, bad)
		return
	}
	switch action {
	case "generateContent", "streamGenerateContent":
		req, msg := parseGeminiRequest(body, model)
		if msg != "" {
			fail(http.StatusBadRequest, msg)
			return
		}
		req.turn = geminiTurnMessages(body)
		s.serveGenerate(w, r, req, model, seq, p, action == "streamGenerateContent")
	case "countTokens":
		var wrap struct {
			GenerateContentRequest json.RawMessage `json:"generateContentRequest"`
		}
		if json.Unmarshal(body, &wrap) == nil && len(wrap.GenerateContentRequest) > 0 {
			body = wrap.GenerateContentRequest
		}
		req, msg := parseGeminiRequest(body, model)
		if msg != "" {
			fail(http.StatusBadRequest, msg)
			return
		}
		writeJSON(w, http.StatusOK, []byte(`{"totalTokens":`+strconv.Itoa(req.promptWords)+`}`))
	case "embedContent":
		values, msg := s.geminiEmbed(body, "")
		if msg != "" {
			fail(http.StatusBadRequest, msg)
			return
		}
		b, _ := json.Marshal(map[string]interface{}{"embedding": map[string]interface{}{"values": values}})
		writeJSON(w, http.StatusOK, b)
	case "batchEmbedContents":
		s.serveBatchEmbed(w, body, model, fail)
	case "predict":
		s.servePredict(w, body, fail)
	default:
		fail(http.StatusNotFound, "mock: unknown method "+action)
	}
}

// geminiMethods is the supportedGenerationMethods of a model, guessed
// from its id.
func geminiMethods(id string) []string {
	switch {
	case strings.Contains(id, "embedding"):
		return []string{"embedContent", "batchEmbedContents", "countTokens"}
	case strings.HasPrefix(id, "imagen"):
		return []string{"predict"}
	}
	return []string{"generateContent", "streamGenerateContent", "countTokens", "createCachedContent", "batchGenerateContent"}
}

type geminiModelObject struct {
	Name                       string   `json:"name"`
	Version                    string   `json:"version"`
	DisplayName                string   `json:"displayName"`
	Description                string   `json:"description"`
	InputTokenLimit            int      `json:"inputTokenLimit"`
	OutputTokenLimit           int      `json:"outputTokenLimit"`
	SupportedGenerationMethods []string `json:"supportedGenerationMethods"`
}

func (s *Server) geminiModel(id string) geminiModelObject {
	m := geminiModelObject{
		Name: "models/" + id, Version: "001", DisplayName: "Mock " + id, Description: "Deterministic mock model",
		InputTokenLimit: 1048576, OutputTokenLimit: 65536, SupportedGenerationMethods: geminiMethods(id),
	}
	if strings.Contains(id, "embedding") {
		m.InputTokenLimit, m.OutputTokenLimit = 2048, 1
	}
	if strings.HasPrefix(id, "imagen") {
		m.InputTokenLimit, m.OutputTokenLimit = 480, 8192
	}
	return m
}

// serveGeminiModels pages through GeminiModels with pageSize/pageToken.
func (s *Server) serveGeminiModels(w http.ResponseWriter, r *http.Request, fail func(int, string, ...interface{})) {
	q := r.URL.Query()
	size := 50
	if v := q.Get("pageSize"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			fail(http.StatusBadRequest, "Invalid value at 'page_size'")
			return
		}
		if n > 0 {
			size = n
		}
		if size > 1000 {
			size = 1000
		}
	}
	start := 0
	if tok := q.Get("pageToken"); tok != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(tok, "mock-page-"))
		if err != nil || !strings.HasPrefix(tok, "mock-page-") || n < 0 || n > len(s.opts.GeminiModels) {
			fail(http.StatusBadRequest, "Invalid page token")
			return
		}
		start = n
	}
	end := start + size
	next := ""
	if end < len(s.opts.GeminiModels) {
		next = "mock-page-" + strconv.Itoa(end)
	} else {
		end = len(s.opts.GeminiModels)
	}
	page := struct {
		Models        []geminiModelObject `json:"models"`
		NextPageToken string              `json:"nextPageToken,omitempty"`
	}{Models: []geminiModelObject{}, NextPageToken: next}
	for _, id := range s.opts.GeminiModels[start:end] {
		page.Models = append(page.Models, s.geminiModel(id))
	}
	b, _ := json.Marshal(page)
	writeJSON(w, http.StatusOK, b)
}

type geminiUsage struct {
	PromptTokenCount     int `json:"promptTokenCount"`
	CandidatesTokenCount int `json:"candidatesTokenCount,omitempty"`
	TotalTokenCount      int `json:"totalTokenCount"`
	ThoughtsTokenCount   int `json:"thoughtsTokenCount,omitempty"`
}

type geminiCandidate struct {
	Content struct {
		Parts []json.RawMessage `json:"parts"`
		Role  string            `json:"role"`
	} `json:"content"`
	FinishReason string `json:"finishReason,omitempty"`
	Index        int    `json:"index"`
}

type geminiResponse struct {
	Candidates    []geminiCandidate `json:"candidates"`
	UsageMetadata geminiUsage       `json:"usageMetadata"`
	ModelVersion  string            `json:"modelVersion"`
	ResponseID    string            `json:"responseId"`
}

func geminiText(s string) json.RawMessage {
	return json.RawMessage(`{"text":` + string(jsonString(s)) + `}`)
}

func (s *Server) serveGenerate(w http.ResponseWriter, r *http.Request, req geminiRequest, model, seq string, p streamParams, stream bool) {
	responseID := "mock-" + seq
	var tool string
	isTool := false
	if len(req.functions) > 0 || p.toolCall {
		names := req.functions
		if len(req.allowed) > 0 {
			names = req.allowed
		}
		choice := "auto"
		switch req.mode {
		case "ANY":
			choice = "any"
		case "NONE":
			choice = "none"
		}
		tool, isTool = toolCallFor(names, choice, "", req.lastUser, p.toolCall)
	}
	reply := buildReply(p.chunks, req.maxTokens, req.stops)
	args, preamble := toolArgumentsObject, ""
	switch step, text := s.opts.ToolTurn.decide(req.turn, req.functions); step {
	case turnCall:
		if s.turnInput == "" {
			writeJSON(w, http.StatusInternalServerError, geminiErrorEnvelope(http.StatusInternalServerError, "mock: Options.ToolTurn.Input is not a JSON object"))
			return
		}
		tool, isTool = s.opts.ToolTurn.Name, true
		args, preamble = s.turnInput, ToolTurnPreamble
	case turnAnswer:
		isTool = false
		reply = textReply{chunks: textChunks(text), reason: "end"}
	}
	finish, output := "STOP", len(reply.chunks)
	if isTool {
		output = ToolOutputTokens
	} else if reply.reason == "max_tokens" {
		finish = "MAX_TOKENS"
	}
	final := geminiUsage{
		PromptTokenCount:     req.promptWords,
		CandidatesTokenCount: output,
		ThoughtsTokenCount:   GeminiThoughtsTokens,
		TotalTokenCount:      req.promptWords + output + GeminiThoughtsTokens,
	}
	response := func(parts []json.RawMessage, finishReason string, usage geminiUsage) []byte {
		c := geminiCandidate{FinishReason: finishReason}
		c.Content.Parts = parts
		c.Content.Role = "model"
		b, _ := json.Marshal(geminiResponse{Candidates: []geminiCandidate{c}, UsageMetadata: usage, ModelVersion: model, ResponseID: responseID})
		return b
	}
	callPart := json.RawMessage(`{"functionCall":{"name":` + string(jsonString(tool)) + `,"args":` + args +
		`},"thoughtSignature":"` + GeminiThoughtSignature + `"}`)
	callParts := []json.RawMessage{callPart}
	if preamble != "" {
		callParts = []json.RawMessage{geminiText(preamble), callPart}
	}

	if !stream {
		var parts []json.RawMessage
		if isTool {
			parts = callParts
		} else {
			parts = []json.RawMessage{geminiText(reply.text())}
		}
		writeJSON(w, http.StatusOK, response(parts, finish, final))
		return
	}

	var payloads [][]byte
	if isTool {
		payloads = append(payloads, response(callParts, finish, final))
	} else {
		partial := geminiUsage{PromptTokenCount: req.promptWords, TotalTokenCount: req.promptWords}
		chunks := reply.chunks
		if len(chunks) == 0 {
			chunks = []string{""}
		}
		for i, c := range chunks {
			if i == len(chunks)-1 {
				payloads = append(payloads, response([]json.RawMessage{geminiText(c)}, finish, final))
			} else {
				payloads = append(payloads, response([]json.RawMessage{geminiText(c)}, "", partial))
			}
		}
	}

	if r.URL.Query().Get("alt") == "sse" {
		events := make([][]byte, len(payloads))
		for i, pl := range payloads {
			events[i] = append(append([]byte("data: "), pl...), "\n\n"...)
		}
		rc := startSSE(w)
		playEvents(w, r, rc, p, events, append(append([]byte("data: "), geminiStreamError...), "\n\n"...))
		return
	}
	// Without alt=sse the API streams one JSON array, element by element.
	events := make([][]byte, len(payloads))
	for i, pl := range payloads {
		sep := ",\r\n"
		if i == 0 {
			sep = "["
		}
		events[i] = append([]byte(sep), pl...)
		if i == len(payloads)-1 {
			events[i] = append(events[i], ']')
		}
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush() // an unflushable writer still gets the events, later
	p.crlf = false
	playEvents(w, r, rc, p, events, append(append([]byte(",\r\n"), geminiStreamError...), ']'))
}

// geminiEmbed validates one EmbedContentRequest and returns its vector.
// wantModel, when set, is the "models/..." name the request must carry.
func (s *Server) geminiEmbed(raw json.RawMessage, wantModel string) ([]float32, string) {
	req, msg := protoObject(raw, "", "model", "content", "taskType", "title", "outputDimensionality")
	if msg != "" {
		return nil, msg
	}
	if wantModel != "" {
		var m string
		if msg := protoValue(req["model"], "model", "TYPE_STRING", &m); msg != "" {
			return nil, msg
		}
		if m != wantModel {
			return nil, "* BatchEmbedContentsRequest.model: model must be " + wantModel + " (got \"" + m + "\")"
		}
	}
	content, ok := req["content"]
	if !ok {
		return nil, "* EmbedContentRequest.content: content is not specified"
	}
	info, msg := geminiContent(content, "content", true)
	if msg != "" {
		return nil, msg
	}
	text := info.text
	if tt := req["taskType"]; tt != nil {
		var t string
		if msg := protoValue(tt, "task_type", "type.googleapis.com/google.ai.generativelanguage.v1beta.TaskType", &t); msg != "" {
			return nil, msg
		}
		switch t {
		case "TASK_TYPE_UNSPECIFIED", "RETRIEVAL_QUERY", "RETRIEVAL_DOCUMENT", "SEMANTIC_SIMILARITY",
			"CLASSIFICATION", "CLUSTERING", "QUESTION_ANSWERING", "FACT_VERIFICATION", "CODE_RETRIEVAL_QUERY":
		default:
			return nil, "Invalid value at 'task_type' (type.googleapis.com/google.ai.generativelanguage.v1beta.TaskType), \"" + t + "\""
		}
	}
	dims := s.opts.Dimensions
	if v, ok := req["outputDimensionality"]; ok {
		if json.Unmarshal(v, &dims) != nil || dims < 1 {
			return nil, "* EmbedContentRequest.output_dimensionality: must be positive"
		}
	}
	// The vector key is the text of the parts joined by single spaces
	// (the text of a single part is its key).
	return Vector(strings.TrimSuffix(text, " "), dims), ""
}

func (s *Server) serveBatchEmbed(w http.ResponseWriter, body []byte, model string, fail func(int, string, ...interface{})) {
	req, msg := protoObject(body, "", "requests")
	if msg != "" {
		fail(http.StatusBadRequest, msg)
		return
	}
	var list []json.RawMessage
	if json.Unmarshal(req["requests"], &list) != nil || len(list) == 0 {
		fail(http.StatusBadRequest, "* BatchEmbedContentsRequest.requests: requests is not specified")
		return
	}
	type vec struct {
		Values []float32 `json:"values"`
	}
	out := struct {
		Embeddings []vec `json:"embeddings"`
	}{}
	for _, one := range list {
		v, msg := s.geminiEmbed(one, "models/"+model)
		if msg != "" {
			fail(http.StatusBadRequest, msg)
			return
		}
		out.Embeddings = append(out.Embeddings, vec{v})
	}
	b, _ := json.Marshal(out)
	writeJSON(w, http.StatusOK, b)
}

// servePredict is Imagen: sampleCount deterministic PNGs (ImagePNG) for
// the single instance's prompt.
func (s *Server) servePredict(w http.ResponseWriter, body []byte, fail func(int, string, ...interface{})) {
	var req struct {
		Instances []struct {
			Prompt string `json:"prompt"`
		} `json:"instances"`
		Parameters struct {
			SampleCount *int   `json:"sampleCount"`
			AspectRatio string `json:"aspectRatio"`
		} `json:"parameters"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		fail(http.StatusBadRequest, "Invalid JSON payload received. "+err.Error())
		return
	}
	if len(req.Instances) != 1 {
		fail(http.StatusBadRequest, "Exactly one instance is supported, got "+strconv.Itoa(len(req.Instances)))
		return
	}
	if req.Instances[0].Prompt == "" {
		fail(http.StatusBadRequest, "instances[0].prompt: prompt is required")
		return
	}
	n := GeminiDefaultSampleCount
	if req.Parameters.SampleCount != nil {
		n = *req.Parameters.SampleCount
	}
	if n < 1 || n > 4 {
		fail(http.StatusBadRequest, "parameters.sampleCount must be between 1 and 4")
		return
	}
	switch req.Parameters.AspectRatio {
	case "", "1:1", "3:4", "4:3", "9:16", "16:9":
	default:
		fail(http.StatusBadRequest, "parameters.aspectRatio: unsupported aspect ratio "+req.Parameters.AspectRatio)
		return
	}
	type prediction struct {
		BytesBase64Encoded string `json:"bytesBase64Encoded"`
		MimeType           string `json:"mimeType"`
	}
	out := struct {
		Predictions []prediction `json:"predictions"`
	}{}
	for i := 0; i < n; i++ {
		out.Predictions = append(out.Predictions, prediction{base64.StdEncoding.EncodeToString(ImagePNG(req.Instances[0].Prompt, i)), "image/png"})
	}
	b, _ := json.Marshal(out)
	writeJSON(w, http.StatusOK, bytes.TrimSpace(b))
}
