#!/usr/bin/env bash
# Fail when a make target (in the Makefile or mk/*.mk) has no `## `
# help comment, so `make help` lists every target (part of `make lint`).
set -euo pipefail
cd "$(dirname "$0")/.."
# Rule lines only: a target-specific variable (`t: export V=1`, `t: V := x`)
# is not a rule of its own.
rules=$(grep -hE '^[a-zA-Z0-9_-]+:([^=]|$)' Makefile mk/*.mk | grep -vE '^[a-zA-Z0-9_-]+: *(export +|override +)?[A-Za-z_][A-Za-z0-9_]* *[:+?!]?=' || true)
helped=$(printf '%s\n' "$rules" | grep '## ' | sed 's/:.*//' | sort -u)
missing=$(printf '%s\n' "$rules" | grep -v '## ' | sed 's/:.*//' | sort -u | grep -vxF -f <(printf '%s\n' "$helped") || true)
if [ -n "$missing" ]; then
	echo "make targets without a '## ' help comment (make help must list every target):"
	echo "$missing"
	exit 1
fi
echo "make help lists every target ($(grep -hcE '^[a-zA-Z0-9_-]+:.*## ' Makefile mk/*.mk | paste -sd+ | bc))"
