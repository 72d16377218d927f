# stormwatch — build, test and benchmark targets. `make test` is the README's test command and
# what CI runs.
GO       ?= go
BIN      := $(CURDIR)/bin
PROMTOOL := $(BIN)/promtool
PKGS     := ./...
PROMETHEUS := $(BIN)/prometheus
GENERATED  := examples/generated
STORMWATCH := $(GO) run ./cmd/stormwatch

.PHONY: all test unit lint fmt-check vet tools bench e2e build clean generate generated-check conformance demo

all: build test

build:
	$(GO) build $(PKGS)

## test: everything CI checks (formatting, vet, race-enabled unit tests, generated-rule checks).
test: tools lint unit generated-check conformance

lint: fmt-check vet

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

unit:
	$(GO) test -race -count=1 $(PKGS)

## generate: refresh the checked-in default output (rules, tests, runbooks, dashboards).
generate:
	rm -rf $(GENERATED)
	$(STORMWATCH) generate all -o $(GENERATED)

## generated-check: regenerate the defaults into a temp dir, fail on drift from
## examples/generated, then lint and unit-test the fresh rules with promtool 3.16.
generated-check:
	@test -x $(PROMTOOL) || { echo "$(PROMTOOL) missing: run 'make tools' (scripts/install-tools.sh)"; exit 1; }
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	$(STORMWATCH) generate all -o "$$tmp" >/dev/null && \
	{ diff -r "$$tmp" $(GENERATED) || { echo "$(GENERATED) is stale: run 'make generate' and commit the result"; exit 1; }; } && \
	$(PROMTOOL) check rules --lint=all --lint-fatal "$$tmp/stormwatch-rules.yaml" && \
	$(PROMTOOL) test rules "$$tmp/stormwatch-rules.test.yaml"

## conformance: the separate module that parses every generated query with the PromQL parser
## of Prometheus 3.16.
conformance:
	cd conformance && $(GO) vet ./... && $(GO) test -count=1 ./...

## e2e: real Prometheus 3.16 on 127.0.0.1 scraping examples/breaker, with generated rules.
e2e: tools
	$(GO) test -tags e2e -count=1 -timeout 3m -v ./e2e/
	$(GO) test -tags e2e -count=1 -timeout 10m -v ./cmd/stormwatch/internal/demo/e2e/

## demo: the first command to run — `stormwatch demo` on 127.0.0.1:9464 (override with DEMO_ARGS).
DEMO_ARGS ?= --scenario outage --duration 2m
demo:
	$(GO) build -o $(BIN)/stormwatch ./cmd/stormwatch
	$(BIN)/stormwatch demo $(DEMO_ARGS)

## tools: promtool and prometheus 3.16 into ./bin (reused when present).
tools:
	scripts/install-tools.sh

## bench: library benchmarks and peer comparisons (separate module under bench/).
bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)
	cd bench && $(GO) test -run '^$$' -bench . -benchmem -cpu 1,2 ./...

clean:
	rm -rf out

## install-check: the install paths README gives, run as a user would: from a clone
## (`go build -o bin/stormwatch ./cmd/stormwatch`, then `bin/stormwatch generate`) and in a
## throwaway user module (`go get -tool` + `go tool stormwatch generate`, offline through a
## replace directive); promtool checks and tests what each generated. Needs bin/promtool.
.PHONY: install-check
install-check:
	scripts/check-install.sh
