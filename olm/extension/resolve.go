package extension

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	mmsemver "github.com/Masterminds/semver/v3"
	bsemver "github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/chartpilot/chartpilot/catalog/fbc"
	"github.com/chartpilot/chartpilot/catalog/oci"
	"github.com/chartpilot/chartpilot/internal/ociimage"

	"github.com/chartpilot/chartpilot/olm"
)

// Bundle is one bundle of a package in a catalog.
type Bundle struct {
	// Name is the bundle's name (its CSV's), Version its semver version.
	Name    string `json:"name"`
	Version string `json:"version"`
	// Image is the bundle image OLM v1 pulls.
	Image string `json:"image,omitempty"`
	// Channels are the channels of the package that hold it.
	Channels []string `json:"channels,omitempty"`
	// InstallModes are its CSV's install modes, as the catalog lists them
	// (nil where it does not).
	InstallModes v1alpha1.InstallModeSet `json:"installModes,omitempty"`
	// Dir, once the bundle image is unpacked (see UnpackBundle), holds its
	// manifests/ and metadata/.
	Dir string `json:"-"`
}

// Selection is what a ClusterExtension asks of a package: the bundles of
// its channels (any when empty) within its version range, and, when a
// bundle is installed and the upgrade constraint policy is
// CatalogProvided, that bundle or its successors in the catalog.
type Selection struct {
	Package  string
	Version  string
	Channels []string
	// Installed is the installed bundle, nil for an install.
	Installed *BundleMetadata
	// Policy is the upgrade constraint policy; empty is CatalogProvided.
	Policy string
}

// Resolution errors, so that callers and reports can tell them apart.
var (
	// ErrPackageNotFound means the catalog lacks the package.
	ErrPackageNotFound = errors.New("package not found")
	// ErrNoBundleMatches means the package has no bundle that fits the
	// channels, version range and upgrade edges asked for.
	ErrNoBundleMatches = errors.New("no bundle matches")
)

// Resolve picks the bundle of cfg that OLM v1 installs for sel, as
// operator-controller v1.2.0 does within one catalog: the highest version
// among the bundles that fit (deprecation, which only breaks ties between
// catalogs, is not weighed). The error lists the versions there are.
func Resolve(cfg *declcfg.DeclarativeConfig, sel Selection) (*Bundle, error) {
	bundles, err := PackageBundles(cfg, sel.Package)
	if err != nil {
		return nil, err
	}
	var constraint *mmsemver.Constraints
	if sel.Version != "" {
		if constraint, err = parseRange(sel.Version); err != nil {
			return nil, fmt.Errorf("version range %q: %w", sel.Version, err)
		}
	}
	channels := packageChannels(cfg, sel.Package, sel.Channels)
	var fits []Bundle
	for _, b := range bundles {
		if len(sel.Channels) > 0 && !inChannels(b, sel.Channels) {
			continue
		}
		if constraint != nil && !inRange(constraint, b.Version) {
			continue
		}
		if sel.Installed != nil && sel.Policy != UpgradeSelfCertified && !successorOrSame(b, *sel.Installed, channels) {
			continue
		}
		fits = append(fits, b)
	}
	if len(fits) == 0 {
		return nil, noMatch(sel, bundles)
	}
	slices.SortStableFunc(fits, func(a, b Bundle) int { return compareVersions(b.Version, a.Version) })
	return &fits[0], nil
}

// noMatch says why no bundle fits, listing the package's versions.
func noMatch(sel Selection, all []Bundle) error {
	var what []string
	if len(sel.Channels) > 0 {
		what = append(what, "in channels "+strings.Join(sel.Channels, ", "))
	}
	if sel.Version != "" {
		what = append(what, fmt.Sprintf("in version range %q", sel.Version))
	}
	if sel.Installed != nil && sel.Policy != UpgradeSelfCertified {
		what = append(what, "that upgrades from the installed "+sel.Installed.Version)
	}
	return fmt.Errorf("%w: package %s has no bundle %s; its versions: %s", ErrNoBundleMatches, sel.Package, strings.Join(what, " and "), describeVersions(all))
}

// describeVersions lists the bundles' versions with their channels.
func describeVersions(bundles []Bundle) string {
	sorted := slices.Clone(bundles)
	slices.SortStableFunc(sorted, func(a, b Bundle) int { return compareVersions(a.Version, b.Version) })
	out := make([]string, 0, len(sorted))
	for _, b := range sorted {
		out = append(out, fmt.Sprintf("%s (%s)", b.Version, strings.Join(b.Channels, ", ")))
	}
	return strings.Join(out, ", ")
}

func parseRange(s string) (*mmsemver.Constraints, error) { return mmsemver.NewConstraint(s) }

// PackageBundles lists the bundles of pkg in cfg with their versions and
// channels; ErrPackageNotFound names the packages cfg has.
func PackageBundles(cfg *declcfg.DeclarativeConfig, pkg string) ([]Bundle, error) {
	found := false
	var names []string
	for _, p := range cfg.Packages {
		names = append(names, p.Name)
		found = found || p.Name == pkg
	}
	if !found {
		slices.Sort(names)
		have := "none"
		if len(names) > 0 {
			have = strings.Join(names, ", ")
		}
		return nil, fmt.Errorf("%w: the catalog has no package %q; its packages: %s", ErrPackageNotFound, pkg, have)
	}
	inChannel := map[string][]string{}
	for _, ch := range cfg.Channels {
		if ch.Package != pkg {
			continue
		}
		for _, e := range ch.Entries {
			inChannel[e.Name] = append(inChannel[e.Name], ch.Name)
		}
	}
	var out []Bundle
	for i := range cfg.Bundles {
		b := &cfg.Bundles[i]
		if b.Package != pkg {
			continue
		}
		v, err := bundleVersion(b)
		if err != nil {
			return nil, err
		}
		chs := inChannel[b.Name]
		slices.Sort(chs)
		// A bundle whose install modes the catalog does not say is
		// checked by operator-controller instead.
		modes, _ := olm.BundleInstallModes(b.CsvJSON, b.Properties)
		out = append(out, Bundle{Name: b.Name, Version: v, Image: b.Image, Channels: chs, InstallModes: modes})
	}
	return out, nil
}

func bundleVersion(b *declcfg.Bundle) (string, error) {
	props, err := property.Parse(b.Properties)
	if err != nil {
		return "", fmt.Errorf("bundle %s: %w", b.Name, err)
	}
	if len(props.Packages) == 0 {
		return "", fmt.Errorf("bundle %s has no olm.package property", b.Name)
	}
	return props.Packages[0].Version, nil
}

// packageChannels are pkg's channels in cfg, only those named when names
// is not empty.
func packageChannels(cfg *declcfg.DeclarativeConfig, pkg string, names []string) []declcfg.Channel {
	var out []declcfg.Channel
	for _, ch := range cfg.Channels {
		if ch.Package == pkg && (len(names) == 0 || slices.Contains(names, ch.Name)) {
			out = append(out, ch)
		}
	}
	return out
}

func inChannels(b Bundle, channels []string) bool {
	return slices.ContainsFunc(b.Channels, func(c string) bool { return slices.Contains(channels, c) })
}

func inRange(c *mmsemver.Constraints, version string) bool {
	v, err := mmsemver.NewVersion(version)
	return err == nil && c.Check(v)
}

// successorOrSame says whether b is the installed bundle's version, or an
// entry of one of channels replaces it, skips it or has a skipRange (in
// OLM v0's semver dialect) that holds its version.
func successorOrSame(b Bundle, installed BundleMetadata, channels []declcfg.Channel) bool {
	if compareVersions(b.Version, installed.Version) == 0 {
		return true
	}
	iv, ivErr := bsemver.Parse(installed.Version)
	for _, ch := range channels {
		for _, e := range ch.Entries {
			if e.Name != b.Name {
				continue
			}
			if e.Replaces == installed.Name || slices.Contains(e.Skips, installed.Name) {
				return true
			}
			if e.SkipRange != "" && ivErr == nil {
				if r, err := bsemver.ParseRange(e.SkipRange); err == nil && r(iv) {
					return true
				}
			}
		}
	}
	return false
}

// compareVersions orders semver versions; unparsable ones sort first.
func compareVersions(a, b string) int {
	va, errA := mmsemver.NewVersion(a)
	vb, errB := mmsemver.NewVersion(b)
	switch {
	case errA != nil || errB != nil:
		return cmp.Compare(boolInt(errA == nil), boolInt(errB == nil))
	}
	return va.Compare(vb)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// LoadCatalogImage pulls a catalog image (with the docker credentials) and
// loads its file-based catalog.
func LoadCatalogImage(ctx context.Context, ref string) (*declcfg.DeclarativeConfig, error) {
	dir, err := os.MkdirTemp("", "chartpilot-catalog-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	configs := filepath.Join(dir, "configs")
	if _, err := oci.PullImage(ctx, ref, configs); err != nil {
		return nil, err // it names the image
	}
	cfg, err := fbc.LoadDir(ctx, configs)
	if err != nil {
		return nil, fmt.Errorf("catalog image %s: %w", ref, err)
	}
	return cfg, nil
}

// UnpackBundle pulls b's bundle image into a new directory under parent
// and sets b.Dir to it.
func UnpackBundle(ctx context.Context, b *Bundle, parent string) error {
	if b.Image == "" {
		return fmt.Errorf("bundle %s has no image: OLM v1 installs image-based bundles only (publish it with an image, see `chartpilot catalog add --image`)", b.Name)
	}
	img, err := ociimage.Pull(ctx, b.Image)
	if err != nil {
		return fmt.Errorf("bundle %s: %w", b.Name, err)
	}
	dir := filepath.Join(parent, b.Name)
	if err := ociimage.ExtractDir(img, "", dir); err != nil {
		return fmt.Errorf("bundle %s (%s): %w", b.Name, b.Image, err)
	}
	b.Dir = dir
	return nil
}
