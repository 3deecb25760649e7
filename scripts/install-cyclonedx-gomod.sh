#!/usr/bin/env bash
# Install github.com/CycloneDX/cyclonedx-gomod v1.10.0 (the SBOM tool of
# `make release`) from the Go module proxy with `go install` and cache it
# in ${LLMGW_CACHE:-$HOME/.cache/llmgateway}/cyclonedx-gomod-v1.10.0. When
# the binary there reports the pinned version, nothing is downloaded (so a
# cached install works offline). Prints the binary's path on stdout as its
# last line.
set -euo pipefail

VERSION="v1.10.0"
CACHE="${LLMGW_CACHE:-$HOME/.cache/llmgateway}"
DIR="$CACHE/cyclonedx-gomod-$VERSION"
BIN="$DIR/cyclonedx-gomod"

cached_version() {
	[ -x "$1" ] && "$1" version 2>/dev/null | awk '$1 == "Version:" {print $2}'
}

if [ "$(cached_version "$BIN")" = "$VERSION" ]; then
	echo "cyclonedx-gomod $VERSION already cached at $BIN" >&2
	echo "$BIN"
	exit 0
fi

mkdir -p "$CACHE"
start=$(date +%s)
work=$(mktemp -d "$CACHE/.cyclonedx-gomod-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "installing github.com/CycloneDX/cyclonedx-gomod@$VERSION with $(${GO:-go} version) into $DIR ..." >&2
# go install pkg@version ignores the workspace and the caller's module.
GOBIN="$work" GOFLAGS= "${GO:-go}" install "github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@$VERSION" >&2
got=$(cached_version "$work/cyclonedx-gomod" || true)
if [ "$got" != "$VERSION" ]; then
	echo "install-cyclonedx-gomod.sh: $work/cyclonedx-gomod version printed '$got', want '$VERSION'" >&2
	exit 1
fi
rm -rf "$DIR"
mv "$work" "$DIR"
chmod 755 "$DIR"
trap - EXIT
echo "installed cyclonedx-gomod $VERSION at $BIN in $(($(date +%s) - start))s" >&2
echo "$BIN"
