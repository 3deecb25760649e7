package mockupstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// DefaultAnthropicModels is the Anthropic model list served when
// Options.AnthropicModels is empty.
var DefaultAnthropicModels = []string{"claude-sonnet-4-5", "claude-haiku-4-5"}

// Every Anthropic reply reports these cache token counts beside
// input_tokens (which excludes them, as the API's does).
const (
	AnthropicCacheCreationTokens = 2
	AnthropicCacheReadTokens     = 3
)

// AnthropicVersionHeader is the header the Anthropic routes require.
const AnthropicVersionHeader = "Anthropic-Version"

// isAnthropic reports whether r is addressed to the Anthropic dialect.
func isAnthropic(r *http.Request) bool {
	p := r.URL.Path
	if p == "/v1/messages" || strings.HasPrefix(p, "/v1/messages/") {
		return true
	}
	return (p == "/v1/models" || strings.HasPrefix(p, "/v1/models/")) && r.Header.Get(AnthropicVersionHeader) != ""
}

// anthropicErrorType maps a status to the Anthropic error type.
func anthropicErrorType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusPaymentRequired:
		return "billing_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusGatewayTimeout:
		return "timeout_error"
	case 529:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

func anthropicErrorEnvelope(status int, msg, requestID string) []byte {
	b, _ := json.Marshal(struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
		RequestID string `json:"request_id,omitempty"`
	}{Type: "error", Error: struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}{anthropicErrorType(status), msg}, RequestID: requestID})
	return b
}

// anthropicStreamError is the mid-stream error event.
const anthropicStreamError = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"

func (s *Server) serveAnthropic(w http.ResponseWriter, r *http.Request, body []byte, seq string) {
	reqID := "req_mock_" + seq
	w.Header().Set("Request-Id", reqID)
	fail := func(status int, msg string) {
		writeJSON(w, status, anthropicErrorEnvelope(status, msg, reqID))
	}
	key := r.Header.Get("X-Api-Key")
	switch {
	case key == "":
		fail(http.StatusUnauthorized, "x-api-key header is required")
		return
	case s.opts.AnthropicAPIKey != "" && key != s.opts.AnthropicAPIKey:
		fail(http.StatusUnauthorized, "invalid x-api-key")
		return
	case r.Header.Get(AnthropicVersionHeader) == "":
		fail(http.StatusBadRequest, "anthropic-version: header is required")
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
	switch p := r.URL.Path; {
	case p == "/v1/models":
		if method(http.MethodGet) {
			s.serveAnthropicModels(w, r, fail)
		}
	case strings.HasPrefix(p, "/v1/models/"):
		if !method(http.MethodGet) {
			return
		}
		id := strings.TrimPrefix(p, "/v1/models/")
		if !contains(s.opts.AnthropicModels, id) {
			fail(http.StatusNotFound, "model: "+id)
			return
		}
		b, _ := json.Marshal(s.anthropicModel(id))
		writeJSON(w, http.StatusOK, b)
	case p == "/v1/messages":
		if method(http.MethodPost) {
			s.serveMessages(w, r, body, seq, fail)
		}
	case p == "/v1/messages/count_tokens":
		if !method(http.MethodPost) {
			return
		}
		req, msg := parseAnthropicRequest(body, true, hasBeta(r, SystemMessagesBeta))
		if msg != "" {
			fail(http.StatusBadRequest, msg)
			return
		}
		writeJSON(w, http.StatusOK, []byte(`{"input_tokens":`+strconv.Itoa(req.promptWords)+`}`))
	default:
		fail(http.StatusNotFound, "Not Found")
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

type anthropicModelObject struct {
	Type        string `json:"type"`
	ID          string `json:"id"`
	DisplayName string `json:"display_name"`
	CreatedAt   string `json:"created_at"`
}

func (s *Server) anthropicModel(id string) anthropicModelObject {
	return anthropicModelObject{
		Type:        "model",
		ID:          id,
		DisplayName: "Mock " + id,
		CreatedAt:   time.Unix(s.opts.Created, 0).UTC().Format(time.RFC3339),
	}
}

// serveAnthropicModels pages through AnthropicModels with limit,
// after_id and before_id.
func (s *Server) serveAnthropicModels(w http.ResponseWriter, r *http.Request, fail func(int, string)) {
	q := r.URL.Query()
	limit := 20
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			fail(http.StatusBadRequest, "limit: Input should be between 1 and 1000")
			return
		}
		limit = n
	}
	ids := s.opts.AnthropicModels
	start, end := 0, len(ids)
	if a := q.Get("after_id"); a != "" {
		i := indexOf(ids, a)
		if i < 0 {
			fail(http.StatusBadRequest, "after_id: unknown model "+a)
			return
		}
		start = i + 1
	}
	if b := q.Get("before_id"); b != "" {
		i := indexOf(ids, b)
		if i < 0 {
			fail(http.StatusBadRequest, "before_id: unknown model "+b)
			return
		}
		end = i
		if end-limit > start {
			start = end - limit
		}
	}
	if start > end {
		start = end
	}
	hasMore := false
	if end-start > limit {
		end = start + limit
		hasMore = true
	}
	page := struct {
		Data    []anthropicModelObject `json:"data"`
		HasMore bool                   `json:"has_more"`
		FirstID *string                `json:"first_id"`
		LastID  *string                `json:"last_id"`
	}{Data: []anthropicModelObject{}, HasMore: hasMore}
	for _, id := range ids[start:end] {
		page.Data = append(page.Data, s.anthropicModel(id))
	}
	if len(page.Data) > 0 {
		first, last := page.Data[0].ID, page.Data[len(page.Data)-1].ID
		page.FirstID, page.LastID = &first, &last
	}
	b, _ := json.Marshal(page)
	writeJSON(w, http.StatusOK, b)
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

// anthropicBlock is a content block of a request message.
type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	Source    json.RawMessage `json:"source"`
}

// anthropicRequest is what the mock reads from a Messages request.
type anthropicRequest struct {
	model       string
	maxTokens   int
	stream      bool
	stops       []string
	tools       []string // tool names, in order
	toolChoice  string   // "", auto, any, tool, none
	choiceName  string
	lastUser    string // text of the last user message
	promptWords int
}

// anthropicTopLevel are the request fields the Messages API knows; any
// other one is refused ("Extra inputs are not permitted"), as the API
// does.
var anthropicTopLevel = map[string]bool{
	"model": true, "messages": true, "max_tokens": true, "system": true, "tools": true,
	"tool_choice": true, "stop_sequences": true, "temperature": true, "top_p": true, "top_k": true,
	"metadata": true, "thinking": true, "stream": true, "output_config": true, "output_format": true,
	"service_tier": true, "container": true, "mcp_servers": true, "context_management": true,
	"inference_geo": true,
}

var anthropicBlockTypes = map[string]bool{
	"text": true, "image": true, "document": true, "tool_use": true, "tool_result": true,
	"thinking": true, "redacted_thinking": true, "search_result": true, "server_tool_use": true,
	"web_search_tool_result": true, "container_upload": true,
}

var anthropicToolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,128}$`)

// SystemMessagesBeta is the anthropic-beta value under which a request's
// messages may have role "system" (text only), as Claude Code sends them.
// Without it such a message is refused with a 400, as the API does.
const SystemMessagesBeta = "per-turn-control-2026-07-01"

// hasBeta reports whether r's anthropic-beta headers list beta.
func hasBeta(r *http.Request, beta string) bool {
	for _, v := range r.Header.Values("Anthropic-Beta") {
		for _, b := range strings.Split(v, ",") {
			if strings.TrimSpace(b) == beta {
				return true
			}
		}
	}
	return false
}

// parseAnthropicRequest validates a Messages (or count_tokens) body the
// way the API does and returns what the mock needs, or an error message.
// systemMessages allows messages with role "system" (SystemMessagesBeta).
func parseAnthropicRequest(body []byte, countTokens, systemMessages bool) (anthropicRequest, string) {
	var out anthropicRequest
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return out, "mock: invalid JSON body: " + err.Error()
	}
	keys := make([]string, 0, len(top))
	for k := range top {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !anthropicTopLevel[k] || (countTokens && (k == "max_tokens" || k == "stream")) {
			return out, k + ": Extra inputs are not permitted"
		}
	}
	var req struct {
		Model     string `json:"model"`
		MaxTokens *int   `json:"max_tokens"`
		Stream    bool   `json:"stream"`
		Messages  []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		System        json.RawMessage `json:"system"`
		StopSequences []string        `json:"stop_sequences"`
		Temperature   *float64        `json:"temperature"`
		TopP          *float64        `json:"top_p"`
		Tools         []struct {
			Type        string          `json:"type"`
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"input_schema"`
		} `json:"tools"`
		ToolChoice *struct {
			Type string `json:"type"`
			Name string `json:"name"`
		} `json:"tool_choice"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return out, "mock: invalid request: " + err.Error()
	}
	if req.Model == "" {
		return out, "model: Field required"
	}
	out.model = req.Model
	if !countTokens {
		if req.MaxTokens == nil {
			return out, "max_tokens: Field required"
		}
		if *req.MaxTokens < 1 {
			return out, "max_tokens: Input should be greater than or equal to 1"
		}
		out.maxTokens = *req.MaxTokens
	}
	out.stream = req.Stream
	if req.Temperature != nil && (*req.Temperature < 0 || *req.Temperature > 1) {
		return out, "temperature: Input should be less than or equal to 1"
	}
	if req.TopP != nil && (*req.TopP < 0 || *req.TopP > 1) {
		return out, "top_p: Input should be less than or equal to 1"
	}
	out.stops = req.StopSequences
	if len(req.Messages) == 0 {
		return out, "messages: at least one message is required"
	}

	// system: a string or text blocks.
	if sys := bytes.TrimSpace(req.System); len(sys) > 0 && string(sys) != "null" {
		n, msg := systemWords(sys, "system")
		if msg != "" {
			return out, msg
		}
		out.promptWords += n
	}

	for i, t := range req.Tools {
		if t.Type != "" && t.Type != "custom" {
			// Server tools carry a versioned type (web_search_20250305).
			if strings.Contains(t.Type, "_20") || t.Type == "mcp_toolset" {
				continue
			}
			return out, fmt.Sprintf("tools.%d: Input tag '%s' found using 'type' does not match any of the expected tags", i, t.Type)
		}
		if !anthropicToolName.MatchString(t.Name) {
			return out, fmt.Sprintf("tools.%d.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'", i)
		}
		var schema struct {
			Type string `json:"type"`
		}
		if len(t.InputSchema) == 0 {
			return out, fmt.Sprintf("tools.%d.custom.input_schema: Field required", i)
		}
		if json.Unmarshal(t.InputSchema, &schema) != nil || schema.Type != "object" {
			return out, fmt.Sprintf("tools.%d.custom.input_schema.type: Input should be 'object'", i)
		}
		out.tools = append(out.tools, t.Name)
	}
	if req.ToolChoice != nil {
		switch req.ToolChoice.Type {
		case "auto", "any", "none":
		case "tool":
			if !contains(out.tools, req.ToolChoice.Name) {
				return out, "tool_choice.tool.name: no tool named '" + req.ToolChoice.Name + "'"
			}
		default:
			return out, "tool_choice: Input tag '" + req.ToolChoice.Type + "' found using 'type' does not match any of the expected tags: 'auto', 'any', 'tool', 'none'"
		}
		out.toolChoice, out.choiceName = req.ToolChoice.Type, req.ToolChoice.Name
	}

	var prevToolUses []string
	for i, m := range req.Messages {
		if m.Role == "system" && systemMessages {
			n, msg := systemWords(m.Content, fmt.Sprintf("messages.%d", i))
			if msg != "" {
				return out, msg
			}
			out.promptWords += n
			continue
		}
		if m.Role != "user" && m.Role != "assistant" {
			return out, fmt.Sprintf("messages.%d.role: Input should be 'user' or 'assistant'", i)
		}
		last := i == len(req.Messages)-1
		var blocks []anthropicBlock
		raw := bytes.TrimSpace(m.Content)
		var str string
		switch {
		case json.Unmarshal(raw, &str) == nil:
			if str == "" && !(last && m.Role == "assistant") {
				return out, fmt.Sprintf("messages.%d: all messages must have non-empty content except for the optional final assistant message", i)
			}
			blocks = []anthropicBlock{{Type: "text", Text: &str}}
			if str == "" {
				blocks = nil
			}
		case json.Unmarshal(raw, &blocks) == nil:
			if len(blocks) == 0 && !(last && m.Role == "assistant") {
				return out, fmt.Sprintf("messages.%d: all messages must have non-empty content except for the optional final assistant message", i)
			}
		default:
			return out, fmt.Sprintf("messages.%d.content: Input should be a valid string or a list of content blocks", i)
		}
		var text strings.Builder
		var toolUses []string
		results := map[string]bool{}
		for j, b := range blocks {
			where := fmt.Sprintf("messages.%d.content.%d", i, j)
			if !anthropicBlockTypes[b.Type] {
				return out, where + ": Input tag '" + b.Type + "' found using 'type' does not match any of the expected tags"
			}
			switch b.Type {
			case "text":
				if b.Text == nil {
					return out, where + ".text.text: Field required"
				}
				if *b.Text == "" {
					return out, "messages: text content blocks must be non-empty"
				}
				text.WriteString(*b.Text)
				text.WriteByte(' ')
			case "image", "document":
				if len(b.Source) == 0 {
					return out, where + "." + b.Type + ".source: Field required"
				}
			case "tool_use":
				if m.Role != "assistant" {
					return out, where + ": tool_use blocks may only appear in assistant messages"
				}
				if b.ID == "" || b.Name == "" {
					return out, where + ".tool_use: id and name are required"
				}
				if !isJSONObject(b.Input) {
					return out, where + ".tool_use.input: Input should be a valid dictionary"
				}
				toolUses = append(toolUses, b.ID)
			case "tool_result":
				if m.Role != "user" {
					return out, where + ": tool_result blocks may only appear in user messages"
				}
				if b.ToolUseID == "" {
					return out, where + ".tool_result.tool_use_id: Field required"
				}
				if !contains(prevToolUses, b.ToolUseID) {
					return out, where + ": unexpected `tool_use_id` found in `tool_result` blocks: " + b.ToolUseID +
						". Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
				}
				results[b.ToolUseID] = true
				out.promptWords += toolResultWords(b.Content)
			}
		}
		var missing []string
		for _, id := range prevToolUses {
			if !results[id] {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			return out, fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. "+
				"Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i-1, strings.Join(missing, ", "))
		}
		prevToolUses = toolUses
		out.promptWords += words(text.String())
		if m.Role == "user" {
			out.lastUser = text.String()
		}
	}
	if len(prevToolUses) > 0 && !countTokens {
		return out, fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. "+
			"Each `tool_use` block must have a corresponding `tool_result` block in the next message.", len(req.Messages)-1, strings.Join(prevToolUses, ", "))
	}
	return out, ""
}

// systemWords validates a system prompt (the system field, or a message
// with role "system" whose content is at where): a string or text blocks.
// It returns the word count or an error message.
func systemWords(raw json.RawMessage, where string) (int, string) {
	var str string
	var blocks []anthropicBlock
	switch {
	case json.Unmarshal(raw, &str) == nil:
		return words(str), ""
	case json.Unmarshal(raw, &blocks) == nil:
		n := 0
		for i, b := range blocks {
			if b.Type != "text" || b.Text == nil {
				return 0, fmt.Sprintf("%s.%d: Input tag '%s' found using 'type' does not match the expected tag 'text'", where, i, b.Type)
			}
			n += words(*b.Text)
		}
		return n, ""
	}
	return 0, where + ": Input should be a valid string or a list of text blocks"
}

// toolResultWords counts the words of a tool_result content: a string or
// text blocks.
func toolResultWords(raw json.RawMessage) int {
	var str string
	if json.Unmarshal(raw, &str) == nil {
		return words(str)
	}
	var blocks []anthropicBlock
	n := 0
	if json.Unmarshal(raw, &blocks) == nil {
		for _, b := range blocks {
			if b.Text != nil {
				n += words(*b.Text)
			}
		}
	}
	return n
}

// toolCallFor decides whether the reply is a tool call and of which tool.
func toolCallFor(tools []string, choice, choiceName, lastUser string, forced bool) (string, bool) {
	switch {
	case choice == "none":
		return "", false
	case choice == "tool":
		return choiceName, true
	case choice == "any" && len(tools) > 0:
		return tools[0], true
	case len(tools) > 0 && (forced || mentionsWeather(lastUser)):
		return tools[0], true
	case forced:
		return DefaultToolName, true
	}
	return "", false
}

type anthropicUsage struct {
	InputTokens         int `json:"input_tokens"`
	CacheCreationTokens int `json:"cache_creation_input_tokens"`
	CacheReadTokens     int `json:"cache_read_input_tokens"`
	OutputTokens        int `json:"output_tokens"`
}

type anthropicMessage struct {
	ID           string            `json:"id"`
	Type         string            `json:"type"`
	Role         string            `json:"role"`
	Model        string            `json:"model"`
	Content      []json.RawMessage `json:"content"`
	StopReason   *string           `json:"stop_reason"`
	StopSequence *string           `json:"stop_sequence"`
	Usage        anthropicUsage    `json:"usage"`
}

func textBlock(text string) json.RawMessage {
	return json.RawMessage(`{"type":"text","text":` + string(jsonString(text)) + `}`)
}

func toolUseBlock(id, name, input string) json.RawMessage {
	return json.RawMessage(`{"type":"tool_use","id":` + string(jsonString(id)) + `,"name":` + string(jsonString(name)) + `,"input":` + input + `}`)
}

func (s *Server) serveMessages(w http.ResponseWriter, r *http.Request, body []byte, seq string, fail func(int, string)) {
	req, msg := parseAnthropicRequest(body, false, hasBeta(r, SystemMessagesBeta))
	if msg != "" {
		fail(http.StatusBadRequest, msg)
		return
	}
	if s.opts.StrictModels && !contains(s.opts.AnthropicModels, req.model) {
		fail(http.StatusNotFound, "model: "+req.model)
		return
	}
	p, bad := s.params(r)
	if bad != "" {
		fail(http.StatusBadRequest, bad)
		return
	}
	id := "msg_mock_" + seq
	toolID := "toolu_mock_" + seq
	tool, isTool := toolCallFor(req.tools, req.toolChoice, req.choiceName, req.lastUser, p.toolCall)
	preamble, args, pieces := ToolPreamble, toolArgumentsObject, toolArgumentPieces
	reply := buildReply(p.chunks, req.maxTokens, req.stops)
	switch step, text := s.opts.ToolTurn.decide(anthropicTurnMessages(body), req.tools); step {
	case turnCall:
		if s.turnInput == "" {
			fail(http.StatusInternalServerError, "mock: Options.ToolTurn.Input is not a JSON object")
			return
		}
		tool, isTool = s.opts.ToolTurn.Name, true
		preamble, args = ToolTurnPreamble, s.turnInput
		pieces = append([]string{""}, splitPieces(args, 3)...)
	case turnAnswer:
		isTool = false
		reply = textReply{chunks: textChunks(text), reason: "end"}
	}
	stopReason, output := "end_turn", len(reply.chunks)
	var stopSeq *string
	switch {
	case isTool:
		stopReason, output = "tool_use", ToolOutputTokens
	case reply.reason == "max_tokens":
		stopReason = "max_tokens"
	case reply.reason == "stop_sequence":
		stopReason = "stop_sequence"
		stopSeq = &reply.matched
	}
	usage := anthropicUsage{
		InputTokens:         req.promptWords,
		CacheCreationTokens: AnthropicCacheCreationTokens,
		CacheReadTokens:     AnthropicCacheReadTokens,
		OutputTokens:        output,
	}

	if !req.stream {
		m := anthropicMessage{ID: id, Type: "message", Role: "assistant", Model: req.model,
			StopReason: &stopReason, StopSequence: stopSeq, Usage: usage}
		if isTool {
			m.Content = []json.RawMessage{textBlock(preamble), toolUseBlock(toolID, tool, args)}
		} else {
			m.Content = []json.RawMessage{textBlock(reply.text())}
		}
		b, _ := json.Marshal(m)
		writeJSON(w, http.StatusOK, b)
		return
	}

	event := func(name, data string) []byte {
		return []byte("event: " + name + "\ndata: " + data + "\n\n")
	}
	startUsage := usage
	startUsage.OutputTokens = 1
	start, _ := json.Marshal(struct {
		Type    string           `json:"type"`
		Message anthropicMessage `json:"message"`
	}{"message_start", anthropicMessage{ID: id, Type: "message", Role: "assistant", Model: req.model,
		Content: []json.RawMessage{}, Usage: startUsage}})
	textDelta := func(index int, text string) []byte {
		return event("content_block_delta", `{"type":"content_block_delta","index":`+strconv.Itoa(index)+
			`,"delta":{"type":"text_delta","text":`+string(jsonString(text))+`}}`)
	}
	blockStop := func(index int) []byte {
		return event("content_block_stop", `{"type":"content_block_stop","index":`+strconv.Itoa(index)+`}`)
	}
	events := [][]byte{
		event("message_start", string(start)),
		event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
		event("ping", `{"type": "ping"}`),
	}
	if isTool {
		events = append(events, textDelta(0, preamble), blockStop(0),
			event("content_block_start", `{"type":"content_block_start","index":1,"content_block":`+string(toolUseBlock(toolID, tool, "{}"))+`}`))
		for _, piece := range pieces {
			events = append(events, event("content_block_delta",
				`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":`+string(jsonString(piece))+`}}`))
		}
		events = append(events, blockStop(1))
	} else {
		for _, c := range reply.chunks {
			events = append(events, textDelta(0, c))
		}
		events = append(events, blockStop(0))
	}
	stopSeqJSON := "null"
	if stopSeq != nil {
		stopSeqJSON = string(jsonString(*stopSeq))
	}
	events = append(events,
		event("message_delta", `{"type":"message_delta","delta":{"stop_reason":"`+stopReason+`","stop_sequence":`+stopSeqJSON+
			`},"usage":{"output_tokens":`+strconv.Itoa(output)+`}}`),
		event("message_stop", `{"type":"message_stop"}`),
	)
	rc := startSSE(w)
	playEvents(w, r, rc, p, events, []byte(anthropicStreamError))
}
