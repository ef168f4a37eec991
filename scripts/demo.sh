#!/usr/bin/env bash
# `make demo`: the main job on a fresh machine. Installs and starts the
# stand-ins (own directory and ports), replays testdata/ into a new Kinesis
# stream, runs two workers (KCL -> processor -> Gremlin sink), waits until
# the graph equals what the reference model says the input must give, prints
# a summary of the graph and the verify result, then starts the explorer
# (`lineageflow serve`) on that graph, takes a screenshot of it in headless
# Chromium and prints its path and the URL. It stops what it started, unless
# DEMO_KEEP=1: then everything keeps running for a person until Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

export STANDIN_DIR="${DEMO_STANDIN_DIR:-$ROOT/.standins/demo}"
export STANDIN_KINESIS_PORT="${DEMO_KINESIS_PORT:-34567}"
export STANDIN_DYNAMODB_PORT="${DEMO_DYNAMODB_PORT:-34568}"
export STANDIN_GREMLIN_PORT="${DEMO_GREMLIN_PORT:-38182}"
WORKERS="${DEMO_WORKERS:-2}"
WAIT="${DEMO_WAIT:-180s}"
INPUT=(testdata/explicit-lineage.ndjson testdata/handwritten.ndjson testdata/spark-pipeline.ndjson)

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

# The explorer on the demo's graph: `lineageflow serve`, a screenshot of the
# lineage around a real dataset in headless Chromium, the URL for a person.
EXPLORER_PORT="${DEMO_EXPLORER_PORT:-38080}"
EXPLORER_NODE="${DEMO_EXPLORER_NODE:-dataset:glue://catalog:staging.orders_clean}"
EXPLORER_SELECT="${DEMO_EXPLORER_SELECT:-job:spark://emr-prod:daily_orders.build_mart}"
SCREENSHOT="${DEMO_SCREENSHOT:-$ROOT/tmp/demo-explorer.png}"
base="http://127.0.0.1:$EXPLORER_PORT"
echo "== explorer ($base)"
# The replayed files carry fixed event times (2025-2026): with the default
# stale age (30 days) every edge would be stale, so the demo turns it off.
"$LF" serve -gremlin-endpoint "$LINEAGEFLOW_GREMLIN_ENDPOINT" -http-addr "127.0.0.1:$EXPLORER_PORT" -explorer-stale-after 0 >"$work/serve.log" 2>&1 &
worker_pids+=($!)
for _ in $(seq 1 150); do
	curl -fsS "$base/api/lf/v1/health" >/dev/null 2>&1 && break
	sleep 0.2
done
curl -fsS "$base/api/lf/v1/health" >/dev/null || { echo "demo: the explorer did not become healthy:" >&2; tail -n 20 "$work/serve.log" >&2; exit 1; }
urlq() { python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }
view="$base/?node=$(urlq "$EXPLORER_NODE")&up=2&down=3&sel=$(urlq "$EXPLORER_SELECT")"
mkdir -p "$(dirname "$SCREENSHOT")"
go build -o "$work/screenshot" ./tools/screenshot
if "$work/screenshot" -url "$view" -out "$SCREENSHOT" >/dev/null; then
	echo "explorer screenshot: $SCREENSHOT"
else
	echo "demo: no screenshot (is Chromium installed? apt-get install chromium)" >&2
	[ "${DEMO_REQUIRE_SCREENSHOT:-0}" = 1 ] && exit 1
fi
echo "explorer: $view"
echo "demo: PASS"
if [ "${DEMO_KEEP:-0}" = 1 ]; then
	echo "DEMO_KEEP=1: stand-ins, workers and the explorer keep running; open $base/ (Ctrl-C stops everything)"
	wait "${worker_pids[-1]}"
fi
