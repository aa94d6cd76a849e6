package scorecard

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	goldenfile "github.com/chartpilot/chartpilot/internal/golden"
	"github.com/chartpilot/chartpilot/internal/scorecardtests"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.File(t, filepath.Join("testdata", name), got, *update)
}

// The example bundle the command's tests use: the fixture as a file tree.
func TestExampleBundle(t *testing.T) {
	dir := newFixture(t, "0.1.0").write(t, t.TempDir())
	for _, name := range []string{
		"manifests/validated-operator.clusterserviceversion.yaml",
		"manifests/charts.example.com_validateds.yaml",
		"metadata/annotations.yaml",
	} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		golden(t, filepath.Join("project-v1", "bundle", name), data)
	}
}

func TestWriteResults(t *testing.T) {
	f := newFixture(t, "0.1.0")
	f.csv.Spec.CustomResourceDefinitions.Owned[0].SpecDescriptors = nil
	f.csv.Spec.CustomResourceDefinitions.Owned[0].Resources = nil
	dir := f.write(t, t.TempDir())
	list, err := Run(context.Background(), Options{BundleDir: dir, Selector: labels.SelectorFromSet(labels.Set{labelSuite: scorecardtests.SuiteOLM})})
	if err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		for j := range list.Items[i].Status.Results {
			r := &list.Items[i].Status.Results[j]
			r.CreationTimestamp = metav1.Time{}
			r.Log = strings.ReplaceAll(r.Log, dir, "BUNDLE")
		}
	}
	for format, file := range map[string]string{FormatText: "results.txt", FormatJSON: "results.json", FormatXUnit: "results.xml"} {
		var buf bytes.Buffer
		if err := WriteResults(&buf, list, format); err != nil {
			t.Fatal(err)
		}
		golden(t, filepath.Join("golden", file), buf.Bytes())
	}
	if err := WriteResults(&bytes.Buffer{}, list, "yaml"); err == nil || !strings.Contains(err.Error(), `unknown output format "yaml"`) {
		t.Errorf("yaml: %v", err)
	}
	if got := ExitCode(list); got != 1 {
		t.Errorf("exit code %d, want 1", got)
	}
}

func TestListHasNoResults(t *testing.T) {
	list, err := List(Options{BundleDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != len(builtins()) {
		t.Fatalf("listed %d tests, want %d", len(list.Items), len(builtins()))
	}
	var buf bytes.Buffer
	if err := WriteResults(&buf, list, FormatText); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "Results:") || !strings.Contains(buf.String(), "Entrypoint: scorecard-test chartpilot-rbac") {
		t.Errorf("list output:\n%s", buf.String())
	}
	for _, item := range list.Items {
		if item.APIVersion != v1alpha3.GroupVersion.String() || item.Kind != "Test" {
			t.Errorf("item %+v is not a v1alpha3 Test", item.TypeMeta)
		}
	}
}

func TestSummary(t *testing.T) {
	result := func(name string, state v1alpha3.State) v1alpha3.Test {
		return v1alpha3.Test{Status: v1alpha3.TestStatus{Results: []v1alpha3.TestResult{{Name: name, State: state}}}}
	}
	tests := []struct {
		name  string
		items []v1alpha3.Test
		want  string
	}{
		{"all passed", []v1alpha3.Test{result("a", v1alpha3.PassState)}, ""},
		{"failed, in order", []v1alpha3.Test{result("b", v1alpha3.FailState), result("a", v1alpha3.PassState), result("c", v1alpha3.FailState)}, "failed: b, c"},
		{"failed and could not run", []v1alpha3.Test{result("e", v1alpha3.ErrorState), result("f", v1alpha3.FailState)}, "failed: f; could not run: e"},
		{"nothing", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Summary(v1alpha3.TestList{Items: tt.items}); got != tt.want {
				t.Errorf("Summary = %q, want %q", got, tt.want)
			}
		})
	}
}

// The results file reads back as the list it was written from.
func TestWriteResultsFile(t *testing.T) {
	list := v1alpha3.NewTestList()
	list.Items = append(list.Items, v1alpha3.Test{Status: v1alpha3.TestStatus{Results: []v1alpha3.TestResult{{Name: "a", State: v1alpha3.PassState}}}})
	path := filepath.Join(t.TempDir(), "results", "scorecard.json")
	if err := WriteResultsFile(path, list); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var back v1alpha3.TestList
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back.Kind != list.Kind || len(back.Items) != 1 || back.Items[0].Status.Results[0].Name != "a" {
		t.Errorf("read back %+v", back)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteResultsFile(filepath.Join(file, "scorecard.json"), list); err == nil || !strings.Contains(err.Error(), "writing results") {
		t.Errorf("writing below a file: %v", err)
	}
}
