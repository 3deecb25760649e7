#!/usr/bin/env bash
# Build one static llmgateway binary for a release or the container image:
#
#   scripts/build-static.sh OS ARCH OUT     (VERSION and GO from the environment)
#
# CGO_ENABLED=0 (no libc: the binary runs FROM scratch and on any Linux or
# macOS of its architecture), -trimpath (no build paths), -buildvcs=false
# (the binary does not depend on the checkout's git state, so the same
# source and toolchain give the same bytes), -s -w (no symbol table or
# DWARF; panics still name functions and lines), baseline CPU levels
# (GOAMD64=v1, GOARM64=v8.0) whatever the environment says, and VERSION
# stamped into gateway.Version. The binary is built in the go.work
# workspace, like `make build-binary`.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"

if [ $# -ne 3 ]; then
	echo "usage: scripts/build-static.sh OS ARCH OUT" >&2
	exit 2
fi
os="$1" arch="$2" out="$3"
version="${VERSION:?VERSION must be set}"
case "$out" in
/*) ;;
*) out="$PWD/$out" ;;
esac
mkdir -p "$(dirname "$out")"

cd "$ROOT/cmd"
CGO_ENABLED=0 GOOS="$os" GOARCH="$arch" GOAMD64=v1 GOARM64=v8.0 "${GO:-go}" build \
	-trimpath -buildvcs=false \
	-ldflags "-s -w -X github.com/llmgateway/llmgateway/gateway.Version=$version" \
	-o "$out" ./llmgateway
