package preflight

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/chartpilot/chartpilot/bundle"
	"github.com/chartpilot/chartpilot/catalog/bundledir"
	"github.com/chartpilot/chartpilot/catalog/fbc"
	"github.com/chartpilot/chartpilot/catalog/oci"
	"github.com/chartpilot/chartpilot/internal/ociimage"
	"github.com/chartpilot/chartpilot/olm"
)

// Source is where the new bundle comes from.
type Source struct {
	// Ref is a bundle directory or bundle image, or, with Package, a
	// catalog directory or catalog image.
	Ref string
	// Package, set, makes Ref a catalog: the bundle is the head of Channel
	// in that package.
	Package string
	// Channel is the catalog channel (default: the package's default).
	Channel string
}

// LoadCRDs reads the new bundle's CustomResourceDefinitions.
func LoadCRDs(ctx context.Context, src Source) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	if src.Ref == "" {
		return nil, errors.New("no bundle or catalog given")
	}
	if src.Package == "" {
		return bundle.LoadCRDs(ctx, src.Ref)
	}
	cfg, err := loadCatalog(ctx, src.Ref)
	if err != nil {
		return nil, err
	}
	info, err := olm.LookupBundleInConfig(cfg, src.Package, src.Channel, "")
	if err != nil {
		return nil, fmt.Errorf("catalog %s: %w", src.Ref, err)
	}
	for i := range cfg.Bundles {
		if cfg.Bundles[i].Name == info.CSV {
			crds, err := bundledir.CRDs(ctx, &cfg.Bundles[i])
			if err != nil {
				return nil, fmt.Errorf("catalog %s: %w", src.Ref, err)
			}
			return crds, nil
		}
	}
	return nil, fmt.Errorf("catalog %s: no bundle %s", src.Ref, info.CSV)
}

func loadCatalog(ctx context.Context, ref string) (*declcfg.DeclarativeConfig, error) {
	dir := ref
	if ociimage.IsReference(ref) {
		tmp, err := os.MkdirTemp("", "chartpilot-catalog-*")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		dir = filepath.Join(tmp, "configs")
		if _, err := oci.PullImage(ctx, ref, dir); err != nil {
			return nil, err
		}
	}
	cfg, err := fbc.LoadDir(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("catalog %s: %w", ref, err)
	}
	return cfg, nil
}
