#!/usr/bin/env bash
# End-to-end figures of the main job (issue "The main job end to end",
# point 5): throughput as a ratio of kinesalite's raw GetRecords rate,
# PutRecords -> graph latency, and write reduction, all measured in one run
# by tools/bench-e2e (see its doc comment), printed one summary line per figure
# and appended as a dated section to bench/RESULTS.md.
#
#   scripts/bench-e2e.sh [tools/bench-e2e flags]     e.g. -rounds 1, -lat-rate 1000,
#                                              -results "" (print only)
#
# Starts its own stand-ins in <repo>/.standins/bench on ports 54567 (kinesalite),
# 54568 (dynalite), 58182 (Gremlin Server) and stops, at the end, only those it
# started (a stand-in already running there is used and left running).
# BENCH_STANDIN_DIR and BENCH_*_PORT override the directory and ports.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
export STANDIN_DIR="${BENCH_STANDIN_DIR:-$ROOT/.standins/bench}"
export STANDIN_KINESIS_PORT="${BENCH_KINESIS_PORT:-54567}"
export STANDIN_DYNAMODB_PORT="${BENCH_DYNAMODB_PORT:-54568}"
export STANDIN_GREMLIN_PORT="${BENCH_GREMLIN_PORT:-58182}"
unset LINEAGEFLOW_KINESIS_ENDPOINT LINEAGEFLOW_DYNAMODB_ENDPOINT LINEAGEFLOW_GREMLIN_ENDPOINT

# Which stand-ins are already running (ours to leave alone)?
running() { [[ -s $STANDIN_DIR/pids/$1.pid ]] && kill -0 "$(cat "$STANDIN_DIR/pids/$1.pid")" 2>/dev/null; }
started=()
for n in kinesis dynamodb gremlin; do running "$n" || started+=("$n"); done
cleanup() {
	if ((${#started[@]})); then bash scripts/standins-stop.sh "${started[@]}" >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT
bash scripts/standins-start.sh kinesis dynamodb gremlin >/dev/null

cmd="scripts/bench-e2e.sh$(printf ' %q' "$@")"
go build -o "$STANDIN_DIR/bench-e2e-bin" ./tools/bench-e2e
"$STANDIN_DIR/bench-e2e-bin" -results "$ROOT/bench/RESULTS.md" -command "$cmd" "$@"
