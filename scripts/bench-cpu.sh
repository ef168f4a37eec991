#!/usr/bin/env bash
# End-to-end CPU per record (issue 16): a worker's CPU per record read from
# kinesalite against BenchmarkPipeline's CPU per event and BenchmarkDecode's
# rate, all in one run, plus the worker's CPU profile by component (see
# tools/bench-cpu). Prints one line per figure and round; the figures go to
# bench/RESULTS.md by hand (the machine is shared: compare ratios of one run).
#
#   scripts/bench-cpu.sh [tools/bench-cpu flags]     e.g. -rounds 2, -sink gremlin, -events 50000
#
# Starts its own stand-ins in <repo>/.standins/bench-cpu on ports 55567
# (kinesalite), 55568 (dynalite), 59182 (Gremlin Server) and stops, at the
# end, only those it started. BENCH_STANDIN_DIR and BENCH_*_PORT override them.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
export STANDIN_DIR="${BENCH_STANDIN_DIR:-$ROOT/.standins/bench-cpu}"
export STANDIN_KINESIS_PORT="${BENCH_KINESIS_PORT:-55567}"
export STANDIN_DYNAMODB_PORT="${BENCH_DYNAMODB_PORT:-55568}"
export STANDIN_GREMLIN_PORT="${BENCH_GREMLIN_PORT:-59182}"
unset LINEAGEFLOW_KINESIS_ENDPOINT LINEAGEFLOW_DYNAMODB_ENDPOINT LINEAGEFLOW_GREMLIN_ENDPOINT

running() { [[ -s $STANDIN_DIR/pids/$1.pid ]] && kill -0 "$(cat "$STANDIN_DIR/pids/$1.pid")" 2>/dev/null; }
started=()
for n in kinesis dynamodb gremlin; do running "$n" || started+=("$n"); done
cleanup() {
	if ((${#started[@]})); then bash scripts/standins-stop.sh "${started[@]}" >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT
bash scripts/standins-start.sh kinesis dynamodb gremlin >/dev/null

go build -o "$STANDIN_DIR/bench-cpu-bin" ./tools/bench-cpu
"$STANDIN_DIR/bench-cpu-bin" "$@"
