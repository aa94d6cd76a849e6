package scaffold

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chartpilot/chartpilot/chart"
)

// sdkProject copies the operator-sdk-style project under
// testdata/operator-sdk/webapp-operator into a temporary directory and
// vendors the webapp chart into it, as `operator-sdk create api
// --helm-chart` does.
func sdkProject(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "webapp-operator")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "operator-sdk", "webapp-operator"))); err != nil {
		t.Fatal(err)
	}
	c, err := chart.Load(chartDir("webapp"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Vendor(filepath.Join(dir, "helm-charts")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestAdoptGolden adopts an operator-sdk Helm project: the result (files,
// backups, report with diffs) is golden, kustomize builds it, and a second
// adopt changes nothing.
func TestAdoptGolden(t *testing.T) {
	dir := sdkProject(t)
	before := projectFiles(t, dir)
	var warnings bytes.Buffer
	res, err := Adopt(AdoptOptions{Dir: dir, Out: &warnings})
	if err != nil {
		t.Fatal(err)
	}
	var report bytes.Buffer
	if err := res.Write(&report, true); err != nil {
		t.Fatal(err)
	}
	checkProject(t, dir)
	files := projectFiles(t, dir)
	files["adopt.out"] = append(warnings.Bytes(), report.Bytes()...)
	checkGolden(t, "adopted-operator-sdk", files)

	// What the author wrote is either unchanged or backed up verbatim.
	for rel, data := range before {
		now := files[rel]
		if bytes.Equal(now, data) {
			continue
		}
		if backup := files[BackupDir+"/"+rel]; !bytes.Equal(backup, data) {
			t.Errorf("%s changed without a verbatim backup", rel)
		}
	}
	makefile := string(files["Makefile"])
	for _, want := range []string{
		"IMAGE_TAG_BASE ?= registry.example.org/team/webapp-operator\n", // the author's variable
		"lint-charts: ## Lint the charts.\n\thelm lint helm-charts/*\n", // the author's target
		"deploy: ## Deploy controller to the K8s cluster specified in ~/.kube/config.\n\t$(CHARTPILOT) apply --kustomize config/default --image controller=$(IMG)\n",
		"CHARTPILOT ?= ",
	} {
		if !strings.Contains(makefile, want) {
			t.Errorf("the adopted Makefile lacks %q", want)
		}
	}
	if strings.Contains(string(files["config/rbac/role.yaml"]), `"*"`) {
		t.Error("the adopted role.yaml still grants *")
	}
	// adopt scaffolds no backup APIs: no backup rules.
	for _, rule := range []string{"      - pods/exec\n", "      - volumesnapshots\n", "      - webappbackups\n"} {
		if strings.Contains(string(files["config/rbac/role.yaml"]), rule) {
			t.Errorf("the adopted role.yaml grants %q without the backup APIs", strings.TrimSpace(rule))
		}
	}
	// The Role of the namespaced rules is bound, and kustomize builds it.
	if !strings.Contains(string(files[RoleBindingFile]), "kind: RoleBinding") || !strings.Contains(string(files[rbacKustomizationFile]), "- role_all_namespaces.yaml\n") {
		t.Errorf("the adopted config/rbac does not bind the Role:\n%s\n%s", files[RoleBindingFile], files[rbacKustomizationFile])
	}
	if _, ok := kustomizeBuild(t, filepath.Join(dir, "config", "default"))["Role/webapp-operator-system/webapp-operator-manager-role"]; !ok {
		t.Error("kustomize build config/default has no Role manager-role")
	}

	again, err := Adopt(AdoptOptions{Dir: dir})
	if err != nil {
		t.Fatalf("adopting again: %v", err)
	}
	if len(again.Changes) != 0 {
		t.Errorf("adopting again changed %+v", again.Changes)
	}
}

func TestAdoptRefusals(t *testing.T) {
	tests := []struct {
		name string
		// prepare makes the project what adopt must refuse.
		prepare func(t *testing.T, dir string)
		wantErr error
		// wantMsg is a substring of the error.
		wantMsg string
	}{{
		name: "a different backup from an earlier adopt",
		prepare: func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, BackupDir, "config", "rbac", "role.yaml"), "an older role\n")
		},
		wantErr: ErrBackupExists,
		wantMsg: "config/rbac/role.yaml would be rewritten, but .chartpilot-backup/config/rbac/role.yaml holds another version",
	}, {
		name: "not a Helm project",
		prepare: func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "PROJECT"), "version: \"3\"\nlayout: [go.kubebuilder.io/v4]\n")
		},
		wantMsg: "is not a Helm operator project",
	}, {
		name:    "a watched chart that is missing",
		prepare: func(t *testing.T, dir string) { must(t, os.RemoveAll(filepath.Join(dir, "helm-charts"))) },
		wantMsg: "helm-charts/webapp",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := sdkProject(t)
			tt.prepare(t, dir)
			before := projectFiles(t, dir)
			_, err := Adopt(AdoptOptions{Dir: dir})
			if err == nil || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("Adopt() = %v, want %v containing %q", err, tt.wantErr, tt.wantMsg)
			}
			after := projectFiles(t, dir)
			if len(after) != len(before) {
				t.Errorf("a refused adopt changed the project: %d files, then %d", len(before), len(after))
			}
			for rel, data := range before {
				if !bytes.Equal(after[rel], data) {
					t.Errorf("a refused adopt changed %s", rel)
				}
			}
		})
	}
}

func TestAdoptDryRun(t *testing.T) {
	dir := sdkProject(t)
	before := projectFiles(t, dir)
	res, err := Adopt(AdoptOptions{Dir: dir, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Changes) == 0 {
		t.Fatal("a dry run found nothing to change in an operator-sdk project")
	}
	after := projectFiles(t, dir)
	if len(after) != len(before) {
		t.Errorf("a dry run changed the project: %d files, then %d", len(before), len(after))
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
