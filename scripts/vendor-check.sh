#!/usr/bin/env bash
# Fail when plugin/vendor (the copy of the core that Yaegi and Traefik
# read) differs from what `go mod vendor` produces from ./gateway now.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/plugin"
cp -r "$ROOT/gateway" "$tmp/gateway"
(cd "$ROOT/plugin" && tar --exclude=./vendor -cf - .) | (cd "$tmp/plugin" && tar -xf -)
(cd "$tmp/plugin" && GOWORK=off "${GO:-go}" mod vendor)
if ! diff -r "$tmp/plugin/vendor" "$ROOT/plugin/vendor" >/dev/null; then
	echo "plugin/vendor is stale: run 'make vendor' and commit it" >&2
	diff -r "$tmp/plugin/vendor" "$ROOT/plugin/vendor" | head -20 >&2
	exit 1
fi
echo "plugin/vendor is up to date"
