package extension

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/chartpilot/chartpilot/olm"
)

// ErrNotInstalled means there is no ClusterExtension of that name.
var ErrNotInstalled = errors.New("no such ClusterExtension")

// UpgradeOptions change what a ClusterExtension installs. Nil and empty
// fields keep what the spec says.
type UpgradeOptions struct {
	// Name is the ClusterExtension's name. Required.
	Name string
	// Version is the new version or version range; "" removes the range.
	Version *string
	// Channels are the new channels; an empty list removes them.
	Channels *[]string
	// CatalogImage is a new image for the extension's own ClusterCatalog
	// (the one its selector names by olm.operatorframework.io/metadata.name).
	CatalogImage string
	// UpgradeConstraintPolicy and CRDUpgradeSafety, when set, replace the spec's.
	UpgradeConstraintPolicy string
	CRDUpgradeSafety        string
	// InstallerRules, when set and the installer ServiceAccount is one
	// Install created, gives its rules for the bundle the upgrade goes to
	// (with the installed one as Previous); they replace the old rules
	// before the ClusterExtension changes.
	InstallerRules InstallerRulesFunc
}

// UpgradeResult reports what Upgrade changed.
type UpgradeResult struct {
	Objects []olm.ObjectResult `json:"objects"`
	// From is the bundle installed before.
	From *BundleMetadata `json:"from,omitempty"`
	// To is the bundle OLM v1 is expected to install, when the catalog
	// could be read.
	To *Bundle `json:"to,omitempty"`
	// Note says why To is unknown.
	Note string `json:"note,omitempty"`
}

// Upgrade applies the changes of opts: first the catalog image and the
// installer's rules, then the ClusterExtension's spec.
func Upgrade(ctx context.Context, c client.Client, opts UpgradeOptions) (*UpgradeResult, error) {
	ext, err := getExtension(ctx, c, opts.Name)
	if err != nil {
		return nil, err
	}
	if ext == nil {
		return nil, fmt.Errorf("upgrade: %w %s: install it first (chartpilot olm v1 install)", ErrNotInstalled, opts.Name)
	}
	if err := validateUpgrade(opts); err != nil {
		return nil, err
	}
	spec := newSpec(ext.Spec, opts)
	res := &UpgradeResult{From: ext.InstalledBundle()}
	var cat *Catalog
	if opts.CatalogImage != "" {
		if cat, err = ownCatalog(ctx, c, ext); err != nil {
			return nil, err
		}
	}
	// The target bundle, resolved before anything changes: a range nothing
	// fits is refused here, not left for operator-controller to report.
	cfg, err := extensionCatalogContent(ctx, c, ext, opts.CatalogImage)
	if err != nil {
		res.Note = "the catalog could not be read: " + err.Error()
	} else if res.To, err = Resolve(cfg, Selection{Package: spec.Source.Catalog.PackageName, Version: spec.Source.Catalog.Version,
		Channels: spec.Source.Catalog.Channels, Installed: res.From, Policy: spec.Source.Catalog.UpgradeConstraintPolicy}); err != nil {
		return nil, fmt.Errorf("upgrade: %w", err)
	}
	// The installer's rules first: it must be able to upgrade before
	// operator-controller sees the new catalog or spec. An extension that
	// names no installer (OLM v1 v1.11 and later) has none to update.
	if opts.InstallerRules != nil && ext.Spec.InstallerServiceAccount() != "" {
		if err := res.updateInstaller(ctx, c, ext, cfg, opts.InstallerRules); err != nil {
			return res, err
		}
	}
	if cat != nil {
		poll := DefaultPollIntervalMinutes
		if p := cat.Spec.Source.Image.PollIntervalMinutes; p != nil {
			poll = *p
		}
		if err := res.apply(ctx, c, newCatalog(ownedMeta(cat.ObjectMeta), opts.CatalogImage, poll)); err != nil {
			return res, err
		}
	}
	updated := &Extension{TypeMeta: typeMeta(GroupVersion.String(), ExtensionKind), ObjectMeta: ownedMeta(ext.ObjectMeta), Spec: spec}
	if err := res.apply(ctx, c, updated); err != nil {
		return res, err
	}
	return res, nil
}

func validateUpgrade(opts UpgradeOptions) error {
	if opts.Version != nil && *opts.Version != "" {
		if _, err := parseRange(*opts.Version); err != nil {
			return fmt.Errorf("upgrade: version range %q: %w", *opts.Version, err)
		}
	}
	if opts.CatalogImage != "" {
		if _, err := name.ParseReference(opts.CatalogImage); err != nil {
			return fmt.Errorf("upgrade: catalog image %q: %w", opts.CatalogImage, err)
		}
	}
	if !oneOf(opts.UpgradeConstraintPolicy, "", UpgradeCatalogProvided, UpgradeSelfCertified) {
		return fmt.Errorf("upgrade: upgrade constraint policy %q: want %s or %s", opts.UpgradeConstraintPolicy, UpgradeCatalogProvided, UpgradeSelfCertified)
	}
	if !oneOf(opts.CRDUpgradeSafety, "", CRDSafetyStrict, CRDSafetyNone) {
		return fmt.Errorf("upgrade: CRD upgrade safety %q: want %s or %s", opts.CRDUpgradeSafety, CRDSafetyStrict, CRDSafetyNone)
	}
	return nil
}

// newSpec is the spec with the changes of opts.
func newSpec(cur ExtensionSpec, opts UpgradeOptions) ExtensionSpec {
	spec := cur
	f := *cur.Source.Catalog
	f.Channels = slices.Clone(f.Channels)
	if opts.Version != nil {
		f.Version = *opts.Version
	}
	if opts.Channels != nil {
		f.Channels = slices.Clone(*opts.Channels)
	}
	if opts.UpgradeConstraintPolicy != "" {
		f.UpgradeConstraintPolicy = opts.UpgradeConstraintPolicy
	}
	spec.Source.Catalog = &f
	if opts.CRDUpgradeSafety != "" {
		spec.Install = &InstallConfig{Preflight: &PreflightConfig{CRDUpgradeSafety: &CRDUpgradeSafety{Enforcement: opts.CRDUpgradeSafety}}}
	}
	return spec
}

// ownedMeta keeps the name and labels of an object for an apply.
func ownedMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, Labels: m.Labels}
}

// ownCatalog is the ClusterCatalog the extension selects by name, which
// must be one Install created for it: another's image is not ours to change.
func ownCatalog(ctx context.Context, c client.Client, ext *Extension) (*Catalog, error) {
	name := selectedCatalogName(ext)
	if name == "" {
		return nil, fmt.Errorf("upgrade: ClusterExtension %s selects no catalog by name: change the image of its ClusterCatalog with kubectl, or install with --catalog-image", ext.Name)
	}
	cat, err := getCatalog(ctx, c, name)
	if err != nil {
		return nil, err
	}
	if cat == nil {
		return nil, fmt.Errorf("upgrade: the ClusterCatalog %s that ClusterExtension %s selects does not exist", name, ext.Name)
	}
	if cat.Labels[ExtensionLabel] != ext.Name || cat.Spec.Source.Image == nil {
		return nil, fmt.Errorf("upgrade: ClusterCatalog %s was not created for ClusterExtension %s: change its image with kubectl patch clustercatalog %s", name, ext.Name, name)
	}
	return cat, nil
}

// selectedCatalogName is the catalog the extension selects by name, if so.
func selectedCatalogName(ext *Extension) string {
	if f := ext.Spec.Source.Catalog; f != nil && f.Selector != nil && len(f.Selector.MatchExpressions) == 0 && len(f.Selector.MatchLabels) == 1 {
		return f.Selector.MatchLabels[MetadataNameLabel]
	}
	return ""
}

// extensionCatalogContent reads the catalogs the extension searches: the
// new image when one is given, else the images catalogd resolved.
func extensionCatalogContent(ctx context.Context, c client.Client, ext *Extension, image string) (*declcfg.DeclarativeConfig, error) {
	if image != "" {
		return LoadCatalogImage(ctx, image)
	}
	selector := ""
	if f := ext.Spec.Source.Catalog; f != nil && f.Selector != nil {
		s, err := metav1.LabelSelectorAsSelector(f.Selector)
		if err != nil {
			return nil, err
		}
		selector = s.String()
	}
	return catalogContent(ctx, c, "", selector)
}

// updateInstaller re-derives the installer's rules for the target bundle
// and applies them, when the installer is the one Install made.
func (res *UpgradeResult) updateInstaller(ctx context.Context, c client.Client, ext *Extension, cfg *declcfg.DeclarativeConfig, derive InstallerRulesFunc) error {
	if res.To == nil {
		return fmt.Errorf("upgrade: the installer's rules need the bundle the upgrade goes to: %s", res.Note)
	}
	sa := &unstructured.Unstructured{}
	sa.SetAPIVersion("v1")
	sa.SetKind("ServiceAccount")
	if err := c.Get(ctx, client.ObjectKey{Namespace: ext.Spec.Namespace, Name: ext.Spec.InstallerServiceAccount()}, sa); err != nil {
		return fmt.Errorf("upgrade: the installer ServiceAccount: %w", err)
	}
	if sa.GetLabels()[ExtensionLabel] != ext.Name {
		return nil // the user's: its RBAC is the user's too
	}
	req := InstallerRequest{Extension: ext.Name, Namespace: ext.Spec.Namespace, Bundle: *res.To}
	if res.From != nil && res.From.Name != res.To.Name {
		if prev := findBundle(cfg, res.From.Name); prev != nil {
			req.Previous = prev
		}
	}
	rules, err := deriveRules(ctx, derive, req)
	if err != nil {
		return fmt.Errorf("upgrade: %w", err)
	}
	opts := InstallOptions{Package: ext.Spec.Source.Catalog.PackageName, Name: ext.Name, Namespace: ext.Spec.Namespace,
		ServiceAccount: ext.Spec.InstallerServiceAccount(), InstallerRules: derive}
	plan, err := NewPlan(opts, &rules, true)
	if err != nil {
		return err
	}
	objs, err := plan.Objects()
	if err != nil {
		return err
	}
	for _, u := range objs {
		if u.GroupVersionKind().Group != rbacv1.GroupName {
			continue
		}
		if err := res.apply(ctx, c, u); err != nil {
			return err
		}
	}
	return nil
}

// findBundle is the named bundle of cfg, with its version, or nil.
func findBundle(cfg *declcfg.DeclarativeConfig, bundleName string) *Bundle {
	for i := range cfg.Bundles {
		if cfg.Bundles[i].Name != bundleName {
			continue
		}
		all, err := PackageBundles(cfg, cfg.Bundles[i].Package)
		if err != nil {
			return nil
		}
		for _, b := range all {
			if b.Name == bundleName {
				return &b
			}
		}
	}
	return nil
}

// apply server-side applies o (typed, or a manifest already) and records it.
func (res *UpgradeResult) apply(ctx context.Context, c client.Client, o any) error {
	u, err := olm.Manifest(o)
	if err != nil {
		return err
	}
	done, err := olm.Apply(ctx, c, u)
	if err != nil {
		return fmt.Errorf("upgrade: %w", err)
	}
	res.Objects = append(res.Objects, done)
	return nil
}
