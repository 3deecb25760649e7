#!/usr/bin/env bash
# Build the release artifacts of llmgateway VERSION into RELEASE_DIR
# (`make release VERSION=x.y.z`; default dist/x.y.z):
#
#   llmgateway-<version>-<os>-<arch>.tar.gz    llmgateway-<version>-<os>-<arch>/{llmgateway,README.md,CHANGELOG.md}
#   llmgateway-<version>-<os>-<arch>.cdx.json  CycloneDX SBOM of that binary (cyclonedx-gomod bin)
#   SHA256SUMS                                 sha256sum of every file above (sha256sum -c SHA256SUMS)
#
# for linux/darwin x amd64/arm64 (RELEASE_PLATFORMS overrides), each binary
# from scripts/build-static.sh. VERSION must be semver without the leading
# v (the git tag is vVERSION); the development sentinel 0.0.0-dev is
# refused, since a release build is what sends the telemetry ping.
#
# Reproducible: the binaries do not depend on the checkout's git state; the
# archives have sorted entries, owner 0:0, modes independent of the umask
# and every mtime at SOURCE_DATE_EPOCH (default: the HEAD commit's time),
# gzip without a name or time; the SBOMs carry no serial number or
# timestamp. The same source and Go toolchain give the same SHA256SUMS.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"

version="${VERSION:-}"
semver='^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$'
if [ -z "$version" ] || [ "$version" = "0.0.0-dev" ]; then
	echo "release.sh: set a release version: make release VERSION=x.y.z (got '${version}'; 0.0.0-dev marks development builds)" >&2
	exit 2
fi
if [[ "$version" == v* ]]; then
	echo "release.sh: VERSION=$version: write it without the leading v (the tag is v${version#v}, the version ${version#v})" >&2
	exit 2
fi
if ! [[ "$version" =~ $semver ]]; then
	echo "release.sh: VERSION=$version is not a semantic version (x.y.z, optionally -prerelease or +build)" >&2
	exit 2
fi

out="${RELEASE_DIR:-$ROOT/dist/$version}"
platforms="${RELEASE_PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}"
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
	SOURCE_DATE_EPOCH=$(git -C "$ROOT" log -1 --format=%ct HEAD 2>/dev/null || echo 0)
fi
cyclonedx="${CYCLONEDX_GOMOD:-$("$ROOT/scripts/install-cyclonedx-gomod.sh" | tail -n 1)}"

start=$(date +%s)
mkdir -p "$out"
out="$(cd "$out" && pwd)"
# Only this version's own files are replaced; anything else there stays.
rm -f "$out/SHA256SUMS" "$out/llmgateway-$version-"*
stage=$(mktemp -d "$out/.stage.XXXXXX")
trap 'rm -rf "$stage"' EXIT

artifacts=()
for platform in ${platforms//,/ }; do
	os="${platform%%/*}" arch="${platform#*/}"
	name="llmgateway-$version-$os-$arch"
	echo "== $name" >&2
	mkdir -p "$stage/$name"
	VERSION="$version" "$ROOT/scripts/build-static.sh" "$os" "$arch" "$stage/$name/llmgateway"
	cp "$ROOT/README.md" "$ROOT/CHANGELOG.md" "$stage/$name/"
	tar -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner --mode=u+rwX,go+rX,go-w --mtime="@$SOURCE_DATE_EPOCH" \
		-cf - "$name" | gzip -n -9 >"$out/$name.tar.gz"
	# The SBOM is read from the binary's own build information, so it lists
	# exactly the modules compiled in; GOOS/GOARCH label its package URLs.
	(cd "$stage/$name" && GOOS="$os" GOARCH="$arch" "$cyclonedx" bin -json -std -noserial -notimestamp \
		-version "v$version" -output "$out/$name.cdx.json" llmgateway)
	artifacts+=("$name.tar.gz" "$name.cdx.json")
done
(cd "$out" && sha256sum "${artifacts[@]}" >SHA256SUMS)
echo "release $version in $out in $(($(date +%s) - start))s:" >&2
(cd "$out" && ls -l "${artifacts[@]}" SHA256SUMS) >&2
