# Concurrent SSE streams and the soak: benchmarks of the binary, not
# tests, and not in CI. `make bench-streams` (integration/cmd/streambench)
# holds STREAMS_STEPS concurrent streamed chat completions open through
# one gateway process against a slow-dripping upstream (HTTP/2 over TLS
# and plain HTTP/1.1), next to a bare httputil.ReverseProxy, and writes
# RSS, goroutines, FDs and the per-stream cost to bench/streams.md.
# `make soak` (integration/cmd/soak) runs mixed traffic with Redis
# restarts and users-file edits for SOAK_DURATION, samples the gateway
# every 10 s into docs/soak.csv, draws docs/soak.png, and fails when RSS
# or goroutines trend upward after the warm-up. Both build the binary
# from the workspace with a debug listener (go build -overlay) for the
# goroutine counts; the soak needs redis-server.
STREAMS_STEPS ?= 1000,2500,5000,7500,10000
STREAMS_OUT ?= bench/streams.md
SOAK_DURATION ?= 30m
SOAK_SCALE ?= 1
SOAK_CSV ?= docs/soak.csv
SOAK_PNG ?= docs/soak.png

.PHONY: bench-streams soak

bench-streams: ## up to 10,000 concurrent SSE streams through one gateway process vs a bare proxy: RSS, goroutines, FDs, KiB per stream (writes bench/streams.md; ~10 min)
	cd integration && $(GO) build -o ../$(BIN)/streambench ./cmd/streambench
	./$(BIN)/streambench -steps $(STREAMS_STEPS) -out $(STREAMS_OUT)

soak: ## mixed traffic with Redis restarts and users-file edits for SOAK_DURATION (30m): docs/soak.csv and docs/soak.png; fails when RSS or goroutines trend upward
	cd integration && $(GO) build -o ../$(BIN)/soak ./cmd/soak
	./$(BIN)/soak -duration $(SOAK_DURATION) -scale $(SOAK_SCALE) -csv $(SOAK_CSV) -png $(SOAK_PNG)
