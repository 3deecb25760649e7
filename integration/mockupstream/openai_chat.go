package mockupstream

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The OpenAI chat completions route: the request the mock reads, the
// reply it builds (text or a tool call), whole or streamed with the
// per-request knobs.

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
	_ = rc.Flush() // an unflushable writer still gets the events, later
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
			_ = write(errEvent)
			_ = rc.Flush()
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
