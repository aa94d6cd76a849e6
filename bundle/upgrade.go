package bundle

import (
	"context"
	"fmt"
	"os"
	"slices"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/chartpilot/chartpilot/internal/registryv1"
)

// upgradePath sets the CSV's replaces and olm.skipRange annotation.
func (g *generation) upgradePath(ctx context.Context, csv *v1alpha1.ClusterServiceVersion, pkg string, v semver.Version) error {
	replaces, skipRange, err := g.findUpgradePath(ctx, pkg, v)
	if err != nil {
		return err
	}
	csv.Spec.Replaces = replaces
	g.res.Replaces, g.res.SkipRange = replaces, skipRange
	if skipRange != "" {
		csv.Annotations[AnnotationSkipRange] = skipRange
	} else {
		delete(csv.Annotations, AnnotationSkipRange)
	}
	return nil
}

// findUpgradePath is the CSV's replaces and olm.skipRange: Replaces when given;
// else, from FromCatalog, the newest version of the package older than v in
// the bundle's channels (in any channel when none of them exists yet), and
// a skipRange from the oldest such version up to v.
func (g *generation) findUpgradePath(ctx context.Context, pkg string, v semver.Version) (replaces, skipRange string, err error) {
	if g.opts.Replaces != "" {
		return g.opts.Replaces, "", nil
	}
	if g.opts.FromCatalog == "" {
		return "", "", nil
	}
	// operator-registry's own loader, not package catalog/fbc's faster one:
	// the bundle stage comes before the catalog's and never imports it.
	cfg, err := declcfg.LoadFS(ctx, os.DirFS(g.opts.FromCatalog))
	if err != nil {
		return "", "", fmt.Errorf("--from-catalog %s: %w", g.opts.FromCatalog, err)
	}
	versions := map[string]semver.Version{}
	for _, b := range cfg.Bundles {
		if b.Package != pkg {
			continue
		}
		props, err := property.Parse(b.Properties)
		if err != nil || len(props.Packages) == 0 {
			return "", "", fmt.Errorf("--from-catalog: bundle %s has no olm.package property", b.Name)
		}
		bv, err := registryv1.ParseVersion(props.Packages[0].Version)
		if err != nil {
			return "", "", fmt.Errorf("--from-catalog: bundle %s: %w", b.Name, err)
		}
		versions[b.Name] = bv
	}
	channels, _ := g.channels()
	candidates := map[string]bool{}
	for _, ch := range cfg.Channels {
		if ch.Package == pkg && slices.Contains(channels, ch.Name) {
			for _, e := range ch.Entries {
				candidates[e.Name] = true
			}
		}
	}
	if len(candidates) == 0 {
		for name := range versions {
			candidates[name] = true
		}
	}
	var prev, oldest string
	for _, name := range sortedKeys(candidates) {
		bv, ok := versions[name]
		if !ok || !bv.LT(v) {
			continue
		}
		if prev == "" || bv.GT(versions[prev]) {
			prev = name
		}
		if oldest == "" || bv.LT(versions[oldest]) {
			oldest = name
		}
	}
	if prev == "" {
		g.warn("--from-catalog: package %s has no version older than %s there: the bundle starts the upgrade graph", pkg, v)
		return "", "", nil
	}
	return prev, fmt.Sprintf(">=%s <%s", versions[oldest], v), nil
}
