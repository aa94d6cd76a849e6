package demo

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	scorecardv1alpha3 "github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
)

// A failed scorecard step names every test that did not pass and why,
// from the results file: the command's last lines may hold none of it.
func TestScorecardFailures(t *testing.T) {
	result := func(name string, state scorecardv1alpha3.State, errs ...string) scorecardv1alpha3.Test {
		return scorecardv1alpha3.Test{Status: scorecardv1alpha3.TestStatus{Results: []scorecardv1alpha3.TestResult{{Name: name, State: state, Errors: errs}}}}
	}
	tests := []struct {
		name        string
		items       []scorecardv1alpha3.Test
		want        string
		passed, all int
	}{
		{name: "all passed", items: []scorecardv1alpha3.Test{result("basic-check-spec", scorecardv1alpha3.PassState)}, passed: 1, all: 1},
		{
			name: "a failure and an error",
			items: []scorecardv1alpha3.Test{
				result("basic-check-spec", scorecardv1alpha3.PassState),
				result("chartpilot-rbac", scorecardv1alpha3.FailState, "the operator was forbidden to list pods", "the CSV lacks a rule"),
				result("chartpilot-backup-restore", scorecardv1alpha3.ErrorState, "Restore r Failed: MoverFailed"),
			},
			want: "    chartpilot-rbac fail: the operator was forbidden to list pods; the CSV lacks a rule\n" +
				"    chartpilot-backup-restore error: Restore r Failed: MoverFailed\n",
			passed: 1, all: 3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "results.json")
			data, err := json.Marshal(scorecardv1alpha3.TestList{Items: tt.items})
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			if got := scorecardFailures(path); got != tt.want {
				t.Errorf("scorecardFailures:\n%s\nwant:\n%s", got, tt.want)
			}
			if passed, all, err := scorecardResults(path); err != nil || passed != tt.passed || all != tt.all {
				t.Errorf("scorecardResults = %d of %d, %v; want %d of %d", passed, all, err, tt.passed, tt.all)
			}
		})
	}
	if got := scorecardFailures(filepath.Join(t.TempDir(), "missing.json")); got != "" {
		t.Errorf("no results file: %q, want nothing", got)
	}
}
