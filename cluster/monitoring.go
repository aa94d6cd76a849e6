package cluster

import (
	"context"
	"encoding/json"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
)

// monitoringKinds are prometheus-operator's kinds that bundles ship (OLM
// installs them from a bundle, and fails the install when the cluster does
// not serve them). No Prometheus runs on the local cluster: their CRDs are
// served so that a bundle with a ServiceMonitor and a PrometheusRule (what
// `chartpilot init` scaffolds) installs, and the objects are kept as written.
var monitoringKinds = []struct{ kind, plural string }{
	{"ServiceMonitor", "servicemonitors"},
	{"PrometheusRule", "prometheusrules"},
}

// monitoringCRDs are those kinds' CRDs, with an open spec: the API server
// keeps whatever the bundle wrote; checking it is Prometheus's job
// (bundle validate loads PrometheusRules with Prometheus's parsers).
func monitoringCRDs() []*apiextensionsv1.CustomResourceDefinition {
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, k := range monitoringKinds {
		out = append(out, &apiextensionsv1.CustomResourceDefinition{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
			ObjectMeta: metav1.ObjectMeta{Name: k.plural + ".monitoring.coreos.com"},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: "monitoring.coreos.com",
				Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: k.kind, ListKind: k.kind + "List", Plural: k.plural, Singular: lowerKind(k.kind)},
				Scope: apiextensionsv1.NamespaceScoped,
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
					Name: "v1", Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
						Type: "object",
						Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"spec": {Type: "object", XPreserveUnknownFields: ptr.To(true)},
						},
					}},
				}},
			},
		})
	}
	return out
}

func lowerKind(k string) string {
	b := []byte(k)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// applyMonitoringCRDs server-side applies monitoringCRDs and returns their names.
func applyMonitoringCRDs(ctx context.Context, dyn dynamic.Interface) ([]string, error) {
	var names []string
	for _, crd := range monitoringCRDs() {
		body, err := json.Marshal(crd)
		if err != nil {
			return nil, err
		}
		if _, err := dyn.Resource(crdResource).Patch(ctx, crd.Name, types.ApplyPatchType, body,
			metav1.PatchOptions{FieldManager: fieldManager, Force: ptr.To(true)}); err != nil {
			return nil, fmt.Errorf("applying CRD %s: %w", crd.Name, err)
		}
		names = append(names, crd.Name)
	}
	return names, nil
}
