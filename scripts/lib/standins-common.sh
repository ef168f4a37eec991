# Shared by scripts/standins-start.sh and scripts/standins-stop.sh (sourced).
#
# Layout under $STANDIN_DIR (default <repo>/.standins):
#   pids/<name>.pid    PID of the running stand-in (node or java process)
#   ports/<name>.port  its port
#   logs/<name>.log    its stdout/stderr (appended, one header per start)
#   data/kinesis       kinesalite LevelDB store (persistent)
#   data/dynamodb      dynalite LevelDB store (persistent: KCL leases survive)
#   gremlin/           runtime copy of gremlin-server.yaml (graph in memory)
#   data/redis         redis-server's working directory (no persistence)
#   data/s3            the S3 stand-in's buckets (s3.pickle, written on a clean stop)
#   env                KEY=value lines for tests and the service
# Names: kinesis, dynamodb, gremlin, redis, s3.

STANDIN_NAMES=(kinesis dynamodb gremlin redis s3)

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
STANDIN_DIR=${STANDIN_DIR:-$REPO_ROOT/.standins}
mkdir -p "$STANDIN_DIR"
STANDIN_DIR=$(cd "$STANDIN_DIR" && pwd)
NODE_DIR=$REPO_ROOT/standins/node
GREMLIN_DIR=$REPO_ROOT/standins/gremlin
S3_DIR=$REPO_ROOT/standins/s3

die() { echo "standins: $*" >&2; exit 1; }
log() { echo "standins: $*" >&2; }

check_name() {
	case "$1" in
	kinesis | dynamodb | gremlin | redis | s3) ;;
	*) die "unknown stand-in '$1' (expected: ${STANDIN_NAMES[*]})" ;;
	esac
}

pid_file() { echo "$STANDIN_DIR/pids/$1.pid"; }
port_file() { echo "$STANDIN_DIR/ports/$1.port"; }
log_file() { echo "$STANDIN_DIR/logs/$1.log"; }

default_port() {
	case "$1" in
	kinesis) echo "${STANDIN_KINESIS_PORT:-4567}" ;;
	dynamodb) echo "${STANDIN_DYNAMODB_PORT:-4568}" ;;
	gremlin) echo "${STANDIN_GREMLIN_PORT:-8182}" ;;
	redis) echo "${STANDIN_REDIS_PORT:-6379}" ;;
	s3) echo "${STANDIN_S3_PORT:-4569}" ;;
	esac
}

recorded_pid() {
	local f
	f=$(pid_file "$1")
	[[ -f $f ]] && tr -dc 0-9 <"$f"
	return 0
}

recorded_port() {
	local f
	f=$(port_file "$1")
	[[ -f $f ]] && tr -dc 0-9 <"$f"
	return 0
}

# ours_alive PID: the process exists and is a stand-in of THIS $STANDIN_DIR
# (its command line names the directory), so a recycled PID is not taken for
# ours.
ours_alive() {
	local pid=$1
	[[ -n $pid ]] || return 1
	kill -0 "$pid" 2>/dev/null || return 1
	[[ -r /proc/$pid/cmdline ]] || return 1
	# A zombie is not alive.
	[[ $(awk '/^State:/ {print $2}' "/proc/$pid/status" 2>/dev/null) != Z ]] || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$STANDIN_DIR/"
}

# port_open PORT: something accepts TCP connections on 127.0.0.1:PORT.
port_open() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

endpoint() {
	case "$1" in
	kinesis | dynamodb | s3) echo "http://127.0.0.1:$2" ;;
	gremlin) echo "ws://127.0.0.1:$2/gremlin" ;;
	redis) echo "redis://127.0.0.1:$2/0" ;;
	esac
}

env_key() {
	case "$1" in
	kinesis) echo LINEAGEFLOW_KINESIS_ENDPOINT ;;
	dynamodb) echo LINEAGEFLOW_DYNAMODB_ENDPOINT ;;
	gremlin) echo LINEAGEFLOW_GREMLIN_ENDPOINT ;;
	redis) echo LINEAGEFLOW_REDIS_ENDPOINT ;;
	s3) echo LINEAGEFLOW_S3_ENDPOINT ;;
	esac
}

# write_env: $STANDIN_DIR/env with the endpoints of the stand-ins running
# now; removed when none runs.
write_env() {
	local tmp="$STANDIN_DIR/env.tmp.$$" n pid port any=0
	{
		echo "# Written by scripts/standins-start.sh / standins-stop.sh; source it or let testkit/testenv read it."
		for n in "${STANDIN_NAMES[@]}"; do
			pid=$(recorded_pid "$n")
			port=$(recorded_port "$n")
			if ours_alive "$pid" && [[ -n $port ]]; then
				echo "$(env_key "$n")=$(endpoint "$n" "$port")"
				any=1
			fi
		done
		echo "AWS_REGION=us-east-1"
		echo "AWS_ACCESS_KEY_ID=local"
		echo "AWS_SECRET_ACCESS_KEY=local"
		# The same, under the names lineageflow's flags read (see README).
		echo "LINEAGEFLOW_REGION=us-east-1"
		echo "LINEAGEFLOW_ACCESS_KEY_ID=local"
		echo "LINEAGEFLOW_SECRET_ACCESS_KEY=local"
	} >"$tmp"
	if ((any)); then
		mv -f "$tmp" "$STANDIN_DIR/env"
	else
		rm -f "$tmp" "$STANDIN_DIR/env"
	fi
}

# Serialise start/stop runs on one $STANDIN_DIR.
lock_standin_dir() {
	exec 9>"$STANDIN_DIR/.lock"
	flock -w 600 9 || die "another standins script holds $STANDIN_DIR/.lock"
}
