#!/usr/bin/env bash
# `make demo`: the main job on a fresh machine. Installs and starts the
# stand-ins (own directory and ports), replays testdata/ into a new Kinesis
# stream, runs two workers (KCL -> processor -> Gremlin sink), waits until
# the graph equals what the reference model says the input must give, prints
# a summary of the graph and the verify result, and stops what it started.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

export STANDIN_DIR="${DEMO_STANDIN_DIR:-$ROOT/.standins/demo}"
export STANDIN_KINESIS_PORT="${DEMO_KINESIS_PORT:-34567}"
export STANDIN_DYNAMODB_PORT="${DEMO_DYNAMODB_PORT:-34568}"
export STANDIN_GREMLIN_PORT="${DEMO_GREMLIN_PORT:-38182}"
WORKERS="${DEMO_WORKERS:-2}"
WAIT="${DEMO_WAIT:-180s}"
INPUT=(testdata/handwritten.ndjson testdata/spark-pipeline.ndjson)

work=$(mktemp -d /tmp/lineageflow-demo.XXXXXX)
worker_pids=()
cleanup() {
	local rc=$?
	for pid in "${worker_pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
	for pid in "${worker_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
	bash scripts/standins-stop.sh >/dev/null || true
	if [ "$rc" -ne 0 ]; then
		echo "demo: FAILED (exit $rc); worker logs:" >&2
		for f in "$work"/worker-*.log; do [ -f "$f" ] && { echo "--- $f" >&2; tail -n 30 "$f" >&2; }; done
	fi
	rm -rf "$work"
}
trap cleanup EXIT

echo "== stand-ins"
bash scripts/standins-start.sh kinesis dynamodb gremlin
set -a
# shellcheck disable=SC1091
. "$STANDIN_DIR/env"
set +a

echo "== build"
go build -o "$work/lineageflow" ./cmd/lineageflow
LF="$work/lineageflow"

stream="lineage-demo-$(date +%s)-$$"
echo "== replay ${INPUT[*]} -> $stream (2 shards, 30% KPL-aggregated)"
"$LF" replay -stream "$stream" -shards 2 -aggregate 0.3 "${INPUT[@]}"

echo "== $WORKERS workers"
for i in $(seq 1 "$WORKERS"); do
	"$LF" run -stream "$stream" -app "$stream" -worker-id "demo-$i" \
		-data-dir "$work/data-$i" -sink "gremlin:$LINEAGEFLOW_GREMLIN_ENDPOINT" \
		-failover-time 5s -stats-every 0 >"$work/worker-$i.log" 2>&1 &
	worker_pids+=($!)
done

echo "== verify (waits up to $WAIT for the graph to be complete)"
"$LF" verify -gremlin-endpoint "$LINEAGEFLOW_GREMLIN_ENDPOINT" -wait "$WAIT" -summary "${INPUT[@]}"
echo "demo: PASS"
