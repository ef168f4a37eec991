#!/usr/bin/env bash
# `make test`: the whole test suite, as CI runs it. Starts its own stand-ins
# (own directory and ports, so a demo or a dev instance can keep running),
# and stops exactly those at the end, whatever happens.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

export STANDIN_DIR="${TEST_STANDIN_DIR:-$ROOT/.standins/test}"
export STANDIN_KINESIS_PORT="${TEST_KINESIS_PORT:-14567}"
export STANDIN_DYNAMODB_PORT="${TEST_DYNAMODB_PORT:-14568}"
export STANDIN_GREMLIN_PORT="${TEST_GREMLIN_PORT:-18182}"
export STANDIN_REDIS_PORT="${TEST_REDIS_PORT:-16379}"
export STANDIN_S3_PORT="${TEST_S3_PORT:-14569}"
export LINEAGEFLOW_REQUIRE_STANDINS=1
# The tests read the endpoints from $STANDIN_DIR/env, not from the shell.
unset LINEAGEFLOW_KINESIS_ENDPOINT LINEAGEFLOW_DYNAMODB_ENDPOINT LINEAGEFLOW_GREMLIN_ENDPOINT LINEAGEFLOW_REDIS_ENDPOINT LINEAGEFLOW_S3_ENDPOINT

step() { printf '\n== %s\n' "$*"; }

step "format, go.mod tidy, vet, lint"
make -s fmt-check
make -s tidy-check
go vet ./...
if [ "${SKIP_LINT:-}" = 1 ]; then echo "lint skipped (SKIP_LINT=1)"
elif [ -x bin/golangci-lint ]; then bin/golangci-lint run ./...
else make -s lint; fi

step "deployment manifests, compose file, Dockerfile (offline schema checks)"
bash scripts/check-deploy.sh

step "start stand-ins ($STANDIN_DIR)"
stop_standins() { bash scripts/standins-stop.sh || true; }
trap stop_standins EXIT
bash scripts/standins-start.sh

step "race detector on the concurrent packages (short mode; the Makefile's RACE_PKGS)"
make -s test-race

step "all tests, integration tests on the stand-ins"
# The explorer's tests load their fixture into a graph they first empty:
# they run after the others, one package at a time, so no other package's
# graph is dropped under it.
go test -count=1 -timeout 40m $(go list ./... | grep -v '/explorer')

step "explorer tests (API, marquez-python client, browser tests in headless Chromium)"
go test -count=1 -p 1 -timeout 20m ./explorer/...

if [ -f scripts/e2e.sh ]; then
	step "short fault matrix"
	E2E_SHORT=1 E2E_STANDIN_DIR="$STANDIN_DIR" E2E_KINESIS_PORT="$STANDIN_KINESIS_PORT" \
		E2E_DYNAMODB_PORT="$STANDIN_DYNAMODB_PORT" E2E_GREMLIN_PORT="$STANDIN_GREMLIN_PORT" \
		E2E_REDIS_PORT="$STANDIN_REDIS_PORT" E2E_S3_PORT="$STANDIN_S3_PORT" bash scripts/e2e.sh
fi
