// Package operator runs a Helm operator: one controller per watches.yaml
// entry, each reconciling its custom resources into Helm releases (package
// reconciler, package release), with leader election, health probes and
// Prometheus metrics. It is what `chartpilot run` and an operator image run.
//
// Part of the runtime, which the operator image carries: it imports only
// operator/ and internal/, never a build-time package (chart, scaffold,
// bundle, catalog, olm, cluster, doctor, cmd and their stages).
package operator
