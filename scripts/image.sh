#!/usr/bin/env bash
# Build the llmgateway container image (Containerfile) with podman or
# docker, whichever works here:
#
#   scripts/image.sh single       one image for the host's architecture, tagged $IMAGE
#   scripts/image.sh multiarch    a manifest list $IMAGE over $PLATFORMS (podman),
#                                 or a multi-platform buildx build (docker)
#
# Environment (mk/image.mk sets them): IMAGE, VERSION, REVISION, LICENSES,
# PLATFORMS (comma-separated, e.g. linux/amd64,linux/arm64), IMAGE_CONTEXT
# (the staged build context, emptied first), IMAGE_TOOL (podman or docker;
# default: podman when on PATH, else docker when its daemon answers),
# CA_BUNDLE (default /etc/ssl/certs/ca-certificates.crt), IMAGE_PUSH=1
# (docker multiarch only: push, since a manifest list cannot be loaded into
# the classic docker store). Nothing is pulled and no container is run.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"

mode="${1:-single}"
image="${IMAGE:?IMAGE must be set}"
version="${VERSION:?VERSION must be set}"
revision="${REVISION:-unknown}"
licenses="${LICENSES:-NOASSERTION}"
context="${IMAGE_CONTEXT:?IMAGE_CONTEXT must be set}"
ca_bundle="${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}"

tool="${IMAGE_TOOL:-}"
if [ -z "$tool" ]; then
	if command -v podman >/dev/null 2>&1; then
		tool=podman
	elif command -v docker >/dev/null 2>&1 && docker version >/dev/null 2>&1; then
		tool=docker
	else
		echo "image.sh: neither podman nor a working docker found (Debian: apt-get install -y podman)" >&2
		exit 1
	fi
fi

case "$mode" in
single) platforms="linux/$("${GO:-go}" env GOARCH)" ;;
multiarch) platforms="${PLATFORMS:-linux/amd64,linux/arm64}" ;;
*)
	echo "usage: scripts/image.sh single|multiarch" >&2
	exit 2
	;;
esac

if [ ! -s "$ca_bundle" ]; then
	echo "image.sh: no CA bundle at $ca_bundle (Debian: apt-get install -y ca-certificates, or set CA_BUNDLE)" >&2
	exit 1
fi

# The build context: one static binary per platform, and the root
# filesystem's few files.
rm -rf "$context"
mkdir -p "$context/rootfs/etc/ssl/certs"
cp "$ca_bundle" "$context/rootfs/etc/ssl/certs/ca-certificates.crt"
printf 'root:x:0:0:root:/:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/:/sbin/nologin\n' >"$context/rootfs/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$context/rootfs/etc/group"
chmod 0644 "$context/rootfs/etc/passwd" "$context/rootfs/etc/group" "$context/rootfs/etc/ssl/certs/ca-certificates.crt"
for platform in ${platforms//,/ }; do
	os="${platform%%/*}" arch="${platform#*/}"
	if [ "$os" != linux ]; then
		echo "image.sh: only linux platforms make sense in an image (got $platform)" >&2
		exit 2
	fi
	echo "== static binary for $platform (version $version)" >&2
	VERSION="$version" "$ROOT/scripts/build-static.sh" "$os" "$arch" "$context/linux-$arch/llmgateway"
done

build_args=(--build-arg "VERSION=$version" --build-arg "REVISION=$revision" --build-arg "LICENSES=$licenses")
echo "== $tool build of $image for $platforms" >&2
case "$tool/$mode" in
podman/single)
	# A manifest list of the same name (from make image-multiarch) would
	# take the tag's place; the tag is whichever was built last.
	if podman manifest exists "$image" 2>/dev/null; then podman manifest rm "$image" >/dev/null; fi
	# --layers=false: no intermediate images left behind in the store.
	podman build --layers=false --platform "$platforms" "${build_args[@]}" \
		-f "$ROOT/Containerfile" -t "$image" "$context"
	;;
podman/multiarch)
	# --manifest adds to an existing list: start from an empty one.
	if podman manifest exists "$image" 2>/dev/null; then
		podman manifest rm "$image" >/dev/null
	elif podman image exists "$image" 2>/dev/null; then
		podman rmi "$image" >/dev/null
	fi
	podman build --layers=false --platform "$platforms" --manifest "$image" "${build_args[@]}" \
		-f "$ROOT/Containerfile" "$context"
	podman manifest inspect "$image" >&2
	;;
docker/single)
	docker build --platform "$platforms" "${build_args[@]}" -f "$ROOT/Containerfile" -t "$image" "$context"
	;;
docker/multiarch)
	push=()
	if [ "${IMAGE_PUSH:-}" = 1 ]; then push=(--push); fi
	docker buildx build --platform "$platforms" "${push[@]}" "${build_args[@]}" \
		-f "$ROOT/Containerfile" -t "$image" "$context"
	;;
*)
	echo "image.sh: IMAGE_TOOL must be podman or docker (got $tool)" >&2
	exit 2
	;;
esac
if [ "$mode" = single ]; then
	size=$("$tool" image inspect --format '{{.Size}}' "$image")
	echo "built $image with $tool: $size bytes uncompressed" >&2
fi
