#!/usr/bin/env bash
# Install the official A2A JS SDK (@a2a-js/sdk@1.3.0) and Express
# (express@5.1.0, its server-side peer dependency) from the npm registry
# and cache them, for the A2A integration tests (integration/a2a_test.go,
# integration/a2aproc).
#
# The install lives in ${LLMGW_CACHE:-$HOME/.cache/llmgateway}/a2a-js-sdk-1.3.0;
# when the SDK there loads with node and reports the pinned version, nothing
# is downloaded (so a cached install works offline). Prints the install
# folder (holding node_modules/) on stdout as its last line; a2aproc reads it
# from LLMGW_A2A_DIR, or finds it at the same cache path.
set -euo pipefail

VERSION="1.3.0"
EXPRESS="5.1.0"
CACHE="${LLMGW_CACHE:-$HOME/.cache/llmgateway}"
DIR="$CACHE/a2a-js-sdk-$VERSION"

# cached_ok DIR: the SDK's client and Express server modules load there.
cached_ok() {
	[ -f "$1/node_modules/@a2a-js/sdk/package.json" ] || return 1
	(cd "$1" && node --input-type=module -e "
		import { readFileSync } from 'node:fs';
		await import('@a2a-js/sdk/client');
		await import('@a2a-js/sdk/server/express');
		const v = JSON.parse(readFileSync('node_modules/@a2a-js/sdk/package.json', 'utf8')).version;
		if (v !== '$VERSION') { console.error('version ' + v); process.exit(1); }
	") >/dev/null 2>&1
}

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	echo "install-a2a.sh: node and npm must be on PATH (Debian: apt-get install -y nodejs npm)" >&2
	exit 1
fi
if cached_ok "$DIR"; then
	echo "@a2a-js/sdk $VERSION already cached at $DIR" >&2
	echo "$DIR"
	exit 0
fi

mkdir -p "$CACHE"
start=$(date +%s)
work=$(mktemp -d "$CACHE/.a2a-install.XXXXXX")
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT
echo "installing @a2a-js/sdk@$VERSION and express@$EXPRESS with npm $(npm --version) into $DIR ..." >&2
npm install --prefix "$work" --no-audit --no-fund --no-save --ignore-scripts --loglevel=error \
	"@a2a-js/sdk@$VERSION" "express@$EXPRESS" >&2
if ! cached_ok "$work"; then
	echo "install-a2a.sh: the SDK installed in $work does not load with node $(node --version)" >&2
	exit 1
fi
rm -rf "$DIR"
mv "$work" "$DIR"
trap - EXIT
echo "installed @a2a-js/sdk $VERSION at $DIR in $(($(date +%s) - start))s ($(du -sh "$DIR" | cut -f1))" >&2
echo "$DIR"
