#!/usr/bin/env bash
# Offline checks of what cannot run here (no Docker engine, no cluster):
#  - Dockerfile: stages, non-root USER, the exact build flags; the binary
#    built with those flags is static (internal/deploycheck);
#  - README.md's Configuration table matches every command's --help;
#  - deploy/base: rendered with the kustomize API, every object decoded
#    strictly into the Kubernetes API types (schema check), then checked
#    against the code (flags/env vars, probes, data dir, shutdown deadline);
#  - docker-compose.yml: services, ports, env vars are flags of the command
#    each service runs, Gremlin Server mounts the stand-in's own config.
# Needs only Go and the module proxy (or a warm module cache).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== Dockerfile, static binary, README configuration table"
go test -count=1 ./internal/deploycheck/

echo "== kustomize base and docker-compose.yml (module deploy/check)"
cd deploy/check
go mod tidy -diff
go vet ./...
go test -count=1 ./...
