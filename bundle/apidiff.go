package bundle

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/operator-framework/api/pkg/manifests"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/chartpilot/chartpilot/crddiff"
	"github.com/chartpilot/chartpilot/internal/ociimage"
	"github.com/chartpilot/chartpilot/internal/registryv1"
)

// FindingTypeUnsafeAPIChange is the Finding.Type of a CRD change that
// breaks CRs of the previous bundle (crddiff).
const FindingTypeUnsafeAPIChange = "UnsafeAPIChange"

// LoadCRDs reads the CustomResourceDefinitions of a bundle: a directory
// (manifests/, metadata/) or, when src is an image reference and no such
// directory exists, a bundle image pulled with the docker credentials.
func LoadCRDs(ctx context.Context, src string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	dir := src
	if ociimage.IsReference(src) {
		tmp, err := os.MkdirTemp("", "chartpilot-bundle-*")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		dir = filepath.Join(tmp, "bundle")
		img, err := ociimage.Pull(ctx, src)
		if err != nil {
			return nil, fmt.Errorf("bundle image %s: %w", src, err)
		}
		if err := ociimage.ExtractDir(img, "", dir); err != nil {
			return nil, fmt.Errorf("bundle image %s: %w", src, err)
		}
	} else if _, err := os.Stat(filepath.Join(dir, registryv1.ManifestsDir)); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("bundle %s: no %s directory (want a bundle directory or image)", src, registryv1.ManifestsDir)
	}
	b, err := manifests.GetBundleFromDir(dir)
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", src, err)
	}
	return b.V1CRDs, nil
}

// checkPrevious compares the bundle's CRDs with the previous bundle's: each
// unsafe change is an error, or a warning when allowed.
func checkPrevious(ctx context.Context, crds []*apiextensionsv1.CustomResourceDefinition, opts ValidateOptions, idx fileIndex) ([]Finding, error) {
	prev, err := LoadCRDs(ctx, opts.Previous)
	if err != nil {
		return nil, fmt.Errorf("--previous: %w", err)
	}
	var out []Finding
	for _, c := range crddiff.CompareAll(prev, crds) {
		f := Finding{Level: levelError, File: idx.byName[c.CRD], Object: c.CRD, Type: FindingTypeUnsafeAPIChange,
			Field: fieldOf(c), Message: fmt.Sprintf("%s: %s since %s: %s; %s", c.Rule, c.Detail, opts.Previous, c.Why, c.Fix)}
		if opts.AllowUnsafeAPIChanges {
			f.Level = levelWarning
		}
		if f.File == "" {
			f.File = registryv1.ManifestsDir
		}
		out = append(out, f)
	}
	return out, nil
}

// fieldOf is where a change is, as a finding's field: the version and path.
func fieldOf(c crddiff.Change) string {
	switch {
	case c.Version == "":
		return "spec"
	case c.Path == "":
		return c.Version
	}
	return c.Version + " " + c.Path
}
