package bundle

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/chartpilot/chartpilot/chart"
	"github.com/chartpilot/chartpilot/rbac"
)

// Images behind a value gate are related images as surely as their RBAC is
// granted; images of `helm test` hooks are not.
func TestOperandImages(t *testing.T) {
	dir := t.TempDir()
	pod := func(name, image, hook string) string {
		ann := ""
		if hook != "" {
			ann = "\n  annotations:\n    helm.sh/hook: " + hook
		}
		return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + ann + "\nspec:\n  containers: [{name: " + name + ", image: " + image + "}]\n"
	}
	for name, content := range map[string]string{
		"Chart.yaml":               "apiVersion: v2\nname: images\nversion: 0.1.0\n",
		"values.yaml":              "cache:\n  enabled: false\n",
		"templates/app.yaml":       pod("app", "example.com/app:1", ""),
		"templates/cache.yaml":     "{{- if .Values.cache.enabled }}\n" + pod("cache", "example.com/cache:2", "") + "{{- end }}\n",
		"templates/migrate.yaml":   pod("migrate", "example.com/migrate:1", "pre-upgrade"),
		"templates/test-conn.yaml": pod("test-conn", "example.com/busybox:1", "test"),
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, err := chart.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := rbac.Derive(rbac.Options{Chart: c, Owner: rbac.Owner{Group: "charts.example.com", Resource: "images"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ni := range operandImages(r.Renders) {
		got = append(got, ni[1])
	}
	slices.Sort(got)
	want := []string{"example.com/app:1", "example.com/cache:2", "example.com/migrate:1"}
	if !slices.Equal(got, want) {
		t.Errorf("images %q, want %q", got, want)
	}
}

func TestIsTestHook(t *testing.T) {
	for hook, want := range map[string]bool{
		"": false, "test": true, "test-success": true, "pre-install,test": true, "pre-install, post-upgrade": false,
	} {
		if got := isTestHook(hook); got != want {
			t.Errorf("isTestHook(%q) = %v, want %v", hook, got, want)
		}
	}
}
