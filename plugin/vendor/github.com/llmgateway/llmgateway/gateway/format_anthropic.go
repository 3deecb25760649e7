package gateway

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/llmgateway/llmgateway/gateway/internal/sse"
	"github.com/llmgateway/llmgateway/gateway/internal/translate"
)

// messageStopType is the data of Anthropic's last stream event. It is
// declared before anthropicFormat: Yaegi initialises package variables
// in source order.
var messageStopType = []byte(`"type":"message_stop"`)

// anthropicFormat is the Anthropic Messages wire shape: the error
// envelope {"type":"error","error":{"type":…,"message":…}}, streams of
// named events ("event: <name>" + "data: <json>") that end with the
// message_stop event the translator (or the upstream) sends — the format
// adds no terminator of its own — a mid-stream error as an "error"
// event, and a ping every anthropicKeepalive while a translated stream's
// upstream is silent.
var anthropicFormat = &wireFormat{
	name:       "anthropic",
	writeError: writeAnthropicError,
	frame: func(dst []byte, p translate.Payload) []byte {
		return appendNamedEvent(dst, p.Name, p.Data)
	},
	streamEnd:     nil,
	streamEndName: "message_stop",
	streamError: func(dst []byte, e *apiError) []byte {
		return appendNamedEvent(dst, "error", anthropicErrorJSON(e))
	},
	isStreamEnd: func(ev sse.Event) bool {
		return ev.Name == "message_stop" || bytes.Contains(ev.Data, messageStopType)
	},
	streamEndMark: []byte("message_stop"),
	idPrefix:      "msg_",
	readRequest:   readAnthropicRequest,
	keepalive:     appendNamedEvent(nil, "ping", []byte(`{"type":"ping"}`)),
}

// readAnthropicRequest reads a Messages request body: its output cap is
// max_tokens alone (the shape has no max_completion_tokens; a backend
// never reads one).
func readAnthropicRequest(body []byte) (*jsonRequest, *apiError) {
	req, e := parseJSONRequest(body)
	if e != nil {
		return nil, e
	}
	req.maxOutputTokens = req.maxTokens
	return req, nil
}

// appendNamedEvent frames one event: "event: <name>\ndata: <data>\n\n"
// (an unnamed one when name is "").
func appendNamedEvent(dst []byte, name string, data []byte) []byte {
	if name != "" {
		dst = append(dst, "event: "...)
		dst = append(dst, name...)
		dst = append(dst, '\n')
	}
	return sse.AppendData(dst, data)
}

// anthropicErrorType is the Anthropic error type of a gateway error, by
// its status: what the Anthropic API and SDKs use for that status.
func anthropicErrorType(e *apiError) string {
	switch e.Status {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusPaymentRequired:
		return "billing_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestTimeout, http.StatusGatewayTimeout:
		return "timeout_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusServiceUnavailable, 529:
		return "overloaded_error"
	}
	if e.Status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

// anthropicErrorBody is the Anthropic error envelope.
type anthropicErrorBody struct {
	Type  string              `json:"type"`
	Error anthropicErrorInner `json:"error"`
}

type anthropicErrorInner struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// anthropicErrorJSON is e in the Anthropic envelope (compact, one line).
func anthropicErrorJSON(e *apiError) []byte {
	data, _ := json.Marshal(anthropicErrorBody{Type: "error", Error: anthropicErrorInner{Type: anthropicErrorType(e), Message: e.Message}})
	return data
}

// writeAnthropicError writes e as a complete Anthropic error response.
func writeAnthropicError(w http.ResponseWriter, e *apiError) {
	writeErrorBody(w, e, anthropicErrorJSON(e))
}
