package preflight

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/chartpilot/chartpilot/catalog/edit"
)

// bundleFiles is a minimal registry+v1 bundle of package w at version v
// whose CRD has the spec property prop.
func writeBundle(t *testing.T, v, prop string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "w.v"+v)
	files := map[string]string{
		"metadata/annotations.yaml": `annotations:
  operators.operatorframework.io.bundle.mediatype.v1: registry+v1
  operators.operatorframework.io.bundle.manifests.v1: manifests/
  operators.operatorframework.io.bundle.metadata.v1: metadata/
  operators.operatorframework.io.bundle.package.v1: w
  operators.operatorframework.io.bundle.channels.v1: stable
`,
		"manifests/crd.yaml": `apiVersion: apiextensions.k8s.io/v1
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
`,
		"manifests/w.clusterserviceversion.yaml": `apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata: {name: w.v` + v + `}
spec:
  displayName: w
  version: ` + v + `
  installModes: [{type: AllNamespaces, supported: true}]
  customresourcedefinitions:
    owned: [{name: widgets.example.com, version: v1alpha1, kind: Widget}]
  install: {strategy: deployment, spec: {deployments: []}}
`,
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// LoadCRDs reads the new CRDs from a bundle directory, or from the head of
// a package's channel in a catalog directory.
func TestLoadCRDs(t *testing.T) {
	cat := filepath.Join(t.TempDir(), "catalog")
	for _, b := range []struct{ v, prop string }{{"0.1.0", "size"}, {"0.2.0", "color"}} {
		if _, err := edit.Add(t.Context(), edit.AddOptions{Dir: cat, InitPackage: true, AllowUnsafeAPIChanges: true, BundleDir: writeBundle(t, b.v, b.prop)}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		src  Source
		want string // the spec property of the CRD read
	}{
		{"bundle directory", Source{Ref: writeBundle(t, "0.3.0", "age")}, "age"},
		{"catalog directory", Source{Ref: cat, Package: "w"}, "color"},
		{"catalog directory and channel", Source{Ref: cat, Package: "w", Channel: "stable"}, "color"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			crds, err := LoadCRDs(t.Context(), tt.src)
			if err != nil {
				t.Fatal(err)
			}
			if len(crds) != 1 {
				t.Fatalf("%d CRDs, want 1", len(crds))
			}
			props := crds[0].Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties
			if _, ok := props[tt.want]; !ok || len(props) != 1 {
				t.Errorf("spec properties %v, want only %s", props, tt.want)
			}
		})
	}
	if _, err := LoadCRDs(t.Context(), Source{Ref: cat, Package: "nope"}); err == nil {
		t.Error("a package the catalog lacks: no error")
	}
}
