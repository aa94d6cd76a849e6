package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestInitAndCreateAPI(t *testing.T) {
	charts := filepath.Join("..", "..", "chart", "testdata", "charts")
	dir := filepath.Join(t.TempDir(), "op")
	tests := []struct {
		name    string
		args    []string
		wantErr string
		wantOut string
		// wantFile must exist in dir afterwards.
		wantFile string
	}{
		{name: "init needs a chart", args: []string{"init", dir}, wantErr: `required flag(s) "chart" not set`},
		{name: "init", args: []string{"init", dir, "--chart", filepath.Join(charts, "webapp"), "--domain", "acme.io"},
			wantOut: "Wrote the project to " + dir, wantFile: "config/crd/bases/charts.acme.io_webapps.yaml"},
		{name: "init refuses a non-empty directory", args: []string{"init", dir, "--chart", filepath.Join(charts, "webapp")}, wantErr: "target directory is not empty"},
		{name: "create api", args: []string{"create", "api", "--project-dir", dir, "--chart", filepath.Join(charts, "umbrella"), "--kind", "Stack"},
			wantOut: "warning: umbrella/templates/servicemonitor.yaml", wantFile: "config/samples/charts.acme.io_v1alpha1_stack.yaml"},
		{name: "create api refuses the same kind", args: []string{"create", "api", "--project-dir", dir, "--chart", filepath.Join(charts, "widgets"), "--kind", "Stack"}, wantErr: "API already exists"},
		{name: "generate", args: []string{"generate", "--project-dir", dir}, wantOut: "Regenerated config/rbac/role.yaml", wantFile: "config/crd/bases/charts.acme.io_stacks.yaml"},
		{name: "generate --discovery without a cluster", args: []string{"generate", "--project-dir", dir, "--discovery", "--kubeconfig", filepath.Join(dir, "none")}, wantErr: "--discovery"},
		{name: "adopt a chartpilot project: nothing to change", args: []string{"adopt", dir, "--dry-run"}, wantOut: "Nothing to change"},
		{name: "adopt a directory without a project", args: []string{"adopt", t.TempDir()}, wantErr: "adopt: reading the project"},
		{name: "removed APIs fail init", args: []string{"init", filepath.Join(t.TempDir(), "legacy"), "--chart", filepath.Join(charts, "legacy")}, wantErr: "batch/v1beta1 CronJob is no longer served since Kubernetes 1.25: use apiVersion batch/v1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := run(t, tt.args...)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("error: %v\n%s", err, out)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
			if !strings.Contains(out, tt.wantOut) {
				t.Errorf("output lacks %q:\n%s", tt.wantOut, out)
			}
			if tt.wantFile != "" {
				if _, err := os.Stat(filepath.Join(dir, tt.wantFile)); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

func TestDirName(t *testing.T) {
	for dir, want := range map[string]string{".": "the current directory", "": "the current directory", "./": "the current directory", "op": "op", "..": "..", "/tmp/op": "/tmp/op"} {
		if got := dirName(dir); got != want {
			t.Errorf("dirName(%q) = %q, want %q", dir, got, want)
		}
	}
}
