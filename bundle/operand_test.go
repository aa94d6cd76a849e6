package bundle

import (
	"slices"
	"testing"

	"github.com/chartpilot/chartpilot/chart/charttest"
	"github.com/chartpilot/chartpilot/rbac"
)

// Images behind a value gate are related images as surely as their RBAC is
// granted; images of `helm test` hooks are not.
func TestOperandImages(t *testing.T) {
	pod := func(name, image, hook string) string {
		ann := ""
		if hook != "" {
			ann = "\n  annotations:\n    helm.sh/hook: " + hook
		}
		return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + ann + "\nspec:\n  containers: [{name: " + name + ", image: " + image + "}]\n"
	}
	c := charttest.Load(t, map[string]string{
		"Chart.yaml":               "apiVersion: v2\nname: images\nversion: 0.1.0\n",
		"values.yaml":              "cache:\n  enabled: false\n",
		"templates/app.yaml":       pod("app", "example.com/app:1", ""),
		"templates/cache.yaml":     "{{- if .Values.cache.enabled }}\n" + pod("cache", "example.com/cache:2", "") + "{{- end }}\n",
		"templates/migrate.yaml":   pod("migrate", "example.com/migrate:1", "pre-upgrade"),
		"templates/test-conn.yaml": pod("test-conn", "example.com/busybox:1", "test"),
	})
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
