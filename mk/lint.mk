# Static analysis over every module of go.work (root, gateway, plugin
# without its vendor/, cmd, integration): gofmt, go vet, then staticcheck
# v0.8.2 and golangci-lint v2.15.0 with gosec (scripts/lint-static.sh,
# configured by .golangci.yml), the tools installed from the Go module
# proxy and cached by scripts/install-lint-tools.sh.
.PHONY: lint lint-tools

# Every Go file of the repository but the vendored copy of the core (and
# any node_modules): the sources of every module of go.work.
LINT_GO_FILES = $$(find . -name '*.go' -not -path './plugin/vendor/*' -not -path '*/node_modules/*' -not -path './.git/*')

lint: ## every make target has a help line; gofmt, go vet, staticcheck and golangci-lint (gosec on) in every module (~15 s warm; the first run installs the tools, ~5 min)
	scripts/make-help-check.sh
	@out=$$(gofmt -l $(LINT_GO_FILES)); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $$($(GO) list -m -f '{{.Path}}/...')
	scripts/lint-static.sh

lint-tools: ## install and cache staticcheck v0.8.2 and golangci-lint v2.15.0 (scripts/install-lint-tools.sh; ~5 min the first time)
	scripts/install-lint-tools.sh
