#!/usr/bin/env bash
# `make e2e`: the fault matrix (see tools/e2e/main.go) on real processes on
# loopback. Uses the stand-ins of E2E_STANDIN_DIR (default .standins/e2e,
# own ports), starting them if needed and stopping them at the end only if
# it started them. E2E_SHORT=1 runs the CI subset. Extra arguments go to the
# e2e program (e.g. -scenarios kill,split or -break early-checkpoint;
# -scenarios hostile: hostile producers mixed with good traffic, issue 26).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
export STANDIN_DIR="${E2E_STANDIN_DIR:-$ROOT/.standins/e2e}"
export STANDIN_KINESIS_PORT="${E2E_KINESIS_PORT:-44567}"
export STANDIN_DYNAMODB_PORT="${E2E_DYNAMODB_PORT:-44568}"
export STANDIN_GREMLIN_PORT="${E2E_GREMLIN_PORT:-48182}"
export STANDIN_REDIS_PORT="${E2E_REDIS_PORT:-44379}"
export STANDIN_S3_PORT="${E2E_S3_PORT:-44569}"
unset LINEAGEFLOW_KINESIS_ENDPOINT LINEAGEFLOW_DYNAMODB_ENDPOINT LINEAGEFLOW_GREMLIN_ENDPOINT LINEAGEFLOW_REDIS_ENDPOINT LINEAGEFLOW_S3_ENDPOINT

started=0
if [ ! -f "$STANDIN_DIR/env" ]; then started=1; fi
cleanup() { if [ "$started" = 1 ]; then bash scripts/standins-stop.sh >/dev/null || true; fi; }
trap cleanup EXIT
# Redis (the shared dedup tier) only for the join-redis scenario, and only
# where redis-server is installed (that scenario fails without it).
# The S3 stand-in (moto) for the event archive's scenarios.
names=(kinesis dynamodb gremlin s3)
if command -v redis-server >/dev/null; then names+=(redis); fi
bash scripts/standins-start.sh "${names[@]}" >/dev/null

go build -o "$STANDIN_DIR/e2e-bin" ./tools/e2e
"$STANDIN_DIR/e2e-bin" "$@"
