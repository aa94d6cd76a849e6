# chartpilot: the two commands that matter are `make demo` and `make test`.
SHELL := /usr/bin/env bash -o pipefail
GO ?= go
BIN := $(CURDIR)/bin
CHARTPILOT := $(BIN)/chartpilot
# The demo runs in its own directory (project, catalog, logs, cluster state) so
# that it never touches a cluster you started yourself with `chartpilot cluster up`.
DEMO_DIR ?= $(CURDIR)/.cache/demo
TEST_TIMEOUT ?= 80m
# How many test binaries of the packages other than the real node's run at
# once: most wait on API servers and clusters more than they compute.
TEST_P ?= 4
# How long `make fuzz` runs each fuzz target, and at most minimizes each new
# input (Go's default, 60s, can take a whole run on large multi-file inputs).
FUZZTIME ?= 60s
FUZZMINIMIZETIME ?= 5s
# Tests build as the shipped binaries do, without cgo (see build). That is
# the code users run (Go's own DNS resolver, no Go plugins), the packages
# the build compiled serve the tests too, and the test binaries link
# internally: with cgo, kustomize's plugin loader (through Helm) sends each
# one through the C linker, about a third of `go test -short ./...`.
CGO_ENABLED ?= 0
export CGO_ENABLED

.PHONY: all
all: build

# Static binaries (no cgo): `image build` packs chartpilot-operator into the
# operator image.
.PHONY: build
build: ## Build chartpilot, and the operator image's runtime-only binary, into bin/ (both static)
	CGO_ENABLED=0 $(GO) build -o $(CHARTPILOT) ./cmd/chartpilot
	CGO_ENABLED=0 $(GO) build -o $(BIN)/chartpilot-operator ./cmd/chartpilot-operator

.PHONY: demo
demo: build ## The whole journey on a local cluster with real OLM: chart -> operator -> Subscription -> upgrade, then ClusterExtension -> upgrade (OLM v1)
	@# The real node's packages and modules where this host allows (root, apt-get);
	@# else the demo takes a kwok node and says what is missing.
	$(CHARTPILOT) cluster prepare-host --best-effort
	$(CHARTPILOT) demo --dir $(DEMO_DIR)

.PHONY: prepare-host
prepare-host: build ## As root with apt-get: install the packages and load the kernel modules the real node needs (nothing when all is there)
	$(CHARTPILOT) cluster prepare-host

.PHONY: cluster-build
cluster-build: build ## Build the local cluster's components (cached; cold build about 8 min on 2 cores)
	$(CHARTPILOT) cluster build

.PHONY: test
test: build cluster-build ## Unit, integration (envtest) and end-to-end (local cluster) tests
	@# Compile first, then run: test-checks' go vet compiles every package
	@# the tests import, no more jobs at once than cores, before any test
	@# starts a clock. The tests take chartpilot and chartpilot-operator
	@# from bin/ (internal/testbin), built once by make build.
	@$(MAKE) --no-print-directory test-checks
	@# The packages named realnode take the machine's one real node in turn
	@# (internal/layers keeps every such test there): they are the longest
	@# path, so they start first, in a stream of their own, two at a time (one
	@# prepares while the other holds the node); the rest run beside them,
	@# so that no slot there waits for the node.
	@export CHARTPILOT_TEST_BIN=$(BIN); \
	realnode=$$($(GO) list ./... | grep '/realnode$$'); rest=$$($(GO) list ./... | grep -v '/realnode$$'); \
	$(GO) test -count=1 -p 2 -timeout $(TEST_TIMEOUT) $$realnode & stream=$$!; \
	rc=0; \
	$(GO) test -count=1 -p $(TEST_P) -timeout $(TEST_TIMEOUT) $$rest || rc=1; \
	$(MAKE) --no-print-directory test-tools || rc=1; \
	wait $$stream || rc=1; \
	exit $$rc

.PHONY: test-short
test-short: ## The fast tier: unit tests only, no cluster and no API server (about 90 s on 2 cores)
	$(GO) test -short ./...

.PHONY: test-checks
test-checks: ## go vet, gofmt, and no Helm 3 in the product module
	$(GO) vet ./...
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	@if $(GO) list -m all | grep -q '^helm.sh/helm/v3 '; then echo "helm.sh/helm/v3 is a dependency of the product module again"; exit 1; fi

.PHONY: test-tools
test-tools: ## The tools modules' own tests: the real node's small programs, storage, CSI, Helm 3 beside Helm 4
	$(GO) -C tools/node test -count=1 ./cp/ ./pause/ ./hello-server/ ./grpc_health_probe/
	$(GO) -C tools/storage test -count=1 ./...
	$(GO) -C tools/csi test -count=1 ./hostpath-csi/
	# Helm 3 and Helm 4 side by side: records and renders (the product module has no Helm 3).
	$(GO) -C peers/helmcompat test -count=1 ./...

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
generate: ## Refresh generated files (the embedded copy of the tools module, the example operator's project files)
	$(GO) generate ./...

.PHONY: docs
docs: ## Write the command reference (docs/reference) from the commands themselves, and docs/development.md's package and version tables
	$(GO) run ./cmd/chartpilot-docs docs/reference
	$(GO) test ./internal/layers -run TestDevelopmentDoc -update

##@ The example operator
# This repository's top level is also the example operator's project, exactly
# as `chartpilot init` writes it from helm-charts/hello: PROJECT, watches.yaml,
# helm-charts/, config/, Dockerfile and operator.mk, whose targets (make help)
# work here as in any scaffolded project. `make generate` rewrites them; a
# test in the top-level package keeps them equal to what init writes.
# The bundle and the catalog go under build/: bundle/ and catalog/ are Go packages here.
BUNDLE_DIR ?= build/bundle
CATALOG_DIR ?= build/catalog
include operator.mk

# operator.mk's targets run the chartpilot built here.
rbac run docker-build docker-push install uninstall deploy undeploy bundle bundle-build bundle-push catalog-build catalog-push scorecard: build

.PHONY: help
help:
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "%-16s %s\n", $$1, $$2}'
