// Package operator runs a Helm operator: one controller per watches.yaml
// entry, each reconciling its custom resources into Helm releases (package
// reconciler, package release), with leader election, health probes and
// Prometheus metrics. It is what `chartpilot run` and an operator image run.
package operator
