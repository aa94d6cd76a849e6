package extension

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The OLM v1 API (olm.operatorframework.io/v1), as operator-controller
// v1.2.0 to v1.11.0 serve it (see Features for what differs). Only the fields this package reads and writes are
// declared; objects travel as unstructured.
const (
	Group         = "olm.operatorframework.io"
	Version       = "v1"
	CatalogKind   = "ClusterCatalog"
	ExtensionKind = "ClusterExtension"
	// MetadataNameLabel is the label catalogd's webhook puts on every
	// ClusterCatalog, holding its name: a ClusterExtension selects its
	// catalog with it.
	MetadataNameLabel = "olm.operatorframework.io/metadata.name"
	// OwnerKindLabel and OwnerNameLabel mark every object operator-controller
	// installs for a ClusterExtension.
	OwnerKindLabel = "olm.operatorframework.io/owner-kind"
	OwnerNameLabel = "olm.operatorframework.io/owner-name"
	// SourceTypeCatalog and SourceTypeImage are the only source types.
	SourceTypeCatalog = "Catalog"
	SourceTypeImage   = "Image"
)

// Condition types and reasons of both kinds.
const (
	TypeInstalled   = "Installed"
	TypeProgressing = "Progressing"
	TypeServing     = "Serving"
	TypeDeprecated  = "Deprecated"
	// The deprecations of the package, the channel and the bundle.
	TypePackageDeprecated = "PackageDeprecated"
	TypeChannelDeprecated = "ChannelDeprecated"
	TypeBundleDeprecated  = "BundleDeprecated"

	ReasonSucceeded = "Succeeded"
	ReasonRetrying  = "Retrying"
	ReasonBlocked   = "Blocked"
	// ReasonInvalidConfiguration is Progressing's reason (False) when the
	// spec's config does not fit the bundle (OLM v1 v1.11).
	ReasonInvalidConfiguration = "InvalidConfiguration"
	ReasonFailed               = "Failed"
	ReasonAvailable            = "Available"
)

// Upgrade constraint policies and CRD upgrade safety enforcements.
const (
	UpgradeCatalogProvided = "CatalogProvided"
	UpgradeSelfCertified   = "SelfCertified"
	CRDSafetyStrict        = "Strict"
	CRDSafetyNone          = "None"
)

// GroupVersion is olm.operatorframework.io/v1.
var GroupVersion = schema.GroupVersion{Group: Group, Version: Version}

// Catalog is a ClusterCatalog.
type Catalog struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              CatalogSpec   `json:"spec"`
	Status            CatalogStatus `json:"status,omitempty"`
}

// CatalogSpec is where a ClusterCatalog's content comes from.
type CatalogSpec struct {
	Source           CatalogSource `json:"source"`
	Priority         int32         `json:"priority,omitempty"`
	AvailabilityMode string        `json:"availabilityMode,omitempty"`
}

// CatalogSource is a catalog image.
type CatalogSource struct {
	Type  string       `json:"type"`
	Image *ImageSource `json:"image,omitempty"`
}

// ImageSource is an image reference, polled for new digests when a tag.
type ImageSource struct {
	Ref                 string `json:"ref"`
	PollIntervalMinutes *int   `json:"pollIntervalMinutes,omitempty"`
}

// CatalogStatus is what catalogd reports.
type CatalogStatus struct {
	Conditions     []metav1.Condition `json:"conditions,omitempty"`
	ResolvedSource *CatalogSource     `json:"resolvedSource,omitempty"`
	URLs           *CatalogURLs       `json:"urls,omitempty"`
	LastUnpacked   *metav1.Time       `json:"lastUnpacked,omitempty"`
}

// CatalogURLs is where catalogd serves a catalog's content.
type CatalogURLs struct {
	Base string `json:"base"`
}

// Extension is a ClusterExtension.
type Extension struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ExtensionSpec   `json:"spec,omitempty"`
	Status            ExtensionStatus `json:"status,omitempty"`
}

// ExtensionSpec is what to install, where and as whom.
type ExtensionSpec struct {
	Namespace string `json:"namespace"`
	// ServiceAccount is nil where OLM v1 ignores it (see Features).
	ServiceAccount *ServiceAccount  `json:"serviceAccount,omitempty"`
	Source         ExtensionSource  `json:"source"`
	Install        *InstallConfig   `json:"install,omitempty"`
	Config         *ExtensionConfig `json:"config,omitempty"`
}

// ExtensionConfig is the bundle's configuration, inline: for a registry+v1
// bundle, watchNamespace.
type ExtensionConfig struct {
	ConfigType string         `json:"configType"`
	Inline     map[string]any `json:"inline,omitempty"`
}

// ConfigTypeInline is the only config type; WatchNamespaceKey is the
// inline key of the namespace a registry+v1 bundle's operator watches.
const (
	ConfigTypeInline  = "Inline"
	WatchNamespaceKey = "watchNamespace"
)

// WatchNamespace is the namespace the extension's operator watches; ""
// for all of them.
func (s ExtensionSpec) WatchNamespace() string {
	if s.Config == nil {
		return ""
	}
	ns, _ := s.Config.Inline[WatchNamespaceKey].(string)
	return ns
}

// InstallerServiceAccount is the installer ServiceAccount's name; "" where
// the spec names none.
func (s ExtensionSpec) InstallerServiceAccount() string {
	if s.ServiceAccount == nil {
		return ""
	}
	return s.ServiceAccount.Name
}

// ServiceAccount names the installer ServiceAccount in the install namespace.
type ServiceAccount struct {
	Name string `json:"name"`
}

// ExtensionSource is a package of the cluster's catalogs.
type ExtensionSource struct {
	SourceType string         `json:"sourceType"`
	Catalog    *CatalogFilter `json:"catalog,omitempty"`
}

// CatalogFilter says which bundles of the package may be installed.
type CatalogFilter struct {
	PackageName             string                `json:"packageName"`
	Version                 string                `json:"version,omitempty"`
	Channels                []string              `json:"channels,omitempty"`
	Selector                *metav1.LabelSelector `json:"selector,omitempty"`
	UpgradeConstraintPolicy string                `json:"upgradeConstraintPolicy,omitempty"`
}

// InstallConfig holds the preflight checks' configuration.
type InstallConfig struct {
	Preflight *PreflightConfig `json:"preflight,omitempty"`
}

// PreflightConfig configures the preflight checks.
type PreflightConfig struct {
	CRDUpgradeSafety *CRDUpgradeSafety `json:"crdUpgradeSafety"`
}

// CRDUpgradeSafety is the CRD upgrade safety check's enforcement.
type CRDUpgradeSafety struct {
	Enforcement string `json:"enforcement"`
}

// ExtensionStatus is what operator-controller reports.
type ExtensionStatus struct {
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	Install    *InstallStatus     `json:"install,omitempty"`
}

// InstallStatus names the installed bundle.
type InstallStatus struct {
	Bundle BundleMetadata `json:"bundle"`
}

// BundleMetadata names an installed bundle.
type BundleMetadata struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// InstalledBundle is the bundle the status says is installed, or nil.
func (e *Extension) InstalledBundle() *BundleMetadata {
	if e.Status.Install == nil || e.Status.Install.Bundle.Name == "" {
		return nil
	}
	b := e.Status.Install.Bundle
	return &b
}

// newUnstructured is an empty object of kind, for reads.
func newUnstructured(kind string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(GroupVersion.WithKind(kind))
	return u
}

// fromUnstructured converts an object read as unstructured.
func fromUnstructured(u *unstructured.Unstructured, into any) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
		return fmt.Errorf("reading %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return nil
}
