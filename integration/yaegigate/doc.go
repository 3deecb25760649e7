// Package yaegigate holds the Yaegi gate, the tests that prove the Traefik
// plugin (./plugin, with the core vendored) works as Traefik runs it:
//
//   - interpreter harness (TestYaegi*): the plugin imported from source by
//     Yaegi v0.16.1 in a temp GOPATH, configured from the manifest's testData
//     and from a scenario config decoded the way Traefik decodes it, served
//     by a real HTTP server;
//   - Traefik's loader (TestTraefik*): the middleware built by Traefik
//     v3.6.12's pkg/plugins builder from a plugins-local layout and a
//     dynamic-config file decoded by Traefik's file provider;
//   - real Traefik (TestRealTraefik, only with LLMGW_REAL_TRAEFIK=1): a
//     Traefik v3.6.12 process built by scripts/build-traefik.sh, plus the
//     official OpenAI Go SDK through it.
//
// Every level runs the same scenarios against the mock upstream
// (integration/mockupstream), including an SSE stream whose first event
// must reach the client while the upstream still holds the second one
// back (TestStreamGateDetectsBuffering proves that check fails on a
// buffering front end). The interpreter and loader levels also run a
// scenario against a real redis-server (TestYaegiInterpreterRedisStore,
// TestTraefikLoaderRedisStore): the core's vendored sub-package
// gateway/internal/store holds the limiter's counters and the response
// cache's entries there, and the test reads them back from Redis.
package yaegigate
