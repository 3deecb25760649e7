#!/usr/bin/env bash
# Install the static analysis tools of `make lint` from the Go module proxy
# with `go install` at pinned versions, each cached in
# ${LLMGW_CACHE:-$HOME/.cache/llmgateway}/lint/<tool>-<version>:
#   staticcheck    honnef.co/go/tools/cmd/staticcheck                        v0.8.2
#   golangci-lint  github.com/golangci/golangci-lint/v2/cmd/golangci-lint    v2.15.0
# (golangci-lint brings gosec). When a cached binary was built from the
# pinned module version, nothing is downloaded or built, so a warm run
# works offline. Prints the binaries' paths on stdout, one a line, in the
# order above.
set -euo pipefail

STATICCHECK_VERSION="v0.8.2"
GOLANGCI_VERSION="v2.15.0"
GO="${GO:-go}"
CACHE="${LLMGW_CACHE:-$HOME/.cache/llmgateway}/lint"

# module_version BIN: the main module version the binary was built from
# (go version -m reads the build info without running the tool).
module_version() {
	[ -x "$1" ] && "$GO" version -m "$1" 2>/dev/null | awk '$1 == "mod" {print $3; exit}'
}

# install NAME PACKAGE VERSION: prints the cached binary's path.
install() {
	local name=$1 pkg=$2 version=$3
	local dir="$CACHE/$name-$version"
	local bin="$dir/$name"
	if [ "$(module_version "$bin" || true)" = "$version" ]; then
		echo "$name $version already cached at $bin" >&2
		echo "$bin"
		return
	fi
	mkdir -p "$CACHE"
	local start work got
	start=$(date +%s)
	work=$(mktemp -d "$CACHE/.$name-install.XXXXXX")
	echo "installing $pkg@$version with $("$GO" version) into $dir ..." >&2
	# go install pkg@version ignores the workspace and the caller's module;
	# CGO off gives a static binary that does not depend on the C toolchain.
	if ! GOBIN="$work" GOFLAGS= GOWORK=off CGO_ENABLED=0 "$GO" install "$pkg@$version" >&2; then
		rm -rf "$work"
		echo "install-lint-tools.sh: go install $pkg@$version failed" >&2
		exit 1
	fi
	got=$(module_version "$work/$name" || true)
	if [ "$got" != "$version" ]; then
		rm -rf "$work"
		echo "install-lint-tools.sh: $work/$name was built from '$got', want '$version'" >&2
		exit 1
	fi
	rm -rf "$dir"
	mv "$work" "$dir"
	chmod 755 "$dir"
	echo "installed $name $version at $bin in $(($(date +%s) - start))s" >&2
	echo "$bin"
}

install staticcheck honnef.co/go/tools/cmd/staticcheck "$STATICCHECK_VERSION"
install golangci-lint github.com/golangci/golangci-lint/v2/cmd/golangci-lint "$GOLANGCI_VERSION"
