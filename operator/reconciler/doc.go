// Package reconciler is the controller of one watched kind: it turns each
// custom resource into a release.Request, lets package release bring the
// release in line, and reports the outcome in the CR's status and events.
//
// Part of the runtime, which the operator image carries: it imports only
// operator/ and internal/, never a build-time package (chart, scaffold,
// bundle, catalog, olm, cluster, doctor, cmd and their stages).
package reconciler
