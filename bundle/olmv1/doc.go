// Package olmv1 says what OLM v1 does with a registry+v1 bundle, as
// operator-controller v1.2.0 does it: which bundles it refuses and why
// (Check), and which objects it makes of the others (Convert), so that
// chartpilot can tell at build time whether a bundle installs under OLM v1
// and derive the RBAC its installer ServiceAccount needs (bundle/installer).
//
// operator-controller v1.2.0 turns the bundle into plain objects
// (internal/operator-controller/rukpak/convert) and installs them as a Helm
// release, with the installer ServiceAccount's identity: the CSV's
// Deployments and their ServiceAccounts, a ClusterRole and
// ClusterRoleBinding per clusterPermissions entry (and per permissions entry
// in AllNamespaces mode), a Role and RoleBinding per permissions entry and
// watched namespace otherwise, and every other manifest of the bundle of a
// kind operator-registry v1.50.0 supports. Convert makes the same objects
// with the same names; it imports nothing of operator-controller (its
// packages are internal and on another Kubernetes line).
package olmv1
