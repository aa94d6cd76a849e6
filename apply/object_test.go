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
		{"no generation, written", obj(0, "1", map[string]string{"app": "x"}), obj(0, "2", map[string]string{"app": "x"}), Configured},
		{"no generation, untouched", obj(0, "1", map[string]string{"app": "x"}), obj(0, "1", map[string]string{"app": "x"}), Unchanged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := outcome(tc.before, tc.after, want); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}
