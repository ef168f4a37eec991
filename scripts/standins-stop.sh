#!/usr/bin/env bash
# Stop the local stand-ins started by scripts/standins-start.sh.
#
#   scripts/standins-stop.sh [kinesis] [dynamodb] [gremlin] [redis] [s3]   # no args: all
#
# Stops exactly the recorded PIDs of $STANDIN_DIR (default <repo>/.standins):
# SIGTERM, a bounded wait (STANDIN_STOP_TIMEOUT seconds, default 15), then
# SIGKILL. Removes their pid and port files and rewrites $STANDIN_DIR/env
# with the stand-ins still running. Data under $STANDIN_DIR/data is kept
# (kinesalite streams, dynalite tables); Gremlin Server's graph is in memory
# and is lost, and so are Redis's keys (no persistence); the S3 stand-in
# writes its buckets to $STANDIN_DIR/data/s3 on SIGTERM and loads them at
# start. Naming one stand-in restarts-in-two-steps just that one, e.g.
#   scripts/standins-stop.sh gremlin && scripts/standins-start.sh gremlin
set -euo pipefail

# shellcheck source=lib/standins-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/standins-common.sh"

names=("$@")
((${#names[@]})) || names=("${STANDIN_NAMES[@]}")
for n in "${names[@]}"; do check_name "$n"; done

mkdir -p "$STANDIN_DIR"
lock_standin_dir

timeout=${STANDIN_STOP_TIMEOUT:-15}

gone() { ! ours_alive "$1"; }

stop_one() {
	local name=$1 pid deadline
	pid=$(recorded_pid "$name")
	if [[ -z $pid ]]; then
		log "$name: not running (no pid file)"
	elif gone "$pid"; then
		log "$name: not running (stale pid $pid)"
	else
		kill -TERM "$pid" 2>/dev/null || true
		deadline=$(($(date +%s) + timeout))
		while ! gone "$pid" && (($(date +%s) < deadline)); do sleep 0.1; done
		if ! gone "$pid"; then
			log "$name: pid $pid still running after ${timeout}s, sending SIGKILL"
			kill -KILL "$pid" 2>/dev/null || true
			deadline=$(($(date +%s) + 5))
			while ! gone "$pid" && (($(date +%s) < deadline)); do sleep 0.1; done
			gone "$pid" || die "$name: pid $pid survived SIGKILL"
		fi
		log "$name: stopped (pid $pid)"
		echo "=== $(date -u +%FT%TZ) stopped $name (pid $pid)" >>"$(log_file "$name")" 2>/dev/null || true
	fi
	rm -f "$(pid_file "$name")" "$(port_file "$name")"
}

for n in "${names[@]}"; do stop_one "$n"; done
write_env
