package watches

import (
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// watchesSeeds are watches files as operator-sdk and chartpilot write them,
// and the corners of the format.
var watchesSeeds = []string{
	"- group: charts.example.com\n  version: v1alpha1\n  kind: App\n  chart: app\n",
	`
- group: charts.example.com
  version: v1alpha1
  kind: App
  chart: app
  watchDependentResources: false
  overrideValues:
    image.repository: $IMAGE
    image.tag: v${TAG}
  reconcilePeriod: 90s
  maxConcurrentReconciles: 4
  selector:
    matchLabels: {tier: gold}
    matchExpressions:
    - {key: env, operator: In, values: [prod]}
  dryRunOption: server
- group: charts.example.com
  version: v1
  kind: App
  chart: helm-charts/app
`,
	`[{"version":"v1","kind":"Web","chart":"app","reconcilePeriod":"0s","dryRunOption":"none"}]`,
	"# generated\n---\n- version: v1\n  kind: A\n  chart: app\n  overrideValues: {a.b[0]: '1'}\n",
	"- version: v1\n  kind: A\n  chart: app\n  unknown: 1\n",
	"- version: v1\n  kind: A\n  chart: app\n- version: v1\n  kind: A\n  chart: app\n",
	"- group: ''\n  version: v1\n  kind: A\n  chart: app\n  maxConcurrentReconciles: 0\n",
}

// FuzzDecode: Decode names the file in every error; an entry it accepts has
// a group, version and kind the API server can serve; what it accepts
// writes back to the same entries; and, as its doc promises, the runtime
// (Parse) accepts it when its charts load.
func FuzzDecode(f *testing.F) {
	for _, s := range watchesSeeds {
		f.Add([]byte(s))
	}
	getenv := func(k string) string { return "env-" + k }
	f.Fuzz(func(t *testing.T, data []byte) {
		ws, err := Decode(data, "watches.yaml")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "watches.yaml: ") {
				t.Fatalf("the error does not name the file: %v", err)
			}
			return
		}
		out, err := yaml.Marshal(ws)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Decode(out, "again.yaml")
		if err != nil {
			t.Fatalf("Decode accepts\n%s\nbut not what it writes of it:\n%s\n%v", data, out, err)
		}
		// Compared as written: an empty map and none are the same entry.
		if out2, err := yaml.Marshal(again); err != nil || string(out2) != string(out) {
			t.Fatalf("written and decoded again, the entries changed:\n%s\n%s", out, out2)
		}

		// Every chart the one test chart: Parse must take the file.
		for i := range ws {
			ws[i].Chart = "app"
		}
		if out, err = yaml.Marshal(ws); err != nil {
			t.Fatal(err)
		}
		parsed, err := Parse(out, filepath.Join("testdata", "charts"), "watches.yaml", Options{Getenv: getenv})
		if err != nil {
			t.Fatalf("Decode accepts\n%s\nbut Parse refuses it with a chart that loads: %v", data, err)
		}
		if len(parsed) != len(ws) {
			t.Fatalf("Parse returns %d entries, Decode %d", len(parsed), len(ws))
		}
		for _, w := range parsed {
			if w.LoadedChart == nil || w.LabelSelector == nil || w.DryRunOption == "" {
				t.Fatalf("entry %s not completed", w.GroupVersionKind())
			}
		}
	})
}
