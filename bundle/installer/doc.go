// Package installer derives the RBAC of OLM v1's installer ServiceAccount
// for a registry+v1 bundle: exactly what operator-controller v1.2.0 needs to
// install the bundle with that ServiceAccount's identity, upgrade it and
// remove what an upgrade drops, derived from the bundle alone.
//
// operator-controller converts the bundle (bundle/olmv1.Convert) and applies
// the objects as a Helm release with the installer's identity: Helm gets
// each object (a conflict check), creates it, or patches it on upgrade and
// on every reconcile, and deletes what an upgrade drops; operator-controller
// then lists and watches every kind it installed across all namespaces
// (label-selected) to see drift. It sets the ClusterExtension as each
// object's controller owner with blockOwnerDeletion, which the
// OwnerReferencesPermissionEnforcement admission plugin allows only with
// update on clusterextensions/finalizers. Uninstalling is the garbage
// collector's (the objects are owned by the ClusterExtension), and the Helm
// release is stored with operator-controller's own identity: neither needs
// the installer.
//
// So the rules are: create (which no RBAC rule can limit by name) in the
// scope of each object, list and watch cluster-wide on each kind, get,
// patch and delete by name, update on the ClusterExtension's finalizers,
// and the rules of every Role and ClusterRole the bundle makes. The last is
// how the API server lets the installer create those roles: it refuses a
// role granting what its creator does not hold unless the creator may
// `escalate` roles, and it checks escalate on a create without a name (a
// create request has none), so an escalate rule limited to the roles' names
// never allows their creation; one without names would allow any role,
// making the installer cluster-admin in all but name. Holding the rules
// keeps the installer within the operator's own rights. `bind` limited by
// name is derived only for a binding whose role the bundle does not make.
//
// operator-controller v1.2.0 checks none of this before it starts: its
// PreflightPermissions feature gate exists but does nothing in that
// version. A missing rule shows as the API server's Forbidden message in
// the ClusterExtension's Progressing condition; Explain reads the missing
// permission from it.
//
// Rules derives them; for an upgrade, pass the installed and the new bundle
// (the installer must delete what the new one drops).
//
// Stage bundle of chart -> scaffold -> bundle -> catalog -> olm/cluster ->
// doctor -> cmd: it may import earlier stages, the runtime and internal/,
// and must not import a later stage (catalog, olm, cluster, apply, doctor,
// cmd/).
package installer
