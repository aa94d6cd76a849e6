package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeCRD adds a Widget CRD whose spec has the given property to a test
// bundle.
func writeCRD(t *testing.T, bundleDir, prop string) {
	t.Helper()
	crd := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {` + prop + `: {type: string}}}}}}
`
	if err := os.WriteFile(filepath.Join(bundleDir, "manifests", "crd.yaml"), []byte(crd), 0o644); err != nil {
		t.Fatal(err)
	}
}

// catalog add and bundle validate --previous refuse a removed field, with
// the field, why and what to do, unless --allow-unsafe-api-changes.
func TestUnsafeAPIChangeCommands(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "catalog")
	b1, b2 := writeTestBundle(t, "demo", "0.1.0"), writeTestBundle(t, "demo", "0.2.0")
	writeCRD(t, b1, "size")
	writeCRD(t, b2, "color")
	steps := []struct {
		name    string
		args    []string
		wantErr string
		wantOut []string
	}{
		{name: "add the first", args: []string{"catalog", "add", "--dir", dir, "--init-package", b1}, wantOut: []string{"added demo.v0.1.0"}},
		{name: "add a field removal", args: []string{"catalog", "add", "--dir", dir, b2},
			wantErr: "since demo.v0.1.0: widgets.example.com v1alpha1 spec.size: existingFieldRemoval: field removed"},
		{name: "bundle validate --previous", args: []string{"bundle", "validate", b2, "--previous", b1, "--project", ""},
			wantErr: "validation error", wantOut: []string{"error: manifests/crd.yaml v1alpha1 spec.size: existingFieldRemoval: field removed since " + b1}},
		{name: "add it allowed", args: []string{"catalog", "add", "--dir", dir, b2, "--allow-unsafe-api-changes"},
			wantOut: []string{"warning: unsafe API change since demo.v0.1.0 (allowed): widgets.example.com v1alpha1 spec.size", "added demo.v0.2.0"}},
	}
	for _, s := range steps {
		out, err := run(t, s.args...)
		switch {
		case s.wantErr == "" && err != nil:
			t.Fatalf("%s: %v\n%s", s.name, err, out)
		case s.wantErr != "" && (err == nil || !strings.Contains(err.Error(), s.wantErr)):
			t.Fatalf("%s: error %v, want one containing %q\n%s", s.name, err, s.wantErr, out)
		}
		for _, w := range s.wantOut {
			if !strings.Contains(out, w) {
				t.Errorf("%s: output lacks %q:\n%s", s.name, w, out)
			}
		}
	}
}
