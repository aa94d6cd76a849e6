// Package olm installs an operator through Operator Lifecycle Manager and
// reports on it: Subscribe creates (server-side apply, idempotent) the
// CatalogSource, an OperatorGroup for the install mode and the Subscription;
// Status reads the chain OLM walks (CatalogSource connection, Subscription,
// InstallPlan, ClusterServiceVersion) and Diagnose says where it is stuck and
// why; Unsubscribe removes the operator cleanly, its custom resources and
// CRDs only when asked.
//
// Objects are found by the package they install (a Subscription's
// spec.name), not by name, so that Subscriptions created with kubectl are
// handled as well as those Subscribe made.
//
// Stage olm/cluster of chart -> scaffold -> bundle -> catalog ->
// olm/cluster -> doctor -> cmd: it may import earlier stages, the runtime
// and internal/, and must not import a later stage (doctor, cmd/).
package olm
