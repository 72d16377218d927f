# stormwatch — build, test and benchmark targets. `make test` is the README's test command and
# what CI runs.
GO       ?= go
BIN      := $(CURDIR)/bin
PROMTOOL := $(BIN)/promtool
PKGS     := ./...
PROMETHEUS := $(BIN)/prometheus
GENERATED  := examples/generated
STORMWATCH := $(GO) run ./cmd/stormwatch
# TESTCOUNT: CI (CI=true) runs every test; locally Go's test cache skips the packages whose
# inputs did not change since they last passed, so a warm `make test` reruns only what changed
# (the tool checks too: their tests stat bin/vmalert, bin/amtool and bin/pint, so a new binary
# is a new run).
TESTCOUNT  ?= $(if $(CI),-count=1,)

.PHONY: all test unit rules-matrix lint tidy-check fmt-check vet tools tools-promtool tools-prometheus bench e2e build clean generate generated-check conformance grpcx otelx demo demo-prometheus

all: build test

build:
	$(GO) build $(PKGS)

## test: everything CI checks (formatting, vet, race-enabled unit tests, generated-rule checks).
## It needs promtool only (not the Prometheus server, which `make e2e` uses).
test: tools-promtool lint unit rules-matrix generated-check conformance grpcx otelx install-check alertmanager-check

lint: fmt-check vet tidy-check

## tidy-check: every module's go.mod and go.sum are what `go mod tidy` writes.
tidy-check:
	@for m in . bench conformance instrument/grpcx collector/otelx; do \
		(cd $$m && $(GO) mod tidy -diff >/dev/null) || { echo "$$m: go.mod/go.sum are not tidy: run 'go mod tidy' there"; exit 1; }; \
	done

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)
	$(GO) vet -tags e2e ./e2e/... ./cmd/stormwatch/internal/demo/e2e/...
	$(GO) vet -tags promtoolmatrix ./rules/ ./cmd/stormwatch/

## unit: the unit tests, with the race detector. They run on injected clocks and scripted
## fakes: wall-clock scenarios are in `make e2e`.
unit:
	$(GO) test -race $(TESTCOUNT) -timeout 20m $(PKGS)

## rules-matrix: promtool check and test the generated rules of a matrix of configurations
## (thresholds at both ends, short and long windows and fors, namespace, disabled alerts); the
## unit suite checks the defaults and a group_by + selector configuration.
rules-matrix: tools-promtool
	$(GO) test -tags promtoolmatrix $(TESTCOUNT) -timeout 30m -run 'TestPromtoolAcceptsTheConfigMatrix|TestHostileConfigsPassPromtool' ./rules/ ./cmd/stormwatch/

## generate: refresh the checked-in output: the defaults (rules, tests, runbooks, dashboards) in
## examples/generated, and in examples/generated-slo what the SLO example config adds to them
## (a drift test in `make unit` compares both).
SLO_EXAMPLE   := examples/slo/stormwatch.yaml
GENERATED_SLO := examples/generated-slo
generate:
	rm -rf $(GENERATED)
	$(STORMWATCH) generate all -o $(GENERATED)
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	$(STORMWATCH) generate all -c $(SLO_EXAMPLE) -o "$$tmp" >/dev/null && rm -rf $(GENERATED_SLO) && \
	(cd "$$tmp" && find . -type f | sort) | while read -r f; do \
		cmp -s "$$tmp/$$f" "$(GENERATED)/$$f" || { mkdir -p "$(GENERATED_SLO)/$$(dirname "$$f")" && cp "$$tmp/$$f" "$(GENERATED_SLO)/$$f"; }; done

## generated-check: regenerate the defaults into a temp dir, fail on drift from
## examples/generated, then lint and unit-test the fresh rules with promtool 3.16 (through
## scripts/promtool.sh: cmd/stormwatch's tests passed the same file set already, so promtool is
## not run twice on it).
generated-check:
	@test -x $(PROMTOOL) || { echo "$(PROMTOOL) missing: run 'make tools-promtool' (scripts/install-tools.sh promtool)"; exit 1; }
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	$(STORMWATCH) generate all -o "$$tmp" >/dev/null && \
	{ diff -r "$$tmp" $(GENERATED) || { echo "$(GENERATED) is stale: run 'make generate' and commit the result"; exit 1; }; } && \
	scripts/promtool.sh "$$tmp" check rules --lint=all --lint-fatal stormwatch-rules.yaml && \
	scripts/promtool.sh "$$tmp" test rules stormwatch-rules.test.yaml

## conformance: the separate module that parses every generated query with the PromQL parser
## of Prometheus 3.16.
conformance:
	cd conformance && $(GO) vet ./... && $(GO) test $(TESTCOUNT) ./...

## grpcx: the gRPC interceptors, a module of their own (instrument/grpcx) that `./...` does not
## reach: vet and race-enabled tests, its example included; a test there asserts that the main
## module's build list holds no gRPC.
grpcx:
	cd instrument/grpcx && $(GO) vet ./... && $(GO) test -race $(TESTCOUNT) ./...

## otelx: the OpenTelemetry bridge, a module of its own (collector/otelx) that `./...` does not
## reach: vet (its e2e test included) and race-enabled tests; a test there asserts that the
## main module's build list holds no OpenTelemetry.
otelx:
	cd collector/otelx && $(GO) vet ./... && $(GO) vet -tags e2e ./... && $(GO) test -race $(TESTCOUNT) ./...

## e2e: real Prometheus 3.16, Alertmanager 0.35 and VictoriaMetrics on 127.0.0.1:
## examples/breaker with generated rules, the demo's scenarios (wall clock), the scenario
## matrix and its backtest, the demo on Prometheus with the demo profile, `stormwatch demo
## --prometheus`, vmalert on the VictoriaMetrics target, and the OpenTelemetry bridge pushing
## OTLP to Prometheus's OTLP receiver (collector/otelx). The packages run at once
## (scripts/e2e.sh): they wait on wall clocks far more than they compute.
e2e: tools-prometheus tools-alertmanager tools-victoriametrics
	$(GO) vet -tags e2e ./e2e/... ./cmd/stormwatch/internal/demo/e2e/...
	GO=$(GO) scripts/e2e.sh

## demo: the first command to run — `stormwatch demo` on 127.0.0.1:9464 (override with DEMO_ARGS).
DEMO_ARGS ?= --scenario outage --duration 2m
demo: $(BIN)/stormwatch
	$(BIN)/stormwatch demo $(DEMO_ARGS)

## demo-prometheus: the outage demo and a local Prometheus 3.16 evaluating the demo profile's
## rules (alerts on http://127.0.0.1:9090/alerts) until Ctrl-C, which stops both. Override
## with DEMO_ARGS.
demo-prometheus: DEMO_ARGS = --scenario outage
demo-prometheus: tools-prometheus $(BIN)/stormwatch
	$(BIN)/stormwatch demo --prometheus $(PROMETHEUS) $(DEMO_ARGS)

# bin/stormwatch is rebuilt every time (go build is incremental), with progress for the first,
# cold build.
$(BIN)/stormwatch: FORCE
	@scripts/progress.sh "building bin/stormwatch (the first build compiles every dependency)" \
		$(GO) build -o $(BIN)/stormwatch ./cmd/stormwatch

## tools: promtool and prometheus 3.16 into ./bin (reused when present; cached per user).
tools:
	@scripts/install-tools.sh all

tools-promtool:
	@scripts/install-tools.sh promtool

tools-prometheus:
	@scripts/install-tools.sh prometheus

tools-amtool:
	@scripts/install-tools.sh amtool

tools-alertmanager:
	@scripts/install-tools.sh alertmanager

## bench: library benchmarks and peer comparisons (separate module under bench/).
bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)
	cd bench && $(GO) test -run '^$$' -bench . -benchmem -cpu 1,2 ./...

clean:
	rm -rf out

.PHONY: FORCE
FORCE:

## install-check: the install paths README gives, run as a user would: from a clone
## (`go build -o bin/stormwatch ./cmd/stormwatch`, then `bin/stormwatch generate`) and in a
## throwaway user module (`go get -tool` + `go tool stormwatch generate`, offline through a
## replace directive); promtool checks and tests what each generated. Needs bin/promtool.
.PHONY: install-check
install-check:
	scripts/check-install.sh

## fuzz: fuzz every fuzz target of the repository (main module, conformance/, bench/) for
## FUZZTIME each, one `go test -fuzz` run per target, then a summary table. The targets are
## discovered (scripts/fuzz.sh: grep for func Fuzz…, cross-checked with `go test -list`), so a
## new or moved target needs no edit here. FUZZ=regexp fuzzes only the matching targets.
## `make test` runs the seed corpora only.
FUZZTIME ?= 30s
.PHONY: fuzz
fuzz:
	GO=$(GO) FUZZTIME=$(FUZZTIME) scripts/fuzz.sh

## soak: not in CI — `stormwatch demo --scenario outage` for SOAK_DURATION (default 10m) with
## the outage lasting from 15s to the end, sampled every SOAK_EVERY (default 5s): RSS,
## goroutines, open fds, /metrics size and series. Fails on growth from the middle third of the
## run to the last third (the rule is in cmd/stormwatch/internal/demo/soak) or on an unclean stop.
SOAK_DURATION ?= 10m
SOAK_EVERY    ?= 5s
.PHONY: soak
soak: $(BIN)/stormwatch
	$(GO) run ./cmd/stormwatch/internal/demo/soak -stormwatch $(BIN)/stormwatch -duration $(SOAK_DURATION) -every $(SOAK_EVERY)

## stacks (docs/stacks.md): the other engines and linters the generated rules meet.
## tools-victoriametrics: bin/vmalert and bin/victoria-metrics 1.151, built with go install
## (cached per user).
.PHONY: tools-victoriametrics vmalert-check pint-check
tools-victoriametrics:
	@scripts/install-tools.sh victoriametrics

## vmalert-check: `vmalert -dryRun` on every generated rule file (default and SLO, every
## target, files and manifests; the Mimir and Thanos keys removed, checked to be the only ones).
vmalert-check: tools-victoriametrics
	$(GO) test $(TESTCOUNT) -run TestVmalertDryRunAcceptsTheRuleFiles -v ./rules/

## pint-check: `pint --offline lint` must report nothing on the default and SLO rule files: its
## promql/fragile, rule/dependency and promql/regexp checks encoded in Go (pint is not served by
## the Go module proxy here), and pint itself when bin/pint exists.
pint-check:
	$(GO) test $(TESTCOUNT) -run 'TestPint' -v ./rules/

test: vmalert-check pint-check

## e2e-victoriametrics: the outage demo scraped by VictoriaMetrics single-node, the demo
## profile's rules (--target victoriametrics) evaluated by vmalert (also part of `make e2e`).
.PHONY: e2e-victoriametrics
e2e-victoriametrics: tools-victoriametrics
	$(GO) vet -tags e2e ./e2e/victoriametrics/
	$(GO) test -tags e2e -count=1 -timeout 5m -v ./e2e/victoriametrics/
## alertmanager-check: amtool 0.35 checks the generated Alertmanager fragment: check-config on
## the fragment and on a configuration that embeds it, and `amtool config routes test`, one
## case per alert (which receiver it reaches). In `make unit` these tests skip without bin/amtool.
.PHONY: alertmanager-check tools-amtool tools-alertmanager
alertmanager-check: tools-amtool
	@test -x $(BIN)/amtool || { echo "$(BIN)/amtool missing: run 'make tools-amtool' (scripts/install-tools.sh amtool)"; exit 1; }
	$(GO) test $(TESTCOUNT) -run 'Amtool' ./rules/

## bench-fleet: not in `make test` — what the rules cost Prometheus at fleet scale: N
## dependencies (retry around a breaker, every path run) per exporter, a real Prometheus 3.16
## scraping and evaluating every 5s, after a 5m30s warm-up: head series, per-group and per-rule
## evaluation time (mean of 6 cycles), missed iterations, Prometheus RSS; about 6 minutes per N,
## on loopback. FLEET_RULES=file measures another rule file (default: the generated defaults);
## FLEET_RULES=before.yaml,after.yaml FLEET_ARGS='-rounds 2' interleaves a comparison (ABBA);
## FLEET_ARGS passes other flags (e.g. -m 4 exporters, -warmup 1m, -top 15; see bench/fleet).
FLEET_N     ?= 500,2000
FLEET_RULES ?=
FLEET_ARGS  ?=
fleet_comma := ,
fleet_space := $(subst ,, )
.PHONY: bench-fleet
bench-fleet: tools-prometheus
	cd bench && $(GO) run ./fleet -prometheus $(PROMETHEUS) -n $(FLEET_N) \
		$(if $(FLEET_RULES),-rules $(subst $(fleet_space),$(fleet_comma),$(abspath $(subst $(fleet_comma),$(fleet_space),$(FLEET_RULES))))) $(FLEET_ARGS)
