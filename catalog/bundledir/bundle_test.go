package bundledir_test

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/chartpilot/chartpilot/catalog/bundledir"
	"github.com/chartpilot/chartpilot/catalog/internal/catalogtest"
)

func TestLoadBundleDir(t *testing.T) {
	tests := []struct {
		name string
		spec catalogtest.BundleSpec
		opts bundledir.Options
		// wantTypes are the property types, in order.
		wantTypes []string
		// wantObjects is the number of olm.bundle.object properties.
		wantObjects   int
		wantImage     string
		wantRelated   []string
		wantChannels  []string
		wantDefaultCh string
	}{
		{
			name:          "inline bundle carries every manifest",
			spec:          catalogtest.BundleSpec{Pkg: "widgets", Version: "1.2.3", Channels: "alpha, stable", DefaultChannel: "stable"},
			wantTypes:     []string{"olm.csv.metadata", "olm.gvk", "olm.gvk", "olm.package", "olm.bundle.object", "olm.bundle.object"},
			wantObjects:   2,
			wantRelated:   []string{"example.com/widgets:v1.2.3"},
			wantChannels:  []string{"alpha", "stable"},
			wantDefaultCh: "stable",
		},
		{
			name:         "image-based bundle carries the CSV metadata only",
			spec:         catalogtest.BundleSpec{Pkg: "widgets", Version: "1.2.3", Channels: "stable"},
			opts:         bundledir.Options{Image: "registry.example.com/widgets-bundle:v1.2.3"},
			wantTypes:    []string{"olm.csv.metadata", "olm.gvk", "olm.gvk", "olm.package"},
			wantImage:    "registry.example.com/widgets-bundle:v1.2.3",
			wantRelated:  []string{"registry.example.com/widgets-bundle:v1.2.3", "example.com/widgets:v1.2.3"},
			wantChannels: []string{"stable"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := catalogtest.WriteBundle(t, tt.spec)
			b, err := bundledir.Load(os.DirFS(dir), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if b.Name != "widgets.v1.2.3" || b.Package != "widgets" || b.Version.String() != "1.2.3" {
				t.Errorf("name, package, version = %s, %s, %s", b.Name, b.Package, b.Version)
			}
			if !slices.Equal(b.Channels, tt.wantChannels) || b.DefaultChannel != tt.wantDefaultCh {
				t.Errorf("channels = %v default %q, want %v default %q", b.Channels, b.DefaultChannel, tt.wantChannels, tt.wantDefaultCh)
			}
			if b.Description != "The widgets operator manages widgets." || b.Icon == nil || b.Icon.MediaType != "image/svg+xml" {
				t.Errorf("description %q icon %+v", b.Description, b.Icon)
			}
			var types []string
			for _, p := range b.Declcfg.Properties {
				types = append(types, p.Type)
			}
			if !slices.Equal(types, tt.wantTypes) {
				t.Errorf("property types = %v, want %v", types, tt.wantTypes)
			}
			props, err := property.Parse(b.Declcfg.Properties)
			if err != nil {
				t.Fatal(err)
			}
			if len(props.BundleObjects) != tt.wantObjects {
				t.Errorf("%d bundle objects, want %d", len(props.BundleObjects), tt.wantObjects)
			}
			wantGVKs := []property.GVK{{Group: "widgets.example.com", Kind: "Widget", Version: "v1"}, {Group: "widgets.example.com", Kind: "Widget", Version: "v1alpha1"}}
			if !slices.Equal(props.GVKs, wantGVKs) {
				t.Errorf("gvks = %v, want %v", props.GVKs, wantGVKs)
			}
			if len(props.CSVMetadatas) != 1 || props.CSVMetadatas[0].DisplayName != "widgets" {
				t.Errorf("csv metadata = %+v", props.CSVMetadatas)
			}
			if b.Declcfg.Image != tt.wantImage {
				t.Errorf("image = %q, want %q", b.Declcfg.Image, tt.wantImage)
			}
			var related []string
			for _, r := range b.Declcfg.RelatedImages {
				related = append(related, r.Image)
			}
			if !slices.Equal(related, tt.wantRelated) {
				t.Errorf("related images = %v, want %v", related, tt.wantRelated)
			}
			// The blob converts to operator-registry's model.
			cfg := declcfg.DeclarativeConfig{
				Packages: []declcfg.Package{{Schema: declcfg.SchemaPackage, Name: "widgets", DefaultChannel: "stable"}},
				Channels: []declcfg.Channel{{Schema: declcfg.SchemaChannel, Package: "widgets", Name: "stable", Entries: []declcfg.ChannelEntry{{Name: b.Name}}}},
				Bundles:  []declcfg.Bundle{b.Declcfg},
			}
			if _, err := declcfg.ConvertToModel(cfg); err != nil {
				t.Errorf("model conversion: %v", err)
			}
		})
	}
}

func TestLoadBundleDirDependencies(t *testing.T) {
	dir := catalogtest.WriteBundle(t, catalogtest.BundleSpec{Pkg: "widgets", Version: "1.0.0", Channels: "stable"})
	deps := `dependencies:
- type: olm.package
  value: {packageName: gadgets, version: ">=1.0.0"}
- type: olm.gvk
  value: {group: gadgets.example.com, kind: Gadget, version: v1}
`
	if err := os.WriteFile(dir+"/metadata/dependencies.yaml", []byte(deps), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := bundledir.Load(os.DirFS(dir), bundledir.Options{})
	if err != nil {
		t.Fatal(err)
	}
	props, err := property.Parse(b.Declcfg.Properties)
	if err != nil {
		t.Fatal(err)
	}
	if len(props.PackagesRequired) != 1 || props.PackagesRequired[0] != (property.PackageRequired{PackageName: "gadgets", VersionRange: ">=1.0.0"}) {
		t.Errorf("packages required = %+v", props.PackagesRequired)
	}
	if len(props.GVKsRequired) != 1 || props.GVKsRequired[0] != (property.GVKRequired{Group: "gadgets.example.com", Kind: "Gadget", Version: "v1"}) {
		t.Errorf("gvks required = %+v", props.GVKsRequired)
	}
}

func TestLoadBundleDirErrors(t *testing.T) {
	tests := []struct {
		name   string
		spec   catalogtest.BundleSpec
		mutate func(t *testing.T, dir string)
		want   string
	}{
		{
			name: "no CSV",
			spec: catalogtest.BundleSpec{Pkg: "widgets", Version: "1.0.0", Channels: "stable", NoCSV: true},
			want: "invalid bundle: manifests holds no ClusterServiceVersion",
		},
		{
			name: "no annotations",
			spec: catalogtest.BundleSpec{Pkg: "widgets", Version: "1.0.0", Channels: "stable"},
			mutate: func(t *testing.T, dir string) {
				if err := os.Remove(dir + "/metadata/annotations.yaml"); err != nil {
					t.Fatal(err)
				}
			},
			want: "invalid bundle: no metadata/annotations.yaml",
		},
		{
			name: "no package annotation",
			spec: catalogtest.BundleSpec{Pkg: "", Version: "1.0.0", Channels: "stable", Name: "x.v1.0.0"},
			want: "invalid bundle: metadata/annotations.yaml has no operators.operatorframework.io.bundle.package.v1",
		},
		{
			name: "manifest without kind",
			spec: catalogtest.BundleSpec{Pkg: "widgets", Version: "1.0.0", Channels: "stable", ExtraManifest: "metadata: {Name: x}\n"},
			want: "invalid bundle: manifests/extra.yaml: a document without apiVersion and kind",
		},
		{
			name: "version missing",
			spec: catalogtest.BundleSpec{Pkg: "widgets", Version: "", Channels: "stable", Name: "widgets.v0"},
			want: "invalid bundle: ClusterServiceVersion widgets.v0 has no spec.version",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := catalogtest.WriteBundle(t, tt.spec)
			if tt.mutate != nil {
				tt.mutate(t, dir)
			}
			_, err := bundledir.Load(os.DirFS(dir), bundledir.Options{})
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, bundledir.ErrInvalidBundle) {
				t.Errorf("error %v does not wrap bundledir.ErrInvalidBundle", err)
			}
			if err.Error() != tt.want {
				t.Errorf("error = %q, want %q", err, tt.want)
			}
		})
	}
}

// The CSV round-trips through the inline bundle object unchanged.
func TestInlineBundleObjectIsTheManifest(t *testing.T) {
	dir := catalogtest.WriteBundle(t, catalogtest.BundleSpec{Pkg: "widgets", Version: "2.0.0", Channels: "stable"})
	b, err := bundledir.Load(os.DirFS(dir), bundledir.Options{})
	if err != nil {
		t.Fatal(err)
	}
	props, _ := property.Parse(b.Declcfg.Properties)
	var kinds []string
	for _, o := range props.BundleObjects {
		var m struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(o.Data, &m); err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, m.Kind+"/"+m.Metadata.Name)
	}
	want := []string{"CustomResourceDefinition/widgets.widgets.example.com", "ClusterServiceVersion/widgets.v2.0.0"}
	if !slices.Equal(kinds, want) {
		t.Errorf("objects = %v, want %v", kinds, want)
	}
}
