#!/usr/bin/env bash
# Install Claude Code @anthropic-ai/claude-code@2.1.328 from the npm
# registry and cache it.
#
# npm installs the native binary as the optional package
# @anthropic-ai/claude-code-linux-x64; the wrapper's postinstall (which
# would link it to bin/claude.exe) is not run (--ignore-scripts), so the
# tests run the native binary directly. The install lives in
# ${LLMGW_CACHE:-$HOME/.cache/llmgateway}/claude-code-2.1.328; when the
# binary there answers --version with the pinned version, nothing is
# downloaded (so a cached install works offline). Prints the binary's path
# on stdout as its last line (integration/claudeproc reads it from
# LLMGW_CLAUDE_BIN, or finds it at the same cache path).
set -euo pipefail

VERSION="2.1.328"
CACHE="${LLMGW_CACHE:-$HOME/.cache/llmgateway}"
DIR="$CACHE/claude-code-$VERSION"
REL="node_modules/@anthropic-ai/claude-code-linux-x64/claude"
BIN="$DIR/$REL"

cached_version() {
	[ -x "$1" ] && "$1" --version 2>/dev/null | head -n 1
}

if [ "$(cached_version "$BIN")" = "$VERSION (Claude Code)" ]; then
	echo "claude code $VERSION already cached at $BIN" >&2
	echo "$BIN"
	exit 0
fi

case "$(uname -s)/$(uname -m)" in
Linux/x86_64) ;;
*)
	echo "install-claude-code.sh: only linux/x86_64 is supported (the tests run $REL)" >&2
	exit 1
	;;
esac
if ! command -v npm >/dev/null 2>&1; then
	echo "install-claude-code.sh: npm is not on PATH (Debian: apt-get install -y nodejs npm)" >&2
	exit 1
fi

mkdir -p "$CACHE"
start=$(date +%s)
work=$(mktemp -d "$CACHE/.claude-code-install.XXXXXX")
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT
echo "installing @anthropic-ai/claude-code@$VERSION with npm $(npm --version) into $DIR ..." >&2
# The package declares engines.node >=22; npm only warns on Node 20, and
# the native binary does not use Node at all.
npm install --prefix "$work" --no-audit --no-fund --no-save --ignore-scripts --loglevel=error \
	"@anthropic-ai/claude-code@$VERSION" >&2
got=$(cached_version "$work/$REL" || true)
if [ "$got" != "$VERSION (Claude Code)" ]; then
	echo "install-claude-code.sh: $work/$REL --version printed '$got', want '$VERSION (Claude Code)'" >&2
	exit 1
fi
rm -rf "$DIR"
mv "$work" "$DIR"
trap - EXIT
echo "installed claude code $VERSION at $BIN in $(($(date +%s) - start))s ($(du -sh "$DIR" | cut -f1))" >&2
echo "$BIN"
