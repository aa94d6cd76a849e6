package scaffold

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/chart"
)

// sampleChart writes a chart whose values.yaml is values and loads it.
func sampleChart(t *testing.T, values string) *chart.Chart {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "sample")
	for name, content := range map[string]string{
		"Chart.yaml":            "apiVersion: v2\nname: sample\nversion: 0.1.0\n",
		"values.yaml":           values,
		"templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, err := chart.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSampleCR: the sample is valid YAML whose spec is exactly the chart's
// values (as Helm reads values.yaml) with the given values merged over
// them, whatever values.yaml's text holds; values.yaml's text and comments
// are kept where they can be.
func TestSampleCR(t *testing.T) {
	tests := []struct {
		name, values string
		given        map[string]any
		// want is the sample's spec; keep are lines the sample must hold.
		want map[string]any
		keep []string
	}{
		{name: "plain, comments kept", values: "# Pods to run.\nreplicas: 1\nimage:\n  tag: \"1.0\" # pinned\n",
			want: map[string]any{"replicas": 1, "image": map[string]any{"tag": "1.0"}}, keep: []string{"  # Pods to run.\n  replicas: 1\n", `    tag: "1.0" # pinned`}},
		{name: "a document start marker first", values: "---\nloki:\n  serviceName: \"\"  # Defaults to ${RELEASE}-loki\nconfig:\n  port: 2020\n",
			want: map[string]any{"loki": map[string]any{"serviceName": ""}, "config": map[string]any{"port": 2020}}, keep: []string{"  # Defaults to ${RELEASE}-loki"}},
		// Helm 4 merges the documents of values.yaml (Helm 3 read the
		// first), and refuses directives and content on a marker's line.
		{name: "a marker with a comment, a second document", values: "--- # the values\na: 1\nc: {d: 1}\n...\n---\nb: 2\nc: {e: 2}\n",
			want: map[string]any{"a": 1, "b": 2, "c": map[string]any{"d": 1, "e": 2}}},
		{name: "flow content after the marker", values: "---\n{a: 1, b: [x]}\n", want: map[string]any{"a": 1, "b": []any{"x"}}},
		{name: "block and multi-line scalars", values: "script: |\n  #!/bin/sh\n\n  echo: hi\nfolded: >-\n  one\n  two\nlong: \"first\n  second\"\nplain: a\n  b\n",
			want: map[string]any{"script": "#!/bin/sh\n\necho: hi\n", "folded": "one two", "long": "first second", "plain": "a b"}},
		{name: "YAML 1.1 scalars as Helm reads them", values: "on: yes\nmode: 0777\nname: off\n", given: map[string]any{"extra": "y"},
			want: map[string]any{"true": true, "mode": 511, "name": false, "extra": "y"}},
		{name: "given values merged, anchors' other aliases kept", values: "base: &b\n  cpu: 100m\n  memory: 1Gi\nfirst: *b\nsecond: *b\nlist: [1, 2]\ngone: x\n",
			given: map[string]any{"first": map[string]any{"cpu": "1"}, "list": []any{3}, "gone": nil, "new": map[string]any{"key": int64(5)}},
			want: map[string]any{"base": map[string]any{"cpu": "100m", "memory": "1Gi"}, "first": map[string]any{"cpu": "1", "memory": "1Gi"},
				"second": map[string]any{"cpu": "100m", "memory": "1Gi"}, "list": []any{3}, "gone": nil, "new": map[string]any{"key": 5}},
			keep: []string{"given to chartpilot"}},
		{name: "null values.yaml", values: "null\n", want: map[string]any{}},
		{name: "null values.yaml, values given", values: "# nothing\n", given: map[string]any{"a": "b"}, want: map[string]any{"a": "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := sampleChart(t, tt.values)
			c.Values = tt.given
			out, err := sampleCR(c, resourceData{Group: "charts.example.com", Version: "v1alpha1", Kind: "Sample", Lower: "sample"})
			if err != nil {
				t.Fatal(err)
			}
			var obj struct {
				APIVersion string         `json:"apiVersion"`
				Kind       string         `json:"kind"`
				Spec       map[string]any `json:"spec"`
			}
			if err := yaml.Unmarshal(out, &obj); err != nil {
				t.Fatalf("the sample is not YAML: %v\n%s", err, out)
			}
			if obj.APIVersion != "charts.example.com/v1alpha1" || obj.Kind != "Sample" {
				t.Errorf("apiVersion %q, kind %q", obj.APIVersion, obj.Kind)
			}
			if obj.Spec == nil {
				obj.Spec = map[string]any{}
			}
			if !sameJSON(obj.Spec, tt.want) {
				t.Errorf("spec = %v, want %v\n%s", obj.Spec, tt.want, out)
			}
			for _, k := range tt.keep {
				if !strings.Contains(string(out), k) {
					t.Errorf("the sample lacks %q:\n%s", k, out)
				}
			}
		})
	}
}

// TestInitChartsPeopleWrite: init takes charts whose values.yaml opens
// with a document marker, whose subcharts' values.yaml is null or empty,
// and whose values.schema.json covers only the chart's own values; the
// sample it writes reads back as the chart's values.
func TestInitChartsPeopleWrite(t *testing.T) {
	for _, dir := range []string{
		filepath.Join("testdata", "charts", "docstart"),
		filepath.Join("..", "crdschema", "testdata", "charts", "schemaparent"),
	} {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			project := filepath.Join(t.TempDir(), "op")
			if err := Init(Options{APIOptions: APIOptions{Chart: dir}, Dir: project}); err != nil {
				t.Fatal(err)
			}
			c, err := chart.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			samples, err := filepath.Glob(filepath.Join(project, "config", "samples", "charts.example.com_v1alpha1_*.yaml"))
			if err != nil || len(samples) == 0 {
				t.Fatalf("no sample: %v", err)
			}
			var obj struct {
				Spec map[string]any `json:"spec"`
			}
			data, err := os.ReadFile(samples[0])
			if err != nil {
				t.Fatal(err)
			}
			if err := yaml.Unmarshal(data, &obj); err != nil {
				t.Fatalf("%s: %v", samples[0], err)
			}
			if !sameJSON(obj.Spec, c.Helm.Values) {
				t.Errorf("the sample's spec %v is not the chart's values %v", obj.Spec, c.Helm.Values)
			}
		})
	}
}
