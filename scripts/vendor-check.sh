#!/usr/bin/env bash
# Fail when plugin/vendor (the copy of the core that Yaegi and Traefik
# read) differs from what `go mod vendor` produces from ./gateway now, or
# when it lacks any package of the core the plugin imports (the root
# package and every sub-package it pulls in, such as internal/store):
# each must be listed in vendor/modules.txt and have all its files there.
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

module="github.com/llmgateway/llmgateway/gateway"
vendor="$ROOT/plugin/vendor"
# The core packages the plugin builds from source (replace => ../gateway),
# with their non-test files.
deps=$(cd "$tmp/plugin" && GOWORK=off "${GO:-go}" list -mod=mod -deps \
	-f '{{if not .Standard}}{{.ImportPath}} {{join .GoFiles " "}}{{end}}' . | grep "^$module[ /]" || true)
if [ -z "$deps" ]; then
	echo "plugin does not import $module?" >&2
	exit 1
fi
pkgs=()
while read -r pkg files; do
	pkgs+=("${pkg#"$module"}")
	if ! grep -qxF "$pkg" "$vendor/modules.txt"; then
		echo "plugin/vendor/modules.txt does not list $pkg: run 'make vendor'" >&2
		exit 1
	fi
	for f in $files; do
		if [ ! -f "$vendor/$pkg/$f" ]; then
			echo "plugin/vendor lacks $pkg/$f: run 'make vendor'" >&2
			exit 1
		fi
	done
done <<<"$deps"
echo "plugin/vendor is up to date (core packages: ${pkgs[*]/#/gateway})"
