// Package api defines, once, the backup and restore kinds a chartpilot
// operator serves for each kind it watches: <Kind>Backup and <Kind>Restore
// in the watch's own group and version (two operators in one cluster must
// not own the same CRD). The runtime reconciles them; the build-time
// packages (scaffold, bundle) import this package to write their CRDs,
// samples and RBAC, so the schema is never copied.
package api
