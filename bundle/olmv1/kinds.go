package olmv1

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// supportedKinds are the kinds operator-registry v1.50.0 (the version
// operator-controller v1.2.0 is built with) lets a bundle carry besides the
// CSV, by kind alone, and whether operator-controller puts them in the
// install namespace. operator-controller refuses a bundle with any other
// kind. Later operator-registry versions added NetworkPolicy, PodMonitor
// and ConsolePlugin; OLM v0 installs those, v1.2.0 does not.
var supportedKinds = map[string]bool{
	"CustomResourceDefinition": false,
	"ClusterRole":              false,
	"ClusterRoleBinding":       false,
	"Service":                  true,
	"ServiceAccount":           true,
	"Role":                     true,
	"RoleBinding":              true,
	"PrometheusRule":           true,
	"ServiceMonitor":           true,
	"Secret":                   true,
	"ConfigMap":                true,
	"PodDisruptionBudget":      true,
	"PriorityClass":            false,
	// v1.50.0 lists VerticalPodAutoscaler as cluster-scoped, so
	// operator-controller leaves its namespace as the manifest has it.
	"VerticalPodAutoscaler": false,
	"ConsoleYAMLSample":     false,
	"ConsoleQuickStart":     false,
	"ConsoleCLIDownload":    false,
	"ConsoleLink":           false,
}

// namespacedKinds are the kinds above (and Deployment) that the API server
// serves per namespace. Helm puts such an object without a namespace in the
// release's namespace, the install namespace.
var namespacedKinds = map[string]bool{
	"Deployment": true, "Service": true, "ServiceAccount": true, "Role": true, "RoleBinding": true,
	"PrometheusRule": true, "ServiceMonitor": true, "Secret": true, "ConfigMap": true,
	"PodDisruptionBudget": true, "VerticalPodAutoscaler": true,
}

// Supported tells whether operator-controller v1.2.0 installs a bundle
// manifest of this kind.
func Supported(kind string) bool {
	_, ok := supportedKinds[kind]
	return ok
}

// Namespaced tells whether the API server serves kind per namespace, for the
// kinds a converted bundle can hold.
func Namespaced(kind string) bool { return namespacedKinds[kind] }

// Resource is the API resource of a kind in group, for RBAC rules: the
// kinds a bundle carries all have the plural apimachinery guesses.
func Resource(gvk schema.GroupVersionKind) schema.GroupResource {
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	return plural.GroupResource()
}
