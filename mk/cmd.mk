# Standalone binary: tests and a local demo.
# The mock's address is the baseUrl in examples/quickstart.yaml.
MOCK_LISTEN := 127.0.0.1:9099
RUN_LISTEN ?= :8080

test-cmd: ## tests of the standalone binary (flags, config loading, probes, graceful shutdown)
	$(GO) test -count=1 -race ./cmd/...

run: build-binary ## run bin/llmgateway on :8080 with examples/quickstart.yaml in front of the mock upstream (Ctrl-C stops both)
	$(GO) build -o $(BIN)/mockupstream ./integration/cmd/mockupstream
	@./$(BIN)/mockupstream -listen $(MOCK_LISTEN) & mock=$$!; \
	  trap 'kill $$mock 2>/dev/null; wait $$mock 2>/dev/null' EXIT; \
	  trap 'exit 130' INT TERM; \
	  echo "mock upstream on $(MOCK_LISTEN) (pid $$mock); try:"; \
	  echo "  curl http://localhost$(RUN_LISTEN)/v1/chat/completions -H \"Authorization: Bearer sk-llmgw-demo\" -H \"Content-Type: application/json\" -d '{\"model\":\"gpt-5-mini\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}'"; \
	  ./$(BIN)/llmgateway -config examples/quickstart.yaml -listen $(RUN_LISTEN)
