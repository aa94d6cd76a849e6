# VERSION defines the project version for the bundle.
VERSION ?= 0.0.1

# CHANNELS and DEFAULT_CHANNEL define the bundle's channels (e.g. CHANNELS=candidate,fast,stable).
ifneq ($(origin CHANNELS), undefined)
BUNDLE_CHANNELS := --channels=$(CHANNELS)
endif
ifneq ($(origin DEFAULT_CHANNEL), undefined)
BUNDLE_DEFAULT_CHANNEL := --default-channel=$(DEFAULT_CHANNEL)
endif
BUNDLE_METADATA_OPTS ?= $(BUNDLE_CHANNELS) $(BUNDLE_DEFAULT_CHANNEL)

# IMAGE_TAG_BASE is the base of the operator, bundle and catalog image names.
IMAGE_TAG_BASE ?= acme.io/umbrella-operator
BUNDLE_IMG ?= $(IMAGE_TAG_BASE)-bundle:v$(VERSION)
CATALOG_IMG ?= $(IMAGE_TAG_BASE)-catalog:v$(VERSION)
IMG ?= controller:latest

# Kubernetes version the chart's APIs and the bundle are checked against.
K8S_VERSION ?= 1.36

# BUNDLE_DIR and CATALOG_DIR are where the bundle and the file-based catalog go.
BUNDLE_DIR ?= bundle
CATALOG_DIR ?= catalog

# USE_IMAGE_DIGESTS=true pins the bundle's images to their digests, resolved against their registries.
USE_IMAGE_DIGESTS ?= false

# chartpilot does what operator-sdk, kustomize and opm do here: no other binary is needed.
CHARTPILOT ?= $(shell command -v chartpilot 2>/dev/null || echo bin/chartpilot)

##@ Development

.PHONY: rbac
rbac: ## Regenerate config/rbac/role.yaml and the CRDs from the charts.
	$(CHARTPILOT) generate --k8s-version $(K8S_VERSION)

.PHONY: run
run: ## Run the operator against the configured Kubernetes cluster in ~/.kube/config.
	$(CHARTPILOT) run --watches-file=./watches.yaml

##@ Build

.PHONY: docker-build
docker-build: ## Build the operator image (daemonless).
	$(CHARTPILOT) image build --tag $(IMG) .

.PHONY: docker-push
docker-push: ## Push the operator image.
	$(CHARTPILOT) image push $(IMG)

##@ Deployment

.PHONY: install
install: ## Install the CRDs into the cluster in ~/.kube/config.
	$(CHARTPILOT) apply --kustomize config/crd

.PHONY: uninstall
uninstall: ## Uninstall the CRDs from the cluster in ~/.kube/config.
	$(CHARTPILOT) delete --kustomize config/crd

.PHONY: deploy
deploy: ## Deploy the operator to the cluster in ~/.kube/config.
	$(CHARTPILOT) apply --kustomize config/default --image controller=$(IMG)

.PHONY: undeploy
undeploy: ## Undeploy the operator from the cluster in ~/.kube/config.
	$(CHARTPILOT) delete --kustomize config/default

##@ Bundle and catalog

.PHONY: bundle
bundle: ## Generate the bundle (CSV, CRDs, RBAC, metadata) and validate it.
	$(CHARTPILOT) bundle generate --version $(VERSION) --image controller=$(IMG) --k8s-version $(K8S_VERSION) $(BUNDLE_METADATA_OPTS) --output-dir $(BUNDLE_DIR) $(if $(filter true,$(USE_IMAGE_DIGESTS)),--use-image-digests)
	$(CHARTPILOT) bundle validate $(BUNDLE_DIR)

.PHONY: bundle-build
bundle-build: ## Build the bundle image (daemonless).
	$(CHARTPILOT) bundle build --tag $(BUNDLE_IMG) $(BUNDLE_DIR)

.PHONY: bundle-push
bundle-push: ## Push the bundle image.
	$(CHARTPILOT) image push $(BUNDLE_IMG)

# BUNDLE_IMGS lists the bundles of the catalog (e.g. older versions too).
BUNDLE_IMGS ?= $(BUNDLE_IMG)

# OPM_IMG is the opm image the catalog image is built from: its opm serves
# the catalog when OLM runs the image for a CatalogSource.
OPM_IMG ?= quay.io/operator-framework/opm:latest

.PHONY: catalog-build
catalog-build: ## Build a file-based catalog image with a semver upgrade graph (daemonless).
	$(CHARTPILOT) catalog build --dir $(CATALOG_DIR) --image $(CATALOG_IMG) --base $(OPM_IMG) --bundles $(BUNDLE_IMGS)

.PHONY: catalog-push
catalog-push: ## Push the catalog image.
	$(CHARTPILOT) image push $(CATALOG_IMG)

# PREVIOUS_BUNDLE is the previous release's bundle (directory or image) that the
# scorecard's upgrade test upgrades from; without it that test is left out.
PREVIOUS_BUNDLE ?=

.PHONY: scorecard
scorecard: ## Run the scorecard tests on the bundle (static, and in-cluster with a kubeconfig).
	$(CHARTPILOT) scorecard $(BUNDLE_DIR) $(if $(PREVIOUS_BUNDLE),--from-bundle $(PREVIOUS_BUNDLE),-l 'test!=chartpilot-upgrade-test')
