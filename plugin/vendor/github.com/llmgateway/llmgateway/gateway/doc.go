// Package gateway is the llmgateway core: a multi-provider LLM gateway as
// a plain http.Handler. The same code runs compiled in the standalone
// binary (cmd/llmgateway), interpreted by Yaegi inside Traefik
// (plugin/), and embedded as a library in another Go proxy (see
// Example). It is standard-library only and avoids every construct Yaegi
// v0.16.1 cannot run.
//
// A request flows through one pipeline:
//
//	ServeHTTP ── path dispatch ─┬─ /v1/chat/completions ┐
//	                            ├─ /v1/embeddings       ├─ authenticate → read body (cap)
//	                            │                       │  → locate "model" → resolve + authorize
//	                            │                       │  → call provider (progress watchdog)
//	                            │                       └─ → relay JSON / SSE event by event
//	                            ├─ /v1/models[/{id}]  ── authenticate → list what the caller may use
//	                            ├─ /{provider}/...    ── authenticate → authorize → reverse proxy
//	                            └─ anything else      ── next (passthroughUnknown) or 404 envelope
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
