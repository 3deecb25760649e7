#!/usr/bin/env bash
# Install Codex CLI @openai/codex@0.169.0 from the npm registry and cache
# it.
#
# npm installs the native binary as the optional package
# @openai/codex-linux-x64 (an alias of @openai/codex@0.169.0-linux-x64);
# node_modules/.bin/codex is only a Node wrapper that execs it, so the
# tests run the native binary directly. The package has no install
# scripts; --ignore-scripts keeps it that way. The install lives in
# ${LLMGW_CACHE:-$HOME/.cache/llmgateway}/codex-0.169.0; when the binary
# there answers --version with the pinned version, nothing is downloaded
# (so a cached install works offline). Prints the binary's path on stdout
# as its last line (integration/codexproc reads it from LLMGW_CODEX_BIN,
# or finds it at the same cache path).
set -euo pipefail

VERSION="0.169.0"
CACHE="${LLMGW_CACHE:-$HOME/.cache/llmgateway}"
DIR="$CACHE/codex-$VERSION"
REL="node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"
BIN="$DIR/$REL"

cached_version() {
	[ -x "$1" ] && "$1" --version 2>/dev/null | head -n 1
}

if [ "$(cached_version "$BIN")" = "codex-cli $VERSION" ]; then
	echo "codex $VERSION already cached at $BIN" >&2
	echo "$BIN"
	exit 0
fi

case "$(uname -s)/$(uname -m)" in
Linux/x86_64) ;;
*)
	echo "install-codex.sh: only linux/x86_64 is supported (the tests run $REL)" >&2
	exit 1
	;;
esac
if ! command -v npm >/dev/null 2>&1; then
	echo "install-codex.sh: npm is not on PATH (Debian: apt-get install -y nodejs npm)" >&2
	exit 1
fi

mkdir -p "$CACHE"
start=$(date +%s)
work=$(mktemp -d "$CACHE/.codex-install.XXXXXX")
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT
echo "installing @openai/codex@$VERSION with npm $(npm --version) into $DIR ..." >&2
npm install --prefix "$work" --no-audit --no-fund --no-save --ignore-scripts --loglevel=error \
	"@openai/codex@$VERSION" >&2
got=$(cached_version "$work/$REL" || true)
if [ "$got" != "codex-cli $VERSION" ]; then
	echo "install-codex.sh: $work/$REL --version printed '$got', want 'codex-cli $VERSION'" >&2
	exit 1
fi
rm -rf "$DIR"
mv "$work" "$DIR"
trap - EXIT
echo "installed codex $VERSION at $BIN in $(($(date +%s) - start))s ($(du -sh "$DIR" | cut -f1))" >&2
echo "$BIN"
