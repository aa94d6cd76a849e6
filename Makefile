# chartpilot: the two commands that matter are `make demo` and `make test`.
SHELL := /usr/bin/env bash -o pipefail
GO ?= go
BIN := $(CURDIR)/bin
CHARTPILOT := $(BIN)/chartpilot
# The demo runs in its own directory (project, catalog, logs, cluster state) so
# that it never touches a cluster you started yourself with `chartpilot cluster up`.
DEMO_DIR ?= $(CURDIR)/.cache/demo
TEST_TIMEOUT ?= 80m
# How long `make fuzz` runs each fuzz target, and at most minimizes each new
# input (Go's default, 60s, can take a whole run on large multi-file inputs).
FUZZTIME ?= 60s
FUZZMINIMIZETIME ?= 5s

.PHONY: all
all: build

.PHONY: build
build: ## Build chartpilot, and the operator image's static runtime binary, into bin/
	$(GO) build -o $(CHARTPILOT) ./cmd/chartpilot
	CGO_ENABLED=0 $(GO) build -o $(BIN)/chartpilot-operator ./cmd/chartpilot-operator

.PHONY: demo
demo: build ## The whole journey on a local cluster with real OLM: chart -> operator -> Subscription -> upgrade
	$(CHARTPILOT) demo --dir $(DEMO_DIR)

.PHONY: cluster-build
cluster-build: build ## Build the local cluster's components (cached; cold build 10-20 min)
	$(CHARTPILOT) cluster build

.PHONY: test
test: cluster-build ## Unit, integration (envtest) and end-to-end (local cluster) tests
	$(GO) vet ./...
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...

.PHONY: fuzz
fuzz: ## Run every fuzz target (func FuzzX in a _test.go) for FUZZTIME, one at a time on one core
	@set -e; for file in $$(find . -name '*_test.go' -not -path '*/.*' -not -path '*/testdata/*' | xargs grep -l '^func Fuzz' | sort); do \
		pkg=./$$(dirname $${file#./}); \
		for name in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$file); do \
			echo "== $$pkg $$name"; \
			$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) -parallel 1 $$pkg; \
		done; \
	done

.PHONY: generate
generate: ## Refresh generated files (the embedded copy of the tools module)
	$(GO) generate ./...

.PHONY: help
help:
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "%-16s %s\n", $$1, $$2}'
