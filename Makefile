GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

.PHONY: all build test vet fmt-check bench sweep clean

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/testbed ./cmd/testbed

# The test command of the README and of CI: formatting, vet, and every test
# under the race detector.
test: fmt-check vet
	$(GO) test -race -count=1 -timeout 8m ./...

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
