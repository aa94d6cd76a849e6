// Package api defines, once, the backup and restore kinds a chartpilot
// operator serves for each kind it watches: <Kind>Backup and <Kind>Restore
// in the watch's own group and version (two operators in one cluster must
// not own the same CRD). The runtime reconciles them; the build-time
// packages (scaffold, bundle) import this package to write their CRDs,
// samples and RBAC, so the schema is never copied.
//
// Part of the runtime, which the operator image carries: it imports only
// operator/ and internal/, never a build-time package (chart, scaffold,
// bundle, catalog, olm, cluster, doctor, cmd and their stages).
package api
