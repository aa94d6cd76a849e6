package scorecard

import (
	"context"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/chartpilot/chartpilot/internal/registryv1"
	"github.com/chartpilot/chartpilot/internal/scorecardtests"
)

// runOne runs the built-in test name on the bundle in dir.
func runOne(t *testing.T, dir, name string) v1alpha3.TestResult {
	t.Helper()
	list, err := Run(context.Background(), Options{BundleDir: dir, Selector: labels.SelectorFromSet(labels.Set{labelTest: name + "-test"})})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || len(list.Items[0].Status.Results) != 1 {
		t.Fatalf("want one result of %s, got %+v", name, list.Items)
	}
	return list.Items[0].Status.Results[0]
}

func TestStaticTests(t *testing.T) {
	tests := []struct {
		test string
		// change breaks the passing fixture; nil keeps it as it is.
		change    func(*fixture)
		wantState v1alpha3.State
		// wantError is a substring of the result's errors.
		wantError string
	}{
		{test: scorecardtests.BasicCheckSpec, wantState: v1alpha3.PassState},
		{
			test:      scorecardtests.BasicCheckSpec,
			change:    func(f *fixture) { delete(f.examples[0], "spec") },
			wantState: v1alpha3.FailState, wantError: "error spec does not exist for the custom resource validated-sample",
		},
		{
			test:      scorecardtests.BasicCheckSpec,
			change:    func(f *fixture) { f.csv.Annotations[almExamples] = "" },
			wantState: v1alpha3.PassState,
		},
		{test: scorecardtests.OLMBundleValidation, wantState: v1alpha3.PassState},
		{
			test:      scorecardtests.OLMBundleValidation,
			change:    func(f *fixture) { f.csv.Spec.CustomResourceDefinitions.Owned[0].Kind = "Widget" },
			wantState: v1alpha3.FailState, wantError: `owned CRD "charts.example.com/v1alpha1, Kind=Widget" not found in bundle`,
		},
		{
			test:      scorecardtests.OLMBundleValidation,
			change:    func(f *fixture) { delete(f.annotations, registryv1.AnnotationPackage) },
			wantState: v1alpha3.FailState, wantError: "metadata/annotations.yaml: annotation operators.operatorframework.io.bundle.package.v1 is required",
		},
		{
			test:      scorecardtests.OLMBundleValidation,
			change:    func(f *fixture) { f.annotations[registryv1.AnnotationDefaultChannel] = "stable" },
			wantState: v1alpha3.FailState, wantError: `default channel "stable" is not one of the bundle's channels "alpha"`,
		},
		{test: scorecardtests.OLMCRDsHaveValidation, wantState: v1alpha3.PassState},
		{
			test:      scorecardtests.OLMCRDsHaveValidation,
			change:    func(f *fixture) { f.examples[0]["spec"].(map[string]any)["size"] = 3 },
			wantState: v1alpha3.FailState, wantError: `Validated validated-sample: spec field "size" is not in the schema of CRD validateds.charts.example.com version v1alpha1`,
		},
		{test: scorecardtests.OLMCRDsHaveResources, wantState: v1alpha3.PassState},
		{
			test:      scorecardtests.OLMCRDsHaveResources,
			change:    func(f *fixture) { f.csv.Spec.CustomResourceDefinitions.Owned[0].Resources = nil },
			wantState: v1alpha3.FailState, wantError: "Owned CRDs do not have resources specified: validateds.charts.example.com",
		},
		{test: scorecardtests.OLMSpecDescriptors, wantState: v1alpha3.PassState},
		{
			test: scorecardtests.OLMSpecDescriptors,
			change: func(f *fixture) {
				f.csv.Spec.CustomResourceDefinitions.Owned[0].SpecDescriptors = f.csv.Spec.CustomResourceDefinitions.Owned[0].SpecDescriptors[:2]
			},
			wantState: v1alpha3.FailState, wantError: "tags does not have a spec descriptor",
		},
		{
			test:      scorecardtests.OLMSpecDescriptors,
			change:    func(f *fixture) { f.examples[0]["kind"] = "Widget" },
			wantState: v1alpha3.FailState, wantError: "Failed to find an owned CRD for CR validated-sample with GVK charts.example.com/v1alpha1, Kind=Widget",
		},
		{test: scorecardtests.OLMStatusDescriptors, wantState: v1alpha3.PassState},
		{
			test: scorecardtests.OLMStatusDescriptors,
			change: func(f *fixture) {
				f.examples[0]["status"] = map[string]any{"conditions": []any{}}
				f.csv.Spec.CustomResourceDefinitions.Owned[0].StatusDescriptors = nil
			},
			wantState: v1alpha3.FailState, wantError: "validateds.charts.example.com does not have a status descriptor",
		},
		{
			test:      scorecardtests.OLMStatusDescriptors,
			change:    func(f *fixture) { f.csv.Annotations[almExamples] = "{not json" },
			wantState: v1alpha3.ErrorState, wantError: "annotation alm-examples is not a JSON list of objects",
		},
	}
	for _, tt := range tests {
		name := tt.test + "/" + string(tt.wantState)
		if tt.wantError != "" {
			name += "/" + tt.wantError
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, "0.1.0")
			if tt.change != nil {
				tt.change(f)
			}
			res := runOne(t, f.write(t, t.TempDir()), tt.test)
			if res.Name != tt.test {
				t.Errorf("result name %q, want %q", res.Name, tt.test)
			}
			if res.State != tt.wantState {
				t.Errorf("state %s, want %s; errors %q, suggestions %q", res.State, tt.wantState, res.Errors, res.Suggestions)
			}
			if tt.wantError != "" && !strings.Contains(strings.Join(res.Errors, "\n"), tt.wantError) {
				t.Errorf("errors %q do not say %q", res.Errors, tt.wantError)
			}
			if tt.wantState == v1alpha3.PassState && len(res.Errors) > 0 {
				t.Errorf("passed with errors %q", res.Errors)
			}
		})
	}
}
