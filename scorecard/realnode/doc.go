// Package realnode runs the scorecard's tests that need pods that really
// run (chartpilot-backup-restore) on the local cluster's real node, with
// the operator image built and pushed to its registry as `make docker-build
// docker-push` would.
//
// Stage bundle of chart -> scaffold -> bundle -> catalog -> olm/cluster ->
// doctor -> cmd: it may import earlier stages, the runtime and internal/,
// and must not import a later stage (catalog, olm, cluster, apply, doctor,
// cmd/).
package realnode
