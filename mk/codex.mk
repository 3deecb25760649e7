# Codex CLI 0.169.0 (npm @openai/codex), the real agent the integration
# tests run headless against the mock's Responses API and the gateway
# (integration/codexproc). scripts/install-codex.sh installs it once into
# the cache; the tests find it through LLMGW_CODEX_BIN (or at the cache
# path) and skip without it unless LLMGW_REQUIRE_CODEX=1. Its
# no-outbound-connection check runs it under strace (skipped without
# strace, failed under LLMGW_REQUIRE_CODEX=1).
CODEX_VERSION := 0.169.0
CODEX_BIN ?= $${LLMGW_CODEX_BIN:-$${LLMGW_CACHE:-$$HOME/.cache/llmgateway}/codex-$(CODEX_VERSION)/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex}

.PHONY: codex

codex: ## install and cache Codex CLI 0.169.0 with npm (scripts/install-codex.sh; ~10 s, 404 MB the first time)
	scripts/install-codex.sh
