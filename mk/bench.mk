# Benchmarks: the core's hot path (Go benchmarks, gateway vs a bare
# httputil.ReverseProxy), the limiter per metered request
# (BenchmarkLimiter/memory and /redis, with roundtrips/op; the Redis case
# starts its own redis-server and is skipped without one unless
# LLMGW_REQUIRE_REDIS=1) and a side-by-side loopback load test of the
# binary (writes bench/latest.md; exits non-zero when any request failed).
BENCH_DURATION ?= 3s
BENCH_CONCURRENCY ?= 1,32
BENCH_OUT ?= bench/latest.md

bench: build-binary ## Go benchmarks of the hot path, then the gateway-vs-bare-proxy load test (writes bench/latest.md)
	$(GO) test -count=1 -run '^$$' -bench . -benchmem ./gateway/...
	cd integration && $(GO) build -o ../$(BIN)/loadbench ./cmd/loadbench
	./$(BIN)/loadbench -gateway $(BIN)/llmgateway -out $(BENCH_OUT) -duration $(BENCH_DURATION) -concurrency $(BENCH_CONCURRENCY)

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
