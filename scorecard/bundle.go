package scorecard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	apimanifests "github.com/operator-framework/api/pkg/manifests"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/internal/ociimage"
	"github.com/chartpilot/chartpilot/internal/registryv1"
)

// The annotations of a registry+v1 bundle's metadata/annotations.yaml that
// the scorecard reads or checks.
const (

	// registryv1.AnnotationsFile is where a bundle keeps its annotations.
	// ConfigFile is where a bundle keeps its scorecard configuration.
	ConfigFile = "tests/scorecard/config.yaml"
	// almExamples is the CSV annotation holding sample custom resources.
	almExamples = "alm-examples"
)

// Bundle is a registry+v1 bundle directory as the tests see it. A bundle
// whose manifests do not load is still a Bundle: olm-bundle-validation
// reports why, the tests that need the manifests end in the error state.
type Bundle struct {
	// Dir is the bundle's root directory.
	Dir string
	// Annotations are metadata/annotations.yaml's; nil when it is missing.
	Annotations map[string]string
	// Manifests is the loaded manifests directory, nil if it failed to load.
	Manifests *apimanifests.Bundle
	// LoadErr says why Manifests is nil.
	LoadErr error
}

// LoadBundle reads the bundle in dir. Only an unreadable directory is an
// error; what is wrong inside is the tests' to report.
func LoadBundle(dir string) (*Bundle, error) {
	if fi, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("reading bundle: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("bundle %s: not a directory", dir)
	}
	b := &Bundle{Dir: dir}
	data, err := os.ReadFile(filepath.Join(dir, registryv1.AnnotationsFile))
	switch {
	case err == nil:
		var f struct {
			Annotations map[string]string `json:"annotations"`
		}
		if err := yaml.Unmarshal(data, &f); err != nil {
			b.LoadErr = fmt.Errorf("%s: %w", registryv1.AnnotationsFile, err)
			return b, nil
		}
		b.Annotations = f.Annotations
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("reading bundle: %w", err)
	}
	b.Manifests, err = apimanifests.GetBundleFromDir(b.ManifestsDir())
	if err != nil {
		b.Manifests, b.LoadErr = nil, fmt.Errorf("loading %s: %w", b.ManifestsDir(), err)
	} else if b.Manifests == nil || b.Manifests.CSV == nil {
		b.Manifests, b.LoadErr = nil, fmt.Errorf("%s: no ClusterServiceVersion", b.ManifestsDir())
	}
	return b, nil
}

// ManifestsDir is where the bundle's manifests are: its annotations say,
// "manifests/" by default.
func (b *Bundle) ManifestsDir() string {
	dir := "manifests"
	if v := strings.Trim(b.Annotations[registryv1.AnnotationManifests], "/"); v != "" {
		dir = v
	}
	return filepath.Join(b.Dir, filepath.FromSlash(dir))
}

// manifests returns the loaded manifests or why there are none.
func (b *Bundle) manifests() (*apimanifests.Bundle, error) {
	if b.Manifests == nil {
		return nil, b.LoadErr
	}
	return b.Manifests, nil
}

// CustomResources are the CSV's alm-examples, in order.
func (b *Bundle) CustomResources() ([]*unstructured.Unstructured, error) {
	m, err := b.manifests()
	if err != nil {
		return nil, err
	}
	raw := m.CSV.GetAnnotations()[almExamples]
	if strings.TrimSpace(raw) == "" {
		return nil, nil
	}
	var objs []map[string]any
	if err := json.Unmarshal([]byte(raw), &objs); err != nil {
		return nil, fmt.Errorf("CSV %s: annotation %s is not a JSON list of objects: %w", m.CSV.GetName(), almExamples, err)
	}
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for i, o := range objs {
		u := &unstructured.Unstructured{Object: o}
		if u.GetKind() == "" || u.GetAPIVersion() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("CSV %s: %s[%d]: apiVersion, kind and metadata.name are required", m.CSV.GetName(), almExamples, i)
		}
		out = append(out, u)
	}
	return out, nil
}

// LocalBundle is a bundle directory for arg, a directory or a bundle image
// (see ociimage.IsReference): arg itself, or a temporary directory the
// image is pulled into, which cleanup removes. cleanup is never nil.
func LocalBundle(ctx context.Context, arg string) (dir string, cleanup func(), err error) {
	cleanup = func() {}
	if !ociimage.IsReference(arg) {
		return arg, cleanup, nil
	}
	tmp, err := os.MkdirTemp("", "chartpilot-scorecard-")
	if err != nil {
		return "", cleanup, err
	}
	cleanup = func() { os.RemoveAll(tmp) }
	dir = filepath.Join(tmp, "bundle")
	if err := PullBundle(ctx, arg, dir); err != nil {
		return "", cleanup, err
	}
	return dir, cleanup, nil
}

// PullBundle pulls a bundle image with the docker credentials
// (~/.docker/config.json and its helpers) and writes its files into dir,
// which must not exist yet; on failure dir is not left behind.
func PullBundle(ctx context.Context, ref, dir string) error {
	img, err := ociimage.Pull(ctx, ref)
	if err != nil {
		return fmt.Errorf("pulling bundle: %w", err)
	}
	if err := ociimage.ExtractDir(img, "", dir); err != nil {
		if errors.Is(err, ociimage.ErrNothingExtracted) {
			return fmt.Errorf("bundle %s: the image has no files", ref)
		}
		return fmt.Errorf("bundle %s: %w", ref, err)
	}
	if _, err := os.Stat(filepath.Join(dir, registryv1.AnnotationsFile)); err != nil {
		os.RemoveAll(dir)
		return fmt.Errorf("bundle %s: not a registry+v1 bundle image: no /%s", ref, registryv1.AnnotationsFile)
	}
	return nil
}
