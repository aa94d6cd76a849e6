package scorecard

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	goldenfile "github.com/chartpilot/chartpilot/internal/golden"
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
	list, err := Run(context.Background(), Options{BundleDir: dir, Selector: labels.SelectorFromSet(labels.Set{labelSuite: SuiteOLM})})
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
