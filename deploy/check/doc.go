// Package check validates offline what cannot run here (no Docker engine, no
// cluster), against the code. Tests only; run them with
// scripts/check-deploy.sh, or `go test ./...` in this directory.
//
//   - Dockerfile (TestDockerfile): two stages, a golang builder not older than
//     go.mod's go directive, the exact build command (CGO_ENABLED=0,
//     -trimpath, -ldflags "-s -w"), a distroless/static (or scratch) final
//     stage that copies only the binary, a non-root USER, the ENTRYPOINT in
//     exec form, EXPOSE 9090 only.
//   - The binary (TestStaticBinary): built once with the Dockerfile's flags
//     and shared by every test that runs it; it is a static ELF (no
//     interpreter, no dynamic section, no shared libraries), stripped, with
//     no build-machine paths.
//   - .dockerignore (TestDockerignoreKeepsTheBuild): matched with Docker's
//     own pattern matcher, it keeps go.mod, go.sum and every file of every
//     package of `go list -deps ./cmd/lineageflow`, and excludes every
//     node_modules.
//   - Dependencies (TestBinaryLinksNoTestOnlyPackage,
//     TestProcessorHasNoAWSOrKCL): the binary links nothing under testkit/ or
//     tools/; nothing under processor/ depends on the AWS SDK or the KCL
//     (skipped while processor/worker.go exists).
//   - README.md (TestReadmeConfiguration): the configuration table is the one
//     generated from each command's --help (regenerate with
//     `go test -run TestReadmeConfiguration -rewrite` here), and every flag's
//     variable is LINEAGEFLOW_ + its name.
//   - deploy/base (TestKustomizeBase, TestStrictDecodingCatchesMistakes):
//     rendered with the kustomize API, every object decoded strictly into
//     the Kubernetes API types, then checked against the code: selectors,
//     headless Service, IRSA, PodDisruptionBudget, environment variables
//     that are flags of `run`, the Pebble claim on -data-dir, probes on the
//     HTTP port, resources, the termination grace against -shutdown-grace,
//     non-root.
//   - docker-compose.yml (TestCompose): decoded strictly; services, ports on
//     127.0.0.1, environment variables that are flags of the command each
//     service runs, the data directory on a named volume, the one-shot
//     replay and verify of every testdata/*.ndjson, Gremlin Server with the
//     stand-in's version and its own configuration files.
//
// There is one --help parser (parseHelp) and one build of the binary
// (binary). It is a module of its own so that the service's module does not
// depend on the Kubernetes API.
package check
