#!/usr/bin/env bash
# Offline checks of what cannot run here (no Docker engine, no cluster), all
# in the module deploy/check (it needs the Kubernetes API types; see its
# doc.go):
#  - Dockerfile: stages, non-root USER, the exact build flags; the binary
#    built with those flags is static;
#  - .dockerignore keeps every file of `go list -deps ./cmd/lineageflow`
#    and no node_modules;
#  - the binary links nothing under testkit/ or tools/; processor/ does not
#    depend on the AWS SDK or the KCL;
#  - README.md's Configuration table matches every command's --help;
#  - deploy/base: rendered with the kustomize API, every object decoded
#    strictly into the Kubernetes API types (schema check), then checked
#    against the code (flags/env vars, probes, data dir, shutdown deadline);
#  - deploy/explorer (base and overlays): the same strict decoding; selectors,
#    IRSA, a Neptune reader endpoint, serve's flags only, authentication on,
#    probes on the open health route, the Ingress and proxy wiring;
#  - docker-compose.yml: services, ports, env vars are flags of the command
#    each service runs, Gremlin Server mounts the stand-in's own config.
# Needs only Go and the module proxy (or a warm module cache).
set -euo pipefail
cd "$(dirname "$0")/../deploy/check"

echo "== Dockerfile, .dockerignore, static binary, dependencies, README table, kustomize base and explorer, docker-compose.yml (module deploy/check)"
go mod tidy -diff
go vet ./...
go test -count=1 ./...
