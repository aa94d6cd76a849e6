package bundle

import (
	"fmt"
	"os"
	"slices"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// CSV annotations chartpilot writes.
const (
	AnnotationCapabilities   = "capabilities"
	AnnotationALMExamples    = "alm-examples"
	AnnotationContainerImage = "containerImage"
	AnnotationCreatedAt      = "createdAt"
	AnnotationSkipRange      = "olm.skipRange"
	AnnotationBuilder        = "operators.operatorframework.io/builder"
	AnnotationProjectLayout  = "operators.operatorframework.io/project_layout"
	// ProjectLayout is operator-sdk's layout name for Helm projects.
	ProjectLayout = "helm.sdk.operatorframework.io/v1"
	// targetNamespacesFieldPath is where OLM puts the OperatorGroup's
	// namespaces on the operator's pods.
	targetNamespacesFieldPath = "metadata.annotations['olm.targetNamespaces']"
	// DefaultMinKubeVersion is the minKubeVersion of a CSV when neither the
	// base CSV nor a chart's kubeVersion says: the first Kubernetes release
	// serving every API the chartpilot runtime uses at GA (CRD v1,
	// coordination v1 leases, autoscaling/v2, policy/v1).
	DefaultMinKubeVersion = "1.25.0"
)

// fromUnstructured converts o into a typed object, naming o on failure.
func fromUnstructured(o *unstructured.Unstructured, into any) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, into); err != nil {
		return fmt.Errorf("%s: %w", describe(o), err)
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// csvToYAML marshals the CSV without the fields a typed object always
// carries but a manifest should not (status, null timestamps).
func csvToYAML(csv *v1alpha1.ClusterServiceVersion) ([]byte, error) {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(csv)
	if err != nil {
		return nil, err
	}
	delete(obj, "status")
	return marshalObject(obj)
}

// marshalObject is the YAML of a manifest, with null creationTimestamps
// (left by typed round trips) removed; keys are sorted, so output is stable.
func marshalObject(obj map[string]any) ([]byte, error) {
	dropNullTimestamps(obj)
	return yamlMarshal(obj)
}

func dropNullTimestamps(v any) {
	switch v := v.(type) {
	case map[string]any:
		if ts, ok := v["creationTimestamp"]; ok && ts == nil {
			delete(v, "creationTimestamp")
		}
		for _, x := range v {
			dropNullTimestamps(x)
		}
	case []any:
		for _, x := range v {
			dropNullTimestamps(x)
		}
	}
}

// objectID identifies an object across two kustomize builds.
func objectID(o *unstructured.Unstructured) string {
	return o.GetAPIVersion() + "/" + o.GetKind() + "/" + o.GetName()
}

// describe names an object in messages.
func describe(o *unstructured.Unstructured) string {
	return fmt.Sprintf("%s %s (%s)", o.GetKind(), o.GetName(), o.GetAPIVersion())
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
