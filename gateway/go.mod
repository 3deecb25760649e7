module github.com/llmgateway/llmgateway/gateway

// The core is interpreted by Yaegi v0.16.1 inside Traefik. Language
// version 1.20 makes the compiler reject what Yaegi cannot run
// (range-over-int, min/max/clear) and gives loop variables the same
// per-loop semantics Yaegi uses. No requirements, ever: stdlib only.
go 1.20
