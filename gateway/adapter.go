package gateway

import "github.com/llmgateway/llmgateway/gateway/internal/sse"

// This file is the contract between the pipeline and the translators.
// The hub shape is OpenAI chat; a translator is a set of pure functions
// over bytes:
//
//	request:  hub JSON (the client's OpenAI request) → the backend's JSON
//	response: the backend's JSON → hub JSON (+ usage)
//	stream:   the backend's SSE events → hub payloads (chunk JSON), one
//	          upstream event at a time, never buffering the whole stream
//
// The pipeline (pipeline.go, call.go, respond.go) owns HTTP, retry, the
// watchdog, size caps, framing and error writing; translators own only
// the shapes.

// usage is what one upstream exchange consumed, as the provider reported
// it (or, when it reported nothing, as estimated by the pipeline).
type usage struct {
	promptTokens     int64 // includes cache creation and cache read tokens
	completionTokens int64
	// cacheCreationTokens and cacheReadTokens are informational: they are
	// already part of promptTokens.
	cacheCreationTokens int64
	cacheReadTokens     int64
	reported            bool // the provider sent usage
	estimated           bool // the pipeline estimated it (ceil(bytes/4))
}

// translateContext carries what a response translator needs beyond the
// provider's bytes.
type translateContext struct {
	requestedModel string // the client's exact model string, echoed in "model"
	upstreamModel  string // the provider's own model id
	created        int64  // unix seconds for "created" (injected for goldens)
	includeUsage   bool   // the client set stream_options.include_usage
	// idFallback is used as the response id when the provider sends none.
	idFallback string
}

// streamPayload is one event a stream translator emits, before any
// framing: the event's name (for wire formats with named events; "" for
// OpenAI chunks) and its JSON data. The client's inbound format frames it
// (wireFormat.frame), so translators compose: a backend's translator
// emits hub payloads whatever the client speaks.
type streamPayload struct {
	name string
	data []byte
}

// streamTranslator turns one provider event stream into hub payloads
// (OpenAI chat.completion.chunk JSON). The pipeline calls event for each
// complete upstream SSE event in order, frames and writes whatever it
// appended and flushes, then calls finish at a clean end of the upstream
// stream. The stream's terminator (OpenAI's [DONE]) is the inbound
// format's to write, never the translator's.
type streamTranslator interface {
	// event consumes one upstream event, appending zero or more payloads
	// to out. An error ends the stream: the pipeline writes it as the
	// format's mid-stream error.
	event(ev sse.Event, out []streamPayload) ([]streamPayload, *apiError)
	// finish is called once the upstream stream ended without a read
	// error. It appends the trailing payloads, or returns an error when
	// the upstream stream was incomplete (e.g. Anthropic's message_stop
	// never came).
	finish(out []streamPayload) ([]streamPayload, *apiError)
	// usage reports the usage seen so far.
	usage() usage
}
