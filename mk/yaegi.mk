# The Yaegi gate: the plugin interpreted by Yaegi v0.16.1 (level a), loaded
# by Traefik v3.6.12's own plugin builder (level b), and served by a real
# Traefik v3.6.12 process (level c, `make integration` only).
YAEGI_GATE_PKG := ./integration/yaegigate/
LLMGW_CACHE ?= $(HOME)/.cache/llmgateway
export LLMGW_CACHE

.PHONY: yaegi-check traefik-binary integration yaegi-unit

yaegi-check: ## Yaegi gate: the plugin under the interpreter and under Traefik's plugin loader
	$(GO) test -count=1 -v -run 'TestYaegi|TestTraefik|TestStreamGate' $(YAEGI_GATE_PKG)

traefik-binary: ## build and cache Traefik v3.6.12 (scripts/build-traefik.sh; ~10 min the first time)
	scripts/build-traefik.sh

# The integration module runs under the race detector, except the Yaegi
# gate: Yaegi v0.16.1 itself has data races the detector reports (in its
# lazily filled type tables, interp/type.go, whatever code it runs), and
# interpreting under -race is ~10x slower, past the catalog's 10 s bound.
INTEGRATION_RACE_PKGS = $$($(GO) list ./integration/... | grep -v '/integration/yaegigate$$')

integration: build-binary traefik-binary claude-code codex ## everything (the integration module under -race but the Yaegi gate), plus a real Traefik process, the OpenAI SDK through it, Claude Code and Codex CLI
	LLMGW_CLAUDE_BIN="$(CLAUDE_BIN)" LLMGW_CODEX_BIN="$(CODEX_BIN)" LLMGW_REAL_TRAEFIK=1 $(GO) test -count=1 -race $(INTEGRATION_RACE_PKGS)
	LLMGW_CLAUDE_BIN="$(CLAUDE_BIN)" LLMGW_CODEX_BIN="$(CODEX_BIN)" LLMGW_REAL_TRAEFIK=1 $(GO) test -count=1 $(YAEGI_GATE_PKG)

yaegi-unit: ## run the gateway core's own unit tests under `yaegi test` (yaegi CLI v0.16.1)
	scripts/yaegi-unit.sh
