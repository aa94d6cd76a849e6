package autoscale

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// HPAKind is the kind Render adds, and that it recognises in a chart.
var HPAKind = schema.GroupKind{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"}

// HPAVersion is the API version of the HPAs Render adds.
const HPAVersion = "autoscaling/v2"

// Render adjusts the objects of a release for autoscaling: when s is on and
// the chart renders no HPA, it adds one per Deployment and StatefulSet,
// right after its workload; then it removes spec.replicas from every
// workload an HPA of the release targets (the chart's or the added one).
// Objects are changed in place; the returned slice holds them all.
func Render(objs []*unstructured.Unstructured, s *Spec) []*unstructured.Unstructured {
	if s.On() && !hasHPA(objs) {
		objs = addHPAs(objs, s)
	}
	targeted := map[workloadKey]bool{}
	for _, o := range objs {
		if k, ok := scaleTarget(o); ok {
			targeted[k] = true
		}
	}
	for _, o := range objs {
		if targeted[keyOf(o)] {
			unstructured.RemoveNestedField(o.Object, "spec", "replicas")
		}
	}
	return objs
}

// workloadKey names a workload as an HPA's scaleTargetRef does (within the
// release's namespace, which rendered objects usually leave out).
type workloadKey struct {
	kind, name, namespace string
}

func keyOf(o *unstructured.Unstructured) workloadKey {
	return workloadKey{kind: o.GetKind(), name: o.GetName(), namespace: o.GetNamespace()}
}

func isHPA(o *unstructured.Unstructured) bool {
	return o.GroupVersionKind().GroupKind() == HPAKind
}

func hasHPA(objs []*unstructured.Unstructured) bool { return slices.ContainsFunc(objs, isHPA) }

// scaleTarget is the workload an HPA scales (any version: v1 and v2 both
// have spec.scaleTargetRef).
func scaleTarget(o *unstructured.Unstructured) (workloadKey, bool) {
	if !isHPA(o) {
		return workloadKey{}, false
	}
	kind, _, _ := unstructured.NestedString(o.Object, "spec", "scaleTargetRef", "kind")
	name, _, _ := unstructured.NestedString(o.Object, "spec", "scaleTargetRef", "name")
	if kind == "" || name == "" {
		return workloadKey{}, false
	}
	return workloadKey{kind: kind, name: name, namespace: o.GetNamespace()}, true
}

func addHPAs(objs []*unstructured.Unstructured, s *Spec) []*unstructured.Unstructured {
	names := map[string]int{}
	for _, o := range objs {
		if IsTarget(o.GroupVersionKind().GroupKind()) {
			names[o.GetNamespace()+"/"+o.GetName()]++
		}
	}
	out := make([]*unstructured.Unstructured, 0, len(objs)+1)
	for _, o := range objs {
		out = append(out, o)
		if !IsTarget(o.GroupVersionKind().GroupKind()) {
			continue
		}
		name := o.GetName()
		if names[o.GetNamespace()+"/"+name] > 1 {
			// A Deployment and a StatefulSet of one name: one HPA each.
			name += "-" + strings.ToLower(o.GetKind())
		}
		out = append(out, HPA(o, name, s))
	}
	return out
}

// HPA is the HorizontalPodAutoscaler, named name, that scales workload as s
// asks.
func HPA(workload *unstructured.Unstructured, name string, s *Spec) *unstructured.Unstructured {
	var metrics []any
	target := func(resource string, pct int32) {
		if pct > 0 {
			metrics = append(metrics, map[string]any{
				"type": "Resource",
				"resource": map[string]any{
					"name":   resource,
					"target": map[string]any{"type": "Utilization", "averageUtilization": int64(pct)},
				},
			})
		}
	}
	target("cpu", s.TargetCPUUtilizationPercentage)
	target("memory", s.TargetMemoryUtilizationPercentage)
	hpa := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": HPAVersion,
		"kind":       HPAKind.Kind,
		"metadata":   map[string]any{"name": name},
		"spec": map[string]any{
			"scaleTargetRef": map[string]any{
				"apiVersion": workload.GetAPIVersion(),
				"kind":       workload.GetKind(),
				"name":       workload.GetName(),
			},
			"minReplicas": int64(s.MinReplicas),
			"maxReplicas": int64(s.MaxReplicas),
			"metrics":     metrics,
		},
	}}
	if ns := workload.GetNamespace(); ns != "" {
		hpa.SetNamespace(ns)
	}
	if l := workload.GetLabels(); len(l) > 0 {
		hpa.SetLabels(l)
	}
	return hpa
}
