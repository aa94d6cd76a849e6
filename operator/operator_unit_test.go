package operator

import (
	"context"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/chartpilot/chartpilot/operator/reconciler"
	"github.com/chartpilot/chartpilot/operator/release"
)

func TestParseNamespaces(t *testing.T) {
	tests := map[string][]string{
		"":          nil,
		"a":         {"a"},
		"a,b":       {"a", "b"},
		" a , ,b ,": {"a", "b"},
		",":         nil,
	}
	for in, want := range tests {
		if got := ParseNamespaces(in); !slices.Equal(got, want) {
			t.Errorf("ParseNamespaces(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestOwners(t *testing.T) {
	d := &dependents{owner: schema.GroupVersionKind{Group: "charts.example.com", Version: "v1alpha1", Kind: "App"}}
	yes := true
	tests := []struct {
		name string
		obj  func() *unstructured.Unstructured
		want []types.NamespacedName
	}{
		{"controller owner reference", func() *unstructured.Unstructured {
			u := &unstructured.Unstructured{}
			u.SetNamespace("ns")
			u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "charts.example.com/v1alpha1", Kind: "App", Name: "web", Controller: &yes}})
			return u
		}, []types.NamespacedName{{Namespace: "ns", Name: "web"}}},
		{"owner of another kind", func() *unstructured.Unstructured {
			u := &unstructured.Unstructured{}
			u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", Controller: &yes}})
			return u
		}, nil},
		{"primary-resource annotations (cluster-scoped dependent)", func() *unstructured.Unstructured {
			u := &unstructured.Unstructured{}
			u.SetAnnotations(map[string]string{reconciler.PrimaryResourceAnnotation: "ns/web", reconciler.PrimaryResourceTypeAnnotation: "App.charts.example.com"})
			return u
		}, []types.NamespacedName{{Namespace: "ns", Name: "web"}}},
		{"annotations of another kind", func() *unstructured.Unstructured {
			u := &unstructured.Unstructured{}
			u.SetAnnotations(map[string]string{reconciler.PrimaryResourceAnnotation: "ns/web", reconciler.PrimaryResourceTypeAnnotation: "Other.example.com"})
			return u
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []types.NamespacedName
			for _, r := range d.owners(context.Background(), tt.obj()) {
				got = append(got, r.NamespacedName)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("owners = %v, want %v", got, tt.want)
			}
		})
	}
}

// viewOf is what the operator's cache keeps of u.
func viewOf(t *testing.T, u *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	v, err := release.ViewTransform(u)
	if err != nil {
		t.Fatal(err)
	}
	return v.(*unstructured.Unstructured)
}

// withStatus gives u a status, as a controller would write it.
func withStatus(u *unstructured.Unstructured, n int64) *unstructured.Unstructured {
	u.Object["status"] = map[string]any{"observed": n}
	return u
}

func TestDependentChanged(t *testing.T) {
	deployment := func(gen int64, ready bool, lbl string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "d", "namespace": "ns", "generation": gen, "labels": map[string]any{"l": lbl}},
			"spec":     map[string]any{"replicas": int64(1)},
		}}
		st := map[string]any{"observedGeneration": gen, "replicas": int64(1), "updatedReplicas": int64(1), "readyReplicas": int64(0), "availableReplicas": int64(0)}
		if ready {
			st["readyReplicas"], st["availableReplicas"] = int64(1), int64(1)
			st["conditions"] = []any{map[string]any{"type": "Available", "status": "True"}}
		}
		u.Object["status"] = st
		return u
	}
	configMap := func(data string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c"}, "data": map[string]any{"k": data},
		}}
	}
	annotated := func(k, v string) *unstructured.Unstructured {
		d := deployment(1, true, "a")
		d.SetAnnotations(map[string]string{k: v})
		return d
	}
	tests := []struct {
		name     string
		old, new *unstructured.Unstructured
		want     bool
	}{
		{"spec changed (generation)", deployment(1, true, "a"), deployment(2, true, "a"), true},
		{"label changed", deployment(1, true, "a"), deployment(1, true, "b"), true},
		{"became ready", deployment(1, false, "a"), deployment(1, true, "a"), true},
		{"status churn, still not ready", deployment(1, false, "a"), deployment(1, false, "a"), false},
		{"kind without generation: data changed", configMap("x"), configMap("y"), true},
		{"kind without generation: its view, data changed", viewOf(t, configMap("x")), viewOf(t, configMap("y")), true},
		{"kind without generation: its view, status written", viewOf(t, withStatus(configMap("x"), 1)), viewOf(t, withStatus(configMap("x"), 2)), false},
		{"kind without generation: status written", withStatus(configMap("x"), 1), withStatus(configMap("x"), 2), false},
		{"a controller's bookkeeping annotation", annotated("deployment.kubernetes.io/revision", "1"), annotated("deployment.kubernetes.io/revision", "2"), false},
		{"bookkeeping annotation added", deployment(1, true, "a"), annotated("deployment.kubernetes.io/revision", "1"), false},
		{"an annotation the release set", annotated("team", "a"), annotated("team", "b"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := dependentChanged{}.Update(event.TypedUpdateEvent[*unstructured.Unstructured]{ObjectOld: tt.old, ObjectNew: tt.new})
			if got != tt.want {
				t.Errorf("Update = %v, want %v", got, tt.want)
			}
		})
	}
}
