package crddiff

import (
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// FromObjects picks the CustomResourceDefinitions out of decoded manifests.
// Only apiextensions.k8s.io/v1 is read: v1beta1 has not been served since
// Kubernetes 1.22.
func FromObjects(objs []*unstructured.Unstructured) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" {
			continue
		}
		if o.GetAPIVersion() != apiextensionsv1.SchemeGroupVersion.String() {
			return nil, fmt.Errorf("CustomResourceDefinition %s: apiVersion %s, only %s is compared", o.GetName(), o.GetAPIVersion(), apiextensionsv1.SchemeGroupVersion)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, crd); err != nil {
			return nil, fmt.Errorf("CustomResourceDefinition %s: %w", o.GetName(), err)
		}
		out = append(out, crd)
	}
	return out, nil
}
