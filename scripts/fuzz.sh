#!/usr/bin/env bash
# Run every Go fuzz target of every module in go.work, one at a time, and
# print a table: target, package, time fuzzed, execs, new corpus entries,
# result.
#
# Targets are found per package with `go test -list '^Fuzz'` (only the
# packages whose test files declare a `func Fuzz...` are asked). Each runs
# as `go test -run '^Name$' -fuzz '^Name$' -fuzztime $FUZZTIME -parallel
# $FUZZ_PARALLEL`, under `nice -n $FUZZ_NICE`. An input that fails is
# written by go itself to the package's testdata/fuzz/<Name>/ (commit it
# with the fix: plain `go test` replays it from then on); the inputs that
# only widened coverage stay in go's cache ($(go env GOCACHE)/fuzz), and
# FUZZ_SAVE_CORPUS=1 copies this run's new ones into testdata/fuzz too.
#
# Settings (environment):
#   FUZZTIME        per target (default 10m; 30s when CI is set); any
#                   -fuzztime value, e.g. 60s or 100000x
#   FUZZ_PARALLEL   fuzzing workers per target (default 1)
#   FUZZ_NICE       niceness of the runs (default 10)
#   FUZZ_MINIMIZE_TIME  time spent minimizing each new interesting input
#                   (-fuzzminimizetime; default 2s: go's 60s, with one
#                   worker, would stop the fuzzing for that long)
#   FUZZ_MATCH      only targets whose name matches this regexp
#   FUZZ_PKG_MATCH  only packages whose import path matches this regexp
#   FUZZ_LOG_DIR    where each run's output is kept (default: a temp dir)
#   FUZZ_OUT        also write the table (markdown) to this file, a row
#                   as each target finishes (a stopped run keeps its rows)
#   FUZZ_SAVE_CORPUS=1  copy new interesting inputs into testdata/fuzz
# The script exits non-zero when any target failed. A run that go fails
# only with its coordinator's own "context deadline exceeded" at the end
# of the window (go.dev/issue/75804, before Go 1.27), with no input
# written, is replayed over its corpus and counted as a pass if that does.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
GO="${GO:-go}"
if [ -n "${CI:-}" ]; then
	FUZZTIME="${FUZZTIME:-30s}"
else
	FUZZTIME="${FUZZTIME:-10m}"
fi
FUZZ_PARALLEL="${FUZZ_PARALLEL:-1}"
FUZZ_NICE="${FUZZ_NICE:-10}"
FUZZ_MINIMIZE_TIME="${FUZZ_MINIMIZE_TIME:-2s}"
FUZZ_MATCH="${FUZZ_MATCH:-.}"
FUZZ_PKG_MATCH="${FUZZ_PKG_MATCH:-.}"
LOG_DIR="${FUZZ_LOG_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/llmgw-fuzz.XXXXXX")}"
mkdir -p "$LOG_DIR"
CACHE="$("$GO" env GOCACHE)/fuzz"

# modules: the directories go.work uses.
modules=$(sed -n 's/^[[:space:]]*\(\.\/[^[:space:]]*\)[[:space:]]*$/\1/p' go.work)
if [ -z "$modules" ]; then
	echo "fuzz: no modules found in go.work" >&2
	exit 1
fi

# packages: "importpath dir" of every package with a fuzz function in a
# test file.
packages=()
for mod in $modules; do
	while read -r pkg dir; do
		[ -n "$pkg" ] || continue
		if grep -lqs '^func Fuzz[A-Z_0-9]' "$dir"/*_test.go; then
			packages+=("$pkg $dir")
		fi
	done < <(cd "$mod" && "$GO" list -f '{{.ImportPath}} {{.Dir}}' ./... 2>/dev/null)
done

targets=()
for entry in "${packages[@]}"; do
	pkg=${entry%% *}
	[[ $pkg =~ $FUZZ_PKG_MATCH ]] || continue
	for name in $("$GO" test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
		[[ $name =~ $FUZZ_MATCH ]] || continue
		targets+=("$name $entry")
	done
done
if [ "${#targets[@]}" -eq 0 ]; then
	echo "fuzz: no fuzz targets match" >&2
	exit 1
fi
echo "fuzz: ${#targets[@]} targets, $FUZZTIME each, -parallel $FUZZ_PARALLEL, logs in $LOG_DIR"

count_files() {
	if [ -d "$1" ]; then find "$1" -maxdepth 1 -type f | wc -l; else echo 0; fi
}

rows=()
failed=0
header="| target | package | fuzzed | execs | new corpus entries | result |
|---|---|---|---|---|---|"
if [ -n "${FUZZ_OUT:-}" ]; then
	echo "$header" >"$FUZZ_OUT"
fi
for t in "${targets[@]}"; do
	read -r name pkg dir <<<"$t"
	log="$LOG_DIR/${pkg//\//_}.$name.log"
	cached="$CACHE/$pkg/$name"
	before=$(count_files "$cached")
	echo "== $name ($pkg)"
	touch "$log.start"
	status=PASS
	if ! nice -n "$FUZZ_NICE" "$GO" test -run "^${name}\$" -fuzz "^${name}\$" -fuzztime "$FUZZTIME" \
		-fuzzminimizetime "$FUZZ_MINIMIZE_TIME" -parallel "$FUZZ_PARALLEL" -timeout 0 "$pkg" >"$log" 2>&1; then
		status=FAIL
		failed=$((failed + 1))
	fi
	last=$(grep -E '^fuzz: elapsed: .*execs: ' "$log" | tail -1 || true)
	elapsed=$(sed -n 's/^fuzz: elapsed: \([^,]*\),.*/\1/p' <<<"$last")
	execs=$(sed -n 's/.*execs: \([0-9]*\).*/\1/p' <<<"$last")
	after=$(count_files "$cached")
	result=$status
	# go.dev/issue/75804 (Go before 1.27): at the end of a full -fuzztime
	# window the coordinator can report its own deadline as the target's
	# failure. That shape -- "context deadline exceeded", no input written
	# -- is a pass once a replay of the corpus (seeds, testdata/fuzz and
	# nothing else) passes; a real finding always writes its input first.
	if [ "$status" = FAIL ] && grep -q 'context deadline exceeded' "$log" &&
		! grep -q 'Failing input written to' "$log" &&
		nice -n "$FUZZ_NICE" "$GO" test -run "^${name}\$" -count 1 "$pkg" >>"$log" 2>&1; then
		status=PASS
		failed=$((failed - 1))
		result="PASS (go's coordinator reported its own deadline at the end, go.dev/issue/75804; no input written, corpus replay passed)"
	fi
	if [ "$status" = FAIL ]; then
		input=$(sed -n 's/.*Failing input written to \(.*\)$/\1/p' "$log" | tail -1)
		result="FAIL ${input:-see $log}"
		tail -20 "$log"
	fi
	if [ "${FUZZ_SAVE_CORPUS:-}" = 1 ] && [ "$after" -gt 0 ]; then
		mkdir -p "$dir/testdata/fuzz/$name"
		find "$cached" -maxdepth 1 -type f -newer "$log.start" -exec cp -n {} "$dir/testdata/fuzz/$name/" \; 2>/dev/null || true
	fi
	rows+=("| $name | $pkg | ${elapsed:-?} | ${execs:-?} | $((after - before)) | $result |")
	if [ -n "${FUZZ_OUT:-}" ]; then
		echo "${rows[-1]}" >>"$FUZZ_OUT"
	fi
	echo "   ${elapsed:-?}, ${execs:-?} execs, $((after - before)) new corpus entries: $result"
done

table=$header
for r in "${rows[@]}"; do
	table+=$'\n'"$r"
done
echo
echo "$table"
if [ "$failed" -gt 0 ]; then
	echo "fuzz: $failed target(s) failed; their inputs are under testdata/fuzz" >&2
	exit 1
fi
