package scorecard

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/chartpilot/chartpilot/internal/scorecardtests"
)

func TestDefaultConfig(t *testing.T) {
	cfg := DefaultConfig()
	if len(cfg.Stages) != 2 || !cfg.Stages[0].Parallel || !cfg.Stages[1].Parallel {
		t.Fatalf("want a parallel static stage and a parallel cluster stage, got %+v", cfg.Stages)
	}
	tests, err := plan(cfg, "default", nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tt := range tests {
		names = append(names, tt.test.name)
	}
	if !slices.Equal(names, builtinNames()) {
		t.Errorf("default plan %v, want every built-in %v", names, builtinNames())
	}
}

func TestPlan(t *testing.T) {
	tests := []struct {
		name     string
		config   string
		selector string
		// want are the names of the planned tests, in order.
		want []string
		// wantErr is a substring of the error.
		wantErr string
	}{
		{
			name: "by entrypoint and by label, in config order",
			config: `
stages:
- parallel: true
  tests:
  - entrypoint: [scorecard-test, olm-spec-descriptors]
    labels: {suite: olm, test: olm-spec-descriptors-test}
  - labels: {suite: basic, test: basic-check-spec-test}
- tests:
  - entrypoint: [scorecard-test, chartpilot-install]
    labels: {suite: chartpilot, test: chartpilot-install-test}
`,
			want: []string{scorecardtests.OLMSpecDescriptors, scorecardtests.BasicCheckSpec, scorecardtests.ChartpilotInstall},
		},
		{
			name: "selector",
			config: `
stages:
- tests:
  - entrypoint: [scorecard-test, olm-spec-descriptors]
    labels: {suite: olm, test: olm-spec-descriptors-test}
  - entrypoint: [scorecard-test, basic-check-spec]
    labels: {suite: basic, test: basic-check-spec-test}
`,
			selector: "suite in (basic)",
			want:     []string{scorecardtests.BasicCheckSpec},
		},
		{
			name: "unknown test named, whatever the selector",
			config: `
stages:
- tests:
  - entrypoint: [scorecard-test, olm-crds-have-schemas]
    labels: {suite: olm}
`,
			selector: "suite=basic",
			wantErr:  `config.yaml: stages[0].tests[0]: unknown test "olm-crds-have-schemas"; built-in tests: basic-check-spec, chartpilot-autorollback, chartpilot-autoscale, chartpilot-backup-restore, chartpilot-insights, chartpilot-install`,
		},
		{
			name: "a test image",
			config: `
stages:
- tests:
  - image: quay.io/me/custom-tests:v1
    entrypoint: [custom-test, lint]
`,
			wantErr: `entrypoint "custom-test lint" is not a built-in test (scorecard-test NAME)`,
		},
		{
			name:    "a typo in a field",
			config:  "stages:\n- paralel: true\n  tests: []\n",
			wantErr: `config.yaml: unknown field "stages[0].paralel"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, ConfigFile), []byte("apiVersion: scorecard.operatorframework.io/v1alpha3\nkind: Configuration\nmetadata: {name: config}\n"+tt.config))
			sel, err := labels.Parse(tt.selector)
			if err != nil {
				t.Fatal(err)
			}
			list, err := List(Options{BundleDir: dir, Selector: sel})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, item := range list.Items {
				b, err := resolve(item.Spec)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, b.name)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("planned %v, want %v", got, tt.want)
			}
		})
	}
}

func TestLoadConfigErrors(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ConfigFile), []byte("apiVersion: scorecard.operatorframework.io/v1alpha2\nkind: Configuration\nstages: []\n"))
	_, _, err := LoadConfig(dir)
	if err == nil || !strings.Contains(err.Error(), `tests/scorecard/config.yaml: apiVersion "scorecard.operatorframework.io/v1alpha2" kind "Configuration": want scorecard.operatorframework.io/v1alpha3 Configuration`) {
		t.Errorf("error %v", err)
	}
	if err := os.Remove(filepath.Join(dir, ConfigFile)); err != nil {
		t.Fatal(err)
	}
	cfg, found, err := LoadConfig(dir)
	if err != nil || found || len(cfg.Stages) != 2 {
		t.Errorf("without a config: %v %v %+v, want the default", err, found, cfg)
	}
}

// config.yaml's keys are case-exact, as operator-sdk's scorecard reads
// them: a key in another case is refused, named with the file.
func TestLoadConfigStrictKeys(t *testing.T) {
	for _, tt := range []struct{ name, data, want string }{
		{name: "a top-level key", data: "apiVersion: scorecard.operatorframework.io/v1alpha3\nKind: Configuration\nstages: []\n", want: `unknown field "Kind"`},
		{name: "a test's key", data: "apiVersion: scorecard.operatorframework.io/v1alpha3\nkind: Configuration\nstages:\n- tests:\n  - Image: x\n    entrypoint: [scorecard-test, basic-check-spec]\n", want: `unknown field "stages[0].tests[0].Image"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, ConfigFile), []byte(tt.data))
			_, _, err := LoadConfig(dir)
			if err == nil || !strings.Contains(err.Error(), ConfigFile+": ") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one naming %s and %s", err, ConfigFile, tt.want)
			}
		})
	}
}

func TestExitCode(t *testing.T) {
	item := func(states ...v1alpha3.State) v1alpha3.Test {
		t := v1alpha3.NewTest()
		for _, s := range states {
			t.Status.Results = append(t.Status.Results, v1alpha3.TestResult{State: s})
		}
		return t
	}
	for _, tt := range []struct {
		items []v1alpha3.Test
		want  int
	}{
		{nil, 0},
		{[]v1alpha3.Test{item(v1alpha3.PassState), item(v1alpha3.PassState)}, 0},
		{[]v1alpha3.Test{item(v1alpha3.PassState), item(v1alpha3.ErrorState)}, 2},
		{[]v1alpha3.Test{item(v1alpha3.ErrorState), item(v1alpha3.FailState)}, 1},
	} {
		if got := ExitCode(v1alpha3.TestList{Items: tt.items}); got != tt.want {
			t.Errorf("ExitCode(%+v) = %d, want %d", tt.items, got, tt.want)
		}
	}
}

// The config/scorecard that chartpilot init scaffolds, built by kustomize
// as bundle generation does, is a config the scorecard runs: the static
// tests in a parallel stage, then the chartpilot suite in another.
func TestScaffoldedConfig(t *testing.T) {
	dir := filepath.Join("..", "scaffold", "testdata", "golden", "validated-operator", "config", "scorecard")
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatal(err)
	}
	data, err := res.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	bundle := t.TempDir()
	writeFile(t, filepath.Join(bundle, ConfigFile), data)
	cfg, found, err := LoadConfig(bundle)
	if err != nil || !found {
		t.Fatalf("%v (found %v):\n%s", err, found, data)
	}
	if len(cfg.Stages) != 2 || !cfg.Stages[0].Parallel || !cfg.Stages[1].Parallel {
		t.Errorf("stages %+v, want two parallel ones", cfg.Stages)
	}
	tests, err := plan(cfg, ConfigFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tt := range tests {
		names = append(names, tt.test.name)
	}
	if !slices.Equal(names, builtinNames()) {
		t.Errorf("scaffolded config runs %v, want %v", names, builtinNames())
	}
}
