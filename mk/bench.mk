# Benchmarks: the core's hot path (Go benchmarks, gateway vs a bare
# httputil.ReverseProxy), the limiter per metered request
# (BenchmarkLimiter/memory and /redis, with roundtrips/op; the Redis case
# starts its own redis-server and is skipped without one unless
# LLMGW_REQUIRE_REDIS=1) and a side-by-side loopback load test of the
# binary (writes bench/latest.md; exits non-zero when any request failed):
# non-streaming at BENCH_CONCURRENCY, streaming (same shape, and
# translated from an Anthropic upstream) at BENCH_STREAM_CONCURRENCY, in
# BENCH_ROUNDS interleaved rounds of BENCH_DURATION per cell.
# BENCH_BASELINE=<gateway binary> (say, built from a base commit) runs it
# too, interleaved, for before/after tables.
BENCH_DURATION ?= 2s
BENCH_CONCURRENCY ?= 1,32
BENCH_STREAM_CONCURRENCY ?= 1,8,32
BENCH_ROUNDS ?= 3
BENCH_BASELINE ?=
BENCH_OUT ?= bench/latest.md

bench: build-binary ## Go benchmarks of the hot path, then the gateway-vs-bare-proxy load test in interleaved rounds (writes bench/latest.md; BENCH_BASELINE=<binary> adds before/after)
	$(GO) test -count=1 -run '^$$' -bench . -benchmem ./gateway/...
	cd integration && $(GO) build -o ../$(BIN)/loadbench ./cmd/loadbench
	./$(BIN)/loadbench -gateway $(BIN)/llmgateway -out $(BENCH_OUT) -duration $(BENCH_DURATION) -rounds $(BENCH_ROUNDS) \
		-concurrency $(BENCH_CONCURRENCY) -stream-concurrency $(BENCH_STREAM_CONCURRENCY) $(if $(BENCH_BASELINE),-baseline $(BENCH_BASELINE))

bench-yaegi: ## the core's Go benchmarks under the Yaegi interpreter (what the plugin form pays in process)
	scripts/yaegi-unit.sh -run '^$$' -bench . -benchtime 1s

# The plugin in a real Traefik v3.6.12, side by side with Traefik alone
# (a router to the mock as a plain service) and the same router through the
# plugin, besides the mock direct, the bare proxy and the binary: added
# latency at concurrency 1, req/s at 32, a streamed chat at 8, each
# process's peak RSS, ratios to Traefik alone (writes bench/plugin.md).
BENCH_PLUGIN_DURATION ?= 2s
BENCH_PLUGIN_OUT ?= bench/plugin.md
TRAEFIK_BIN ?= $${LLMGW_TRAEFIK_BIN:-$${LLMGW_CACHE:-$$HOME/.cache/llmgateway}/traefik-v3.6.12}

bench-plugin: build-binary traefik-binary ## the plugin in a real Traefik vs Traefik alone, side by side (writes bench/plugin.md)
	cd integration && $(GO) build -o ../$(BIN)/loadbench ./cmd/loadbench
	./$(BIN)/loadbench -traefik "$(TRAEFIK_BIN)" -plugin-dir . -anthropic -null-plugin-dir integration/cmd/loadbench/nullplugin -gateway $(BIN)/llmgateway -out $(BENCH_PLUGIN_OUT) -duration $(BENCH_PLUGIN_DURATION)
