package translate

import (
	"net/http"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
	"github.com/llmgateway/llmgateway/gateway/internal/sse"
)

// The contract between the pipeline and the translators (see the
// package comment).

// Usage is what one upstream exchange consumed, as the provider reported
// it (or, when it reported nothing, as estimated by the pipeline).
type Usage struct {
	PromptTokens     int64 // includes cache creation and cache read tokens
	CompletionTokens int64
	// CacheCreationTokens and CacheReadTokens are informational: they
	// are already part of PromptTokens.
	CacheCreationTokens int64
	CacheReadTokens     int64
	Reported            bool // the provider sent usage
	Estimated           bool // the pipeline estimated it (ceil(bytes/4))
}

// Context carries what a response translator needs beyond the
// provider's bytes.
type Context struct {
	RequestedModel string // the client's exact model string, echoed in "model"
	UpstreamModel  string // the provider's own model id
	Created        int64  // unix seconds for "created" (injected for goldens)
	IncludeUsage   bool   // the client set stream_options.include_usage
	// IDFallback is used as the response id when the provider sends none.
	IDFallback string
}

// Payload is one event a stream translator emits, before any framing:
// the event's name (for wire formats with named events; "" for OpenAI
// chunks) and its JSON data. The client's inbound wire format frames it,
// so translators compose: a backend's translator emits hub payloads
// whatever the client speaks.
type Payload struct {
	Name string
	Data []byte
}

// StreamTranslator turns one provider event stream into hub payloads
// (OpenAI chat.completion.chunk JSON). The pipeline calls Event for each
// complete upstream SSE event in order, frames and writes whatever it
// appended and flushes, then calls Finish at a clean end of the upstream
// stream. The stream's terminator (OpenAI's [DONE]) is the inbound
// format's to write, never the translator's. A translator is created per
// request and never shared.
type StreamTranslator interface {
	// Event consumes one upstream event, appending zero or more payloads
	// to out. An error ends the stream: the pipeline writes it as the
	// format's mid-stream error.
	Event(ev sse.Event, out []Payload) ([]Payload, *apierr.Error)
	// Finish is called once the upstream stream ended without a read
	// error. It appends the trailing payloads, or returns an error when
	// the upstream stream was incomplete (e.g. Anthropic's message_stop
	// never came).
	Finish(out []Payload) ([]Payload, *apierr.Error)
	// Usage reports the usage seen so far.
	Usage() Usage
}

// errHubStreamTruncated is the error of a hub stream (an OpenAI upstream's
// chunks) that ended before a finish reason or [DONE]: what every
// translator from the hub to another client shape reports.
func errHubStreamTruncated() *apierr.Error {
	e := apierr.New(http.StatusBadGateway, "server_error", "upstream_stream_truncated",
		"the provider's stream ended before a finish reason or [DONE]")
	e.Class = apierr.ClassTruncated
	return e
}
