# The admin dashboard (webui/: Vue 3 + Pinia + Chart.js, built by Vite)
# is baked into the core as string constants in
# gateway/admin_assets_gen.go (integration/cmd/adminassets), committed,
# so nothing under webui/ is needed at runtime, by `make test` or by the
# plugin. `make admin-ui` rebuilds it (Node 20 + npm) and refreshes
# plugin/vendor; scripts/admin-ui-check.sh (run by `make test`) compares
# the committed file with a fresh build when Node is present and skips
# with a message otherwise (LLMGW_REQUIRE_NODE=1 makes that a failure).
.PHONY: admin-ui admin-ui-check

admin-ui: ## build webui/ (npm ci, npm run build), regenerate gateway/admin_assets_gen.go, gofmt, then make vendor; commit both
	cd webui && npm ci --no-audit --no-fund && npm run build
	$(GO) run ./integration/cmd/adminassets -dist webui/dist -out gateway/admin_assets_gen.go
	gofmt -w gateway/admin_assets_gen.go
	$(MAKE) vendor

admin-ui-check: ## fail when gateway/admin_assets_gen.go differs from a fresh build of webui/ (skips without Node)
	scripts/admin-ui-check.sh
