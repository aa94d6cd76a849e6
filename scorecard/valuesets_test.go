package scorecard

import (
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestValueSets(t *testing.T) {
	sample := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "charts.example.com/v1alpha1", "kind": "Validated", "metadata": map[string]any{"name": "validated-sample"}}}
	tests := []struct {
		name string
		have []*unstructured.Unstructured
		want []string
	}{
		{name: "beside the alm-example", have: []*unstructured.Unstructured{sample}, want: []string{
			"validated-small from charts.example.com_v1alpha1_validated_small.yaml {replicas 1, mode fast}",
			"validated-ci-safe from safe-values.yaml",
		}},
		{name: "without alm-examples", want: []string{
			"validated-sample from charts.example.com_v1alpha1_validated.yaml",
			"validated-small from charts.example.com_v1alpha1_validated_small.yaml {replicas 1, mode fast}",
			"validated-ci-safe from safe-values.yaml",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sets, err := valueSets(filepath.Join("testdata", "project-v1"), tt.have)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range sets {
				line := s.cr.GetName() + " from " + filepath.Base(s.source)
				if s.cr.GetName() == "validated-small" {
					line += " {replicas 1, mode fast}"
				}
				got = append(got, line)
				if s.cr.GetAPIVersion() != "charts.example.com/v1alpha1" || s.cr.GetKind() != "Validated" {
					t.Errorf("%s: %s %s", s.cr.GetName(), s.cr.GetAPIVersion(), s.cr.GetKind())
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("value sets %q, want %q", got, tt.want)
			}
		})
	}
	sets, _ := valueSets(filepath.Join("testdata", "project-v1"), nil)
	ci := sets[len(sets)-1].cr
	if spec, _, _ := unstructured.NestedMap(ci.Object, "spec"); spec["mode"] != "safe" || spec["replicas"] != float64(3) {
		t.Errorf("the ci CR's spec %v, want ci/safe-values.yaml's values", spec)
	}
}

func TestCIName(t *testing.T) {
	tests := map[string]string{
		"safe-values.yaml": "validated-ci-safe",
		"Big_Cluster.yaml": "validated-ci-big-cluster",
		"values.yaml":      "validated-ci-values",
		"a-very-long-name-indeed-for-a-values-file-values.yaml": "validated-ci-a-very-long-name-indeed-for",
	}
	for file, want := range tests {
		if got := ciName("Validated", file); got != want {
			t.Errorf("ciName(%q) = %q, want %q", file, got, want)
		}
	}
}

func TestLostFields(t *testing.T) {
	before := map[string]any{"mode": "safe", "replicas": int64(3), "tags": []any{"c"}, "nested": map[string]any{"a": "x", "b": "y"}}
	tests := []struct {
		name  string
		after map[string]any
		want  []string
	}{
		{name: "same (numbers from JSON)", after: map[string]any{"mode": "safe", "replicas": float64(3), "tags": []any{"c"}, "nested": map[string]any{"a": "x", "b": "y"}}},
		{name: "a default added", after: map[string]any{"mode": "safe", "replicas": int64(3), "tags": []any{"c"}, "nested": map[string]any{"a": "x", "b": "y"}, "color": "red"}},
		{name: "pruned", after: map[string]any{"mode": "safe", "replicas": int64(3), "nested": map[string]any{"a": "x"}}, want: []string{"spec.nested.b pruned", "spec.tags pruned"}},
		{name: "changed", after: map[string]any{"mode": "fast", "replicas": int64(3), "tags": []any{"c"}, "nested": map[string]any{"a": "x", "b": "y"}}, want: []string{"spec.mode changed from safe to fast"}},
	}
	for _, tt := range tests {
		if got := lostFields("spec", before, tt.after); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}
