package operator

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

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

// The leader election's timing is refused, naming the settings, when
// client-go's leader election could not run with it.
func TestLeaseTimingValidate(t *testing.T) {
	tests := []struct {
		name    string
		lease   LeaseTiming
		wantErr string
	}{
		{"defaults", LeaseTiming{}, ""},
		{"controller-runtime's", LeaseTiming{LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}, ""},
		{"renew deadline as long as the lease", LeaseTiming{LeaseDuration: 5 * time.Second, RenewDeadline: 5 * time.Second}, "leader election: lease duration 5s must be longer than the renew deadline 5s"},
		{"retries too sparse for the deadline", LeaseTiming{RenewDeadline: 2 * time.Second, RetryPeriod: 2 * time.Second}, "leader election: renew deadline 2s must be longer than 1.2 times the retry period 2s"},
		{"lease under a second", LeaseTiming{LeaseDuration: 500 * time.Millisecond, RenewDeadline: 200 * time.Millisecond, RetryPeriod: 100 * time.Millisecond}, "leader election: lease duration 500ms is under 1s"},
		{"negative", LeaseTiming{RetryPeriod: -time.Second}, "leader election: negative durations (lease duration 8s, renew deadline 5s, retry period -1s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := tt.lease
			l.defaults()
			err := l.validate()
			if got := fmt.Sprint(err); (tt.wantErr == "" && err != nil) || (tt.wantErr != "" && got != tt.wantErr) {
				t.Errorf("validate() = %v, want %q", err, tt.wantErr)
			}
		})
	}
}
