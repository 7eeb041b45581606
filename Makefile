# The two commands of the quick start are `make run` and `make test`.
GO      ?= go
BIN     := bin/ensemble
EXAMPLE := examples/iterative-analysis
# Every go command takes -trimpath, so that vet, build and test share the
# compiled packages in the build cache: a flag that differs would compile
# every dependency again (the SDKs are most of a cold build).
TRIM    := -trimpath

.PHONY: all build run test test-race fuzz prereqs prereqs-race vet bench fmt clean

all: build

# -trimpath and -s -w: no local paths, symbol table or DWARF in the binary.
build:
	$(GO) build $(TRIM) -ldflags="-s -w" -o $(BIN) ./cmd/ensemble

# Runs the flagship example with its injected responses: no model server needed.
run: build
	./$(BIN) run $(EXAMPLE)/ensemble.yaml --responses $(EXAMPLE)/responses.yaml --output text

# One line naming every missing tool, before anything starts.
prereqs:
	@sh scripts/prereqs.sh

prereqs-race:
	@sh scripts/prereqs.sh race

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GO) vet $(TRIM) ./...

# Every test, then every example's .feature file through `ensemble test`.
# No C compiler is needed: without one, go builds without cgo. go vet has
# just run every analyzer, so go test does not vet again (its own subset
# would analyze every dependency a second time).
test: prereqs
	@$(MAKE) --no-print-directory vet build
	$(GO) test $(TRIM) -vet=off -count=1 ./...
	./$(BIN) test --format progress examples/
	@$(MAKE) --no-print-directory fuzz

# The fuzz targets of the loader and of conditions, briefly: a longer
# search is `go test ./ensemble -run '^$$' -fuzz FuzzLoadBytes -fuzztime 5m`.
FUZZTIME ?= 5s
fuzz:
	$(GO) test $(TRIM) -vet=off -run '^$$' -fuzz '^FuzzLoadBytes$$' -fuzztime $(FUZZTIME) ./ensemble
	$(GO) test $(TRIM) -vet=off -run '^$$' -fuzz '^FuzzCompileEval$$' -fuzztime $(FUZZTIME) ./conditions

# The race detector needs cgo, so a C compiler.
test-race: prereqs-race
	CGO_ENABLED=1 $(GO) test $(TRIM) -race -count=1 ./...

# Speed and memory targets are benchmarks, never timed unit tests.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

fmt:
	gofmt -w .

clean:
	rm -rf bin
