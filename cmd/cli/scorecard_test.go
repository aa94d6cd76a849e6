package cli

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
)

// exampleBundle is the scorecard package's example bundle (a project's
// bundle/ directory).
var exampleBundle = filepath.Join("..", "..", "scorecard", "testdata", "project-v1", "bundle")

func TestScorecardCommand(t *testing.T) {
	broken := filepath.Join(t.TempDir(), "bundle")
	if err := os.CopyFS(broken, os.DirFS(exampleBundle)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(broken, "metadata", "annotations.yaml")); err != nil {
		t.Fatal(err)
	}
	results := filepath.Join(t.TempDir(), "results.json")
	tests := []struct {
		name string
		args []string
		// wantCode is the exit status the error carries; 0 for none.
		wantCode int
		wantErr  string
		wantOut  []string
	}{
		{
			name:    "static suites pass",
			args:    []string{"scorecard", exampleBundle, "-l", "suite!=chartpilot", "--results", results},
			wantOut: []string{"Name: basic-check-spec", "6 tests: 6 passed, 0 failed, 0 could not run"},
		},
		{
			name:     "a failing test exits 1",
			args:     []string{"scorecard", broken, "-l", "test=olm-bundle-validation-test"},
			wantCode: 1, wantErr: "scorecard: failed: olm-bundle-validation",
			wantOut: []string{"metadata/annotations.yaml: missing or without annotations"},
		},
		{
			name:     "cluster tests without a usable kubeconfig exit 2",
			args:     []string{"scorecard", exampleBundle, "-l", "suite=chartpilot", "--kubeconfig", os.DevNull},
			wantCode: 2, wantErr: "--kubeconfig " + os.DevNull + ": no context in it",
		},
		{
			name:     "a bad selector exits 2",
			args:     []string{"scorecard", exampleBundle, "-l", "suite in ("},
			wantCode: 2, wantErr: "--selector",
		},
		{
			name:     "a missing bundle exits 2",
			args:     []string{"scorecard", filepath.Join(t.TempDir(), "nothing")},
			wantCode: 2, wantErr: "reading bundle",
		},
		{
			name:    "list",
			args:    []string{"scorecard", exampleBundle, "--list", "-l", "suite=chartpilot"},
			wantOut: []string{"Entrypoint: scorecard-test chartpilot-install", "Entrypoint: scorecard-test chartpilot-rbac"},
		},
		{
			name:    "xunit",
			args:    []string{"scorecard", exampleBundle, "-l", "suite=basic", "-o", "xunit"},
			wantOut: []string{`<testsuite name="basic" tests="1" failures="0" errors="0">`},
		},
		{
			name:    "bad output format",
			args:    []string{"scorecard", exampleBundle, "-o", "yaml"},
			wantErr: "must be one of text, json, xunit",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := run(t, tt.args...)
			var exit *ExitError
			code := 0
			if errors.As(err, &exit) {
				code = exit.Code
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("error: %v\n%s", err, out)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error = %v, want one containing %q\n%s", err, tt.wantErr, out)
			}
			if code != tt.wantCode {
				t.Errorf("exit status %d, want %d", code, tt.wantCode)
			}
			for _, want := range tt.wantOut {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
		})
	}
	data, err := os.ReadFile(results)
	if err != nil {
		t.Fatal(err)
	}
	var list v1alpha3.TestList
	if err := json.Unmarshal(data, &list); err != nil {
		t.Fatal(err)
	}
	if list.Kind != "TestList" || len(list.Items) != 6 {
		t.Errorf("--results: %s with %d items, want a TestList of 6", list.Kind, len(list.Items))
	}
}
