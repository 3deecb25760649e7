# Fuzzing: every fuzz target of every module, one at a time
# (scripts/fuzz.sh). Plain `go test` (make test) replays each target's
# seeds and its committed testdata/fuzz corpus; this runs the fuzzer.
FUZZTIME ?=
FUZZ_PARALLEL ?= 1

fuzz: ## run every fuzz target for FUZZTIME each (default 10m; e.g. make fuzz FUZZTIME=30s), -parallel FUZZ_PARALLEL (default 1); prints a table
	FUZZTIME="$(FUZZTIME)" FUZZ_PARALLEL="$(FUZZ_PARALLEL)" scripts/fuzz.sh
