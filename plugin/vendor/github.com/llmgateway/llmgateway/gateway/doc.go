// Package gateway is the llmgateway core: a multi-provider LLM gateway as
// a plain http.Handler. The same code runs compiled in the standalone
// binary (cmd/llmgateway), interpreted by Yaegi inside Traefik
// (plugin/), and embedded as a library in another Go proxy (see
// Example). It is standard-library only and avoids every construct Yaegi
// v0.16.1 cannot run.
//
// ServeHTTP reads like the route table (routes.go): a metered route from
// the table, then /v1/models, then native passthrough to a configured
// provider, then next (passthroughUnknown) or a 404. Every metered
// request walks the same stages (pipeline.go), whatever its route:
//
//	identify → admit the body → resolve candidates → authorize → limit
//	  → cache → call (candidates under one attempt budget; retry,
//	    watchdog, caps) → respond → account → record
//
// With a group's tool-calling loop (mcp_loop.go) the call stage runs
// once per model turn, each turn limited like a request, and the respond
// stage delivers the last turn's answer.
//
// A route is data: its path, method, inbound wire format (format.go:
// error envelope, stream framing, mid-stream errors, request reading),
// operation, body cap, and whether it is cacheable and priced. A provider
// type's backend (backends.go) prepares the outbound request for one
// candidate and says how its answer is read; it never writes to the
// client. The pipeline alone writes the answer (respond.go), settles
// usage and saves the cache once (record.go, cache_stage.go) and emits
// one request record per request.
//
// Configuration is validated and compiled once by New (config_compile.go);
// requests only read the compiled form. Errors are one type
// (apierr.Error, aliased apiError here) written in the OpenAI error
// envelope (errors.go); failures.go maps each upstream failure class to
// the status, retry and failover policy.
//
// This package is the pipeline. The leaves it calls, free of HTTP, are
// sub-packages under internal/:
//
//	apierr     the error type and the upstream failure classes
//	sse        the server-sent-events codec (parser, reader, framing)
//	translate  the hub contract (Usage, StreamTranslator, ...) and the
//	           OpenAI ⇄ Anthropic and OpenAI ⇄ Gemini translators
//	store      counters and blobs, in memory or in Redis
package gateway
