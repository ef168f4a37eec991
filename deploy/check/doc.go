// Package check validates what CI cannot run here: the kustomize base in
// deploy/base (rendered with the kustomize API, each object decoded
// strictly into the Kubernetes API types, then checked against the code's
// flags and endpoints) and docker-compose.yml. It is a module of its own so
// that the service's module does not depend on the Kubernetes API. Run it
// with scripts/check-deploy.sh.
package check
