#!/usr/bin/env bash
# Run the gateway core's own unit tests under the Yaegi v0.16.1 interpreter
# (`yaegi test`), the way Traefik would run the core: this is the only way to
# catch interpreter-only bugs in the core itself.
#
# The yaegi CLI is installed once into ${LLMGW_CACHE:-$HOME/.cache/llmgateway}/bin.
# The core is copied under a temporary GOPATH at
# src/github.com/llmgateway/llmgateway/gateway. Extra arguments are passed to
# `yaegi test` (for example -run TestName).
set -euo pipefail

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

gp=$(mktemp -d "${TMPDIR:-/tmp}/yaegi-unit.XXXXXX")
trap 'rm -rf "$gp"' EXIT
pkg="github.com/llmgateway/llmgateway/gateway"
mkdir -p "$gp/src/$(dirname "$pkg")"
cp -r "$ROOT/gateway" "$gp/src/$pkg"

cd "$gp/src/$pkg"
GOPATH="$gp" GO111MODULE=off timeout "${YAEGI_UNIT_TIMEOUT:-600}" "$YAEGI" test -v "$@" "$pkg"
