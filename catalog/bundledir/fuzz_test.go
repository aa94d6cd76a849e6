package bundledir_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"testing/fstest"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/chartpilot/chartpilot/catalog/bundledir"
	"github.com/chartpilot/chartpilot/catalog/internal/catalogtest"
)

// sameProperties compares properties by type and value as JSON: declcfg's
// loader writes values with their keys sorted.
func sameProperties(t *testing.T, a, b []property.Property) bool {
	t.Helper()
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		var va, vb any
		if json.Unmarshal(a[i].Value, &va) != nil || json.Unmarshal(b[i].Value, &vb) != nil {
			t.Fatalf("a property value that is not JSON: %s, %s", a[i].Value, b[i].Value)
		}
		if a[i].Type != b[i].Type || !reflect.DeepEqual(va, vb) {
			return false
		}
	}
	return true
}

// FuzzLoadBundleDir reads a bundle directory whose annotations, CSV, CRD
// and metadata properties are fuzzed. Every error it returns is
// bundledir.ErrInvalidBundle; a bundle it reads has a package and a name, and its
// olm.bundle blob reads back through declcfg's loader unchanged (so the
// catalog it goes into loads and serves).
func FuzzLoadBundleDir(f *testing.F) {
	files := catalogtest.BundleFiles(catalogtest.BundleSpec{Pkg: "widget", Version: "1.0.0", Channels: "stable,fast", DefaultChannel: "stable"})
	csv := files["manifests/widget.clusterserviceversion.yaml"]
	ann, crd := files["metadata/annotations.yaml"], files["manifests/crd.yaml"]
	f.Add([]byte(ann), []byte(csv), []byte(crd), []byte(nil), []byte(nil))
	f.Add([]byte(ann), []byte(csv), []byte(crd),
		[]byte("dependencies:\n- type: olm.package\n  value: {packageName: db, version: '>=1.0.0'}\n- type: olm.gvk\n  value: {group: db.example.com, kind: DB, version: v1}\n"),
		[]byte("properties:\n- type: olm.maxOpenShiftVersion\n  value: '4.16'\n- type: custom\n  value: {a: [1, 2]}\n"))
	f.Add([]byte("annotations:\n  operators.operatorframework.io.bundle.package.v1: p\n  operators.operatorframework.io.bundle.manifests.v1: m/\n"),
		[]byte(`{"apiVersion":"operators.coreos.com/v1alpha1","kind":"ClusterServiceVersion","metadata":{"name":"p.v1"},"spec":{"version":"1.0.0-rc.1+b"}}`),
		[]byte("---\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"), []byte("dependencies: []\n"), []byte("properties:\n"))
	f.Add([]byte("annotations: {}"), []byte("kind: ClusterServiceVersion\n"), []byte("x"), []byte("{"), []byte("["))
	f.Fuzz(func(t *testing.T, annotations, csv, crd, dependencies, properties []byte) {
		fsys := fstest.MapFS{
			"metadata/annotations.yaml": {Data: annotations},
			"manifests/a.csv.yaml":      {Data: csv},
			"manifests/crd.yaml":        {Data: crd},
		}
		if dependencies != nil {
			fsys["metadata/dependencies.yaml"] = &fstest.MapFile{Data: dependencies}
		}
		if properties != nil {
			fsys["metadata/properties.yaml"] = &fstest.MapFile{Data: properties}
		}
		// The manifests annotation may point elsewhere: the same files there.
		for _, dir := range []string{"m", "x"} {
			fsys[dir+"/a.yaml"] = &fstest.MapFile{Data: csv}
		}
		for _, image := range []string{"", "example.com/widget-bundle:v1"} {
			b, err := bundledir.Load(fsys, bundledir.Options{Image: image})
			if err != nil {
				if !errors.Is(err, bundledir.ErrInvalidBundle) {
					t.Fatalf("an error that is not bundledir.ErrInvalidBundle: %v", err)
				}
				return
			}
			if b.Package == "" || b.Name == "" || b.Declcfg.Package != b.Package || b.Declcfg.Name != b.Name {
				t.Fatalf("bundle %q of package %q, blob %q of %q", b.Name, b.Package, b.Declcfg.Name, b.Declcfg.Package)
			}
			blob, err := json.Marshal(b.Declcfg)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := declcfg.LoadReader(bytes.NewReader(blob))
			if err != nil {
				t.Fatalf("declcfg cannot read the bundle it made: %v\n%s", err, blob)
			}
			if len(cfg.Bundles) != 1 {
				t.Fatalf("declcfg reads %d bundles", len(cfg.Bundles))
			}
			got := cfg.Bundles[0]
			if !sameProperties(t, got.Properties, b.Declcfg.Properties) || got.CsvJSON != b.Declcfg.CsvJSON || !reflect.DeepEqual(got.Objects, b.Declcfg.Objects) {
				t.Fatalf("read back through declcfg, the bundle differs:\n%+v\n%+v", got, b.Declcfg)
			}
		}
	})
}
