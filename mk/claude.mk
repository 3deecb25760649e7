# Claude Code 2.1.328 (npm @anthropic-ai/claude-code), the real agent the
# integration tests run headless against the mock and the gateway
# (integration/claudeproc). scripts/install-claude-code.sh installs it
# once into the cache; the tests find it through LLMGW_CLAUDE_BIN (or at
# the cache path) and skip without it unless LLMGW_REQUIRE_CLAUDE=1.
CLAUDE_VERSION := 2.1.328
CLAUDE_BIN ?= $${LLMGW_CLAUDE_BIN:-$${LLMGW_CACHE:-$$HOME/.cache/llmgateway}/claude-code-$(CLAUDE_VERSION)/node_modules/@anthropic-ai/claude-code-linux-x64/claude}

.PHONY: claude-code

claude-code: ## install and cache Claude Code 2.1.328 with npm (scripts/install-claude-code.sh; ~10 s the first time)
	scripts/install-claude-code.sh
