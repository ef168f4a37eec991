# syntax=docker/dockerfile:1
# lineageflow: a static binary on distroless, run as non-root.
#   docker build -t lineageflow:dev .
# The build flags below are checked by deploy/check (TestDockerfile;
# TestStaticBinary builds with exactly these flags and checks the result is
# static; TestDockerignoreKeepsTheBuild checks .dockerignore keeps every
# package the build needs), since this image cannot be built in CI.

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/lineageflow ./cmd/lineageflow \
    && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/lineageflow /usr/local/bin/lineageflow
# Pebble state (-data-dir), owned by the non-root user so that a fresh
# volume mounted here (compose) is writable; Kubernetes also sets fsGroup.
COPY --from=build --chown=65532:65532 /out/data /var/lib/lineageflow
WORKDIR /var/lib/lineageflow
ENV LINEAGEFLOW_DATA_DIR=/var/lib/lineageflow
USER 65532:65532
EXPOSE 9090
ENTRYPOINT ["/usr/local/bin/lineageflow"]
CMD ["run"]
