// Package doctor runs the Helm operator troubleshooting checklist against a
// cluster: the CRD is installed, Established and served by discovery; the
// operator Deployment and its pods are healthy; the custom resources exist
// and what their last reconcile said (operator-sdk's Deployed,
// ReleaseFailed, Irreconcilable and chartpilot's Ready conditions); every
// permission the chart needs is granted to the operator's ServiceAccount,
// checked with SubjectAccessReviews so that the exact missing rule is named;
// the chart renders no API the cluster's Kubernetes version removed; and
// OLM's chain (CatalogSource connection, Subscription, InstallPlan, CSV) as
// package olm diagnoses it; or, for an install through OLM v1, the
// ClusterExtension, its ClusterCatalogs and installer ServiceAccount as
// package olm/extension diagnoses them (a permission the installer lacked
// named as the API server refused it to operator-controller, and
// confirmed by a SubjectAccessReview), then the CRDs and Deployments
// operator-controller labelled as the extension's.
//
// Each check passes, warns or fails, with a one-line fix. Run only reads.
//
// Stage doctor of chart -> scaffold -> bundle -> catalog -> olm/cluster ->
// doctor -> cmd: it may import earlier stages, the runtime and internal/,
// and must not import a later stage (cmd/).
package doctor
