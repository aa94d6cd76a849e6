package watches

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	env := map[string]string{"IMAGE": "quay.io/x/app:1.2", "TAG": "1.2"}
	opts := Options{Getenv: func(k string) string { return env[k] }}
	data := `
- group: charts.example.com
  version: v1alpha1
  kind: App
  chart: testdata/charts/app
  watchDependentResources: false
  overrideValues:
    image.repository: $IMAGE
    image.tag: v${TAG}
  reconcilePeriod: 90s
  maxConcurrentReconciles: 4
  selector:
    matchLabels: {tier: gold}
  dryRunOption: server
  healthDeadline: 2m
- group: charts.example.com
  version: v1
  kind: App
  chart: testdata/charts/app
`
	ws, err := Parse([]byte(data), ".", "watches.yaml", opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 2 {
		t.Fatalf("%d entries", len(ws))
	}
	w := ws[0]
	if w.GroupVersionKind().String() != "charts.example.com/v1alpha1, Kind=App" {
		t.Errorf("GVK %s", w.GroupVersionKind())
	}
	if w.WatchesDependents() {
		t.Error("watchDependentResources: false ignored")
	}
	if got := w.OverrideValues["image.repository"]; got != "quay.io/x/app:1.2" {
		t.Errorf("$IMAGE expanded to %q", got)
	}
	if got := w.OverrideValues["image.tag"]; got != "v1.2" {
		t.Errorf("${TAG} expanded to %q", got)
	}
	if w.Period() != 90*time.Second || *w.MaxConcurrentReconciles != 4 || w.DryRunOption != DryRunServer {
		t.Errorf("period %s, max %d, dry run %s", w.Period(), *w.MaxConcurrentReconciles, w.DryRunOption)
	}
	if w.Deadline() != 2*time.Minute {
		t.Errorf("health deadline %s", w.Deadline())
	}
	if w.LabelSelector.String() != "tier=gold" {
		t.Errorf("selector %s", w.LabelSelector)
	}
	if w.LoadedChart == nil || w.LoadedChart.Name() != "app" {
		t.Error("chart not loaded")
	}
	// Defaults.
	d := ws[1]
	if !d.WatchesDependents() || d.Period() != 0 || d.DryRunOption != DryRunClient || !d.LabelSelector.Empty() || d.Deadline() != DefaultHealthDeadline {
		t.Errorf("defaults: dependents %v, period %s, dry run %s, selector %s, health deadline %s", d.WatchesDependents(), d.Period(), d.DryRunOption, d.LabelSelector, d.Deadline())
	}
}

func TestParseErrors(t *testing.T) {
	entry := func(extra string) string {
		return "- group: g.example.com\n  version: v1\n  kind: K\n  chart: testdata/charts/app\n" + extra
	}
	tests := []struct {
		name string
		data string
		// want are substrings of the error
		want []string
	}{
		{"empty file", "", []string{"watches.yaml: no entries"}},
		{"not a list", "group: x", []string{"watches.yaml"}},
		{"unknown field", entry("  chartPath: typo\n"), []string{"watches.yaml", `unknown field "[0].chartPath"`}},
		// Keys are case-exact: another reader of the file would not see ChArt.
		{"a key in another case", "- group: g.example.com\n  version: v1\n  kind: K\n  ChArt: testdata/charts/app\n", []string{"watches.yaml", `unknown field "[0].ChArt"`, "case-sensitive"}},
		{"a nested key in another case", entry("  selector:\n    MatchLabels: {a: b}\n"), []string{"watches.yaml", `unknown field "[0].selector.MatchLabels"`}},
		{"missing version", "- group: g\n  kind: K\n  chart: testdata/charts/app\n", []string{"entry 1", "version is required"}},
		{"missing kind", "- group: g\n  version: v1\n  chart: testdata/charts/app\n", []string{"entry 1", "kind is required"}},
		{"missing chart field", "- group: g\n  version: v1\n  kind: K\n", []string{"entry 1 (g/v1, Kind=K)", "chart is required"}},
		{"chart not found", "- group: g\n  version: v1\n  kind: K\n  chart: testdata/charts/missing\n", []string{"entry 1 (g/v1, Kind=K)", "chart testdata/charts/missing"}},
		{"duplicate GVK", entry("") + entry(""), []string{"entry 2 (g.example.com/v1, Kind=K)", "duplicate of entry 1"}},
		{"bad dry run option", entry("  dryRunOption: sometimes\n"), []string{"entry 1", `dryRunOption "sometimes"`}},
		{"bad selector", entry("  selector:\n    matchExpressions: [{key: a, operator: Sideways}]\n"), []string{"entry 1", "selector"}},
		{"zero concurrency", entry("  maxConcurrentReconciles: 0\n"), []string{"maxConcurrentReconciles 0"}},
		{"bad period", entry("  reconcilePeriod: soon\n"), []string{"watches.yaml"}},
		{"negative health deadline", entry("  healthDeadline: -1m\n"), []string{"entry 1", "healthDeadline -1m0s"}},
		{"every bad entry reported", "- version: v1\n  kind: A\n  chart: nope\n- version: v1\n  kind: B\n", []string{"entry 1 (/v1, Kind=A)", "entry 2 (/v1, Kind=B)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.data), ".", "watches.yaml", Options{})
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// Charts resolve against the watches file's directory first.
func TestLoadResolvesChartsNextToTheFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(filepath.Join(dir, "helm-charts", "app"), os.DirFS("testdata/charts/app")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "watches.yaml")
	if err := os.WriteFile(path, []byte("- {group: g, version: v1, kind: K, chart: helm-charts/app}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, err := Load(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ws[0].ChartPath != filepath.Join(dir, "helm-charts", "app") {
		t.Errorf("ChartPath %s", ws[0].ChartPath)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml"), Options{}); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing file: %v", err)
	}
}
