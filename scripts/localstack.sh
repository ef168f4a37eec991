#!/usr/bin/env bash
# LocalStack conformance test (make localstack): the design's local path,
# without Docker. Installs LocalStack 3.8.1 (the version docker-compose.yml
# pins) from PyPI into a venv, starts it on loopback with its Kinesis only
# (kinesis-mock, which LocalStack installs from npm on first start), pairs
# it with dynalite (LocalStack's DynamoDB is DynamoDB Local: not for us) and
# the Gremlin stand-in, then: a generated workload, half replayed, two
# workers, a shard split, the other half, and `lineageflow verify` on the
# whole. LocalStack re-encodes kinesis-mock's answers as real Kinesis does
# (CBOR byte strings, tag-1 timestamps): the one emulator here that drives
# the CBOR decoder's raw-bytes path.
#
#   bash scripts/localstack.sh                         # CBOR (the default wire format)
#   LOCALSTACK_PROTOCOL=json bash scripts/localstack.sh
#
# Env: LOCALSTACK_PORT (4566), LOCALSTACK_DYNAMODB_PORT (24568),
# LOCALSTACK_GREMLIN_PORT (28182), LOCALSTACK_EVENTS (3000), LOCALSTACK_WAIT
# (300s), LOCALSTACK_DIR (.localstack). Needs python3.11 (venv, pip), npm,
# Java (Gremlin Server), Go. Stops only the processes it started.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

LS_DIR="${LOCALSTACK_DIR:-$ROOT/.localstack}"
LS_PORT="${LOCALSTACK_PORT:-4566}"
PROTO="${LOCALSTACK_PROTOCOL:-cbor}"
EVENTS="${LOCALSTACK_EVENTS:-3000}"
WAIT="${LOCALSTACK_WAIT:-300s}"
export STANDIN_DIR="$LS_DIR/standins"
export STANDIN_DYNAMODB_PORT="${LOCALSTACK_DYNAMODB_PORT:-24568}"
export STANDIN_GREMLIN_PORT="${LOCALSTACK_GREMLIN_PORT:-28182}"

start=$(date +%s)
work=$(mktemp -d /tmp/lineageflow-localstack.XXXXXX)
pids=()
ls_pid=""
cleanup() {
	local rc=$?
	for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
	if [ -n "$ls_pid" ]; then
		kill -TERM "$ls_pid" 2>/dev/null || true
		wait "$ls_pid" 2>/dev/null || true
	fi
	bash scripts/standins-stop.sh || echo "localstack: stopping the stand-ins failed" >&2
	if [ "$rc" -ne 0 ]; then
		echo "localstack: FAILED (exit $rc)" >&2
		for f in "$work"/*.log; do [ -f "$f" ] && { echo "--- $f" >&2; tail -n 30 "$f" >&2; }; done
	fi
	rm -rf "$work"
}
trap cleanup EXIT

venv="$LS_DIR/venv"
if ! "$venv/bin/python" -c 'import localstack, sys; sys.exit(0)' 2>/dev/null; then
	echo "== install LocalStack 3.8.1 into $venv"
	python3.11 -m venv "$venv"
	# The runtime extra minus amazon-kclpy (a Java KCL for Python: not needed
	# for Kinesis, and its install downloads jars) and JPype1; the upper pins
	# are what 3.8.1 still runs with.
	"$venv/bin/pip" install -q 'localstack==3.8.1' 'localstack-core[base-runtime]==3.8.1' \
		'cbor2<6' 'plux<1.12' 'psutil<7' 'cryptography>=41.0.5,<43' 'service_identity<25' \
		'airspeed-ext>=0.6.3' 'antlr4-python3-runtime==4.13.2' 'apispec>=5.1.1' 'crontab>=0.22.6' \
		'json5>=0.9.11' 'jsonpath-ng>=1.6.1' 'jsonpath-rw>=1.4.0' 'moto-ext==5.0.15.post4' 'pyopenssl>=23.0.0'
fi

echo "== LocalStack (Kinesis only) on 127.0.0.1:$LS_PORT"
mkdir -p "$LS_DIR/run"
(cd "$LS_DIR/run" && exec env ACTIVATE_PRO=0 OVERRIDE_IN_DOCKER=0 GATEWAY_SERVER=hypercorn DNS_ADDRESS=0 \
	SERVICES=kinesis EAGER_SERVICE_LOADING=1 GATEWAY_LISTEN="127.0.0.1:$LS_PORT" \
	LOCALSTACK_VOLUME_DIR="$LS_DIR/run/volume" DISABLE_EVENTS=1 SKIP_SSL_CERT_DOWNLOAD=1 \
	"$venv/bin/python" -m localstack.runtime.main) >"$work/localstack.log" 2>&1 &
ls_pid=$!

echo "== dynalite and Gremlin Server ($STANDIN_DIR)"
# An empty graph, so verify sees only this run's writes (the Gremlin
# stand-in saves its graph on stop and loads it at start). The directory is
# this script's own, its stand-ins stopped (no pid files).
if compgen -G "$STANDIN_DIR/pids/*" >/dev/null; then
	echo "stand-ins of $STANDIN_DIR are running: stop them (STANDIN_DIR=$STANDIN_DIR bash scripts/standins-stop.sh)" >&2
	exit 1
fi
rm -rf "$STANDIN_DIR/data/gremlin" "$STANDIN_DIR/data/dynamodb"
bash scripts/standins-start.sh dynamodb gremlin
set -a
. "$STANDIN_DIR/env"
set +a
KIN="http://127.0.0.1:$LS_PORT"

for _ in $(seq 1 300); do
	curl -fsS "$KIN/_localstack/health" 2>/dev/null | grep -q '"kinesis": "\(available\|running\)"' && break
	kill -0 "$ls_pid" 2>/dev/null || { echo "LocalStack exited" >&2; exit 1; }
	sleep 0.5
done

echo "== build"
go build -o "$work/lineageflow" ./cmd/lineageflow
LF="$work/lineageflow"
export LINEAGEFLOW_REGION=us-east-1 LINEAGEFLOW_ACCESS_KEY_ID=test LINEAGEFLOW_SECRET_ACCESS_KEY=test

stream="lineage-ls-$(date +%s)-$$"
"$LF" gen -seed 25 -events "$EVENTS" -pipelines 16 -out "$work/all.ndjson"
half=$(($(wc -l <"$work/all.ndjson") / 2))
head -n "$half" "$work/all.ndjson" >"$work/first.ndjson"
tail -n +"$((half + 1))" "$work/all.ndjson" >"$work/second.ndjson"

echo "== replay the first half -> $stream (1 shard; kinesis-mock installs itself on the first call)"
"$LF" replay -stream "$stream" -shards 1 -aggregate 0.3 -kinesis-endpoint "$KIN" "$work/first.ndjson"

echo "== 2 workers (-kinesis-protocol $PROTO; -run-store dynamodb, the default, on dynalite)"
for i in 1 2; do
	"$LF" run -stream "$stream" -app "$stream" -worker-id "ls-$i" -data-dir "$work/data-$i" \
		-kinesis-endpoint "$KIN" -dynamodb-endpoint "$LINEAGEFLOW_DYNAMODB_ENDPOINT" \
		-kinesis-protocol "$PROTO" -sink "gremlin:$LINEAGEFLOW_GREMLIN_ENDPOINT" -http-addr "" \
		-failover-time 5s -shard-sync 500ms -stats-every 0 >"$work/worker-$i.log" 2>&1 &
	pids+=($!)
done

echo "== split the shard (then the second half lands on the children)"
"$venv/bin/python" - "$KIN" "$stream" <<'EOF'
import sys, time, boto3
k = boto3.client("kinesis", endpoint_url=sys.argv[1], region_name="us-east-1",
                 aws_access_key_id="test", aws_secret_access_key="test")
s = k.describe_stream(StreamName=sys.argv[2])["StreamDescription"]["Shards"][0]
lo, hi = int(s["HashKeyRange"]["StartingHashKey"]), int(s["HashKeyRange"]["EndingHashKey"])
k.split_shard(StreamName=sys.argv[2], ShardToSplit=s["ShardId"], NewStartingHashKey=str((lo + hi) // 2 + 1))
for _ in range(120):
    if k.describe_stream_summary(StreamName=sys.argv[2])["StreamDescriptionSummary"]["StreamStatus"] == "ACTIVE":
        break
    time.sleep(0.5)
print("split", s["ShardId"], "->", [x["ShardId"] for x in k.list_shards(StreamName=sys.argv[2])["Shards"]])
EOF

echo "== replay the second half"
"$LF" replay -stream "$stream" -shards 0 -aggregate 0.3 -kinesis-endpoint "$KIN" "$work/second.ndjson"

echo "== verify (waits up to $WAIT)"
"$LF" verify -gremlin-endpoint "$LINEAGEFLOW_GREMLIN_ENDPOINT" -wait "$WAIT" -summary "$work/all.ndjson"
for i in 1 2; do
	if grep -q 'level=ERROR' "$work/worker-$i.log"; then
		echo "worker $i logged errors:" >&2
		grep 'level=ERROR' "$work/worker-$i.log" | tail -n 5 >&2
		exit 1
	fi
done
echo "localstack: PASS ($PROTO, $EVENTS events, split mid-stream, 2 workers) in $(($(date +%s) - start)) s"
