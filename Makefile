# The two commands of the quick start are `make run` and `make test`.
GO      ?= go
BIN     := bin/ensemble
EXAMPLE := examples/iterative-analysis
# Every go command takes -trimpath, so that vet, build and test share the
# compiled packages in the build cache: a flag that differs would compile
# every dependency again (the largest part of a cold build).
TRIM    := -trimpath
# The tests start python3 hundreds of times (the examples' scripts). A
# version manager's shim first on PATH (pyenv, asdf) is a shell script that
# starts a dozen processes to pick the interpreter, each time: here that
# doubled the CPU time of the tests of cmd/ensemble. The python-link target
# picks it once: bin/python/python3 links the interpreter that `python3`
# runs, and comes first on the PATH of every command below.
PYLINK  := $(CURDIR)/bin/python
export PATH := $(PYLINK):$(PATH)

# Every go test has a -timeout of its own, sized for a loaded 2-core
# machine (go test's default, 10 minutes a package, was hit there by
# cmd/ensemble), and runs through scripts/gotest.sh: a test that runs past
# it is one line naming the tests that were running (gotest.sh keeps the
# panic's line and drops go's dump of every goroutine), and the status is
# go test's. Longer: make test TEST_TIMEOUT=1h.
TEST_TIMEOUT  ?= 30m
RACE_TIMEOUT  ?= 60m
FUZZ_TIMEOUT  ?= 20m
BENCH_TIMEOUT ?= 60m
BENCH_SMOKE_TIMEOUT ?= 20m
GOTEST   = sh $(CURDIR)/scripts/gotest.sh $(GO) test

.PHONY: all build run test test-go test-race test-temporal test-cmd-default test-clients fuzz prereqs prereqs-race python-link vet gofmt-check bench bench-smoke screenshots fmt clean

all: build

# -trimpath and -s -w: no local paths, symbol table or DWARF in the binary.
# --version says what it was built from: git describe's tag, commit and
# -dirty, stamped with -X (VCS stamping by the go command may be off, as
# GOFLAGS=-buildvcs=false turns it off; outside a git checkout VERSION is
# empty and the binary reads its build information, cmd/ensemble/version.go).
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null)
build:
	$(GO) build $(TRIM) -ldflags="-s -w -X main.stampedVersion=$(VERSION)" -o $(BIN) ./cmd/ensemble

# Runs the flagship example with its injected responses: no model server needed.
run: build
	./$(BIN) run $(EXAMPLE)/ensemble.yaml --responses $(EXAMPLE)/responses.yaml --output text

# One line naming every missing tool, before anything starts.
prereqs:
	@sh scripts/prereqs.sh

# The interpreter python3 runs (sys.executable), linked; nothing when that
# cannot be told, and then the tests use the PATH as it is.
python-link:
	@rm -f $(PYLINK)/python3; \
	py=$$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null); \
	if [ -n "$$py" ] && [ -x "$$py" ]; then mkdir -p $(PYLINK) && ln -s "$$py" $(PYLINK)/python3; fi

prereqs-race:
	@sh scripts/prereqs.sh race

gofmt-check:
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { echo "gofmt needed:"; gofmt -l .; exit 1; }

vet: gofmt-check
	$(GO) vet $(TRIM) ./...

# gofmt, then go vet and every test (every example runs in cmd/ensemble's
# tests, its .feature files through `ensemble test`; the fuzz targets run
# their seed corpora as tests). No C compiler is needed: without one, go
# builds without cgo. test-go is `go vet` and `go test` in one go command:
# -vet=all runs every analyzer of `go vet`, on the same packages and test
# files, and one action graph schedules the analyzers, the compiles and the
# test runs together (while one core compiles a large dependency, such as
# the SQLite driver, the other vets and tests what does not need it).
# The fuzzing itself is `make fuzz`, which CI runs after this (.ci/run):
# it compiles every dependency again with coverage instrumentation, the
# standard library too, which made a cold make test a fifth longer
# (docs/performance.md, "Test suite time"). A failure stops make: test-go's
# own output names the package and the check (a vet diagnostic, a test).
test: prereqs gofmt-check python-link
	@$(MAKE) --no-print-directory test-go

# -tags notemporal: the everyday tests build ensemble without the Temporal
# engine, whose SDK costs a couple of minutes of CPU to compile on an empty
# build cache; test-temporal builds and tests it (cmd/ensemble/temporal.go).
NOTEMPORAL = -tags notemporal
# Test binaries are linked without a symbol table or DWARF (-s -w, as
# bin/ensemble is): a third less time linking each of the dozen large
# ones. Stack traces keep their file:line; the compiled packages are
# the same, so the build cache is still shared with vet and build. A test
# to step through with a debugger: dlv test ./PKG (it builds its own).
TESTLD  = -ldflags='-s -w'
test-go:
	$(GOTEST) $(TRIM) $(NOTEMPORAL) $(TESTLD) -vet=all -count=1 -timeout $(TEST_TIMEOUT) ./...

# The fuzz targets of the loader and of conditions, briefly, by a number of
# inputs rather than a duration: with a duration, Go 1.26's fuzzing
# coordinator can fail a target with a bare "context deadline exceeded" when
# a worker is mid-input as the time runs out (a race fixed in Go 1.27; it
# hit CI on this busy 2-core machine), while a count has no deadline to
# race. A longer search: `make fuzz FUZZ_LOAD=5m FUZZ_COND=5m`, or
# `go test ./ensemble/fuzz -run '^$$' -fuzz FuzzLoadBytes -fuzztime 5m`.
FUZZ_LOAD ?= 3000x
FUZZ_COND ?= 20000x
fuzz:
	$(GOTEST) $(TRIM) -vet=off -timeout $(FUZZ_TIMEOUT) -run '^$$' -fuzz '^FuzzLoadBytes$$' -fuzztime $(FUZZ_LOAD) ./ensemble/fuzz
	$(GOTEST) $(TRIM) -vet=off -timeout $(FUZZ_TIMEOUT) -run '^$$' -fuzz '^FuzzCompileEval$$' -fuzztime $(FUZZ_COND) ./internal/conditions

# The race detector needs cgo, so a C compiler. make test has vetted
# everything already: -vet=off spares vetting every dependency again.
test-race: prereqs-race python-link
	CGO_ENABLED=1 $(GOTEST) $(TRIM) $(NOTEMPORAL) $(TESTLD) -race -vet=off -count=1 -timeout $(RACE_TIMEOUT) ./...

# The Temporal engine against a real Temporal server started in the test
# process (docs/temporal.md). The tests are a module of their own,
# temporal/, so that the main module and the CLI never carry the server,
# which needs a newer toolchain than the main module (the go command fetches
# it). Its first build compiles the server: minutes on an empty cache.
# No -trimpath: the build cache is then the one a plain `go test` in
# temporal/ fills, and the server is compiled once for both. It also holds
# temporalengine's exported names to the public API's rule
# (docs/development.md#public-api), which make test, built without it,
# cannot check.
TEMPORAL_TOOLCHAIN ?= go1.26.10
test-temporal: python-link
	$(GO) vet ./cmd/ensemble ./temporalengine
	$(GOTEST) -vet=off -count=1 -timeout $(TEST_TIMEOUT) -run '^TestPublicAPIUsesNoInternalType$$' ./docs
	cd temporal && PATH="$(CURDIR)/bin/python:$$PATH" GOTOOLCHAIN=$(TEMPORAL_TOOLCHAIN) $(GOTEST) -vet=all -count=1 -timeout $(TEST_TIMEOUT) ./...

# serve against the official client libraries that the ensemble module
# does not otherwise depend on (openai-go for chat completions): a module of
# its own, clients/, so that make test never compiles them (openai-go is
# about 90 s of CPU on an empty build cache). CI runs it after make test.
# -mod=mod: a package of the ensemble module that starts importing another
# module adds an indirect requirement to clients/go.mod, which go test then
# records rather than refusing to build (go mod tidy in clients/ keeps the
# file current).
test-clients: python-link
	cd clients && PATH="$(CURDIR)/bin/python:$$PATH" $(GOTEST) -mod=mod $(TRIM) $(TESTLD) -vet=all -count=1 -timeout $(TEST_TIMEOUT) ./...

# The tests of cmd/ensemble (every example, the CLI, kill and resume) on
# the build make build ships, with the Temporal engine: make test and
# make test-race build without it. CI runs this after test-temporal, whose
# go vet of ./cmd/ensemble in the default build compiled the same packages
# (no -trimpath either, so the build cache is shared) and vetted these
# test files: about 1.5 min of CPU on a warm cache.
test-cmd-default: python-link
	$(GOTEST) $(TESTLD) -vet=off -count=1 -timeout $(TEST_TIMEOUT) ./cmd/ensemble

# Speed and memory targets are benchmarks, never timed unit tests.
bench:
	$(GOTEST) -run '^$$' -bench . -benchmem -timeout $(BENCH_TIMEOUT) ./...

# Every benchmark once (-benchtime 1x), no figure kept: CI runs it so that
# a benchmark that stops compiling or running fails the build. Same build
# as make test (tags, -trimpath, link flags), so the compiled packages are
# shared; -vet=off, since make test vetted them.
bench-smoke: python-link
	$(GOTEST) $(TRIM) $(NOTEMPORAL) $(TESTLD) -vet=off -count=1 -run '^$$' -bench . -benchtime 1x -timeout $(BENCH_SMOKE_TIMEOUT) ./...

# The PNGs of docs/ui.md: each view of `ensemble ui` on runs of the
# examples, taken by TestScreenshots in headless Chromium (Debian's
# chromium). make test runs the same test without writing them.
screenshots: python-link
	ENSEMBLE_CI=1 $(GOTEST) $(TRIM) $(NOTEMPORAL) -count=1 -timeout $(TEST_TIMEOUT) -run '^TestScreenshots$$' ./internal/inspector -args -screenshots $(CURDIR)/docs/ui

fmt:
	gofmt -w .

clean:
	rm -rf bin
