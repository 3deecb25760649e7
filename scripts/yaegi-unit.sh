#!/usr/bin/env bash
# Run the gateway core's own unit tests under the Yaegi v0.16.1 interpreter
# (`yaegi test`), the way Traefik would run the core: this is the only way to
# catch interpreter-only bugs in the core itself.
#
# The yaegi CLI is installed once into ${LLMGW_CACHE:-$HOME/.cache/llmgateway}/bin.
# The core is copied under a temporary GOPATH at
# src/github.com/llmgateway/llmgateway/gateway, and every package of it
# (`go list ./...` in gateway/: the root package and each sub-package) is
# tested in turn, from its own directory. Extra arguments are passed to each
# `yaegi test` (for example -run TestName). The script fails when any
# package fails; YAEGI_UNIT_TIMEOUT (seconds, default 600) bounds each one.
set -euo pipefail
# The core's TestInterpretedMode checks that it knows it is interpreted.
export LLMGW_UNDER_YAEGI=1

YAEGI_VERSION="v0.16.1"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CACHE="${LLMGW_CACHE:-$HOME/.cache/llmgateway}"
GO="${GO:-go}"
YAEGI="$CACHE/bin/yaegi-$YAEGI_VERSION"

if [ ! -x "$YAEGI" ]; then
	mkdir -p "$CACHE/bin"
	tmpbin=$(mktemp -d)
	(cd / && GOWORK=off GOBIN="$tmpbin" "$GO" install "github.com/traefik/yaegi/cmd/yaegi@$YAEGI_VERSION")
	mv "$tmpbin/yaegi" "$YAEGI"
	rm -rf "$tmpbin"
fi

module="github.com/llmgateway/llmgateway/gateway"
pkgs=$(cd "$ROOT/gateway" && GOWORK=off "$GO" list ./...)
if [ -z "$pkgs" ]; then
	echo "yaegi-unit: no packages found under gateway/" >&2
	exit 1
fi

gp=$(mktemp -d "${TMPDIR:-/tmp}/yaegi-unit.XXXXXX")
trap 'rm -rf "$gp"' EXIT
mkdir -p "$gp/src/$(dirname "$module")"
cp -r "$ROOT/gateway" "$gp/src/$module"

failed=()
for pkg in $pkgs; do
	echo "== yaegi test $pkg"
	# The interpreter's own -timeout fires first, and panics with every
	# goroutine's stack: a hang shows where it is, not only that it was.
	limit="${YAEGI_UNIT_TIMEOUT:-600}"
	if ! (cd "$gp/src/$pkg" && GOPATH="$gp" GO111MODULE=off timeout "$limit" "$YAEGI" test -v -timeout "$((limit - 30))s" "$@" "$pkg"); then
		failed+=("$pkg")
	fi
done
if [ "${#failed[@]}" -gt 0 ]; then
	echo "yaegi-unit: FAILED under yaegi test: ${failed[*]}" >&2
	exit 1
fi
echo "yaegi-unit: every package passed under yaegi test:" $pkgs
