package scorecard

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/internal/fuzzseed"
)

// FuzzParseConfig: config.yaml is read strictly with its file named in
// every error; a configuration it accepts writes back to the same one and
// plans without failing on anything but entries that name no built-in
// test, each error naming the file, stage and test.
func FuzzParseConfig(f *testing.F) {
	fuzzseed.Files(f,
		filepath.Join("..", "bundle", "testdata", "golden", "*", "bundle", "tests", "scorecard", "config.yaml"),
		filepath.Join("..", "scaffold", "testdata", "golden", "*", "config", "scorecard", "bases", "config.yaml"))
	def, err := yaml.Marshal(DefaultConfig())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(def)
	f.Add([]byte("apiVersion: scorecard.operatorframework.io/v1alpha3\nkind: Configuration\nmetadata: {name: c}\nstages:\n- tests:\n  - labels: {test: chartpilot-install}\n  - entrypoint: [scorecard-test]\n  - entrypoint: [custom-image, x]\n    image: quay.io/x/y\n    storage: {spec: {mountPath: {path: /tests}}}\n"))
	f.Add([]byte("apiVersion: scorecard.operatorframework.io/v1alpha3\nkind: Configuration\nserviceaccount: sa\nstorage: {spec: {mountPath: {}}}\nstages: []\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		const source = "config.yaml"
		cfg, err := parseConfig(data, source)
		if err != nil {
			if !strings.HasPrefix(err.Error(), source+": ") {
				t.Fatalf("the error does not name the file: %v", err)
			}
			return
		}
		out, err := yaml.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		again, err := parseConfig(out, source)
		if err != nil {
			t.Fatalf("parseConfig accepts\n%s\nbut not what it writes of it:\n%s\n%v", data, out, err)
		}
		if !reflect.DeepEqual(cfg, again) {
			t.Fatalf("written and read again, the configuration changed:\n%#v\n%#v", cfg, again)
		}
		entries := 0
		for _, s := range cfg.Stages {
			entries += len(s.Tests)
		}
		planned, err := plan(cfg, source, nil)
		if len(planned) > entries {
			t.Fatalf("%d tests planned from %d entries", len(planned), entries)
		}
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, source+": stages[") {
					t.Fatalf("a plan error does not name the file and entry: %q", line)
				}
			}
		}
	})
}
