package scaffold

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chartpilot/chartpilot/rbac"
)

func TestGenerateAfterChartChanges(t *testing.T) {
	const job = "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {{ .Release.Name }}-migrate\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: m, image: x}]\n"
	tests := []struct {
		name string
		// change edits the vendored chart.
		change func(t *testing.T, chartDir string)
		// wantRole and wantCRD are substrings of the regenerated files.
		wantRole, wantCRD string
		wantErr           error
	}{{
		name: "a new kind and a new value",
		change: func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "templates", "job.yaml"), job)
			appendFile(t, filepath.Join(dir, "values.yaml"), "# Run database migrations first.\nmigrate: true\n")
		},
		wantRole: "  # batch/v1 Job (webapp/templates/job.yaml)\n  - apiGroups:\n      - batch\n    resources:\n      - jobs\n",
		wantCRD:  "              migrate:\n                description: Run database migrations first.\n                type: boolean\n",
	}, {
		name: "a removed API fails and changes nothing",
		change: func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "templates", "job.yaml"), strings.Replace(job, "batch/v1\nkind: Job", "batch/v1beta1\nkind: CronJob", 1))
		},
		wantErr: rbac.ErrRemovedAPI,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "op")
			if err := Init(Options{APIOptions: APIOptions{Chart: chartDir("webapp")}, Dir: dir}); err != nil {
				t.Fatal(err)
			}
			rolePath := filepath.Join(dir, "config", "rbac", "role.yaml")
			crdPath := filepath.Join(dir, "config", "crd", "bases", "charts.example.com_webapps.yaml")
			roleBefore, _ := os.ReadFile(rolePath)
			crdBefore, _ := os.ReadFile(crdPath)
			tt.change(t, filepath.Join(dir, "helm-charts", "webapp"))
			err := Generate(GenerateOptions{Dir: dir})
			role, _ := os.ReadFile(rolePath)
			crd, _ := os.ReadFile(crdPath)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Generate() = %v, want %v", err, tt.wantErr)
				}
				if !bytes.Equal(role, roleBefore) || !bytes.Equal(crd, crdBefore) {
					t.Error("a failed generate changed role.yaml or the CRD")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(role), tt.wantRole) {
				t.Errorf("role.yaml lacks %q:\n%s", tt.wantRole, role)
			}
			if !strings.Contains(string(crd), tt.wantCRD) {
				t.Errorf("CRD lacks %q:\n%s", tt.wantCRD, crd)
			}
		})
	}
}

func appendFile(t *testing.T, path, content string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}
}
