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
