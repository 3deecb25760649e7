package gateway

import (
	"bytes"
	"net/http"

	"github.com/llmgateway/llmgateway/gateway/internal/sse"
	"github.com/llmgateway/llmgateway/gateway/internal/translate"
)

// wireFormat is one client wire shape (an "inbound format"): everything
// the pipeline needs to answer a client in the shape it speaks. A route
// names its format; every stage writes through it, never through a
// hard-coded envelope. The OpenAI and Anthropic formats exist today; the
// Ollama, Responses and JSON-RPC formats are further rows of the same
// type.
type wireFormat struct {
	name string
	// writeError writes e as a complete response in the format's error
	// envelope (status, headers, body).
	writeError func(w http.ResponseWriter, e *apiError)
	// frame appends one stream payload, framed for the wire, to dst.
	frame func(dst []byte, p translate.Payload) []byte
	// streamEnd is written after the last payload of a stream that ended
	// cleanly (OpenAI: "data: [DONE]"); streamEndName names it in errors.
	streamEnd     []byte
	streamEndName string
	// streamError appends a mid-stream error, framed, to dst: the only way
	// left to tell a client whose headers are out that the stream failed.
	streamError func(dst []byte, e *apiError) []byte
	// isStreamEnd recognises the format's own terminator in a stream
	// relayed from an upstream that speaks the same format.
	isStreamEnd func(ev sse.Event) bool
	// streamEndMark is in the raw bytes of every event isStreamEnd
	// accepts: the relay asks isStreamEnd only about events holding it.
	streamEndMark []byte
	// idPrefix starts the ids of responses the gateway builds itself.
	idPrefix string
	// readRequest validates a JSON request body and reads what the
	// pipeline needs from it: the model, the stream flag, the output-token
	// cap.
	readRequest func(body []byte) (*jsonRequest, *apiError)
	// translatedFailure, when set, is how a translated stream of this
	// format ends on a failure: the translator writes its own failure
	// event (Responses' response.failed, which needs the stream's
	// sequence number and response id) — in band, with an error it
	// returns, or, for a failure the relay found (a read error, a stall,
	// the size cap), when asked through this function. The format's
	// streamError is then not written for a translated stream.
	translatedFailure func(st translate.StreamTranslator, e *apiError, out []translate.Payload) []translate.Payload
	// streamContentType is a stream's Content-Type ("" is
	// text/event-stream).
	streamContentType string
	// keepalive, when set, is a framed event written while a translated
	// stream's upstream is silent for keepaliveEvery (Anthropic's ping:
	// its clients give up on a silent stream).
	keepalive []byte
}

// sseDone is OpenAI's stream terminator. It is declared before
// openAIFormat on purpose: Yaegi initialises package variables in source
// order, not dependency order.
var sseDone = []byte("data: [DONE]\n\n")

// sseDoneData is the terminator's data; an event whose data, trimmed,
// is anything else is not the terminator.
var sseDoneData = []byte("[DONE]")

// openAIFormat is the OpenAI wire shape: the error envelope
// {"error":{...}}, streams as "data: <json>" events ending with
// "data: [DONE]", and a mid-stream error as a data event holding the
// envelope.
var openAIFormat = &wireFormat{
	name:       "openai",
	writeError: writeOpenAIError,
	frame: func(dst []byte, p translate.Payload) []byte {
		return sse.AppendData(dst, p.Data)
	},
	streamEnd:     sseDone,
	streamEndName: "[DONE]",
	streamError: func(dst []byte, e *apiError) []byte {
		return sse.AppendData(dst, openAIErrorJSON(e, false))
	},
	isStreamEnd: func(ev sse.Event) bool {
		return bytes.Equal(bytes.TrimSpace(ev.Data), sseDoneData)
	},
	streamEndMark: sseDoneData,
	idPrefix:      "chatcmpl-",
	readRequest:   parseJSONRequest,
}

// framePayloads frames payloads in f's shape, appended to dst.
func (f *wireFormat) framePayloads(dst []byte, payloads []translate.Payload) []byte {
	for i := 0; i < len(payloads); i++ {
		dst = f.frame(dst, payloads[i])
	}
	return dst
}
