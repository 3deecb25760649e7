#!/usr/bin/env bash
# Fail when gateway/admin_assets_gen.go (the built dashboard baked into the
# core) differs from what `make admin-ui` produces from webui/ now: it
# copies webui/ (without node_modules/ and dist/) to a temp dir, runs
# `npm ci` and `npm run build` there, regenerates the Go file from that
# dist/ and compares. Node is never required: without node/npm, with a
# Node older than Vite 8 needs, or when `npm ci` cannot install (no
# registry and no cache), it prints why it skipped and passes — unless
# LLMGW_REQUIRE_NODE=1 (CI), which makes each of those a failure.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
GEN="gateway/admin_assets_gen.go"

skip() {
	if [ "${LLMGW_REQUIRE_NODE:-}" = 1 ]; then
		echo "admin-ui-check: $1 (LLMGW_REQUIRE_NODE=1)" >&2
		exit 1
	fi
	echo "admin-ui-check: skipped: $1; $GEN was not compared with a fresh build of webui/"
	exit 0
}

command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || skip "node/npm not found"
# Vite 8 needs Node ^20.19 or >=22.12.
node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit((a === 20 && b >= 19) || (a === 22 && b >= 12) || a > 22 ? 0 : 1)' ||
	skip "node $(node --version) is too old for Vite 8 (^20.19 or >=22.12)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/webui"
(cd "$ROOT/webui" && tar --exclude=./node_modules --exclude=./dist -cf - .) | (cd "$tmp/webui" && tar -xf -)
# The specs read the admin API's golden answers (type-checked by the
# build): lay them out where they sit relative to webui/.
mkdir -p "$tmp/gateway/testdata"
cp -r "$ROOT/gateway/testdata/admin" "$tmp/gateway/testdata/admin"
if ! (cd "$tmp/webui" && npm ci --prefer-offline --no-audit --no-fund) >"$tmp/npm-ci.log" 2>&1; then
	tail -20 "$tmp/npm-ci.log" >&2
	skip "npm ci could not install webui/'s dependencies"
fi
if ! (cd "$tmp/webui" && npm run build) >"$tmp/build.log" 2>&1; then
	cat "$tmp/build.log" >&2
	echo "admin-ui-check: npm run build failed in a copy of webui/" >&2
	exit 1
fi
(cd "$ROOT" && "${GO:-go}" run ./integration/cmd/adminassets -dist "$tmp/webui/dist" -out "$tmp/admin_assets_gen.go") >/dev/null
if ! cmp -s "$tmp/admin_assets_gen.go" "$ROOT/$GEN"; then
	echo "admin-ui-check: $GEN is stale against webui/: run make admin-ui (it refreshes plugin/vendor too) and commit both" >&2
	diff <(grep -E '^(//|const [a-zA-Z0-9]+ =|\s+")' "$tmp/admin_assets_gen.go" | cut -c1-160) \
		<(grep -E '^(//|const [a-zA-Z0-9]+ =|\s+")' "$ROOT/$GEN" | cut -c1-160) | head -20 >&2 || true
	exit 1
fi
echo "admin-ui-check: $GEN matches a fresh build of webui/"
