#!/usr/bin/env bash
# Build Traefik v3.6.12 from the Go module proxy and cache the binary.
#
# `go install .../cmd/traefik@v3.6.12` does not work (Traefik's go.mod has
# replace directives), so the module source is downloaded, copied to a
# writable folder and built there. The binary is cached at
# ${LLMGW_CACHE:-$HOME/.cache/llmgateway}/traefik-v3.6.12; when it exists the
# build is skipped. Prints the binary path on stdout as its last line.
set -euo pipefail

VERSION="v3.6.12"
CACHE="${LLMGW_CACHE:-$HOME/.cache/llmgateway}"
BIN="$CACHE/traefik-$VERSION"
GO="${GO:-go}"

if [ -x "$BIN" ]; then
	echo "traefik $VERSION already cached at $BIN" >&2
	echo "$BIN"
	exit 0
fi

mkdir -p "$CACHE"
start=$(date +%s)
echo "downloading github.com/traefik/traefik/v3@$VERSION ..." >&2
dir=$(cd / && GOWORK=off GOFLAGS=-mod=mod "$GO" mod download -json "github.com/traefik/traefik/v3@$VERSION" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
if [ -z "$dir" ] || [ ! -d "$dir" ]; then
	echo "could not locate the downloaded traefik module" >&2
	exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/traefik-build.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp -r "$dir/." "$work/src"
chmod -R u+w "$work/src"

echo "building traefik $VERSION in $work/src (this takes ~10 minutes) ..." >&2
(cd "$work/src" && GOWORK=off GOFLAGS=-mod=mod "$GO" build -trimpath -o "$work/traefik" ./cmd/traefik)
mv "$work/traefik" "$BIN.tmp"
mv "$BIN.tmp" "$BIN"
echo "built $BIN in $(($(date +%s) - start))s" >&2
echo "$BIN"
