// Package translate holds the translators between the gateway's hub
// shape and the providers and clients that do not speak it, and the
// contract the pipeline drives them through.
//
// The hub shape is OpenAI chat (and OpenAI embeddings and images); a
// backend translator (hub_<backend>*.go) is a set of pure functions over
// bytes:
//
//	request:  hub JSON (the client's OpenAI request) → the backend's JSON
//	response: the backend's JSON → hub JSON (+ Usage)
//	stream:   the backend's SSE events → hub payloads (chunk JSON), one
//	          upstream event at a time, never buffering the whole stream
//
// A client translator (<client>_hub*.go) is the same on the other side,
// for a client that does not speak the hub shape: its request → hub
// JSON, and the hub answer → its shape, whole or as its stream events.
// The stream side consumes the hub payloads of a backend translator (or
// an OpenAI upstream's own events), so any client composes with any
// backend.
//
// The pipeline (package gateway) owns HTTP, retry, the watchdog, size
// caps, framing and error writing; translators own only the shapes.
// Errors are *apierr.Error: a 400 for a client request a backend (or the
// hub) cannot express, a 502 for a provider answer that cannot be read.
//
// Files:
//
//	contract.go          Usage, Context, Payload, StreamTranslator
//	usage.go             UsageFromJSON: every provider's usage fields
//	hub_wire.go          the hub (OpenAI) wire structs the translators write
//	jsonutil.go          reading the client's JSON one field at a time
//	dataurl.go           data: URLs, as both translators read them
//	hub_anthropic*.go    hub ⇄ Anthropic Messages: AnthropicChatRequest,
//	                     AnthropicChatResponse, NewAnthropicStream
//	hub_gemini*.go       hub ⇄ Gemini: GeminiChatRequest,
//	                     GeminiChatResponse, NewGeminiStream, and
//	                     embeddings and images (hub_gemini_media.go)
//	anthropic_hub*.go    Anthropic Messages client ⇄ hub:
//	                     HubFromAnthropicRequest, AnthropicFromHubResponse,
//	                     NewAnthropicOutStream, AnthropicCountTokens
//	ollama_hub*.go       Ollama API client ⇄ hub: HubFromOllamaChat,
//	                     HubFromOllamaGenerate, OllamaFromHubResponse,
//	                     NewOllamaOutStream (NDJSON lines), and
//	                     embeddings (ollama_hub_embed.go)
//	responses_hub*.go    OpenAI Responses client (Codex CLI) ⇄ hub:
//	                     HubFromResponsesRequest (input items, tools:
//	                     namespaces flattened, custom tools as functions,
//	                     built-in tools dropped), ResponsesFromHubResponse,
//	                     NewResponsesOutStream and ResponsesStreamFailed
//
// The golden transcripts under testdata/ are recorded provider streams
// and what a client receives for them: an OpenAI client under
// testdata/anthropic and testdata/gemini, an Anthropic client under
// testdata/anthropic_out, an Ollama client under testdata/ollama_out,
// a Responses client under testdata/responses_out (go test -update
// rewrites the goldens). Like the rest of the core the package is
// standard library only and interpreted by Yaegi inside Traefik: wire
// structs are plain exported fields, no named results, no generics.
package translate
