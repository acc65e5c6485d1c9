GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

.PHONY: all build test vet fmt-check models-single-goroutine bench sweep clean

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/testbed ./cmd/testbed

# The test command of the README and of CI: formatting, vet, and every test
# under the race detector, except the pure models below: they run in one
# goroutine (checked here: no goroutines, channels or sync in them), so the
# detector has nothing to find and would only make them ten times slower.
MODELS := ./simlab/lgmodel ./simlab/fctmodel ./simlab/reactormodel ./simlab/physics ./instruments/ocs/sched

test: fmt-check vet models-single-goroutine
	$(GO) test -race -count=1 -timeout 8m $$($(GO) list ./... | grep -v -F -x $(foreach m,$(MODELS),-e testbed/$(patsubst ./%,%,$(m))))
	$(GO) test -count=1 -timeout 8m $(MODELS)

models-single-goroutine:
	@if grep -n -E 'go func|go [a-zA-Z_.]+\(|"sync"|chan ' $(addsuffix /*.go,$(MODELS)); then \
	  echo "a model package above uses concurrency: run it under -race (remove it from MODELS)"; exit 1; fi

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# The first command to try: the attenuation sweep on the simulated lab.
sweep:
	$(GO) run ./cmd/testbed exp run attenuation-sweep

clean:
	rm -rf bin
