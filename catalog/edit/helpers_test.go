package catalog

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bundleSpec describes a registry+v1 bundle directory for tests.
type bundleSpec struct {
	pkg      string
	version  string
	channels string // the channels annotation, comma separated
	// defaultChannel is the default-channel annotation, if any.
	defaultChannel string
	// name overrides the CSV name (default <pkg>.v<version>).
	name string
	// noCSV leaves the ClusterServiceVersion out.
	noCSV bool
	// extraManifest is written as manifests/extra.yaml when set.
	extraManifest string
	// crd replaces manifests/crd.yaml when set.
	crd string
}

func (s bundleSpec) csvName() string {
	if s.name != "" {
		return s.name
	}
	return s.pkg + ".v" + s.version
}

// writeBundle writes the bundle under a new temporary directory and returns it.
func writeBundle(t testing.TB, s bundleSpec) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), s.csvName())
	for name, content := range bundleFiles(s) {
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

// bundleFiles are the bundle's files by relative path.
func bundleFiles(s bundleSpec) map[string]string {
	files := map[string]string{
		"metadata/annotations.yaml": fmt.Sprintf(`annotations:
  operators.operatorframework.io.bundle.mediatype.v1: registry+v1
  operators.operatorframework.io.bundle.manifests.v1: manifests/
  operators.operatorframework.io.bundle.metadata.v1: metadata/
  operators.operatorframework.io.bundle.package.v1: %s
  operators.operatorframework.io.bundle.channels.v1: %s
`, s.pkg, s.channels),
		"manifests/crd.yaml": fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.%[1]s.example.com
spec:
  group: %[1]s.example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: true
    storage: false
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`, s.pkg),
	}
	if s.defaultChannel != "" {
		files["metadata/annotations.yaml"] += "  operators.operatorframework.io.bundle.channel.default.v1: " + s.defaultChannel + "\n"
	}
	if !s.noCSV {
		files["manifests/"+s.pkg+".clusterserviceversion.yaml"] = fmt.Sprintf(`apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: %[3]s
  annotations:
    capabilities: Basic Install
spec:
  displayName: %[1]s
  description: The %[1]s operator manages widgets.
  version: %[2]s
  maturity: alpha
  provider: {name: Example}
  icon:
  - base64data: PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciLz4=
    mediatype: image/svg+xml
  installModes:
  - {type: OwnNamespace, supported: true}
  - {type: SingleNamespace, supported: true}
  - {type: MultiNamespace, supported: false}
  - {type: AllNamespaces, supported: true}
  customresourcedefinitions:
    owned:
    - {name: widgets.%[1]s.example.com, version: v1, kind: Widget, displayName: Widget}
  install:
    strategy: deployment
    spec:
      deployments:
      - name: %[1]s-controller-manager
        spec:
          replicas: 1
          selector: {matchLabels: {app: %[1]s}}
          template:
            metadata: {labels: {app: %[1]s}}
            spec:
              containers:
              - name: manager
                image: example.com/%[1]s:v%[2]s
`, s.pkg, s.version, s.csvName())
	}
	if s.extraManifest != "" {
		files["manifests/extra.yaml"] = s.extraManifest
	}
	if s.crd != "" {
		files["manifests/crd.yaml"] = s.crd
	}
	return files
}

// initPackage makes a catalog directory with an initialized package.
func initPackage(t testing.TB, pkg string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "catalog")
	if err := Init(InitOptions{Dir: dir, Package: pkg, Description: "test package"}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// addVersions adds inline bundles of pkg at each version to the channels.
func addVersions(t testing.TB, dir, pkg, channels string, versions ...string) {
	t.Helper()
	for _, v := range versions {
		if _, err := Add(t.Context(), AddOptions{Dir: dir, BundleDir: writeBundle(t, bundleSpec{pkg: pkg, version: v, channels: channels})}); err != nil {
			t.Fatalf("adding %s %s: %v", pkg, v, err)
		}
	}
}

// snapshot records every file, directory and mode under dir.
func snapshot(t testing.TB, dir string) string {
	t.Helper()
	var b bytes.Buffer
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(&b, "%s %v %s\n", rel, fi.Mode(), fi.ModTime().UTC().Format("15:04:05.000000000"))
		if !d.IsDir() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b.Write(data)
			b.WriteString("\n")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// readPackageFile returns the content of a package's catalog.yaml.
func readPackageFile(t testing.TB, dir, pkg string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, pkg, "catalog.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// mustContain fails unless s contains every want.
func mustContain(t testing.TB, s string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(s, w) {
			t.Errorf("missing %q in:\n%s", w, s)
		}
	}
}

// linuxPathMax is Linux's PATH_MAX: a path, with its terminating NUL, of
// more bytes is refused (ENAMETOOLONG), to root too.
const linuxPathMax = 4096

// pathOfLength is a new directory path (not created) of exactly n bytes
// under a test directory, its parents created. Its base name is 100 to 200
// bytes: a sibling with a short name has room for longer names below it,
// and the catalog's lock file beside it fits NAME_MAX.
func pathOfLength(t testing.TB, n int) string {
	t.Helper()
	p := t.TempDir()
	for rest := n - len(p) - 1; rest > 200; rest = n - len(p) - 1 {
		p = filepath.Join(p, strings.Repeat("d", min(199, rest-101)))
	}
	p = filepath.Join(p, strings.Repeat("c", n-len(p)-1))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if len(p) != n {
		t.Fatalf("made a path of %d bytes, want %d", len(p), n)
	}
	return p
}
