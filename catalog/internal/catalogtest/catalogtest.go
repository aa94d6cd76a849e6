package catalogtest

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/blang/semver/v4"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/chartpilot/chartpilot/catalog/bundledir"
	"github.com/chartpilot/chartpilot/catalog/fbc"
	"github.com/chartpilot/chartpilot/internal/ociimage"
)

// BundleSpec describes a registry+v1 bundle directory for tests.
type BundleSpec struct {
	Pkg      string
	Version  string
	Channels string // the channels annotation, comma separated
	// DefaultChannel is the default-channel annotation, if any.
	DefaultChannel string
	// Name overrides the CSV name (default <pkg>.v<version>).
	Name string
	// NoCSV leaves the ClusterServiceVersion out.
	NoCSV bool
	// ExtraManifest is written as manifests/extra.yaml when set.
	ExtraManifest string
	// CRD replaces manifests/crd.yaml when set.
	CRD string
}

func (s BundleSpec) CSVName() string {
	if s.Name != "" {
		return s.Name
	}
	return s.Pkg + ".v" + s.Version
}

// WriteBundle writes the bundle under a new temporary directory and returns it.
func WriteBundle(t testing.TB, s BundleSpec) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), s.CSVName())
	for name, content := range BundleFiles(s) {
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

// BundleFiles are the bundle's files by relative path.
func BundleFiles(s BundleSpec) map[string]string {
	files := map[string]string{
		"metadata/annotations.yaml": fmt.Sprintf(`annotations:
  operators.operatorframework.io.bundle.mediatype.v1: registry+v1
  operators.operatorframework.io.bundle.manifests.v1: manifests/
  operators.operatorframework.io.bundle.metadata.v1: metadata/
  operators.operatorframework.io.bundle.package.v1: %s
  operators.operatorframework.io.bundle.channels.v1: %s
`, s.Pkg, s.Channels),
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
`, s.Pkg),
	}
	if s.DefaultChannel != "" {
		files["metadata/annotations.yaml"] += "  operators.operatorframework.io.bundle.channel.default.v1: " + s.DefaultChannel + "\n"
	}
	if !s.NoCSV {
		files["manifests/"+s.Pkg+".clusterserviceversion.yaml"] = fmt.Sprintf(`apiVersion: operators.coreos.com/v1alpha1
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
`, s.Pkg, s.Version, s.CSVName())
	}
	if s.ExtraManifest != "" {
		files["manifests/extra.yaml"] = s.ExtraManifest
	}
	if s.CRD != "" {
		files["manifests/crd.yaml"] = s.CRD
	}
	return files
}

// MustContain fails unless s contains every want.
func MustContain(t testing.TB, s string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(s, w) {
			t.Errorf("missing %q in:\n%s", w, s)
		}
	}
}

// bundleFS is the bundle in memory.
func bundleFS(s BundleSpec) fstest.MapFS {
	fsys := fstest.MapFS{}
	for name, content := range BundleFiles(s) {
		fsys[name] = &fstest.MapFile{Data: []byte(content), Mode: 0o644}
	}
	return fsys
}

// GenerateCatalog writes packages packages of bundles inline bundles each
// into dir, placed by semver in a stable channel the way catalog add
// places them: each replaces the one before and skips every older one.
func GenerateCatalog(tb testing.TB, dir string, packages, bundles int) {
	tb.Helper()
	for p := range packages {
		pkg := fmt.Sprintf("operator-%03d", p)
		cfg := declcfg.DeclarativeConfig{Packages: []declcfg.Package{{Schema: declcfg.SchemaPackage, Name: pkg, DefaultChannel: "stable", Description: "Benchmark operator."}}}
		ch := declcfg.Channel{Schema: declcfg.SchemaChannel, Name: "stable", Package: pkg}
		var first semver.Version
		for v := range bundles {
			version := fmt.Sprintf("%d.%d.0", v/10, v%10)
			bundle, err := bundledir.Load(bundleFS(BundleSpec{Pkg: pkg, Version: version, Channels: "stable"}), bundledir.Options{})
			if err != nil {
				tb.Fatal(err)
			}
			cfg.Bundles = append(cfg.Bundles, bundle.Declcfg)
			e := declcfg.ChannelEntry{Name: bundle.Name}
			if v == 0 {
				first = bundle.Version
			} else {
				e.Replaces = ch.Entries[v-1].Name
				e.SkipRange = fmt.Sprintf(">=%s <%s", first, bundle.Version)
			}
			ch.Entries = append(ch.Entries, e)
		}
		cfg.Channels = []declcfg.Channel{ch}
		var buf bytes.Buffer
		if err := fbc.WriteYAML(cfg, &buf); err != nil {
			tb.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, pkg), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, pkg, "catalog.yaml"), buf.Bytes(), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// Package builds an image-based package: bundles <pkg>.v<version> for each
// version, and the given channels.
func Package(pkg, defaultChannel string, versions []string, channels ...declcfg.Channel) declcfg.DeclarativeConfig {
	cfg := declcfg.DeclarativeConfig{Packages: []declcfg.Package{{Schema: declcfg.SchemaPackage, Name: pkg, DefaultChannel: defaultChannel}}}
	for _, v := range versions {
		cfg.Bundles = append(cfg.Bundles, declcfg.Bundle{
			Schema:     declcfg.SchemaBundle,
			Name:       pkg + ".v" + v,
			Package:    pkg,
			Image:      "registry.example.com/" + pkg + "-bundle:v" + v,
			Properties: []property.Property{property.MustBuildPackage(pkg, v)},
		})
	}
	for _, ch := range channels {
		ch.Schema, ch.Package = declcfg.SchemaChannel, pkg
		cfg.Channels = append(cfg.Channels, ch)
	}
	return cfg
}

// Entry is a channel entry: name, replaces, skipRange, skips.
func Entry(name, replaces, skipRange string, skips ...string) declcfg.ChannelEntry {
	return declcfg.ChannelEntry{Name: name, Replaces: replaces, SkipRange: skipRange, Skips: skips}
}

// WriteCatalog writes each package to <dir>/<package>/catalog.yaml under a
// new temporary directory and returns it.
func WriteCatalog(t testing.TB, pkgs ...declcfg.DeclarativeConfig) string {
	t.Helper()
	dir := t.TempDir()
	for _, p := range pkgs {
		var buf bytes.Buffer
		if err := declcfg.WriteYAML(p, &buf); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, p.Packages[0].Name, "catalog.yaml")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// PushBundleImage pushes a bundle image, as operator-sdk builds it, of s
// to host and returns its reference.
func PushBundleImage(t testing.TB, host string, s BundleSpec) string {
	t.Helper()
	data, err := ociimage.TarDir(os.DirFS(WriteBundle(t, s)), "")
	if err != nil {
		t.Fatal(err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	ref := host + "/" + s.Pkg + "-bundle:v" + s.Version
	if _, err := ociimage.Push(t.Context(), img, ref); err != nil {
		t.Fatal(err)
	}
	return ref
}

// The size of the generated benchmark catalog, as in issue 7.
const (
	BenchPackages = 200
	BenchBundles  = 25
)

// BenchCatalog writes BenchPackages packages of BenchBundles inline
// bundles each (every manifest in olm.bundle.object properties), placed by
// semver in a stable channel, the way Add would place them. With
// CHARTPILOT_BENCH_CATALOG=DIR set, the catalog is written (and kept) there,
// to run opm on the same catalog.
func BenchCatalog(tb testing.TB) string {
	tb.Helper()
	dir := tb.TempDir()
	if keep := os.Getenv("CHARTPILOT_BENCH_CATALOG"); keep != "" {
		dir = keep
	}
	GenerateCatalog(tb, dir, BenchPackages, BenchBundles)
	return dir
}

// WriteFile writes content to path, its directory created.
func WriteFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
