#!/usr/bin/env bash
# Fail when a make target (in the Makefile or mk/*.mk) has no `## `
# help comment, so `make help` lists every target (part of `make lint`).
set -euo pipefail
cd "$(dirname "$0")/.."
missing=$(grep -hE '^[a-zA-Z0-9_-]+:([^=]|$)' Makefile mk/*.mk | grep -v '## ' | sed 's/:.*//' | sort -u || true)
if [ -n "$missing" ]; then
	echo "make targets without a '## ' help comment (make help must list every target):"
	echo "$missing"
	exit 1
fi
echo "make help lists every target ($(grep -hcE '^[a-zA-Z0-9_-]+:.*## ' Makefile mk/*.mk | paste -sd+ | bc))"
