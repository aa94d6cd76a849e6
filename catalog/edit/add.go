package edit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/operator-registry/alpha/declcfg"

	"github.com/chartpilot/chartpilot/catalog/bundledir"
	"github.com/chartpilot/chartpilot/catalog/fbc"
	"github.com/chartpilot/chartpilot/internal/registryv1"
)

// ChannelScope splits channels by version, a convention for operators that
// keep several release lines: stable-v1, stable-v1.2.
type ChannelScope string

const (
	// ScopeNone uses the channel names as given: one line per channel.
	ScopeNone ChannelScope = ""
	// ScopeMajor appends -v<major> to each channel name.
	ScopeMajor ChannelScope = "major"
	// ScopeMinor appends -v<major>.<minor> to each channel name.
	ScopeMinor ChannelScope = "minor"
)

// ChannelScopes lists the scopes, for flags ("none" is ScopeNone).
var ChannelScopes = []string{"none", string(ScopeMajor), string(ScopeMinor)}

// ChannelName is the name of channel for version v under scope.
func (s ChannelScope) ChannelName(channel string, v semver.Version) string {
	switch s {
	case ScopeMajor:
		return fmt.Sprintf("%s-v%d", channel, v.Major)
	case ScopeMinor:
		return fmt.Sprintf("%s-v%d.%d", channel, v.Major, v.Minor)
	}
	return channel
}

// AddOptions describe a bundle to publish in a catalog package.
type AddOptions struct {
	// Dir is the catalog directory holding the initialized package.
	Dir string
	// BundleDir is a registry+v1 bundle directory (manifests/, metadata/).
	BundleDir string
	// BundleImage, instead of BundleDir, is a bundle image to pull (with the
	// docker credentials) and publish image-based under that reference.
	BundleImage string
	// Image is the bundle image's pull spec for image-based publishing of
	// BundleDir. Empty means inline publishing (see bundledir.Options.Image).
	Image string
	// Channels overrides the channels of the bundle's annotations.
	Channels []string
	// Scope appends the major or minor version to the channel names.
	Scope ChannelScope
	// Replace allows replacing a bundle of the same version or name.
	Replace bool
	// InitPackage initializes the bundle's package from the bundle (see
	// InitOptions.FromBundle) when the catalog does not have it yet.
	InitPackage bool
	// AllowUnsafeAPIChanges publishes a bundle whose CRDs break the CRs of
	// a bundle it upgrades (OLM v1's upgrade-safety rules, crddiff); the
	// changes are then in AddResult.APIChanges. Without it Add refuses the
	// bundle with crddiff.ErrUnsafe.
	AllowUnsafeAPIChanges bool

	// writeFile writes the catalog's files; nil writes through the staging directory (writeFunc.orDefault).
	writeFile writeFunc
}

// Placement is where a bundle landed in one channel.
type Placement struct {
	Channel   string `json:"channel"`
	Replaces  string `json:"replaces,omitempty"`
	SkipRange string `json:"skipRange,omitempty"`
	// Head is true when the bundle is the channel's newest version.
	Head bool `json:"head"`
}

// AddResult reports what Add changed.
type AddResult struct {
	Package string `json:"package"`
	Bundle  string `json:"bundle"`
	Version string `json:"version"`
	// Inline is true for a bundle published without an image.
	Inline bool `json:"inline"`
	// Replaced names the bundle this one replaced in the catalog, if any.
	Replaced   string      `json:"replaced,omitempty"`
	Placements []Placement `json:"placements"`
	// APIChanges are the unsafe CRD changes published with
	// AllowUnsafeAPIChanges.
	APIChanges []APIChange `json:"apiChanges,omitempty"`
	// Warnings are checks that could not be made (a previous bundle's
	// image that could not be pulled).
	Warnings []string `json:"warnings,omitempty"`
}

// Add publishes a bundle directory in its package and places it in its
// channels by semver: every channel's entries form a replaces chain in
// version order, and each entry's skipRange ">=lowest <own version" lets
// any older version upgrade straight to it. A version already present is
// refused unless Replace is set. The bundle's CRDs are compared with those
// of every bundle it upgrades (OLM v1's upgrade-safety rules, crddiff): an
// unsafe change is refused unless AllowUnsafeAPIChanges is set. The package
// is validated before anything is written; a failure leaves the catalog
// directory as it was.
//
// ctx bounds the pull of a bundle image and the wait for the catalog's lock.
func Add(ctx context.Context, opts AddOptions) (*AddResult, error) {
	if (opts.BundleDir == "") == (opts.BundleImage == "") {
		return nil, errors.New("set either a bundle directory or a bundle image")
	}
	var b *bundledir.Bundle
	var err error
	if opts.BundleImage != "" {
		opts.Image = opts.BundleImage
		b, err = bundledir.Pull(ctx, opts.BundleImage)
	} else {
		b, err = bundledir.Read(opts.BundleDir, bundledir.Options{Image: opts.Image})
	}
	if err != nil {
		return nil, err
	}
	created := false
	if opts.InitPackage {
		if created, err = mkdirIfMissing(opts.Dir); err != nil {
			return nil, fmt.Errorf("creating catalog directory: %w", err)
		}
	}
	unlock, err := lockCatalog(ctx, opts.Dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	res, err := addLocked(ctx, opts, b)
	if err != nil && created && os.Remove(opts.Dir) == nil {
		removeLock(opts.Dir)
	}
	return res, err
}

// addLocked adds the bundle under the catalog's lock, initializing its
// package in the same write when opts.InitPackage asks for it: a kill
// between an Init and an Add would leave a package without bundles, which
// does not validate.
func addLocked(ctx context.Context, opts AddOptions, b *bundledir.Bundle) (*AddResult, error) {
	pf, err := loadPackage(opts.Dir, b.Package)
	if errors.Is(err, ErrPackageNotFound) && opts.InitPackage {
		pf, err = newPackageFile(opts.Dir, b.Package), nil
	}
	if err != nil {
		return nil, err
	}
	pf.write = opts.writeFile
	res, err := addBundle(pf, b, opts)
	if err != nil {
		return nil, err
	}
	changes, warnings, err := checkAPIChanges(ctx, pf, b, opts.AllowUnsafeAPIChanges)
	if err != nil {
		return nil, err
	}
	res.APIChanges, res.Warnings = changes, append(res.Warnings, warnings...)
	if err := pf.validate(); err != nil {
		return nil, err
	}
	if err := pf.save(); err != nil {
		return nil, err
	}
	return res, nil
}

// newPackageFile is a package not in the catalog dir yet, as Init would
// write it with no options: addBundle fills its default channel,
// description and icon from the first bundle.
func newPackageFile(dir, pkg string) *packageFile {
	return &packageFile{
		dir:    dir,
		path:   filepath.Join(dir, pkg, packageFileBase+"."+string(fbc.FormatYAML)),
		format: fbc.FormatYAML,
		isNew:  true,
		cfg:    declcfg.DeclarativeConfig{Packages: []declcfg.Package{{Schema: declcfg.SchemaPackage, Name: pkg}}},
	}
}

// addBundle changes the package in memory.
func addBundle(pf *packageFile, b *bundledir.Bundle, opts AddOptions) (*AddResult, error) {
	channels, source := opts.Channels, "--channels"
	if len(channels) == 0 {
		channels, source = b.Channels, "bundle "+b.Name+"'s "+registryv1.AnnotationChannels
	}
	if len(channels) == 0 {
		return nil, fmt.Errorf("%w: bundle %s names no channel (set %s or pass channels)", bundledir.ErrInvalidBundle, b.Name, registryv1.AnnotationChannels)
	}
	var scoped []string
	for _, ch := range channels {
		if err := registryv1.CheckChannelName(strings.TrimSpace(ch)); err != nil {
			return nil, fmt.Errorf("%s: %w", source, err)
		}
		name := opts.Scope.ChannelName(strings.TrimSpace(ch), b.Version)
		if !slices.Contains(scoped, name) {
			scoped = append(scoped, name)
		}
	}

	res := &AddResult{Package: b.Package, Bundle: b.Name, Version: b.Version.String(), Inline: opts.Image == ""}
	touched := map[string]bool{}
	for _, existing := range slices.Clone(pf.cfg.Bundles) {
		v, err := fbc.BundleVersion(&existing)
		if err != nil {
			return nil, err
		}
		if existing.Name != b.Name && !v.Equals(b.Version) {
			continue
		}
		if !opts.Replace {
			return nil, fmt.Errorf("%w: package %q already has %s (version %s); pass --replace to overwrite it", ErrBundleExists, b.Package, existing.Name, v)
		}
		res.Replaced = existing.Name
		for _, ch := range removeBundle(&pf.cfg, existing.Name) {
			touched[ch] = true
		}
	}

	pf.cfg.Bundles = append(pf.cfg.Bundles, b.Declcfg)
	for _, name := range scoped {
		ch := findChannel(&pf.cfg, name)
		if ch == nil {
			pf.cfg.Channels = append(pf.cfg.Channels, declcfg.Channel{Schema: declcfg.SchemaChannel, Name: name, Package: b.Package})
			ch = &pf.cfg.Channels[len(pf.cfg.Channels)-1]
		}
		ch.Entries = append(ch.Entries, declcfg.ChannelEntry{Name: b.Name})
		touched[name] = true
	}
	guard, err := placeChannels(&pf.cfg, touched)
	if err != nil {
		return nil, err
	}
	res.Warnings = append(res.Warnings, guard.notes(b.Name)...)
	dropEmptyChannels(&pf.cfg)

	pkg := pf.pkg()
	if pkg.DefaultChannel == "" {
		pkg.DefaultChannel = scoped[0]
		if def := opts.Scope.ChannelName(b.DefaultChannel, b.Version); b.DefaultChannel != "" && slices.Contains(scoped, def) {
			pkg.DefaultChannel = def
		}
	}
	if findChannel(&pf.cfg, pkg.DefaultChannel) == nil {
		return nil, fmt.Errorf("%w: the package's default channel %q would hold no bundle; place %s in it too (channels) or choose another default channel", ErrDefaultChannelEmpty, pkg.DefaultChannel, b.Name)
	}
	if pkg.Description == "" {
		pkg.Description = b.Description
	}
	if pkg.Icon == nil {
		pkg.Icon = b.Icon
	}

	for _, name := range scoped {
		ch := findChannel(&pf.cfg, name)
		for i, e := range ch.Entries {
			if e.Name == b.Name {
				res.Placements = append(res.Placements, Placement{Channel: name, Replaces: e.Replaces, SkipRange: e.SkipRange, Head: i == len(ch.Entries)-1})
			}
		}
	}
	return res, nil
}

// placeChannels rewrites the entries of the named channels in semver order.
// Entries keep their explicit skips; replaces and skipRange are derived,
// a skipRange starting above any bundle whose stored versions the entry
// drops (see storageGuard, returned for its notes).
func placeChannels(cfg *declcfg.DeclarativeConfig, names map[string]bool) (*storageGuard, error) {
	guard := newStorageGuard(cfg)
	versions := map[string]semver.Version{}
	for i := range cfg.Bundles {
		v, err := fbc.BundleVersion(&cfg.Bundles[i])
		if err != nil {
			return nil, err
		}
		versions[cfg.Bundles[i].Name] = v
	}
	for i := range cfg.Channels {
		ch := &cfg.Channels[i]
		if !names[ch.Name] {
			continue
		}
		for _, e := range ch.Entries {
			if _, ok := versions[e.Name]; !ok {
				return nil, fmt.Errorf("channel %q lists %q, which is not a bundle of package %q", ch.Name, e.Name, ch.Package)
			}
		}
		placeEntries(ch.Entries, versions, guard.drops)
	}
	return guard, nil
}

// placeEntries sorts entries by version and links them: each replaces the
// previous one and skips every version from the lowest up to its own, or,
// when drops (may be nil) says it cannot be reached straight from an older
// entry, from the entry above the newest such one. An entry that drops
// what the one it replaces stores keeps the replaces (catalog add's check
// refuses it) and no skipRange.
func placeEntries(entries []declcfg.ChannelEntry, versions map[string]semver.Version, drops func(older, newer string) bool) {
	slices.SortFunc(entries, func(a, b declcfg.ChannelEntry) int {
		return cmp.Or(versions[a.Name].Compare(versions[b.Name]), strings.Compare(a.Name, b.Name))
	})
	for i := range entries {
		entries[i].Replaces, entries[i].SkipRange = "", ""
		if i == 0 {
			continue
		}
		entries[i].Replaces = entries[i-1].Name
		floor := 0
		for j := i - 1; drops != nil && j >= 0; j-- {
			if drops(entries[j].Name, entries[i].Name) {
				floor = j + 1
				break
			}
		}
		if floor < i {
			entries[i].SkipRange = fmt.Sprintf(">=%s <%s", versions[entries[floor].Name], versions[entries[i].Name])
		}
	}
}

func findChannel(cfg *declcfg.DeclarativeConfig, name string) *declcfg.Channel {
	for i := range cfg.Channels {
		if cfg.Channels[i].Name == name {
			return &cfg.Channels[i]
		}
	}
	return nil
}

// removeBundle drops a bundle, its channel entries and its deprecation, and
// returns the channels it was in.
func removeBundle(cfg *declcfg.DeclarativeConfig, name string) []string {
	cfg.Bundles = slices.DeleteFunc(cfg.Bundles, func(b declcfg.Bundle) bool { return b.Name == name })
	var channels []string
	for i := range cfg.Channels {
		ch := &cfg.Channels[i]
		n := len(ch.Entries)
		ch.Entries = slices.DeleteFunc(ch.Entries, func(e declcfg.ChannelEntry) bool { return e.Name == name })
		if len(ch.Entries) != n {
			channels = append(channels, ch.Name)
		}
	}
	for i := range cfg.Deprecations {
		cfg.Deprecations[i].Entries = slices.DeleteFunc(cfg.Deprecations[i].Entries, func(e declcfg.DeprecationEntry) bool {
			return e.Reference.Schema == declcfg.SchemaBundle && e.Reference.Name == name
		})
	}
	return channels
}

// dropEmptyChannels removes channels left without entries, their
// deprecations, and deprecation blobs left without entries.
func dropEmptyChannels(cfg *declcfg.DeclarativeConfig) {
	var gone []string
	cfg.Channels = slices.DeleteFunc(cfg.Channels, func(c declcfg.Channel) bool {
		if len(c.Entries) == 0 {
			gone = append(gone, c.Name)
			return true
		}
		return false
	})
	for i := range cfg.Deprecations {
		cfg.Deprecations[i].Entries = slices.DeleteFunc(cfg.Deprecations[i].Entries, func(e declcfg.DeprecationEntry) bool {
			return e.Reference.Schema == declcfg.SchemaChannel && slices.Contains(gone, e.Reference.Name)
		})
	}
	cfg.Deprecations = slices.DeleteFunc(cfg.Deprecations, func(d declcfg.Deprecation) bool { return len(d.Entries) == 0 })
}

// RemoveOptions name a bundle to take out of a catalog package.
type RemoveOptions struct {
	// Dir is the catalog directory.
	Dir string
	// Package is the bundle's package.
	Package string
	// Bundle is the bundle's name or its version.
	Bundle string
}

// Remove takes a bundle out of its package and re-places the channels it
// was in, so their replaces chains close over the gap. Channels left empty
// are dropped. The package is validated before anything is written.
func Remove(ctx context.Context, opts RemoveOptions) (removed string, err error) {
	unlock, err := lockCatalog(ctx, opts.Dir)
	if err != nil {
		return "", err
	}
	defer unlock()
	pf, err := loadPackage(opts.Dir, opts.Package)
	if err != nil {
		return "", err
	}
	name, err := resolveBundle(pf, opts.Bundle)
	if err != nil {
		return "", err
	}
	touched := map[string]bool{}
	for _, ch := range removeBundle(&pf.cfg, name) {
		touched[ch] = true
	}
	if _, err := placeChannels(&pf.cfg, touched); err != nil {
		return "", err
	}
	dropEmptyChannels(&pf.cfg)
	if len(pf.cfg.Bundles) > 0 {
		if err := pf.validate(); err != nil {
			return "", err
		}
	}
	return name, pf.save()
}

// resolveBundle finds a bundle by name or version.
func resolveBundle(pf *packageFile, nameOrVersion string) (string, error) {
	want, verr := semver.ParseTolerant(nameOrVersion)
	for i := range pf.cfg.Bundles {
		b := &pf.cfg.Bundles[i]
		if b.Name == nameOrVersion {
			return b.Name, nil
		}
		if v, err := fbc.BundleVersion(b); verr == nil && err == nil && v.Equals(want) {
			return b.Name, nil
		}
	}
	return "", fmt.Errorf("%w: package %q has no bundle named or versioned %q", ErrBundleNotFound, pf.pkg().Name, nameOrVersion)
}

// DeprecateOptions name what to deprecate: a bundle, a channel, or (with
// neither set) the whole package.
type DeprecateOptions struct {
	// Dir is the catalog directory.
	Dir string
	// Package is the package.
	Package string
	// Bundle is a bundle's name or version to deprecate.
	Bundle string
	// Channel is a channel to deprecate.
	Channel string
	// Message tells users why and what to do instead; required.
	Message string
}

// Deprecate records an olm.deprecations entry for a bundle, a channel or
// the package, replacing an earlier message for the same reference.
func Deprecate(ctx context.Context, opts DeprecateOptions) error {
	if opts.Message == "" {
		return errors.New("a deprecation message is required")
	}
	if opts.Bundle != "" && opts.Channel != "" {
		return errors.New("deprecate a bundle or a channel, not both")
	}
	unlock, err := lockCatalog(ctx, opts.Dir)
	if err != nil {
		return err
	}
	defer unlock()
	pf, err := loadPackage(opts.Dir, opts.Package)
	if err != nil {
		return err
	}
	ref := declcfg.PackageScopedReference{Schema: declcfg.SchemaPackage}
	switch {
	case opts.Bundle != "":
		name, err := resolveBundle(pf, opts.Bundle)
		if err != nil {
			return err
		}
		ref = declcfg.PackageScopedReference{Schema: declcfg.SchemaBundle, Name: name}
	case opts.Channel != "":
		if findChannel(&pf.cfg, opts.Channel) == nil {
			return fmt.Errorf("package %q has no channel %q", opts.Package, opts.Channel)
		}
		ref = declcfg.PackageScopedReference{Schema: declcfg.SchemaChannel, Name: opts.Channel}
	}
	if len(pf.cfg.Deprecations) == 0 {
		pf.cfg.Deprecations = []declcfg.Deprecation{{Schema: declcfg.SchemaDeprecation, Package: opts.Package}}
	}
	d := &pf.cfg.Deprecations[0]
	d.Entries = slices.DeleteFunc(d.Entries, func(e declcfg.DeprecationEntry) bool { return e.Reference == ref })
	d.Entries = append(d.Entries, declcfg.DeprecationEntry{Reference: ref, Message: opts.Message})
	if len(pf.cfg.Bundles) > 0 {
		if err := pf.validate(); err != nil {
			return err
		}
	}
	return pf.save()
}
