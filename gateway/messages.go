package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/translate"
)

// The Anthropic Messages routes (/v1/messages, /v1/messages/count_tokens)
// on every provider type. An anthropic-type provider gets the request
// untranslated, with only the model rewritten, and the answer comes back
// byte for byte but for "model" (the client's string again). Any other
// type is reached through the hub: the Messages request is translated to
// an OpenAI chat request, sent through that type's chat backend, and the
// hub answer translated back (translate.HubFromAnthropicRequest,
// AnthropicFromHubResponse, NewAnthropicOutStream).

// anthropicForwardedHeaders are the client headers an anthropic-type
// upstream gets on these routes (anthropic-version overrides the
// provider's default).
var anthropicForwardedHeaders = []string{"Anthropic-Version", "Anthropic-Beta"}

// anthropicClientHeaders is the allow-listed client headers, as name,
// value pairs (outbound.headers).
func anthropicClientHeaders(r *http.Request) []string {
	var out []string
	for i := 0; i < len(anthropicForwardedHeaders); i++ {
		if v := r.Header.Get(anthropicForwardedHeaders[i]); v != "" {
			out = append(out, anthropicForwardedHeaders[i], v)
		}
	}
	return out
}

// anthropicMessages sends a Messages request to an anthropic-type
// provider as the client wrote it (the query string too, e.g.
// ?beta=true), the model rewritten; the answer's "model" is rewritten
// back to the client's string (in the body, or in a stream's
// message_start), every other byte kept.
func anthropicMessages(c *call, cand candidate) (*outbound, *apiError) {
	u := cand.provider.baseURL + "/v1/messages"
	if q := c.r.URL.RawQuery; q != "" {
		u += "?" + q
	}
	o := jsonOutbound(cand, u, c.req.withModel(cand.model))
	o.headers = anthropicClientHeaders(c.r)
	renamed := cand.model != c.req.model
	if c.req.stream {
		o.accept, o.stream = "text/event-stream", true
		if renamed {
			o.startModel, _ = json.Marshal(c.req.model)
		}
		return o, nil
	}
	if renamed {
		model := c.req.model
		o.decode = func(data []byte) ([]byte, translate.Usage, *apiError) {
			var u translate.Usage
			translate.UsageFromJSON(data, &u)
			return withTopLevelModel(data, model), u, nil
		}
	}
	return o, nil
}

// withTopLevelModel is a JSON object with its top-level "model" value
// replaced by model, every other byte unchanged (data itself when it has
// none, or is not such an object).
func withTopLevelModel(data []byte, model string) []byte {
	j, e := parseJSONRequest(data)
	if e != nil {
		return data
	}
	return j.withModel(model)
}

// messageStartMark is in a Messages stream's first event.
var messageStartMark = []byte(`"message_start"`)

// withStartModel is a message_start event with the message's model value
// replaced by quoted (a JSON string): the event's first "model" key is
// the message's (its content is empty). An event without one, or whose
// value holds an escape, is returned as it is.
func withStartModel(raw, quoted []byte) []byte {
	k := bytes.Index(raw, modelKeyMark)
	if k < 0 {
		return raw
	}
	start := k + len(modelKeyMark) - 1 // the value's opening quote
	end := bytes.IndexByte(raw[start+1:], '"')
	if end < 0 || bytes.IndexByte(raw[start+1:start+1+end], '\\') >= 0 {
		return raw
	}
	end += start + 2
	out := make([]byte, 0, len(raw)-(end-start)+len(quoted))
	out = append(out, raw[:start]...)
	out = append(out, quoted...)
	return append(out, raw[end:]...)
}

var modelKeyMark = []byte(`"model":"`)

// hubConversion is how one call's request of a non-hub inbound API is
// served through the hub: the request translated to a hub request, and
// how the hub answer — whole, or a stream of hub payloads — becomes the
// client's again. An inbound format that is not the hub supplies one
// (toHub); viaHub applies it around any backend's hub operation, so no
// stage exists per format.
type hubConversion struct {
	hub *jsonRequest
	// decode turns a whole hub answer into the client's.
	decode func(hub []byte, tc translate.Context) ([]byte, translate.Usage, *apiError)
	// stream wraps a backend's stream translator (nil: the upstream's
	// events are hub chunks) into one that emits the client's events.
	stream func(inner translate.StreamTranslator, tc translate.Context) translate.StreamTranslator
}

// viaHub serves the call through the hub operation inner of a backend
// (its chat or embeddings prepare function, for the hub route hubRoute):
// the request converted once per call (toHub, every candidate and retry
// sharing it), the answer converted back.
func viaHub(c *call, cand candidate, inner prepareFunc, hubRoute *route, toHub func(c *call) (*hubConversion, *apiError)) (*outbound, *apiError) {
	conv := c.hubConv
	if conv == nil {
		var e *apiError
		if conv, e = toHub(c); e != nil {
			return nil, e
		}
		conv.hub.hubUsage = true
		c.hubConv = conv
	}
	in, rt := c.req, c.route
	c.req, c.route = conv.hub, hubRoute
	o, e := inner(c, cand)
	c.req, c.route = in, rt
	if e != nil {
		return nil, e
	}
	tc := translateContext(c, cand.model)
	if o.stream {
		innerStream := o.translator
		o.translator = func() translate.StreamTranslator {
			var st translate.StreamTranslator
			if innerStream != nil {
				st = innerStream()
			}
			return conv.stream(st, tc)
		}
		o.stripUsage = false
		return o, nil
	}
	innerDecode := o.decode
	o.decode = func(data []byte) ([]byte, translate.Usage, *apiError) {
		return fromHub(data, innerDecode, conv, tc)
	}
	return o, nil
}

// fromHub decodes a whole answer to the hub (innerDecode, or as is from
// an openai-type upstream) and converts it for the client.
func fromHub(data []byte, innerDecode func([]byte) ([]byte, translate.Usage, *apiError), conv *hubConversion, tc translate.Context) ([]byte, translate.Usage, *apiError) {
	hubBody := data
	var u translate.Usage
	if innerDecode != nil {
		var e *apiError
		hubBody, u, e = innerDecode(data)
		if e != nil {
			return nil, u, e
		}
	}
	out, hu, e := conv.decode(hubBody, tc)
	if innerDecode == nil {
		u = hu
	}
	return out, u, e
}

// chatRoute is the chat route, whose backends a converted Messages,
// Ollama or Responses request goes through.
var chatRoute = routeTable[0]

// anthropicToHub is the Messages API's conversion: the request through
// translate.HubFromAnthropicRequest, the answer through
// AnthropicFromHubResponse and NewAnthropicOutStream. A dropped thinking
// config is warned about once per gateway.
func anthropicToHub(c *call) (*hubConversion, *apiError) {
	body, info, e := translate.HubFromAnthropicRequest(c.req.raw)
	if e != nil {
		return nil, e
	}
	hub, e := parseJSONRequest(body)
	if e != nil {
		return nil, e
	}
	if info.ThinkingDropped {
		c.g.warnings.warnOnce("messages-thinking", "/v1/messages: the thinking config of requests to non-Anthropic providers is dropped "+
			"(their reasoning, when streamed, is returned as thinking blocks only when the client enabled thinking)")
	}
	estimate := int64((len(c.req.raw) + 3) / 4)
	return &hubConversion{
		hub: hub,
		decode: func(hub []byte, tc translate.Context) ([]byte, translate.Usage, *apiError) {
			return translate.AnthropicFromHubResponse(hub, tc, info)
		},
		stream: func(inner translate.StreamTranslator, tc translate.Context) translate.StreamTranslator {
			return translate.NewAnthropicOutStream(inner, tc, info, estimate)
		},
	}, nil
}

// anthropicCountTokens passes count_tokens to an anthropic-type
// provider's own endpoint, the model rewritten.
func anthropicCountTokens(c *call, cand candidate) (*outbound, *apiError) {
	o := jsonOutbound(cand, cand.provider.baseURL+"/v1/messages/count_tokens", c.req.withModel(cand.model))
	o.headers = anthropicClientHeaders(c.r)
	return o, nil
}

// localCountTokens answers count_tokens for a provider type without the
// endpoint with the gateway's estimate (translate.AnthropicCountTokens),
// without an upstream call.
func localCountTokens(c *call, cand candidate) (*outbound, *apiError) {
	n, e := translate.AnthropicCountTokens(c.req.raw)
	if e != nil {
		return nil, e
	}
	o := &outbound{provider: cand.provider, model: cand.model}
	o.local = []byte(`{"input_tokens":` + strconv.FormatInt(n, 10) + `}`)
	return o, nil
}

// localExchange is the exchange of an outbound answered by the gateway
// itself (outbound.local): a 200 JSON answer, no upstream attempt.
func localExchange(o *outbound) *exchange {
	resp := &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}, Body: http.NoBody}
	_, wd := startWatchdog(context.Background(), time.Hour)
	wd.stop()
	return &exchange{resp: resp, body: http.NoBody, data: o.local, wd: wd}
}
