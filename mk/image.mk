# The container image (Containerfile): FROM scratch with the static
# binary (scripts/build-static.sh), the CA bundle and the non-root user
# 65532, built by podman or docker, whichever works (scripts/image.sh;
# IMAGE_TOOL=docker forces one). Nothing is pulled and no container runs,
# so the build works offline. integration/image_test.go builds it, reads
# its config and root filesystem back, and runs the binary it carries.
IMAGE ?= llmgateway:$(VERSION)
PLATFORMS ?= linux/amd64,linux/arm64
IMAGE_CONTEXT ?= dist/image
IMAGE_LICENSES ?= NOASSERTION
IMAGE_REVISION ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)

.PHONY: image image-multiarch

image: ## build the container image IMAGE (default llmgateway:VERSION) for the host's architecture with podman or docker
	IMAGE="$(IMAGE)" VERSION="$(VERSION)" REVISION="$(IMAGE_REVISION)" LICENSES="$(IMAGE_LICENSES)" \
	  IMAGE_CONTEXT="$(IMAGE_CONTEXT)" GO="$(GO)" scripts/image.sh single

image-multiarch: ## build IMAGE as a manifest list over PLATFORMS (default linux/amd64,linux/arm64); no emulation needed
	IMAGE="$(IMAGE)" VERSION="$(VERSION)" REVISION="$(IMAGE_REVISION)" LICENSES="$(IMAGE_LICENSES)" \
	  IMAGE_CONTEXT="$(IMAGE_CONTEXT)" PLATFORMS="$(PLATFORMS)" GO="$(GO)" scripts/image.sh multiarch
