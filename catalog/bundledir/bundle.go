package bundledir

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/crddiff"
	"github.com/chartpilot/chartpilot/internal/ociimage"
	"github.com/chartpilot/chartpilot/internal/registryv1"
)

// ErrInvalidBundle is wrapped by every error about the content of a bundle
// directory: a missing CSV, annotations or version, an unreadable manifest.
var ErrInvalidBundle = errors.New("invalid bundle")

// Bundle is a registry+v1 bundle directory read into its catalog form.
type Bundle struct {
	// Package is the package the bundle belongs to (its package annotation).
	Package string
	// Name is the bundle's name: the name of its ClusterServiceVersion.
	Name string
	// Version is the CSV's spec.version.
	Version semver.Version
	// Channels are the channels the bundle's annotations ask for.
	Channels []string
	// DefaultChannel is the default channel its annotations suggest, if any.
	DefaultChannel string
	// Description and Icon come from the CSV, for the package's olm.package.
	Description string
	Icon        *declcfg.Icon
	// Declcfg is the olm.bundle blob: properties, related images and image.
	Declcfg declcfg.Bundle

	// CRDs are the bundle's CustomResourceDefinitions, for the comparison
	// with the bundles it upgrades.
	CRDs []*unstructured.Unstructured
}

// Options says how a bundle directory becomes an olm.bundle.
type Options struct {
	// Image is the bundle image's pull spec. Set, the bundle is published
	// image-based: OLM unpacks that image and the blob carries the CSV's
	// metadata only. Empty, the bundle is inline: every manifest is stored in
	// an olm.bundle.object property and OLM installs it without an image.
	Image string
}

// ErrNoBundleDir means the bundle directory given does not exist or is
// not a directory.
var ErrNoBundleDir = errors.New("no bundle directory")

// Read is Load of the directory dir, which must exist: a mistyped path is
// named as such, not as a bundle without annotations.
func Read(dir string, opts Options) (*Bundle, error) {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%w: %s does not exist", ErrNoBundleDir, dir)
	case err != nil:
		return nil, fmt.Errorf("reading bundle %s: %w", dir, err)
	case !fi.IsDir():
		return nil, fmt.Errorf("%w: %s is not a directory", ErrNoBundleDir, dir)
	}
	b, err := Load(os.DirFS(dir), opts)
	if err != nil {
		return nil, fmt.Errorf("reading bundle %s: %w", dir, err)
	}
	return b, nil
}

// Load reads a registry+v1 bundle (manifests/ and
// metadata/annotations.yaml) from fsys.
func Load(fsys fs.FS, opts Options) (*Bundle, error) {
	ann, err := readAnnotations(fsys)
	if err != nil {
		return nil, err
	}
	if mt := ann[registryv1.AnnotationMediaType]; mt != "" && mt != registryv1.MediaTypeRegistryV1 {
		return nil, fmt.Errorf("%w: media type %q, only %s is supported", ErrInvalidBundle, mt, registryv1.MediaTypeRegistryV1)
	}
	b := &Bundle{Package: ann[registryv1.AnnotationPackage], DefaultChannel: ann[registryv1.AnnotationDefaultChannel]}
	if b.Package == "" {
		return nil, fmt.Errorf("%w: metadata/annotations.yaml has no %s", ErrInvalidBundle, registryv1.AnnotationPackage)
	}
	for _, ch := range strings.Split(ann[registryv1.AnnotationChannels], ",") {
		if ch = strings.TrimSpace(ch); ch != "" && !slices.Contains(b.Channels, ch) {
			b.Channels = append(b.Channels, ch)
		}
	}
	manifestsDir := strings.TrimSuffix(cmp.Or(ann[registryv1.AnnotationManifests], "manifests/"), "/")
	metadataDir := strings.TrimSuffix(cmp.Or(ann[registryv1.AnnotationMetadata], "metadata/"), "/")

	objs, err := readManifests(fsys, manifestsDir)
	if err != nil {
		return nil, err
	}
	var csv *v1alpha1.ClusterServiceVersion
	var version semver.Version
	var crds []*unstructured.Unstructured
	for _, o := range objs {
		switch o.GetKind() {
		case "ClusterServiceVersion":
			if csv != nil {
				return nil, fmt.Errorf("%w: %s holds more than one ClusterServiceVersion", ErrInvalidBundle, manifestsDir)
			}
			v, _, _ := unstructured.NestedFieldNoCopy(o.Object, "spec", "version")
			if v == nil || v == "" {
				return nil, fmt.Errorf("%w: ClusterServiceVersion %s has no spec.version", ErrInvalidBundle, o.GetName())
			}
			// The CSV's own type reads versions leniently ("0.3" as 0.3.0):
			// the version is held to the rule bundle generate applies.
			var err error
			if version, err = registryv1.ParseVersion(fmt.Sprint(v)); err != nil {
				return nil, fmt.Errorf("%w: ClusterServiceVersion %s: spec.version: %w", ErrInvalidBundle, o.GetName(), err)
			}
			csv = &v1alpha1.ClusterServiceVersion{}
			if err := runtimeConvert(o, csv); err != nil {
				return nil, fmt.Errorf("%w: ClusterServiceVersion %s: %w", ErrInvalidBundle, o.GetName(), err)
			}
		case "CustomResourceDefinition":
			crds = append(crds, o)
		}
	}
	if csv == nil {
		return nil, fmt.Errorf("%w: %s holds no ClusterServiceVersion", ErrInvalidBundle, manifestsDir)
	}
	b.Name = csv.Name
	if b.Name == "" {
		return nil, fmt.Errorf("%w: the ClusterServiceVersion has no metadata.name", ErrInvalidBundle)
	}
	b.Version = version
	b.Description = csv.Spec.Description
	b.CRDs = crds
	if len(csv.Spec.Icon) > 0 && csv.Spec.Icon[0].Data != "" {
		data, err := base64.StdEncoding.DecodeString(csv.Spec.Icon[0].Data)
		if err != nil {
			return nil, fmt.Errorf("%w: ClusterServiceVersion %s: icon is not base64: %w", ErrInvalidBundle, b.Name, err)
		}
		b.Icon = &declcfg.Icon{Data: data, MediaType: csv.Spec.Icon[0].MediaType}
	}

	props, err := bundleProperties(b, csv, crds, objs, fsys, metadataDir, opts)
	if err != nil {
		return nil, err
	}
	b.Declcfg = declcfg.Bundle{
		Schema:        declcfg.SchemaBundle,
		Name:          b.Name,
		Package:       b.Package,
		Image:         opts.Image,
		Properties:    props,
		RelatedImages: relatedImages(csv, opts.Image),
	}
	if opts.Image == "" {
		// What declcfg's loader derives from olm.bundle.object properties,
		// so the blob validates and serves before it is written and read back.
		for _, o := range objs {
			data, err := json.Marshal(o.Object)
			if err != nil {
				return nil, err
			}
			b.Declcfg.Objects = append(b.Declcfg.Objects, string(data))
			if o.GetKind() == "ClusterServiceVersion" {
				b.Declcfg.CsvJSON = string(data)
			}
		}
	}
	return b, nil
}

// ErrPull marks a bundle image that could not be pulled.
var ErrPull = errors.New("cannot pull the bundle image")

// Pull pulls a registry+v1 bundle image (with the docker credentials) and
// reads it, to be published image-based under ref. A failed pull wraps
// ErrPull.
func Pull(ctx context.Context, ref string) (*Bundle, error) {
	tmp, err := os.MkdirTemp("", "chartpilot-bundle-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "bundle")
	img, err := ociimage.Pull(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("%w: bundle: %w", ErrPull, err)
	}
	if err := ociimage.ExtractDir(img, "", dir); err != nil {
		return nil, fmt.Errorf("%w: bundle %s: %w", ErrPull, ref, err)
	}
	b, err := Read(dir, Options{Image: ref})
	if err != nil {
		return nil, fmt.Errorf("bundle image %s: %w", ref, err)
	}
	return b, nil
}

// CRDs reads a catalog bundle's CRDs: from its olm.bundle.object
// properties when it is inline, otherwise from its image, pulled with the
// docker credentials; a failed pull wraps ErrPull.
func CRDs(ctx context.Context, b *declcfg.Bundle) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	props, err := property.Parse(b.Properties)
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", b.Name, err)
	}
	if len(props.BundleObjects) == 0 && b.Image != "" {
		loaded, err := Pull(ctx, b.Image)
		if err != nil {
			return nil, err
		}
		return crddiff.FromObjects(loaded.CRDs)
	}
	return InlineCRDs(b.Name, props.BundleObjects)
}

// InlineCRDs are the CRDs among the olm.bundle.object properties of the
// named bundle.
func InlineCRDs(bundle string, objects []property.BundleObject) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var objs []*unstructured.Unstructured
	for i, o := range objects {
		if !bytes.Contains(o.Data, []byte(`"CustomResourceDefinition"`)) {
			continue // the CSV and the rest: not worth decoding
		}
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal(o.Data, &u.Object); err != nil {
			return nil, fmt.Errorf("bundle %s: %s #%d: %w", bundle, property.TypeBundleObject, i, err)
		}
		objs = append(objs, u)
	}
	return crddiff.FromObjects(objs)
}

// bundleProperties builds the bundle's properties in a stable order: by
// type, then value, with the large olm.bundle.object ones last.
func bundleProperties(b *Bundle, csv *v1alpha1.ClusterServiceVersion, crds, objs []*unstructured.Unstructured, fsys fs.FS, metadataDir string, opts Options) ([]property.Property, error) {
	props := []property.Property{property.MustBuildPackage(b.Package, b.Version.String())}

	provided := map[property.GVK]bool{}
	for _, crd := range crds {
		group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		for _, v := range versions {
			if m, ok := v.(map[string]any); ok {
				if name, ok := m["name"].(string); ok {
					provided[property.GVK{Group: group, Kind: kind, Version: name}] = true
				}
			}
		}
		if v, _, _ := unstructured.NestedString(crd.Object, "spec", "version"); v != "" {
			provided[property.GVK{Group: group, Kind: kind, Version: v}] = true
		}
	}
	for _, api := range csv.Spec.APIServiceDefinitions.Owned {
		provided[property.GVK{Group: api.Group, Kind: api.Kind, Version: api.Version}] = true
	}
	required := map[property.GVKRequired]bool{}
	for _, crd := range csv.Spec.CustomResourceDefinitions.Required {
		_, group, ok := strings.Cut(crd.Name, ".")
		if !ok {
			return nil, fmt.Errorf("%w: required CRD %q is not named <plural>.<group>", ErrInvalidBundle, crd.Name)
		}
		required[property.GVKRequired{Group: group, Kind: crd.Kind, Version: crd.Version}] = true
	}
	for _, api := range csv.Spec.APIServiceDefinitions.Required {
		required[property.GVKRequired{Group: api.Group, Kind: api.Kind, Version: api.Version}] = true
	}
	for gvk := range provided {
		props = append(props, property.MustBuild(&gvk))
	}
	for gvk := range required {
		props = append(props, property.MustBuild(&gvk))
	}

	extra, err := metadataProperties(fsys, metadataDir)
	if err != nil {
		return nil, err
	}
	props = append(props, extra...)
	props = append(props, property.MustBuildCSVMetadata(*csv))
	slices.SortStableFunc(props, func(a, b property.Property) int {
		if c := strings.Compare(a.Type, b.Type); c != 0 {
			return c
		}
		return bytes.Compare(a.Value, b.Value)
	})

	if opts.Image == "" {
		// Inline: the manifests themselves, in the order they were read.
		for _, o := range objs {
			data, err := json.Marshal(o.Object)
			if err != nil {
				return nil, fmt.Errorf("%w: %s %s: %w", ErrInvalidBundle, o.GetKind(), o.GetName(), err)
			}
			props = append(props, property.MustBuildBundleObject(data))
		}
	}
	return props, nil
}

// metadataProperties reads the optional metadata/dependencies.yaml and
// metadata/properties.yaml into properties.
func metadataProperties(fsys fs.FS, metadataDir string) ([]property.Property, error) {
	var out []property.Property
	var deps struct {
		Dependencies []property.Property `json:"dependencies"`
	}
	if found, err := readYAML(fsys, path.Join(metadataDir, "dependencies.yaml"), &deps); err != nil {
		return nil, err
	} else if found {
		for _, d := range deps.Dependencies {
			switch d.Type {
			case property.TypePackage:
				var p property.Package
				if err := json.Unmarshal(d.Value, &p); err != nil {
					return nil, fmt.Errorf("%w: dependencies.yaml: %w", ErrInvalidBundle, err)
				}
				out = append(out, property.MustBuildPackageRequired(p.PackageName, p.Version))
			case property.TypeGVK:
				var g property.GVK
				if err := json.Unmarshal(d.Value, &g); err != nil {
					return nil, fmt.Errorf("%w: dependencies.yaml: %w", ErrInvalidBundle, err)
				}
				out = append(out, property.MustBuildGVKRequired(g.Group, g.Version, g.Kind))
			default:
				out = append(out, d)
			}
		}
	}
	var extra struct {
		Properties []property.Property `json:"properties"`
	}
	if found, err := readYAML(fsys, path.Join(metadataDir, "properties.yaml"), &extra); err != nil {
		return nil, err
	} else if found {
		out = append(out, extra.Properties...)
	}
	for i, p := range out {
		// Compact the value so equal properties are byte-equal.
		norm, err := property.Build(&p)
		if err != nil {
			return nil, fmt.Errorf("%w: metadata property %q: %w", ErrInvalidBundle, p.Type, err)
		}
		out[i] = *norm
	}
	return out, nil
}

// relatedImages lists the CSV's related images, the bundle image and the
// images of the operator's deployments, each once.
func relatedImages(csv *v1alpha1.ClusterServiceVersion, bundleImage string) []declcfg.RelatedImage {
	var out []declcfg.RelatedImage
	seen := map[string]bool{}
	add := func(name, image string) {
		if image == "" || seen[image] {
			return
		}
		seen[image] = true
		out = append(out, declcfg.RelatedImage{Name: name, Image: image})
	}
	for _, ri := range csv.Spec.RelatedImages {
		add(ri.Name, ri.Image)
	}
	add("", bundleImage)
	var images []string
	for _, d := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		for _, c := range d.Spec.Template.Spec.InitContainers {
			images = append(images, c.Image)
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			images = append(images, c.Image)
		}
	}
	slices.Sort(images)
	for _, img := range images {
		add("", img)
	}
	return out
}

func readAnnotations(fsys fs.FS) (map[string]string, error) {
	var ann struct {
		Annotations map[string]string `json:"annotations"`
	}
	found, err := readYAML(fsys, "metadata/annotations.yaml", &ann)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("%w: no metadata/annotations.yaml", ErrInvalidBundle)
	}
	return ann.Annotations, nil
}

// readYAML decodes the file at name into v; a missing file is not an error.
func readYAML(fsys fs.FS, name string, v any) (bool, error) {
	data, err := fs.ReadFile(fsys, name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("%w: %w", ErrInvalidBundle, err)
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		return false, fmt.Errorf("%w: %s: %w", ErrInvalidBundle, name, err)
	}
	return true, nil
}

// readManifests decodes every YAML or JSON document in dir, in file name order.
func readManifests(fsys fs.FS, dir string) ([]*unstructured.Unstructured, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidBundle, err)
	}
	var objs []*unstructured.Unstructured
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		name := path.Join(dir, e.Name())
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidBundle, err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var m map[string]any
			if err := dec.Decode(&m); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, fmt.Errorf("%w: %s: %w", ErrInvalidBundle, name, err)
			}
			if len(m) == 0 {
				continue
			}
			o := &unstructured.Unstructured{Object: m}
			if o.GetKind() == "" || o.GetAPIVersion() == "" {
				return nil, fmt.Errorf("%w: %s: a document without apiVersion and kind", ErrInvalidBundle, name)
			}
			objs = append(objs, o)
		}
	}
	if len(objs) == 0 {
		return nil, fmt.Errorf("%w: %s holds no manifests", ErrInvalidBundle, dir)
	}
	return objs, nil
}

// runtimeConvert turns an unstructured object into a typed one through JSON.
func runtimeConvert(o *unstructured.Unstructured, into any) error {
	data, err := json.Marshal(o.Object)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, into)
}
