# stormwatch — build, test and benchmark targets. `make test` is the README's test command and
# what CI runs.
GO       ?= go
BIN      := $(CURDIR)/bin
PROMTOOL := $(BIN)/promtool
PKGS     := ./...

.PHONY: all test unit lint fmt-check vet tools bench e2e build clean

all: build test

build:
	$(GO) build $(PKGS)

## test: everything CI checks (formatting, vet, race-enabled unit tests, generated-rule checks).
test: lint unit

lint: fmt-check vet

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

unit:
	$(GO) test -race -count=1 $(PKGS)

## tools: promtool and prometheus 3.16 into ./bin (reused when present).
tools:
	scripts/install-tools.sh

## bench: library benchmarks and peer comparisons (separate module under bench/).
bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)
	cd bench && $(GO) test -run '^$$' -bench . -benchmem -cpu 1,2 ./...

clean:
	rm -rf out
