# llmgateway — every habit has a target; `make help` lists them.
SHELL := /bin/bash
GO ?= go
BIN := bin
VERSION ?= 0.0.0-dev
MODULE := github.com/llmgateway/llmgateway

.PHONY: help test test-gateway test-cmd vendor vendor-check build-binary run integration bench bench-plugin bench-yaegi fuzz yaegi-check pricing-sync

help: ## list targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | sort | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

test: vendor-check admin-ui-check ## unit tests (compiled and under yaegi test), the Yaegi gate (interpreter + Traefik's loader), SDK tests through the binary; the dashboard's assets against webui/ (needs no Node: skips without it)
	$(GO) test -count=1 -race ./gateway/... ./plugin/... ./cmd/...
	$(GO) test -count=1 ./integration/...
	scripts/yaegi-unit.sh

vendor: ## refresh plugin/vendor from ./gateway (the copy Yaegi and Traefik read)
	cd plugin && GOWORK=off $(GO) mod vendor

vendor-check: ## fail when plugin/vendor is stale against ./gateway
	scripts/vendor-check.sh

build-binary: ## build bin/llmgateway
	@mkdir -p $(BIN)
	cd cmd && $(GO) build -trimpath -ldflags "-X $(MODULE)/gateway.Version=$(VERSION)" -o ../$(BIN)/llmgateway ./llmgateway

pricing-sync: ## regenerate gateway/modeltable_gen.go from ../shared/data/litellm_model_prices.json (then make vendor)
	$(GO) run ./integration/cmd/pricingsync -in $(PRICING_JSON) -out gateway/modeltable_gen.go

PRICING_JSON ?= ../shared/data/litellm_model_prices.json

-include mk/*.mk
