package extension

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ExtensionCRD is the ClusterExtension CustomResourceDefinition's name.
const ExtensionCRD = "clusterextensions." + Group

// SingleOwnNamespaceGate is operator-controller's feature gate that lets a
// ClusterExtension watch one namespace (spec.config.inline.watchNamespace).
const SingleOwnNamespaceGate = "SingleOwnNamespaceInstallSupport"

// Features are what the cluster's OLM v1 takes, read from the schema of its
// ClusterExtension CRD rather than from a version: what the API server
// serves is what a ClusterExtension may say.
type Features struct {
	// InstallerServiceAccount: spec.serviceAccount is required, and
	// operator-controller installs as that ServiceAccount (before v1.11).
	// From v1.11 it is deprecated and ignored: operator-controller installs
	// as its own cluster-admin ServiceAccount.
	InstallerServiceAccount bool `json:"installerServiceAccount"`
	// Config: spec.config is served, where watchNamespace goes (the
	// experimental CRD of v1.4 and later).
	Config bool `json:"config"`
}

// LegacyFeatures are OLM v1 before v1.11, as chartpilot assumes it when
// there is no cluster to ask (a dry run).
var LegacyFeatures = Features{InstallerServiceAccount: true}

// ReadFeatures reads the features of the cluster's OLM v1 from its
// ClusterExtension CRD.
func ReadFeatures(ctx context.Context, c client.Reader) (Features, error) {
	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	if err := c.Get(ctx, client.ObjectKey{Name: ExtensionCRD}, crd); err != nil {
		if apierrors.IsNotFound(err) {
			return Features{}, fmt.Errorf("the cluster runs no OLM v1: it has no CustomResourceDefinition %s", ExtensionCRD)
		}
		return Features{}, fmt.Errorf("reading CustomResourceDefinition %s: %w", ExtensionCRD, err)
	}
	return FeaturesOf(crd.Object)
}

// FeaturesOf reads the features from a ClusterExtension CRD: the schema of
// its served version v1.
func FeaturesOf(crd map[string]any) (Features, error) {
	versions, _, _ := unstructured.NestedSlice(crd, "spec", "versions")
	for _, v := range versions {
		version, ok := v.(map[string]any)
		if !ok || version["name"] != Version || version["served"] != true {
			continue
		}
		spec, found, err := unstructured.NestedMap(version, "schema", "openAPIV3Schema", "properties", "spec")
		if err != nil || !found {
			return Features{}, fmt.Errorf("CustomResourceDefinition %s: version %s has no schema of spec", ExtensionCRD, Version)
		}
		required, _, _ := unstructured.NestedStringSlice(spec, "required")
		_, config, _ := unstructured.NestedMap(spec, "properties", "config")
		return Features{InstallerServiceAccount: slices.Contains(required, "serviceAccount"), Config: config}, nil
	}
	return Features{}, fmt.Errorf("CustomResourceDefinition %s serves no version %s", ExtensionCRD, Version)
}
