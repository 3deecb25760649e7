# Release builds: `make release VERSION=x.y.z` cross-compiles the static
# binary (scripts/build-static.sh) for linux/darwin x amd64/arm64 into
# RELEASE_DIR (default dist/x.y.z): one .tar.gz and one CycloneDX SBOM
# (cyclonedx-gomod v1.10.0, installed into the cache from the Go module
# proxy the first time) per platform, and SHA256SUMS (scripts/release.sh).
# A missing, development (0.0.0-dev) or non-semver VERSION is refused.
# integration/release_test.go runs it for a test version.
RELEASE_DIR ?= dist/$(VERSION)

.PHONY: release cyclonedx-gomod

release: ## cross-compile linux/darwin x amd64/arm64 for VERSION=x.y.z into dist/x.y.z: archives, SBOMs, SHA256SUMS
	VERSION="$(VERSION)" RELEASE_DIR="$(RELEASE_DIR)" GO="$(GO)" scripts/release.sh

cyclonedx-gomod: ## install and cache cyclonedx-gomod v1.10.0 from the Go module proxy (the SBOM tool of make release)
	GO="$(GO)" scripts/install-cyclonedx-gomod.sh

# The tests that cross-compile for other platforms (TestRelease, the
# multi-arch image) cost minutes on a cold build cache, so they
# run under make integration only; they skip without this variable.
integration: export LLMGW_CROSS_BUILDS := 1
