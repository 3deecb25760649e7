// Package store keeps the gateway's counters and blobs, in process or in
// Redis: request, token and cost counters for the limiter, and opaque
// values with a time to live for the response cache.
//
// Two interfaces, each one round trip per call:
//
//	Counter  Apply: a batch of increments and reads (the limiter)
//	Blob     GetBlob / SetBlob (the response cache)
//	Shared   both at once (Redis, and what Guarded wraps)
//
// and three implementations:
//
//	Memory   in-process counters: the default without Redis, and the
//	         fallback when Redis fails and failOpen is set
//	Redis    Counter and Blob over a hand-written, stdlib-only RESP2
//	         client (resp.go, resp_wire.go): a small connection pool and
//	         pipelined exchanges; works with Redis, Valkey and Dragonfly
//	Guarded  wraps Redis so that a hung or failing server costs one short
//	         timeout per cooldown, not one per request
//
// The package knows nothing of limits, windows or cache entries: callers
// pass keys, deltas and TTLs. Like the rest of the core it is standard
// library only and interpreted by Yaegi inside Traefik.
package store
