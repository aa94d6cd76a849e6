package apply

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestOutcome(t *testing.T) {
	obj := func(resourceVersion string, labels map[string]string, set ...string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"size": int64(1)}}}
		u.SetResourceVersion(resourceVersion)
		u.SetLabels(labels)
		for _, f := range set {
			switch f {
			case "spec":
				u.Object["spec"] = map[string]any{"size": int64(2)}
			case "status":
				u.Object["status"] = map[string]any{"phase": "Ready"}
			case "managedFields":
				u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "before-first-apply"}})
			}
		}
		return u
	}
	ours := map[string]string{"app": "x"}
	both := map[string]string{"app": "x", "olm": "y"}
	want := obj("", ours)
	for _, tc := range []struct {
		name          string
		before, after *unstructured.Unstructured
		want          Outcome
	}{
		{"new", nil, obj("1", ours), Created},
		{"untouched", obj("1", ours), obj("1", ours), Unchanged},
		{"spec changed", obj("1", ours), obj("2", ours, "spec"), Configured},
		{"only status written since", obj("1", ours), obj("5", ours, "status"), Unchanged},
		{"only managed fields written", obj("1", ours), obj("2", ours, "managedFields"), Unchanged},
		{"a label applied that was missing", obj("1", nil), obj("2", ours), Configured},
		{"a label of ours removed", obj("1", both), obj("2", map[string]string{"olm": "y"}), Configured},
		{"a label of another owner beside ours", obj("1", both), obj("3", both), Unchanged},
		{"a label another owner added in between", obj("1", ours), obj("3", both), Unchanged},
		{"another owner's label added to none", obj("1", nil), obj("3", map[string]string{"olm": "y"}), Unchanged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := outcome(tc.before, tc.after, want); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// What kustomize builds holds Go ints, which DeepCopy refuses (it panics):
// the copy Object applies goes through JSON.
func TestJSONCopyTakesGoInts(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": "s"},
		"spec":     map[string]any{"ports": []any{map[string]any{"port": 8443}}},
	}}
	got, err := jsonCopy(u)
	if err != nil {
		t.Fatal(err)
	}
	ports, _, _ := unstructured.NestedSlice(got.Object, "spec", "ports")
	if len(ports) != 1 || ports[0].(map[string]any)["port"] != int64(8443) {
		t.Errorf("ports %v, want port 8443 as int64", ports)
	}
	got.SetNamespace("x")
	if u.GetNamespace() != "" {
		t.Error("the copy shares its metadata with the original")
	}
	got.DeepCopy() // would panic on a Go int
}
