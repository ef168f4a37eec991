# lineageflow: see README.md. Every target runs on a fresh machine with Go,
# Node 20/npm and Java 17/Maven; the stand-ins are installed by the scripts.
GO              ?= go
BIN             := $(CURDIR)/bin
GOLANGCI_VERSION := v2.15.0
GOLANGCI        := $(BIN)/golangci-lint
# Packages with goroutines of their own: always tested with the race
# detector (make test-race; scripts/test.sh runs that target).
RACE_PKGS       := ./window/... ./checkpoint/... ./processor/... ./sink/... ./internal/replay/... ./internal/dedupredis/... ./testkit/gremlinproxy/... ./collect/...
# The unit tier (make test-fast): packages whose -short tests need no
# stand-in, JVM, Chromium or subprocess build. Their integration tests skip
# themselves: test-fast hides the stand-ins (STANDIN_DIR empty, no endpoint
# variables).
FAST_PKGS       := ./lineage/... ./window/... ./checkpoint/... ./internal/enc/... ./internal/kpl/... ./internal/keyspace/... \
	./semantics/... ./graph/... ./internal/gen/... ./internal/cli/... ./internal/codecheck/... ./internal/doccheck/... ./verify/... ./processor/... ./sink/... ./ops/... ./source/... ./collect/...
# The processor's randomized and crash suites against the reference model
# (a minute and more even in -short) run in test-unit and test, not here.
FAST_SKIP       := ^(TestRandomizedAgainstReference.*|TestCrashAtArbitraryPoints.*|TestDiskDiesAtOperationI|TestHandoffSplitMerge|TestRunStoreMoves|TestStreamingRunStoreMoves)$$

.PHONY: tools all build test test-airflow test-unit test-fast test-race lint fmt fmt-check vet tidy-check bench demo e2e localstack standins-up standins-down clean

all: build

build:
	$(GO) build -o $(BIN)/lineageflow ./cmd/lineageflow

## test: everything CI runs: format, vet, lint, unit + race + integration tests
## on freshly started stand-ins (own ports, stopped at the end), short fault matrix.
test:
	bash scripts/test.sh

## test-airflow: Apache Airflow 3 + its OpenLineage provider, `airflow dags test` through collect
## (outside CI: minutes of pip install and an Airflow database migration).
test-airflow:
	bash scripts/producer-venvs.sh airflow
	LINEAGEFLOW_AIRFLOW_TEST=1 $(GO) test -count=1 -run TestAirflowDagsTest -v ./collect/

test-unit:
	$(GO) test -short ./...

## test-fast: the unit tier, for the edit-test loop (under a minute with a warm build cache).
test-fast:
	env -u LINEAGEFLOW_KINESIS_ENDPOINT -u LINEAGEFLOW_DYNAMODB_ENDPOINT -u LINEAGEFLOW_GREMLIN_ENDPOINT \
		-u LINEAGEFLOW_REDIS_ENDPOINT -u LINEAGEFLOW_S3_ENDPOINT -u LINEAGEFLOW_REQUIRE_STANDINS STANDIN_DIR=$(CURDIR)/.standins/none \
		$(GO) test -short -skip '$(FAST_SKIP)' $(FAST_PKGS)

test-race:
	$(GO) test -race -short -count=1 $(RACE_PKGS)

## tools: install the pinned linter into bin/.
tools: $(GOLANGCI)

$(GOLANGCI):
	GOBIN=$(BIN) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_VERSION)

lint: $(GOLANGCI)
	$(GOLANGCI) run ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

tidy-check:
	$(GO) mod tidy -diff

bench:
	$(GO) test -run '^$$' -bench . -benchtime 2s ./...

## localstack: the LocalStack conformance test.
# LocalStack conformance (outside CI: ~4-5 minutes, installs LocalStack from
# PyPI into .localstack/venv): replay + two workers + a shard split + verify
# over CBOR (LOCALSTACK_PROTOCOL=json for JSON). README, "Running with LocalStack".
localstack:
	bash scripts/localstack.sh

## demo: the main job on local stand-ins: replay testdata/ through the whole pipeline.
demo:
	bash scripts/demo.sh

e2e:
	bash scripts/e2e.sh

standins-up:
	bash scripts/standins-start.sh

standins-down:
	bash scripts/standins-stop.sh

clean:
	rm -rf $(BIN)
