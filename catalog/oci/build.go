package oci

import (
	"context"
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/chartpilot/chartpilot/catalog/edit"
)

// BuildOptions configure Build: the bundles to publish, then the image.
type BuildOptions struct {
	ImageOptions
	// Bundles are bundle images published in the catalog before the image
	// is built, as operator-sdk's catalog-build does with opm: pulled,
	// published image-based and placed by semver, replacing a bundle of the
	// same version; a package the catalog lacks is initialized from its
	// first bundle.
	Bundles []string
	// AllowUnsafeAPIChanges publishes bundles whose CRDs break the CRs of
	// the bundles they upgrade (see edit.AddOptions).
	AllowUnsafeAPIChanges bool
}

// BuildResult is what Build published and built.
type BuildResult struct {
	// Published are the bundles published, in the order of Bundles.
	Published []*edit.AddResult `json:"published,omitempty"`
	// Image is the catalog image.
	Image v1.Image `json:"-"`
	// Digest is the image's digest.
	Digest v1.Hash `json:"digest"`
}

// Build publishes opts.Bundles in the catalog directory, then builds its
// image (BuildImage). A bundle that cannot be published stops it, named;
// the bundles before it stay published.
func Build(ctx context.Context, opts BuildOptions) (*BuildResult, error) {
	res := &BuildResult{}
	for _, ref := range opts.Bundles {
		added, err := edit.Add(ctx, edit.AddOptions{Dir: opts.Dir, BundleImage: ref, Replace: true, InitPackage: true, AllowUnsafeAPIChanges: opts.AllowUnsafeAPIChanges})
		if err != nil {
			return nil, fmt.Errorf("publishing %s: %w", ref, err)
		}
		res.Published = append(res.Published, added)
	}
	img, err := BuildImage(ctx, opts.ImageOptions)
	if err != nil {
		return nil, err
	}
	if res.Digest, err = img.Digest(); err != nil {
		return nil, fmt.Errorf("catalog image of %s: %w", opts.Dir, err)
	}
	res.Image = img
	return res, nil
}
