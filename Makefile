# The two commands of the quick start are `make run` and `make test`.
GO      ?= go
BIN     := bin/ensemble
EXAMPLE := examples/iterative-analysis

.PHONY: all build run test vet bench fmt clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/ensemble

# Runs the flagship example with its injected responses: no model server needed.
run: build
	./$(BIN) run $(EXAMPLE)/ensemble.yaml --responses $(EXAMPLE)/responses.yaml --output text

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GO) vet ./...

# Also runs every example's .feature file through `ensemble test`.
test: vet build
	$(GO) test -race -count=1 ./...
	./$(BIN) test --format progress examples/

# Speed and memory targets are benchmarks, never timed unit tests.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

fmt:
	gofmt -w .

clean:
	rm -rf bin
