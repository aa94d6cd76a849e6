// Package extension installs an operator through OLM v1 and reports on it:
// Install creates (server-side apply, idempotent) the ClusterCatalog of a
// catalog image, the install namespace, the installer ServiceAccount with
// its RBAC, and the ClusterExtension; Observe reads the ClusterExtension,
// its catalogs and ServiceAccount and Diagnose names why an install or an
// upgrade is stuck and what to do; Upgrade moves a ClusterExtension to a
// new version range, channels or catalog image; Uninstall removes the
// ClusterExtension and waits until the cluster holds nothing of it, not
// even the installer's RBAC.
//
// OLM v1 (operator-controller and catalogd, olm.operatorframework.io/v1)
// refuses to install without an installer ServiceAccount that holds the
// RBAC to create every object of the bundle. Which rules it gets is the
// caller's: InstallerRulesFunc derives them from the bundle, or an
// existing ClusterRole is bound.
//
// Stage olm of chart -> scaffold -> bundle -> catalog -> olm/cluster ->
// doctor -> cmd: it may import earlier stages (bundle/olmv1 and
// bundle/installer among them), the runtime and internal/, and must not
// import a later stage (doctor, cmd/).
package extension
