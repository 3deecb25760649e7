#!/usr/bin/env bash
# The static analysis half of `make lint`: staticcheck and golangci-lint
# (.golangci.yml: the standard linters plus gosec) in every module of
# go.work, each from its own directory (`./...`, so plugin/vendor is not
# linted). The tools come from scripts/install-lint-tools.sh (pinned,
# cached). Fails on any finding, and on an exclusion rule of .golangci.yml
# that matched nothing in every module (golangci-lint's warn-unused
# report): a rule for one module is naturally unused in the others, so a
# rule is stale only when no module used it. Extra arguments are passed to
# golangci-lint run (for example --fix).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
GO="${GO:-go}"

tools=$(scripts/install-lint-tools.sh)
STATICCHECK=$(sed -n 1p <<<"$tools")
GOLANGCI_LINT=$(sed -n 2p <<<"$tools")

# The workspace's modules, as directories relative to the root.
mapfile -t modules < <("$GO" list -m -f '{{.Dir}}' | sed "s#^$ROOT/\{0,1\}##; s#^\$#.#")
if [ "${#modules[@]}" -eq 0 ]; then
	echo "lint-static: go list -m found no workspace modules" >&2
	exit 1
fi

failed=0
linted=0
unused=$(mktemp)
trap 'rm -f "$unused"' EXIT
for m in "${modules[@]}"; do
	if [ -z "$(cd "$m" && "$GO" list ./... 2>/dev/null)" ]; then
		echo "== $m: no Go packages, nothing to lint"
		continue
	fi
	linted=$((linted + 1))
	start=$(date +%s)
	echo "== $m: staticcheck"
	if ! (cd "$m" && "$STATICCHECK" ./...); then
		failed=1
	fi
	echo "== $m: golangci-lint"
	out=$(cd "$m" && "$GOLANGCI_LINT" run -c "$ROOT/.golangci.yml" "$@" ./... 2>&1) || failed=1
	# warn-unused lines name the rule that skipped nothing in this module.
	grep -o 'Skipped 0 issues by rules: \[.*\]' <<<"$out" | sort -u >>"$unused" || true
	grep -v 'Skipped 0 issues by rules' <<<"$out" || true
	echo "== $m: done in $(($(date +%s) - start))s"
done

stale=$(sort "$unused" | uniq -c | awk -v n="$linted" '$1 == n' | sed 's/^ *[0-9]* *Skipped 0 issues by rules: //')
if [ -n "$stale" ]; then
	echo "lint-static: .golangci.yml exclusion rules that matched nothing in any module (remove them):"
	echo "$stale"
	failed=1
fi
if [ "$failed" -ne 0 ]; then
	echo "lint-static: FAILED (staticcheck $("$STATICCHECK" -version | awk '{print $2}'), golangci-lint $("$GOLANGCI_LINT" version --short 2>/dev/null || echo '?'))"
	exit 1
fi
echo "lint-static: staticcheck and golangci-lint (with gosec) clean in $linted modules"
