package apply

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// kindOrder is the order kinds are applied in: what others refer to first.
// Kinds not listed come after these, CRs of custom kinds included.
var kindOrder = []string{
	"CustomResourceDefinition", "Namespace", "ResourceQuota", "LimitRange",
	"PriorityClass", "StorageClass", "ServiceAccount", "Secret", "ConfigMap",
	"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
	"PersistentVolume", "PersistentVolumeClaim", "Service",
	"DaemonSet", "Pod", "ReplicaSet", "Deployment", "StatefulSet", "Job", "CronJob",
	"HorizontalPodAutoscaler", "PodDisruptionBudget", "NetworkPolicy", "Ingress",
	"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
}

func kindRank(kind string) int {
	if i := slices.Index(kindOrder, kind); i >= 0 {
		return i
	}
	return len(kindOrder)
}

// Sort orders objs for applying: by kind (kindOrder), then namespace and
// name, so that output and apply order are stable.
func Sort(objs []*unstructured.Unstructured) {
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int {
		if d := kindRank(a.GetKind()) - kindRank(b.GetKind()); d != 0 {
			return d
		}
		if c := strings.Compare(a.GetKind(), b.GetKind()); c != 0 {
			return c
		}
		if c := strings.Compare(a.GetNamespace(), b.GetNamespace()); c != 0 {
			return c
		}
		return strings.Compare(a.GetName(), b.GetName())
	})
}
