package extension

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/chartpilot/chartpilot/apply"
	"github.com/chartpilot/chartpilot/olm"
)

// ExtensionLabel names the ClusterExtension an object was created for, so
// that Uninstall removes only what Install made.
const ExtensionLabel = "olm.chartpilot.io/extension"

// DefaultPollIntervalMinutes is how often catalogd looks for a new digest
// of a catalog image given by tag: publishing a new catalog under the same
// tag then upgrades, as OLM v0's registry poll does.
const DefaultPollIntervalMinutes = 10

// InstallerRules are the RBAC rules of the installer ServiceAccount:
// Cluster in a ClusterRole bound cluster-wide, Namespaced in a Role of the
// install namespace.
type InstallerRules struct {
	Cluster    []rbacv1.PolicyRule `json:"cluster,omitempty"`
	Namespaced []rbacv1.PolicyRule `json:"namespaced,omitempty"`
}

// InstallerRequest is what the installer's rules are for: the bundle
// operator-controller installs (unpacked in Bundle.Dir), and, for an
// upgrade, the bundle installed now, whose objects the upgrade removes.
type InstallerRequest struct {
	Extension string
	Namespace string
	Bundle    Bundle
	Previous  *Bundle
}

// InstallerRulesFunc gives the installer ServiceAccount's rules for a
// bundle: a least-privilege derivation, or rules of the caller's own.
type InstallerRulesFunc func(ctx context.Context, req InstallerRequest) (InstallerRules, error)

// InstallOptions describe an operator to install through OLM v1.
type InstallOptions struct {
	// Package is the catalog package to install. Required.
	Package string
	// Name is the ClusterExtension's name; default the package.
	Name string
	// Namespace is where the bundle's namespaced objects and the installer
	// ServiceAccount go; created when missing. Required.
	Namespace string
	// CatalogImage is a catalog image for a ClusterCatalog that the
	// ClusterExtension then installs from alone. Empty: the cluster's
	// catalogs (CatalogSelector) are searched.
	CatalogImage string
	// CatalogName is the ClusterCatalog's name; default <name>-catalog.
	CatalogName string
	// CatalogSelector selects the catalogs to search when CatalogImage is
	// empty (a label selector, as kubectl's -l); empty: all of them.
	CatalogSelector string
	// PollIntervalMinutes is how often catalogd polls a catalog image
	// given by tag; 0 is DefaultPollIntervalMinutes, negative never.
	PollIntervalMinutes int
	// Channels limit the bundles to those channels; empty: any.
	Channels []string
	// Version is a version or version range (Masterminds semver, e.g.
	// ">=0.1.0 <0.3.0", "0.2.x"); empty: any.
	Version string
	// UpgradeConstraintPolicy is CatalogProvided (upgrade along the
	// catalog's edges; the default) or SelfCertified (any version).
	UpgradeConstraintPolicy string
	// CRDUpgradeSafety is the CRD upgrade safety preflight's enforcement:
	// Strict (the default) or None.
	CRDUpgradeSafety string
	// ServiceAccount is the installer ServiceAccount; default <name>-installer.
	ServiceAccount string
	// ExistingServiceAccount uses a ServiceAccount (and RBAC) of the
	// user's: none is created or removed.
	ExistingServiceAccount bool
	// InstallerClusterRole binds this existing ClusterRole (e.g.
	// cluster-admin) to the installer instead of rules of its own.
	InstallerClusterRole string
	// InstallerRules gives the installer's rules for the bundle resolved
	// from the catalog; used unless ExistingServiceAccount or
	// InstallerClusterRole.
	InstallerRules InstallerRulesFunc
	// WatchNamespace is the one namespace the operator watches (the
	// install namespace for OwnNamespace); empty: all of them, or its own
	// when the bundle's CSV supports no AllNamespaces.
	WatchNamespace string
	// Features are the cluster's OLM v1's; nil: read from the cluster
	// (LegacyFeatures without one).
	Features *Features
}

// installer says whether the cluster's OLM v1 installs as an installer
// ServiceAccount.
func (o InstallOptions) installer() bool {
	return o.Features == nil || o.Features.InstallerServiceAccount
}

// derivesRules says whether the installer's rules come from InstallerRules.
func (o InstallOptions) derivesRules() bool {
	return o.installer() && !o.ExistingServiceAccount && o.InstallerClusterRole == ""
}

func (o InstallOptions) withDefaults() (InstallOptions, error) {
	if o.Package == "" {
		return o, errors.New("install: no package")
	}
	if o.Namespace == "" {
		return o, errors.New("install: no namespace")
	}
	if o.Name == "" {
		o.Name = o.Package
	}
	if o.CatalogImage != "" && o.CatalogName == "" {
		o.CatalogName = CatalogName(o.Name)
	}
	if o.ServiceAccount == "" {
		o.ServiceAccount = InstallerName(o.Name)
	}
	if o.PollIntervalMinutes == 0 {
		o.PollIntervalMinutes = DefaultPollIntervalMinutes
	}
	if o.CatalogImage != "" && o.CatalogSelector != "" {
		return o, errors.New("install: a catalog image is the only catalog searched: it does not go with a catalog selector")
	}
	if o.ExistingServiceAccount && o.InstallerClusterRole != "" {
		return o, errors.New("install: an existing ServiceAccount keeps its own RBAC: it does not go with an installer ClusterRole")
	}
	if o.derivesRules() && o.InstallerRules == nil {
		return o, errors.New("install: the installer ServiceAccount needs RBAC: give installer rules, a ClusterRole to bind, or use an existing ServiceAccount")
	}
	for _, f := range []struct{ field, value string }{
		{"package", o.Package}, {"extension name", o.Name}, {"namespace", o.Namespace},
		{"catalog name", o.CatalogName}, {"service account", o.ServiceAccount}, {"watch namespace", o.WatchNamespace},
	} {
		if f.value == "" {
			continue
		}
		if errs := validation.IsDNS1123Subdomain(f.value); len(errs) > 0 {
			return o, fmt.Errorf("install: %s %q: %s", f.field, f.value, strings.Join(errs, "; "))
		}
	}
	if errs := validation.IsDNS1123Label(o.Namespace); len(errs) > 0 {
		return o, fmt.Errorf("install: namespace %q: %s", o.Namespace, strings.Join(errs, "; "))
	}
	if o.CatalogImage != "" {
		if _, err := name.ParseReference(o.CatalogImage); err != nil {
			return o, fmt.Errorf("install: catalog image %q: %w", o.CatalogImage, err)
		}
	}
	if o.Version != "" {
		if _, err := parseRange(o.Version); err != nil {
			return o, fmt.Errorf("install: version range %q: %w", o.Version, err)
		}
	}
	if !oneOf(o.UpgradeConstraintPolicy, "", UpgradeCatalogProvided, UpgradeSelfCertified) {
		return o, fmt.Errorf("install: upgrade constraint policy %q: want %s or %s", o.UpgradeConstraintPolicy, UpgradeCatalogProvided, UpgradeSelfCertified)
	}
	if !oneOf(o.CRDUpgradeSafety, "", CRDSafetyStrict, CRDSafetyNone) {
		return o, fmt.Errorf("install: CRD upgrade safety %q: want %s or %s", o.CRDUpgradeSafety, CRDSafetyStrict, CRDSafetyNone)
	}
	if o.CatalogSelector != "" {
		if _, err := metav1.ParseToLabelSelector(o.CatalogSelector); err != nil {
			return o, fmt.Errorf("install: catalog selector %q: %w", o.CatalogSelector, err)
		}
	}
	return o, nil
}

func oneOf(s string, allowed ...string) bool { return slices.Contains(allowed, s) }

// installerName names the installer's ClusterRole, Role and bindings.
// InstallerName is the name install gives the installer ServiceAccount of
// an extension, and its ClusterRole, Role and bindings.
func InstallerName(extension string) string { return extension + "-installer" }

// CatalogName is the name install gives the ClusterCatalog it makes of an
// extension's catalog image.
func CatalogName(extension string) string { return extension + "-catalog" }

// Plan is what Install applies, in order.
type Plan struct {
	// Namespace is nil when the install namespace exists already.
	Namespace *corev1.Namespace
	// Catalog is nil when the cluster's catalogs are searched.
	Catalog        *Catalog
	ServiceAccount *corev1.ServiceAccount
	// ClusterRole is nil when an existing one is bound or there are no
	// cluster-wide rules; the binding is nil without cluster-wide rules.
	ClusterRole        *rbacv1.ClusterRole
	ClusterRoleBinding *rbacv1.ClusterRoleBinding
	Role               *rbacv1.Role
	RoleBinding        *rbacv1.RoleBinding
	Extension          *Extension
	// Bundle is the bundle resolved from the catalog (for the installer's
	// rules or the install modes), when it was.
	Bundle *Bundle `json:"bundle,omitempty"`
	// Notes say what the plan left out or chose, and why.
	Notes []string `json:"notes,omitempty"`
}

// NoInstallerNote says why an install makes no installer ServiceAccount.
const NoInstallerNote = "no installer ServiceAccount: this cluster's OLM v1 ignores a ClusterExtension's spec.serviceAccount (operator-controller v1.11 and later installs as its own cluster-admin ServiceAccount: write access to ClusterExtensions is cluster-admin trust)"

// NewPlan builds the objects for opts: rules are the installer's (nil
// with ExistingServiceAccount or InstallerClusterRole); namespaceExists
// leaves the Namespace out.
func NewPlan(opts InstallOptions, rules *InstallerRules, namespaceExists bool) (*Plan, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	meta := func(name, namespace string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{
			olm.ManagedByLabel: apply.FieldManager, ExtensionLabel: opts.Name,
		}}
	}
	p := &Plan{}
	if !namespaceExists {
		p.Namespace = &corev1.Namespace{TypeMeta: typeMeta("v1", "Namespace"), ObjectMeta: meta(opts.Namespace, "")}
	}
	if opts.CatalogImage != "" {
		p.Catalog = newCatalog(meta(opts.CatalogName, ""), opts.CatalogImage, opts.PollIntervalMinutes)
	}
	switch {
	case !opts.installer():
		p.Notes = append(p.Notes, NoInstallerNote)
	case !opts.ExistingServiceAccount:
		p.ServiceAccount = &corev1.ServiceAccount{TypeMeta: typeMeta("v1", "ServiceAccount"), ObjectMeta: meta(opts.ServiceAccount, opts.Namespace)}
		p.addRBAC(opts, rules, meta)
	}
	ext, err := newExtension(opts)
	if err != nil {
		return nil, err
	}
	ext.ObjectMeta = meta(opts.Name, "")
	p.Extension = ext
	return p, nil
}

// addRBAC adds the installer's roles and bindings.
func (p *Plan) addRBAC(opts InstallOptions, rules *InstallerRules, meta func(string, string) metav1.ObjectMeta) {
	name := InstallerName(opts.Name)
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: opts.ServiceAccount, Namespace: opts.Namespace}}
	roleRef := func(kind, role string) rbacv1.RoleRef {
		return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: role}
	}
	rbac := func(kind string) metav1.TypeMeta { return typeMeta(rbacv1.SchemeGroupVersion.String(), kind) }
	clusterRole := opts.InstallerClusterRole
	if clusterRole == "" && rules != nil && len(rules.Cluster) > 0 {
		clusterRole = name
		p.ClusterRole = &rbacv1.ClusterRole{TypeMeta: rbac("ClusterRole"), ObjectMeta: meta(name, ""), Rules: rules.Cluster}
	}
	if clusterRole != "" {
		p.ClusterRoleBinding = &rbacv1.ClusterRoleBinding{TypeMeta: rbac("ClusterRoleBinding"), ObjectMeta: meta(name, ""),
			RoleRef: roleRef("ClusterRole", clusterRole), Subjects: subject}
	}
	if opts.InstallerClusterRole == "" && rules != nil && len(rules.Namespaced) > 0 {
		p.Role = &rbacv1.Role{TypeMeta: rbac("Role"), ObjectMeta: meta(name, opts.Namespace), Rules: rules.Namespaced}
		p.RoleBinding = &rbacv1.RoleBinding{TypeMeta: rbac("RoleBinding"), ObjectMeta: meta(name, opts.Namespace),
			RoleRef: roleRef("Role", name), Subjects: subject}
	}
}

func typeMeta(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}

// newCatalog is a ClusterCatalog of a catalog image, polled when a tag.
func newCatalog(meta metav1.ObjectMeta, image string, pollMinutes int) *Catalog {
	src := &ImageSource{Ref: image}
	// catalogd refuses a poll interval on a digest: there is nothing to poll.
	if ref, err := name.ParseReference(image); err == nil && pollMinutes > 0 {
		if _, digest := ref.(name.Digest); !digest {
			src.PollIntervalMinutes = &pollMinutes
		}
	}
	return &Catalog{
		TypeMeta:   typeMeta(GroupVersion.String(), CatalogKind),
		ObjectMeta: meta,
		Spec:       CatalogSpec{Source: CatalogSource{Type: SourceTypeImage, Image: src}},
	}
}

// newExtension is the ClusterExtension of opts (defaults applied).
func newExtension(opts InstallOptions) (*Extension, error) {
	filter := &CatalogFilter{
		PackageName:             opts.Package,
		Version:                 opts.Version,
		Channels:                opts.Channels,
		UpgradeConstraintPolicy: opts.UpgradeConstraintPolicy,
	}
	switch {
	case opts.CatalogName != "":
		filter.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{MetadataNameLabel: opts.CatalogName}}
	case opts.CatalogSelector != "":
		sel, err := metav1.ParseToLabelSelector(opts.CatalogSelector)
		if err != nil {
			return nil, fmt.Errorf("catalog selector %q: %w", opts.CatalogSelector, err)
		}
		filter.Selector = sel
	}
	ext := &Extension{
		TypeMeta: typeMeta(GroupVersion.String(), ExtensionKind),
		Spec: ExtensionSpec{
			Namespace: opts.Namespace,
			Source:    ExtensionSource{SourceType: SourceTypeCatalog, Catalog: filter},
		},
	}
	if opts.installer() {
		ext.Spec.ServiceAccount = &ServiceAccount{Name: opts.ServiceAccount}
	}
	if opts.WatchNamespace != "" {
		if opts.Features == nil || !opts.Features.Config {
			return nil, fmt.Errorf("install: watch namespace %s: %w", opts.WatchNamespace, ErrNoWatchNamespace)
		}
		ext.Spec.Config = &ExtensionConfig{ConfigType: ConfigTypeInline, Inline: map[string]any{WatchNamespaceKey: opts.WatchNamespace}}
	}
	if opts.CRDUpgradeSafety != "" {
		ext.Spec.Install = &InstallConfig{Preflight: &PreflightConfig{CRDUpgradeSafety: &CRDUpgradeSafety{Enforcement: opts.CRDUpgradeSafety}}}
	}
	return ext, nil
}

// Objects are the plan's objects in apply order, as the API server takes
// them: no status, no empty fields.
func (p *Plan) Objects() ([]*unstructured.Unstructured, error) {
	var objs []any
	add := func(present bool, o any) {
		if present {
			objs = append(objs, o)
		}
	}
	add(p.Namespace != nil, p.Namespace)
	add(p.Catalog != nil, p.Catalog)
	add(p.ServiceAccount != nil, p.ServiceAccount)
	add(p.ClusterRole != nil, p.ClusterRole)
	add(p.ClusterRoleBinding != nil, p.ClusterRoleBinding)
	add(p.Role != nil, p.Role)
	add(p.RoleBinding != nil, p.RoleBinding)
	add(p.Extension != nil, p.Extension)
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		u, err := olm.Manifest(o)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}
