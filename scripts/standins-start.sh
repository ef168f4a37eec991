#!/usr/bin/env bash
# Start the local AWS/Neptune stand-ins (installing them first if needed).
#
#   scripts/standins-start.sh [kinesis] [dynamodb] [gremlin] [redis] [s3]   # no args: all
#
#   kinesis   kinesalite 3.3.3 (npm)  http://127.0.0.1:$STANDIN_KINESIS_PORT  (4567)
#   dynamodb  dynalite 4.0.0 (npm)    http://127.0.0.1:$STANDIN_DYNAMODB_PORT (4568)
#   gremlin   TinkerPop Gremlin Server 3.7.4 (Maven Central)
#                                     ws://127.0.0.1:$STANDIN_GREMLIN_PORT/gremlin (8182)
#   redis     redis-server >= 7.0 (Debian package redis-server, not installed here)
#                                     redis://127.0.0.1:$STANDIN_REDIS_PORT/0 (6379)
#   s3        moto 5.2.6 server (PyPI, venv standins/s3/venv; S3 API only used)
#                                     http://127.0.0.1:$STANDIN_S3_PORT (4569)
#
# State lives in $STANDIN_DIR (default <repo>/.standins); see
# scripts/lib/standins-common.sh for the layout. Writes $STANDIN_DIR/env
# (LINEAGEFLOW_*_ENDPOINT, AWS_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY).
#
# Idempotent: a stand-in whose recorded PID is alive and which answers is left
# alone; a stale pid file is replaced. Each stand-in is only reported ready
# once it answers a real request (ListStreams, ListTables, g.inject(1), PING,
# ListBuckets).
#
# Data: kinesalite and dynalite keep LevelDB stores under $STANDIN_DIR/data,
# so streams, records, leases and checkpoints survive a restart. Gremlin
# Server holds its graph in memory and saves it to $STANDIN_DIR/data/gremlin
# (graphLocation) on a clean stop, like Neptune's durable storage: a cleanly
# restarted Gremlin Server has the same graph. Redis (the shared dedup tier) runs without persistence: a
# restarted Redis starts empty. The S3 stand-in (moto, in memory) is made
# durable the Gremlin way by standins/s3/serve.py: it loads its buckets from
# $STANDIN_DIR/data/s3 at start and writes them there on a clean stop.
#
# Other knobs: STANDIN_START_TIMEOUT (seconds per stand-in, default 60 for
# node, 180 for gremlin), STANDIN_GREMLIN_HEAP (default 1g).
set -euo pipefail

# shellcheck source=lib/standins-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/standins-common.sh"

names=("$@")
((${#names[@]})) || names=("${STANDIN_NAMES[@]}")
for n in "${names[@]}"; do check_name "$n"; done

mkdir -p "$STANDIN_DIR"/{pids,ports,logs,data/kinesis,data/dynamodb,data/redis,data/s3,gremlin}
lock_standin_dir

# ---------------------------------------------------------------- install

install_node() {
	[[ -d $NODE_DIR/node_modules/kinesalite && -d $NODE_DIR/node_modules/dynalite ]] && return 0
	command -v npm >/dev/null || die "npm not found (Node 20 needed for kinesalite/dynalite)"
	(
		# Lock on package.json: two STANDIN_DIRs share standins/node.
		exec 8<"$NODE_DIR/package.json"
		flock 8
		cd "$NODE_DIR"
		[[ -d node_modules/kinesalite && -d node_modules/dynalite ]] && exit 0
		if [[ -f package-lock.json ]]; then
			log "npm ci in $NODE_DIR"
			npm ci --no-audit --no-fund >&2
		else
			log "npm install in $NODE_DIR (creates package-lock.json: commit it)"
			npm install --no-audit --no-fund >&2
		fi
	) || die "installing the node stand-ins failed"
}

# Gremlin Server's runtime jars are copied into standins/gremlin/lib
# (gitignored) once; lib/.pom.sha256 records which pom.xml they came from.
install_gremlin() {
	local want
	want=$(sha256sum "$GREMLIN_DIR/pom.xml" | cut -d' ' -f1)
	[[ -f $GREMLIN_DIR/lib/.pom.sha256 && $(cat "$GREMLIN_DIR/lib/.pom.sha256") == "$want" ]] && return 0
	command -v mvn >/dev/null || die "mvn not found (Maven 3 needed to resolve Gremlin Server)"
	command -v java >/dev/null || die "java not found (Java 11+ needed for Gremlin Server)"
	(
		exec 8<"$GREMLIN_DIR/pom.xml"
		flock 8
		cd "$GREMLIN_DIR"
		[[ -f lib/.pom.sha256 && $(cat lib/.pom.sha256) == "$want" ]] && exit 0
		log "resolving Gremlin Server from Maven Central into $GREMLIN_DIR/lib"
		rm -rf lib.tmp
		mvn -B -q dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory=lib.tmp >&2
		echo "$want" >lib.tmp/.pom.sha256
		rm -rf lib
		mv lib.tmp lib
	) || die "resolving Gremlin Server with Maven failed (see the output above)"
}

# redis-server is not installed by this script (a system package): say how.
install_redis() {
	command -v redis-server >/dev/null || die "redis-server not found (Debian: apt-get install redis-server; 7.0 or later)"
	local v
	v=$(redis-server --version | sed -n 's/.* v=\([0-9]*\)\..*/\1/p')
	[[ -n $v && $v -ge 7 ]] || die "redis-server $(redis-server --version): 7.0 or later needed (SET ... NX GET)"
}

# moto's server from PyPI into standins/s3/venv (gitignored), from the
# pinned requirements (every dependency); shared by all $STANDIN_DIRs.
S3_PROBE='import moto.server, moto.s3.models, flask, flask_cors'
install_s3() {
	[[ -x $S3_DIR/venv/bin/python ]] && "$S3_DIR/venv/bin/python" -c "$S3_PROBE" 2>/dev/null && return 0
	local py
	py=$(command -v python3.11 || command -v python3) || die "python3 not found (3.9+ with venv and pip needed for the S3 stand-in, moto)"
	"$py" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 9))' ||
		die "$py: Python 3.9+ with the venv module needed for the S3 stand-in (moto)"
	(
		exec 8<"$S3_DIR/requirements.txt"
		flock 8
		[[ -x $S3_DIR/venv/bin/python ]] && "$S3_DIR/venv/bin/python" -c "$S3_PROBE" 2>/dev/null && exit 0
		log "installing moto (S3 stand-in) from PyPI into $S3_DIR/venv"
		rm -rf "$S3_DIR/venv"
		"$py" -m venv "$S3_DIR/venv" >&2
		"$S3_DIR/venv/bin/pip" install -q --disable-pip-version-check -r "$S3_DIR/requirements.txt" >&2
		"$S3_DIR/venv/bin/python" -c "$S3_PROBE"
	) || die "installing the S3 stand-in (moto) from PyPI failed (see the output above)"
}

# ---------------------------------------------------------------- health

AMZ_AUTH='AWS4-HMAC-SHA256 Credential=local/20200101/us-east-1/svc/aws4_request, SignedHeaders=host;x-amz-date, Signature=0000000000000000000000000000000000000000000000000000000000000000'

healthy() {
	local name=$1 port=$2 out
	case "$name" in
	kinesis)
		out=$(curl -sS -m 3 -X POST "http://127.0.0.1:$port/" \
			-H 'Content-Type: application/x-amz-json-1.1' \
			-H 'X-Amz-Target: Kinesis_20131202.ListStreams' \
			-H 'X-Amz-Date: 20200101T000000Z' -H "Authorization: $AMZ_AUTH" \
			-d '{}' 2>/dev/null) || return 1
		[[ $out == *'"StreamNames"'* ]]
		;;
	dynamodb)
		out=$(curl -sS -m 3 -X POST "http://127.0.0.1:$port/" \
			-H 'Content-Type: application/x-amz-json-1.0' \
			-H 'X-Amz-Target: DynamoDB_20120810.ListTables' \
			-H 'X-Amz-Date: 20200101T000000Z' -H "Authorization: $AMZ_AUTH" \
			-d '{}' 2>/dev/null) || return 1
		[[ $out == *'"TableNames"'* ]]
		;;
	gremlin)
		out=$(curl -sS -m 5 -X POST "http://127.0.0.1:$port/gremlin" \
			-H 'Content-Type: application/json' \
			-d '{"gremlin":"g.inject(1)"}' 2>/dev/null) || return 1
		[[ $out == *'"code":200'* ]]
		;;
	redis)
		# PING over RESP inline, bounded by timeout.
		out=$(timeout 3 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$0" && printf "PING\r\n" >&3 && IFS= read -r l <&3 && echo "$l"' "$port" 2>/dev/null) || return 1
		[[ $out == +PONG* ]]
		;;
	s3)
		# ListBuckets (path-style GET /).
		out=$(curl -sS -m 3 "http://127.0.0.1:$port/" \
			-H 'X-Amz-Date: 20200101T000000Z' -H "Authorization: ${AMZ_AUTH/svc/s3}" 2>/dev/null) || return 1
		[[ $out == *'<ListAllMyBucketsResult'* ]]
		;;
	esac
}

# ---------------------------------------------------------------- start

launch() {
	local name=$1 port=$2 logf pidf
	logf=$(log_file "$name")
	pidf=$(pid_file "$name")
	echo "=== $(date -u +%FT%TZ) starting $name on 127.0.0.1:$port" >>"$logf"
	case "$name" in
	kinesis)
		# shellcheck disable=SC2016
		(cd "$NODE_DIR" && exec setsid nohup bash -c 'echo $$ >"$0"; exec "$@"' "$pidf" \
			node kinesalite.js --host 127.0.0.1 --port "$port" \
			--path "$STANDIN_DIR/data/kinesis" --shardLimit 200 \
			--createStreamMs 50 --deleteStreamMs 50 --updateStreamMs 50 \
			</dev/null >>"$logf" 2>&1 9>&-) &
		;;
	dynamodb)
		# shellcheck disable=SC2016
		(cd "$NODE_DIR" && exec setsid nohup bash -c 'echo $$ >"$0"; exec "$@"' "$pidf" \
			node dynalite.js --host 127.0.0.1 --port "$port" \
			--path "$STANDIN_DIR/data/dynamodb" \
			--createTableMs 50 --deleteTableMs 50 --updateTableMs 50 \
			</dev/null >>"$logf" 2>&1 9>&-) &
		;;
	gremlin)
		local yaml="$STANDIN_DIR/gremlin/gremlin-server.yaml"
		local props="$STANDIN_DIR/gremlin/lineageflow-tinkergraph.properties"
		# Durable like Neptune: TinkerGraph loads the graph from
		# graphLocation at start and writes it back when the server closes
		# the graph (SIGTERM, as standins-stop.sh sends; a SIGKILL loses it).
		mkdir -p "$STANDIN_DIR/data/gremlin"
		{
			cat "$GREMLIN_DIR/conf/lineageflow-tinkergraph.properties"
			echo "gremlin.tinkergraph.graphLocation=$STANDIN_DIR/data/gremlin/graph.json"
			echo "gremlin.tinkergraph.graphFormat=graphson"
		} >"$props"
		sed -e "s/^host:.*/host: 127.0.0.1/" -e "s/^port:.*/port: $port/" \
			-e "s|conf/lineageflow-tinkergraph.properties|$props|" \
			"$GREMLIN_DIR/conf/gremlin-server.yaml" >"$yaml"
		# Working directory standins/gremlin: the yaml's other "conf/..."
		# paths are relative to it.
		# shellcheck disable=SC2016
		(cd "$GREMLIN_DIR" && exec setsid nohup bash -c 'echo $$ >"$0"; exec "$@"' "$pidf" \
			java -Xms128m -Xmx"${STANDIN_GREMLIN_HEAP:-1g}" \
			-Dorg.slf4j.simpleLogger.defaultLogLevel=info \
			-Dorg.slf4j.simpleLogger.showDateTime=true \
			--add-opens=java.base/java.io=ALL-UNNAMED \
			--add-opens=java.base/java.nio=ALL-UNNAMED \
			--add-opens=java.base/sun.nio.cs=ALL-UNNAMED \
			--add-opens=java.base/java.lang=ALL-UNNAMED \
			--add-opens=java.base/java.lang.invoke=ALL-UNNAMED \
			--add-opens=java.base/java.lang.reflect=ALL-UNNAMED \
			--add-opens=java.base/java.util=ALL-UNNAMED \
			--add-opens=java.base/java.util.concurrent=ALL-UNNAMED \
			--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED \
			--add-opens=java.base/java.net=ALL-UNNAMED \
			-cp "$GREMLIN_DIR/lib/*" \
			org.apache.tinkerpop.gremlin.server.GremlinServer "$yaml" \
			</dev/null >>"$logf" 2>&1 9>&-) &
		;;
	redis)
		# Bound to 127.0.0.1, no persistence (--save "", no AOF), in the
		# foreground. --set-proc-title no keeps the command line (which
		# names $STANDIN_DIR: ours_alive checks it) as it was started.
		# shellcheck disable=SC2016
		(cd "$STANDIN_DIR/data/redis" && exec setsid nohup bash -c 'echo $$ >"$0"; exec "$@"' "$pidf" \
			redis-server --bind 127.0.0.1 --port "$port" --dir "$STANDIN_DIR/data/redis" \
			--save "" --appendonly no --daemonize no --set-proc-title no \
			--protected-mode yes --loglevel notice \
			</dev/null >>"$logf" 2>&1 9>&-) &
		;;
	s3)
		# serve.py runs moto's server and keeps its buckets under
		# --data (which names $STANDIN_DIR: ours_alive checks it).
		# shellcheck disable=SC2016
		(cd "$S3_DIR" && exec setsid nohup bash -c 'echo $$ >"$0"; exec "$@"' "$pidf" \
			"$S3_DIR/venv/bin/python" -u serve.py --host 127.0.0.1 --port "$port" \
			--data "$STANDIN_DIR/data/s3" \
			</dev/null >>"$logf" 2>&1 9>&-) &
		;;
	esac
	# The pid file is written by the child before exec; wait for it briefly.
	local i
	for ((i = 0; i < 100; i++)); do
		[[ -s $pidf ]] && break
		sleep 0.05
	done
	[[ -s $pidf ]] || die "$name: no pid file written (see $logf)"
	echo "$port" >"$(port_file "$name")"
}

fail_with_log() {
	local name=$1 msg=$2
	echo "standins: $name: $msg" >&2
	echo "---- last lines of $(log_file "$name") ----" >&2
	tail -n 40 "$(log_file "$name")" >&2 || true
	echo "----" >&2
	exit 1
}

wait_healthy() {
	local name=$1 port=$2 pid=$3 timeout=$4 start now
	start=$(date +%s.%N)
	while :; do
		if healthy "$name" "$port"; then
			now=$(date +%s.%N)
			log "$name ready on $(endpoint "$name" "$port") (pid $pid, $(awk -v a="$start" -v b="$now" 'BEGIN{printf "%.1f", b-a}') s)"
			return 0
		fi
		if ! ours_alive "$pid"; then
			rm -f "$(pid_file "$name")" "$(port_file "$name")"
			fail_with_log "$name" "process $pid exited before answering"
		fi
		now=$(date +%s)
		((now - ${start%.*} < timeout)) || fail_with_log "$name" "no answer on port $port within ${timeout}s (pid $pid still running; stop it with scripts/standins-stop.sh $name)"
		sleep 0.2
	done
}

start_one() {
	local name=$1 port pid rport timeout
	port=$(default_port "$name")
	timeout=${STANDIN_START_TIMEOUT:-$([[ $name == gremlin ]] && echo 180 || echo 60)}
	pid=$(recorded_pid "$name")
	rport=$(recorded_port "$name")
	if ours_alive "$pid"; then
		[[ -n $rport ]] || rport=$port
		if [[ $rport != "$port" ]]; then
			log "$name: already running on port $rport (pid $pid); requested $port ignored: stop it first to move it"
		fi
		# Running: make sure it answers (it may still be starting).
		wait_healthy "$name" "$rport" "$pid" "$timeout"
		return 0
	fi
	if [[ -n $pid ]]; then
		log "$name: removing stale pid file (pid $pid not running)"
	fi
	rm -f "$(pid_file "$name")" "$(port_file "$name")"
	if port_open "$port"; then
		die "$name: port 127.0.0.1:$port is already in use by another process (set STANDIN_$(tr a-z A-Z <<<"$name")_PORT)"
	fi
	launch "$name" "$port"
	wait_healthy "$name" "$port" "$(recorded_pid "$name")" "$timeout"
}

need_node=0 need_gremlin=0 need_redis=0 need_s3=0
for n in "${names[@]}"; do
	case "$n" in kinesis | dynamodb) need_node=1 ;; gremlin) need_gremlin=1 ;; redis) need_redis=1 ;; s3) need_s3=1 ;; esac
done
command -v curl >/dev/null || die "curl not found"
((need_node)) && install_node
((need_gremlin)) && install_gremlin
((need_redis)) && install_redis
((need_s3)) && install_s3

# Start in parallel (Gremlin Server is the slow one), then wait for each.
rc=0
pids=()
for n in "${names[@]}"; do
	start_one "$n" &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || rc=1; done
write_env
((rc == 0)) || die "some stand-ins did not start (see above)"
log "env written to $STANDIN_DIR/env"
cat "$STANDIN_DIR/env"
