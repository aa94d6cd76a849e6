package chartpilot

import (
	"slices"
	"testing"

	"github.com/chartpilot/chartpilot/chart"
	"github.com/chartpilot/chartpilot/rbac"
)

// kinds derives the RBAC of the chart in dir and returns the kinds it creates.
func kinds(t *testing.T, dir string) (string, []string) {
	t.Helper()
	ch, err := chart.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	res, err := rbac.Derive(rbac.Options{Chart: ch, Owner: rbac.Owner{Group: "charts.example.com", Resource: "hellos"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) > 0 {
		t.Errorf("warnings: %v", res.Warnings)
	}
	var out []string
	for _, k := range res.Kinds {
		out = append(out, k.Kind)
	}
	return ch.Helm.Metadata.Version, out
}

// Version 0.1.0 renders four kinds (a claim for the server's data); the
// upgrade adds a PodDisruptionBudget,
// a kind that needs a new RBAC rule, and bumps the chart version.
func TestChartAndUpgrade(t *testing.T) {
	dir := t.TempDir()
	if err := WriteExampleChart(dir); err != nil {
		t.Fatal(err)
	}
	v, got := kinds(t, dir)
	if want := []string{"ConfigMap", "PersistentVolumeClaim", "Service", "Deployment"}; v != "0.1.0" || !sameSet(got, want) {
		t.Fatalf("version %s kinds %v, want 0.1.0 %v", v, got, want)
	}
	if err := WriteExampleUpgrade(dir); err != nil {
		t.Fatal(err)
	}
	v, got = kinds(t, dir)
	if want := []string{"ConfigMap", "PersistentVolumeClaim", "Service", "Deployment", "PodDisruptionBudget"}; v != "0.2.0" || !sameSet(got, want) {
		t.Fatalf("version %s kinds %v, want 0.2.0 %v", v, got, want)
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
