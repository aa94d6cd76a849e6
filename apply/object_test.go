package apply

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestOutcome(t *testing.T) {
	obj := func(generation int64, resourceVersion string, labels map[string]string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		u.SetGeneration(generation)
		u.SetResourceVersion(resourceVersion)
		u.SetLabels(labels)
		return u
	}
	want := obj(0, "", map[string]string{"app": "x"})
	for _, tc := range []struct {
		name          string
		before, after *unstructured.Unstructured
		want          Outcome
	}{
		{"new", nil, obj(1, "1", nil), Created},
		{"spec changed", obj(1, "1", map[string]string{"app": "x"}), obj(2, "2", map[string]string{"app": "x"}), Configured},
		{"only status written since", obj(1, "1", map[string]string{"app": "x"}), obj(1, "5", map[string]string{"app": "x"}), Unchanged},
		{"a label applied that was missing", obj(1, "1", nil), obj(1, "2", map[string]string{"app": "x"}), Configured},
		{"a label of another owner beside ours", obj(1, "1", map[string]string{"app": "x", "olm": "y"}), obj(1, "3", map[string]string{"app": "x", "olm": "y"}), Unchanged},
		{"no generation, a label changed", obj(0, "1", nil), obj(0, "2", map[string]string{"app": "x"}), Configured},
		{"no generation, only its resourceVersion moved", obj(0, "1", map[string]string{"app": "x"}), obj(0, "2", map[string]string{"app": "x"}), Unchanged},
		{"no generation, untouched", obj(0, "1", map[string]string{"app": "x"}), obj(0, "1", map[string]string{"app": "x"}), Unchanged},
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
