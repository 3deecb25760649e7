package gateway

import (
	"encoding/json"
	"strings"

	"github.com/llmgateway/llmgateway/gateway/internal/sse"
	"github.com/llmgateway/llmgateway/gateway/internal/translate"
)

// The OpenAI Responses API (/v1/responses) on every provider type:
// converted to chat completions through the hub
// (translate.HubFromResponsesRequest, ResponsesFromHubResponse,
// NewResponsesOutStream), or, for an openai-type provider with
// responsesApi "native", forwarded as it is.

// responsesFormat is the Responses wire shape: OpenAI's error envelope,
// streams of named events (the event type, and data carrying it with a
// sequence_number) that end with response.completed, response.incomplete
// or response.failed, and a mid-stream error as an "error" event.
var responsesFormat = &wireFormat{
	name:       "responses",
	writeError: writeOpenAIError,
	frame: func(dst []byte, p translate.Payload) []byte {
		return appendNamedEvent(dst, p.Name, p.Data)
	},
	streamEndName: "response.completed",
	streamError: func(dst []byte, e *apiError) []byte {
		data, _ := json.Marshal(responsesErrorEvent{Type: "error", Code: e.Code, Message: e.Message})
		return appendNamedEvent(dst, "error", data)
	},
	isStreamEnd: func(ev sse.Event) bool {
		return ev.Name == "response.completed" || ev.Name == "response.incomplete" || ev.Name == "response.failed"
	},
	idPrefix:    "resp_",
	readRequest: readResponsesRequest,
	translatedFailure: func(st translate.StreamTranslator, e *apiError, out []translate.Payload) []translate.Payload {
		return translate.ResponsesStreamFailed(st, e, out)
	},
}

// responsesErrorEvent is the Responses stream's error event.
type responsesErrorEvent struct {
	Type    string  `json:"type"`
	Code    string  `json:"code"`
	Message string  `json:"message"`
	Param   *string `json:"param"`
}

// readResponsesRequest reads a Responses request body: the model, the
// stream flag, and max_output_tokens as the output cap.
func readResponsesRequest(body []byte) (*jsonRequest, *apiError) {
	req, e := parseJSONRequest(body)
	if e != nil {
		return nil, e
	}
	// The key is matched exactly, as the translator reads it.
	var top map[string]json.RawMessage
	_ = json.Unmarshal(body, &top)
	req.maxOutputTokens = parseTokenCap(top["max_output_tokens"])
	return req, nil
}

// droppedToolsHeader names the built-in tools a converted Responses
// request carried that no chat backend can run (dropped, not refused:
// Codex always sends some).
const droppedToolsHeader = "X-Llmgw-Dropped-Tools"

// responsesToHub is the Responses API's conversion through the hub.
// Dropped built-in tools are named in droppedToolsHeader and warned
// about once per tool type.
func responsesToHub(c *call) (*hubConversion, *apiError) {
	body, info, e := translate.HubFromResponsesRequest(c.req.raw)
	if e != nil {
		return nil, e
	}
	hub, e := parseJSONRequest(body)
	if e != nil {
		return nil, e
	}
	if len(info.DroppedTools) > 0 {
		c.w.Header().Set(droppedToolsHeader, strings.Join(info.DroppedTools, ","))
		for i := 0; i < len(info.DroppedTools); i++ {
			t := info.DroppedTools[i]
			c.g.warnings.warnOnce("responses-tool:"+t, "/v1/responses: built-in tool %q is dropped when converting to chat completions "+
				"(no chat backend can run it); the response names dropped tools in %s", t, droppedToolsHeader)
		}
	}
	return &hubConversion{
		hub: hub,
		decode: func(hub []byte, tc translate.Context) ([]byte, translate.Usage, *apiError) {
			return translate.ResponsesFromHubResponse(hub, tc, info)
		},
		stream: func(inner translate.StreamTranslator, tc translate.Context) translate.StreamTranslator {
			return translate.NewResponsesOutStream(inner, tc, info)
		},
	}, nil
}

// openAIResponses serves /v1/responses on an openai-type provider:
// forwarded with only the model rewritten when the provider implements
// the API (responsesApi "native"), converted through the hub otherwise.
func openAIResponses(c *call, cand candidate) (*outbound, *apiError) {
	if !cand.provider.responsesNative {
		return viaHub(c, cand, openAIChat, chatRoute, responsesToHub)
	}
	o := jsonOutbound(cand, cand.provider.baseURL+"/v1/responses", c.req.withModel(cand.model))
	o.accept = c.r.Header.Get("Accept")
	o.stream = c.req.stream
	return o, nil
}
