package olmv1

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/internal/registryv1"
)

// OperatorControllerVersion is the operator-controller release whose
// behaviour this package follows.
const OperatorControllerVersion = "v1.2.0"

// Bundle is a registry+v1 bundle as operator-controller reads it.
type Bundle struct {
	// Package is the package name of metadata/annotations.yaml.
	Package string
	// CSV is the ClusterServiceVersion; CSVFile its file under the bundle.
	CSV     *v1alpha1.ClusterServiceVersion
	CSVFile string
	// Others are the manifests besides the CSV, in file order.
	Others []Manifest
	// Subdirectories of manifests/, which operator-controller refuses.
	Subdirectories []string
	// Properties are the bundle's properties: the CSV's olm.properties
	// annotation and metadata/properties.yaml.
	Properties []Property
	// Dependencies are the entries of metadata/dependencies.yaml, which
	// catalogs turn into olm.package.required, olm.gvk.required and
	// olm.constraint properties.
	Dependencies []Property
}

// Manifest is one object of the bundle's manifests/ and its file.
type Manifest struct {
	Object *unstructured.Unstructured
	// File is the path under the bundle, e.g. manifests/x_v1_service.yaml.
	File string
}

// Property is a bundle property or dependency: its type and value.
type Property struct {
	Type  string `json:"type"`
	Value any    `json:"value"`
	// File is where it was declared.
	File string `json:"-"`
}

// The metadata files besides annotations.yaml.
const (
	propertiesFile   = registryv1.MetadataDir + "/properties.yaml"
	dependenciesFile = registryv1.MetadataDir + "/dependencies.yaml"
	csvKind          = "ClusterServiceVersion"
	propertiesAnnot  = "olm.properties"
)

// Load reads a bundle from fsys, whose root holds manifests/ and metadata/.
// Errors name the file.
func Load(fsys fs.FS) (*Bundle, error) {
	b := &Bundle{}
	var ann struct {
		Annotations map[string]string `json:"annotations"`
	}
	data, err := fs.ReadFile(fsys, registryv1.AnnotationsFile)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", registryv1.AnnotationsFile, err)
	}
	if err := yaml.Unmarshal(data, &ann); err != nil {
		return nil, fmt.Errorf("%s: %w", registryv1.AnnotationsFile, err)
	}
	b.Package = ann.Annotations[registryv1.AnnotationPackage]

	entries, err := fs.ReadDir(fsys, registryv1.ManifestsDir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", registryv1.ManifestsDir, err)
	}
	for _, e := range entries {
		file := path.Join(registryv1.ManifestsDir, e.Name())
		if e.IsDir() {
			b.Subdirectories = append(b.Subdirectories, file)
			continue
		}
		if err := b.readManifests(fsys, file); err != nil {
			return nil, err
		}
	}
	if b.CSV == nil {
		return nil, fmt.Errorf("%s: no ClusterServiceVersion", registryv1.ManifestsDir)
	}
	if err := b.readProperties(fsys); err != nil {
		return nil, err
	}
	return b, nil
}

// readManifests reads every object of one manifest file.
func (b *Bundle) readManifests(fsys fs.FS, file string) error {
	data, err := fs.ReadFile(fsys, file)
	if err != nil {
		return err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var m map[string]any
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		if len(m) == 0 {
			continue
		}
		o := &unstructured.Unstructured{Object: m}
		if o.GetKind() == "" {
			return fmt.Errorf("%s: an object without kind", file)
		}
		if o.GetKind() != csvKind {
			b.Others = append(b.Others, Manifest{Object: o, File: file})
			continue
		}
		if b.CSV != nil {
			return fmt.Errorf("%s: a second ClusterServiceVersion (%s has one)", file, b.CSVFile)
		}
		csv := &v1alpha1.ClusterServiceVersion{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, csv); err != nil {
			return fmt.Errorf("%s: ClusterServiceVersion %s: %w", file, o.GetName(), err)
		}
		b.CSV, b.CSVFile = csv, file
	}
}

// readProperties reads the CSV's olm.properties annotation,
// metadata/properties.yaml and metadata/dependencies.yaml.
func (b *Bundle) readProperties(fsys fs.FS) error {
	if s := b.CSV.Annotations[propertiesAnnot]; s != "" {
		var props []Property
		if err := yaml.Unmarshal([]byte(s), &props); err != nil {
			return fmt.Errorf("%s: annotation %s: %w", b.CSVFile, propertiesAnnot, err)
		}
		for _, p := range props {
			p.File = b.CSVFile
			b.Properties = append(b.Properties, p)
		}
	}
	for _, f := range []struct {
		file, key string
		into      *[]Property
	}{{propertiesFile, "properties", &b.Properties}, {dependenciesFile, "dependencies", &b.Dependencies}} {
		data, err := fs.ReadFile(fsys, f.file)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			return err
		}
		var doc map[string][]Property
		if err := yaml.Unmarshal(data, &doc); err != nil {
			return fmt.Errorf("%s: %w", f.file, err)
		}
		for _, p := range doc[f.key] {
			p.File = f.file
			*f.into = append(*f.into, p)
		}
	}
	return nil
}

// supportedInstallModes are the install modes the CSV supports.
func (b *Bundle) supportedInstallModes() []string {
	var out []string
	for _, m := range b.CSV.Spec.InstallModes {
		if m.Supported {
			out = append(out, string(m.Type))
		}
	}
	slices.Sort(out)
	return out
}

// supports tells whether the CSV supports install mode m.
func (b *Bundle) supports(m v1alpha1.InstallModeType) bool {
	return slices.Contains(b.supportedInstallModes(), string(m))
}

// describe names a manifest in messages: kind, name and file.
func (m Manifest) describe() string {
	return fmt.Sprintf("%s %s (%s)", m.Object.GetKind(), m.Object.GetName(), m.File)
}
